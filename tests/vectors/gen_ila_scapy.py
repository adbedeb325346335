#!/usr/bin/python3
"""Writes tests/vectors/ila.json: ILA address translations that scapy proves checksum-neutral.

ILA (draft-herbert-intarea-ila-01) rewrites the upper 64 bits of an IPv6 address. With
checksum-neutral mapping the translator also rewrites the low 16 bits of the identifier so that
the transport checksum, which covers the address, stays valid. This script does not compute that
adjustment with a formula: it tries all 65536 values of those 16 bits and keeps the ones for
which scapy, an implementation nobody on nvo wrote, accepts the untouched transport checksum.
Then it rebuilds the translated packet with the checksum deleted and checks that scapy computes
the original value again. nvo's translation (crates/wire/src/ila.rs) must land on those values.

Each vector: "frame" is the SIR-addressed Ethernet frame, "header_offset" the IPv6 header, and
"fields" hold the mapping ("mode", "sir_prefix", "src_locator"/"dst_locator", 0 when that address
is not translated), the translated frame ("ila_frame"), and per translated address the SIR and
ILA addresses with every low-16-bit value scapy accepts ("*_ila_candidates" on the ILA side,
"*_sir_candidates" on the way back). Values are integers; frames and addresses are hex.

Deterministic: fixed addresses, ports and payloads, so CI can run it next to gen_scapy.py and
compare with the committed file. Regenerate with:
    /usr/bin/python3 tests/vectors/gen_ila_scapy.py tests/vectors

Usage: gen_ila_scapy.py OUT_VECTOR_DIR
"""

import json
import os
import socket
import sys

from scapy import __version__ as scapy_version
from scapy.config import conf
from scapy.layers.inet import TCP, UDP
from scapy.layers.inet6 import IPv6, ICMPv6EchoRequest, in6_chksum, in6_pseudoheader
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import checksum

conf.verb = 0
SOURCE = f"scapy {scapy_version} (tests/vectors/gen_ila_scapy.py)"

MAC_SRC = "02:00:00:00:00:01"
MAC_DST = "02:00:00:00:00:02"
C_BIT = 0x10  # in the first byte of the identifier: Type (3 bits), C, ...

# Linux's Documentation/networking/ila.rst example: SIR prefix 3333:0:0:1, locator 2001:0:87:0.
SIR_PREFIX = 0x3333_0000_0000_0001
LOC_A = 0x2001_0000_0087_0000
LOC_B = 0x2001_0db8_00ab_cdef


def transport_layer(pkt):
    for cls in (UDP, TCP, ICMPv6EchoRequest):
        if cls in pkt:
            return pkt[cls]
    raise ValueError("no transport layer")


def checksum_field(layer):
    return "cksum" if isinstance(layer, ICMPv6EchoRequest) else "chksum"


def addr_bytes(text):
    return socket.inet_pton(socket.AF_INET6, text)


def addr_text(raw):
    return socket.inet_ntop(socket.AF_INET6, raw)


def accepted_words(pkt, which, base):
    """Every value of the low 16 bits of address `which` ("src"/"dst"), the rest being `base`,
    for which scapy's verification of the untouched transport checksum succeeds."""
    pkt = pkt.copy()
    setattr(pkt[IPv6], which, addr_text(base))
    pkt = Ether(bytes(pkt))
    layer = transport_layer(pkt)
    nh = pkt[IPv6].nh
    transport = bytes(layer)
    ph = bytes(in6_pseudoheader(nh, layer, len(transport)))
    # PseudoIPv6 is src (16 bytes), dst (16 bytes), length, zeros, next header.
    at = 0 if which == "src" else 16
    assert ph[at:at + 16] == base, "pseudo-header layout"
    head, tail = ph[:at + 14], ph[at + 16:] + transport
    ok = [w for w in range(65536) if checksum(head + w.to_bytes(2, "big") + tail) == 0]
    # The slow path, in6_chksum itself, agrees on the values found.
    for w in ok:
        setattr(pkt[IPv6], which, addr_text(base[:14] + w.to_bytes(2, "big")))
        assert in6_chksum(nh, transport_layer(Ether(bytes(pkt))), transport) == 0
    return ok


def one_class(words):
    """The accepted values are one one's complement number: a single value, or for zero both
    of its forms (0x0000 and 0xffff). Towards ILA Linux writes zero as 0xffff (~csum_fold), and
    so does nvo; back towards SIR nvo writes 0x0000."""
    assert len(words) == 1 or words == [0, 0xffff], words
    return words


def translate(pkt, which, locator, mode, out):
    """Translates address `which` of `pkt` in place; records what scapy accepts in `out`."""
    sir = addr_bytes(pkt[IPv6].getfieldval(which))
    ident = bytearray(sir[8:])
    if mode == "neutral-map":
        assert not ident[0] & C_BIT
        ident[0] |= C_BIT
    base = locator.to_bytes(8, "big") + bytes(ident)
    if mode in ("neutral-map", "neutral-map-auto"):
        ila_words = one_class(accepted_words(pkt, which, base))
        ila = base[:14] + max(ila_words).to_bytes(2, "big")  # zero as 0xffff, like Linux
        out[f"{which}_ila_candidates"] = ila_words
        # And back: the SIR side of the same packet, C cleared, sweeping the same 16 bits.
        back = pkt.copy()
        setattr(back[IPv6], which, addr_text(ila))
        sir_words = one_class(accepted_words(back, which, sir))
        assert int.from_bytes(sir[14:], "big") in sir_words
        out[f"{which}_sir_candidates"] = sir_words
    else:
        ila = base
    out[f"{which}_sir"] = sir.hex()
    out[f"{which}_ila"] = ila.hex()
    setattr(pkt[IPv6], which, addr_text(ila))


def vector(name, inner, mode, src_locator=0, dst_locator=0, src=None, dst=None):
    sir_pkt = Ether(bytes(Ether(src=MAC_SRC, dst=MAC_DST) / IPv6(src=src, dst=dst, hlim=64) / inner))
    layer = transport_layer(sir_pkt)
    original = layer.getfieldval(checksum_field(layer))
    fields = {"mode": mode, "sir_prefix": SIR_PREFIX, "src_locator": src_locator,
              "dst_locator": dst_locator, "checksum": original}
    ila_pkt = sir_pkt.copy()
    if src_locator:
        translate(ila_pkt, "src", src_locator, mode, fields)
    if dst_locator:
        translate(ila_pkt, "dst", dst_locator, mode, fields)
    # The independent check: scapy computes the translated packet's checksum from scratch.
    fresh = ila_pkt.copy()
    fresh_layer = transport_layer(fresh)
    delattr(fresh_layer, checksum_field(fresh_layer))  # scapy recomputes it
    recomputed = transport_layer(Ether(bytes(fresh))).getfieldval(checksum_field(fresh_layer))
    if mode in ("neutral-map", "neutral-map-auto"):
        assert recomputed == original, (name, hex(recomputed), hex(original))
        ila_frame = bytes(ila_pkt)  # transport header untouched
    elif mode == "adjust-transport":
        ila_frame = bytes(fresh)  # what a translator that fixes the checksum must send
    else:  # no-action: the checksum is now wrong on the wire
        assert recomputed != original, name
        ila_frame = bytes(ila_pkt)
    fields["ila_checksum"] = recomputed
    fields["ila_frame"] = ila_frame.hex()
    raw = bytes(sir_pkt)
    return {"name": name, "frame": raw.hex(), "header_offset": len(raw) - len(bytes(sir_pkt[IPv6])),
            "fields": fields}


def sir(identifier):
    """A SIR address: the SIR prefix and a 64-bit identifier."""
    return addr_text(SIR_PREFIX.to_bytes(8, "big") + identifier.to_bytes(8, "big"))


def ones_sum(*words):
    s = sum(words)
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    return s


def halves(x):
    return [(x >> s) & 0xffff for s in (48, 32, 16, 0)]


def zero_class_identifier(mode):
    """A LUID whose adjustment sums to a one's complement zero when mapped to LOC_A, so that
    scapy accepts two ILA values (0x0000 and 0xffff). This only picks the input; scapy judges."""
    # adjustment + SIR prefix - locator (- C) = 0, so adjustment = locator (+ C) - SIR prefix.
    c = [0x1000] if mode == "neutral-map" else []
    need = ones_sum(*halves(LOC_A), *c, *[0xffff - w for w in halves(SIR_PREFIX)])
    return 0x2000_0000_0002_0000 | need


def ila_vectors():
    udp = lambda: UDP(sport=40000, dport=5000) / Raw(b"ila over udp")  # noqa: E731
    tcp = lambda: TCP(sport=40001, dport=80, seq=1000, flags="S") / Raw(b"ila over tcp")  # noqa: E731
    echo = lambda: ICMPv6EchoRequest(id=0x1234, seq=7, data=b"ila ping")  # noqa: E731
    luid = sir(0x2000_0000_0001_0087)  # the kernel documentation's address
    peer = sir(0x2000_0000_0000_0042)
    v6uni = sir(0x6000_0000_0a0b_0c0d)  # type 3: virtual networking, IPv6 unicast
    return [
        vector("udp-dst-neutral-map", udp(), "neutral-map", dst_locator=LOC_A, src=peer, dst=luid),
        vector("tcp-dst-neutral-map", tcp(), "neutral-map", dst_locator=LOC_B, src=peer, dst=v6uni),
        vector("icmpv6-dst-neutral-map", echo(), "neutral-map", dst_locator=LOC_A, src=peer, dst=luid),
        vector("udp-both-neutral-map", udp(), "neutral-map", src_locator=LOC_B, dst_locator=LOC_A,
               src=peer, dst=luid),
        vector("tcp-src-neutral-map", tcp(), "neutral-map", src_locator=LOC_A, src=v6uni, dst=peer),
        vector("udp-dst-neutral-map-low-0000", udp(), "neutral-map", dst_locator=LOC_B, src=peer,
               dst=sir(0x2000_0000_0005_0000)),
        vector("udp-dst-neutral-map-low-ffff", udp(), "neutral-map", dst_locator=LOC_B, src=peer,
               dst=sir(0x2000_0000_0005_ffff)),
        vector("tcp-dst-neutral-map-zero-sum", tcp(), "neutral-map", dst_locator=LOC_A, src=peer,
               dst=sir(zero_class_identifier("neutral-map"))),
        vector("udp-dst-neutral-map-auto", udp(), "neutral-map-auto", dst_locator=LOC_A, src=peer,
               dst=luid),
        vector("udp-dst-neutral-map-auto-zero-sum", udp(), "neutral-map-auto", dst_locator=LOC_A,
               src=peer, dst=sir(zero_class_identifier("neutral-map-auto"))),
        vector("udp-dst-neutral-map-auto-low-ffff", udp(), "neutral-map-auto", dst_locator=LOC_B,
               src=peer, dst=sir(0x2000_0000_0005_ffff)),
        vector("icmpv6-both-neutral-map-auto", echo(), "neutral-map-auto", src_locator=LOC_A,
               dst_locator=LOC_B, src=luid, dst=v6uni),
        vector("udp-dst-adjust-transport", udp(), "adjust-transport", dst_locator=LOC_A, src=peer,
               dst=luid),
        vector("tcp-both-adjust-transport", tcp(), "adjust-transport", src_locator=LOC_B,
               dst_locator=LOC_A, src=peer, dst=v6uni),
        vector("icmpv6-dst-adjust-transport", echo(), "adjust-transport", dst_locator=LOC_B,
               src=peer, dst=luid),
        vector("udp-dst-no-action", udp(), "no-action", dst_locator=LOC_A, src=peer, dst=luid),
    ]


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "ila.json"), "w") as f:
        json.dump({"source": SOURCE, "vectors": ila_vectors()}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
