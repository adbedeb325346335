"""L3 networks carrying IPv6: the gateway nvod plays answers the containers' neighbor
solicitations and routes their IPv6 packets by prefix into tunnels that carry IP.

 1. ip6ip6 (IP protocol 41) between two nvods over an IPv6 underlay (and over an IPv4 one:
    6in4), ping and iperf3 across:

      c1 (fd00:6::1)                                  c2 (fd00:6::2)
         |                                                |
   [ h1: nvod, network 600, ip6ip6 ]          [ h2: nvod, network 600, ip6ip6 ]
   route fd00:6::2/128 → fd00:100::2          route fd00:6::/64 → fd00:100::1
         \\ eth0 fd00:100::1 ---- ul: bridge ---- eth0 fd00:100::2 /

    ip6ip6 carries IPv6 only: c1's IPv4 packets are dropped (profile_mismatch).

 2. One VXLAN-GPE network, both families (Next Protocol 1 and 2), against the Linux kernel's
    `external gpe` device:

      c1 (10.0.0.1, fd00:7::1)                   10.0.0.2, fd00:7::2 on h2's lo
         |                                                |
   [ h1: nvod, network 100, l3 ]          [ h2: kernel, vxg: vxlan external gpe ]
   routes 10.0.0.2/32, fd00:7::2/128      routes 10.0.0.1/32, fd00:7::1/128
          → 10.100.0.2                            encap ip id 100 dst 10.100.0.1
         \\ eth0 ---------- ul: bridge ---------- eth0 /

 3. The same dual-stack VXLAN-GPE network between two nvods over an IPv6 underlay: both ends
    are nvod, both families cross (c1 10.8.0.1, fd00:8::1 on h1; c2 10.8.0.2, fd00:8::2 on h2).
"""

import json
import signal

import pytest

from conftest import RUN, api, wait_for
from rate_lab import assert_datapath
from test_l3 import fields, iperf3

IP6IP6_TOPOLOGY = """
underlay: {family: FAMILY, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 600, encap: ip6ip6, flood: []}]
containers:
  - {name: c1, host: h1, vni: 600, ip: 10.6.0.1/24, ipv6: "fd00:6::1/64"}
  - {name: c2, host: h2, vni: 600, ip: 10.6.0.2/24, ipv6: "fd00:6::2/64"}
"""

DUAL_TOPOLOGY = """
underlay: {family: ipv6, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 800, encap: vxlan-gpe, l3: true, flood: []}]
containers:
  - {name: c1, host: h1, vni: 800, ip: 10.8.0.1/24, ipv6: "fd00:8::1/64"}
  - {name: c2, host: h2, vni: 800, ip: 10.8.0.2/24, ipv6: "fd00:8::2/64"}
"""

GPE_TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2, kind: kernel}]
networks: [{vni: 100, encap: vxlan-gpe, l3: true, flood: []}]
containers: [{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, ipv6: "fd00:7::1/64"}]
"""


# Over an IPv4 underlay ip6ip6 is IPv6 in IPv4 (protocol 41 too: 6in4, RFC 4213).
@pytest.mark.parametrize("family", ["ipv6", "ipv4"])
def test_ip6ip6_between_two_nvods(lab_factory, tmp_path, family):
    lab = lab_factory(IP6IP6_TOPOLOGY.replace("FAMILY", family))
    loc1, loc2 = ("fd00:100::1", "fd00:100::2") if family == "ipv6" else ("10.100.0.1", "10.100.0.2")
    net = api(lab, "h1", "GET", "/v1/networks/600")
    assert net["l3"] is True and net["encap"] == "ip6ip6", net  # ip6ip6 is L3 by default
    api(lab, "h1", "POST", "/v1/networks/600/routes", {"prefix": "fd00:6::2/128", "remote": loc2})
    api(lab, "h2", "POST", "/v1/networks/600/routes", {"prefix": "fd00:6::/64", "remote": loc1})
    # Host bits set: refused with the prefix meant.
    bad = api(lab, "h2", "POST", "/v1/networks/600/routes",
              {"prefix": "fd00:6::1/64", "remote": loc1}, expect=400)
    assert "fd00:6::/64" in json.dumps(bad), bad
    routes = api(lab, "h2", "GET", "/v1/networks/600/routes")
    assert routes == [{"prefix": "fd00:6::/64", "remote": loc1}], routes
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "ip6 proto 41" if family == "ipv6" else "ip proto 41")
    try:
        wait_for(lambda: lab.ping("c1", "fd00:6::2", count=1, check=False).returncode == 0,
                 timeout=15, what="c1 → c2 over ip6ip6")
        lab.ping("c2", "fd00:6::1", count=3)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    # c1 resolved its peer to the gateway MAC (the NA nvod sent for fd00:6::2).
    assert lab.neigh_mac("c1", "fd00:6::2") == net["gateway_mac"]
    # Outer: the locators, protocol / next header 41; inner: the containers' addresses, ICMPv6.
    rows = fields(pcap, "ip.src", "ip.dst", "ip.proto", "ipv6.src", "ipv6.dst", "ipv6.nxt",
                  "icmpv6.type")
    assert rows, "no ip6ip6 packet captured"
    for r in rows:
        v6src, v6dst = r[3].split(","), r[4].split(",")
        if family == "ipv6":
            outer, proto = (v6src[0], v6dst[0]), r[5].split(",")[0]
        else:
            outer, proto = (r[0], r[1]), r[2]
        assert proto == "41" and set(outer) == {loc1, loc2}, rows
        assert {v6src[-1], v6dst[-1]} == {"fd00:6::1", "fd00:6::2"}, rows
    assert any("128" in r[6].split(",") for r in rows), rows  # echo request inside
    assert iperf3(lab, "c2", "c1", "fd00:6::2") > 1e6
    # Off c1's subnet: its default route goes via the gateway's link-local address (the lab
    # set it), h1 routes the prefix to h2, and h2, which has not heard of fd00:66::2 yet,
    # solicits it on its ports from that address: c2 answers, the next echo gets through.
    gw6 = net["gateway_ipv6"]
    assert gw6.startswith("fe80::"), net
    assert f"default via {gw6} dev eth0" in lab.exec("c1", "ip", "-6", "route", "show", "default").stdout
    lab.exec("c2", "ip", "-6", "addr", "add", "fd00:66::2/128", "dev", "eth0", "nodad")
    api(lab, "h1", "POST", "/v1/networks/600/routes", {"prefix": "fd00:66::/64", "remote": loc2})
    wait_for(lambda: lab.ping("c1", "fd00:66::2", count=1, check=False).returncode == 0,
             timeout=15, what="c1 → fd00:66::2 by its default route")
    assert lab.counters("h2")["networks"]["600"]["nd_requests"] >= 1
    counters = lab.counters("h1")
    assert counters["networks"]["600"]["nd_replies"] >= 1, counters["networks"]["600"]
    # ip6ip6 carries no IPv4: c1's IPv4 packets to the gateway are counted and dropped.
    before = counters["drops"]["profile_mismatch"]
    lab.exec("c1", "ip", "neigh", "replace", "10.6.0.2", "lladdr", net["gateway_mac"], "dev", "eth0")
    assert lab.ping("c1", "10.6.0.2", count=2, check=False).returncode != 0
    assert lab.counters("h1")["drops"]["profile_mismatch"] >= before + 2
    for reason in ("malformed_tunnel", "unknown_vni"):
        assert counters["drops"][reason] == 0, (reason, counters["drops"])


def test_vxlan_gpe_both_families_with_the_kernel(lab_factory, tmp_path):
    lab = lab_factory(GPE_TOPOLOGY)
    assert_datapath(lab)
    net = api(lab, "h1", "GET", "/v1/networks/100")
    assert net["l3"] and net["encap"] == "vxlan-gpe", net
    for prefix in ("10.0.0.2/32", "fd00:7::2/128"):
        api(lab, "h1", "POST", "/v1/networks/100/routes", {"prefix": prefix, "remote": "10.100.0.2"})
    for cmd in ("ip link add vxg type vxlan dstport 4790 external gpe",
                # The lab's hosts make new devices layer 2 only; this one routes IPv6.
                "sysctl -qw net.ipv6.conf.vxg.disable_ipv6=0",
                "ip link set vxg up",
                "ip addr add 10.0.0.2/32 dev lo",
                "ip -6 addr add fd00:7::2/128 dev lo",
                "ip route add 10.0.0.1/32 encap ip id 100 dst 10.100.0.1 dev vxg",
                "ip -6 route add fd00:7::1/128 encap ip id 100 dst 10.100.0.1 dev vxg"):
        lab.exec("h2", *cmd.split())
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "udp port 4790")
    try:
        for addr in ("fd00:7::2", "10.0.0.2"):
            wait_for(lambda: lab.ping("c1", addr, count=1, check=False).returncode == 0,
                     timeout=15, what=f"c1 → the kernel's {addr} over VXLAN-GPE")
            lab.ping("c1", addr, count=3)
        lab.ping("h2", "fd00:7::1", count=3, extra=("-I", "fd00:7::2"))
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    assert lab.neigh_mac("c1", "fd00:7::2") == net["gateway_mac"]
    assert lab.neigh_mac("c1", "10.0.0.2") == net["gateway_mac"]
    rows = fields(pcap, "ip.src", "vxlan.vni", "vxlan.next_proto", "icmp.type", "icmpv6.type")
    assert rows, "no VXLAN-GPE packet captured"
    assert all(r[1] == "100" for r in rows), rows
    # Next Protocol 1 carries ICMP, 2 carries ICMPv6, from both ends.
    assert all((r[2] == "1") == bool(r[3]) and (r[2] == "2") == bool(r[4]) for r in rows), rows
    for proto in ("1", "2"):
        senders = {r[0].split(",")[0] for r in rows if r[2] == proto}
        assert senders == {"10.100.0.1", "10.100.0.2"}, (proto, rows)
    counters = lab.counters("h1")
    assert counters["networks"]["100"]["nd_replies"] >= 1
    assert counters["networks"]["100"]["arp_replies"] >= 1
    if lab.nvo("h1", "node")["datapath"] == "ebpf":
        # The kernel programs route no L3 network: nvod hands this one to its userspace path,
        # and says so.
        log = (RUN / lab.name / "h1.log").read_text(errors="replace")
        assert "network 100 runs on the userspace path: it is an L3 network" in log
    for reason in ("malformed_tunnel", "profile_mismatch", "unknown_vni"):
        assert counters["drops"][reason] == 0, (reason, counters["drops"])


def test_dual_stack_gpe_between_two_nvods(lab_factory, tmp_path):
    lab = lab_factory(DUAL_TOPOLOGY)
    for here, there, peer in (("h1", "fd00:100::2", "2"), ("h2", "fd00:100::1", "1")):
        for prefix in (f"10.8.0.{peer}/32", f"fd00:8::{peer}/128"):
            api(lab, here, "POST", "/v1/networks/800/routes", {"prefix": prefix, "remote": there})
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "udp port 4790")
    try:
        for addr in ("fd00:8::2", "10.8.0.2"):
            wait_for(lambda: lab.ping("c1", addr, count=1, check=False).returncode == 0,
                     timeout=15, what=f"c1 → {addr} over VXLAN-GPE on an IPv6 underlay")
        lab.ping("c2", "fd00:8::1", count=3)
        lab.ping("c2", "10.8.0.1", count=3)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    rows = fields(pcap, "ipv6.src", "vxlan.next_proto", "icmp.type", "icmpv6.type")
    assert rows, "no VXLAN-GPE packet captured"
    for proto, inner in (("1", 2), ("2", 3)):
        mine = [r for r in rows if r[1] == proto]
        assert mine and all(r[inner] for r in mine), (proto, rows)
        assert {r[0].split(",")[0] for r in mine} == {"fd00:100::1", "fd00:100::2"}, rows
    assert iperf3(lab, "c2", "c1", "fd00:8::2") > 1e6
    assert iperf3(lab, "c2", "c1", "10.8.0.2") > 1e6
    for host in ("h1", "h2"):
        drops = lab.counters(host)["drops"]
        for reason in ("malformed_tunnel", "profile_mismatch", "unknown_vni"):
            assert drops[reason] == 0, (host, reason, drops)
