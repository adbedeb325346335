"""The VLAN gateway (AC-VP) with a real legacy switch: Open vSwitch's userspace bridge holds two
hosts on access ports of VLANs 10 and 20 and a trunk into nvod on h1, which maps VLAN 10 to
VNI 100 and VLAN 20 to VNI 200. Containers behind h2 reach the VLAN host of their own network
only, both ways; tshark sees the tags on the trunk and none in the tunnel. Also: untagged and
unmapped frames are dropped and counted, the API refuses bad maps, and an 802.1ad trunk maps
the S-tag and carries a customer's 802.1Q tag through the tunnel.

    v10 10.0.0.10      v20 10.0.0.20          red1 10.0.0.1 (VNI 100)   blue1 10.0.0.2 (VNI 200)
      | eth0             | eth0                 |                          |
      | a10 (tag=10)     | a20 (tag=20)      +--+--------------------------+--+
    [ sw: OVS br0 (datapath_type=netdev) ]   | h2: nvod                       |
      | tr0 (trunks=10,20)                   +---------------+----------------+
      | veth, 802.1Q tagged                                  | eth0
    trunk0                                                   |
    [ h1: nvod, port trunk0 --trunk 10=100,20=200 ]          |
      | eth0                                                 |
      +------------------ ul: bridge, 10.100.0.0/24 ---------+

The switch and the VLAN hosts are namespaces of the test's own (nvvla-<pid>-sw, -v10, -v20),
the switch's daemons run by pid (ovs_peer.OvsPeer's), and all of them are deleted at the end
whatever happens. No 802.1Q module is needed anywhere: OVS tags in userspace, nvod pushes and
pops tags itself. The datapath is the lab's (NVO_LAB_DATAPATH): on the eBPF one, nvod reads the
trunk itself and the kernel punts frames for its VLANs to nvod.
"""

import json
import os
import signal
import subprocess

import pytest

from conftest import NVO, UnixHTTP, run, wait_for
from ovs_peer import OvsPeer, in_ns, missing_tools

RED, BLUE = 100, 200
V10_IP, V20_IP = "10.0.0.10", "10.0.0.20"
V10_MAC, V20_MAC = "02:00:00:00:0a:10", "02:00:00:00:0a:20"

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}, {vni: 200}]
containers:
  - {name: red1, host: h2, vni: 100, ip: 10.0.0.1/24}
  - {name: blue1, host: h2, vni: 200, ip: 10.0.0.2/24}
"""

needs_ovs = pytest.mark.skipif(
    bool(missing_tools()),
    reason=f"Open vSwitch is not installed ({missing_tools()}; scripts/setup.sh installs openvswitch-switch)")

# A raw frame into the trunk from the switch's side: one untagged, one on VLAN 30 (unmapped).
INJECT = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("tr0", 0))
src = bytes.fromhex("020000000a99")
body = b"\x08\x06" + bytes(46)
for _ in range(int(sys.argv[1])):
    s.send(b"\xff" * 6 + src + body)
    s.send(b"\xff" * 6 + src + b"\x81\x00\x00\x1e" + body)
"""


class LegacySwitch(OvsPeer):
    """An OVS userspace bridge with a trunk into the lab's h1 and one host per access VLAN."""

    def __init__(self, workdir):
        super().__init__(workdir, underlay_ns=None, ip=None)
        pid = os.getpid() % 100000
        self.host = f"nvvla-{pid}-sw"
        self.hosts = {10: f"nvvla-{pid}-v10", 20: f"nvvla-{pid}-v20"}

    def start(self, trunk_ns, trunk_if):
        for ns in (self.host, *self.hosts.values()):
            run("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            run(*in_ns(ns, "ip", "link", "set", "lo", "up"))
            run(*in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                       "net.ipv6.conf.default.disable_ipv6=1"))
        self.start_daemons()
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
        # The trunk: tr0 here, trunk_if in h1's namespace.
        run(*in_ns(self.host, "ip", "link", "add", "tr0", "type", "veth", "peer", "name", trunk_if,
                   "netns", trunk_ns))
        run(*in_ns(trunk_ns, "sysctl", "-qw", f"net.ipv6.conf.{trunk_if}.disable_ipv6=1"))
        run(*in_ns(trunk_ns, "ip", "link", "set", trunk_if, "up"))
        run(*in_ns(self.host, "ip", "link", "set", "tr0", "up"))
        self.vsctl("add-port", "br0", "tr0", "--", "set", "interface", "tr0", "type=system",
                   "--", "set", "port", "tr0", "trunks=10,20")
        for vid, ns in self.hosts.items():
            port = f"a{vid}"
            ip, mac = (V10_IP, V10_MAC) if vid == 10 else (V20_IP, V20_MAC)
            run(*in_ns(self.host, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0",
                       "netns", ns))
            run(*in_ns(self.host, "ip", "link", "set", port, "up"))
            run(*in_ns(ns, "ip", "link", "set", "eth0", "address", mac, "mtu", "1450"))
            run(*in_ns(ns, "ip", "addr", "add", f"{ip}/24", "dev", "eth0"))
            # OVS's userspace does not complete checksums left to an offload (PEERS.md).
            run(*in_ns(ns, "ethtool", "-K", "eth0", "tx", "off"))
            run(*in_ns(ns, "ip", "link", "set", "eth0", "up"))
            self.vsctl("add-port", "br0", port, "--", "set", "interface", port, "type=system",
                       "--", "set", "port", port, f"tag={vid}")
        self.check_ports("tr0", "a10", "a20")

    def ping(self, vid, addr, count=3, check=True):
        return run(*in_ns(self.hosts[vid], "ping", "-c", count, "-i", "0.2", "-W", "2", addr),
                   check=check, timeout=30)


@pytest.fixture
def gateway(lab_factory, tmp_path):
    """The lab, the switch with its trunk into h1, and trunk0 a trunk port of h1's nvod."""
    lab = lab_factory(TOPOLOGY)
    switch = LegacySwitch(tmp_path)
    try:
        switch.start(lab.ns("h1"), "trunk0")
        lab.nvo("h1", "port", "add", "trunk0", "--trunk", "10=100,20=200")
        # The lab floods only between hosts with containers of a network: h1 has none.
        for vni in (RED, BLUE):
            lab.nvo("h2", "flood", "add", str(vni), "10.100.0.1")
        yield lab, switch
    finally:
        switch.close()


def captured(lab, node, dev, pcap, bpf, traffic):
    """Runs TRAFFIC while tcpdump records DEV in NODE's namespace; returns the pcap."""
    cmd = ["tcpdump", "-i", dev, "--immediate-mode", "-U", "-n", "-Z", "root", "-w", str(pcap), bpf]
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns(node), *cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        while "listening on" not in seen:
            line = cap.stderr.readline()
            assert line, f"tcpdump did not start on {node} {dev}: {seen}"
            seen += line
        traffic()
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    return pcap


def tshark(pcap, display_filter, *fields):
    args = ["tshark", "-r", str(pcap), "-Y", display_filter, "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    return [line.split("\t") for line in run(*args).stdout.splitlines() if line.strip()]


def reachable(ping):
    """Waits until one ping gets through (the first ones may go while ARP resolves), then
    insists on a clean round."""
    wait_for(lambda: ping(1).returncode == 0, timeout=15, what="a first ping through the gateway")
    assert ping(3).returncode == 0


@needs_ovs
def test_vlan_hosts_reach_their_own_network_only(gateway, tmp_path):
    lab, switch = gateway
    wanted = os.environ.get("NVO_LAB_DATAPATH")
    if wanted:
        assert lab.nvo("h1", "node")["datapath"] == wanted
    (port,) = [p for p in lab.nvo("h1", "port", "list") if p["name"] == "trunk0"]
    assert port["vlan"]["trunk"] == {"10": RED, "20": BLUE} and port["vni"] == 0, port

    def traffic():
        reachable(lambda n: lab.ping("red1", V10_IP, count=n, check=False))
        reachable(lambda n: lab.ping("blue1", V20_IP, count=n, check=False))
        # And from the VLAN side, towards the containers.
        assert switch.ping(10, "10.0.0.1").returncode == 0
        assert switch.ping(20, "10.0.0.2").returncode == 0

    trunk_pcap = tmp_path / "trunk.pcap"
    ul_pcap = tmp_path / "ul.pcap"
    captured(lab, "h1", "trunk0", trunk_pcap, "",
             lambda: captured(lab, "h1", "eth0", ul_pcap, "udp port 4789", traffic))

    # Isolation: each container's ARP for the other VLAN's host goes nowhere (the other VNI's
    # host sits in the same subnet, so a leak would answer).
    assert lab.ping("red1", V20_IP, count=2, check=False).returncode != 0
    assert lab.ping("blue1", V10_IP, count=2, check=False).returncode != 0
    assert switch.ping(10, "10.0.0.2", count=2, check=False).returncode != 0
    assert switch.ping(20, "10.0.0.1", count=2, check=False).returncode != 0
    assert lab.neigh_mac("red1", V10_IP) == V10_MAC
    assert lab.neigh_mac("blue1", V20_IP) == V20_MAC

    # The trunk carries 802.1Q tags: VLAN 10 for v10's and red1's frames, 20 for the others.
    rows = tshark(trunk_pcap, "icmp", "vlan.etype", "vlan.id", "eth.src", "eth.dst")
    assert rows, "no ICMP on the trunk"
    by_vlan = {}
    for etype, vid, src, dst in rows:
        by_vlan.setdefault(vid, set()).update({src, dst})
    assert set(by_vlan) == {"10", "20"}, by_vlan
    assert V10_MAC in by_vlan["10"] and lab.mac("red1") in by_vlan["10"], by_vlan
    assert V20_MAC in by_vlan["20"] and lab.mac("blue1") in by_vlan["20"], by_vlan
    assert V10_MAC not in by_vlan["20"] and V20_MAC not in by_vlan["10"], by_vlan

    # The tunnel carries no tag: each VLAN host's frames in its own VNI, untagged inside.
    rows = tshark(ul_pcap, "vxlan && icmp", "vxlan.vni", "vlan.id", "eth.src")
    assert rows, "no ICMP in VXLAN on h1's underlay"
    assert all(vid == "" for _, vid, _ in rows), [r for r in rows if r[1]]
    vnis = {int(vni) for vni, _, _ in rows}
    assert vnis == {RED, BLUE}, vnis
    # eth.src: the first occurrence is the outer header; the inner MAC is the last one.
    inner = tshark(ul_pcap, "vxlan && icmp", "vxlan.vni", "eth.src")
    inner_src = {(int(r[0]), r[1].split(",")[-1]) for r in inner}
    assert (RED, V10_MAC) in inner_src and (BLUE, V20_MAC) in inner_src, inner_src
    assert (RED, V20_MAC) not in inner_src and (BLUE, V10_MAC) not in inner_src, inner_src

    # The VLAN hosts' MACs are learned per network behind the trunk's circuits.
    red_fdb = {e["mac"]: e.get("port") for e in lab.fdb("h1", RED)}
    blue_fdb = {e["mac"]: e.get("port") for e in lab.fdb("h1", BLUE)}
    assert red_fdb.get(V10_MAC) == "trunk0.10" and V20_MAC not in red_fdb, red_fdb
    assert blue_fdb.get(V20_MAC) == "trunk0.20" and V10_MAC not in blue_fdb, blue_fdb


@needs_ovs
def test_untagged_and_unmapped_frames_are_dropped_and_counted(gateway):
    lab, switch = gateway
    before = lab.counters("h1")["drops"]
    run(*in_ns(switch.host, "/usr/bin/python3", "-c", INJECT, "20"))
    after = wait_for(lambda: (lambda d: d if d["vlan_untagged"] >= before["vlan_untagged"] + 20
                              and d["unknown_vlan"] >= before["unknown_vlan"] + 20 else None)(
        lab.counters("h1")["drops"]), timeout=10, what="vlan drops on h1")
    assert after["unknown_vlan"] - before["unknown_vlan"] == 20, (before, after)
    # The injected source MAC was learned nowhere.
    for vni in (RED, BLUE):
        assert "02:00:00:00:0a:99" not in {e["mac"] for e in lab.fdb("h1", vni)}
    ports = lab.counters("h1")["ports"]
    assert ports["trunk0"]["drops"] >= 40, ports["trunk0"]
    # nvod is alive and still forwards.
    reachable(lambda n: lab.ping("red1", V10_IP, count=n, check=False))


@needs_ovs
def test_an_acl_on_a_trunk_vlan_filters_that_vlan_only(gateway, tmp_path):
    """A circuit (AC-VP) takes ACL and QoS profiles as a virtual port does: an ACL dropping
    ICMP on trunk0's VLAN 10 stops v10's pings (counted by its rule) and not v20's; detached,
    v10's pass again. A QoS profile marking DSCP 46 on VLAN 20 marks v20's packets in the
    tunnel (inner DSCP and outer TOS), not v10's."""
    lab, switch = gateway
    deny, allow = "priority=200,icmp,actions=drop", "priority=100,actions=normal"
    lab.nvo("h1", "acl", "add", "no-ping", deny, allow)
    lab.nvo("h1", "acl", "attach", "trunk0", "10", "no-ping")
    (acl,) = lab.nvo("h1", "acl", "show")
    assert acl["attached"] == ["trunk0.10"], acl
    flows = lab.nvo("h1", "flow", "show", "trunk0.10")["flows"]
    assert len(flows) == 2 and all("in_port=trunk0.10" in f["flow"] for f in flows), flows
    assert switch.ping(10, "10.0.0.1", count=2, check=False).returncode != 0
    reachable(lambda n: switch.ping(20, "10.0.0.2", count=n, check=False))
    (acl,) = lab.nvo("h1", "acl", "show")
    (denied,) = [r for r in acl["rules"] if r["rule"] == deny]
    assert denied["n_packets"] >= 2, acl

    # Detached: its rules leave, VLAN 10 pings again; the profile can then go.
    lab.nvo("h1", "acl", "detach", "trunk0", "10")
    assert lab.nvo("h1", "flow", "show", "trunk0.10")["flows"] == []
    reachable(lambda n: switch.ping(10, "10.0.0.1", count=n, check=False))
    lab.nvo("h1", "acl", "del", "no-ping")

    # QoS on a circuit: mark EF (46) on VLAN 20's frames.
    lab.nvo("h1", "qos", "add", "ef", "--rate", "1gbit", "--burst", "1m", "--dscp", "46")
    lab.nvo("h1", "qos", "attach", "trunk0", "20", "ef")
    (q,) = lab.nvo("h1", "qos", "show")
    assert "trunk0.20" in q["attached"], q
    pcap = tmp_path / "ul.pcap"

    def traffic():
        reachable(lambda n: switch.ping(20, "10.0.0.2", count=n, check=False))
        reachable(lambda n: switch.ping(10, "10.0.0.1", count=n, check=False))

    captured(lab, "h1", "eth0", pcap, "udp port 4789 and src host 10.100.0.1", traffic)
    rows = tshark(pcap, "vxlan && icmp.type == 8", "vxlan.vni", "ip.dsfield.dscp")
    by_vni = {}
    for vni, dscp in rows:
        by_vni.setdefault(int(vni), set()).add(dscp)
    # ip.dsfield.dscp lists the outer header's, then the inner one's.
    assert by_vni.get(BLUE) == {"46,46"}, by_vni
    assert by_vni.get(RED) == {"0,0"}, by_vni
    lab.nvo("h1", "qos", "detach", "trunk0", "20")
    # A VLAN the trunk does not map, and a port that is not a trunk, are refused clearly.
    p = run(NVO, "--socket", lab.socket("h1"), "qos", "attach", "trunk0", "30", "ef", check=False)
    assert p.returncode != 0 and "does not map vlan 30" in p.stderr, p.stderr


def test_port_api_refuses_bad_vlan_maps_with_clear_errors(lab_factory):
    lab = lab_factory(TOPOLOGY)
    cases = [
        ({"name": "x1", "vlan": {"trunk": {"0": 100}}}, "vlan id 0"),
        ({"name": "x1", "vlan": {"trunk": {"4095": 100}}}, "vlan id 4095"),
        ('{"name": "x1", "vlan": {"trunk": {"10": 100, "10": 200}}}', "vlan 10 is mapped twice"),
        ({"name": "x1", "vlan": {"trunk": {"10": 100, "20": 100}}}, "network 100 is mapped to vlans 10 and 20"),
        ({"name": "x1", "vlan": {"trunk": {"10": 300}}}, "no network with vni 300"),
        ({"name": "x1", "vni": 100, "vlan": {"trunk": {"10": 100}}}, "leave vni out"),
        ({"name": "x1", "vni": 100, "vlan": {"access": 10, "ethertype": "0x9100"}}, "0x9100"),
        ({"name": "x1", "vni": 100, "vlan": {}}, "vlan needs access"),
        ({"name": "x1", "vlan": {"trunk": {str(v): 100 + v for v in range(1, 258)}}}, "1 to 256 vlans"),
    ]
    for body, words in cases:
        answer = api_text(lab, body if isinstance(body, str) else json.dumps(body))
        assert answer[0] in (400, 404, 422) and words in answer[1], (body, answer)
    # Nothing of a refused port stayed; nvod still takes a good one.
    assert [p for p in lab.nvo("h1", "port", "list") if p["name"] == "x1"] == []


def api_text(lab, body):
    """POST /v1/ports with a raw BODY (duplicate JSON keys kept): (status, text)."""
    conn = UnixHTTP(lab.socket("h1"))
    conn.request("POST", "/v1/ports", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    return resp.status, text


# An 802.1ad host on a QinQ trunk: sends an S-tagged ARP request for red1 (S-VID 10, no
# customer tag) and waits for the answer, which must come back S-tagged VID 10 (the kernel
# moves the received tag into PACKET_AUXDATA); then an S+C-tagged broadcast (customer VID 777).
QINQ_HOST = r"""
import socket, struct, sys, time
SOL_PACKET, PACKET_AUXDATA = 263, 8
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))
s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
s.settimeout(0.2)
mac = bytes.fromhex("020000000a0a")
def arp(tpa):
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, socket.inet_aton("10.0.0.30"),
                       bytes(6), socket.inet_aton(tpa)) + bytes(18)
s_tag = b"\x88\xa8\x00\x0a"
deadline = time.time() + 10
while time.time() < deadline:
    s.send(b"\xff" * 6 + mac + s_tag + b"\x08\x06" + arp("10.0.0.1"))
    end = time.time() + 0.5
    while time.time() < end:
        try:
            data, anc, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        if data[:6] != mac or data[12:14] != b"\x08\x06":
            continue
        for level, kind, aux in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA:
                status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", aux[:20])
                print("reply", hex(tpid), tci & 0xfff, socket.inet_ntoa(data[28:32]))
                s.send(b"\xff" * 6 + mac + s_tag + b"\x81\x00\x03\x09" + b"\x08\x06" + arp("10.0.0.99"))
                sys.exit(0)
print("no reply")
sys.exit(1)
"""


def test_an_8021ad_trunk_maps_the_s_tag_and_carries_the_customer_tag(lab_factory, tmp_path):
    """qq (nvvla-<pid>-qq) eth0 ─veth─ qq0 [h1: --trunk 10=100 --ethertype 0x88a8] ─ul─ h2 ─ red1."""
    lab = lab_factory(TOPOLOGY)
    ns = f"nvvla-{os.getpid() % 100000}-qq"
    run("ip", "netns", "add", ns)
    try:
        run(*in_ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"))
        run(*in_ns(ns, "ip", "link", "add", "eth0", "type", "veth", "peer", "name", "qq0", "netns", lab.ns("h1")))
        run(*in_ns(lab.ns("h1"), "sysctl", "-qw", "net.ipv6.conf.qq0.disable_ipv6=1"))
        run(*in_ns(lab.ns("h1"), "ip", "link", "set", "qq0", "up"))
        run(*in_ns(ns, "ip", "link", "set", "eth0", "up"))
        lab.nvo("h1", "port", "add", "qq0", "--trunk", "10=100", "--ethertype", "0x88a8")
        lab.nvo("h2", "flood", "add", str(RED), "10.100.0.1")
        pcap = tmp_path / "red1.pcap"
        out = {}

        def traffic():
            out["p"] = run(*in_ns(ns, "/usr/bin/python3", "-c", QINQ_HOST), check=False, timeout=30)
            # The customer-tagged broadcast has to cross before the capture stops.
            wait_for(lambda: lab.counters("h2")["networks"][str(RED)]["delivered"] >= 2, timeout=5,
                     what="the customer-tagged frame at red1's host")

        captured(lab, "red1", "eth0", pcap, "arp or vlan", traffic)
        p = out["p"]
        assert p.returncode == 0 and "reply 0x88a8 10 10.0.0.1" in p.stdout, (p.stdout, p.stderr)
        # At red1: the ARP without a tag (the S-tag popped), the customer's frame with its own
        # 802.1Q tag and nothing of 802.1ad.
        rows = tshark(pcap, "eth.src == 02:00:00:00:0a:0a", "eth.type", "vlan.id")
        assert ["0x0806", ""] in rows and ["0x8100", "777"] in rows, rows
        assert all(r[0] != "0x88a8" for r in rows), rows
    finally:
        for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
            os.kill(int(pid), 9)
        run("ip", "netns", "delete", ns, check=False)
