"""Large frames end to end through nvod's userspace datapath (issue 16): a container's TSO frame
of up to 64 KiB leaves as one UDP GSO send, and the TCP segments the other nvod receives are
merged back into GSO frames the receiving container takes whole; the bytes arrive intact.

      c1 (iperf3 client, TSO on)            c2 (iperf3 server)
       | eth0: packet socket with             | eth0: packet socket with
       |       PACKET_VNET_HDR                |       PACKET_VNET_HDR
   [ h1: nvod, userspace ]               [ h2: nvod, userspace ]
        \\ eth0: packet socket with          / eth0
         \\      PACKET_VNET_HDR             /
         +-------- ul: bridge br0 ---------+      underlay 10.100.0.0/24, VNI 100, each of
                                                   nvod's UDP profiles with an Ethernet payload

A packet socket with the virtio-net header sees each frame with the GSO metadata the kernel
keeps with it: on c1 the frames TCP hands to eth0, on h1 the UDP GSO super-datagrams nvod sends
(a veth carries them whole), on c2 the frames nvod wrote into h2's end of the veth. Without
nvod's coalescing, c2 would see only frames of at most the tenant MTU.

The eBPF datapath does not run this code (its tc programs hand frames on inside the kernel):
the tests skip there.
"""

import json
import os
import subprocess

import pytest

import vnet_sniff
from conftest import wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {datapath: userspace}}
  - {name: h2, nvod: {datapath: userspace}}
networks: [{vni: 100, encap: ENCAP}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("NVO_LAB_DATAPATH") == "ebpf",
    reason="the eBPF datapath keeps frames in the kernel; coalescing and UDP GSO are the "
           "userspace datapath's (these tests pin datapath: userspace, so they run once)")

# Counts frames in each direction, the GSO frames among them, the largest GSO frame and its
# gso_size (vnet_sniff.py runs it).
DIRECTIONS = r"""
seen = {d: {"frames": 0, "gso": 0, "largest_gso": 0, "gso_size": 0, "gso_type": 0}
        for d in ("in", "out")}


def see(data, addr):
    flags, gso_type, hdr_len, gso_size, start, offset = struct.unpack("=BBHHHH", data[:10])
    d = seen["out" if addr[2] == socket.PACKET_OUTGOING else "in"]
    d["frames"] += 1
    if gso_type & 0x7f:
        d["gso"] += 1
        if len(data) - 10 > d["largest_gso"]:
            d.update(largest_gso=len(data) - 10, gso_size=gso_size, gso_type=gso_type & 0x7f)
"""


def sniff(lab, node, seconds):
    return vnet_sniff.start(lab, node, DIRECTIONS, seconds)


def rx_stats(lab, node):
    stats = "/sys/class/net/eth0/statistics"
    out = lab.exec(node, "cat", f"{stats}/rx_packets", f"{stats}/rx_bytes").stdout.split()
    return int(out[0]), int(out[1])


def iperf(lab, seconds):
    lab.exec("c2", "iperf3", "-s", "-D", "-1")
    wait_for(lambda: ":5201" in lab.exec("c2", "ss", "-ltn", check=False).stdout, what="iperf3 listening")
    out = lab.exec("c1", "iperf3", "-c", "10.0.0.2", "-t", str(seconds), "-J", timeout=60).stdout
    return json.loads(out)["end"]["sum_received"]["bytes"]


# nvod's UDP profiles with an Ethernet payload: each goes out in UDP GSO sends, and comes
# apart and back together the same way.
UDP_PROFILES = ["vxlan", "vxlan-gbp", "vxlan-gpe", "geneve", "overlay"]


@pytest.mark.parametrize("encap", UDP_PROFILES)
def test_a_tso_frame_leaves_one_container_and_arrives_as_a_gso_frame_in_the_other(lab_factory, encap):
    lab = lab_factory(TOPOLOGY.replace("ENCAP", encap))
    for h in ("h1", "h2"):
        assert lab.nvo(h, "node")["datapath"] == "userspace"
        offloads = lab.nvo(h, "node").get("offloads", {})
        assert offloads.get("gso") and offloads.get("gro"), offloads
    lab.ping("c1", "10.0.0.2")
    tx, wire, rx = sniff(lab, "c1", 6), sniff(lab, "h1", 6), sniff(lab, "c2", 6)
    before = rx_stats(lab, "c2")
    received = iperf(lab, 3)
    after = rx_stats(lab, "c2")
    sent, underlay, got = vnet_sniff.result(tx)["out"], vnet_sniff.result(wire)["out"], vnet_sniff.result(rx)["in"]
    mtu = int(lab.exec("c2", "cat", "/sys/class/net/eth0/mtu").stdout)
    # c1's TCP hands eth0 TSO frames of up to 64 KiB (gso_type 1: TCPV4).
    assert sent["gso_type"] == 1 and sent["largest_gso"] > 60_000, sent
    # h1's nvod sends them as UDP GSO super-datagrams (gso_type 5: UDP_L4), which the veth
    # carries whole to h2's UDP GRO socket.
    assert underlay["gso_type"] == 5 and underlay["largest_gso"] > 30_000, underlay
    # c2 receives GSO frames nvod merged: TCPV4, as large as c1's, cut at c1's MSS.
    assert got["gso_type"] == 1 and got["largest_gso"] > 60_000, got
    assert 1000 < got["gso_size"] <= mtu - 40, got
    assert got["gso"] > 0.5 * received / 65536, (got, received)
    # The veth counts what it carried: fewer, larger packets than the MTU allows.
    packets, octets = after[0] - before[0], after[1] - before[1]
    assert octets / max(packets, 1) > 4 * mtu, (packets, octets)
    # nvod counts the segments it merged one by one, as it received them: none lost, none
    # refused by the port.
    counters = lab.counters("h2")
    assert counters["drops"]["tx_error"] == 0 and counters["drops"]["queue_full"] == 0, counters["drops"]
    port_tx = sum(p["tx_frames"] for p in counters["ports"].values())
    assert port_tx >= received / 1500, (port_tx, received)
    assert port_tx <= counters["underlay"]["rx_packets"], counters


# Sends argv[1] bytes of a seeded pseudo-random stream to 10.0.0.2:7000; the receiver prints
# the SHA-256 of what it got.
SENDER = r"""
import hashlib, random, socket, sys
n = int(sys.argv[1]); rng = random.Random(16); h = hashlib.sha256()
s = socket.create_connection(("10.0.0.2", 7000), timeout=30)
left = n
while left:
    chunk = rng.randbytes(min(left, 1 << 20)); h.update(chunk); s.sendall(chunk); left -= len(chunk)
s.shutdown(socket.SHUT_WR); s.recv(1); print(h.hexdigest())
"""
RECEIVER = r"""
import hashlib, socket
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("10.0.0.2", 7000)); l.listen(1); print("ready", flush=True)
c, _ = l.accept(); c.settimeout(30); h = hashlib.sha256(); total = 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    h.update(b); total += len(b)
c.close(); print(total, h.hexdigest(), flush=True)
"""


def test_merged_frames_carry_every_byte_intact(lab_factory):
    lab = lab_factory(TOPOLOGY.replace("ENCAP", "vxlan"))
    lab.ping("c1", "10.0.0.2")
    n = 32 << 20
    recv = subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "python3", "-c", RECEIVER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert recv.stdout.readline().strip() == "ready", recv.stderr.read()
    rx = sniff(lab, "c2", 8)
    digest = lab.exec("c1", "python3", "-c", SENDER, str(n), timeout=90).stdout.strip()
    total, got = recv.communicate(timeout=60)[0].split()
    assert (int(total), got) == (n, digest)
    # The stream did go in merged frames (else this test would not test the merge).
    seen = vnet_sniff.result(rx)["in"]
    assert seen["gso"] > 0 and seen["largest_gso"] > 10_000, seen
    # No segment was merged wrongly: c2's TCP counted no checksum error.
    snmp = [line.split() for line in lab.exec("c2", "cat", "/proc/net/snmp").stdout.splitlines()
            if line.startswith("Tcp:")]
    tcp = dict(zip(snmp[0][1:], map(int, snmp[1][1:])))
    assert tcp["InCsumErrors"] == 0, tcp
