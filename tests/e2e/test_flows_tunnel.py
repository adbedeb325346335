"""The flow table on tunnel ingress (issue 17): rules on the receiving host's port `tunnel`
(in_port=tunnel, tun_id = the VNI a frame arrives with) act on frames decapsulated from the
underlay, added with `nvo flow add tunnel …` and with `ovs-ofctl -O OpenFlow13` (in_port=65279),
named by `nvo trace underlay`, on the lab's datapath (NVO_LAB_DATAPATH: on the eBPF one a
network a tunnel rule covers is handed to nvod, and one no rule covers stays in the kernel).

    c1 10.91.0.1  c3 10.92.0.1        c2 10.91.0.2  c4 10.92.0.2
     VNI 100       VNI 200             VNI 100       VNI 200
      |  eth0       |  eth0             |  eth0       |  eth0
    [ h1: nvod               ]        [ h2: nvod, OpenFlow on 127.0.0.1:6653,
                                            the tunnel rules ]
      | eth0                              | eth0
      +----------- ul: bridge, 10.100.0.0/24 ------------+

Traffic goes c1 -> c2 and c3 -> c4: the rules act where it leaves the tunnel, on h2.
"""

import os
import shutil
import signal
import subprocess

import pytest

from bgp_peers import nvod_pid
from conftest import RUN, wait_for
from tcp_probe import CONNECT, SERVE

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2, nvod: {openflow_listen: "127.0.0.1:6653"}}]
networks: [{vni: 100}, {vni: 200}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.91.0.1/24}
  - {name: c3, host: h1, vni: 200, ip: 10.92.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.91.0.2/24}
  - {name: c4, host: h2, vni: 200, ip: 10.92.0.2/24}
"""

OF = "tcp:127.0.0.1:6653"
RULE = "priority=200,tun_id=100,tcp,tp_dst=5201,actions=drop"

needs_ovs = pytest.mark.skipif(shutil.which("ovs-ofctl") is None,
                               reason="ovs-ofctl is not installed (openvswitch-common)")


def connects(lab, src, dst, port, timeout=2):
    out = lab.exec(src, "/usr/bin/python3", "-c", CONNECT, dst, str(port), str(timeout),
                   timeout=30).stdout
    return out.startswith("ok")


def ofctl(lab, *args, check=True):
    return lab.exec("h2", "ovs-ofctl", "-O", "OpenFlow13", *args, check=check, timeout=30)


def rule_packets(lab):
    flows = [f for f in lab.nvo("h2", "flow", "show")["flows"] if "tp_dst=5201" in f["flow"]]
    assert len(flows) == 1, flows
    return flows[0]["n_packets"]


def kernel(lab):
    return lab.nvo("h2", "node")["datapath"] == "ebpf"


def log(lab):
    return (RUN / lab.name / "h2.log").read_text()


@pytest.fixture
def tunnel_lab(lab_factory):
    lab = lab_factory(TOPOLOGY)
    want = os.environ.get("NVO_LAB_DATAPATH")
    if want in ("ebpf", "userspace"):
        assert lab.nvo("h2", "node")["datapath"] == want
    servers = [subprocess.Popen(["ip", "netns", "exec", lab.ns(c), "/usr/bin/python3", "-c",
                                 SERVE, str(port), "180"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for c, port in (("c2", 5201), ("c2", 22), ("c4", 5201))]
    try:
        lab.ping("c1", "10.91.0.2")
        lab.ping("c3", "10.92.0.2")
        wait_for(lambda: connects(lab, "c1", "10.91.0.2", 5201)
                 and connects(lab, "c3", "10.92.0.2", 5201), timeout=20, what="TCP servers")
        yield lab
    finally:
        for s in servers:
            s.kill()
            s.wait()


def assert_only_vni_100_tcp_5201_dropped(lab):
    assert not connects(lab, "c1", "10.91.0.2", 5201), "TCP to 5201 in VNI 100 passed the rule"
    assert rule_packets(lab) >= 1
    lab.ping("c1", "10.91.0.2")
    assert connects(lab, "c1", "10.91.0.2", 22), "another TCP port of VNI 100 was dropped"
    assert connects(lab, "c3", "10.92.0.2", 5201), "the same traffic in VNI 200 was dropped"


def test_nvo_flow_on_the_tunnel_drops_one_vni_and_traces_it(tunnel_lab):
    lab = tunnel_lab
    lab.nvo("h2", "flow", "add", "tunnel", RULE)
    shown = lab.nvo("h2", "flow", "show", "tunnel")
    assert "in_port=tunnel" in shown["flows"][0]["flow"], shown
    assert_only_vni_100_tcp_5201_dropped(lab)
    assert lab.counters("h2")["drops"]["flow_drop"] >= 1
    # The sender's table is empty: nothing was dropped there.
    assert lab.counters("h1")["drops"].get("flow_drop", 0) == 0

    # nvo trace underlay names the rule, sends nothing; VNI 200 is delivered to c4's port.
    before = rule_packets(lab)
    trace = lab.nvo("h2", "trace", "underlay", "tcp,nw_dst=10.91.0.2,tp_dst=5201", "--vni", "100")
    assert trace["result"] == "drop" and "tun_id=0x64" in trace["rule"]["flow"], trace
    trace = lab.nvo("h2", "trace", "underlay", f"dl_dst={lab.mac('c4')},tcp,tp_dst=5201",
                    "--vni", "200")
    assert "rule" not in trace and trace["result"].startswith("normal: network 200"), trace
    assert "to port" in trace["result"], trace
    assert rule_packets(lab) == before, "a trace counted a packet"
    p = lab.nvo("h2", "trace", "underlay", "tcp", "--vni", "999", check=False)
    assert p.returncode == 1 and "no network with vni 999" in p.stderr, p.stderr

    if kernel(lab):
        text = log(lab)
        assert "network 100 runs on the userspace path: flow rules match its tunnel frames" in text
        assert "network 200 runs on the userspace path" not in text, text[-3000:]
        # VNI 200 still runs in the kernel: with h2's nvod stopped its traffic passes, while
        # VNI 100's (handed to nvod) does not.
        pid = nvod_pid(lab, "h2")
        os.kill(pid, signal.SIGSTOP)
        try:
            lab.ping("c3", "10.92.0.2", count=3)
            stopped = lab.ping("c1", "10.91.0.2", count=2, check=False)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert stopped.returncode != 0, "VNI 100 passed h2 with its nvod stopped"

    # Deleting the rule restores the traffic (and, on the kernel path, VNI 100 goes back).
    gone = lab.nvo("h2", "flow", "del", "tunnel")
    assert gone["deleted"] == 1, gone
    wait_for(lambda: connects(lab, "c1", "10.91.0.2", 5201), timeout=10, what="TCP 5201 back")
    if kernel(lab):
        wait_for(lambda: "network 100 runs in the kernel again" in log(lab), timeout=10,
                 what="network 100 back in the kernel")


@needs_ovs
def test_ovs_ofctl_rules_on_port_65279_act_on_tunnel_frames(tunnel_lab):
    lab = tunnel_lab
    # PORT_DESC lists the tunnel, so ovs-ofctl --names can use it.
    desc = ofctl(lab, "dump-ports-desc", OF).stdout
    assert " 65279(tunnel):" in desc, desc
    ofctl(lab, "add-flow", OF, "priority=200,in_port=65279,tun_id=0x64,tcp,tp_dst=5201,actions=drop")
    assert_only_vni_100_tcp_5201_dropped(lab)
    dump = ofctl(lab, "dump-flows", OF).stdout
    line = [l for l in dump.splitlines() if "tp_dst=5201" in l]
    assert len(line) == 1 and "actions=drop" in line[0] and "tun_id=0x64" in line[0], dump
    assert int(line[0].split("n_packets=")[1].split(",")[0]) >= 1, dump
    # The tunnel port's stats: the tunnel packets h2 received.
    stats = ofctl(lab, "dump-ports", OF, "65279").stdout
    rx = int(stats.split("rx pkts=")[1].split(",")[0])
    assert rx > 0, stats
    ofctl(lab, "del-flows", OF)
    assert connects(lab, "c1", "10.91.0.2", 5201), "del-flows did not restore the traffic"
    # By name: in_port=tunnel through ovs-ofctl --names.
    ofctl(lab, "--names", "add-flow", OF, "priority=200,in_port=tunnel,tun_id=100,tcp,tp_dst=5201,actions=drop")
    assert not connects(lab, "c1", "10.91.0.2", 5201)
    assert "in_port=tunnel" in lab.nvo("h2", "flow", "show")["flows"][0]["flow"]
    ofctl(lab, "del-flows", OF)
    assert connects(lab, "c1", "10.91.0.2", 5201)
