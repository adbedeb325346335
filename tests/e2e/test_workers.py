"""workers (issue 16): nvod's userspace datapath with two workers — flows spread over both by
one symmetric hash of the inner flow, a flow's two directions on one worker, and a MAC one
worker learned forwarded to by the other without flooding.

      c1                              c2
       |                               |
   [ h1: nvod, userspace,         [ h2: nvod, userspace,
     workers: 2 ]                   workers: 2 ]
        \\ eth0                      / eth0
         +------ ul: bridge br0 ----+      underlay 10.100.0.0/24, VXLAN VNI 100

iperf3 -P 4 from c1 to c2: four TCP flows, hashed by the fanout program on c1's port and by the
reuseport program on h2's VXLAN socket (nvo_io's `steer`: the inner flow, symmetric). A ping's
request and reply are one flow: on each host one worker reads both (the port's request, the
underlay's reply), the same one on h1 and h2. The
containers have IPv6 off, so nothing but the test's traffic crosses (no ND/MLD floods).

The eBPF datapath forwards in the kernel on every CPU; nvod's workers are the userspace
path's: skipped there.
"""

import json
import os
import time

import pytest

from bgp_peers import nvod_pid
from conftest import RUN, api, wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {datapath: userspace, workers: 2}}
  - {name: h2, nvod: {datapath: userspace, workers: 2}}
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("NVO_LAB_DATAPATH") == "ebpf",
    reason="workers are the userspace datapath's threads; this test pins datapath: userspace")


def thread_cpu(pid):
    """CPU ticks (user + system) of each datapath thread of PID, by thread name."""
    ticks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        if name.startswith("nvod-datapath"):
            ticks[name] = int(fields[11]) + int(fields[12])
    return ticks


def floods(lab, host):
    return lab.counters(host)["networks"]["100"]["encap_flood"]


def one_worker_per_flow(lab):
    """A ping flow's packets (request from the port, reply from the underlay on h1; the other
    way round on h2) all read by one worker, the same index on both hosts."""
    before = {h: api(lab, h, "GET", "/v1/node")["worker_packets"] for h in ("h1", "h2")}
    lab.exec("c1", "ping", "-c", "40", "-i", "0.01", "-q", "10.0.0.2")
    moved = {}
    for h in ("h1", "h2"):
        now = api(lab, h, "GET", "/v1/node")["worker_packets"]
        moved[h] = [a - b for a, b in zip(now, before[h])]
    busiest = {h: max(range(2), key=lambda w: moved[h][w]) for h in moved}
    for h, m in moved.items():
        # 40 requests and 40 replies each; an ARP refresh (not IP: worker 0) may add a few.
        assert m[busiest[h]] >= 80 and m[1 - busiest[h]] <= 4, f"{h}: packets per worker {moved}"
    assert busiest["h1"] == busiest["h2"], f"packets per worker {moved}"


def test_two_workers_share_flows_and_learning(lab_factory):
    lab = lab_factory(TOPOLOGY)
    config = (RUN / lab.name / "h1.toml").read_text()
    assert "workers = 2" in config, config
    for c in ("c1", "c2"):
        lab.exec(c, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        lab.exec(c, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1")
    for h in ("h1", "h2"):
        node = api(lab, h, "GET", "/v1/node")
        assert (node["workers"], node["datapath"]) == (2, "userspace"), node
        assert len(node["worker_packets"]) == 2, node
    lab.ping("c1", "10.0.0.2")
    lab.ping("c2", "10.0.0.1")
    one_worker_per_flow(lab)
    # Learned MACs reach the other worker within a wake-up; from here on nothing floods.
    time.sleep(0.5)
    before = {h: floods(lab, h) for h in ("h1", "h2")}
    pids = {h: nvod_pid(lab, h) for h in ("h1", "h2")}
    cpu_before = {h: thread_cpu(p) for h, p in pids.items()}
    packets_before = {h: api(lab, h, "GET", "/v1/node")["worker_packets"] for h in ("h1", "h2")}

    def iperf():
        lab.exec("c2", "iperf3", "-s", "-D", "-1")
        wait_for(lambda: lab.exec("c2", "ss", "-ltn", check=False).stdout.count(":5201") > 0,
                 what="iperf3 listening")
        out = lab.exec("c1", "iperf3", "-c", "10.0.0.2", "-P", "4", "-t", "3", "-J", timeout=60).stdout
        result = json.loads(out)
        assert result["end"]["sum_received"]["bytes"] > 1_000_000, result["end"]["sum_received"]

    def spread():
        moved = {}
        for h in ("h1", "h2"):
            now = api(lab, h, "GET", "/v1/node")["worker_packets"]
            moved[h] = [a - b for a, b in zip(now, packets_before[h])]
        return all(n > 0 for m in moved.values() for n in m), moved

    # Four flows spread by hash: both workers of each host handle some. Four flows can all
    # hash to one worker (on a port and on the underlay both, about 1 in 100 runs): new flows
    # (new source ports) then, at most twice.
    for _ in range(3):
        iperf()
        ok, moved = spread()
        if ok:
            break
    for h in ("h1", "h2"):
        assert all(n > 0 for n in moved[h]), f"{h}: packets per worker {moved[h]}"
        ticks = thread_cpu(pids[h])
        busy = [n for n, t in ticks.items() if t > cpu_before[h].get(n, 0)]
        assert len(busy) >= 2, f"{h}: datapath threads that ran: {ticks} (before {cpu_before[h]})"
        # Every MAC either worker learned was known to the other: no frame flooded.
        assert floods(lab, h) == before[h], lab.counters(h)["networks"]["100"]
        fdb = lab.fdb(h, 100)
        macs = sorted(e["mac"] for e in fdb)
        assert macs == sorted({lab.mac("c1"), lab.mac("c2")}), fdb
