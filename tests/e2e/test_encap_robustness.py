"""Malformed packets on every tunnel transport nvod listens on are dropped and counted, and
traffic on every profile goes on.

      a103..a107               b103..b107
          |                         |
     [ h1: nvod ]  <-------  [ h2: nvod ]   scapy in h2's namespace sends the bad packets to h1
          \\ eth0                 / eth0
           +---- ul: bridge -----+           underlay 10.100.0.0/24 (h1 = .1, h2 = .2)

 103 vxlan-gpe (UDP 4790)  104 geneve (UDP 6081)  105 nvgre (IP 47)
 106 overlay (UDP 60002)   107 stt (IP 6, port 7471)
"""

import pathlib

from conftest import run, wait_for

PROFILES = {103: "vxlan-gpe", 104: "geneve", 105: "nvgre", 106: "overlay", 107: "stt"}


def topology():
    nets = "\n".join(f"  - {{vni: {v}, encap: {e}}}" for v, e in PROFILES.items())
    ctrs = "\n".join(
        f"  - {{name: a{v}, host: h1, vni: {v}, ip: 10.{v - 100}.0.1/24}}\n"
        f"  - {{name: b{v}, host: h2, vni: {v}, ip: 10.{v - 100}.0.2/24}}" for v in PROFILES)
    return ("underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}\n"
            "hosts: [{name: h1}, {name: h2}]\n"
            f"networks:\n{nets}\ncontainers:\n{ctrs}\n")


MALFORMED = r"""
import random, struct
from scapy.all import IP, UDP, TCP, Raw, Ether, send
random.seed(11)
dst = "10.100.0.1"
inner = bytes(Ether(src="02:00:00:00:99:01", dst="ff:ff:ff:ff:ff:ff") / IP() / UDP())
def junk(n):
    return bytes(random.getrandbits(8) for _ in range(n))
def vni(v):
    return struct.pack("!I", v << 8)
pkts = []
# VXLAN-GPE: truncated, unknown next protocol (5), unknown VNI, garbage.
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4790) / Raw(b"\x0c\x00\x00")] * 30
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4790) / Raw(b"\x0c\x00\x00\x05" + vni(103) + inner)] * 30
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4790) / Raw(b"\x0c\x00\x00\x03" + vni(999) + inner)] * 30
# Geneve: options longer than the packet, critical bit, unknown VNI.
pkts += [IP(dst=dst) / UDP(sport=40000, dport=6081) / Raw(b"\x3f\x00\x65\x58" + vni(104))] * 30
pkts += [IP(dst=dst) / UDP(sport=40000, dport=6081) / Raw(b"\x00\x40\x65\x58" + vni(104) + inner)] * 30
pkts += [IP(dst=dst) / UDP(sport=40000, dport=6081) / Raw(b"\x00\x00\x65\x58" + vni(999) + inner)] * 30
# Overlay header: wrong version, truncated.
pkts += [IP(dst=dst) / UDP(sport=40000, dport=60002) / Raw(b"\x02\x07\x40\x00" + vni(106) + bytes(12) + inner)] * 30
pkts += [IP(dst=dst) / UDP(sport=40000, dport=60002) / Raw(b"\x01\x07")] * 30
# GRE: no key bit, checksum bit, unknown VSID.
pkts += [IP(dst=dst, proto=47) / Raw(b"\x00\x00\x65\x58" + inner)] * 30
pkts += [IP(dst=dst, proto=47) / Raw(b"\xa0\x00\x65\x58" + bytes(4) + vni(105) + inner)] * 30
pkts += [IP(dst=dst, proto=47) / Raw(b"\x20\x00\x65\x58" + vni(999) + inner)] * 30
# STT: a bad checksum, a frame shorter than the STT header, another TCP port (not STT).
pkts += [IP(dst=dst) / TCP(sport=50000, dport=7471, seq=(100 << 16), ack=1, flags="A", chksum=0x1234) / Raw(junk(100))] * 30
pkts += [IP(dst=dst) / TCP(sport=50000, dport=7471, seq=(10 << 16), ack=2, flags="A") / Raw(junk(10))] * 30
# Garbage on every transport.
for _ in range(100):
    pkts.append(IP(dst=dst) / UDP(sport=40000, dport=random.choice([4790, 6081, 60002])) / Raw(junk(random.randrange(0, 120))))
    pkts.append(IP(dst=dst, proto=47) / Raw(junk(random.randrange(0, 120))))
send(pkts, verbose=0)
"""


def nvod_pids(lab, host):
    pids = run("ip", "netns", "pids", lab.ns(host)).stdout.split()
    return sorted(p for p in pids if pathlib.Path(f"/proc/{p}/comm").read_text().strip() == "nvod")


def test_malformed_packets_on_every_transport(lab_factory):
    lab = lab_factory(topology())
    for v in PROFILES:
        lab.ping(f"a{v}", f"10.{v - 100}.0.2", count=1)
    pid = nvod_pids(lab, "h1")
    assert len(pid) == 1, pid
    before = lab.counters("h1")
    lab.exec("h2", "/usr/bin/python3", "-c", MALFORMED, timeout=120)

    def settled():
        c = lab.counters("h1")
        return c if c["stt"]["bad_checksum"] >= before["stt"]["bad_checksum"] + 30 else None
    after = wait_for(settled, what="h1's counters after the flood")
    d0, d1 = before["drops"], after["drops"]
    # 30 each: truncated GPE, geneve options too long, overlay wrong version, overlay
    # truncated, GRE without key, GRE with checksum; at least the 100 garbage datagrams too.
    assert d1["malformed_tunnel"] >= d0["malformed_tunnel"] + 6 * 30, (d0, d1)
    # Unknown VNI on GPE, Geneve and GRE.
    assert d1["unknown_vni"] >= d0["unknown_vni"] + 3 * 30, (d0, d1)
    s0, s1 = before["stt"], after["stt"]
    assert s1["malformed"] >= s0["malformed"] + 30, (s0, s1)
    # Each refusal counted under its own code: the truncated segments and the bad checksums.
    assert d1["stt_malformed"] >= d0["stt_malformed"] + 30, (d0, d1)
    assert d1["stt_bad_checksum"] >= d0["stt_bad_checksum"] + 30, (d0, d1)
    assert d1["stt_reassembly"] == 0, d1  # retired code
    # Still the same process, still forwarding on every profile.
    assert nvod_pids(lab, "h1") == pid
    for v in PROFILES:
        lab.ping(f"a{v}", f"10.{v - 100}.0.2", count=2)
    assert sorted(n["vni"] for n in lab.nvo("h1", "network", "list")) == sorted(PROFILES)
