"""The identity travels in a Geneve option (issue 18): on a `geneve` network with a policy, each
frame carries its source group in nvo's option (class 0xFFF0, type 0x01, not critical; group,
flags with A = 0x08, reserved), and the receiver decides by it. h2 has no label for h1's
addresses (web1 and batch1 are labelled by their ports on h1 only), so only the option tells it
who sends: web -> db TCP 5432 passes, batch -> db is denied, and tshark on the underlay decodes
the option. Every segment of a UDP GSO send (userspace datapath) has its own header with the
option. A `geneve` network without a policy sends no option, and does not read options: scapy,
in h1's namespace, sends h2 packets with the identity option and with an option list that does
not parse; VNI 200 delivers both, VNI 100 (with a policy) drops the broken one as
`malformed_tunnel`.

      web1 (.1 web)  batch1 (.3 batch)       db2 (.2 db)       containers of VNI 100, 10.0.0.N/24
      c1 (20.0.0.1)       |                  c2 (20.0.0.2)     VNI 200: geneve, no policy
          |    |          |                      |    |
     +---------------------------+       +-----------------+
     |          h1: nvod         |       |     h2: nvod    |   tcpdump on h2's eth0, tshark
     +-------------+-------------+       +--------+--------+   decodes the Geneve options
                   | eth0                         | eth0
                   +-------- ul: bridge ----------+            underlay 10.100.0.0/24, mtu 1500

VNI 100 has mtu 1442: the option's 8 bytes need room on a 1500-byte underlay, and nvod refuses
a policy on a geneve network whose MTU leaves none (VNI 200, at the default 1450). Runs on the
datapath NVO_LAB_DATAPATH selects; on the eBPF one the policy hands VNI 100 to nvod.

The GSO test has its own lab, pinned to the userspace datapath: c1 (web, h1) and c2 (db, h2) on
VNI 100 only, iperf3 from c1 to c2, and a PACKET_VNET_HDR socket on h1's eth0 that cuts each UDP
GSO super-datagram into its segments to read every segment's Geneve header.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

import vnet_sniff
from conftest import RUN, wait_for
from test_gso import iperf
from test_policy import connects, rule, start_server

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks:
  - {vni: 100, encap: geneve, mtu: 1442}
  - {vni: 200, encap: geneve}
containers:
  - {name: web1, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}
  - {name: batch1, host: h1, vni: 100, ip: 10.0.0.3/24, labels: {app: batch}}
  - {name: db2, host: h2, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}
  - {name: c1, host: h1, vni: 200, ip: 20.0.0.1/24}
  - {name: c2, host: h2, vni: 200, ip: 20.0.0.2/24}
"""

POLICY = """
network: 100
groups:
  - {name: web, id: 10, match: {app: web}}
  - {name: db, id: 20, match: {app: db}}
  - {name: batch, id: 30, match: {app: batch}}
rules:
  - {name: web-db, from: web, to: db, proto: tcp, ports: [5432], action: allow}
"""

# Sends argv[3] bytes through the echo server and reads them all back: full-size segments,
# which the senders batch (UDP GSO) on the underlay. Sent from a thread while the echo is read:
# neither side's buffers need to hold it all.
BULK = r"""
import socket, sys, threading
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
n = int(sys.argv[3])
threading.Thread(target=c.sendall, args=(b"x" * n,), daemon=True).start()
got = 0
while got < n:
    d = c.recv(65536)
    if not d:
        break
    got += len(d)
sys.exit(0 if got == n else 1)
"""

OPTION_CLASS, OPTION_TYPE = 0xFFF0, 0x01


def options(pcap):
    """(outer source, vni, [(class, type, data hex)]) of each Geneve packet in PCAP."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", "geneve", "-T", "fields", "-e", "ip.src",
                          "-e", "geneve.vni", "-e", "geneve.option.class", "-e", "geneve.option.type",
                          "-e", "geneve.option.unknown.data"],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        src, vni, classes, types, data = (line.split("\t") + [""] * 5)[:5]
        opts = list(zip(classes.split(",") if classes else [], types.split(",") if types else [],
                        data.split(",") if data else []))
        rows.append((src.split(",")[0], int(vni, 0),
                     [(int(c, 0), int(t, 0), d.replace(":", "")) for c, t, d in opts]))
    return rows


def test_the_receiver_decides_by_the_group_the_geneve_option_carries(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    start_server(lab, "db2")
    wait_for(lambda: connects(lab, "web1", "10.0.0.2", 5433), timeout=10, what="db2's server")

    # No room for the option on VNI 200 (mtu 1450 + 58 > 1500): refused, naming the MTU that fits.
    other = tmp_path / "other.yaml"
    other.write_text(POLICY.replace("network: 100", "network: 200"))
    p = lab.nvo("h1", "policy", "apply", str(other), check=False)
    assert p.returncode != 0 and "1442" in p.stdout + p.stderr, p.stdout + p.stderr

    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    for h in ("h1", "h2"):
        applied = lab.nvo(h, "policy", "apply", str(policy))
        assert [v["network"] for v in applied] == [100]
    if lab.nvo("h2", "node")["datapath"] == "ebpf":
        log = (RUN / lab.name / "h2.log").read_text()
        assert "network 100 does not run in the kernel" in log, log[-2000:]
        assert "an identity policy filters it and its profile is Geneve" in log, log[-2000:]
        assert lab.nvo("h2", "policy", "show", "100")["datapath"] == "nvod"

    pcap = tmp_path / "geneve.pcap"
    cap = lab.capture("h2", pcap, "udp port 6081")
    try:
        # batch1 first: h1 knows nothing of 10.0.0.2 yet, so it sends and h2 decides, by the
        # carried group (30): denied. Then web1 (10), same destination and port: allowed.
        assert not connects(lab, "batch1", "10.0.0.2", 5432)
        assert connects(lab, "web1", "10.0.0.2", 5432)
        p = lab.exec("web1", sys.executable, "-c", BULK, "10.0.0.2", "5432", "2000000", check=False, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        lab.ping("c1", "20.0.0.2", count=2)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)

    h2 = lab.nvo("h2", "policy", "show", "100")
    assert rule(h2, "web-db")["packets"] >= 1, h2
    assert h2["verdicts"]["default_denied"] >= 1, h2
    h1 = lab.nvo("h1", "policy", "show", "100")
    assert h1["verdicts"]["unknown_destination"] >= 1, h1
    assert lab.counters("h2")["drops"].get("policy_denied", 0) >= 1
    # h2 learned both sources' groups from the option alone.
    for src, group, verdict in (("10.0.0.1", "web", "allow"), ("10.0.0.3", "batch", "deny")):
        t = lab.nvo("h2", "policy", "trace", "100", "--from", src, "--to", "10.0.0.2",
                    "--proto", "tcp", "--dport", "5432")
        assert (t["verdict"], t["from_group"], t["to_group"]) == (verdict, group, "db"), t

    rows = options(pcap)
    red = [r for r in rows if r[1] == 100]
    assert red, rows
    # Every VNI 100 packet carries exactly the identity option, not critical.
    assert all([(c, t) for c, t, _ in o] == [(OPTION_CLASS, OPTION_TYPE)] for _, _, o in red), red
    groups = {(src, o[0][2][:4]) for src, _, o in red}
    assert ("10.100.0.1", "000a") in groups, groups  # web1's frames: group 10
    assert ("10.100.0.1", "001e") in groups, groups  # batch1's SYNs: group 30
    assert ("10.100.0.2", "0014") in groups, groups  # db2's replies: group 20
    # The flags byte: A only where the sender decided on its own knowledge; reserved bytes 0.
    assert all(o[0][2][4:6] in ("00", "08") and o[0][2][6:] == "00" for _, _, o in red), red
    # h2 tracked web1's flow, so its replies say it applied policy.
    assert any(src == "10.100.0.2" and o[0][2] == "00140800" for src, _, o in red), red
    # A network without a policy sends Geneve without options, as before.
    blue = [r for r in rows if r[1] == 200]
    assert blue and all(o == [] for _, _, o in blue), blue


# Sends, from an underlay host's namespace to h2, Geneve packets scapy builds around a UDP
# datagram for (vni, inner dst MAC, inner dst IP, options bytes, payload) in argv[1] (JSON).
CRAFT = r"""
import json, struct, sys
from scapy.all import IP, UDP, Ether, Raw, send
pkts = []
for vni, mac, dst, options, payload in json.loads(sys.argv[1]):
    options = bytes.fromhex(options)
    header = struct.pack("!BBHI", len(options) // 4, 0, 0x6558, vni << 8) + options
    inner = Ether(src="02:00:00:00:99:01", dst=mac) / IP(src=dst.rsplit(".", 1)[0] + ".9", dst=dst) \
        / UDP(sport=9998, dport=9999) / Raw(payload.encode())
    pkts += [IP(dst="10.100.0.2") / UDP(sport=40000, dport=6081) / Raw(header + bytes(inner))] * 5
send(pkts, verbose=0)
"""

# Prints each UDP payload received on port 9999 until two seconds pass without one.
LISTEN = r"""
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9999))
s.settimeout(2)
print("ready", flush=True)
try:
    while True:
        print(s.recv(100).decode(), flush=True)
except OSError:
    pass
"""


def test_options_where_there_is_no_policy_are_ignored_and_broken_ones_dropped_where_there_is(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    for h in ("h1", "h2"):
        lab.nvo(h, "policy", "apply", str(policy))
    lab.ping("c1", "20.0.0.2", count=1)
    # The identity option (group 10); then an option whose length runs past Opt Len.
    good, broken = "fff00101000a0000", "fff00102000a0000"
    listeners = {c: subprocess.Popen(["ip", "netns", "exec", lab.ns(c), sys.executable, "-c", LISTEN],
                                     stdout=subprocess.PIPE, text=True) for c in ("c2", "db2")}
    try:
        for p in listeners.values():
            assert p.stdout.readline().strip() == "ready"
        before = lab.counters("h2")["drops"].get("malformed_tunnel", 0)
        packets = [
            (200, lab.mac("c2"), "20.0.0.2", good, "blue-good"),
            (200, lab.mac("c2"), "20.0.0.2", broken, "blue-broken"),
            (100, lab.mac("db2"), "10.0.0.2", broken, "red-broken"),
        ]
        lab.exec("h1", "/usr/bin/python3", "-c", CRAFT, json.dumps(packets), timeout=60)
        got = {c: set(p.communicate(timeout=30)[0].split()) for c, p in listeners.items()}
    finally:
        for p in listeners.values():
            p.kill()
            p.wait()
    # VNI 200 has no policy: it does not read options, so neither packet's matters.
    assert got["c2"] == {"blue-good", "blue-broken"}, got
    # VNI 100 has one: the option list that does not parse is a counted drop.
    assert got["db2"] == set(), got
    after = lab.counters("h2")["drops"].get("malformed_tunnel", 0)
    assert after - before >= 5, (before, after)


GSO_TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {datapath: userspace}}
  - {name: h2, nvod: {datapath: userspace}}
networks: [{vni: 100, encap: geneve, mtu: 1442}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}
"""

# Cuts each outgoing UDP GSO super-datagram to port 6081 at its gso_size, as the kernel will:
# counts the super-datagrams and segments and the Geneve option bytes (class to data) each
# segment's header carries (vnet_sniff.py runs it on eth0).
GSO_SEGMENTS = r"""
seen = {"supers": 0, "segments": 0, "options": {}}


def see(data, addr):
    gso_type, gso_size = data[1] & 0x7f, struct.unpack("=H", data[4:6])[0]
    ip = data[10 + 14:]
    if addr[2] != socket.PACKET_OUTGOING or gso_type != 5 or data[22:24] != b"\x08\x00" or ip[9] != 17:
        return
    udp = ip[(ip[0] & 0x0f) * 4:]
    if struct.unpack("!H", udp[2:4])[0] != 6081:
        return
    seen["supers"] += 1
    payload = udp[8:]
    for at in range(0, len(payload), gso_size):
        segment = payload[at:at + gso_size]
        opts = segment[8:8 + (segment[0] & 0x3f) * 4].hex()
        seen["segments"] += 1
        seen["options"][opts] = seen["options"].get(opts, 0) + 1
"""


def test_every_segment_of_a_gso_send_carries_the_option(lab_factory, tmp_path):
    if os.environ.get("NVO_LAB_DATAPATH") == "ebpf":
        pytest.skip("UDP GSO sends are the userspace datapath's (this test pins it, so it runs once)")
    lab = lab_factory(GSO_TOPOLOGY)
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace("ports: [5432]", "ports: [5201]"))
    for h in ("h1", "h2"):
        lab.nvo(h, "policy", "apply", str(policy))
    lab.ping("c1", "10.0.0.2", count=1, check=False)
    sniffer = vnet_sniff.start(lab, "h1", GSO_SEGMENTS, 6)
    received = iperf(lab, 3)
    seen = vnet_sniff.result(sniffer)
    assert received > 10_000_000, received
    # h1's nvod sent c1's TCP in UDP GSO super-datagrams; each segment's own Geneve header has
    # the option with web's group (10) and the A bit (the flow is one h1 tracks).
    assert seen["supers"] > 10 and seen["segments"] > 2 * seen["supers"], seen
    assert seen["options"] == {"fff00101000a0800": seen["segments"]}, seen
    h2 = lab.nvo("h2", "policy", "show", "100")
    assert rule(h2, "web-db")["packets"] >= 1, h2
