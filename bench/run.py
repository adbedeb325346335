#!/usr/bin/python3
"""nvo's benchmark harness: nvo side by side with native routing, the kernel's VXLAN and Open vSwitch.

    bench/run.py [--quick | --full] [--reps N] [--scenarios LIST] [--no-build]
    bench/run.py --offloads [--quick | --full] [--reps N] [--no-build]
    bench/run.py --relay [--quick | --full] [--reps N] [--sizes LIST] [--no-build]
    bench/run.py --ila [--quick | --full] [--reps N] [--no-build]
    bench/run.py --render RESULTS.json
    bench/run.py --compare A.json B.json

LIST is comma-separated scenario names or groups: `default` (native, kernel, ovs-afpacket,
ovs-afxdp, nvo, nvo-ebpf: what `make bench` runs), `encaps` (native, kernel and nvo with every
Ethernet profile nvod ships, on its userspace path — nvo, nvo-vxlan-gbp, nvo-vxlan-gpe,
nvo-geneve, nvo-nvgre, nvo-overlay, nvo-usertun, nvo-stt — and on its kernel datapath —
nvo-ebpf, nvo-ebpf-vxlan-gbp, ... nvo-ebpf-usertun), `all`. (`make bench` and `make bench-full`.) Needs root. One run:

1. builds the release binaries (`cargo build --release --bins`: nvo, nvod, nvo-blast);
2. builds every scenario from scratch on network namespaces (bench/nvobench/scenarios.py,
   encaps.py for the profiles), and checks that each passes traffic;
3. measures TCP throughput (1 and 4 streams) with its CPU cost, UDP packet rate and
   throughput per payload size (nvo-blast), and RTT with jitter (ping), each repeated, the
   scenarios taken in rotating order; then nvod's memory;
4. tears everything down (also on an exception or Ctrl-C/SIGTERM) and checks nothing is left;
5. writes bench/results/<UTC timestamp>.{json,md} and <timestamp>-*.png, and copies them to
   latest.json, latest.md and latest-*.png (only for a run of the default scenarios or more:
   a run of fewer does not replace latest.*).

`--offloads` is the other kind of run: STT against VXLAN, single-stream TCP and its CPU
cost, under a matrix of offload toggles (bench/nvobench/offloads.py); it writes
bench/results/<stamp>-offloads.{json,md,png} and never latest.*.

`--relay` is a third kind: relaying on a middle host B by nvo (overlay profile, no
decapsulation) against B relaying with the kernel's VXLAN decapsulation → bridge → VXLAN
re-encapsulation, with the two-host direct scenarios beside them (bench/nvobench/relay.py):
UDP at 8 payload sizes, TCP 1 stream, RTT, and checks that each B relays as it says; it
writes bench/results/<stamp>-relay.{json,md,png} and never latest.*.

`--ila` is a fourth: ILA against VXLAN over an IPv6 underlay on the same two nvods (one lab,
both networks; bench/nvobench/ila.py): single-stream TCP, CPU per Gbit, bytes of overhead per
packet, as ILA ÷ VXLAN; it writes bench/results/<stamp>-ila.{json,md} and never latest.*.

`--compare` measures nothing: it says whether two runs agree on every ratio within the noise
each states (bench/nvobench/compare.py defines it) and exits 0 when they do, 1 when not.

Quick mode takes about 5 minutes on 2 cores (after the build) for the default scenarios,
about 9 for `encaps`, 4 for `--offloads`, 12 for `--relay`, 2 for `--ila`; full mode about 35 for the
default scenarios.
"""

import argparse
import datetime
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# No __pycache__ in the source tree: the harness runs once in a while, as root.
sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nvobench import compare, encaps, measure, offloads, offloads_report, plots, report, stats  # noqa: E402,E501
from nvobench import ila, relay, relay_report  # noqa: E402
from nvobench import scenarios as base  # noqa: E402
from nvobench.scenarios import SetupFailed  # noqa: E402
from nvobench.sh import CommandFailed, Interrupted, Inventory, log, namespaces, run  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
RELEASE = ROOT / "target" / "release"
MODES = {
    "quick": {"reps": 3, "tcp_seconds": 5, "udp_seconds": 3, "ping_count": 300,
              "udp_sizes": [64, 1400]},
    "full": {"reps": 5, "tcp_seconds": 10, "udp_seconds": 5, "ping_count": 1000,
             "udp_sizes": [64, 128, 256, 512, 1024, 1400, 4096, 8900]},
}
TOOLS = ["ip", "iperf3", "ping", "ss", "ethtool", "sysctl", "bridge"]
SCENARIOS = base.SCENARIOS | {cls.key: cls for cls in encaps.SCENARIOS}
GROUPS = {"default": list(base.SCENARIOS), "encaps": ["native", "kernel", *encaps.KEYS],
          "all": list(SCENARIOS)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--quick", dest="mode", action="store_const", const="quick",
                      help="the default: 3 repetitions, 5 s TCP, UDP at 64 and 1400 bytes")
    mode.add_argument("--full", dest="mode", action="store_const", const="full",
                      help="5 repetitions, 10 s TCP, UDP at 8 sizes up to 8900 bytes")
    p.add_argument("--reps", type=int, help="repetitions (at least 3 for the report's medians)")
    p.add_argument("--scenarios", "--only", dest="only", default="default",
                   help="comma-separated scenarios or groups to run: "
                        f"{', '.join(GROUPS)} (groups), {', '.join(SCENARIOS)} "
                        "(default: default)")
    p.add_argument("--offloads", action="store_true",
                   help="the offload study instead: STT against VXLAN, TCP 1 stream, with "
                        "offloads toggled (writes <stamp>-offloads.*)")
    p.add_argument("--relay", action="store_true",
                   help="the relay study instead: nvo relaying on a middle host against the "
                        "kernel's VXLAN → bridge → VXLAN, UDP at 8 sizes, TCP, RTT (writes "
                        "<stamp>-relay.*)")
    p.add_argument("--ila", action="store_true",
                   help="ILA against VXLAN over an IPv6 underlay on the same hosts (make bench-ila)")
    p.add_argument("--sizes", help="comma-separated UDP payload sizes instead of the mode's")
    p.add_argument("--no-build", action="store_true", help="use target/release as it is")
    p.add_argument("--bin-dir", metavar="DIR",
                   help="where the release binaries are (default: target/release, or "
                        "$CARGO_TARGET_DIR/release when that is set); with --no-build")
    p.add_argument("--workers", type=int, metavar="N",
                   help="nvod's workers key (userspace datapath threads, 1..64) on every nvo "
                        "host (default: nvod's, one per CPU); recorded in the results' config")
    p.add_argument("--busy-poll-us", type=int, metavar="US",
                   help="nvod's busy_poll_us key (poll on for US microseconds after a packet "
                        "before sleeping, 1..1000) on every nvo host (default: nvod's, off); "
                        "recorded in the results' config")
    p.add_argument("--results", default=str(ROOT / "bench" / "results"),
                   help="directory for the results (default: bench/results)")
    p.add_argument("--render", metavar="JSON",
                   help="measure nothing: write the report and plots of a results file again")
    p.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                   help="measure nothing: do two runs agree on every ratio within their stated "
                        "noise? exit status 0 if so, 1 if not")
    args = p.parse_args()
    args.mode = args.mode or "quick"
    names = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in names if s not in SCENARIOS and s not in GROUPS]
    if unknown:
        p.error(f"unknown scenario {', '.join(unknown)}: choose from {', '.join(GROUPS)}, "
                f"{', '.join(SCENARIOS)}")
    chosen = {k for n in names for k in GROUPS.get(n, [n])}
    args.only = [k for k in SCENARIOS if k in chosen]
    return args


def preflight():
    if os.geteuid() != 0:
        sys.exit("bench: run as root (the scenarios are network namespaces): sudo make bench")
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        sys.exit(f"bench: missing {', '.join(missing)}: run scripts/setup.sh")


def build():
    env = dict(os.environ, PATH=f"{pathlib.Path.home()}/.cargo/bin:{os.environ['PATH']}")
    log("building release binaries (cargo build --release --bins)")
    p = subprocess.run(["cargo", "build", "--release", "--bins"], cwd=ROOT, env=env)
    if p.returncode != 0:
        sys.exit("bench: cargo build --release --bins failed (see above); nothing was measured")


def machine_info(run_prefix):
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    foreign = [ns for ns in namespaces() if not ns.startswith(run_prefix)]
    log("measuring the machine's background load for 2 s")
    return {
        "nproc": os.cpu_count(), "cpu_model": model, "kernel": os.uname().release,
        "mem_gib": mem_kib / 2**20, "loadavg_start": loadavg(),
        "foreign_namespaces": len(foreign), "background_busy": measure.background_busy(),
        "iperf3": run(["iperf3", "--version"], check=False).stdout.split("\n")[0].strip(),
    }


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def git_info():
    head = run(["git", "-C", ROOT, "rev-parse", "HEAD"], check=False).stdout.strip()
    dirty = run(["git", "-C", ROOT, "status", "--porcelain"], check=False).stdout.strip()
    return {"commit": head or "unknown", "dirty": bool(dirty)}


def build_scenario(sc, inv, env):
    """Builds one scenario and checks it passes traffic; on failure marks it failed."""
    t = time.monotonic()
    try:
        sc.up(inv, env)
    except (SetupFailed, CommandFailed, OSError) as e:
        sc.fail(f"could not be built: {e}")
        log(f"{sc.key}: FAILED to build: {e}")
        return
    sc.setup_s = time.monotonic() - t
    why = measure.sanity(sc)
    if why:
        sc.fail(f"passes no traffic: {why}")
        log(f"{sc.key}: FAILED the sanity check: {why}")
        return
    try:
        measure.prepare_server(sc)
        measure.start_iperf_server(sc, inv)
    except (CommandFailed, measure.MeasureFailed) as e:
        sc.fail(f"iperf3 server did not start: {e}")
        return
    sc.status = "ok"
    log(f"{sc.key}: built in {sc.setup_s:.1f} s, traffic passes")


def one_repetition(sc, inv, cfg, samples, problems, blast):
    """Every measurement of one scenario once; samples appended, failures noted."""
    jobs = [("rtt", measure.rtt, (sc, cfg["ping_count"]))]
    jobs += [(f"tcp{n}", measure.tcp, (sc, n, cfg["tcp_seconds"])) for n in (1, 4)]
    jobs += [(f"udp{s}", measure.udp, (sc, inv, blast, s, cfg["udp_seconds"]))
             for s in cfg["udp_sizes"]]
    for source, fn, fargs in jobs:
        sample, err = measure.safely(f"{sc.key} {source}", fn, *fargs)
        if err:
            problems.append(err)
            log(f"  {err}")
            continue
        samples.setdefault(sc.key, {}).setdefault(source, []).append(sample)
        log(f"  {sc.key:6} {source:8} " + ", ".join(
            f"{k}={v:.4g}" for k, v in sample.items() if isinstance(v, float)))


def nvod_memory(sc, inv):
    out = {}
    for host, pid in sc.daemons(inv).items():
        try:
            m = measure.memory(pid)
            out[host] = m if m["name"] == "nvod" else {"error": f"pid {pid} is {m['name']}"}
        except OSError as e:
            out[host] = {"error": f"nvod (pid {pid}) is gone: {e}"}
    return out


def measure_all(cfg, inv, env, scenarios, doc):
    for sc in scenarios:
        build_scenario(sc, inv, env)
    live = [sc for sc in scenarios if sc.status == "ok"]
    blast = RELEASE / "nvo-blast"
    for rep in range(cfg["reps"]):
        order = live[rep % len(live):] + live[:rep % len(live)] if live else []
        log(f"repetition {rep + 1}/{cfg['reps']}: {' → '.join(sc.key for sc in order)}")
        for sc in order:
            one_repetition(sc, inv, cfg, doc["samples"], doc["problems"], blast)
    for sc in live:
        if sc.key == "nvo":
            doc["nvod_memory"] = nvod_memory(sc, inv)
        elif sc.key in encaps.KEYS or sc.key.startswith("nvo"):
            doc.setdefault("nvod_memory_profiles", {})[sc.key] = nvod_memory(sc, inv)
        elif hasattr(sc, "hosts"):
            doc.setdefault("ovs_memory", {})[sc.key] = {
                name: h.rss_kib() for name, h in sc.hosts.items()}


def measure_offloads(cfg, inv, env, scenarios, doc):
    for sc in scenarios:
        build_scenario(sc, inv, env)
    live = [sc for sc in scenarios if sc.status == "ok"]
    doc["states"] = {}
    offloads.study(live, inv, cfg, doc, log)


def measure_relay(cfg, inv, env, scenarios, doc):
    for sc in scenarios:
        build_scenario(sc, inv, env)
    live = [sc for sc in scenarios if sc.status == "ok"]
    relay.study(live, inv, cfg, doc, log, RELEASE / "nvo-blast")
    doc["nvod_memory"] = {sc.key: nvod_memory(sc, inv) for sc in live
                          if sc.key.startswith("nvo")}


def measure_ila(cfg, inv, env, scenarios, doc):
    for sc in scenarios:
        build_scenario(sc, inv, env)
    live = [sc for sc in scenarios if sc.status == "ok"]
    ila.study(live, cfg, doc, log)


def write_results(doc, results, latest=True):
    results.mkdir(parents=True, exist_ok=True)
    stamp = doc["stamp"]
    mlist = stats.metrics(doc["config"]["udp_sizes"])
    doc["figures"] = stats.figures(doc["samples"], mlist)
    doc["ratios"] = stats.ratios(doc["figures"])
    doc["noise"] = stats.noise(doc["figures"])
    scs = [k for k, v in doc["scenarios"].items() if v["status"] == "ok"]
    title = f"{doc['mode']} run {doc['started_utc']}"
    why = plots.available()
    doc["plots"] = []
    if why:
        doc["plots_missing"] = why
    else:
        for name, draw in (("throughput", lambda p: plots.throughput(
                p, doc["figures"], scs, doc["config"]["udp_sizes"], title)),
                ("rtt", lambda p: plots.rtt(p, doc["figures"], scs, title)),
                ("cpu", lambda p: plots.cpu(p, doc["figures"], scs,
                                            doc["config"]["udp_sizes"], title))):
            draw(results / f"{stamp}-{name}.png")
            if latest:
                shutil.copyfile(results / f"{stamp}-{name}.png", results / f"latest-{name}.png")
            doc["plots"].append(name)
    (results / f"{stamp}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (results / f"{stamp}.md").write_text(report.render(doc, stamp))
    if latest:
        shutil.copyfile(results / f"{stamp}.json", results / "latest.json")
        (results / "latest.md").write_text(report.render(doc, "latest"))
    return results / f"{stamp}.md"


def write_offloads(doc, results):
    """<stamp>-offloads.{json,md,png}; never latest.*."""
    results.mkdir(parents=True, exist_ok=True)
    name = f"{doc['stamp']}-offloads"
    doc["figures"] = offloads.figures(doc)
    why = plots.available()
    doc["plots"] = []
    if why:
        doc["plots_missing"] = why
    else:
        offloads_report.plot(results / f"{name}.png", doc)
        doc["plots"].append("offloads")
    (results / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (results / f"{name}.md").write_text(offloads_report.render(doc, name))
    return results / f"{name}.md"


def write_relay(doc, results):
    """<stamp>-relay.{json,md,png}; never latest.*."""
    results.mkdir(parents=True, exist_ok=True)
    name = f"{doc['stamp']}-relay"
    doc["figures"] = relay.figures(doc)
    doc["ratios"] = relay.ratios(doc["figures"])
    why = plots.available()
    doc["plots"] = []
    if why:
        doc["plots_missing"] = why
    else:
        relay_report.plot(results / f"{name}.png", doc)
        doc["plots"].append("relay")
    (results / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (results / f"{name}.md").write_text(relay_report.render(doc, name))
    return results / f"{name}.md"


def write_ila(doc, results):
    """<stamp>-ila.{json,md}; never latest.*."""
    results.mkdir(parents=True, exist_ok=True)
    name = f"{doc['stamp']}-ila"
    doc["figures"], doc["ratios"] = ila.figures(doc)
    (results / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (results / f"{name}.md").write_text(ila.render(doc, name))
    return results / f"{name}.md"


def summary_lines(doc):
    mlist = [m for m in stats.metrics(doc["config"]["udp_sizes"]) if m.ratio]
    cell = lambda r: f"{r['ratio']:.2f}" if r else "—"
    keys = [f"{a}/{b}" for a, b in stats.PAIRS]
    lines = [f"  {'':36} " + "  ".join(f"{k:>16}" for k in keys)]
    for m in mlist:
        r = doc["ratios"][m.key]
        lines.append(f"  {m.label:36} " + "  ".join(f"{cell(r.get(k)):>16}" for k in keys))
    for fam in encaps.FAMILIES:
        profiles = encaps.measured(doc, fam)
        if not any(k != fam.base for k in profiles):
            continue
        for b in (b for b in fam.bases if doc["samples"].get(b)):
            lines += ["", f"  each {fam.base} profile ÷ {b}",
                      f"  {'':36} " + "  ".join(f"{encaps.LABELS[k]:>9}" for k in profiles)]
            for m in mlist:
                r = doc["ratios"][m.key]
                lines.append(f"  {m.label:36} " + "  ".join(
                    f"{'1' if k == b else cell(r.get(f'{k}/{b}')):>9}" for k in profiles))
    return lines


def offloads_summary(doc):
    return offloads_report.table(doc) + [""] + offloads_report.meaning(doc)


def on_signal(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def render_again(path):
    doc = json.loads(path.read_text())
    if doc.get("kind") == "offloads":
        return write_offloads(doc, path.parent)
    if doc.get("kind") == "relay":
        return write_relay(doc, path.parent)
    if doc.get("kind") == "ila":
        return write_ila(doc, path.parent)
    return write_results(doc, path.parent, latest=False)


def session(cfg, scenarios, work, doc):
    """Runs `work(cfg, inv, env, scenarios, doc)` with the run's inventory, and tears down
    whatever it made, also on a signal; exits when interrupted."""
    run_id = doc["run_id"]
    inv = Inventory(RELEASE / "nvo", f"nvo-{run_id}-")
    doc["machine"] = machine_info(inv.prefix)
    workdir = tempfile.mkdtemp(prefix=f"nvo-{run_id}-")
    # The OVS daemons carry the work directory in their arguments: anything still carrying
    # it after teardown is a leak (killed by pid, reported).
    inv.watch(workdir)
    env = {"workdir": workdir, "nvod": RELEASE / "nvod", "workers": cfg.get("workers"),
           "busy_poll_us": cfg.get("busy_poll_us")}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    t0 = time.monotonic()
    interrupted = None
    try:
        work(cfg, inv, env, scenarios, doc)
    except Interrupted as e:
        interrupted = e
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        log("tearing down")
        leaks = inv.teardown()
        shutil.rmtree(workdir, ignore_errors=True)
        for leak in leaks:
            log(f"teardown: {leak}")
    if interrupted:
        sys.exit(f"bench: interrupted ({interrupted}); everything it made was removed, "
                 "no results written")
    doc["problems"] += [f"teardown: {leak}" for leak in leaks]
    finished = datetime.datetime.now(datetime.timezone.utc)
    doc["finished_utc"] = finished.strftime("%Y-%m-%d %H:%M:%S UTC")
    doc["duration_s"] = time.monotonic() - t0
    doc["machine"]["loadavg_end"] = loadavg()
    doc["scenarios"] = {sc.key: {"title": sc.title, "description": sc.description,
                                 "status": sc.status, "reason": sc.reason, "notes": sc.notes,
                                 "setup_s": sc.setup_s, "tenant_mtu": sc.tenant_mtu}
                        for sc in scenarios}


def main():
    args = parse_args()
    if args.compare:
        try:
            agreeing, counted = compare.compare(*args.compare)
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"bench: cannot compare: {e}")
        return 0 if counted and agreeing == counted else 1
    if args.render:
        print(render_again(pathlib.Path(args.render)))
        return 0
    preflight()
    cfg = dict(MODES[args.mode])
    if args.reps:
        cfg["reps"] = args.reps
    if args.relay:
        cfg["udp_sizes"] = list(relay.SIZES)
    if args.sizes:
        cfg["udp_sizes"] = sorted({int(x) for x in args.sizes.split(",")})
    if args.workers is not None:
        if not 1 <= args.workers <= 64:
            sys.exit(f"bench: --workers {args.workers} is outside 1..64")
        cfg["workers"] = args.workers
    if args.busy_poll_us is not None:
        if not 1 <= args.busy_poll_us <= 100_000:
            sys.exit(f"bench: --busy-poll-us {args.busy_poll_us} is outside 1..100000")
        cfg["busy_poll_us"] = args.busy_poll_us
    global RELEASE
    if args.bin_dir:
        RELEASE = pathlib.Path(args.bin_dir)
    elif os.environ.get("CARGO_TARGET_DIR"):
        RELEASE = pathlib.Path(os.environ["CARGO_TARGET_DIR"]) / "release"
    if not args.no_build:
        build()
    # The ILA study sends no UDP: it needs no nvo-blast.
    for binary in ("nvo", "nvod") if args.ila else ("nvo", "nvod", "nvo-blast"):
        if not (RELEASE / binary).is_file():
            sys.exit(f"bench: {RELEASE / binary} is missing: run cargo build --release --bins")
    started = datetime.datetime.now(datetime.timezone.utc)
    doc = {"schema": 1, "mode": args.mode, "stamp": started.strftime("%Y%m%dT%H%M%SZ"),
           "started_utc": started.strftime("%Y-%m-%d %H:%M:%S UTC"), "config": cfg,
           "git": git_info(), "samples": {}, "problems": [], "run_id": f"bench{os.getpid()}"}
    if args.offloads:
        return main_offloads(args, cfg, doc)
    if args.relay:
        return main_relay(args, cfg, doc)
    if args.ila:
        return main_ila(args, cfg, doc)
    scenarios = [SCENARIOS[k](doc["run_id"]) for k in args.only]
    session(cfg, scenarios, measure_all, doc)
    for key, cls in SCENARIOS.items():
        if key not in doc["scenarios"]:
            doc["scenarios"][key] = {"title": cls.title, "description": cls.description,
                                     "status": "skipped", "reason": "not selected (--scenarios)",
                                     "notes": [], "setup_s": None}
    # latest.* is the newest run of at least the default scenarios, never a partial one.
    latest = set(GROUPS["default"]) <= set(args.only)
    path = write_results(doc, pathlib.Path(args.results), latest=latest)
    print(f"\nnvo benchmark, {args.mode} run: ratios of medians (details in {path})")
    print("\n".join(summary_lines(doc)))
    for key, sc in doc["scenarios"].items():
        if sc["status"] not in ("ok", "skipped"):
            print(f"  {key}: {sc['status']}: {sc['reason']}")
    return 1 if any(sc.status != "ok" for sc in scenarios) else 0


def main_offloads(args, cfg, doc):
    doc["kind"] = "offloads"
    scenarios = [SCENARIOS[k](doc["run_id"]) for k in offloads.PROFILES]
    session(cfg, scenarios, measure_offloads, doc)
    path = write_offloads(doc, pathlib.Path(args.results))
    print(f"\nnvo offload study, {args.mode}: STT against VXLAN (details in {path})")
    print("\n".join(offloads_summary(doc)))
    return 1 if any(sc.status != "ok" for sc in scenarios) else 0


def main_relay(args, cfg, doc):
    doc["kind"] = "relay"
    scenarios = [cls(doc["run_id"]) for cls in relay.SCENARIOS.values()]
    session(cfg, scenarios, measure_relay, doc)
    path = write_relay(doc, pathlib.Path(args.results))
    print(f"\nnvo relay study, {args.mode}: nvo relay against the kernel's (details in {path})")
    print("\n".join(relay_report.lead(doc)))
    for key, sc in doc["scenarios"].items():
        if sc["status"] != "ok":
            print(f"  {key}: {sc['status']}: {sc['reason']}")
    return 1 if any(sc.status != "ok" for sc in scenarios) else 0


def main_ila(args, cfg, doc):
    doc["kind"] = "ila"
    scenarios = [cls(doc["run_id"]) for cls in ila.SCENARIOS]
    session(cfg, scenarios, measure_ila, doc)
    path = write_ila(doc, pathlib.Path(args.results))
    print(f"\nnvo ILA against VXLAN, {args.mode} (details in {path})")
    print(path.read_text())
    return 1 if any(sc.status != "ok" for sc in scenarios) else 0


if __name__ == "__main__":
    sys.exit(main())
