"""QoS policer (issue 17 item 4): a 100 Mbit/s profile attached to c1's port on h1 holds an
iperf3 TCP stream from c1 within ±10 % of the rate (with a 1 MiB burst); the frames beyond it
are dropped and counted (qos_policed, and in the profile); detached, the stream goes as fast as
before. A profile that marks DSCP 46 rewrites the inner packets' DSCP and the tunnel packets'
outer TOS follows.

    c1 10.0.0.1 ── h1: nvod (c1's port policed) ══ VXLAN ══ h2: nvod ── c2 10.0.0.2 (iperf3 -s)
                   └ eth0 ─────── ul: bridge 10.100.0.0/24 ─────── eth0 ┘

On the eBPF datapath a policed port is nvod's: the kernel program comes off its veth and nvod
reads it (as shared ports and trunks), so the same policer applies on both datapaths.
"""

import signal
import subprocess

from conftest import wait_for
from rate_lab import assert_datapath, c1_port, iperf

RATE = 100_000_000

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""


def test_a_100mbit_policer_holds_tcp_within_ten_percent(lab_factory):
    lab = lab_factory(TOPOLOGY)
    assert_datapath(lab)
    lab.ping("c1", "10.0.0.2")
    free = iperf(lab, seconds=3)
    port = c1_port(lab)
    # TCP through a policer needs a burst of several round trips of its sawtooth: measured
    # here, 64k holds one stream at 88-92 Mbit/s of goodput, 256k at 94, 1m at 95 (the frames'
    # Ethernet, IP and TCP headers are the other 5 % of the policed rate).
    lab.nvo("h1", "qos", "add", "silver", "--rate", "100mbit", "--burst", "1m")
    lab.nvo("h1", "qos", "attach", port, "silver")
    assert [p for p in lab.nvo("h1", "port", "list") if p["name"] == port][0]["qos"] == "silver"
    before = lab.counters("h1")["drops"]["qos_policed"]
    rate = iperf(lab)
    print(f"unpoliced {free / 1e6:.0f} Mbit/s, policed at 100 Mbit/s: {rate / 1e6:.1f} Mbit/s")
    assert free > 1.5 * RATE, f"the path itself carries only {free / 1e6:.0f} Mbit/s: nothing to police"
    assert 0.9 * RATE <= rate <= 1.1 * RATE, f"{rate / 1e6:.1f} Mbit/s through a 100 Mbit/s policer"
    after = lab.counters("h1")
    assert after["drops"]["qos_policed"] > before, after["drops"]
    (shown,) = lab.nvo("h1", "qos", "show")
    assert shown["attached"] == [port] and shown["policed_frames"] > 0 and shown["conformed_bytes"] > 0, shown

    # A profile in use stays; detached, the stream is free again.
    assert lab.nvo("h1", "qos", "del", "silver", check=False).returncode != 0
    lab.nvo("h1", "qos", "detach", port)
    lab.nvo("h1", "qos", "del", "silver")
    again = iperf(lab, seconds=3)
    assert again > 1.5 * RATE, f"{again / 1e6:.0f} Mbit/s after the policer went"


def test_a_marking_profile_sets_the_inner_dscp_and_the_outer_tos(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    port = c1_port(lab)
    lab.nvo("h1", "qos", "add", "gold", "--rate", "1gbit", "--burst", "256k", "--dscp", "46")
    lab.nvo("h1", "qos", "attach", port, "gold")
    pcap = tmp_path / "ul.pcap"
    cap = lab.capture("h1", pcap, "udp port 4789")
    try:
        wait_for(lambda: lab.ping("c1", "10.0.0.2", count=1, check=False).returncode == 0,
                 what="c1 → c2")
        lab.ping("c1", "10.0.0.2", count=3)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    rows = subprocess.run(["tshark", "-r", str(pcap), "-Y", "icmp.type == 8", "-T", "fields",
                           "-e", "ip.dsfield.dscp"], capture_output=True, text=True, check=True).stdout
    # Each row: outer DSCP, inner DSCP (tshark lists both IP headers' fields).
    seen = [line.split(",") for line in rows.split() if line]
    assert seen and all(v == ["46", "46"] for v in seen), seen
