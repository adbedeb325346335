"""Flood-and-learn: the first packet floods, the answer is learned, later traffic is unicast;
learned entries age out; a MAC that moves to another host is relearned there.

      red1               red2              red2m (takes red2's MAC and IP when it moves)
        |                  |                 |
     [ h1: nvod ]      [ h2: nvod ]      [ h3: nvod ]        VNI 100, ageing 3 s
          \\ eth0           | eth0          / eth0
           +-------- ul: bridge 10.100.0.0/24 +
"""

import time

from conftest import wait_for

MOVING_MAC = "02:00:00:00:02:02"

TOPOLOGY = f"""
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts: [{{name: h1}}, {{name: h2}}, {{name: h3}}]
networks: [{{vni: 100, ageing_s: 3}}]
containers:
  - {{name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: red2, host: h2, vni: 100, ip: 10.0.0.2/24, mac: "{MOVING_MAC}"}}
  - {{name: red2m, host: h3, vni: 100, ip: 10.0.0.22/24}}
"""


def net_counters(lab, host, vni=100):
    return lab.counters(host)["networks"][str(vni)]


def locator(lab, host):
    return lab.nvo(host, "node")["locator"]


def remote_of(lab, host, mac, vni=100):
    for e in lab.fdb(host, vni):
        if e["mac"] == mac:
            return e.get("remote") or e.get("port")
    return None


def test_flood_learn_unicast_age_and_move(lab_factory):
    lab = lab_factory(TOPOLOGY)
    lab.exec("red2m", "ip", "link", "set", "eth0", "down")
    # No IPv6 in the tenants: its router solicitations and MLD reports are multicast and would
    # be flooded (rightly), blurring the count of flooded unicast.
    for c in ("red1", "red2", "red2m"):
        lab.exec(c, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")

    before = net_counters(lab, "h1")
    lab.ping("red1", "10.0.0.2", count=1)
    after_first = net_counters(lab, "h1")
    # The ARP request was flooded to both other hosts (head-end replication).
    assert after_first["encap_flood"] >= before["encap_flood"] + 2, (before, after_first)
    # The answer taught h1 where red2 lives.
    assert remote_of(lab, "h1", MOVING_MAC) == locator(lab, "h2")

    lab.ping("red1", "10.0.0.2", count=10)
    steady = net_counters(lab, "h1")
    assert steady["encap_flood"] == after_first["encap_flood"], "known destinations must not be flooded"
    assert steady["encap_unicast"] >= after_first["encap_unicast"] + 10

    # Ageing: with no traffic, learned entries leave after the network's ageing time (3 s).
    lab.exec("red1", "ip", "neigh", "flush", "all")
    lab.exec("red2", "ip", "neigh", "flush", "all")
    wait_for(lambda: remote_of(lab, "h1", MOVING_MAC) is None, timeout=10, what="red2's entry on h1 to age out")
    assert net_counters(lab, "h1")["aged"] >= 1

    # The MAC moves from h2 to h3.
    lab.exec("red2", "ip", "link", "set", "eth0", "down")
    lab.exec("red2m", "ip", "link", "set", "eth0", "address", MOVING_MAC)
    lab.exec("red2m", "ip", "addr", "flush", "dev", "eth0")
    lab.exec("red2m", "ip", "addr", "add", "10.0.0.2/24", "dev", "eth0")
    lab.exec("red2m", "ip", "link", "set", "eth0", "up")
    lab.ping("red1", "10.0.0.2", count=3)
    wait_for(lambda: remote_of(lab, "h1", MOVING_MAC) == locator(lab, "h3"), what="the moved MAC on h3")


def test_learned_entries_are_bounded_per_network(lab_factory):
    """A MAC flood from one tenant fills only that tenant's learning budget. (The port may take
    the whole table here, so that the flood reaches h1: test_vtep_guard.py shows the per-port
    default at work.)"""
    lab = lab_factory("""
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, max_learned: 20, max_learned_per_port: 20}, {vni: 200}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
  - {name: blue1, host: h1, vni: 200, ip: 10.0.0.1/24}
  - {name: blue2, host: h2, vni: 200, ip: 10.0.0.2/24}
""")
    lab.ping("blue1", "10.0.0.2")
    # 200 frames from 200 different source MACs, sent from red2 with scapy.
    script = (
        "from scapy.all import Ether, IP, UDP, sendp\n"
        "sendp([Ether(src='02:aa:00:00:%02x:%02x' % (i // 256, i % 256), dst='ff:ff:ff:ff:ff:ff')"
        "/IP(src='10.0.0.2', dst='10.0.0.255')/UDP() for i in range(200)], iface='eth0', verbose=0)\n"
    )
    lab.exec("red2", "/usr/bin/python3", "-c", script, timeout=60)
    wait_for(lambda: net_counters(lab, "h1")["learn_limit"] > 0, what="learn_limit on h1")
    red = lab.fdb("h1", 100)
    assert len([e for e in red if e["origin"] == "learned"]) <= 20
    # The other tenant is untouched and still works.
    lab.ping("blue1", "10.0.0.2")
    assert any(e["mac"] == lab.mac("blue2") for e in lab.fdb("h1", 200))
