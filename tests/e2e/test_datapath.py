"""The kernel datapath as a user meets it: frames cross hosts while nvod itself is stopped (the
programs forward, nvod is not in the path), and a host on the kernel path talks to a host on the
userspace path, both ways, TCP with the containers' offloads on.

      c1                     c2
       |                      |
   [ h1: nvod ]          [ h2: nvod ]        TWO_KERNEL: both datapath: ebpf
        \\ eth0              / eth0           MIXED: h1 ebpf, h2 userspace
         +--- ul: bridge ---+                 underlay 10.100.0.0/24
"""

import json
import os
import signal

from bgp_peers import nvod_pid
from conftest import wait_for

TWO_KERNEL = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1, nvod: {datapath: ebpf}}, {name: h2, nvod: {datapath: ebpf}}]
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

MIXED = TWO_KERNEL.replace("{name: h2, nvod: {datapath: ebpf}}", "{name: h2, nvod: {datapath: userspace}}")


def test_the_kernel_forwards_while_nvod_is_stopped(lab_factory):
    lab = lab_factory(TWO_KERNEL)
    for h in ("h1", "h2"):
        node = lab.nvo(h, "node")
        assert node["datapath"] == "ebpf", node
    lab.ping("c1", "10.0.0.2")
    # Both MACs are learned (in the kernel, and reported to nvod).
    wait_for(lambda: len(lab.fdb("h1", 100)) >= 2, what="h1 learning c1 and c2")
    pids = [nvod_pid(lab, h) for h in ("h1", "h2")]
    assert all(pids), pids
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        # nvod cannot read a packet now: only the kernel's programs can carry these.
        lab.ping("c1", "10.0.0.2", count=5)
        lab.ping("c2", "10.0.0.1", count=5)
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    counters = lab.counters("h1")
    assert counters["networks"]["100"]["encap_unicast"] >= 10, counters["networks"]


def iperf(lab, client, server_ip, seconds=2):
    lab.exec("c2" if client == "c1" else "c1", "iperf3", "-s", "-D", "-1")
    wait_for(lambda: lab.exec("c2" if client == "c1" else "c1", "ss", "-ltn", check=False).stdout.count(":5201") > 0,
             what="iperf3 listening")
    out = lab.exec(client, "iperf3", "-c", server_ip, "-t", str(seconds), "-J", timeout=60).stdout
    return json.loads(out)["end"]["sum_received"]["bytes"]


def test_kernel_and_userspace_hosts_interoperate(lab_factory):
    lab = lab_factory(MIXED)
    assert lab.nvo("h1", "node")["datapath"] == "ebpf"
    assert lab.nvo("h2", "node")["datapath"] == "userspace"
    lab.ping("c1", "10.0.0.2")
    lab.ping("c2", "10.0.0.1")
    # TCP with checksum offload and TSO on in both containers: the kernel path sends GSO
    # frames whole and partial checksums as they are; the userspace receiver completes them.
    # The userspace sender's UDP GSO batches arrive at the kernel host as one packet, which the
    # kernel path leaves to the host stack and nvod's socket.
    assert iperf(lab, "c1", "10.0.0.2") > 1_000_000
    assert iperf(lab, "c2", "10.0.0.1") > 1_000_000
