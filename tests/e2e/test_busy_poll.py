"""busy_poll_us (issue 16): nvod's userspace datapath polls on for a while after a packet instead
of sleeping — and only then: an idle nvod with busy polling on burns no CPU.

      c1                              c2
       |                               |
   [ h1: nvod, userspace,         [ h2: nvod, userspace,
     busy_poll_us: 500 ]            busy_poll_us: 500 ]
        \\ eth0                      / eth0
         +------ ul: bridge br0 ----+      underlay 10.100.0.0/24, VXLAN VNI 100

The eBPF datapath has no polling loop of its own to tune: skipped there.
"""

import os
import time

import pytest

from bgp_peers import nvod_pid
from conftest import RUN

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {datapath: userspace, busy_poll_us: 500}}
  - {name: h2, nvod: {datapath: userspace, busy_poll_us: 500}}
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("NVO_LAB_DATAPATH") == "ebpf",
    reason="busy polling is the userspace datapath's loop; these tests pin datapath: userspace")


def cpu_seconds(pid):
    """User + system CPU time of every thread of PID, in seconds."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_busy_polling_forwards_and_stops_spinning_when_traffic_stops(lab_factory):
    lab = lab_factory(TOPOLOGY)
    config = (RUN / lab.name / "h1.toml").read_text()
    assert "busy_poll_us = 500" in config, config
    # Request and reply cross both nvods while they poll.
    out = lab.exec("c1", "ping", "-c", "200", "-i", "0.002", "-q", "10.0.0.2", timeout=60).stdout
    assert " 0% packet loss" in out, out
    pids = [nvod_pid(lab, h) for h in ("h1", "h2")]
    assert all(pids), pids
    # Traffic over: within busy_poll_us each loop goes back to sleeping in poll. Over two
    # idle seconds both nvods together use a small share of one CPU (a spinning one would
    # take all of it).
    time.sleep(0.5)
    before = [cpu_seconds(p) for p in pids]
    time.sleep(2)
    used = [cpu_seconds(p) - b for p, b in zip(pids, before)]
    assert sum(used) < 0.3, f"idle nvods used {used} CPU seconds in 2 s"
