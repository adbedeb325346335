#!/usr/bin/python3
"""Writes tests/vectors/siit.json: IPv4 <-> IPv6 translations (RFC 7915) built by hand in scapy.

Each vector is an IPv4 packet and the IPv6 packet nvo's ILA IPv4 tenants must turn it into (and
back), both assembled field by field here from RFC 7915 §4.1/§5.1 and with every checksum
computed by scapy, an implementation nobody on nvo wrote (deleted fields: scapy fills them):

  IPv4 -> IPv6: traffic class = TOS, flow label 0, hop limit = TTL, next header = protocol
                (ICMP -> ICMPv6, echo type 8/0 -> 128/129), addresses = ILA addresses below;
  IPv6 -> IPv4: TOS = traffic class, ID 0, DF only above 1260 bytes, TTL = hop limit.

The vectors keep ID 0 and DF as §5.1 sets them, so each one holds both ways ("both": true);
"v4_only" vectors (a zero UDP checksum, an ID, DF on a short packet) hold IPv4 -> IPv6 only,
"v6_only" ones (an ICMPv6 error from an underlay router) IPv6 -> IPv4 only.

ICMP errors (§4.2/§5.2): type and code mapped by the RFC's tables (written out below, not taken
from nvo), the MTU moved by 20, the pointer mapped; the embedded packet is scapy's own
translation of the whole offending packet, cut to as many transport bytes as the error
carried (§4.3/§5.3; so its transport checksum is the whole packet's, which nvo's incremental
adjustment must reproduce); an ICMPv6 error is cut to 1280 bytes (RFC 4443 §2.4 (c)). Each
vector's "inner" maps the embedded packet's IPv4 addresses to IPv6 ones. An IPv6 source with
no IPv4 form becomes RFC 7600's dummy 192.0.0.8.

The ILA addresses follow nvo's IPv4 identifier (docs/ila.md, "IPv4 tenants"): locator (64) |
type 2 (3 bits) | C = 0 | VNI (28) | IPv4 address (32), computed here with integer arithmetic.

Regenerate with:  /usr/bin/python3 tests/vectors/gen_siit_scapy.py tests/vectors
"""

import ipaddress
import json
import os
import sys

from scapy import __version__ as scapy_version
from scapy.config import conf
from scapy.layers.inet import ICMP, IP, TCP, UDP, fragment
from scapy.layers.inet6 import (IPv6, ICMPv6DestUnreach, ICMPv6EchoReply, ICMPv6EchoRequest,
                                IPv6ExtHdrFragment,
                                ICMPv6PacketTooBig, ICMPv6ParamProblem, ICMPv6TimeExceeded)
from scapy.packet import Raw

conf.verb = 0
SOURCE = f"scapy {scapy_version} (tests/vectors/gen_siit_scapy.py)"

LOC_H1 = 0xFD00_001A_0000_0001
LOC_H2 = 0xFD00_001A_0000_0002
VNI = 900


def ila4(locator, vni, ip4):
    ident = (2 << 61) | ((vni & 0x0FFF_FFFF) << 32) | int(ipaddress.IPv4Address(ip4))
    return str(ipaddress.IPv6Address((locator << 64) | ident))


def transport(l4, v6):
    """The transport layer for the other family: same fields, checksum left to scapy."""
    if isinstance(l4, ICMP):
        cls = {8: ICMPv6EchoRequest, 0: ICMPv6EchoReply}[l4.type]
        return cls(id=l4.id, seq=l4.seq, data=bytes(l4.payload))
    if isinstance(l4, (ICMPv6EchoRequest, ICMPv6EchoReply)):
        kind = 8 if l4.type == 128 else 0  # scapy's EchoReply subclasses EchoRequest
        return ICMP(type=kind, id=l4.id, seq=l4.seq) / Raw(l4.data)
    copy = l4.copy()
    copy.chksum = None
    return copy


def to_v6(v4, src6, dst6):
    v4 = IP(bytes(v4))
    return IPv6(src=src6, dst=dst6, tc=v4.tos, fl=0, hlim=v4.ttl) / transport(v4.payload, True)


def to_v4(v6, src4, dst4):
    v6 = IPv6(bytes(v6))
    body = transport(v6.payload, False)
    total = 20 + len(bytes(body))
    return IP(src=src4, dst=dst4, tos=v6.tc, ttl=v6.hlim, id=0,
              flags="DF" if total > 1260 else 0) / body


def vector(name, v4, src4, dst4, both=True):
    v4 = IP(bytes(v4))  # checksums computed by scapy
    src6, dst6 = ila4(LOC_H1, VNI, src4), ila4(LOC_H2, VNI, dst4)
    v6 = IPv6(bytes(to_v6(v4, src6, dst6)))
    if both:  # scapy's own way back must give the IPv4 packet again
        back = IP(bytes(to_v4(v6, src4, dst4)))
        assert bytes(back) == bytes(v4), f"{name}: scapy's way back differs"
    return {"name": name, "v4": bytes(v4).hex(), "v6": bytes(v6).hex(), "src6": src6,
            "dst6": dst6, "vni": VNI, "both": both, "inner": {src4: src6, dst4: dst6}}


# RFC 7915 §4.2 (ICMPv4 -> ICMPv6) and §5.2 (back) for the errors the vectors use.
V4_TO_V6 = {(3, 3): ICMPv6DestUnreach(code=4), (3, 1): ICMPv6DestUnreach(code=0),
            (11, 0): ICMPv6TimeExceeded(code=0)}
V6_TO_V4 = {(1, 4): (3, 3), (1, 0): (3, 1), (3, 0): (11, 0)}
POINTER_V4_TO_V6 = {9: 6, 8: 7, 16: 24}


def error_vector(name, kind, code, src4, dst4, offending, cut, rest=0, both=True):
    """An ICMPv4 error from src4 to dst4 about IPv4 packet `offending`, carrying its first
    `cut` transport bytes, and the ICMPv6 error it becomes (MTU or pointer in `rest`)."""
    offending = IP(bytes(offending))
    raw4 = bytes(offending)
    ihl = offending.ihl * 4
    inner4 = raw4[:ihl + cut]
    src6, dst6 = ila4(LOC_H1, VNI, src4), ila4(LOC_H2, VNI, dst4)
    amap = {src4: src6, dst4: dst6}
    raw6 = bytes(to_v6(offending, amap[offending.src], amap[offending.dst]))
    inner6 = raw6[:40 + cut]
    if (kind, code) == (3, 4):
        icmp4 = ICMP(type=3, code=4, nexthopmtu=rest)
        icmp6 = ICMPv6PacketTooBig(mtu=rest + 20)
    elif kind == 12:
        icmp4 = ICMP(type=12, code=0, ptr=rest)
        icmp6 = ICMPv6ParamProblem(code=0, ptr=POINTER_V4_TO_V6[rest])
    else:
        icmp4 = ICMP(type=kind, code=code)
        icmp6 = V4_TO_V6[(kind, code)].copy()
    v4 = IP(bytes(IP(src=src4, dst=dst4, id=0, ttl=64) / icmp4 / Raw(inner4)))
    body6 = inner6[:1280 - 48]
    v6 = IPv6(bytes(IPv6(src=src6, dst=dst6, tc=0, fl=0, hlim=64) / icmp6 / Raw(body6)))
    return {"name": name, "v4": bytes(v4).hex(), "v6": bytes(v6).hex(), "src6": src6,
            "dst6": dst6, "vni": VNI, "both": both, "inner": amap}


def router_ptb(name, router6, dst4, peer4, offending, mtu6):
    """An underlay router's ICMPv6 Packet Too Big to the ILA address of dst4 about the IPv6
    translation of `offending` (dst4 -> peer4), cut to 1280 bytes; and the ICMPv4
    fragmentation needed it becomes, from 192.0.0.8, MTU mtu6 - 20 (§5.2)."""
    offending = IP(bytes(offending))
    src6, peer6 = ila4(LOC_H1, VNI, dst4), ila4(LOC_H2, VNI, peer4)
    raw6 = bytes(to_v6(offending, src6, peer6))
    inner6 = raw6[:1280 - 48]
    cut = len(inner6) - 40
    v6 = IPv6(bytes(IPv6(src=router6, dst=src6, hlim=64) / ICMPv6PacketTooBig(mtu=mtu6) /
                    Raw(inner6)))
    inner4 = bytes(offending)[:20 + cut]
    v4 = IP(bytes(IP(src="192.0.0.8", dst=dst4, id=0, ttl=64) /
                  ICMP(type=3, code=4, nexthopmtu=mtu6 - 20) / Raw(inner4)))
    return {"name": name, "v4": bytes(v4).hex(), "v6": bytes(v6).hex(), "src6": router6,
            "dst6": src6, "vni": VNI, "both": False, "v6_only": True,
            "inner": {dst4: src6, peer4: peer6}}


def fragment_vectors(name, datagram, size, src4, dst4):
    """scapy's IPv4 fragments of `datagram` (ID kept, DF clear), and the IPv6 fragments
    §4.1 makes of them: a Fragment Header with the same offset, M and ID (low 16 bits), the same
    data, the first fragment's transport checksum the whole IPv6 datagram's (scapy's)."""
    datagram = IP(bytes(datagram))
    src6, dst6 = ila4(LOC_H1, VNI, src4), ila4(LOC_H2, VNI, dst4)
    whole6 = bytes(to_v6(datagram, src6, dst6))[40:]  # the transport bytes, over IPv6
    out = []
    for k, frag in enumerate(fragment(datagram, fragsize=size)):
        frag = IP(bytes(frag))
        start, data = frag.frag * 8, bytes(frag.payload)
        v6 = IPv6(bytes(IPv6(src=src6, dst=dst6, tc=frag.tos, fl=0, hlim=frag.ttl) /
                        IPv6ExtHdrFragment(nh=frag.proto, offset=frag.frag, m=int(frag.flags.MF),
                                           id=frag.id) /
                        Raw(whole6[start:start + len(data)])))
        out.append({"name": f"{name} {k}", "v4": bytes(frag).hex(), "v6": bytes(v6).hex(),
                    "src6": src6, "dst6": dst6, "vni": VNI, "both": True,
                    "inner": {src4: src6, dst4: dst6}})
    return out


def main():
    out = sys.argv[1]
    a, b = "10.9.0.1", "10.9.0.2"
    payload = Raw(b"ila carries ipv4 tenants")
    big = Raw(bytes(range(256)) * 5)  # 1280 bytes: DF on the way back
    vectors = [
        vector("tcp syn", IP(src=a, dst=b, id=0, ttl=64) / TCP(sport=40000, dport=5201, flags="S",
                                                              seq=1000, window=64240), a, b),
        vector("tcp data tos", IP(src=a, dst=b, id=0, tos=0xb8, ttl=63) /
               TCP(sport=40000, dport=5201, flags="PA", seq=1, ack=2) / payload, a, b),
        vector("tcp big df", IP(src=a, dst=b, id=0, flags="DF", ttl=64) /
               TCP(sport=40000, dport=5201, flags="A", seq=7, ack=9) / big, a, b),
        vector("udp", IP(src=b, dst=a, id=0, ttl=64) / UDP(sport=53, dport=33000) / payload, b, a),
        vector("icmp echo request", IP(src=a, dst=b, id=0, ttl=64) /
               ICMP(type=8, id=0x1234, seq=1) / payload, a, b),
        vector("icmp echo reply", IP(src=b, dst=a, id=0, ttl=64) /
               ICMP(type=0, id=0x1234, seq=1) / payload, b, a),
        vector("udp zero checksum", IP(src=a, dst=b, id=0, ttl=64) /
               UDP(sport=1234, dport=4321, chksum=0) / payload, a, b, both=False),
        vector("tcp id and df", IP(src=a, dst=b, id=0xbeef, flags="DF", ttl=64) /
               TCP(sport=1, dport=2, flags="A") / payload, a, b, both=False),
    ]
    udp_ab = IP(src=a, dst=b, id=0, ttl=64) / UDP(sport=33000, dport=53) / payload
    echo_ba = IP(src=b, dst=a, id=0, ttl=1) / ICMP(type=8, id=7, seq=3) / payload
    syn_ba = IP(src=b, dst=a, id=0, ttl=64) / TCP(sport=40000, dport=5201, flags="S", seq=5)
    big_ba = IP(src=b, dst=a, id=0, flags="DF", ttl=64) / TCP(sport=5201, dport=40000,
                                                                flags="A", seq=9, ack=1) / big
    big_ab = IP(src=a, dst=b, id=0, flags="DF", ttl=64) / TCP(sport=40000, dport=5201,
                                                                flags="A", seq=9, ack=1) / big
    vectors += [
        # From c2 about what c1 sent, and from c1 about what c2 sent: both ways each.
        error_vector("icmp port unreachable", 3, 3, b, a, udp_ab, 8 + len(payload)),
        error_vector("icmp time exceeded about an echo", 11, 0, a, b, echo_ba,
                     8 + len(payload)),
        error_vector("icmp host unreachable about a syn", 3, 1, a, b, syn_ba, 20),
        error_vector("icmp parameter problem pointer 9", 12, 0, a, b, syn_ba, 8, rest=9),
        # Fragmentation needed <-> packet too big, the first 8 bytes of TCP (RFC 792).
        error_vector("icmp fragmentation needed", 3, 4, a, b, big_ba, 8, rest=1400),
        # A long embedded packet: the ICMPv6 error is cut at 1280 bytes (v4 -> v6 only).
        error_vector("icmp error cut to 1280", 3, 4, a, b, big_ba, len(bytes(big_ba)) - 20,
                     rest=1400, both=False),
        # Path MTU discovery across the translation: the underlay's Packet Too Big.
        router_ptb("underlay packet too big", "fd00:100::1", a, b, big_ab, 1500),
    ]
    # Fragments (§4.1/§5.1): a UDP datagram in three, a TCP segment whose first fragment holds
    # just its header.
    vectors += fragment_vectors("udp fragment", IP(src=a, dst=b, id=0xbeef, ttl=64) /
                                UDP(sport=33000, dport=9000) / Raw(bytes(range(256)) * 12),
                                1400, a, b)
    vectors += fragment_vectors("tcp fragment", IP(src=b, dst=a, id=0x1234, tos=0x10, ttl=63) /
                                TCP(sport=80, dport=40000, flags="PA", seq=1, ack=1) /
                                Raw(b"x" * 40), 24, b, a)
    with open(os.path.join(out, "siit.json"), "w") as f:
        json.dump({"source": SOURCE, "vectors": vectors}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
