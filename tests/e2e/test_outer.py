"""Outer IP header values: fixed per node, or inherited from each inner packet.

      red1 (ping -Q 0xb8 -t 17)          red2
        |                                  |
   [ h1: nvod, outer_tos and outer_ttl  [ h2: nvod, outer_ttl 9,
         "inherit" ]                          outer_tos 0x20 (fixed) ]
         \\ eth0 ------ ul: bridge ------ eth0 /      tcpdump on h1's eth0, tshark reads the
                                                     outer header of each VXLAN packet
"""

import signal
import subprocess

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {outer_tos: inherit, outer_ttl: inherit}}
  - {name: h2, nvod: {outer_ttl: 9, outer_tos: 32}}
networks: [{vni: 100}, {vni: 107, encap: stt}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
  - {name: s1, host: h1, vni: 107, ip: 10.7.0.1/24}
  - {name: s2, host: h2, vni: 107, ip: 10.7.0.2/24}
"""


def outer_rows(pcap, extra=()):
    out = subprocess.run(["tshark", "-r", str(pcap), *extra, "-T", "fields", "-e", "ip.src", "-e", "ip.dsfield",
                          "-e", "ip.ttl", "-e", "icmp.type"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        src, ds, ttl, icmp = (line.split("\t") + ["", "", "", ""])[:4]
        # Every field lists the outer header first, then the inner one.
        rows.append((src.split(",")[0], int(ds.split(",")[0], 0), int(ttl.split(",")[0]), icmp))
    return rows


def test_inherited_and_fixed_outer_values(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    lab.ping("red1", "10.0.0.2", count=1)
    lab.ping("s1", "10.7.0.2", count=1)
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "udp port 4789 or tcp port 7471")
    try:
        lab.ping("red1", "10.0.0.2", count=3, extra=("-Q", "0xb8", "-t", "17"))
        lab.ping("s1", "10.7.0.2", count=3, extra=("-Q", "0x2e", "-t", "23"))
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    rows = outer_rows(pcap, ("-Y", "udp.dstport == 4789 and icmp"))
    requests = [r for r in rows if r[0] == "10.100.0.1" and r[3].split(",")[0] == "8"]
    replies = [r for r in rows if r[0] == "10.100.0.2" and r[3].split(",")[0] == "0"]
    assert len(requests) >= 3 and len(replies) >= 3, rows
    # h1 copies the inner TOS (DSCP EF = 0xb8) and TTL (17) into the outer header.
    assert all((ds, ttl) == (0xb8, 17) for _, ds, ttl, _ in requests), requests
    # h2 uses its fixed values, whatever the inner packet says.
    assert all((ds, ttl) == (0x20, 9) for _, ds, ttl, _ in replies), replies
    # STT inherits the same way: every segment of h1's frames.
    stt = outer_rows(pcap, ("-o", "ip.try_heuristic_first:TRUE", "-Y",
                            "stt and ip.src == 10.100.0.1 and icmp.type == 8"))
    assert len(stt) >= 3 and all((ds, ttl) == (0x2e, 23) for _, ds, ttl, _ in stt), stt
