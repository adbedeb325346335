"""ILA (draft-herbert-intarea-ila): containers keep their SIR addresses; nvod rewrites the
destination's SIR prefix into the locator of the destination's host (checksum-neutral, C bit)
and the kernel routes the packet on the underlay as plain IPv6 — no tunnel header.

      c1 (fd10::1, SIR)                                   c2 (fd10::2, SIR)
         |                                                   |
   [ h1: nvod, network 900, encap ila ]          [ h2: nvod, network 900, encap ila ]
     ila_locator fd00:1a:0:1::/64 → nvoila0        ila_locator fd00:1a:0:2::/64 → nvoila0
     route fd00:1a:0:2::/64 via fd00:100::2        route fd00:1a:0:1::/64 via fd00:100::1
     mappings fd10::1 → fd00:1a:0:1::1, fd10::2 → fd00:1a:0:2::1 (on both, set by the lab)
         \\ eth0 fd00:100::1 ------ ul: bridge ------ eth0 fd00:100::2 /

On the wire (h1's eth0): destination = the locator (fd00:1a:0:2:...) with the C bit, source =
the SIR address fd10::1, next header TCP or ICMPv6 right after the IPv6 header, transport
checksums valid; in c2 the packets arrive addressed to fd10::2, checksums valid again.
"""

import ipaddress
import signal
import subprocess

from conftest import RUN, api, wait_for
from rate_lab import assert_datapath
from test_l3 import fields, iperf3

TOPOLOGY = """
underlay: {family: ipv6, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 900, encap: ila, flood: []}]
containers:
  - {name: c1, host: h1, vni: 900, ip: 10.9.0.1/24, ipv6: "fd10::1/64"}
  - {name: c2, host: h2, vni: 900, ip: 10.9.0.2/24, ipv6: "fd10::2/64"}
"""

# Echo request/reply and TCP only (no neighbour discovery).
DATA = "ip6 and (tcp or (icmp6 and (ip6[40] == 128 or ip6[40] == 129)))"

# (The source MAC is given: scapy finds none for eth0 without an IPv6 route, and a frame from
# 00:00:00:00:00:00 is an invalid_source_mac drop.)
SEND_LINK_CONTROL = """
from scapy.all import (Ether, ICMPv6MLDMultAddrRec, ICMPv6MLReport2, ICMPv6ND_RS, IPv6,
                       IPv6ExtHdrHopByHop, RouterAlert, get_if_hwaddr, sendp)
mac = get_if_hwaddr("eth0")
rs = (Ether(dst="33:33:00:00:00:02", src=mac) / IPv6(src="fe80::1", dst="ff02::2", hlim=255)
      / ICMPv6ND_RS())
mld = (Ether(dst="33:33:00:00:00:16", src=mac) / IPv6(src="fe80::1", dst="ff02::16", hlim=1)
       / IPv6ExtHdrHopByHop(options=[RouterAlert(value=0)])
       / ICMPv6MLReport2(records=[ICMPv6MLDMultAddrRec(rtype=4, dst="ff02::1:ff00:1")]))
sendp([rs, mld], iface="eth0", verbose=False)
"""


def tcpdump(lab, node, pcap, count, filt=DATA):
    """tcpdump on NODE's eth0, whole packets, stopping after COUNT of them."""
    cmd = ["ip", "netns", "exec", lab.ns(node), "tcpdump", "-i", "eth0", "--immediate-mode", "-U", "-n", "-s", "0",
           "-c", str(count), "-w", str(pcap), filt]
    cap = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = cap.stderr.readline()
    assert "listening on" in line, line
    return cap


def stop(cap):
    cap.send_signal(signal.SIGTERM)
    cap.wait(timeout=20)


def offload(lab, state):
    """Transmit checksumming (and with it TSO) on or off on h1's eth0 and c2's veth in h2."""
    lab.exec("h1", "ethtool", "-K", "eth0", "tx", state, "tso", state)
    lab.exec("h2", "ethtool", "-K", "c-c2", "tx", state, "tso", state)


def rx(lab, node):
    """(packets, bytes) NODE's eth0 has received."""
    stats = "/sys/class/net/eth0/statistics"
    out = lab.exec(node, "cat", f"{stats}/rx_packets", f"{stats}/rx_bytes").stdout.split()
    return int(out[0]), int(out[1])


def test_ila_between_two_nvods(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    assert_datapath(lab)
    net = api(lab, "h1", "GET", "/v1/networks/900")
    assert net["l3"] is True and net["encap"] == "ila", net
    routes = api(lab, "h1", "GET", "/v1/networks/900/routes")
    assert {"prefix": "fd10::2/128", "remote": "fd00:1a:0:2::1"} in routes, routes
    # The kernel routes h1's locator to nvod's TUN.
    assert "dev nvoila0" in lab.exec("h1", "ip", "-6", "route", "show", "fd00:1a:0:1::/64").stdout

    # nvod now hands TCP to the kernel with partial checksums (TSO frames whole, checksum offload):
    # a capture before the device would show the pseudo-header sum. With tx checksumming off on
    # h1's eth0 and c2's veth (c-c2, in h2) the kernel finishes each packet before the capture
    # point, from the partial sum nvod passed on, so the checks below show that the sum still
    # holds over the translated addresses. Put back on for the GSO check at the end.
    offload(lab, "off")
    wire, inside = tmp_path / "h1.pcap", tmp_path / "c2.pcap"
    cap_wire, cap_in = tcpdump(lab, "h1", wire, 400), tcpdump(lab, "c2", inside, 400)
    try:
        wait_for(lambda: lab.ping("c1", "fd10::2", count=1, check=False).returncode == 0,
                 timeout=15, what="c1 → c2 over ila")
        lab.ping("c2", "fd10::1", count=3)
        # A short TCP exchange, captured whole: 100 KB.
        srv = subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "iperf3", "-s", "-1"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: lab.exec("c1", "iperf3", "-c", "fd10::2", "-n", "100K",
                                      check=False, timeout=30).returncode == 0,
                     timeout=15, what="short tcp over ila")
        finally:
            srv.kill()
            srv.wait()
    finally:
        stop(cap_wire)
        stop(cap_in)

    rows = fields(wire, "ipv6.src", "ipv6.dst", "ipv6.nxt", "tcp.checksum.status",
                  "icmpv6.checksum.status", "udp.port",
                  extra=["-o", "tcp.check_checksum:TRUE"])
    assert rows, "nothing captured on h1's underlay"
    outbound = [r for r in rows if r[0] == "fd10::1"]
    inbound = [r for r in rows if r[1] == "fd10::1" or r[1].startswith("fd00:1a:0:1:")]
    assert outbound and inbound, rows
    for src, dst, nxt, tcp_ok, icmp_ok, udp in outbound:
        # The destination is c2's host's locator, with the C bit (0x1000 in the fifth group).
        assert dst.startswith("fd00:1a:0:2:"), (src, dst)
        assert int(dst.split(":")[4], 16) & 0x1000, dst
        # No encapsulation: one IPv6 header, TCP (6) or ICMPv6 (58) right behind it.
        assert nxt in ("6", "58") and "," not in nxt and not udp, (nxt, udp)
        assert (tcp_ok or icmp_ok) == "1", ("checksum not valid on the wire", src, dst, tcp_ok, icmp_ok)
    # h2 translated its own destination only: replies come from SIR fd10::2 to h1's locator.
    for src, dst, *_ in inbound:
        assert src == "fd10::2" and dst.startswith("fd00:1a:0:1:"), (src, dst)
    assert any(r[2] == "6" for r in outbound) and any(r[2] == "58" for r in outbound), outbound

    got = fields(inside, "ipv6.src", "ipv6.dst", "tcp.checksum.status", "icmpv6.checksum.status",
                 extra=["-o", "tcp.check_checksum:TRUE"])
    to_c2 = [r for r in got if r[1] == "fd10::2"]
    assert to_c2, got
    for src, dst, tcp_ok, icmp_ok in to_c2:
        assert src == "fd10::1", (src, dst)
        assert (tcp_ok or icmp_ok) == "1", ("checksum not valid at the receiver", tcp_ok, icmp_ok)

    # Throughput, 2 s, offloads back on: TSO frames from c1 cross the TUN, the underlay and
    # c2's veth whole (nvod writes them with a virtio-net header; h2's kernel hands them to
    # nvod unsegmented and nvod delivers them so), so fewer packets than bytes / 1500 arrive
    # on h2's eth0 and in c2. Segmented anywhere on the way, the ratio would be ~1500.
    offload(lab, "on")
    before = {n: rx(lab, n) for n in ("h2", "c2")}
    assert iperf3(lab, "c2", "c1", "fd10::2") > 1e6
    for n in ("h2", "c2"):
        packets, octets = (a - b for a, b in zip(rx(lab, n), before[n]))
        assert octets > 1_000_000 and octets / packets > 3000, (n, packets, octets)
    # nvod counts it too: GSO frames written whole at h1, read whole at h2, none refused.
    sent, got = lab.counters("h1")["underlay"], lab.counters("h2")["underlay"]
    assert sent["ila_tx_gso_whole"] > 0 and got["ila_rx_gso_whole"] > 0, (sent, got)
    assert sent["ila_rx_refused"] == 0 and got["ila_rx_refused"] == 0, (sent, got)

    # An identifier nobody mapped: a counted drop at the sender.
    before = lab.counters("h1")["drops"]["no_destination"]
    assert lab.ping("c1", "fd10::99", count=2, check=False).returncode != 0
    assert lab.counters("h1")["drops"]["no_destination"] >= before + 2
    # A router solicitation and an MLD report, as scapy builds them, from c1: consumed by the
    # gateway and counted as link_control (nothing on an L3 network routes them).
    before = lab.counters("h1")["drops"].get("link_control", 0)
    lab.exec("c1", "/usr/bin/python3", "-c", SEND_LINK_CONTROL)
    wait_for(
        lambda: lab.counters("h1")["drops"].get("link_control", 0) >= before + 2,
        what="two link_control drops at h1",
    )
    if lab.nvo("h1", "node")["datapath"] == "ebpf":
        # The kernel programs run no L3 network, and no network at all over an IPv6 underlay
        # (which ILA needs): nvod hands the ILA network to its userspace path, and says so.
        log = (RUN / lab.name / "h1.log").read_text(errors="replace")
        assert "network 900 runs on the userspace path: the underlay is IPv6" in log, log
    # Whatever reached nvod's TUN was a well-formed IPv6 packet.
    for h in ("h1", "h2"):
        assert lab.counters(h)["drops"]["malformed_tunnel"] == 0, h



TENANTS = """
underlay: {family: ipv6, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 900, encap: ila, flood: []}, {vni: 901, encap: ila, flood: []}]
containers:
  - {name: a1, host: h1, vni: 900, ip: 10.9.0.1/24, ipv6: "fd10::1/64"}
  - {name: a2, host: h2, vni: 900, ip: 10.9.0.2/24, ipv6: "fd10::2/64"}
  - {name: b1, host: h1, vni: 901, ip: 10.9.0.1/24, ipv6: "fd10::1/64"}
  - {name: b2, host: h2, vni: 901, ip: 10.9.0.2/24, ipv6: "fd10::2/64"}
"""


def test_ila_tenants_with_the_same_addresses(lab_factory, tmp_path):
    """Two tenants (VNI 900: a1, a2; VNI 901: b1, b2) with the same SIR addresses on the same
    two hosts: the identifier carries the VNI (type 3, C, VNI), so the ILA addresses differ on
    the wire and each packet reaches its own tenant's container only."""
    lab = lab_factory(TENANTS)
    assert_datapath(lab)
    wire = tmp_path / "h1.pcap"
    inside = {c: tmp_path / f"{c}.pcap" for c in ("a2", "b2")}
    caps = [tcpdump(lab, "h1", wire, 200)] + [tcpdump(lab, c, p, 200) for c, p in inside.items()]
    try:
        for src, pattern in (("a1", "aaaa"), ("b1", "bbbb")):
            wait_for(lambda: lab.ping(src, "fd10::2", count=1, check=False,
                                      extra=("-p", pattern)).returncode == 0,
                     timeout=15, what=f"{src} → fd10::2 over ila")
            lab.ping(src, "fd10::2", count=3, extra=("-p", pattern))
    finally:
        for cap in caps:
            stop(cap)
    # On the wire: the same SIR destination, two ILA addresses — the VNI in the identifier.
    rows = fields(wire, "ipv6.src", "ipv6.dst", "icmpv6.checksum.status", "data.data")
    requests = {r[1] for r in rows if r[0] == "fd10::1"}
    assert {d.split(":")[5] for d in requests} == {"384", "385"}, requests  # 900, 901
    assert all(d.startswith("fd00:1a:0:2:7000:") for d in requests), requests
    assert all(r[2] == "1" for r in rows if r[2]), rows
    # Inside: each tenant's fd10::2 got its own tenant's pings only.
    for c, mine, theirs in (("a2", "aaaa", "bbbb"), ("b2", "bbbb", "aaaa")):
        got = fields(inside[c], "ipv6.dst", "icmpv6.type", "data.data")
        echoes = [r for r in got if r[1] == "128"]
        assert echoes and all(r[0] == "fd10::2" for r in echoes), (c, got)
        assert all(mine in r[2] and theirs not in r[2] for r in echoes), (c, echoes)


def ila4(addr):
    """(locator /64 as text, identifier type, VNI, IPv4) of an ILA address of nvo's IPv4 type."""
    n = int(ipaddress.IPv6Address(addr))
    locator = str(ipaddress.IPv6Address(n >> 64 << 64))
    return locator, (n >> 61) & 7, (n >> 32) & 0x0FFFFFFF, str(ipaddress.IPv4Address(n & 0xFFFFFFFF))


# b2 waits for one UDP datagram on port 9000 and prints its length and sender; b1 sends five,
# 0.2 s apart, of 3000 bytes each (more than the route's MTU: the kernel fragments them).
UDP_RECV = """import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9000))
s.settimeout(8)
data, peer = s.recvfrom(65535)
print(len(data), peer[0])"""
UDP_SEND = """import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(5):
    s.sendto(bytes(range(250)) * 12, ("10.9.0.2", 9000))
    time.sleep(0.2)"""


def test_ila_ipv4_tenants_with_the_same_addresses(lab_factory, tmp_path):
    """IPv4 tenants (l3::ila4): the same two tenants' containers have the same IPv4 addresses
    (10.9.0.1 on h1, 10.9.0.2 on h2, in VNI 900 and 901). Their IPv4 packets cross the IPv6
    underlay translated to IPv6 (RFC 7915), no tunnel header: source and destination are ILA
    addresses, locator + identifier type 2 (VNI, IPv4 address); each comes back as IPv4 to its
    own tenant's container only, checksums valid on the wire and inside."""
    lab = lab_factory(TENANTS)
    assert_datapath(lab)
    routes = api(lab, "h1", "GET", "/v1/networks/901/routes")
    assert {"prefix": "10.9.0.2/32", "remote": "fd00:1a:0:2::1"} in routes, routes
    # The IPv4 route inside is 28 bytes under the underlay's MTU: the IPv6 header is longer,
    # and a fragment gets a Fragment Header.
    assert "mtu 1472" in lab.exec("a1", "ip", "-4", "route", "show", "10.9.0.0/24").stdout
    wire = tmp_path / "h1.pcap"
    inside = {c: tmp_path / f"{c}.pcap" for c in ("a2", "b2")}
    caps = [tcpdump(lab, "h1", wire, 300)] + [tcpdump(lab, c, p, 300, "icmp or tcp") for c, p in inside.items()]
    try:
        for one, two, pattern in (("a1", "a2", "aaaa"), ("b1", "b2", "bbbb")):
            wait_for(lambda: lab.ping(one, "10.9.0.2", count=1, check=False,
                                      extra=("-p", pattern)).returncode == 0,
                     timeout=15, what=f"{one} → 10.9.0.2 over ila (ipv4)")
            lab.ping(one, "10.9.0.2", count=2, extra=("-p", pattern))
            lab.ping(two, "10.9.0.1", count=2, extra=("-p", pattern))
        # TCP, 2 s, in tenant 900 only.
        assert iperf3(lab, "a2", "a1", "10.9.0.2") > 1e6
    finally:
        for cap in caps:
            stop(cap)

    rows = fields(wire, "ipv6.src", "ipv6.dst", "ipv6.nxt", "tcp.checksum.status",
                  "icmpv6.checksum.status", "udp.port", "ip.src",
                  extra=["-o", "tcp.check_checksum:TRUE"])
    v4 = [r for r in rows if ila4(r[1])[1] == 2]
    assert v4, rows
    vnis = set()
    for src, dst, nxt, tcp_ok, icmp_ok, udp, inner in v4:
        (sloc, stype, svni, sip), (dloc, _, dvni, dip) = ila4(src), ila4(dst)
        # Both addresses are ILA addresses of one tenant: h1's or h2's locator, type 2.
        assert stype == 2 and svni == dvni and svni in (900, 901), (src, dst)
        assert {(sloc, sip), (dloc, dip)} == {("fd00:1a:0:1::", "10.9.0.1"), ("fd00:1a:0:2::", "10.9.0.2")}, (src, dst)
        # No encapsulation: TCP or ICMPv6 right behind the one IPv6 header, no IPv4 inside.
        assert nxt in ("6", "58") and not udp and not inner, (nxt, udp, inner)
        assert (tcp_ok or icmp_ok) == "1", ("checksum not valid on the wire", src, dst, tcp_ok, icmp_ok)
        vnis.add(svni)
    assert vnis == {900, 901}, vnis
    assert any(r[2] == "6" for r in v4) and any(r[2] == "58" for r in v4), v4

    # Inside: IPv4 again, each tenant's 10.9.0.2 got its own tenant's pings only, and the TCP
    # of tenant 900 only, checksums valid.
    for c, mine, theirs in (("a2", "aaaa", "bbbb"), ("b2", "bbbb", "aaaa")):
        got = fields(inside[c], "ip.src", "ip.dst", "icmp.type", "data.data", "tcp.checksum.status",
                     "icmp.checksum.status", extra=["-o", "tcp.check_checksum:TRUE"])
        echoes = [r for r in got if r[2] == "8" and r[1] == "10.9.0.2"]
        assert echoes and all(r[0] == "10.9.0.1" for r in echoes), (c, got)
        assert all(mine in r[3] and theirs not in r[3] for r in echoes), (c, echoes)
        assert all(r[5] == "1" for r in got if r[5]), (c, got)
        tcp_in = [r for r in got if r[4] and r[1] == "10.9.0.2"]
        if c == "a2":
            assert tcp_in and all(r[4] == "1" for r in tcp_in), ("tcp checksum inside", tcp_in[:5])
        else:
            assert not tcp_in, ("tenant 900's tcp leaked into 901", tcp_in[:5])

    # Path MTU discovery across the translation (RFC 7915 §5.2): with a 1500-byte route, a1's
    # 1500-byte DF packet becomes 1520 bytes of IPv6; h1's kernel answers with a Packet Too Big
    # (MTU 1500) to a1's ILA address, which nvod translates into "fragmentation needed" with
    # MTU 1480 (from RFC 7600's dummy 192.0.0.8); a1's kernel then keeps MTU 1480 for 10.9.0.2.
    lab.exec("a1", "ip", "-4", "route", "add", "10.9.0.2/32", "dev", "eth0", "mtu", "1500")
    big = lab.exec("a1", "ping", "-c", "1", "-W", "2", "-M", "do", "-s", "1472", "10.9.0.2", check=False)
    assert "mtu = 1480" in big.stdout, (big.stdout, big.stderr)
    assert "mtu 1480" in lab.exec("a1", "ip", "-4", "route", "get", "10.9.0.2").stdout
    lab.ping("a1", "10.9.0.2", count=1, extra=("-M", "do", "-s", "1444"))  # a2 replies within 1472

    # Fragments (RFC 7915 §4.1/§5.1): a 3000-byte UDP datagram leaves b1 as three IPv4 fragments
    # (route MTU 1472), crosses as IPv6 fragments with a Fragment Header (ID kept), and b2's
    # kernel puts it together again.
    recv = subprocess.Popen(["ip", "netns", "exec", lab.ns("b2"), "python3", "-c", UDP_RECV],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: ":9000" in lab.exec("b2", "ss", "-uln").stdout, timeout=5, what="b2 listens")
        lab.exec("b1", "python3", "-c", UDP_SEND)
        out, err = recv.communicate(timeout=10)
    finally:
        recv.kill()
    assert out.split() == ["3000", "10.9.0.1"], (out, err)
    for h in ("h1", "h2"):
        assert lab.counters(h)["drops"]["malformed_tunnel"] == 0, h
