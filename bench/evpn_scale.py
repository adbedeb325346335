#!/usr/bin/python3
"""EVPN control-plane scale (issue 7): N MAC routes through a route reflector to every VTEP.

    bench/evpn_scale.py [--sizes 10000,100000] [--rr frr|gobgp] [--hosts 3] [--vnis 4]
                        [--reps 1] [--frr-client full|bgpd|none] [--no-nvo] [--no-build]

One round per (size, repetition), each built from scratch on network namespaces:

    nvo-<run>-evpn-ul: bridge br0 (10.100.0.0/24)      (`nvo lab`'s underlay; with --no-nvo
      ├── nvo-<run>-evpn-h1 .. hN   nvod, .1 .. .N       the run makes nvo-<run>-ul itself)
      ├── nvo-<run>-rr    .200  route reflector: FRR bgpd -Z, or gobgpd (--rr gobgp)
      ├── nvo-<run>-inj   .201  nvo-bgp-inject: N type-2 MAC routes + 1 type-3 per VNI
      └── nvo-<run>-frr   .202  FRR as a client VTEP: zebra + bgpd, a kernel VXLAN device and
                                bridge per VNI, advertise-all-vni (--frr-client bgpd: bgpd -Z)

Every VTEP (each nvod through PUT /v1/bgp, the FRR client by its config) is an iBGP
route-reflector client of .200 in AS 65000, with a network per VNI 100.. (RT 65000:VNI).
Once every session is up and the table is quiet, the run reads each daemon's RSS
(/proc/PID/status VmRSS), starts the injector, and polls until every one holds all N routes:

- the route reflector: routes received from the injector (FRR: pfxRcd; GoBGP: the EVPN
  table's destinations, over what it held before);
- each nvod: GET /v1/bgp `routes_received` (all N + type-3s arrived) and `routes_installed`
  (FDB entries + flood-list remotes in the data path), each over its value before;
- the FRR client: bgpd's pfxRcd from the reflector (received) and, in `full` mode, the
  kernel FDB entries zebra installed on the VXLAN devices (installed, `bridge fdb`).

Times count from the injector's `established` event (it sends at once). Memory per route is
(RSS after − RSS before) ÷ routes, for each nvod, the FRR client (bgpd + zebra) and the
reflector. Ratios are nvo ÷ FRR client. Writes bench/results/<UTC stamp>-evpn.{json,md};
never latest.*. Needs root. Everything made is removed at the end, also on Ctrl-C/SIGTERM.
"""

import argparse
import datetime
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from nvobench.sh import CommandFailed, Interrupted, Inventory, in_ns, log, run  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
ASN = 65000
PREFIX = "10.100.0"
RR_IP, INJ_IP, FRR_IP = f"{PREFIX}.200", f"{PREFIX}.201", f"{PREFIX}.202"
FIRST_VNI = 100
FRR_BIN = pathlib.Path("/usr/lib/frr")

LAB_TOPOLOGY = """\
# Written by bench/evpn_scale.py: nvod hosts for the EVPN scale run, no containers.
name: {name}
underlay: {{family: ipv4, ipv4: {prefix}.0/24, mtu: 1500}}
hosts:
{hosts}
networks:
{networks}
"""

FRR_RR_CONF = """\
frr defaults datacenter
hostname rr
log file {dir}/bgpd.log
router bgp {asn}
 bgp router-id {rr}
 no bgp default ipv4-unicast
 bgp cluster-id {rr}
 neighbor clients peer-group
 neighbor clients remote-as {asn}
 bgp listen range {prefix}.0/24 peer-group clients
 address-family l2vpn evpn
  neighbor clients activate
  neighbor clients route-reflector-client
 exit-address-family
"""

GOBGP_RR_CONF = """\
[global.config]
  as = {asn}
  router-id = "{rr}"
[[peer-groups]]
  [peer-groups.config]
    peer-group-name = "clients"
    peer-as = {asn}
  [[peer-groups.afi-safis]]
    [peer-groups.afi-safis.config]
      afi-safi-name = "l2vpn-evpn"
  [peer-groups.route-reflector.config]
    route-reflector-client = true
    route-reflector-cluster-id = "{rr}"
[[dynamic-neighbors]]
  [dynamic-neighbors.config]
    prefix = "{prefix}.0/24"
    peer-group = "clients"
"""

FRR_CLIENT_CONF = """\
frr defaults datacenter
hostname vtep
log file {dir}/bgpd.log
router bgp {asn}
 bgp router-id {me}
 no bgp default ipv4-unicast
 neighbor {rr} remote-as {asn}
 neighbor {rr} timers connect 1
 address-family l2vpn evpn
  neighbor {rr} activate
{advertise} exit-address-family
"""


class RoundFailed(Exception):
    """A round could not be built or measured; the message says which step and why."""


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="10000,100000", help="MAC route counts (comma-separated)")
    p.add_argument("--rr", choices=["frr", "gobgp"], default="frr", help="the route reflector")
    p.add_argument("--hosts", type=int, default=3, help="nvod hosts (RR clients)")
    p.add_argument("--vnis", type=int, default=4, help="networks, VNI 100 upwards")
    p.add_argument("--reps", type=int, default=1, help="rounds per size (medians reported)")
    p.add_argument("--frr-client", choices=["full", "bgpd", "none"], default="full",
                   help="FRR as a client VTEP beside nvod: zebra + bgpd installing into the "
                        "kernel (full), bgpd -Z receiving only (bgpd), or none")
    p.add_argument("--no-nvo", action="store_true",
                   help="no nvod hosts: only the reflector, the injector and the FRR client")
    p.add_argument("--timeout", type=float, default=300, help="seconds to wait for convergence")
    p.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    p.add_argument("--bin-dir", default=str(ROOT / "target" / "release"),
                   help="where nvo, nvod and nvo-bgp-inject are (default target/release)")
    p.add_argument("--results", default=str(ROOT / "bench" / "results"))
    args = p.parse_args()
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes {args.sizes!r}: give numbers, e.g. 10000,100000")
    if not args.sizes or min(args.sizes) < 1 or not 1 <= args.vnis <= 1000 or args.hosts < 1:
        p.error("--sizes, --vnis (1..1000) and --hosts must be positive")
    args.bin_dir = pathlib.Path(args.bin_dir)
    return args


def preflight(args):
    if os.geteuid() != 0:
        sys.exit("evpn_scale: run as root (every node is a network namespace)")
    need = ["ip", "bridge", "vtysh" if "frr" in (args.rr, args.frr_client) else "ip"]
    need += ["gobgpd", "gobgp"] if args.rr == "gobgp" else []
    missing = [t for t in need if not shutil.which(t)]
    if args.rr == "frr" or args.frr_client != "none":
        missing += [str(FRR_BIN / d) for d in ("bgpd", "zebra") if not (FRR_BIN / d).exists()]
    if missing:
        sys.exit(f"evpn_scale: missing {', '.join(missing)}: run scripts/setup.sh")
    if not args.no_build:
        log("building release binaries (cargo build --release --bins)")
        env = dict(os.environ, PATH=f"{pathlib.Path.home()}/.cargo/bin:{os.environ['PATH']}")
        if subprocess.run(["cargo", "build", "--release", "--bins"], cwd=ROOT, env=env).returncode:
            sys.exit("evpn_scale: cargo build --release --bins failed; nothing was measured")
    bins = ["nvo-bgp-inject"] + ([] if args.no_nvo else ["nvo", "nvod"])
    missing = [b for b in bins if not (args.bin_dir / b).is_file()]
    if missing:
        sys.exit(f"evpn_scale: {', '.join(missing)} not in {args.bin_dir}: cargo build --release")


# ---------------------------------------------------------------------------------------------
# Reading the daemons.

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = str(path)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def api(sock, method, path, body=None):
    """One call of an nvod API; returns (status, decoded JSON or text)."""
    conn = UnixHTTP(sock)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode(errors="replace")
    finally:
        conn.close()
    try:
        return resp.status, json.loads(text) if text.strip() else None
    except ValueError:
        return resp.status, text


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RoundFailed(f"process {pid} has no VmRSS (gone?)")


def vtysh(vty_dir, command):
    out = run(["vtysh", "--vty_socket", vty_dir, "-c", command], timeout=30).stdout
    try:
        return json.loads(out) if command.endswith("json") else out
    except ValueError as e:
        raise RoundFailed(f"vtysh {command!r}: not JSON: {out[:200]}") from e


def frr_received(vty_dir, peer):
    """Prefixes bgpd holds from `peer` in l2vpn evpn (pfxRcd), or 0 while it is not up."""
    peers = vtysh(vty_dir, "show bgp l2vpn evpn summary json").get("peers", {})
    return int(peers.get(peer, {}).get("pfxRcd", 0) or 0)


def frr_established(vty_dir):
    peers = vtysh(vty_dir, "show bgp l2vpn evpn summary json").get("peers", {})
    return sorted(a for a, p in peers.items() if p.get("state") == "Established")


def gobgp_destinations(ns):
    out = run(in_ns(ns, "gobgp", "global", "rib", "-a", "evpn", "summary"), timeout=30).stdout
    m = re.search(r"Destination:\s*(\d+)", out)
    return int(m.group(1)) if m else 0


def gobgp_established(ns):
    out = run(in_ns(ns, "gobgp", "-j", "neighbor"), timeout=30).stdout
    peers = json.loads(out or "[]")
    return sorted(p.get("state", {}).get("neighbor_address", "?") for p in peers
                  if p.get("state", {}).get("session_state") in (6, "established", "ESTABLISHED"))


def kernel_remote_macs(ns, vnis):
    """MACs zebra installed (extern_learn) on the VXLAN devices. Each shows twice in `bridge
    fdb` (the bridge's entry and the device's own, with the remote VTEP), so MACs are counted
    once per VNI; the all-zero flood entries are not MACs."""
    out = run(in_ns(ns, "bridge", "fdb", "show"), timeout=60).stdout
    devs = {f"vx{v}" for v in vnis}
    seen = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) > 2 and f[1] == "dev" and f[2] in devs and "extern_learn" in f \
                and f[0] != "00:00:00:00:00:00":
            seen.add((f[2], f[0]))
    return len(seen)


# ---------------------------------------------------------------------------------------------
# One round's topology.

class Round:
    """The namespaces and daemons of one round; everything goes into `inv` before it exists."""

    def __init__(self, args, run_id, workdir, inv, use_nvo):
        self.args, self.inv, self.use_nvo = args, inv, use_nvo
        self.run_id, self.workdir = run_id, pathlib.Path(workdir)
        self.vnis = list(range(FIRST_VNI, FIRST_VNI + args.vnis))
        self.lab = f"{run_id}-evpn"
        self.ul = f"nvo-{self.lab}-ul" if use_nvo else f"nvo-{run_id}-ul"
        self.rr_ns, self.inj_ns, self.frr_ns = (f"nvo-{run_id}-{n}" for n in ("rr", "inj", "frr"))
        self.rr_pids, self.frr_pids, self.nvods = [], [], {}
        self.rr_dir, self.frr_dir = self.workdir / "rr", self.workdir / "frr"

    def up(self):
        if self.use_nvo:
            self._lab()
        else:
            self.inv.add_netns(self.ul)
            run(["ip", "-n", self.ul, "link", "add", "br0", "type", "bridge"])
            run(["ip", "-n", self.ul, "link", "set", "br0", "up"])
        for ns, addr in ((self.rr_ns, RR_IP), (self.inj_ns, INJ_IP), (self.frr_ns, FRR_IP)):
            self._attach(ns, addr)
        self._rr()
        if self.args.frr_client != "none":
            self._frr_client()
        if self.use_nvo:
            self._configure_nvods()

    def _lab(self):
        hosts = "\n".join(f"  - {{name: h{i}, kind: nvo}}" for i in range(1, self.args.hosts + 1))
        nets = "\n".join(f"  - {{vni: {v}, name: evpn{v}, flood: []}}" for v in self.vnis)
        path = self.workdir / f"{self.lab}.yaml"
        path.write_text(LAB_TOPOLOGY.format(name=self.lab, prefix=PREFIX, hosts=hosts,
                                            networks=nets))
        self.inv.lab_up(self.lab, path, self.args.bin_dir / "nvod")
        out = run([self.inv.nvo, "-o", "json", "lab", "status", self.lab]).stdout
        nodes = (json.loads(out) or [{}])[0].get("nodes", [])
        for i, n in enumerate(n for n in nodes if n.get("nvod_pid")):
            addr = (n.get("addresses") or [f"{PREFIX}.{i + 1}"])[0]
            sock = n.get("api_socket") or f"/run/nvo/lab/{self.lab}/{n['name']}.sock"
            self.nvods[n["name"]] = {"pid": n["nvod_pid"], "addr": addr.split("/")[0],
                                     "sock": sock}

    def _attach(self, ns, addr):
        self.inv.add_netns(ns)
        dev = f"u-{ns.rsplit('-', 1)[1]}"
        run(["ip", "-n", self.ul, "link", "add", dev, "type", "veth", "peer", "name", "eth0",
             "netns", ns])
        run(["ip", "-n", self.ul, "link", "set", dev, "master", "br0", "up"])
        run(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])

    def _frr_dir(self, d):
        d.mkdir(parents=True, exist_ok=True)
        shutil.chown(d, "frr", "frr")
        return d

    def _frr_daemon(self, ns, d, daemon, extra=()):
        log_file = open(d / f"{daemon}.out", "w")
        p = self.inv.spawn(in_ns(ns, FRR_BIN / daemon, "-f", d / f"{daemon}.conf",
                                 "-i", d / f"{daemon}.pid", "-z", d / "zserv.api",
                                 "--vty_socket", d, "-u", "frr", "-g", "frr", *extra),
                           output=log_file)
        return p.pid

    def _rr(self):
        d = self._frr_dir(self.rr_dir)
        fmt = dict(asn=ASN, rr=RR_IP, prefix=PREFIX, dir=d)
        if self.args.rr == "frr":
            (d / "bgpd.conf").write_text(FRR_RR_CONF.format(**fmt))
            shutil.chown(d / "bgpd.conf", "frr", "frr")
            self.rr_pids = [self._frr_daemon(self.rr_ns, d, "bgpd", ["-Z"])]
        else:
            (d / "gobgpd.toml").write_text(GOBGP_RR_CONF.format(**fmt))
            p = self.inv.spawn(in_ns(self.rr_ns, "gobgpd", "-f", d / "gobgpd.toml", "-l", "warn"),
                               output=open(d / "gobgpd.out", "w"))
            self.rr_pids = [p.pid]

    def _frr_client(self):
        d = self._frr_dir(self.frr_dir)
        full = self.args.frr_client == "full"
        conf = FRR_CLIENT_CONF.format(asn=ASN, me=FRR_IP, rr=RR_IP, dir=d,
                                      advertise="  advertise-all-vni\n" if full else "")
        (d / "bgpd.conf").write_text(conf)
        (d / "zebra.conf").write_text(f"hostname vtep\nlog file {d}/zebra.log\n")
        for f in ("bgpd.conf", "zebra.conf"):
            shutil.chown(d / f, "frr", "frr")
        if not full:
            self.frr_pids = [self._frr_daemon(self.frr_ns, d, "bgpd", ["-Z"])]
            return
        for v in self.vnis:
            ns = ["ip", "-n", self.frr_ns]
            run(ns + ["link", "add", f"br{v}", "type", "bridge"])
            run(ns + ["link", "add", f"vx{v}", "type", "vxlan", "id", v, "dstport", 4789,
                      "local", FRR_IP, "nolearning"])
            run(ns + ["link", "set", f"vx{v}", "master", f"br{v}", "up"])
            run(ns + ["link", "set", f"br{v}", "up"])
        self.frr_pids = [self._frr_daemon(self.frr_ns, d, "zebra")]
        wait_for(lambda: (d / "zserv.api").exists(), 10, "zebra's zserv.api socket")
        self.frr_pids.append(self._frr_daemon(self.frr_ns, d, "bgpd"))

    def _configure_nvods(self):
        for host, n in self.nvods.items():
            body = {"asn": ASN, "router_id": n["addr"], "connect_retry_s": 1,
                    "neighbors": [{"address": RR_IP, "description": "route reflector"}]}
            status, answer = api(n["sock"], "PUT", "/v1/bgp", body)
            if status >= 300:
                raise NvodWithoutBgp(f"PUT /v1/bgp on {host}'s nvod answered {status}: "
                                     f"{str(answer)[:160]}")

    # What the round reads.

    def rr_count(self):
        if self.args.rr == "frr":
            return frr_received(str(self.rr_dir), INJ_IP)
        return gobgp_destinations(self.rr_ns)

    def rr_established(self):
        if self.args.rr == "frr":
            return frr_established(str(self.rr_dir))
        return gobgp_established(self.rr_ns)

    def clients(self):
        return [n["addr"] for n in self.nvods.values()] + \
            ([FRR_IP] if self.args.frr_client != "none" else [])

    def rss(self):
        out = {"rr": sum(rss_kib(p) for p in self.rr_pids)}
        if self.frr_pids:
            out["frr"] = sum(rss_kib(p) for p in self.frr_pids)
        out.update({h: rss_kib(n["pid"]) for h, n in self.nvods.items()})
        return out


class NvodWithoutBgp(RoundFailed):
    """nvod refused PUT /v1/bgp: its BGP speaker is not there (yet)."""


def wait_for(cond, timeout, what, every=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(every)
    raise RoundFailed(f"no {what} within {timeout:.0f} s")


def nvod_bgp(sock):
    status, s = api(sock, "GET", "/v1/bgp")
    if status != 200 or not isinstance(s, dict):
        raise RoundFailed(f"GET /v1/bgp answered {status}: {str(s)[:160]}")
    return s


# ---------------------------------------------------------------------------------------------
# One round: quiet table, baseline, inject, poll, memory.

def counters(rnd, total):
    """{name: (read function, seconds between polls, routes to add to the value before)}."""
    # gobgp's CLI asks gobgpd to walk its table over gRPC: polled less often than vtysh.
    c = {"rr received": (rnd.rr_count, 0.1 if rnd.args.rr == "frr" else 0.25, total)}
    for host, n in rnd.nvods.items():
        sock = n["sock"]
        c[f"{host} received"] = (lambda s=sock: nvod_bgp(s)["routes_received"], 0.05, total)
        # Every MAC route becomes an FDB entry and every type-3 a flood-list remote.
        c[f"{host} installed"] = (lambda s=sock: nvod_bgp(s)["routes_installed"], 0.05, total)
    if rnd.args.frr_client != "none":
        c["frr received"] = (lambda: frr_received(str(rnd.frr_dir), RR_IP), 0.1, total)
    if rnd.args.frr_client == "full":
        macs = total - len(rnd.vnis)
        c["frr installed"] = (lambda: kernel_remote_macs(rnd.frr_ns, rnd.vnis), 0.2, macs)
    return c


def quiet(rnd, c, timeout=90):
    """Waits until every client is up at the reflector and every count holds still for 2 s;
    returns the counts."""
    want = set(rnd.clients())
    wait_for(lambda: want <= set(rnd.rr_established()), timeout,
             f"sessions of {', '.join(sorted(want))} at the route reflector")
    for host, n in rnd.nvods.items():
        wait_for(lambda s=n["sock"]: all(x.get("state") == "established"
                                         for x in nvod_bgp(s).get("neighbors", [])),
                 timeout, f"established session on {host}'s nvod")
    before, still_since = None, time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = {k: fn() for k, (fn, _, _) in c.items()}
        if now != before:
            before, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= 2:
            return now
        time.sleep(0.5)
    raise RoundFailed(f"the routes did not settle before injection within {timeout} s: {before}")


class Injector:
    """nvo-bgp-inject in its namespace; its JSON lines are collected as they come."""

    def __init__(self, rnd, size):
        cmd = in_ns(rnd.inj_ns, rnd.args.bin_dir / "nvo-bgp-inject", "--peer", RR_IP,
                    "--asn", ASN, "--router-id", INJ_IP, "--routes", size, "--type3",
                    "--vnis", f"{rnd.vnis[0]}-{rnd.vnis[-1]}")
        self.events, self.cond = {}, threading.Condition()
        self.proc = rnd.inv.spawn(cmd)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.events[ev.get("event")] = ev
                self.cond.notify_all()

    def wait(self, event, timeout):
        with self.cond:
            self.cond.wait_for(lambda: event in self.events or "error" in self.events
                               or self.proc.poll() is not None, timeout)
            if event in self.events:
                return self.events[event]
        err = self.events.get("error", {}).get("error")
        if not err and self.proc.poll() is not None:
            err = (self.proc.stderr.read() or "")[:300]
        raise RoundFailed(f"injector: no {event} event: {err or 'timed out'}")


def poll(name, fn, every, target, t0, deadline, out):
    last, err = None, None
    while time.time() < deadline:
        try:
            last = fn()
        except (RoundFailed, CommandFailed, OSError, KeyError, ValueError) as e:
            err = str(e)
        if last is not None and last >= target:
            out[name] = {"reached_s": round(time.time() - t0, 3), "last": last}
            return
        time.sleep(every)
    out[name] = {"reached_s": None, "last": last, "error": err or f"still {last} of {target}"}


def measure_round(rnd, size):
    total = size + len(rnd.vnis)
    c = counters(rnd, total)
    base = quiet(rnd, c)
    rss_before = rnd.rss()
    log(f"  quiet: {base}; RSS before (KiB) {rss_before}; injecting {size} + {len(rnd.vnis)}")
    inj = Injector(rnd, size)
    t0 = inj.wait("established", 30)["unix_s"]
    deadline = time.time() + rnd.args.timeout
    results, threads = {}, []
    for name, (fn, every, add) in c.items():
        t = threading.Thread(target=poll, args=(name, fn, every, base[name] + add, t0, deadline,
                                                results), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    time.sleep(1)  # let the daemons finish what follows the last route (RIB walks, logs)
    rss_after = rnd.rss()
    sent = inj.events.get("sent", {})
    rnd.inv.stop(inj.proc)
    for name, r in sorted(results.items()):
        log(f"  {name:16} {r.get('reached_s')} s (last {r.get('last')}, base {base[name]})")
    return {"size": size, "total_routes": total, "t0_unix": t0, "base": base,
            "polls": {k: v[1] for k, v in c.items()}, "targets": results,
            "rss_before_kib": rss_before, "rss_after_kib": rss_after,
            "injector": {k: sent.get(k) for k in ("send_s", "updates", "bytes")}}


# ---------------------------------------------------------------------------------------------
# Figures and the report.

def figures(rounds, size):
    """Per entity: received_s, installed_s, bytes_per_route (medians over the rounds)."""
    rs = [r for r in rounds if r.get("size") == size and "targets" in r]
    if not rs:
        return {}
    ents = {}
    for r in rs:
        total = r["total_routes"]
        for name, t in r["targets"].items():
            who, what = name.rsplit(" ", 1)
            ents.setdefault(who, {}).setdefault(f"{what}_s", []).append(t["reached_s"])
        for who, after in r["rss_after_kib"].items():
            key = "rr" if who == "rr" else who
            d = ents.setdefault(key, {})
            before = r["rss_before_kib"].get(who, after)
            d.setdefault("rss_before_kib", []).append(before)
            d.setdefault("rss_after_kib", []).append(after)
            d.setdefault("bytes_per_route", []).append((after - before) * 1024 / total)
    med = lambda xs: statistics.median(xs) if xs and None not in xs else None  # noqa: E731
    span = lambda xs: [min(xs), max(xs)] if xs and None not in xs else None  # noqa: E731
    out = {}
    for who, d in ents.items():
        out[who] = {k: med(v) for k, v in d.items()}
        out[who].update({f"{k}_range": span(v) for k, v in d.items()})
    return out


def ratios(fig):
    nvods = [v for k, v in fig.items() if k not in ("rr", "frr")]
    frr = fig.get("frr")
    if not nvods or not frr:
        return {}
    out = {}
    for key in ("received_s", "installed_s"):
        times = [n.get(key) for n in nvods]
        if frr.get(key) and None not in times:
            # Converged on every nvo host: the slowest one counts.
            out[f"{key} (slowest nvod ÷ FRR)"] = max(times) / frr[key]
    mems = [n.get("bytes_per_route") for n in nvods]
    if frr.get("bytes_per_route") and None not in mems:
        out["bytes_per_route (mean nvod ÷ FRR)"] = statistics.mean(mems) / frr["bytes_per_route"]
    return out


def cell(v, fmt="{:.2f}", span=None):
    """A median, with the range over the rounds when there were several."""
    if v is None:
        return "—"
    text = fmt.format(v)
    if span and span[0] != span[1]:
        text += f" ({fmt.format(span[0])}–{fmt.format(span[1])})"
    return text


def render(doc):
    a = doc["config"]
    lines = [f"# EVPN control-plane scale, {doc['started_utc']}", "",
             f"Route reflector: {doc['versions'].get('rr')}; FRR client: {a['frr_client']} "
             f"({doc['versions'].get('frr')}); nvod hosts: "
             f"{a['hosts'] if doc['nvo_ran'] else 0}; VNIs: {a['vnis']}; rounds per size: "
             f"{a['reps']}; commit {doc['git']}. Times are seconds from the injector's session "
             "coming up to the last route counted (polls every 0.05 s for nvod, 0.1 s for "
             "vtysh, 0.25 s for gobgp, 0.2 s for the kernel FDB; each vtysh/gobgp/bridge poll "
             "is a process on a 2-core machine, so it perturbs what it measures). "
             "Memory per route is the "
             "RSS growth ÷ routes (type-2 + type-3). Cells are medians over the rounds, "
             "(min–max) when there were several.", ""]
    if not doc["nvo_ran"]:
        lines += [f"**nvod half not measured**: {doc['nvo_reason']}", ""]
    names = {"rr": f"route reflector ({a['rr']})", "frr": f"FRR client VTEP ({a['frr_client']})"}
    for size in a["sizes"]:
        fig = doc["figures"].get(str(size), {})
        lines += [f"## {size} MAC routes (+{a['vnis']} type-3)", ""]
        if not fig:
            lines += ["No round of this size completed (see problems).", ""]
            continue
        lines += ["| who | received all (s) | installed all (s) | RSS before (MiB) | "
                  "RSS after (MiB) | bytes per route |", "|---|---|---|---|---|---|"]
        for who in sorted(fig, key=lambda w: (w != "rr", w == "frr", w)):
            f = fig[who]
            mib = lambda k: cell(f.get(k) and f[k] / 1024)  # noqa: E731
            rng = lambda k: f.get(f"{k}_range")  # noqa: E731
            lines.append(f"| {names.get(who, 'nvod ' + who)} | "
                         f"{cell(f.get('received_s'), span=rng('received_s'))} | "
                         f"{cell(f.get('installed_s'), span=rng('installed_s'))} | "
                         f"{mib('rss_before_kib')} | {mib('rss_after_kib')} | "
                         f"{cell(f.get('bytes_per_route'), '{:.0f}', rng('bytes_per_route'))} |")
        r = doc["ratios"].get(str(size), {})
        if r:
            lines += ["", "nvo ÷ FRR: " + "; ".join(f"{k} **{v:.2f}**" for k, v in r.items())]
        lines.append("")
    if doc["problems"]:
        lines += ["## Problems", ""] + [f"- {p}" for p in doc["problems"]] + [""]
    return "\n".join(lines)


def versions(args):
    first = lambda cmd: (run(cmd, check=False).stdout.strip().splitlines() or ["?"])[0]  # noqa
    v = {}
    if args.rr == "frr" or args.frr_client != "none":
        frr = first([FRR_BIN / "bgpd", "--version"])
        v["rr"] = f"{frr}, bgpd -Z"
        v["frr"] = frr + (": zebra + bgpd, kernel VXLAN" if args.frr_client == "full" else "")
    if args.rr == "gobgp":
        v["rr"] = first(["gobgpd", "--version"])
    return v


# ---------------------------------------------------------------------------------------------
# The run.

def on_signal(signum, _frame):
    raise Interrupted(signal.Signals(signum).name)


def one_round(args, run_id, size, rep, use_nvo, doc):
    """Builds, measures and removes one round; returns its record (with `error` on failure)."""
    inv = Inventory(args.bin_dir / "nvo", f"nvo-{run_id}-")
    workdir = tempfile.mkdtemp(prefix=f"nvo-{run_id}-")
    os.chmod(workdir, 0o755)  # the FRR daemons run as frr and keep their sockets there
    inv.watch(workdir)
    rec = {"size": size, "rep": rep, "nvo": use_nvo}
    try:
        rnd = Round(args, run_id, workdir, inv, use_nvo)
        log(f"round {size} routes, rep {rep + 1}: building ({'with' if use_nvo else 'no'} nvod)")
        rnd.up()
        rec.update(measure_round(rnd, size))
    except NvodWithoutBgp:
        raise
    except (RoundFailed, CommandFailed, OSError) as e:
        rec["error"] = str(e)
        doc["problems"].append(f"{size} routes, rep {rep + 1}: {e}")
        log(f"  FAILED: {e}")
    finally:
        leaks = inv.teardown()
        shutil.rmtree(workdir, ignore_errors=True)
        doc["problems"] += [f"teardown: {leak}" for leak in leaks]
    return rec


def measure(args, run_id, doc):
    use_nvo = not args.no_nvo
    for size in args.sizes:
        for rep in range(args.reps):
            try:
                rec = one_round(args, run_id, size, rep, use_nvo, doc)
            except NvodWithoutBgp as e:
                # nvod has no BGP speaker yet: say so once, and measure the rest without it.
                doc["nvo_reason"] = str(e)
                log(f"  nvod has no BGP: {e}; measuring without nvod from now on")
                use_nvo = False
                rec = one_round(args, run_id, size, rep, use_nvo, doc)
            doc["rounds"].append(rec)
    doc["nvo_ran"] = any(r.get("nvo") and "targets" in r for r in doc["rounds"])
    if args.no_nvo:
        doc["nvo_reason"] = "--no-nvo"


def main():
    args = parse_args()
    preflight(args)
    started = datetime.datetime.now(datetime.timezone.utc)
    run_id = f"evpn{os.getpid()}"
    head = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=False).stdout.strip()
    dirty = run(["git", "-C", ROOT, "status", "--porcelain"], check=False).stdout.strip()
    doc = {"schema": 1, "kind": "evpn", "stamp": started.strftime("%Y%m%dT%H%M%SZ"),
           "started_utc": started.strftime("%Y-%m-%d %H:%M:%S UTC"),
           "config": {k: (str(v) if isinstance(v, pathlib.Path) else v)
                      for k, v in vars(args).items()},
           "git": head + (" (dirty)" if dirty else ""), "versions": versions(args),
           "rounds": [], "problems": [], "nvo_ran": False, "nvo_reason": ""}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        measure(args, run_id, doc)
    except Interrupted as e:
        sys.exit(f"evpn_scale: interrupted ({e}); everything it made was removed, no results")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
    doc["figures"] = {str(s): figures(doc["rounds"], s) for s in args.sizes}
    doc["ratios"] = {str(s): ratios(f) for s, f in doc["figures"].items()}
    results = pathlib.Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    name = f"{doc['stamp']}-evpn"
    (results / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    text = render(doc)
    (results / f"{name}.md").write_text(text + "\n")
    print(text)
    print(f"\n(written to {results / name}.md and .json)")
    return 1 if doc["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
