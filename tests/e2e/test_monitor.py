"""`nvo monitor` (issue 20, item 2): the live event stream of both datapaths. A VXLAN packet
for a VNI h1 does not serve, sent by scapy from h2, shows up at a monitor on h1 as a drop
with reason unknown_vni within 1 s; two containers pinging show up as learn events; a flood of
malformed packets is either all reported or reported with lost events counted, and nvod keeps
forwarding. Several listeners at once each get what their filter asks for.

      red1 10.0.0.1                 red2 10.0.0.2            VNI 100
        |                             |
   [ h1: nvod ] ◄── nvo monitor   [ h2: nvod ]   scapy / a UDP socket loop in h2's namespace
         \\ eth0 .1                   / eth0 .2     send to 10.100.0.1:4789
          +---- ul: bridge 10.100.0.0/24 ----+

Runs on both datapaths (NVO_LAB_DATAPATH=ebpf | userspace, as scripts/test.sh does).
"""

import json
import queue
import subprocess
import threading
import time

from conftest import NVO, api, wait_for

# Events a second the datapath hands to nvod (nvo_datapath::monitor::RATE).
RATE = 1_000

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

# Imports scapy (slow), says so, then sends one VXLAN packet for VNI 999 per line on stdin.
UNKNOWN_VNI = r"""
import sys
from scapy.all import IP, UDP, Ether, Raw, send
from scapy.layers.vxlan import VXLAN
inner = Ether(src="02:00:00:00:99:01", dst="ff:ff:ff:ff:ff:ff") / IP(src="10.9.9.1", dst="10.9.9.2") / UDP(sport=1111, dport=2222)
pkt = IP(dst="10.100.0.1") / UDP(sport=40000, dport=4789) / VXLAN(vni=999) / inner
print("ready", flush=True)
for line in sys.stdin:
    send(pkt, verbose=0)
    print("sent", flush=True)
"""

# N truncated VXLAN headers (malformed_vxlan) as fast as a UDP socket sends them.
FLOOD = r"""
import socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
payload = b"\x08\x00\x00"
sent = 0
for i in range(n):
    try:
        s.sendto(payload, ("10.100.0.1", 4789))
        sent += 1
    except OSError:
        pass
print(sent)
"""


class Monitor:
    """`nvo -o json monitor ARGS` on HOST's socket; each JSON line is queued with the time it
    was read."""

    def __init__(self, lab, host, *args):
        self.proc = subprocess.Popen([NVO, "--socket", str(lab.socket(host)), "-o", "json", "monitor", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.events = []
        self.times = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put((time.monotonic(), json.loads(line)))

    def wait(self, predicate, timeout, what):
        """The first (time read, event) passing `predicate`, among the events read so far or
        those arriving within `timeout` s; every event read is kept in `events`."""
        for at, ev in zip(self.times, self.events):
            if predicate(ev):
                return at, ev
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                at, ev = self.lines.get(timeout=max(0.0, left))
            except queue.Empty:
                raise AssertionError(f"no {what} within {timeout}s; got {self.events[-20:]}") from None
            self.events.append(ev)
            self.times.append(at)
            if predicate(ev):
                return at, ev

    def drain(self, quiet=1.0, limit=30.0):
        """Reads until nothing arrives for `quiet` s (or `limit` s pass)."""
        end = time.monotonic() + limit
        while time.monotonic() < end:
            try:
                at, ev = self.lines.get(timeout=quiet)
            except queue.Empty:
                return
            self.times.append(at)
            self.events.append(ev)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def started(lab, host, *args):
    """A monitor whose listener nvod has registered: its request answered (the stream is
    open) — nvo prints nothing before the first event, so wait for the process to stay up
    and give nvod a moment."""
    m = Monitor(lab, host, *args)
    time.sleep(1.0)
    assert m.proc.poll() is None, m.proc.stderr.read()
    return m


def test_unknown_vni_drop_within_a_second_and_learned_macs(lab_factory):
    lab = lab_factory(TOPOLOGY)
    sender = subprocess.Popen(["ip", "netns", "exec", lab.ns("h2"), "/usr/bin/python3", "-c", UNKNOWN_VNI],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    everything = drops = None
    try:
        assert sender.stdout.readline().strip() == "ready"
        everything = started(lab, "h1")
        drops = started(lab, "h1", "--type", "drop", "--reason", "unknown_vni")
        sent_at = time.monotonic()
        sender.stdin.write("go\n")
        sender.stdin.flush()
        assert sender.stdout.readline().strip() == "sent"
        for m in (everything, drops):
            at, ev = m.wait(lambda e: e["type"] == "drop" and e.get("reason") == "unknown_vni", 5, "unknown_vni drop")
            assert at - sent_at <= 1.0, f"the drop took {at - sent_at:.3f}s to show"
            assert ev["code"] == 9 and ev["network"] == 999, ev
            assert "vxlan vni 999" in ev["decode"] and "10.9.9.1:1111 > 10.9.9.2:2222 udp" in ev["decode"], ev
            # The datapath that forwards is the one that saw it (on ebpf: the kernel's drop()).
            assert ev["datapath"] == lab.nvo("h1", "node")["datapath"], ev

        # Learning: the FDB flushed, a ping learns red1's MAC behind its port and red2's
        # behind h2.
        api(lab, "h1", "POST", "/v1/networks/100/fdb/flush", {"scope": "learned"})
        red1, red2 = lab.mac("red1"), lab.mac("red2")
        lab.ping("red1", "10.0.0.2", count=2)
        _, local = everything.wait(lambda e: e["type"] in ("learn", "move") and e.get("mac") == red1, 5, "red1 learned")
        assert local["network"] == 100 and local["where"].startswith("port "), local
        _, remote = everything.wait(lambda e: e["type"] in ("learn", "move") and e.get("mac") == red2, 5, "red2 learned")
        assert remote["where"] == "remote 10.100.0.2", remote
        # red1's ARP request, or (its ARP cache still warm) its first echo request to a MAC
        # the flush made unknown, is flooded to h2 (on ebpf the kernel hands ARP to nvod, so
        # the pipeline may report it).
        def ping_flood(e):
            d = e.get("decode", "")
            return e["type"] == "flood" and ("arp who-has 10.0.0.2" in d or "10.0.0.1 > 10.0.0.2 icmp" in d)
        _, flood = everything.wait(ping_flood, 5, "the ping's flood")
        assert flood["network"] == 100 and flood["copies"] >= 1 and flood["port"], flood
        # A broadcast ping is flooded by the datapath that forwards: by the pipeline on the
        # userspace datapath, by the kernel's port_flood (its nvo_monitor_event record) on ebpf.
        lab.ping("red1", "10.0.0.255", count=1, check=False, extra=("-b",))
        def bcast_flood(e):
            return e["type"] == "flood" and "10.0.0.1 > 10.0.0.255 icmp" in e.get("decode", "")
        _, flood = everything.wait(bcast_flood, 5, "the broadcast ping's flood")
        assert flood["network"] == 100 and flood["copies"] == 1 and flood["port"], flood
        assert flood["datapath"] == lab.nvo("h1", "node")["datapath"], flood
        # The filtered listener saw only what it asked for.
        drops.drain(quiet=0.5, limit=3)
        assert drops.events and all(e["type"] in ("drop", "lost") for e in drops.events), drops.events
        assert all(e.get("reason") == "unknown_vni" for e in drops.events if e["type"] == "drop")
    finally:
        sender.kill()
        sender.wait()
        for m in (everything, drops):
            if m is not None:
                m.stop()


def test_a_flood_of_malformed_packets_is_reported_or_counted_lost(lab_factory):
    lab = lab_factory(TOPOLOGY)
    lab.ping("red1", "10.0.0.2", count=1)
    before = lab.counters("h1")["drops"]["malformed_vxlan"]
    m = started(lab, "h1", "--reason", "malformed_vxlan")
    try:
        t0 = time.monotonic()
        out = lab.exec("h2", "/usr/bin/python3", "-c", FLOOD, "200000", timeout=60).stdout
        assert int(out) > 100000, out
        assert time.monotonic() - t0 < 60
        # The counter settles, then the stream catches up (lost counts of the rings are told
        # each second).
        wait_for(lambda: lab.counters("h1")["drops"]["malformed_vxlan"] > before, what="malformed_vxlan drops on h1")
        m.drain(quiet=2.5, limit=40)
        dropped = lab.counters("h1")["drops"]["malformed_vxlan"] - before
        seen = sum(1 for e in m.events if e["type"] == "drop")
        lost = sum(e["count"] for e in m.events if e["type"] == "lost")
        assert all(e.get("reason") == "malformed_vxlan" for e in m.events if e["type"] == "drop")
        datapath = lab.nvo("h1", "node")["datapath"]
        assert all(e["datapath"] == datapath for e in m.events if e["type"] == "drop")
        print(f"dropped {dropped}, reported {seen}, lost {lost}: {[e for e in m.events if e['type'] == 'lost'][:5]}")
        assert seen + lost >= dropped, (dropped, seen, lost)
        assert lost > 0 or seen == dropped, (dropped, seen, lost)
        # The datapath hands on at most RATE events a second after a burst of as many
        # (nvo_datapath::monitor::RATE); the rest are counted at stage "rate". The bucket is
        # refilled from the clock the loop reads once per wake-up, the events are stamped
        # when recorded: on a loaded host a thread stalled between the two earns tokens the
        # events' span does not show (seen 1707 for a span of 0.58 s once, 23 over a 100-event
        # margin), so the margin is a quarter second's worth. No bucket, or one per worker,
        # would still be far beyond it (~10^5, or 2 x RATE x (1 + span)).
        times = [e["time_ns"] for e in m.events if e["type"] == "drop"]
        span = (max(times) - min(times)) / 1e9 if times else 0
        assert seen <= RATE * (1.25 + span) + 100, (seen, span)
        by_stage = {}
        for e in m.events:
            if e["type"] == "lost":
                by_stage[e["stage"]] = by_stage.get(e["stage"], 0) + e["count"]
        # What reached the bucket (not lost in the kernel's ring before it) beyond the rate.
        if dropped - by_stage.get("kernel", 0) > RATE * (1 + span) + 100:
            assert by_stage.get("rate", 0) > 0, by_stage
        assert m.proc.poll() is None, "the monitor's stream ended"
    finally:
        m.stop()
    # nvod is alive and forwards.
    lab.ping("red1", "10.0.0.2", count=2)
    assert lab.nvo("h1", "node")["node_id"] is not None


def test_bad_filters_are_refused(lab_factory):
    lab = lab_factory("""
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}]
networks: []
containers: []
""")
    for query, word in (("network=0", "network"), ("reason=nope", "nope"), ("type=drop,bogus", "bogus"), ("vni=1", "vni")):
        answer = api(lab, "h1", "GET", f"/v1/monitor?{query}", expect=400)
        assert word in answer["error"], answer
    p = subprocess.run([NVO, "--socket", str(lab.socket("h1")), "monitor", "--reason", "nope"],
                       capture_output=True, text=True, timeout=10)
    assert p.returncode != 0 and "nope" in p.stderr, p


def test_traces_only_when_asked_for(lab_factory):
    """`--type trace` on h1 during a ping: the echo request encapsulated to h2's address and
    the reply delivered to red1's port; a listener without a type filter gets no trace."""
    lab = lab_factory(TOPOLOGY)
    datapath = lab.nvo("h1", "node")["datapath"]
    lab.ping("red1", "10.0.0.2", count=1)  # learned both ways, ARP resolved
    traces = plain = None
    try:
        plain = started(lab, "h1")
        traces = started(lab, "h1", "--type", "trace")
        lab.ping("red1", "10.0.0.2", count=3)
        _, out = traces.wait(lambda e: e["type"] == "trace" and e.get("where") == "remote 10.100.0.2"
                             and "10.0.0.1 > 10.0.0.2 icmp" in e.get("decode", ""), 5, "the echo request's trace")
        assert out["network"] == 100 and out["len"] > 0, out
        _, back = traces.wait(lambda e: e["type"] == "trace" and e.get("where", "").startswith("port ")
                              and "10.0.0.2 > 10.0.0.1 icmp" in e.get("decode", ""), 5, "the echo reply's trace")
        assert back["network"] == 100, back
        traces.drain(quiet=0.5, limit=3)
        assert all(e["type"] in ("trace", "lost") for e in traces.events), traces.events
        # The datapath that forwards says so: on ebpf the kernel's send points record traces.
        seen = {e["datapath"] for e in traces.events if e["type"] == "trace"}
        assert datapath in seen, (datapath, seen)
        plain.drain(quiet=0.5, limit=3)
        assert not [e for e in plain.events if e["type"] == "trace"], plain.events
    finally:
        for m in (traces, plain):
            if m is not None:
                m.stop()
