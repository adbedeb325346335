"""STT done properly: big frames cross as several segments and are put back together; reassembly
survives reordering, duplication, loss and overlap; a flood of frames that never complete keeps
reassembly under its cap while good traffic flows; the kernel's TCP stack sends no RST; nvod
hands whole frames to the kernel's TCP segmentation (stt_offload = "auto"), whose segments on
the wire are STT's, and with TSO on the underlay veth the frames cross it whole.

        c1 10.30.0.1/24 (mtu 1500)          c2 10.30.0.2/24
            |                                   |
      [ h1: nvod ]  <------------------  [ h2: nvod ]    network 300, encap stt
        | eth0   nft table inet nvo_stt        | eth0     scapy in h2's namespace crafts
        |        stt_reassembly_bytes 1 MiB    |          segments from h2's address to h1
        |        stt_reassembly_timeout_s 3    |          stt_offload off: h2's nvod cuts
        |        tun nvostt0 (whole frames)    |          its frames itself (raw socket)
        +------------ ul: bridge --------------+          underlay 10.100.0.0/24 (h1 = .1, h2 = .2),
                                                          mtu 1500; tcpdump on both eth0 for RSTs

Both eth0 have TSO off, so the kernel cuts the STT frames nvod hands it before they leave, as a
NIC's TSO would on a wire; with a veth's TSO on, a frame would cross the veth whole (the last
part of test_kernel_segments_whole_frames checks that).

The tests share one lab and run in file order: the last one reads the RST captures that ran
through all of them.
"""

import json
import os
import pathlib
import re
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import NVO, BIN, Lab, kill_strays, run, wait_for

VNI = 300
CAP = 1 << 20          # h1's stt_reassembly_bytes
TIMEOUT_S = 3          # h1's stt_reassembly_timeout_s
MTU = 1500             # tenant MTU: a full-size frame takes two STT segments on a 1500 underlay
H1, H2 = "10.100.0.1", "10.100.0.2"
C1, C2 = "10.30.0.1", "10.30.0.2"
RST_FILTER = "tcp[tcpflags] & tcp-rst != 0"

TOPOLOGY = f"""
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}
hosts:
  - {{name: h1, nvod: {{stt_reassembly_bytes: {CAP}, stt_reassembly_timeout_s: {TIMEOUT_S}}}}}
  - {{name: h2, nvod: {{stt_offload: "off"}}}}
networks: [{{vni: {VNI}, encap: stt, mtu: {MTU}}}]
containers:
  - {{name: c1, host: h1, vni: {VNI}, ip: {C1}/24}}
  - {{name: c2, host: h2, vni: {VNI}, ip: {C2}/24}}
"""

# Runs in h2's namespace: crafts STT segments (scapy fills in the TCP checksum) and sends them
# to h1 on a raw socket, so they leave from h2's underlay address as nvod's own would.
INJECT = r"""
import json, socket, struct, sys, time
from scapy.all import Ether, IP, ICMP, TCP, Raw

a = json.loads(sys.argv[1])
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

def stt_frame(inner):
    # version 0, flags 0, l4 offset 0, reserved, MSS 0, VLAN TCI 0, context ID = VNI, padding
    return struct.pack("!BBBBHHQH", 0, 0, 0, 0, 0, 0, a["vni"], 0) + inner

def segment(frame_len, offset, frame_id, data, last=False):
    tcp = TCP(sport=50123, dport=7471, seq=frame_len << 16 | offset, ack=frame_id, dataofs=5,
              flags="PA" if last else "A", window=0xffff)
    return bytes(IP(src=a["src"], dst=a["dst"]) / tcp / Raw(data))

def segments(frame, frame_id, size=400):
    return [segment(len(frame), o, frame_id, frame[o:o + size], o + size >= len(frame))
            for o in range(0, len(frame), size)]

def echo(ident):
    payload = (bytes(range(256)) * 6)[:1400]
    inner = Ether(src=a["src_mac"], dst=a["dst_mac"]) / IP(src=a["src_ip"], dst=a["dst_ip"], flags="DF") \
        / ICMP(id=ident, seq=1) / Raw(payload)
    return stt_frame(bytes(inner))

def send(pkts):
    for p in pkts:
        sock.sendto(p, (a["dst"], 0))

mode = a["mode"]
if mode == "reorder":      # all segments, last first, the third one twice
    s = segments(echo(0x5101), a["id"])
    assert len(s) >= 4, len(s)
    rev = s[::-1]
    i = rev.index(s[2])
    send(rev[:i + 1] + [s[2]] + rev[i + 1:])
elif mode == "loss":       # every segment but the third
    s = segments(echo(0x5102), a["id"])
    send(s[:2] + s[3:])
elif mode == "overlap":    # the first segment, then one over its tail with other bytes
    f = echo(0x5103)
    send([segment(len(f), 0, a["id"], f[:400]), segment(len(f), 200, a["id"], b"\xee" * 400)])
elif mode == "flood":      # first segments of distinct 60000-byte frames, for a while
    head = stt_frame(bytes(Ether(src=a["src_mac"], dst=a["dst_mac"]) / IP(src=a["src_ip"], dst=a["dst_ip"])))
    data = (head + bytes(1400))[:1400]
    n, end = 0, time.monotonic() + a["seconds"]
    while time.monotonic() < end:
        send([segment(60000, 0, a["id"] + n, data)])
        n += 1
    print(n)
elif mode == "control":    # a SYN to a closed port next to STT's: the kernel must reset it
    send([bytes(IP(src=a["src"], dst=a["dst"]) / TCP(sport=40001, dport=7472, flags="S"))])
"""


@pytest.fixture(scope="module")
def stt_lab(tmp_path_factory):
    """One lab for the module, with tcpdump on both hosts' eth0 catching every TCP reset."""
    name = f"s{os.getpid() % 1000}"
    tmp = tmp_path_factory.mktemp("stt")
    path = tmp / f"{name}.yaml"
    path.write_text(f"name: {name}\n" + TOPOLOGY)
    caps = []
    try:
        run(NVO, "lab", "up", path, "--nvod", BIN / "nvod", timeout=240)
        lab = Lab(name, path)
        for h in ("h1", "h2"):
            lab.exec(h, "ethtool", "-K", "eth0", "tso", "off")
        lab.rst_pcaps = {h: tmp / f"rst-{h}.pcap" for h in ("h1", "h2")}
        lab.rst_caps = {h: lab.capture(h, p, RST_FILTER) for h, p in lab.rst_pcaps.items()}
        caps = list(lab.rst_caps.values())
        yield lab
    finally:
        for cap in caps:
            if cap.poll() is None:
                cap.kill()
                cap.wait()
        kill_strays(name)
        run(NVO, "lab", "down", name, check=False, timeout=60)
        left = [l for l in run("ip", "netns", "list").stdout.split() if l.startswith(f"nvo-{name}-")]
        assert not left, f"namespaces left behind: {left}"


def inject_cmd(lab, mode, frame_id=0, **extra):
    """The command that runs INJECT in h2's namespace: segments from h2's address to h1, inner
    frame c2 → c1."""
    args = {"mode": mode, "id": frame_id, "vni": VNI, "src": H2, "dst": H1,
            "src_mac": lab.mac("c2"), "dst_mac": lab.mac("c1"), "src_ip": C2, "dst_ip": C1, **extra}
    return ["ip", "netns", "exec", lab.ns("h2"), "/usr/bin/python3", "-c", INJECT, json.dumps(args)]


def inject(lab, mode, frame_id=0):
    return run(*inject_cmd(lab, mode, frame_id))


def stt(lab, host="h1"):
    return lab.counters(host)["stt"]


def echo_replies(lab, node):
    """Icmp OutEchoReps of NODE's namespace (/proc/net/snmp: a header line, then values)."""
    rows = [l.split() for l in lab.exec(node, "cat", "/proc/net/snmp").stdout.splitlines() if l.startswith("Icmp:")]
    return int(dict(zip(rows[0], rows[1]))["OutEchoReps"])


def nvod_pids(lab):
    pids = {}
    for host in ("h1", "h2"):
        for pid in run("ip", "netns", "pids", lab.ns(host)).stdout.split():
            if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "nvod":
                pids[host] = pid
    return pids


def test_big_frames_ping_and_iperf3(stt_lab):
    lab = stt_lab
    net = lab.nvo("h1", "network", "show", str(VNI))
    assert net["encap"] == "stt" and net["mtu"] == MTU, net
    assert lab.exec("c1", "cat", "/sys/class/net/eth0/mtu").stdout.strip() == str(MTU)
    before = {h: stt(lab, h)["frames_reassembled"] for h in ("h1", "h2")}
    # 8028-byte IP packets: five of the six fragments fill the tenant MTU, and each of those
    # frames (1514 bytes, 1532 with the STT header) takes two segments on the 1500 underlay.
    lab.ping("c1", C2, count=3, extra=("-s", "8000"))
    lab.ping("c2", C1, count=3, extra=("-s", "8000"))
    for h in ("h1", "h2"):
        assert stt(lab, h)["frames_reassembled"] >= before[h] + 6, (h, before[h], stt(lab, h))
    server = subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "iperf3", "-s", "-p", "5201"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for reverse in ((), ("-R",)):
            def client():
                p = lab.exec("c1", "iperf3", "-c", C2, "-p", "5201", "-t", "2", "-J", *reverse,
                             check=False, timeout=30)
                # iperf3 3.12 -J exits 0 even when it cannot connect, naming the error in the JSON.
                result = json.loads(p.stdout) if p.stdout.strip() else {}
                return result if p.returncode == 0 and "sum_received" in result.get("end", {}) else None
            result = wait_for(client, timeout=10, what=f"iperf3 {reverse or 'c1 → c2'} over stt")
            bps = result["end"]["sum_received"]["bits_per_second"]
            assert bps > 1e6, (reverse, bps)
    finally:
        server.kill()
        server.wait()
    counters = {h: lab.counters(h) for h in ("h1", "h2")}
    for h, c in counters.items():
        s = c["stt"]
        stt_drops = {k: v for k, v in c["drops"].items() if k.startswith("stt_") and v}
        print(f"{h}: stt {s}, stt drops {stt_drops}")
        assert s["frames_reassembled"] > before[h] + 6, (h, s)
        assert s["bad_checksum"] == 0 and s["malformed"] == 0 and s["overlaps"] == 0, (h, s)
    # h1 hands its frames whole to the kernel, h2 (stt_offload off) cuts its own.
    h1, h2 = counters["h1"]["stt"], counters["h2"]["stt"]
    assert h1["tx_frames_kernel"] > 0 and h1["tx_frames_software"] == 0, h1
    assert h2["tx_frames_software"] > 0 and h2["tx_frames_kernel"] == 0, h2


def test_reorder_duplicate_loss_and_overlap(stt_lab):
    lab = stt_lab
    lab.ping("c1", C2, count=1)  # c1 knows c2's MAC, so its replies leave at once
    s0, replies0 = stt(lab), echo_replies(lab, "c1")

    # Reversed, with one segment twice: delivered once, the copy counted as a duplicate.
    inject(lab, "reorder", frame_id=0xA5710001)
    wait_for(lambda: echo_replies(lab, "c1") == replies0 + 1, what="c1 to answer the reassembled echo request")
    s1 = stt(lab)
    assert s1["frames_reassembled"] >= s0["frames_reassembled"] + 1, (s0, s1)
    assert s1["duplicates"] == s0["duplicates"] + 1, (s0, s1)
    assert s1["in_progress"] == 0, s1

    # One segment lost: the frame waits, is never delivered, and expires after the timeout.
    inject(lab, "loss", frame_id=0xA5710002)
    sent_at = time.monotonic()
    s2 = stt(lab)
    assert s2["in_progress"] == 1 and s2["bytes_buffered"] >= 1460, s2
    s3 = wait_for(lambda: (lambda s: s if s["expired"] == s1["expired"] + 1 else None)(stt(lab)),
                  timeout=TIMEOUT_S + 5, what="the incomplete frame to expire")
    assert time.monotonic() - sent_at >= TIMEOUT_S - 1, "expired before its timeout"
    assert s3["in_progress"] == 0 and s3["bytes_buffered"] == 0, s3
    assert echo_replies(lab, "c1") == replies0 + 1

    # A segment over received bytes with other content: the whole frame goes.
    inject(lab, "overlap", frame_id=0xA5710003)
    s4 = wait_for(lambda: (lambda s: s if s["overlaps"] == s3["overlaps"] + 1 else None)(stt(lab)),
                  what="the overlap to be counted")
    assert s4["in_progress"] == 0 and s4["bytes_buffered"] == 0, s4
    assert s4["bad_checksum"] == s0["bad_checksum"] and s4["malformed"] == s0["malformed"], (s0, s4)
    assert echo_replies(lab, "c1") == replies0 + 1
    print(f"h1 stt after reorder/duplicate, loss, overlap: {s1}, {s2}, {s3}, {s4}")
    # Good traffic is unaffected.
    lab.ping("c2", C1, count=2, extra=("-s", "8000"))


def test_flood_of_incomplete_frames_stays_under_the_cap(stt_lab):
    lab = stt_lab
    pids = nvod_pids(lab)
    before = stt(lab)
    flood = subprocess.Popen(inject_cmd(lab, "flood", 0xF1000000, seconds=3),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pinger = None
    try:
        time.sleep(0.5)
        pinger = subprocess.Popen(["ip", "netns", "exec", lab.ns("c1"), "ping", "-c", "8", "-i", "0.2", "-W", "1",
                                   "-s", "3000", C2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        samples = []
        while flood.poll() is None:
            samples.append(stt(lab))
            time.sleep(0.2)
        out, err = flood.communicate(timeout=10)
        assert flood.returncode == 0, err
        ping_out, _ = pinger.communicate(timeout=20)
    finally:
        for p in (flood, pinger):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    sent = int(out.strip())
    after = stt(lab)
    samples.append(after)
    worst = max(s["bytes_buffered"] for s in samples)
    received = int(re.search(r"(\d+) received", ping_out).group(1))
    print(f"flood: {sent} frames sent, bytes_buffered at most {worst}, "
          f"evicted {after['evicted'] - before['evicted']}, ping replies during it {received}/8")
    assert sent > 2 * CAP // 60000, sent
    assert worst <= CAP, samples
    # The flood's frames are ~60000 bytes each; one of the pinger's 3000-byte frames may be half
    # reassembled beside them when a sample is taken (seen: 17 flood frames + 1532 bytes of a
    # ping, 18 in progress).
    assert max(s["in_progress"] for s in samples) <= CAP // 60000 + 1, samples
    assert after["evicted"] > before["evicted"], (before, after)
    assert received >= 4, ping_out  # good traffic kept flowing during the flood
    # And after it, with nvod as it was.
    lab.ping("c1", C2, count=3)
    lab.ping("c1", C2, count=2, extra=("-s", "8000"))
    assert nvod_pids(lab) == pids


# Runs in c2: receives one TCP connection to the end and prints how many bytes and their SHA-256.
SINK = r"""
import hashlib, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5301))
s.listen(1)
print("listening", flush=True)
c, _ = s.accept()
h, n = hashlib.sha256(), 0
while True:
    d = c.recv(1 << 16)
    if not d:
        break
    h.update(d)
    n += len(d)
print(n, h.hexdigest(), flush=True)
"""

# Runs in c1: sends SIZE pseudo-random bytes to c2's sink and prints their SHA-256.
SOURCE = r"""
import hashlib, random, socket, sys
data = random.Random(16).randbytes(int(sys.argv[2]))
c = socket.create_connection((sys.argv[1], 5301), timeout=20)
c.sendall(data)
c.close()
print(len(data), hashlib.sha256(data).hexdigest())
"""


def stt_segments(pcap, src):
    """(ip_id, ip_len, seq, ack, payload_len, first 18 payload bytes) of each STT segment from
    SRC in PCAP (classic pcap of Ethernet frames)."""
    data = pathlib.Path(pcap).read_bytes()
    endian = "<" if struct.unpack("<I", data[:4])[0] in (0xa1b2c3d4, 0xa1b23c4d) else ">"
    at, out = 24, []
    while at + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[at + 8:at + 12])[0]
        frame = data[at + 16:at + 16 + incl]
        at += 16 + incl
        if frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6 or socket.inet_ntoa(ip[12:16]) != src:
            continue
        tcp = ip[ihl:]
        if struct.unpack("!H", tcp[2:4])[0] != 7471:
            continue
        ip_len, ip_id = struct.unpack("!HH", ip[2:6])
        seq, ack = struct.unpack("!II", tcp[4:12])
        out.append((ip_id, ip_len, seq, ack, ip_len - ihl - (tcp[12] >> 4) * 4, tcp[20:38]))
    return out


def test_kernel_segments_whole_frames(stt_lab, tmp_path):
    """h1's nvod writes whole STT frames (tx_frames_kernel) and the kernel cuts them: on h1's
    eth0 every segment fits the MTU, each frame's segments tile it from offset 0 (so the STT
    header, at offset 0, is in the first only), with IPv4 IDs counting up as the kernel's GSO
    numbers them; 8 MiB cross intact. With TSO on h1's eth0, frames cross the veth whole."""
    lab = stt_lab
    h1_before, h2_before = stt(lab, "h1"), stt(lab, "h2")
    pcap = tmp_path / "h1-stt.pcap"
    # Headers only, a large buffer: the capture keeps up with more of the segments.
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns("h1"), "tcpdump", "-i", "eth0", "-s", "96", "-B", "32768",
                            "-U", "-n", "-w", str(pcap), f"tcp dst port 7471 and src host {H1}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert "listening on" in cap.stderr.readline(), "tcpdump did not start"
    sink = subprocess.Popen(["ip", "netns", "exec", lab.ns("c2"), "/usr/bin/python3", "-c", SINK],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "listening", sink.stderr.read()
        size = 8 << 20
        sent = lab.exec("c1", "/usr/bin/python3", "-c", SOURCE, C2, str(size), timeout=120).stdout.split()
        got, err = sink.communicate(timeout=60)
        assert got.split() == sent and sent[0] == str(size), (sent, got, err)
    finally:
        if sink.poll() is None:
            sink.kill()
            sink.wait()
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    h1, h2 = stt(lab, "h1"), stt(lab, "h2")
    whole = h1["tx_frames_kernel"] - h1_before["tx_frames_kernel"]
    print(f"h1 stt tx: {whole} frames whole to the kernel, "
          f"{h1['tx_frames_software'] - h1_before['tx_frames_software']} segmented by nvod; "
          f"h2 reassembled {h2['frames_reassembled'] - h2_before['frames_reassembled']}")
    assert whole > 100, (h1_before, h1)  # 8 MiB in frames of up to 64 KiB
    assert h1["tx_frames_software"] == h1_before["tx_frames_software"], (h1_before, h1)
    assert h1["tx_kernel_errors"] == 0, h1
    assert h2["frames_reassembled"] > h2_before["frames_reassembled"] + 100, (h2_before, h2)
    assert h2["bad_checksum"] == 0 and h2["malformed"] == 0, h2

    segments = stt_segments(pcap, H1)
    assert segments, "no stt segment captured"
    assert max(s[1] for s in segments) <= 1500, max(s[1] for s in segments)
    frames = {}
    for ip_id, _, seq, ack, length, head in segments:
        frames.setdefault(ack, []).append((seq & 0xffff, length, seq >> 16, ip_id, head))
    complete = largest = 0
    for ack, segs in frames.items():
        segs.sort()
        frame_len = segs[0][2]
        assert all(fl == frame_len for _, _, fl, _, _ in segs), segs
        for offset, length, _, ip_id, head in segs:
            # Cut at 1460 bytes (1500 − 20 − 20) from offset 0; only the last is shorter.
            assert offset % 1460 == 0, (ack, offset)
            assert length == min(1460, frame_len - offset), (ack, offset, length, frame_len)
            if offset == 0:
                # The STT header (version 0) with context ID = VNI, in the first segment.
                assert head[0] == 0 and int.from_bytes(head[8:16], "big") == VNI, head.hex()
        if segs[0][0] == 0 and len(segs) == -(-frame_len // 1460):
            complete += 1
            largest = max(largest, len(segs))
            ids = [i for *_, i, _ in segs]
            # The kernel's GSO numbers the segments of one frame (nvod's raw sends carry 0).
            assert ids == [(ids[0] + k) & 0xffff for k in range(len(ids))], (ack, ids)
    print(f"{len(segments)} segments captured, {len(frames)} frames, {complete} complete, "
          f"largest {largest} segments")
    assert complete >= 10 and largest >= 10, (complete, largest)

    # TSO on h1's eth0: the veth takes the GSO packets whole and h2 gets each frame in one piece
    # (c1's 8028-byte pings: 1532-byte STT frames, two segments each when cut).
    before = stt(lab, "h2")
    lab.exec("h1", "ethtool", "-K", "eth0", "tso", "on")
    try:
        lab.ping("c1", C2, count=3, extra=("-s", "8000"))
    finally:
        lab.exec("h1", "ethtool", "-K", "eth0", "tso", "off")
    after = stt(lab, "h2")
    assert after["frames_single"] >= before["frames_single"] + 18, (before, after)
    assert after["frames_reassembled"] == before["frames_reassembled"], (before, after)
    assert after["bad_checksum"] == 0, after


def test_no_rst_on_the_wire(stt_lab):
    lab = stt_lab
    lab.ping("c1", C2, count=2)
    table = lab.exec("h1", "nft", "list", "table", "inet", "nvo_stt").stdout
    # The kernel did try to reset STT segments: the guard's counter shows what it dropped.
    dropped = int(re.search(r"tcp sport 7471 .* counter packets (\d+)", table).group(1))
    assert dropped > 0, table
    # Positive control: a SYN to the closed port beside STT's gets its reset, which the capture sees.
    inject(lab, "control")
    time.sleep(0.5)
    for cap in lab.rst_caps.values():
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)

    def resets(host, expr):
        p = run("tcpdump", "-r", lab.rst_pcaps[host], "-n", expr)
        return [line for line in p.stdout.splitlines() if line.strip()]

    for host in ("h1", "h2"):
        assert resets(host, "tcp port 7471") == [], host
        assert resets(host, "not (tcp src port 7472 and tcp dst port 40001)") == [], host
    assert resets("h1", "tcp src port 7472"), "the capture did not see the control reset"
