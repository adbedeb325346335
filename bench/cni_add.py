#!/usr/bin/python3
"""CNI ADD and DEL latency of nvo-cni (issue 19, item 3).

    bench/cni_add.py [--containers 100] [--datapath ebpf,userspace] [--bin-dir DIR]
                     [--no-build] [--label TEXT]

Per datapath, `nvo lab up` starts one nvod host (namespace nvo-cnib<pid>-h1) with network 100;
the run makes --containers namespaces (cnib<pid>-<i>) and, from inside the host's namespace,
calls nvo-cni exactly as a runtime does (CNI_* variables, the network configuration on
standard input, IPAM by Debian's host-local) once per container: ADD one after another, then
DEL one after another. Each call's latency is the wall time of the plugin process, from
spawn to exit. For scale, the same number of bare host-local ADD+DEL calls (the delegated
part alone) are timed too.

Reports median, 90th and 99th percentile and the maximum of each, writes
bench/results/<UTC stamp>-cni-add.{json,md} (never latest.*). Needs root, iproute2 and
containernetworking-plugins. Every namespace and the lab are removed at the end, also on an
error or Ctrl-C. By default the release build (`cargo build --release -p nvod -p nvo-cli
-p nvo-cni` first unless --no-build).
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
PLUGINS = pathlib.Path("/usr/lib/cni")


def log(msg):
    print(f"cni-add: {msg}", file=sys.stderr, flush=True)


def run(*cmd, **kw):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def summary(values):
    ms = [v * 1000 for v in values]
    return {"n": len(ms), "median_ms": statistics.median(ms), "p90_ms": percentile(ms, 90),
            "p99_ms": percentile(ms, 99), "max_ms": max(ms)}


def call(binary, env, conf):
    """One plugin call; returns its wall time in seconds."""
    t0 = time.perf_counter()
    p = subprocess.run([binary], env=env, input=conf, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{binary} {env['CNI_COMMAND']} {env.get('CNI_CONTAINERID')}: {p.stdout.strip()}")
    return dt


def inner(args):
    """Runs inside the lab host's namespace: the timed calls. Prints JSON on stdout."""
    conf_obj = json.loads(args.inner_conf)
    conf = json.dumps(conf_obj)
    base = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "CNI_PATH": f"{args.bin_dir}:{PLUGINS}", "CNI_IFNAME": "eth0"}
    namespaces = args.inner_namespaces.split(",")
    plugin = str(pathlib.Path(args.bin_dir) / "nvo-cni")
    adds, dels, ipam = [], [], []
    added = []
    try:
        for ns in namespaces:
            env = dict(base, CNI_COMMAND="ADD", CNI_CONTAINERID=f"bench-{ns}", CNI_NETNS=f"/var/run/netns/{ns}")
            adds.append(call(plugin, env, conf))
            added.append(ns)
    finally:
        for ns in added:
            env = dict(base, CNI_COMMAND="DEL", CNI_CONTAINERID=f"bench-{ns}", CNI_NETNS=f"/var/run/netns/{ns}")
            dels.append(call(plugin, env, conf))
    ipam_conf = json.dumps(dict(conf_obj, name="cnibench-ipam"))
    for ns in namespaces:
        env = dict(base, CNI_CONTAINERID=f"ipam-{ns}", CNI_NETNS=f"/var/run/netns/{ns}")
        t = call(str(PLUGINS / "host-local"), dict(env, CNI_COMMAND="ADD"), ipam_conf)
        t += call(str(PLUGINS / "host-local"), dict(env, CNI_COMMAND="DEL"), ipam_conf)
        ipam.append(t)
    print(json.dumps({"add": adds, "del": dels, "host_local_add_del": ipam}))


def one_datapath(args, datapath, tmp):
    pid = os.getpid()
    lab = f"cnib{pid % 100000}"
    topo = tmp / f"{lab}.yaml"
    topo.write_text(f"name: {lab}\nunderlay: {{family: ipv4, ipv4: 10.209.0.0/24, mtu: 1500}}\n"
                    "hosts: [{name: h1}]\nnetworks: [{vni: 100}]\n")
    namespaces = [f"cnib{pid % 100000}-{i}" for i in range(args.containers)]
    nvo = pathlib.Path(args.bin_dir) / "nvo"
    made = []
    try:
        run(nvo, "lab", "up", topo, "--nvod", pathlib.Path(args.bin_dir) / "nvod", "--datapath", datapath,
            timeout=300)
        for ns in namespaces:
            run("ip", "netns", "add", ns)
            made.append(ns)
        conf = {"cniVersion": "1.0.0", "name": "cnibench", "type": "nvo-cni", "vni": 100,
                "socket": f"/run/nvo/lab/{lab}/h1.sock",
                "ipam": {"type": "host-local", "subnet": "10.210.0.0/16", "dataDir": str(tmp / f"ipam-{datapath}")}}
        p = run("ip", "netns", "exec", f"nvo-{lab}-h1", sys.executable, __file__, "--inner",
                "--bin-dir", args.bin_dir, "--inner-conf", json.dumps(conf),
                "--inner-namespaces", ",".join(namespaces), timeout=1800)
        times = json.loads(p.stdout)
        return {k: summary(v) for k, v in times.items()}
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        subprocess.run([str(nvo), "lab", "down", lab], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--containers", type=int, default=100)
    ap.add_argument("--datapath", default="ebpf,userspace")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--bin-dir", default=str(target / "release"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--inner-conf", help=argparse.SUPPRESS)
    ap.add_argument("--inner-namespaces", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args)
    if os.geteuid() != 0:
        sys.exit("cni-add: needs root (network namespaces)")
    if not (PLUGINS / "host-local").exists():
        sys.exit("cni-add: needs containernetworking-plugins in /usr/lib/cni (scripts/setup.sh)")
    if not args.no_build:
        log("building the release binaries")
        subprocess.run(["cargo", "build", "--release", "-p", "nvod", "-p", "nvo-cli", "-p", "nvo-cni"],
                       cwd=ROOT, check=True)
    results = {}
    with tempfile.TemporaryDirectory(prefix="cni-add-") as tmp:
        for datapath in args.datapath.split(","):
            log(f"{datapath}: {args.containers} containers")
            results[datapath] = one_datapath(args, datapath, pathlib.Path(tmp))
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {"containers": args.containers, "label": args.label, "bin_dir": args.bin_dir, "cpus": os.cpu_count(),
            "loadavg_at_end": os.getloadavg()}
    (RESULTS / f"{stamp}-cni-add.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    load = " ".join(f"{x:.1f}" for x in meta["loadavg_at_end"])
    lines = [f"# nvo-cni ADD/DEL latency, {args.containers} containers {args.label}".rstrip(), "",
             f"{os.cpu_count()} CPUs, load average at the end {load}", "",
             "| datapath | call | median ms | p90 ms | p99 ms | max ms |", "|---|---|---|---|---|---|"]
    for datapath, r in results.items():
        for call_name, s in r.items():
            lines.append(f"| {datapath} | {call_name} | {s['median_ms']:.1f} | {s['p90_ms']:.1f} | "
                         f"{s['p99_ms']:.1f} | {s['max_ms']:.1f} |")
    report = "\n".join(lines) + "\n"
    (RESULTS / f"{stamp}-cni-add.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
