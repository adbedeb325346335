"""The flow table (issue 17 items 3 and 5): rules added with `nvo flow add` and with
`ovs-ofctl -O OpenFlow13` against h1's nvod (openflow_listen), traffic following them on the
lab's datapath (NVO_LAB_DATAPATH: on the eBPF one, a port a rule covers is handed to nvod),
`del-flows` restoring it, and malformed OpenFlow answered with errors or a close while nvod
and its flows stay.

    c1 10.91.0.1                 c2 10.91.0.2     containers, VNI 100
      | eth0                       | eth0
    [ h1: nvod, OpenFlow on      [ h2: nvod ]
      127.0.0.1:6653 ]
      | eth0                       | eth0
      +------ ul: bridge, 10.100.0.0/24 ------+

Every rule acts where c1's frames enter: h1, port of c1. ovs-ofctl runs inside h1's namespace
(the listener is on that namespace's loopback).
"""

import json
import os
import shutil
import socket
import struct
import time

import pytest

from conftest import NVO, RUN, run, wait_for
from tcp_probe import CONNECT, SERVE

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1, nvod: {openflow_listen: "127.0.0.1:6653"}}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.91.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.91.0.2/24}
"""

OF = "tcp:127.0.0.1:6653"

needs_ovs = pytest.mark.skipif(shutil.which("ovs-ofctl") is None,
                               reason="ovs-ofctl is not installed (openvswitch-common)")

def connects(lab, port, timeout=2):
    out = lab.exec("c1", "/usr/bin/python3", "-c", CONNECT, "10.91.0.2", str(port), str(timeout),
                   timeout=30).stdout
    return out.startswith("ok")


def serve(lab, port, seconds=120):
    import subprocess
    return subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "/usr/bin/python3", "-c", SERVE,
                             str(port), str(seconds)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def c1_port(lab):
    ports = lab.nvo("h1", "port", "list")
    names = [p["name"] for p in ports]
    assert len(names) == 1, ports
    return names[0]


def ofctl(lab, *args, check=True):
    return lab.exec("h1", "ovs-ofctl", "-O", "OpenFlow13", *args, check=check, timeout=30)


def n_packets(flows, needle):
    hits = [f for f in flows["flows"] if needle in f["flow"]]
    assert len(hits) == 1, (needle, flows)
    return hits[0]["n_packets"]


@pytest.fixture
def flow_lab(lab_factory):
    lab = lab_factory(TOPOLOGY)
    want = os.environ.get("NVO_LAB_DATAPATH")
    if want in ("ebpf", "userspace"):
        assert lab.nvo("h1", "node")["datapath"] == want
    servers = [serve(lab, 22), serve(lab, 5201)]
    try:
        lab.ping("c1", "10.91.0.2")
        wait_for(lambda: connects(lab, 22) and connects(lab, 5201), timeout=20,
                 what="TCP servers on c2")
        yield lab
    finally:
        for s in servers:
            s.kill()
            s.wait()


def test_nvo_flow_drops_tcp_22_only_and_counts_it(flow_lab):
    lab = flow_lab
    port = c1_port(lab)
    lab.nvo("h1", "flow", "add", port, "priority=100,tcp,tp_dst=22,actions=drop")
    shown = lab.nvo("h1", "flow", "show", port)
    assert shown["rules"] == 1 and "tp_dst=22" in shown["flows"][0]["flow"], shown
    assert f"in_port={port}" in shown["flows"][0]["flow"], shown
    assert not connects(lab, 22), "a TCP connection to port 22 passed a drop rule"
    after = lab.nvo("h1", "flow", "show")
    assert n_packets(after, "tp_dst=22") >= 1, after
    drops = lab.counters("h1")["drops"]["flow_drop"]
    assert drops >= 1
    # nvo trace names the rule without sending anything.
    trace = lab.nvo("h1", "trace", port, "tcp,nw_dst=10.91.0.2,tp_dst=22")
    assert trace["result"] == "drop" and "tp_dst=22" in trace["rule"]["flow"], trace
    trace = lab.nvo("h1", "trace", port, f"dl_dst={lab.mac('c2')},tcp,nw_dst=10.91.0.2,tp_dst=5201")
    assert "rule" not in trace and "remote 10.100.0." in trace["result"], trace
    # Everything else passes: ping, another TCP port, and bulk TCP (iperf3).
    lab.ping("c1", "10.91.0.2")
    assert connects(lab, 5201)
    lab.exec("c2", "iperf3", "-s", "-1", "-D", "-p", "5301", "--logfile", "/dev/null")
    out = lab.exec("c1", "iperf3", "-c", "10.91.0.2", "-p", "5301", "-t", "2", "-J",
                   "--connect-timeout", "3000", timeout=30)
    bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
    assert bps > 1e6, f"iperf3 past a tcp/22 drop rule moved only {bps} bit/s"
    text = run(NVO, "--socket", lab.socket("h1"), "flow", "show").stdout
    assert "n_packets=" in text and "priority=100" in text and "actions=drop" in text, text
    # Bad input: clear 400s, nothing changed.
    for bad, want in [("priority=100,tcp,tp_dst=22", "actions="),
                      ("tcp,tp_dst=99999,actions=drop", "tp_dst"),
                      ("tcp,actions=meter:1", "no meter 1"),
                      ("tcp,actions=set_tunnel:100,output:tunnel", "tun_dst before it")]:
        p = lab.nvo("h1", "flow", "add", port, bad, check=False)
        assert p.returncode == 1 and want in p.stderr, (bad, p.stderr)
    p = lab.nvo("h1", "flow", "add", "nosuchport", "tcp,actions=drop", check=False)
    assert p.returncode == 1 and "no port named" in p.stderr, p.stderr
    assert lab.nvo("h1", "flow", "show")["rules"] == 1
    # Deleting the rule restores the traffic.
    gone = lab.nvo("h1", "flow", "del", port, "tcp,tp_dst=22")
    assert gone["deleted"] == 1, gone
    assert connects(lab, 22)
    assert lab.nvo("h1", "flow", "show")["rules"] == 0
    if lab.nvo("h1", "node")["datapath"] == "ebpf":
        # The kernel path handed the port to nvod while the rule covered it, and took it back.
        log = (RUN / lab.name / "h1.log").read_text()
        assert f"port {port}: flow rules cover it: nvod reads it" in log, log[-2000:]
        assert f"port {port}: no flow rule covers it any more" in log, log[-2000:]


@needs_ovs
def test_ovs_ofctl_adds_dumps_and_deletes_flows_traffic_follows(flow_lab):
    lab = flow_lab
    ofctl(lab, "add-flow", OF, "priority=200,tcp,nw_dst=10.91.0.2,tp_dst=5201,actions=drop")
    assert not connects(lab, 5201), "TCP to 5201 passed the controller's drop rule"
    assert connects(lab, 22)
    lab.ping("c1", "10.91.0.2")
    dump = ofctl(lab, "dump-flows", OF).stdout
    line = [l for l in dump.splitlines() if "tp_dst=5201" in l]
    assert len(line) == 1 and "actions=drop" in line[0], dump
    n = int(line[0].split("n_packets=")[1].split(",")[0])
    assert n >= 1, dump
    # The API sees the controller's rule too.
    assert n_packets(lab.nvo("h1", "flow", "show"), "tp_dst=5201") == n
    # OpenFlow port numbers are nvod's port ids: PORT_DESC names c1's port under its id.
    port = c1_port(lab)
    port_id = lab.nvo("h1", "trace", port, "ip")["port_id"]
    show = ofctl(lab, "show", OF).stdout
    line = [l for l in show.splitlines() if f" {port_id}({port}):" in l]
    assert line, show
    # PORT_DESC carries the port's own MAC, as h1's kernel has it.
    mac = lab.exec("h1", "cat", f"/sys/class/net/{port}/address").stdout.strip()
    assert f"addr:{mac}" in line[0], show
    state = show.split(line[0], 1)[1].split("state:", 1)[1].splitlines()[0]
    assert "LINK_DOWN" not in state, show
    ofctl(lab, "del-flows", OF)
    assert ofctl(lab, "dump-flows", OF).stdout.count("actions=") == 0
    assert connects(lab, 5201), "del-flows did not restore the traffic"
    assert lab.nvo("h1", "flow", "show")["rules"] == 0


@needs_ovs
def test_malformed_openflow_is_answered_and_nvod_keeps_its_flows(flow_lab):
    lab = flow_lab
    ofctl(lab, "add-flow", OF, "priority=300,tcp,tp_dst=22,actions=drop")
    probe = r"""
import socket, struct, sys, time
def talk(payload, wait=1.0):
    s = socket.create_connection(("127.0.0.1", 6653), timeout=3)
    s.sendall(struct.pack("!BBHI", 4, 0, 8, 1))      # HELLO
    s.sendall(payload)
    s.settimeout(wait)
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    s.close()
    types = []
    while len(got) >= 8:
        v, t, l, x = struct.unpack("!BBHI", got[:8])
        types.append(t)
        if l < 8:
            break
        got = got[l:]
    return types
out = {}
out["unknown_type"] = talk(struct.pack("!BBHI", 4, 99, 8, 2))
out["truncated"] = talk(struct.pack("!BBHI", 4, 14, 8, 3)[:5])
out["short_length"] = talk(struct.pack("!BBHI", 4, 14, 4, 4))
out["bad_flow_mod"] = talk(struct.pack("!BBHI", 4, 14, 16, 5) + bytes(8))
out["big"] = talk(struct.pack("!BBHI", 4, 250, 65535, 6) + bytes(65535 - 8), wait=2.0)
flood = socket.create_connection(("127.0.0.1", 6653), timeout=3)
try:
    for _ in range(64):
        flood.sendall(bytes([4, 77]) + struct.pack("!H", 65535) + bytes(65531))
except OSError:
    pass
flood.close()
print(__import__("json").dumps(out))
"""
    out = json.loads(lab.exec("h1", "/usr/bin/python3", "-c", probe, timeout=60).stdout)
    ERROR = 1
    assert ERROR in out["unknown_type"], out
    assert ERROR in out["bad_flow_mod"], out
    assert ERROR in out["short_length"], out      # BAD_LEN, then the close
    assert ERROR in out["big"], out
    # nvod is alive, serves OpenFlow and the API, and the rule is intact and still acts.
    assert lab.nvo("h1", "node")["node_id"]
    dump = ofctl(lab, "dump-flows", OF).stdout
    assert "priority=300" in dump and "tp_dst=22" in dump, dump
    assert not connects(lab, 22)
    assert connects(lab, 5201)


def test_a_rewrite_rule_marks_dscp_on_the_wire(flow_lab):
    """mod_nw_tos on c1's UDP: c2 receives the datagrams with DSCP 46 (TOS 0xb8), checksums
    valid (the kernel drops a datagram whose IPv4 header checksum is wrong)."""
    lab = flow_lab
    port = c1_port(lab)
    lab.nvo("h1", "flow", "add", port, "priority=50,udp,tp_dst=7777,actions=mod_nw_tos:184,normal")
    recv = r"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
s.bind(("0.0.0.0", 7777))
s.settimeout(5)
data, anc, _, _ = s.recvmsg(64, 64)
print(data.decode(), [c[2][0] for c in anc if c[1] == socket.IP_TOS])
"""
    import subprocess
    server = subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "/usr/bin/python3", "-c", recv],
                              stdout=subprocess.PIPE, text=True)
    send = "import socket,time\nfor _ in range(20):\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hi', ('10.91.0.2', 7777)); time.sleep(0.1)"
    try:
        time.sleep(0.5)
        lab.exec("c1", "/usr/bin/python3", "-c", send, timeout=30)
        out, _ = server.communicate(timeout=10)
    finally:
        server.kill()
    assert out.strip() == "hi [184]", out
    assert n_packets(lab.nvo("h1", "flow", "show"), "tp_dst=7777") >= 1
