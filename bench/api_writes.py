#!/usr/bin/python3
"""API write latency against the size of the tables (issue 15, item 3).

    bench/api_writes.py [--sizes 10,1000,4000] [--writes 200] [--nvod PATH] [--label TEXT]
                        [--datapath userspace|ebpf] [--no-build]

For each size N, one nvod starts in a namespace of its own (nvo-bench<pid>-api: `lo`, and a
veth pair whose end u0 holds the locator 10.209.0.1), on a state directory seeded with N
networks (VNIs 1..N, a format-1 state.json, which every nvod version reads). Once it
answers, the run sends --writes API writes over one keep-alive connection to the unix
socket, one at a time, each acknowledged before the next: POST /v1/networks (VNI 100000 + i,
with a flood list) and DELETE of it, so the table stays at N, then as many POST
/v1/networks/1/fdb (a static entry each). Each write's
latency is the time from sending the request to reading the answer. The run also reads the
bytes nvod wrote meanwhile (/proc/PID/io `wchar`: state files and socket answers) and the
size of the state directory.

Reports the median, 90th percentile and mean per size and per kind of write, and the ratio
of the largest size's median to the smallest's (flat means ≈1). Writes
bench/results/<UTC stamp>-api-writes.{json,md}; never latest.*. Needs root. The namespace and
the nvod it made are removed at the end, also on an error or Ctrl-C (nvod by its pid, the
namespace by its name).

--nvod runs another binary (e.g. an older build, to compare); by default the release build,
built first unless --no-build. --datapath userspace (the default) keeps the kernel path's
start-up out of the figures: the persistence being measured is the same on both paths.
"""

import argparse
import datetime
import http.client
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
LOCATOR = "10.209.0.1"


def log(msg):
    print(f"api-writes: {msg}", file=sys.stderr, flush=True)


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def request(conn, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    t0 = time.perf_counter()
    conn.request(method, path, body=data, headers=headers)
    resp = conn.getresponse()
    text = resp.read()
    dt = time.perf_counter() - t0
    if resp.status >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status} {text[:200]!r}")
    return dt


def seed(state_dir, n):
    net = {"mtu": 1450, "learning": True, "bum": {"mode": "head_end"}, "max_learned": 4096,
           "ageing_s": 300, "flood": [], "fdb": {}}
    state_dir.mkdir(mode=0o700)
    state = {"version": 1, "networks": {str(v): net for v in range(1, n + 1)}, "ports": {}}
    (state_dir / "state.json").write_text(json.dumps(state))


def wchar(pid):
    for line in pathlib.Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def dir_bytes(d):
    return sum(f.stat().st_size for f in d.iterdir() if f.is_file())


def summary(samples):
    s = sorted(samples)
    return {"n": len(s), "median_ms": statistics.median(s) * 1e3,
            "p90_ms": s[int(0.9 * (len(s) - 1))] * 1e3, "mean_ms": statistics.mean(s) * 1e3,
            "max_ms": s[-1] * 1e3}


def one_size(nvod, n, writes, datapath, work):
    ns = f"nvo-bench{os.getpid()}-api"
    d = work / f"n{n}"
    d.mkdir()
    state_dir = d / "state"
    seed(state_dir, n)
    sock = d / "nvod.sock"
    (d / "nvod.toml").write_text(
        f'locator = "{LOCATOR}"\napi_socket = "{sock}"\nstate_dir = "{state_dir}"\n'
        f'datapath = "{datapath}"\nlog = "warn"\n')
    proc = None
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for cmd in (["link", "set", "lo", "up"],
                    ["link", "add", "u0", "type", "veth", "peer", "name", "u1"],
                    ["addr", "add", f"{LOCATOR}/24", "dev", "u0"],
                    ["link", "set", "u0", "up"], ["link", "set", "u1", "up"]):
            subprocess.run(["ip", "-n", ns, *cmd], check=True)
        logf = open(d / "nvod.log", "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns, str(nvod), "--config",
                                 str(d / "nvod.toml")], stdout=logf, stderr=logf)
        deadline = time.time() + 120
        conn = None
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"nvod exited at start: {(d / 'nvod.log').read_text()[-500:]}")
            try:
                conn = UnixHTTP(str(sock))
                request(conn, "GET", "/v1/node")
                break
            except (OSError, http.client.HTTPException, RuntimeError):
                if time.time() > deadline:
                    raise RuntimeError(f"nvod did not answer with {n} networks within 120 s")
                time.sleep(0.1)
        before_dir = dir_bytes(state_dir)
        w0 = wchar(proc.pid)
        nets, dels, fdbs = [], [], []
        for i in range(writes):
            nets.append(request(conn, "POST", "/v1/networks",
                                {"vni": 100000 + i, "flood": ["10.209.0.2"]}))
            dels.append(request(conn, "DELETE", f"/v1/networks/{100000 + i}"))
        for i in range(writes):
            mac = f"02:00:00:{(i >> 16) & 0xff:02x}:{(i >> 8) & 0xff:02x}:{i & 0xff:02x}"
            fdbs.append(request(conn, "POST", "/v1/networks/1/fdb",
                                {"mac": mac, "remote": "10.209.0.2"}))
        w1 = wchar(proc.pid)
        return {"networks": n, "network_add": summary(nets), "network_delete": summary(dels),
                "fdb_add": summary(fdbs), "bytes_written_per_write": (w1 - w0) / (3 * writes),
                "state_dir_bytes_before": before_dir, "state_dir_bytes_after": dir_bytes(state_dir)}
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        subprocess.run(["ip", "netns", "del", ns], check=False)


def render(doc):
    lines = [f"# API write latency against table size ({doc['stamp']})", "",
             f"nvod: `{doc['nvod']}` {doc['label']}; datapath {doc['datapath']}; "
             f"{doc['writes']} writes of each kind per size, one at a time over one connection; "
             f"machine: {doc['nproc']} CPUs, kernel {doc['kernel']}.", "",
             "| networks | POST /v1/networks median (p90) ms | DELETE network median (p90) ms | "
             "POST fdb median (p90) ms | bytes written per write | state dir bytes before → after |",
             "|---|---|---|---|---|---|"]
    for r in doc["results"]:
        lines.append(
            f"| {r['networks']} | {r['network_add']['median_ms']:.2f} ({r['network_add']['p90_ms']:.2f}) "
            f"| {r['network_delete']['median_ms']:.2f} ({r['network_delete']['p90_ms']:.2f}) "
            f"| {r['fdb_add']['median_ms']:.2f} ({r['fdb_add']['p90_ms']:.2f}) "
            f"| {r['bytes_written_per_write']:.0f} "
            f"| {r['state_dir_bytes_before']} → {r['state_dir_bytes_after']} |")
    rs = doc["results"]
    if len(rs) > 1:
        ratio = rs[-1]["network_add"]["median_ms"] / rs[0]["network_add"]["median_ms"]
        lines += ["", f"Median network write at {rs[-1]['networks']} networks ÷ at "
                      f"{rs[0]['networks']}: **{ratio:.2f}** (flat ≈ 1)."]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10,1000,4000")
    p.add_argument("--writes", type=int, default=200)
    p.add_argument("--nvod", type=pathlib.Path, default=ROOT / "target" / "release" / "nvod")
    p.add_argument("--label", default="")
    p.add_argument("--datapath", default="userspace", choices=["userspace", "ebpf"])
    p.add_argument("--no-build", action="store_true")
    a = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("api-writes: needs root (network namespaces)")
    if not a.no_build and a.nvod == ROOT / "target" / "release" / "nvod":
        log("building nvod (cargo build --release -p nvod)")
        subprocess.run(["cargo", "build", "--release", "-p", "nvod"], cwd=ROOT, check=True)
    if not a.nvod.exists():
        sys.exit(f"api-writes: {a.nvod} is missing")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    doc = {"stamp": stamp, "nvod": str(a.nvod), "label": a.label, "datapath": a.datapath,
           "writes": a.writes, "nproc": os.cpu_count(), "kernel": os.uname().release,
           "results": []}
    work = pathlib.Path(tempfile.mkdtemp(prefix="nvo-bench-api-"))
    try:
        for n in [int(x) for x in a.sizes.split(",")]:
            log(f"{n} networks")
            r = one_size(a.nvod, n, a.writes, a.datapath, work)
            log(f"{n} networks: network add median {r['network_add']['median_ms']:.2f} ms, "
                f"fdb add median {r['fdb_add']['median_ms']:.2f} ms, "
                f"{r['bytes_written_per_write']:.0f} bytes written per write")
            doc["results"].append(r)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stamp}-api-writes.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / f"{stamp}-api-writes.md").write_text(render(doc))
    print(render(doc))


if __name__ == "__main__":
    main()
