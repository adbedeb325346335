#!/usr/bin/python3
"""Writes tests/vectors/siit.json: IPv4 <-> IPv6 translations (RFC 7915) built by hand in scapy.

Each vector is an IPv4 packet and the IPv6 packet nvo's ILA IPv4 tenants must turn it into (and
back), both assembled field by field here from RFC 7915 §4.1/§5.1 and with every checksum
computed by scapy, an implementation nobody on nvo wrote (deleted fields: scapy fills them):

  IPv4 -> IPv6: traffic class = TOS, flow label 0, hop limit = TTL, next header = protocol
                (ICMP -> ICMPv6, echo type 8/0 -> 128/129), addresses = ILA addresses below;
  IPv6 -> IPv4: TOS = traffic class, ID 0, DF only above 1260 bytes, TTL = hop limit.

The vectors keep ID 0 and DF as §5.1 sets them, so each one holds both ways ("both": true);
"v4_only" vectors (a zero UDP checksum, an ID, DF on a short packet) hold IPv4 -> IPv6 only.

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
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6, ICMPv6EchoReply, ICMPv6EchoRequest
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
            "dst6": dst6, "vni": VNI, "both": both}


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
    with open(os.path.join(out, "siit.json"), "w") as f:
        json.dump({"source": SOURCE, "vectors": vectors}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
