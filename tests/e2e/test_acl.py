"""ACL profiles (issue 17 item 4): a profile denying TCP 22 and allowing the rest, attached to
VM1's virtual port on h1's shared port hv0. VM1's connection attempts to red1:22 fail and are
counted by the deny rule; its pings and an iperf3 stream pass; VM2, on the same shared port
without the profile, still connects to 22; after a detach VM1 connects again.

    vm1 10.0.0.11 (acl no-ssh)   vm2 10.0.0.12      VNI 100 both, by their MACs
      | eth0                       | eth0
    [ acl-PID-hv: Linux bridge br0 ]
      | up0
      | veth
    hv0  (shared port; virtual ports hv0/VM1, hv0/VM2)
    [ h1: nvod ]                       red1 10.0.0.1 (VNI 100): TCP 22 listener, iperf3 -s
      | eth0                          [ h2: nvod ]
      +-------------------- ul: bridge, 10.100.0.0/24 ---------+

The profile's rules act where VM1's frames enter the pipeline: h1, virtual port hv0/VM1
(in_port). The datapath is the lab's (NVO_LAB_DATAPATH): a shared port is read by nvod on
either, so the rules run in nvod's flow table on both. The hypervisor and VM namespaces are
the test's own (acl-<pid>-…) and are deleted at the end whatever happens.
"""

import json
import os
import subprocess

import pytest

from conftest import NVO, RUN, run, wait_for
from hypervisor import Hypervisor, reachable
from ovs_peer import in_ns
from tcp_probe import CONNECT, SERVE

RED = 100
RED1_IP = "10.0.0.1"
VMS = {
    1: ("02:00:00:00:01:01", "10.0.0.11"),
    2: ("02:00:00:00:01:02", "10.0.0.12"),
}
DENY = "priority=200,tcp,tp_dst=22,actions=drop"
ALLOW = "priority=100,actions=normal"

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: red1, host: h2, vni: 100, ip: 10.0.0.1/24}
"""


@pytest.fixture
def acl_lab(lab_factory):
    """The lab, the hypervisor with VM1 and VM2 on virtual ports of hv0 (VNI 100), and a TCP
    listener on red1:22."""
    lab = lab_factory(TOPOLOGY)
    wanted = os.environ.get("NVO_LAB_DATAPATH")
    if wanted:
        assert lab.nvo("h1", "node")["datapath"] == wanted
    hv = Hypervisor(VMS, tag="acl")
    server = None
    try:
        hv.start(lab.ns("h1"))
        # The lab floods only between hosts with containers of a network: h1 has none.
        lab.nvo("h2", "flood", "add", str(RED), "10.100.0.1")
        lab.nvo("h1", "port", "add", "hv0", "--shared")
        for n in VMS:
            lab.nvo("h1", "vport", "add", "hv0", VMS[n][0], "--vni", str(RED))
        server = subprocess.Popen(["ip", "netns", "exec", lab.ns("red1"), "/usr/bin/python3", "-c",
                                   SERVE, "22", "180"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for n in VMS:
            reachable(lambda c, n=n: hv.ping(n, RED1_IP, count=c), f"vm{n} → red1")
            wait_for(lambda n=n: connects(hv, n), timeout=20, what=f"vm{n} → red1:22 before the acl")
        yield lab, hv
    finally:
        if server is not None:
            server.kill()
            server.wait()
        hv.close()


def connects(hv, vm, port=22, timeout=2):
    out = run(*in_ns(hv.vms[vm], "/usr/bin/python3", "-c", CONNECT, RED1_IP, port, timeout),
              timeout=30).stdout
    return out.startswith("ok")


def counted(lab, rule):
    """The (n_packets, n_bytes) `nvo acl show` gives RULE of profile no-ssh."""
    (acl,) = [a for a in lab.nvo("h1", "acl", "show") if a["name"] == "no-ssh"]
    (shown,) = [r for r in acl["rules"] if r["rule"] == rule]
    return shown["n_packets"], shown["n_bytes"]


def refused(lab, *args):
    """Runs `nvo ARGS` against h1, expecting a refusal; returns its message."""
    p = run(NVO, "--socket", lab.socket("h1"), *args, check=False)
    assert p.returncode != 0, (args, p.stdout)
    return p.stderr


def test_an_acl_on_a_virtual_port_denies_tcp_22_and_passes_the_rest(acl_lab):
    lab, hv = acl_lab
    vm1 = VMS[1][0]
    added = lab.nvo("h1", "acl", "add", "no-ssh", DENY, ALLOW)
    assert [r["rule"] for r in added["rules"]] == [DENY, ALLOW], added
    lab.nvo("h1", "acl", "attach", "hv0", vm1, "no-ssh")
    (acl,) = lab.nvo("h1", "acl", "show")
    assert acl["attached"] == [f"hv0/{vm1}"], acl
    # The profile's rules are flow rules of VM1's virtual port, with the profile's cookie.
    flows = lab.nvo("h1", "flow", "show", f"hv0/{vm1}")["flows"]
    assert sorted(f["flow"].split(" ")[0] for f in flows) == [
        f"cookie={acl['cookie']:#x},priority=100,in_port=hv0/{vm1}",
        f"cookie={acl['cookie']:#x},priority=200,in_port=hv0/{vm1},tcp,tp_dst=22",
    ], flows

    # SSH-like connection attempts from VM1 fail, and the deny rule counted them.
    assert not connects(hv, 1), "vm1 connected to red1:22 through the acl's deny rule"
    packets, nbytes = counted(lab, DENY)
    assert packets >= 1 and nbytes >= 54 * packets, (packets, nbytes)
    drops = lab.counters("h1")["drops"]["flow_drop"]
    assert drops >= packets, drops

    # The rest passes, through the allow rule: ping and bulk TCP (iperf3).
    allowed_before, _ = counted(lab, ALLOW)
    assert hv.ping(1, RED1_IP, count=3).returncode == 0
    lab.exec("red1", "iperf3", "-s", "-1", "-D", "-p", "5301", "--logfile", "/dev/null")
    # -D returns before the server listens.
    wait_for(lambda: ":5301" in lab.exec("red1", "ss", "-ltn", check=False).stdout,
             what="iperf3 listening on red1")
    out = run(*in_ns(hv.vms[1], "iperf3", "-c", RED1_IP, "-p", "5301", "-t", "2", "-J",
                     "--connect-timeout", "3000"), timeout=30)
    bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
    assert bps > 1e6, f"iperf3 from vm1 past its acl moved only {bps} bit/s"
    allowed_after, _ = counted(lab, ALLOW)
    assert allowed_after - allowed_before >= 100, (allowed_before, allowed_after)
    assert counted(lab, DENY)[0] == packets, "ping and iperf3 met the deny rule"

    # VM2, same shared port, no acl: connects to 22.
    assert connects(hv, 2), "vm2 (no acl) could not connect to red1:22"

    # The profile's rules are its own: not deleted with the profile while attached, nor by
    # `nvo flow del`.
    assert "detach it first" in refused(lab, "acl", "del", "no-ssh")
    assert "detach the acl" in refused(lab, "flow", "del", "all")
    assert len(lab.nvo("h1", "flow", "show")["flows"]) == 2

    # Detached: the rules leave the table and VM1 connects again.
    lab.nvo("h1", "acl", "detach", "hv0", vm1)
    assert lab.nvo("h1", "flow", "show")["flows"] == []
    assert connects(hv, 1), "vm1 could not connect to red1:22 after the acl was detached"
    lab.nvo("h1", "acl", "del", "no-ssh")
    assert lab.nvo("h1", "acl", "show") == []


def test_an_acl_on_a_container_port_takes_it_from_the_kernel_path(acl_lab, tmp_path):
    """An ACL (read from a file) dropping ICMP on red1's own port (a veth the eBPF path runs
    until a flow rule covers it): red1's pings fail and are counted — by nvod's flow table,
    which only sees the port's frames once the port is handed to nvod — while TCP still
    passes; detached, pings pass again."""
    lab, hv = acl_lab
    (red1_port,) = [p["name"] for p in lab.nvo("h2", "port", "list")]
    rules = tmp_path / "no-ping.acl"
    rules.write_text(f"# no pings from red1\npriority=200,icmp,actions=drop  # counted\n\n{ALLOW}\n")
    added = lab.nvo("h2", "acl", "add", "no-ping", "--file", rules)
    assert [r["rule"] for r in added["rules"]] == ["priority=200,icmp,actions=drop", ALLOW], added
    lab.nvo("h2", "acl", "attach", red1_port, "no-ping")
    if lab.nvo("h2", "node")["datapath"] == "ebpf":
        log = RUN / lab.name / "h2.log"
        wait_for(lambda: f"port {red1_port}: flow rules cover it" in log.read_text(errors="replace"),
                 timeout=10, what=f"h2's nvod to take {red1_port} from the kernel path")
    assert lab.ping("red1", VMS[1][1], count=3, check=False).returncode != 0
    (acl,) = lab.nvo("h2", "acl", "show")
    assert acl["attached"] == [red1_port], acl
    deny, allow = acl["rules"]
    assert deny["n_packets"] >= 3, acl
    assert connects(hv, 1), "TCP from vm1 to red1 (its answers pass the allow rule) failed"
    (acl,) = lab.nvo("h2", "acl", "show")
    assert acl["rules"][1]["n_packets"] > allow["n_packets"], acl
    text = run(NVO, "--socket", lab.socket("h2"), "acl", "show").stdout
    (row,) = [ln for ln in text.splitlines() if ln.startswith("no-ping")]
    assert red1_port in row and "icmp,actions=drop" in row, text
    lab.nvo("h2", "acl", "detach", red1_port)
    reachable(lambda c: lab.ping("red1", VMS[1][1], count=c, check=False),
              "red1 → vm1 after the acl was detached")
