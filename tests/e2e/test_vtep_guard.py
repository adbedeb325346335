"""Issue 15, items 0 and 4: a network takes tunnel packets only from remotes it knows, a MAC on
a local port is not moved by a tunnel, and one port flooding random source MACs cannot take a
network's table, here or on another host. Run on both datapaths (NVO_LAB_DATAPATH=ebpf and
userspace).

      red1                red2                   (blue3: h3's only tenant, another network)
        |                   |                      |
   [ h1: nvod ]       [ h2: nvod | k1: kernel ]  [ h3: nvod ]  <- scapy here: VXLAN to h1
         \\ eth0            / eth0                 / eth0        carrying red2's MAC
          +------------ ul: bridge 10.100.0.0/24 -+
"""

import subprocess
import time

import pytest

from conftest import run, wait_for

MEMBER = {
    "nvod": "{name: h2}",
    "kernel": "{name: h2, kind: kernel, learning: true}",
}

TOPOLOGY = """
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts: [{{name: h1}}, {member}, {{name: h3}}]
networks: [{{vni: 100}}, {{vni: 200}}]
containers:
  - {{name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}}
  - {{name: blue3, host: h3, vni: 200, ip: 10.0.0.3/24}}
"""

# Frames as red2 would send them, to red1 and to everyone, from an underlay host that is no
# member of network 100; each carries UDP port 7777 so red1 can tell them apart.
INJECT = r"""
import sys
from scapy.all import IP, UDP, Ether, send
from scapy.layers.vxlan import VXLAN
dst, mac, red1 = sys.argv[1], sys.argv[2], sys.argv[3]
pkts = []
for i in range(100):
    inner = Ether(src=mac, dst=red1 if i % 2 else "ff:ff:ff:ff:ff:ff") / IP(src="10.0.0.2", dst="10.0.0.1") / UDP(sport=7777, dport=7777)
    pkts.append(IP(dst=dst) / UDP(sport=40000 + i, dport=4789) / VXLAN(vni=100) / inner)
send(pkts, verbose=0, inter=0.01)
"""


def locator(lab, host):
    return lab.nvo(host, "node")["locator"]


def remote_of(lab, host, mac, vni=100):
    for e in lab.fdb(host, vni):
        if e["mac"] == mac:
            return e.get("remote") or e.get("port")
    return None


def packets_in(pcap):
    out = run("tcpdump", "-n", "-r", str(pcap), check=False).stdout
    return len([l for l in out.splitlines() if l.strip()])


@pytest.mark.parametrize("member", ["nvod", "kernel"])
def test_an_unknown_underlay_host_cannot_steal_a_mac(lab_factory, tmp_path, member):
    lab = lab_factory(TOPOLOGY.format(member=MEMBER[member]))
    red2_mac = lab.mac("red2")
    h2 = "10.100.0.2"  # the second host's underlay address (nvo lab's plan)
    lab.ping("red1", "10.0.0.2")
    assert remote_of(lab, "h1", red2_mac) == h2
    assert lab.nvo("h1", "network", "show", "100")["accept_remotes"] == "known"
    before = lab.counters("h1")["drops"]["unknown_remote"]

    pcap = tmp_path / "red1.pcap"
    cap = lab.capture("red1", pcap, "udp port 7777")
    ping = subprocess.Popen(["ip", "netns", "exec", lab.ns("red1"), "ping", "-c", "20", "-i", "0.2", "-W", "2", "10.0.0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lab.exec("h3", "/usr/bin/python3", "-c", INJECT, locator(lab, "h1"), red2_mac, lab.mac("red1"), timeout=120)
        out, _ = ping.communicate(timeout=30)
    finally:
        if ping.poll() is None:
            ping.kill()
        time.sleep(0.5)
        cap.terminate()
        cap.wait(timeout=10)

    # Counted, nothing delivered, nothing learned: red2's MAC still lives behind h2.
    drops = wait_for(lambda: (lambda n: n if n >= before + 100 else None)(lab.counters("h1")["drops"]["unknown_remote"]),
                     what="unknown_remote on h1")
    assert drops >= before + 100
    assert packets_in(pcap) == 0, "an injected frame reached red1"
    assert remote_of(lab, "h1", red2_mac) == h2
    assert not any(e.get("remote") == locator(lab, "h3") for e in lab.fdb("h1", 100))
    # The real owner was never disturbed: every echo of the ping that ran meanwhile came back.
    assert ping.returncode == 0 and " 0% packet loss" in out, out
    lab.ping("red2", "10.0.0.1")


def test_a_random_source_mac_flood_from_one_port_leaves_room_on_every_host(lab_factory):
    lab = lab_factory("""
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, max_learned: 40}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red3, host: h1, vni: 100, ip: 10.0.0.3/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
""")
    net = lab.nvo("h1", "network", "show", "100")
    assert (net["max_learned_per_port"], net["max_learned_per_remote"]) == (10, 20)
    for c in ("red1", "red2", "red3"):
        lab.exec(c, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
    lab.ping("red1", "10.0.0.2", count=1)
    # 300 frames from 300 source MACs out of red1: far more than the network's 40.
    flood = (
        "from scapy.all import Ether, IP, UDP, sendp\n"
        "sendp([Ether(src='02:aa:00:00:%02x:%02x' % (i // 256, i % 256), dst='ff:ff:ff:ff:ff:ff')"
        "/IP(src='10.0.0.1', dst='10.0.0.255')/UDP() for i in range(300)], iface='eth0', verbose=0)\n"
    )
    lab.exec("red1", "/usr/bin/python3", "-c", flood, timeout=60)
    wait_for(lambda: lab.counters("h1")["drops"]["port_learn_limit"] >= 250, what="port_learn_limit on h1")
    c = lab.counters("h1")
    assert c["networks"]["100"]["learn_limit_port"] >= 250

    # A host that never spoke before is learned at once, on its own host and on the other.
    red3_mac = lab.mac("red3")
    lab.ping("red3", "10.0.0.2", count=1)
    assert remote_of(lab, "h1", red3_mac) is not None, "red3 not learned on h1"
    assert remote_of(lab, "h2", red3_mac) == locator(lab, "h1"), "red3 not learned on h2"
    flooded = [e for e in lab.fdb("h1", 100) if e["mac"].startswith("02:aa:")]
    assert len(flooded) <= 10, len(flooded)
    on_h2 = [e for e in lab.fdb("h2", 100) if e["mac"].startswith("02:aa:")]
    assert len(on_h2) <= 10, len(on_h2)
    lab.ping("red3", "10.0.0.2", count=3)
