"""Flow-table meters (issue 17 item 3): meter 1 at 100 Mbit/s on a rule matching c1's TCP
traffic holds an iperf3 stream from c1 within ±10 % of the rate, while ping (ICMP, which the
rule does not match) at the same time loses nothing; the frames over the rate are dropped and
counted on the meter and as qos_policed. Four streams (spread over h1's two workers by
PACKET_FANOUT's hash were the port not read by one worker) together stay within the rate too:
one bucket, not one per worker. The meter cannot go while the rule names it; once the rule is
gone, the stream is free again. A meter added with `ovs-ofctl add-meter` over h1's OpenFlow
listener is nvod's meter, and a rule added with ovs-ofctl names it.

    c1 10.0.0.1 ── h1: nvod (rule tcp → meter:1,normal on c1's port) ══ VXLAN ══ h2: nvod ── c2 10.0.0.2
                   └ eth0 ───────────── ul: bridge 10.100.0.0/24 ───────────────── eth0 ┘

h1's nvod runs two workers: the port a metered rule covers is read by worker 0 alone, so the
meter is one bucket. On the eBPF datapath that port is nvod's (a port a flow
rule covers is handed over), so the same meter applies on both datapaths.
"""

import shutil
import subprocess

import pytest

from rate_lab import assert_datapath, c1_port, iperf

RATE = 100_000_000

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1, nvod: {workers: 2, openflow_listen: "127.0.0.1:6653"}}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""


def test_a_100mbit_meter_holds_tcp_and_leaves_ping_alone(lab_factory):
    lab = lab_factory(TOPOLOGY)
    assert_datapath(lab)
    lab.ping("c1", "10.0.0.2")
    free = iperf(lab, seconds=3)
    assert free > 1.5 * RATE, f"the path itself carries only {free / 1e6:.0f} Mbit/s: nothing to meter"
    port = c1_port(lab)

    refused = lab.nvo("h1", "flow", "add", port, "priority=100,tcp,actions=meter:1,normal", check=False)
    assert refused.returncode != 0 and "no meter 1" in refused.stderr, refused.stderr
    # The burst as test_qos.py's policer: TCP needs several round trips of its sawtooth.
    lab.nvo("h1", "meter", "add", "1", "--rate", "100mbit", "--burst", "1m")
    lab.nvo("h1", "flow", "add", port, "priority=100,tcp,actions=meter:1,normal")
    before = lab.counters("h1")["drops"]["qos_policed"]

    ping = subprocess.Popen(["ip", "netns", "exec", lab.ns("c1"), "ping", "-c", "25", "-i", "0.2",
                             "-W", "2", "10.0.0.2"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        rate = iperf(lab)
    finally:
        pinged = ping.communicate(timeout=30)[0]
    print(f"unmetered {free / 1e6:.0f} Mbit/s, metered at 100 Mbit/s: {rate / 1e6:.1f} Mbit/s")
    assert 0.9 * RATE <= rate <= 1.1 * RATE, f"{rate / 1e6:.1f} Mbit/s through a 100 Mbit/s meter"
    assert ping.returncode == 0 and " 0% packet loss" in pinged, pinged

    after = lab.counters("h1")
    assert after["drops"]["qos_policed"] > before, after["drops"]
    (shown,) = lab.nvo("h1", "meter", "show")
    assert shown["id"] == 1 and shown["rules"] == 1, shown
    assert shown["dropped_frames"] > 0 and shown["passed_bytes"] > 0, shown
    # The meter saw TCP only: what passed is about what iperf3 carried, not more.
    assert shown["passed_bytes"] * 8 < 1.5 * RATE * 7, shown

    # Four streams: one bucket for all, whichever worker their hash would pick.
    four = iperf(lab, streams=4)
    print(f"four streams through the meter: {four / 1e6:.1f} Mbit/s")
    assert 0.8 * RATE <= four <= 1.1 * RATE, f"{four / 1e6:.1f} Mbit/s of four streams through a 100 Mbit/s meter"

    # In use it stays; the rule gone, it goes and the stream is free again.
    refused = lab.nvo("h1", "meter", "del", "1", check=False)
    assert refused.returncode != 0 and "used by 1 flow rule" in refused.stderr, refused.stderr
    lab.nvo("h1", "flow", "del", port)
    lab.nvo("h1", "meter", "del", "1")
    assert lab.nvo("h1", "meter", "show") == []
    again = iperf(lab, seconds=3)
    assert again > 1.5 * RATE, f"{again / 1e6:.0f} Mbit/s after the meter went"


@pytest.mark.skipif(shutil.which("ovs-ofctl") is None,
                    reason="ovs-ofctl is not installed (openvswitch-common)")
def test_ovs_ofctl_adds_a_meter_and_a_rule_naming_it(lab_factory):
    lab = lab_factory(TOPOLOGY)
    port = c1_port(lab)
    # OpenFlow port numbers are nvod's port ids.
    number = lab.nvo("h1", "trace", port, "ip")["port_id"]

    def ofctl(command, *args, check=True):
        """ovs-ofctl COMMAND against h1's listener (inside h1, where it listens), ARGS after."""
        return lab.exec("h1", "ovs-ofctl", "-O", "OpenFlow13", command, "tcp:127.0.0.1:6653", *args,
                        check=check, timeout=30)

    missing = ofctl("add-flow", f"priority=100,in_port={number},tcp,actions=meter:2,normal", check=False)
    assert missing.returncode != 0 and "OFPMMFC_UNKNOWN_METER" in missing.stderr, missing.stderr
    ofctl("add-meter", "meter=2,kbps,band=type=drop,rate=100000")
    (shown,) = lab.nvo("h1", "meter", "show")
    # No burst given: 100 ms of the rate.
    assert (shown["id"], shown["rate"], shown["burst"]) == (2, 100_000_000, 1_250_000), shown
    again = ofctl("add-meter", "meter=2,kbps,band=type=drop,rate=100000", check=False)
    assert again.returncode != 0 and "OFPMMFC_METER_EXISTS" in again.stderr, again.stderr
    ofctl("add-flow", f"priority=100,in_port={number},tcp,actions=meter:2,normal")
    assert "meter:2" in ofctl("dump-flows").stdout
    (shown,) = lab.nvo("h1", "meter", "show")
    assert shown["rules"] == 1, shown
    busy = ofctl("del-meter", "meter=2", check=False)
    assert busy.returncode != 0, busy.stderr
    ofctl("del-flows")
    ofctl("del-meter", "meter=2")
    assert lab.nvo("h1", "meter", "show") == []

