#!/usr/bin/python3
"""What `nvo monitor` and Prometheus scraping cost the forwarding rate (issue 20: ≥ 0.97×).

    bench/monitor_overhead.py [--datapaths ebpf,userspace] [--reps 3] [--seconds 8]
                              [--nvod PATH] [--nvo PATH] [--no-build] [--no-scrape]
                              [--flood N]

For each datapath a lab of two nvo hosts comes up (`nvo lab up`, lab name mon<pid><n>):

      red1 10.0.0.1 ── [ h1: nvod ] ══ VXLAN, VNI 100 ══ [ h2: nvod ] ── red2 10.0.0.2
                         http_listen :9477                 http_listen :9477

and iperf3 runs red1 → red2, UDP with 64-byte payloads at full rate (packets per second the
receiver got) and TCP (bits per second received), in two conditions, interleaved per
repetition so that the machine's load drifts into both alike:

  off  nobody monitors, nobody scrapes
  on   `nvo -o json monitor` follows h1 and h2 (its output read and thrown away) and
       /metrics of both is fetched every second by one long-lived scraper in h1's namespace
       (--no-scrape: the monitor only)

--flood N: in both conditions, N malformed VXLAN packets (a 3-byte VXLAN header: each a
malformed_vxlan drop, each a monitor event while someone listens) are sent from h2's
namespace to h1 as fast as a UDP socket goes, starting with each TCP measurement: the issue's
"under a flood of 1 M malformed packets the monitor loses events (counted) but nvod's
forwarding rate is unaffected". The ratio on/off is then the monitor's cost under a drop
storm; the events seen and the events the monitor reported lost are printed.

Prints, per datapath, the median of each figure in each condition and the ratio on/off;
writes bench/results/<UTC stamp>-monitor-overhead.json. The figures are as good as the
machine is quiet: on a shared machine they move by several percent from one run to the next.
Needs root. The lab and every process started are removed at the end, also on an error or
Ctrl-C.
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
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"

TOPOLOGY = """name: {name}
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}
hosts:
  - {{name: h1, nvod: {{http_listen: ":9477"}}}}
  - {{name: h2, nvod: {{http_listen: ":9477"}}}}
networks: [{{vni: 100}}]
containers:
  - {{name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}}
"""
HOSTS = {"h1": "10.100.0.1", "h2": "10.100.0.2"}


def run(*cmd, check=True, timeout=120):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} exited {p.returncode}: {p.stderr.strip()}")
    return p


def netns(lab, node):
    return f"nvo-{lab}-{node}"


def iperf(lab, udp, seconds):
    """One iperf3 run red1 → red2: packets/s received (UDP 64 B) or bits/s received (TCP)."""
    args = ["-c", "10.0.0.2", "-t", str(seconds), "--json"]
    if udp:
        args += ["-u", "-b", "0", "-l", "64"]
    out = run("ip", "netns", "exec", netns(lab, "red1"), "iperf3", *args, timeout=seconds + 30).stdout
    end = json.loads(out)["end"]
    if udp:
        s = end["sum"]
        return (s["packets"] - s["lost_packets"]) / s["seconds"]
    return end["sum_received"]["bits_per_second"]


# N truncated VXLAN headers (malformed_vxlan drops at h1) as fast as a UDP socket sends them.
FLOOD = r"""
import socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
payload = b"\x08\x00\x00"
for i in range(n):
    try:
        s.sendto(payload, ("10.100.0.1", 4789))
    except OSError:
        pass
"""


def flooder(lab, n):
    """Starts sending `n` malformed VXLAN packets from h2 to h1; None when n is 0."""
    if not n:
        return None
    return subprocess.Popen(["ip", "netns", "exec", netns(lab, "h2"), sys.executable, "-c", FLOOD, str(n)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# Every second, GET /metrics of each address given (port 9477) and print "ok" per whole answer.
SCRAPER = r"""
import sys, time, urllib.request
while True:
    start = time.monotonic()
    for addr in sys.argv[1:]:
        try:
            with urllib.request.urlopen(f"http://{addr}:9477/metrics", timeout=10) as r:
                r.read()
            print("ok", flush=True)
        except OSError:
            print("failed", flush=True)
    time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
"""


class Observers:
    """`nvo monitor` on both hosts and a 1 s /metrics scrape of both, until stopped."""

    def __init__(self, nvo, lab, scrape=True):
        self.procs = [subprocess.Popen([nvo, "--socket", f"/run/nvo/lab/{lab}/{h}.sock", "-o", "json", "monitor"],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                      for h in HOSTS]
        self.events = 0
        self.lost = 0
        self.scrapes = 0
        self.scraper = None
        self.stop_flag = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(p,), daemon=True) for p in self.procs]
        if scrape:
            self.threads.append(threading.Thread(target=self._scrape, args=(lab,), daemon=True))
        for t in self.threads:
            t.start()
        time.sleep(1)

    def _read(self, proc):
        for line in proc.stdout:
            self.events += 1
            if line.startswith(b'{"type":"lost"'):
                try:
                    self.lost += json.loads(line).get("count", 0)
                except ValueError:
                    pass

    def _scrape(self, lab):
        # The metrics listeners are on the hosts' underlay addresses, inside the lab: fetched
        # from h1's namespace, as Prometheus in the underlay would, by one long-lived scraper
        # process (a curl per fetch would add two process starts a second — the measuring
        # tool's cost, not nvod's — to the CPUs the forwarding runs on). It prints a line per
        # /metrics answer it read whole.
        self.scraper = subprocess.Popen(["ip", "netns", "exec", netns(lab, "h1"), sys.executable, "-c", SCRAPER,
                                         *HOSTS.values()], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for line in self.scraper.stdout:
            self.scrapes += line.startswith(b"ok")

    def stop(self):
        self.stop_flag.set()
        procs = self.procs + ([self.scraper] if self.scraper else [])
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def measure(nvo, nvod, datapath, reps, seconds, serial, scrape=True, flood=0):
    lab = f"mon{os.getpid() % 10000}{serial}"
    topo = pathlib.Path(tempfile.mkdtemp()) / f"{lab}.yaml"
    topo.write_text(TOPOLOGY.format(name=lab))
    server = None
    figures = {c: {"udp64_pps": [], "tcp_bps": []} for c in ("off", "on")}
    seen = {"events": 0, "lost": 0, "scrapes": 0}
    try:
        run(nvo, "lab", "up", topo, "--nvod", nvod, "--datapath", datapath, timeout=300)
        got = json.loads(run(nvo, "--socket", f"/run/nvo/lab/{lab}/h1.sock", "-o", "json", "node").stdout)["datapath"]
        if got != datapath:
            sys.exit(f"asked for the {datapath} datapath, nvod runs {got}")
        server = subprocess.Popen(["ip", "netns", "exec", netns(lab, "red2"), "iperf3", "-s"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
        run("ip", "netns", "exec", netns(lab, "red1"), "ping", "-c", "3", "-i", "0.2", "10.0.0.2")
        for rep in range(reps):
            # Alternate which condition goes first, so neither always runs on a warmer machine.
            order = ("off", "on") if rep % 2 == 0 else ("on", "off")
            for cond in order:
                obs = Observers(nvo, lab, scrape) if cond == "on" else None
                try:
                    figures[cond]["udp64_pps"].append(iperf(lab, True, seconds))
                    flood_proc = flooder(lab, flood)
                    try:
                        figures[cond]["tcp_bps"].append(iperf(lab, False, seconds))
                    finally:
                        if flood_proc:
                            flood_proc.kill()
                            flood_proc.wait()
                finally:
                    if obs:
                        obs.stop()
                        seen["events"] += obs.events
                        seen["lost"] += obs.lost
                        seen["scrapes"] += obs.scrapes
                print(f"  {datapath} rep {rep + 1} {cond}: udp64 {figures[cond]['udp64_pps'][-1]:,.0f} pkt/s, "
                      f"tcp {figures[cond]['tcp_bps'][-1] / 1e9:.2f} Gbit/s", flush=True)
    finally:
        if server:
            server.kill()
            server.wait()
        run(nvo, "lab", "down", lab, check=False)
    med = {c: {k: statistics.median(v) for k, v in f.items()} for c, f in figures.items()}
    ratio = {k: med["on"][k] / med["off"][k] for k in med["off"]}
    return {"datapath": datapath, "samples": figures, "median": med, "ratio": ratio, "observed": seen}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datapaths", default="ebpf,userspace")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--nvod", default=None)
    ap.add_argument("--nvo", default=None)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--no-scrape", action="store_true", help="on = nvo monitor only (to tell its cost from the scrapes')")
    ap.add_argument("--flood", type=int, default=0, metavar="N",
                    help="send N malformed VXLAN packets to h1 during each TCP measurement, in both conditions")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release"
    if not (args.nvod and args.nvo) and not args.no_build:
        run("cargo", "build", "--release", "-p", "nvod", "-p", "nvo-cli", timeout=3600)
    nvod = args.nvod or target / "nvod"
    nvo = args.nvo or target / "nvo"
    results = []
    for n, dp in enumerate(args.datapaths.split(",")):
        results.append(measure(nvo, nvod, dp, args.reps, args.seconds, n, not args.no_scrape, args.flood))
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'datapath':<10} {'udp64 off':>12} {'udp64 on':>12} {'ratio':>6}   {'tcp off':>10} {'tcp on':>10} {'ratio':>6}")
    for r in results:
        m = r["median"]
        print(f"{r['datapath']:<10} {m['off']['udp64_pps']:>12,.0f} {m['on']['udp64_pps']:>12,.0f} "
              f"{r['ratio']['udp64_pps']:>6.3f}   {m['off']['tcp_bps'] / 1e9:>9.2f}G {m['on']['tcp_bps'] / 1e9:>9.2f}G "
              f"{r['ratio']['tcp_bps']:>6.3f}   (events {r['observed']['events']}, lost {r['observed']['lost']}, "
              f"scrapes {r['observed']['scrapes']})")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{stamp}-monitor-overhead.json"
    meta = {"commit": commit(), "loadavg": load, "cpus": os.cpu_count(), "flood": args.flood,
            "scrape": not args.no_scrape, "reps": args.reps, "seconds": args.seconds}
    out.write_text(json.dumps({**meta, "results": results}, indent=2))
    print(f"written {out.relative_to(ROOT)}")


def commit():
    """The commit measured, with "-dirty" when the work tree differs from it (None outside git)."""
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


if __name__ == "__main__":
    main()
