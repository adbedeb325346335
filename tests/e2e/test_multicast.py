"""BUM replication by an underlay multicast group: no flood lists anywhere, every VTEP joins
239.1.1.1, and broadcast and unknown frames go to the group once; the underlay bridge (snooping
off) delivers them to every host, and each host's kernel keeps them because its VTEP joined.

      red1              red2              red3              red4
        |                 |                 |                 |
   [ h1: nvod ]      [ h2: nvod ]      [ h3: nvod ]      [ k1: vxlan + bridge ]   VNI 100,
         \\ eth0          | eth0           | eth0           / eth0                group 239.1.1.1
          +--------------- ul: bridge 10.100.0.0/24 --------+                    (kernel: learning)
"""

import itertools
import signal
import subprocess
import time

from conftest import wait_for

GROUP = "239.1.1.1"
CONTAINERS = {"red1": "10.0.0.1", "red2": "10.0.0.2", "red3": "10.0.0.3", "red4": "10.0.0.4"}

TOPOLOGY = f"""
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts: [{{name: h1}}, {{name: h2}}, {{name: h3}}, {{name: k1, kind: kernel, learning: true}}]
networks: [{{vni: 100, multicast: {GROUP}}}]
containers:
  - {{name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}}
  - {{name: red3, host: h3, vni: 100, ip: 10.0.0.3/24}}
  - {{name: red4, host: k1, vni: 100, ip: 10.0.0.4/24}}
"""

# Broadcast frames red1 sends to count flooding: UDP to this port, so the capture tells them apart.
PROBE_PORT = 9999
PROBES = 5


def net_counters(lab, host, vni=100):
    return lab.counters(host)["networks"][str(vni)]


def test_flooding_by_underlay_multicast_group(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    # No IPv6 in the tenants: its router solicitations and MLD reports are flooded too, and
    # would blur the count below.
    for c in CONTAINERS:
        lab.exec(c, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
    for h in ("h1", "h2", "h3"):
        network = lab.nvo(h, "network", "show", "100")
        assert network["bum"] == {"mode": "multicast", "group": GROUP}, network
        assert network["flood"] == [], network
        assert lab.counters(h)["underlay"]["multicast_joins"] == 1
    assert f"group {GROUP}" in lab.exec("k1", "ip", "-d", "link", "show", "vx100").stdout

    # Every container reaches every other: each first ARP request crosses by the group.
    for a, b in itertools.permutations(CONTAINERS, 2):
        lab.ping(a, CONTAINERS[b], count=2)

    # A broadcast frame leaves h1 once, to the group, whatever the number of remote VTEPs.
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap)
    try:
        before = {h: net_counters(lab, h) for h in ("h1", "h2", "h3")}
        script = (
            "from scapy.all import Ether, IP, UDP, sendp\n"
            f"sendp([Ether(dst='ff:ff:ff:ff:ff:ff')/IP(src='10.0.0.1', dst='10.0.0.255')/UDP(dport={PROBE_PORT})"
            f" for _ in range({PROBES})], iface='eth0', verbose=0)\n"
        )
        lab.exec("red1", "/usr/bin/python3", "-c", script, timeout=60)
        for h in ("h2", "h3"):
            wait_for(lambda: net_counters(lab, h)["rx_underlay_frames"] >= before[h]["rx_underlay_frames"] + PROBES,
                     what=f"the broadcasts on {h}")
        after = net_counters(lab, "h1")
        time.sleep(0.5)  # for tcpdump to write the last packets
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    assert after["encap_flood"] == before["h1"]["encap_flood"] + PROBES, (before["h1"], after)

    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "ip.src", "-e", "ip.dst", "-e", "ip.ttl",
                          "-e", "vxlan.vni", "-e", "udp.dstport"], capture_output=True, text=True, check=True).stdout
    rows = [l.split("\t") for l in out.splitlines() if l.strip()]
    # Fields of both IP headers and both UDP headers come comma-separated, outer first.
    probes = [r for r in rows if r[0].startswith("10.100.0.1,") and r[4].endswith(f",{PROBE_PORT}")]
    # The counters above are exact; the capture shows the copies' shape. It may miss a packet
    # on a busy machine, but it can never hold more than one copy per frame: head-end
    # replication would show 3 per frame (h2, h3, k1), to unicast addresses.
    assert 1 <= len(probes) <= PROBES, rows
    for r in probes:
        outer_dst, outer_ttl = r[1].split(",")[0], r[2].split(",")[0]
        assert (outer_dst, r[3]) == (GROUP, "100"), r
        assert outer_ttl == "8", f"nvod's default multicast TTL: {r}"
