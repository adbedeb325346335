#!/usr/bin/env python3
"""TCP throughput with no filter, 1 rule and 1 000 rules, side by side in one run, on a two-host
lab: an identity policy (issue 18's "filtering costs nothing" check, >= 0.95x no policy), or
with --flows the flow table (issue 17: 1 000 rules installed against none).

    sudo bench/policy_cost.py [--bin DIR] [--seconds S] [--reps N] [--datapath userspace|ebpf]
                              [--flows]

      web (h1, app=web) --- nvod h1 === underlay === nvod h2 --- db (h2, app=db): iperf3 -s

Each repetition runs the three cases in rotating order, each an iperf3 TCP run of S seconds
from web to db (port 5201). Policy: applied on both hosts between runs (1 rule: allow web -> db
tcp 5201; 1 000 rules: 999 rules for other ports, then that one). Flows: rules on web's port on
h1, none matching the iperf3 traffic (1 rule: drop tcp 10000; 1 000 rules: drop tcp 10000-10999,
each its own priority), added with `nvo flow add` between runs (not timed). Prints the medians in
Gbit/s and their ratios to no filter, and the JSON of every sample on the last line.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TOPOLOGY = """name: polbench
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, encap: vxlan-gbp, params: {group: 1}}]
containers:
  - {name: web, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}
  - {name: db, host: h2, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}
"""


def policy(rules):
    lines = ["network: 100", "groups:", "  - {name: web, id: 10, match: {app: web}}",
             "  - {name: db, id: 20, match: {app: db}}", "rules:"]
    for i in range(rules - 1):
        lines.append(f"  - {{name: r{i}, from: web, to: db, proto: tcp, ports: [{10000 + i}], action: allow}}")
    lines.append("  - {name: iperf, from: web, to: db, proto: tcp, ports: [5201], action: allow}")
    return "\n".join(lines) + "\n"


def install_flows(nvo, sock, n):
    """Leaves exactly `n` rules (none matching iperf3's port 5201) on web's port."""
    port = json.loads(run(nvo, "--socket", sock, "-o", "json", "port", "list").stdout)[0]["name"]
    run(nvo, "--socket", sock, "flow", "del", "all")
    for i in range(n):
        run(nvo, "--socket", sock, "flow", "add", port, f"priority={100 + i},tcp,tp_dst={10000 + i},actions=drop")


def run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=True, **kw)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default="target/release")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--datapath", default="userspace")
    p.add_argument("--flows", action="store_true", help="measure flow rules instead of a policy")
    a = p.parse_args()
    nvo = os.path.join(a.bin, "nvo")
    sock = lambda h: f"/run/nvo/lab/polbench/{h}.sock"  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="polbench")
    topo = os.path.join(tmp, "t.yaml")
    with open(topo, "w") as f:
        f.write(TOPOLOGY)
    files = {}
    for n in (1, 1000):
        files[n] = os.path.join(tmp, f"p{n}.yaml")
        with open(files[n], "w") as f:
            f.write(policy(n))
    env = dict(os.environ, NVO_LAB_DATAPATH=a.datapath)
    run(nvo, "lab", "up", topo, "--nvod", os.path.join(a.bin, "nvod"), env=env, timeout=180)
    samples = {"none": [], "1": [], "1000": []}
    server = subprocess.Popen(["ip", "netns", "exec", "nvo-polbench-db", "iperf3", "-s"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        cases = ["none", "1", "1000"]
        for rep in range(a.reps):
            for case in cases[rep % 3:] + cases[:rep % 3]:
                if a.flows:
                    install_flows(nvo, sock("h1"), 0 if case == "none" else int(case))
                    # Installing 1 000 rules is one fsynced journal write each: let the
                    # machine settle before measuring.
                    time.sleep(1)
                elif case == "none":
                    for h in ("h1", "h2"):
                        subprocess.run([nvo, "--socket", sock(h), "policy", "del", "100"], capture_output=True)
                else:
                    for h in ("h1", "h2"):
                        run(nvo, "--socket", sock(h), "policy", "apply", files[int(case)])
                out = run("ip", "netns", "exec", "nvo-polbench-web", "iperf3", "-c", "10.0.0.2", "-t",
                          a.seconds, "-J", timeout=a.seconds + 30).stdout
                bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
                samples[case].append(bps / 1e9)
                print(f"rep {rep + 1} {case:>4} rules: {bps / 1e9:.2f} Gbit/s", flush=True)
    finally:
        server.kill()
        server.wait()
        subprocess.run([nvo, "lab", "down", "polbench"], capture_output=True, timeout=60)
    what = "flow rules" if a.flows else "policy rules"
    base = statistics.median(samples["none"])
    for case in ("none", "1", "1000"):
        m = statistics.median(samples[case])
        print(f"{case:>4} {what}: median {m:.2f} Gbit/s, {m / base:.3f}x none")
    print(json.dumps({"filter": what, "datapath": a.datapath, "seconds": a.seconds, "gbit_s": samples,
                      "load": os.getloadavg()}))


if __name__ == "__main__":
    sys.exit(main())
