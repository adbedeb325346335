"""The flow table's tunnel output (issue 17): a rule on h1 steers c1's UDP to 10.91.0.3 into
network 200 at h2 (`set_tunnel:200,set_field:<h2>->tun_dst,output:tunnel`), which normal
forwarding would keep in c1's network 100. tcpdump on h1's underlay sees VNI 200 to h2, c3
(network 200 on h2) receives the datagrams, the rule counts them; c2 (network 100) still
gets c1's other traffic. On the eBPF datapath c1's port is nvod's while the rule covers it
(the hand-over), so the tunnel packets leave through nvod's underlay socket on both datapaths.

Run over an IPv4 and an IPv6 underlay (tun_dst of the underlay's family).

    c1 10.91.0.1 (vni 100)           c2 10.91.0.2 (vni 100)   c3 10.91.0.3 (vni 200)
      | eth0                           | eth0                   | eth0
    [ h1: nvod, networks 100, 200,   [ h2: nvod, networks 100, 200 ]
      OpenFlow on 127.0.0.1:6653 ]
      | eth0                           | eth0
      +------ ul: bridge, 10.100.0.0/24 or fd00:100::/64 ------+

c1 and c3 share a subnet but not a network: c1 is given c3's MAC as a static neighbour, so
its datagrams to 10.91.0.3 carry c3's MAC and need no rewrite to be taken by c3 (without the
rule they are flooded in network 100 and reach no one who takes them). h1 has no container in
network 200, so the lab leaves it out of h2's flood list for 200, and h2 would drop its
packets as unknown_remote (the VTEP guard): h2's operator adds h1 to it, as for any VTEP
that sends into the network.
"""

import signal
import subprocess
import time

import pytest

from conftest import RUN, wait_for
from rate_lab import assert_datapath, c1_port
from test_flows import OF, n_packets, needs_ovs, ofctl

UNDERLAY = {
    "ipv4": "underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}",
    "ipv6": 'underlay: {family: ipv6, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}',
}

TOPOLOGY = """
hosts: [{name: h1, nvod: {openflow_listen: "127.0.0.1:6653"}}, {name: h2}]
networks: [{vni: 100}, {vni: 200}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.91.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.91.0.2/24}
  - {name: c3, host: h2, vni: 200, ip: 10.91.0.3/24}
"""

PORT = 7777

# Prints every datagram received on PORT for SECONDS, one per line.
RECV = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.settimeout(0.2)
ends = time.time() + float(sys.argv[2])
while time.time() < ends:
    try:
        print(s.recv(64).decode(), flush=True)
    except OSError:
        pass
"""

# Sends COUNT datagrams "TAG-i" to ADDR:PORT, 50 ms apart.
SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[4])):
    s.sendto(f"{sys.argv[3]}-{i}".encode(), (sys.argv[1], int(sys.argv[2])))
    time.sleep(0.05)
"""


def received(lab, receiver, addr, tag, count=20):
    """Sends COUNT datagrams from c1 to ADDR; the ones RECEIVER got."""
    rx = subprocess.Popen(["ip", "netns", "exec", lab.ns(receiver), "/usr/bin/python3", "-c", RECV,
                           str(PORT), "4"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        lab.exec("c1", "/usr/bin/python3", "-c", SEND, addr, str(PORT), tag, str(count), timeout=30)
        out, _ = rx.communicate(timeout=15)
    finally:
        rx.kill()
        rx.wait()
    return [l for l in out.splitlines() if l.startswith(tag)]


def vnis_on_wire(pcap, family):
    """(outer src, outer dst, vni, inner IPv4 dst) of every VXLAN packet in PCAP."""
    # With an IPv4 underlay ip.src/ip.dst list the outer address, then the inner one.
    fields = ["ip.src", "ip.dst"] if family == "ipv4" else ["ipv6.src", "ipv6.dst", "ip.dst"]
    args = ["tshark", "-r", str(pcap), "-Y", "vxlan", "-T", "fields", "-e", "vxlan.vni"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        vni, src, dst, *inner = line.split("\t")
        inner = (inner or [dst])[0]
        rows.append((src.split(",")[0], dst.split(",")[0], int(vni), inner.split(",")[-1]))
    return rows


def encap_lab(lab_factory, family="ipv4"):
    lab = lab_factory(UNDERLAY[family] + TOPOLOGY)
    assert_datapath(lab)
    assert {n["vni"] for n in lab.nvo("h1", "network", "list")} >= {100, 200}
    lab.ping("c1", "10.91.0.2")
    lab.nvo("h2", "flood", "add", "200", lab.nvo("h1", "node")["locator"])
    lab.exec("c1", "ip", "neigh", "replace", "10.91.0.3", "lladdr", lab.mac("c3"), "dev", "eth0")
    return lab


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_a_rule_steers_c1_into_network_200_at_h2(lab_factory, tmp_path, family):
    lab = encap_lab(lab_factory, family)
    port = c1_port(lab)
    h1, h2 = (lab.nvo(h, "node")["locator"] for h in ("h1", "h2"))
    # Without a rule, network 100 keeps c1's datagrams to c3 (which is in network 200).
    assert received(lab, "c3", "10.91.0.3", "before") == []

    lab.nvo("h1", "flow", "add", port,
            f"priority=100,udp,nw_dst=10.91.0.3,actions=set_tunnel:200,set_field:{h2}->tun_dst,"
            "output:tunnel")
    shown = lab.nvo("h1", "flow", "show", port)["flows"][0]["flow"]
    field = "tun_dst" if family == "ipv4" else "tun_ipv6_dst"   # as ovs-ofctl names them
    assert "output:tunnel" in shown and f"set_field:{h2}->{field}" in shown, shown
    trace = lab.nvo("h1", "trace", port, "udp,nw_dst=10.91.0.3")
    assert trace["result"] == f"tunnel: remote {h2}, vni 200", trace

    pcap = tmp_path / "ul.pcap"
    cap = lab.capture("h1", pcap)
    try:
        got = received(lab, "c3", "10.91.0.3", "steered")
        # c1's other traffic stays in network 100.
        lab.ping("c1", "10.91.0.2")
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    assert len(got) >= 18, f"c3 received {len(got)} of 20 steered datagrams: {got}"
    wire = vnis_on_wire(pcap, family)
    steered = [r for r in wire if r[3] == "10.91.0.3"]
    assert len(steered) >= 18 and all(r[:3] == (h1, h2, 200) for r in steered), wire
    assert any(r[2] == 100 and r[3] == "10.91.0.2" for r in wire), wire
    assert n_packets(lab.nvo("h1", "flow", "show"), "nw_dst=10.91.0.3") >= 18
    if lab.nvo("h1", "node")["datapath"] == "ebpf" and family == "ipv4":
        # The kernel path handed c1's port to nvod: nvod encapsulated (the hand-over). Over
        # an IPv6 underlay the kernel path runs no network at all (IPv4 outer headers only).
        log = (RUN / lab.name / "h1.log").read_text()
        assert f"port {port}: flow rules cover it: nvod reads it" in log, log[-2000:]
    nets = lab.counters("h1")["networks"]
    net200 = nets["200"] if "200" in nets else nets[200]
    assert net200["encap_unicast"] >= 18, nets

    # Two outputs: c1's datagrams to 10.91.0.3 also go into network 100 as normal forwarding
    # sends them (flooded to c2's host; no one takes them there), and still reach c3.
    lab.nvo("h1", "flow", "add", port,
            f"priority=100,udp,nw_dst=10.91.0.3,actions=normal,set_tunnel:200,"
            f"set_field:{h2}->tun_dst,output:tunnel")
    assert len(received(lab, "c3", "10.91.0.3", "both")) >= 18

    # Bad rules: clear errors, nothing installed.
    other = "2001:db8::2" if family == "ipv4" else "192.0.2.2"
    for bad, want in [
        ("udp,actions=set_tunnel:200,output:tunnel", "tun_dst before it"),
        (f"udp,actions=set_field:{other}->tun_dst,output:tunnel", "address family"),
        (f"udp,actions=set_tunnel:300,set_field:{h2}->tun_dst,output:tunnel", "no L2 network with VNI 300"),
        (f"udp,actions=set_tunnel:0x1000000,set_field:{h2}->tun_dst,output:tunnel", "24 bits"),
    ]:
        p = lab.nvo("h1", "flow", "add", port, bad, check=False)
        assert p.returncode == 1 and want in p.stderr, (bad, p.stderr)
    assert lab.nvo("h1", "flow", "show")["rules"] == 1

    # Deleting the rule ends the steering.
    lab.nvo("h1", "flow", "del", port, "udp,nw_dst=10.91.0.3")
    wait_for(lambda: received(lab, "c3", "10.91.0.3", "after", count=5) == [], timeout=20,
             what="the steering to stop")


@needs_ovs
def test_ovs_ofctl_adds_and_dumps_the_tunnel_rule(lab_factory):
    lab = encap_lab(lab_factory)
    port_id = lab.nvo("h1", "trace", c1_port(lab), "ip")["port_id"]
    h2 = lab.nvo("h2", "node")["locator"]
    ofctl(lab, "add-flow", OF, f"priority=300,in_port={port_id},udp,nw_dst=10.91.0.3,"
          f"actions=set_field:0xc8->tun_id,set_field:{h2}->tun_dst,output:65279")
    got = received(lab, "c3", "10.91.0.3", "of")
    assert len(got) >= 18, got
    dump = [l for l in ofctl(lab, "dump-flows", OF).stdout.splitlines() if "priority=300" in l]
    assert len(dump) == 1, dump
    assert f"actions=set_field:0xc8->tun_id,set_field:{h2}->tun_dst,output:65279" in dump[0], dump
    assert int(dump[0].split("n_packets=")[1].split(",")[0]) >= 18, dump
    # A tun_dst of the other family: refused by nvod with an OpenFlow error.
    p = ofctl(lab, "add-flow", OF, f"priority=301,in_port={port_id},actions="
              "set_field:2001:db8::2->tun_ipv6_dst,output:65279", check=False)
    assert p.returncode != 0 and "OFPBAC_BAD_SET_ARGUMENT" in p.stderr, p.stderr
    assert len([l for l in ofctl(lab, "dump-flows", OF).stdout.splitlines() if "actions=" in l]) == 1
