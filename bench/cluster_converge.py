#!/usr/bin/python3
"""Cluster mode convergence (issue 19, "Measured"): how long a network written to etcd takes to
carry traffic on every host, and what 1 000 networks through etcd cost each nvod.

    bench/cluster_converge.py [--reps 10] [--networks 1000] [--datapath ebpf]
                              [--bin-dir DIR] [--no-build] [--label TEXT]

One lab of three nvod hosts in cluster mode (`nvo lab up`, lease_ttl_s 10) and a three-member
etcd cluster in namespaces of its own on the lab's underlay (tests/e2e/etcd.py):

      c<r> .1          c<r> .2          c<r> .3        a container per host and network
    [ h1: nvod ]    [ h2: nvod ]    [ h3: nvod ]
         +------- nvo-<lab>-ul: br0 10.100.0.0/24 -------+
          .241/.242/.243 etcd m1..m3     .240 the writer (etcdctl, etcd's JSON gateway)

1. Convergence, --reps times: `nvo --etcd … network add VNI` (no flood list: the hosts' leases
   fill it) from the writer; every host is polled over its API socket (GET /v1/networks/VNI,
   every 10 ms) and, as soon as the network is there with a complete flood list, a waiting
   container is attached to it (`POST /v1/ports`); then h1's container pings h2's and h3's
   (one echo each, retried every 50 ms). Reported per repetition: write → network on every host
   with full flood lists ("converged"), and write → both pings answered ("traffic"); the
   median and maximum over the repetitions. The network is deleted after each repetition.
2. Scale: --networks objects are written in one go through etcd's JSON gateway (/v3/kv/put on
   one keep-alive connection, from the writer's namespace); each nvod is polled (GET
   /v1/cluster, its `networks`) until it owns all of them. Reported per nvod: seconds from the
   first write to the last network applied, RSS (VmRSS) before and after, and bytes per
   network; then the same for deleting them all (one /v3/kv/deleterange).

Writes bench/results/<UTC stamp>-cluster.{json,md} (never latest.*). Needs root, etcd-server,
etcd-client. Not part of the test suite. Everything it made is removed at the end, also on an
error or Ctrl-C. By default the release build (`cargo build --release -p nvod -p nvo-cli`
first unless --no-build).
"""

import argparse
import base64
import datetime
import http.client
import json
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from etcd import EtcdCluster  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HOSTS = ("h1", "h2", "h3")
LOCATORS = {h: f"10.100.0.{i + 1}" for i, h in enumerate(HOSTS)}
FIRST_SCALE_VNI = 10000


def log(msg):
    print(f"cluster-bench: {msg}", file=sys.stderr, flush=True)


def run(*cmd, timeout=60, check=True, stdin=None):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, input=stdin)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}: {p.stderr.strip()}")
    return p


class Api:
    """One keep-alive HTTP connection to an nvod's API socket."""

    def __init__(self, path):
        self.path = str(path)
        self.conn = None

    def _connect(self):
        c = http.client.HTTPConnection("localhost", timeout=30)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.path)
        c.sock = s
        self.conn = c

    def call(self, method, path, body=None):
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self._connect()
                self.conn.request(method, path, body=None if body is None else json.dumps(body),
                                  headers={"Content-Type": "application/json"})
                r = self.conn.getresponse()
                text = r.read().decode()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, (json.loads(text) if text else None)
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def rss_kib(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def nvod_pid(lab_ns):
    for pid in run("ip", "netns", "pids", lab_ns).stdout.split():
        try:
            if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "nvod":
                return int(pid)
        except OSError:
            pass
    raise RuntimeError(f"no nvod in {lab_ns}")


def stats(values):
    return {"n": len(values), "median_s": statistics.median(values), "max_s": max(values),
            "min_s": min(values)}


class Bench:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.bin = pathlib.Path(args.bin_dir)
        pid = os.getpid() % 10000
        self.lab = f"clb{pid}"
        self.prefix = f"clb{pid}"
        self.etcd = EtcdCluster(f"{self.prefix}x", bridge_ns=self.ns("ul"))
        self.containers = []
        self.apis = {}

    def ns(self, node):
        return f"nvo-{self.lab}-{node}"

    def socket(self, host):
        return f"/run/nvo/lab/{self.lab}/{host}.sock"

    def up(self):
        eps = ", ".join(f"'{e}'" for e in self.etcd.endpoints)
        hosts = "\n".join(f"  - {{name: {h}, nvod: {{datapath: {self.args.datapath}, cluster: "
                          f"{{etcd: [{eps}], name: {h}, lease_ttl_s: 10}}}}}}" for h in HOSTS)
        topo = self.tmp / "lab.yaml"
        topo.write_text(f"name: {self.lab}\nunderlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}\n"
                        f"hosts:\n{hosts}\n")
        run(self.bin / "nvo", "lab", "up", topo, "--nvod", self.bin / "nvod", timeout=300)
        self.etcd.start_all()
        self.apis = {h: Api(self.socket(h)) for h in HOSTS}
        deadline = time.monotonic() + 30
        for h in HOSTS:
            while True:
                _, s = self.apis[h].call("GET", "/v1/cluster")
                if s and s.get("connected") and len(s.get("hosts", [])) == 3:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{h} not connected with 3 hosts: {s}")
                time.sleep(0.1)

    def down(self):
        for ns in self.containers:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.etcd.close()
        subprocess.run([str(self.bin / "nvo"), "lab", "down", self.lab], capture_output=True, timeout=60)

    def nvo_etcd(self, *args):
        return run("ip", "netns", "exec", self.etcd.client_ns, self.bin / "nvo", "--etcd",
                   ",".join(self.etcd.endpoints), *args)

    # -- 1. convergence -------------------------------------------------------------------------

    def prepare_container(self, host, r):
        """A namespace with eth0 10.77.<r>.<i>/24 whose peer c<r> waits in HOST's namespace."""
        i = HOSTS.index(host) + 1
        ns = f"{self.prefix}{host}r{r}"
        run("ip", "netns", "add", ns)
        self.containers.append(ns)
        run("ip", "netns", "exec", self.ns(host), "ip", "link", "add", f"c{r}", "mtu", "1450", "type", "veth",
            "peer", "name", "eth0", "mtu", "1450", "netns", ns)
        run("ip", "-n", ns, "addr", "add", f"10.77.{r}.{i}/24", "dev", "eth0")
        run("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        run("ip", "netns", "exec", self.ns(host), "ip", "link", "set", f"c{r}", "up")
        return ns

    def one_rep(self, r):
        vni = 1000 + r
        containers = {h: self.prepare_container(h, r) for h in HOSTS}
        pending = set(HOSTS)
        t0 = time.monotonic()
        self.nvo_etcd("network", "add", str(vni))
        t_written = time.monotonic() - t0
        while pending:
            for h in sorted(pending):
                status, net = self.apis[h].call("GET", f"/v1/networks/{vni}")
                want = sorted(LOCATORS[x] for x in HOSTS if x != h)
                if status == 200 and sorted(net["flood"]) == want:
                    s, body = self.apis[h].call("POST", "/v1/ports", {"name": f"c{r}", "vni": vni, "kind": "veth"})
                    if s >= 300:
                        raise RuntimeError(f"port add on {h}: {s} {body}")
                    pending.discard(h)
            if time.monotonic() - t0 > 60:
                raise RuntimeError(f"network {vni} not on {sorted(pending)} after 60 s")
            time.sleep(0.01)
        converged = time.monotonic() - t0
        for dst in ("h2", "h3"):
            addr = f"10.77.{r}.{HOSTS.index(dst) + 1}"
            while run("ip", "netns", "exec", containers["h1"], "ping", "-c", "1", "-W", "1", addr,
                      check=False).returncode != 0:
                if time.monotonic() - t0 > 60:
                    raise RuntimeError(f"no ping to {dst} in {vni} after 60 s")
                time.sleep(0.05)
        traffic = time.monotonic() - t0
        for h in HOSTS:
            self.apis[h].call("DELETE", f"/v1/ports/c{r}")
        self.nvo_etcd("network", "del", str(vni))
        for ns in containers.values():
            run("ip", "netns", "del", ns)
            self.containers.remove(ns)
        return {"vni": vni, "cli_write_s": t_written, "converged_s": converged, "traffic_s": traffic}

    # -- 2. scale -------------------------------------------------------------------------------

    def gateway(self, requests):
        """Sends REQUESTS [(path, body)] to etcd's JSON gateway from the writer's namespace on one
        connection; returns the seconds from the first send to the last answer."""
        script = (
            "import http.client, json, sys, time\n"
            "reqs = json.load(sys.stdin)\n"
            f"c = http.client.HTTPConnection('{self.etcd.addrs[0]}', 2379, timeout=30)\n"
            "t0 = time.monotonic()\n"
            "for path, body in reqs:\n"
            "    c.request('POST', path, body=json.dumps(body), headers={'Content-Type': 'application/json'})\n"
            "    r = c.getresponse(); text = r.read()\n"
            "    if r.status != 200: sys.exit(f'{path}: {r.status} {text[:200]}')\n"
            "print(time.monotonic() - t0)\n")
        p = run("ip", "netns", "exec", self.etcd.client_ns, sys.executable, "-c", script,
                stdin=json.dumps(requests), timeout=600)
        return float(p.stdout.strip())

    def owned(self, h):
        _, s = self.apis[h].call("GET", "/v1/cluster")
        return len(s.get("networks", [])), len(s.get("skipped", []))

    def wait_owned(self, want, t0, timeout):
        done = {}
        while len(done) < len(HOSTS):
            for h in HOSTS:
                if h in done:
                    continue
                n, skipped = self.owned(h)
                if n == want:
                    done[h] = time.monotonic() - t0
                elif skipped and want:
                    raise RuntimeError(f"{h} skipped {skipped} objects: {self.apis[h].call('GET', '/v1/cluster')[1]}")
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"not every nvod reached {want} networks within {timeout} s: {done}")
            time.sleep(0.05)
        return done

    def scale(self, n):
        pids = {h: nvod_pid(self.ns(h)) for h in HOSTS}
        rss_before = {h: rss_kib(pids[h]) for h in HOSTS}
        key = lambda vni: base64.b64encode(f"/nvo/networks/{vni}".encode()).decode()
        puts = [("/v3/kv/put", {"key": key(v), "value": base64.b64encode(json.dumps({"vni": v}).encode()).decode()})
                for v in range(FIRST_SCALE_VNI, FIRST_SCALE_VNI + n)]
        t0 = time.monotonic()
        write_s = self.gateway(puts)
        add = self.wait_owned(n, t0, timeout=600)
        time.sleep(1)
        rss_after = {h: rss_kib(pids[h]) for h in HOSTS}
        # One deleterange over [networks/, networks0): '/' + 1 is '0'.
        t0 = time.monotonic()
        self.gateway([("/v3/kv/deleterange", {"key": base64.b64encode(b"/nvo/networks/").decode(),
                                              "range_end": base64.b64encode(b"/nvo/networks0").decode()})])
        delete = self.wait_owned(0, t0, timeout=600)
        rss_end = {h: rss_kib(pids[h]) for h in HOSTS}
        return {"networks": n, "write_s": write_s, "per_nvod": {
            h: {"add_converged_s": add[h], "delete_converged_s": delete[h], "rss_before_kib": rss_before[h],
                "rss_after_kib": rss_after[h], "rss_after_delete_kib": rss_end[h],
                "bytes_per_network": (rss_after[h] - rss_before[h]) * 1024 / n} for h in HOSTS}}


def report(args, meta, reps, scale):
    conv = stats([r["converged_s"] for r in reps])
    traffic = stats([r["traffic_s"] for r in reps])
    load = " ".join(f"{x:.1f}" for x in meta["loadavg_at_end"])
    lines = [f"# Cluster mode: convergence through etcd ({args.datapath} datapath) {args.label}".rstrip(), "",
             f"{meta['cpus']} CPUs, load average at the end {load}; 3 nvods, 3 etcd members (etcd 3.4, "
             "namespaces on one machine)", "",
             f"## A network written once ({len(reps)} repetitions)", "",
             "| from the write to | median s | min s | max s |", "|---|---|---|---|",
             f"| the network on all 3 nvods, full flood lists | {conv['median_s']:.3f} | {conv['min_s']:.3f} | "
             f"{conv['max_s']:.3f} |",
             f"| ping h1→h2 and h1→h3 answered (containers attached as it appears) | {traffic['median_s']:.3f} | "
             f"{traffic['min_s']:.3f} | {traffic['max_s']:.3f} |", ""]
    if scale:
        lines += [f"## {scale['networks']} networks through etcd", "",
                  f"Written in {scale['write_s']:.2f} s (etcd JSON gateway, one connection).", "",
                  "| nvod | all applied after s | all deleted after s | RSS before MiB | RSS after MiB | "
                  "bytes per network |", "|---|---|---|---|---|---|"]
        for h, r in scale["per_nvod"].items():
            lines.append(f"| {h} | {r['add_converged_s']:.2f} | {r['delete_converged_s']:.2f} | "
                         f"{r['rss_before_kib'] / 1024:.1f} | {r['rss_after_kib'] / 1024:.1f} | "
                         f"{r['bytes_per_network']:.0f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--networks", type=int, default=1000, help="0 skips the scale part")
    ap.add_argument("--datapath", default="ebpf", choices=["ebpf", "userspace"])
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--bin-dir", default=str(target / "release"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cluster-bench: needs root (network namespaces)")
    if not args.no_build:
        log("building the release binaries")
        subprocess.run(["cargo", "build", "--release", "-p", "nvod", "-p", "nvo-cli"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp:
        b = Bench(args, pathlib.Path(tmp))
        try:
            log("lab and etcd up")
            b.up()
            reps = []
            for r in range(args.reps):
                reps.append(b.one_rep(r))
                log(f"rep {r}: converged {reps[-1]['converged_s']:.3f} s, traffic {reps[-1]['traffic_s']:.3f} s")
            scale = None
            if args.networks:
                log(f"{args.networks} networks")
                scale = b.scale(args.networks)
        finally:
            b.down()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    meta = {"reps": args.reps, "datapath": args.datapath, "label": args.label, "bin_dir": args.bin_dir,
            "cpus": os.cpu_count(), "loadavg_at_end": os.getloadavg()}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stamp}-cluster.json").write_text(json.dumps({"meta": meta, "reps": reps, "scale": scale},
                                                              indent=2))
    text = report(args, meta, reps, scale)
    (RESULTS / f"{stamp}-cluster.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
