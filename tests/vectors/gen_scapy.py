#!/usr/bin/python3
"""Writes nvo's tunnel byte vectors with scapy, an implementation nobody on nvo wrote.

Each output file tests/vectors/<proto>.json holds a list of vectors:

    {"name": ..., "frame": hex of the whole Ethernet frame as scapy built it,
     "header_offset": byte offset of the tunnel header inside the frame,
     "fields": the values handed to scapy, which nvo's parser must read back}

It also writes samples/tunnels.pcap, the capture the README's demo decodes.

Run by CI (scripts/test.sh) into a scratch directory and compared with the committed files, so
a vector can only change when this script does. Deterministic: no random values, fixed times.

Usage: gen_scapy.py OUT_VECTOR_DIR [OUT_SAMPLE_PCAP]
"""

import json
import os
import struct
import sys

from scapy import __version__ as scapy_version
from scapy.config import conf
from scapy.contrib.geneve import GENEVE, GeneveOptions
from scapy.contrib.nsh import NSH
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, GRE, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw
from scapy.utils import PcapWriter

conf.verb = 0
SOURCE = f"scapy {scapy_version} (tests/vectors/gen_scapy.py)"

OUTER_SRC_MAC = "02:00:00:00:00:01"
OUTER_DST_MAC = "02:00:00:00:00:02"
INNER_SRC_MAC = "52:54:00:aa:bb:01"
INNER_DST_MAC = "52:54:00:aa:bb:02"


def inner_ether():
    """A small tenant frame: ICMP echo between two tenant hosts."""
    return (Ether(src=INNER_SRC_MAC, dst=INNER_DST_MAC)
            / IP(src="10.0.0.1", dst="10.0.0.2", id=1)
            / ICMP(id=7, seq=1) / Raw(b"nvo-payload"))


def inner_ipv4():
    return IP(src="10.1.0.1", dst="10.1.0.2", id=2) / UDP(sport=1000, dport=2000) / Raw(b"l3")


def inner_ipv6():
    return IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=1000, dport=2000) / Raw(b"l3v6")


def outer_v4(proto=None):
    ip = IP(src="192.0.2.1", dst="192.0.2.2", id=0x1234, ttl=64, flags="DF")
    if proto is not None:
        ip.proto = proto
    return Ether(src=OUTER_SRC_MAC, dst=OUTER_DST_MAC) / ip


def outer_v6():
    return Ether(src=OUTER_SRC_MAC, dst=OUTER_DST_MAC) / IPv6(src="2001:db8::1", dst="2001:db8::2")


def vector(name, pkt, layer, fields):
    raw = bytes(pkt)
    offset = len(raw) - len(bytes(pkt[layer]))
    return {"name": name, "frame": raw.hex(), "header_offset": offset, "fields": fields}


def vxlan_vectors():
    v = []
    for vni in (0, 1, 42, 0x123456, 0xFFFFFF):
        pkt = outer_v4() / UDP(sport=49152 + vni % 1000, dport=4789) / VXLAN(flags="Instance", vni=vni) / inner_ether()
        v.append(vector(f"vxlan-vni-{vni}", pkt, VXLAN, {"vni": vni, "gbp": False,
                                                         "inner_src": INNER_SRC_MAC, "inner_dst": INNER_DST_MAC}))
    pkt = outer_v6() / UDP(sport=50000, dport=4789) / VXLAN(flags="Instance", vni=5000) / inner_ether()
    v.append(vector("vxlan-ipv6-underlay", pkt, VXLAN, {"vni": 5000, "gbp": False,
                                                        "inner_src": INNER_SRC_MAC, "inner_dst": INNER_DST_MAC}))
    pkt = outer_v4() / UDP(sport=50001, dport=8472) / VXLAN(flags="Instance", vni=7) / inner_ether()
    v.append(vector("vxlan-linux-port-8472", pkt, VXLAN, {"vni": 7, "gbp": False,
                                                          "inner_src": INNER_SRC_MAC, "inner_dst": INNER_DST_MAC}))
    for gpflags, gpid, d, a in ((0, 0, False, False), ("D", 100, True, False),
                                ("A", 0xBEEF, False, True), ("A+D", 0xFFFF, True, True)):
        pkt = (outer_v4() / UDP(sport=50002, dport=4789)
               / VXLAN(flags="G+Instance", gpflags=gpflags, gpid=gpid, vni=99) / inner_ether())
        v.append(vector(f"vxlan-gbp-{gpid}", pkt, VXLAN, {
            "vni": 99, "gbp": True, "group_policy_id": gpid, "dont_learn": d, "policy_applied": a,
            "inner_src": INNER_SRC_MAC, "inner_dst": INNER_DST_MAC}))
    return v


GPE_FLAGS = {"O": 0x01, "B": 0x02, "P": 0x04, "I": 0x08}


def vxlan_gpe_vectors():
    v = []
    cases = (("ethernet", 3, inner_ether), ("ipv4", 1, inner_ipv4), ("ipv6", 2, inner_ipv6))
    for name, proto, inner in cases:
        pkt = (outer_v4() / UDP(sport=50003, dport=4790)
               / VXLAN(flags="NextProtocol+Instance", NextProtocol=proto, vni=0xABCDE) / inner())
        v.append(vector(f"vxlan-gpe-{name}", pkt, VXLAN, {
            "vni": 0xABCDE, "next_protocol": proto, "oam": False, "version": 0}))
    # O bit set (scapy calls it OAM): an OAM packet carrying Ethernet.
    pkt = (outer_v4() / UDP(sport=50004, dport=4790)
           / VXLAN(flags="OAM+NextProtocol+Instance", NextProtocol=3, vni=1) / inner_ether())
    v.append(vector("vxlan-gpe-oam", pkt, VXLAN, {"vni": 1, "next_protocol": 3, "oam": True, "version": 0}))
    # NSH carried in VXLAN-GPE: the NSH vectors cover its fields.
    pkt = (outer_v4() / UDP(sport=50005, dport=4790)
           / VXLAN(flags="NextProtocol+Instance", NextProtocol=4, vni=77)
           / NSH(mdtype=1, nextproto=3, spi=0x10, si=255, context_header=bytes(16)) / inner_ether())
    v.append(vector("vxlan-gpe-nsh", pkt, VXLAN, {"vni": 77, "next_protocol": 4, "oam": False, "version": 0}))
    return v


def nsh_vectors():
    v = []
    ctx = bytes(range(1, 17))
    for spi, si, ttl in ((1, 255, 63), (0x123456, 254, 10), (0xFFFFFF, 1, 0)):
        nsh = NSH(ttl=ttl, mdtype=1, nextproto=3, spi=spi, si=si, context_header=ctx)
        pkt = (outer_v4() / UDP(sport=50010, dport=4790)
               / VXLAN(flags="NextProtocol+Instance", NextProtocol=4, vni=10) / nsh / inner_ether())
        v.append(vector(f"nsh-md1-spi-{spi}-si-{si}", pkt, NSH, {
            "version": 0, "oam": False, "ttl": ttl, "length": 6, "md_type": 1, "next_protocol": 3,
            "spi": spi, "si": si, "context": ctx.hex(), "tlvs": []}))
    # MD type 1 with O bit, carrying IPv4.
    nsh = NSH(oam=1, ttl=20, mdtype=1, nextproto=1, spi=5, si=9, context_header=bytes(16))
    pkt = outer_v4() / UDP(sport=50011, dport=4790) / VXLAN(flags="NextProtocol+Instance", NextProtocol=4, vni=10) / nsh / inner_ipv4()
    v.append(vector("nsh-md1-oam-ipv4", pkt, NSH, {
        "version": 0, "oam": True, "ttl": 20, "length": 6, "md_type": 1, "next_protocol": 1,
        "spi": 5, "si": 9, "context": bytes(16).hex(), "tlvs": []}))
    # MD type 2 (RFC 8300 §2.5.1): TLV lengths count bytes and values are padded to 4 bytes.
    # scapy 2.5's NSHTLV follows a pre-RFC draft (length in words) and cannot build these, so
    # scapy builds the base and service path headers and the TLVs are packed here per §2.5.1.
    tlvs = [(0x0102, 0x03, bytes.fromhex("deadbeef")),
            (0xFFFF, 0x80, bytes.fromhex("0102030405060708")),
            (0x0000, 0x01, b""),
            (0x0103, 0x04, b"abc")]
    tlv_bytes = b"".join(struct.pack("!HBB", c, t, len(d)) + d + bytes(-len(d) % 4) for c, t, d in tlvs)
    words = 2 + len(tlv_bytes) // 4
    nsh = NSH(ttl=63, length=words, mdtype=2, nextproto=3, spi=0x42, si=200)
    pkt = (outer_v4() / UDP(sport=50012, dport=4790) / VXLAN(flags="NextProtocol+Instance", NextProtocol=4, vni=10)
           / nsh / Raw(tlv_bytes + bytes(inner_ether())))
    v.append(vector("nsh-md2-four-tlvs", pkt, NSH, {
        "version": 0, "oam": False, "ttl": 63, "length": words, "md_type": 2, "next_protocol": 3,
        "spi": 0x42, "si": 200, "tlvs": [{"class": c, "type": t, "value": d.hex()} for c, t, d in tlvs]}))
    nsh = NSH(ttl=1, length=2, mdtype=2, nextproto=2, spi=3, si=3)
    pkt = outer_v4() / UDP(sport=50013, dport=4790) / VXLAN(flags="NextProtocol+Instance", NextProtocol=4, vni=10) / nsh / inner_ipv6()
    v.append(vector("nsh-md2-no-tlvs", pkt, NSH, {
        "version": 0, "oam": False, "ttl": 1, "length": 2, "md_type": 2, "next_protocol": 2,
        "spi": 3, "si": 3, "tlvs": []}))
    return v


def geneve_vectors():
    v = []
    for vni in (0, 1, 0x654321, 0xFFFFFF):
        pkt = outer_v4() / UDP(sport=50020, dport=6081) / GENEVE(vni=vni, proto=0x6558) / inner_ether()
        v.append(vector(f"geneve-vni-{vni}", pkt, GENEVE, {
            "version": 0, "oam": False, "critical": False, "protocol": 0x6558, "vni": vni, "options": []}))
    opts = [GeneveOptions(classid=0x0102, type=0x80, data=b"\x11\x22\x33\x44"),
            GeneveOptions(classid=0xFFFF, type=0x01, data=b"abcdefgh"),
            GeneveOptions(classid=0x0000, type=0x7F, data=b"")]
    pkt = (outer_v4() / UDP(sport=50021, dport=6081)
           / GENEVE(vni=300, proto=0x6558, critical=1, options=opts) / inner_ether())
    v.append(vector("geneve-three-options-critical", pkt, GENEVE, {
        "version": 0, "oam": False, "critical": True, "protocol": 0x6558, "vni": 300, "options": [
            {"class": 0x0102, "type": 0x80, "data": "11223344"},
            {"class": 0xFFFF, "type": 0x01, "data": b"abcdefgh".hex()},
            {"class": 0x0000, "type": 0x7F, "data": ""}]}))
    # nvo's identity option (docs/policy.md): class 0xFFF0, type 0x01, group 10 with the A bit,
    # after an option nvo does not know.
    opts = [GeneveOptions(classid=0x0103, type=0x02, data=b"\x01\x02\x03\x04"),
            GeneveOptions(classid=0xFFF0, type=0x01, data=b"\x00\x0a\x08\x00")]
    pkt = (outer_v4() / UDP(sport=50024, dport=6081)
           / GENEVE(vni=100, proto=0x6558, options=opts) / inner_ether())
    v.append(vector("geneve-nvo-identity", pkt, GENEVE, {
        "version": 0, "oam": False, "critical": False, "protocol": 0x6558, "vni": 100, "options": [
            {"class": 0x0103, "type": 0x02, "data": "01020304"},
            {"class": 0xFFF0, "type": 0x01, "data": "000a0800"}]}))
    pkt = outer_v4() / UDP(sport=50022, dport=6081) / GENEVE(vni=301, proto=0x0800, oam=1) / inner_ipv4()
    v.append(vector("geneve-oam-ipv4", pkt, GENEVE, {
        "version": 0, "oam": True, "critical": False, "protocol": 0x0800, "vni": 301, "options": []}))
    pkt = outer_v6() / UDP(sport=50023, dport=6081) / GENEVE(vni=302, proto=0x86DD) / inner_ipv6()
    v.append(vector("geneve-ipv6-in-ipv6", pkt, GENEVE, {
        "version": 0, "oam": False, "critical": False, "protocol": 0x86DD, "vni": 302, "options": []}))
    return v


def nvgre_vectors():
    v = []
    for vsid, flow in ((0, 0), (1, 0xFF), (0x123456, 0x78), (0xFFFFFF, 0)):
        key = (vsid << 8) | flow
        pkt = outer_v4(proto=47) / GRE(key_present=1, key=key, proto=0x6558) / inner_ether()
        v.append(vector(f"nvgre-vsid-{vsid}-flow-{flow}", pkt, GRE, {
            "key_present": True, "checksum_present": False, "sequence_present": False,
            "protocol": 0x6558, "vsid": vsid, "flow_id": flow, "key": key}))
    pkt = outer_v6() / GRE(key_present=1, key=(4242 << 8) | 3, proto=0x6558) / inner_ether()
    v.append(vector("nvgre-ipv6-underlay", pkt, GRE, {
        "key_present": True, "checksum_present": False, "sequence_present": False,
        "protocol": 0x6558, "vsid": 4242, "flow_id": 3, "key": (4242 << 8) | 3}))
    # Plain GRE (no key) carrying IPv4: parses as GRE, is not NVGRE.
    pkt = outer_v4(proto=47) / GRE(proto=0x0800) / inner_ipv4()
    v.append(vector("gre-ipv4-no-key", pkt, GRE, {
        "key_present": False, "checksum_present": False, "sequence_present": False, "protocol": 0x0800}))
    # GRE with checksum and sequence number (RFC 2890): the key sits after the checksum word.
    pkt = outer_v4(proto=47) / GRE(chksum_present=1, key_present=1, seqnum_present=1, key=(9 << 8) | 1,
                                   sequence_number=77, proto=0x6558) / inner_ether()
    v.append(vector("gre-checksum-key-sequence", pkt, GRE, {
        "key_present": True, "checksum_present": True, "sequence_present": True, "protocol": 0x6558,
        "vsid": 9, "flow_id": 1, "key": (9 << 8) | 1, "sequence": 77}))
    return v


def stt_sample():
    """An STT frame built by hand per draft-davie-stt-08 §3 (scapy has no STT layer)."""
    inner = bytes(inner_ether())
    stt = struct.pack("!BBBBHHQH", 0, 0, 0, 0, 0, 0, 0x1122334455667788, 0)
    payload = stt + inner
    seq = (len(payload) << 16) | 0
    tcp = TCP(sport=50030, dport=7471, seq=seq, ack=0xABCD, flags="PA", window=0xFFFF)
    return outer_v4() / tcp / Raw(payload)


def overlay_sample():
    """nvo's routed overlay header (see crates/wire/src/overlay.rs), built by hand."""
    hdr = struct.pack("!BBBBIIII", 1, 7, 16, 0, (1000 << 8), 0xCAFEF00D, 3, 1)
    return outer_v4() / UDP(sport=50040, dport=60002) / Raw(hdr + bytes(inner_ether()))


def sample_packets(vectors):
    pkts = [bytes.fromhex(x["frame"]) for group in vectors.values() for x in group[:2]]
    pkts.append(bytes(stt_sample()))
    pkts.append(bytes(overlay_sample()))
    # A truncated VXLAN packet: decoders must report it and go on.
    bad = bytes(outer_v4() / UDP(sport=50050, dport=4789) / Raw(b"\x08\x00\x00"))
    pkts.append(bad)
    # Plain ARP on the underlay: not a tunnel at all.
    pkts.append(bytes(Ether(src=OUTER_SRC_MAC, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc="192.0.2.1", pdst="192.0.2.2")))
    return pkts


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    vectors = {
        "vxlan": vxlan_vectors(),
        "vxlan_gpe": vxlan_gpe_vectors(),
        "nsh": nsh_vectors(),
        "geneve": geneve_vectors(),
        "nvgre": nvgre_vectors(),
    }
    for proto, vs in vectors.items():
        with open(os.path.join(out, f"{proto}.json"), "w") as f:
            json.dump({"source": SOURCE, "vectors": vs}, f, indent=1, sort_keys=True)
            f.write("\n")
    if len(sys.argv) > 2:
        w = PcapWriter(sys.argv[2], linktype=1, sync=True)
        for i, raw in enumerate(sample_packets(vectors)):
            pkt = Ether(raw)
            pkt.time = 1_700_000_000 + i
            w.write(pkt)
        w.close()


if __name__ == "__main__":
    main()
