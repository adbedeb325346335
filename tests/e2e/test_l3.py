"""L3 networks: tunnels that carry the containers' IPv4 packets, not Ethernet frames.

 1. VXLAN-GPE with Next Protocol IPv4 against the Linux kernel's own `external gpe` device:

      c1 (10.0.0.1)                          10.0.0.2 on h2's lo
         |                                          |
   [ h1: nvod, network 100, l3 ]          [ h2: kernel, vxg: vxlan external gpe ]
   route 10.0.0.2/32 → 10.100.0.2         route 10.0.0.1/32 encap ip id 100 dst 10.100.0.1
         \\ eth0 ---------- ul: bridge ---------- eth0 /

 2. IP-in-IP (protocol 4) between two nvods, iperf3 across it.

 nvod answers c1's ARP requests with the network's gateway MAC and routes the IP packet by
 prefix into the tunnel; a packet out of the tunnel goes to the container that announced the
 destination address, behind a rebuilt Ethernet header.
"""

import json
import signal
import subprocess

from conftest import api, wait_for

GPE_TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2, kind: kernel}]
networks: [{vni: 100, encap: vxlan-gpe, l3: true, flood: []}]
containers: [{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}]
"""

IPIP_TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 300, encap: ipip, flood: []}]
containers:
  - {name: c1, host: h1, vni: 300, ip: 10.3.0.1/24}
  - {name: c2, host: h2, vni: 300, ip: 10.3.0.2/24}
"""


def fields(pcap, *names, extra=()):
    args = ["tshark", "-r", str(pcap), *extra, "-T", "fields"]
    for n in names:
        args += ["-e", n]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [l.split("\t") for l in out.splitlines() if l.strip()]


def iperf3(lab, server, client, addr):
    """Bits per second of a 2 s iperf3 run from CLIENT to SERVER's ADDR."""
    srv = subprocess.Popen(["ip", "netns", "exec", lab.ns(server), "iperf3", "-s", "-1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def run():
            p = lab.exec(client, "iperf3", "-c", addr, "-t", "2", "-J", check=False, timeout=30)
            try:
                return json.loads(p.stdout)["end"]["sum_received"]
            except (ValueError, KeyError):
                return None
        return wait_for(run, timeout=10, what=f"iperf3 to {addr}")["bits_per_second"]
    finally:
        srv.kill()
        srv.wait()


def test_vxlan_gpe_ipv4_with_the_kernel(lab_factory, tmp_path):
    lab = lab_factory(GPE_TOPOLOGY)
    net = api(lab, "h1", "GET", "/v1/networks/100")
    assert net["l3"] and net["encap"] == "vxlan-gpe", net
    api(lab, "h1", "POST", "/v1/networks/100/routes", {"prefix": "10.0.0.2/32", "remote": "10.100.0.2"})
    for cmd in ("ip link add vxg type vxlan dstport 4790 external gpe",
                "ip link set vxg up",
                "ip addr add 10.0.0.2/32 dev lo",
                "ip route add 10.0.0.1/32 encap ip id 100 dst 10.100.0.1 dev vxg"):
        lab.exec("h2", *cmd.split())
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "udp port 4790")
    try:
        wait_for(lambda: lab.ping("c1", "10.0.0.2", count=1, check=False).returncode == 0,
                 timeout=15, what="c1 → the kernel's 10.0.0.2 over VXLAN-GPE")
        lab.ping("c1", "10.0.0.2", count=3)
        lab.ping("h2", "10.0.0.1", count=3, extra=("-I", "10.0.0.2"))
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    # c1 talks to its gateway: the neighbour it resolved is nvod's gateway MAC.
    assert lab.neigh_mac("c1", "10.0.0.2") == net["gateway_mac"]
    rows = fields(pcap, "ip.src", "vxlan.vni", "vxlan.next_proto", "icmp.type")
    assert rows, "no VXLAN-GPE packet captured"
    assert all(r[1] == "100" and r[2] == "1" for r in rows), rows  # next protocol IPv4
    senders = {r[0].split(",")[0] for r in rows}
    assert senders == {"10.100.0.1", "10.100.0.2"}, senders
    counters = lab.counters("h1")
    assert counters["networks"]["100"]["arp_replies"] >= 1
    for reason in ("malformed_tunnel", "profile_mismatch", "unknown_vni"):
        assert counters["drops"][reason] == 0, (reason, counters["drops"])


def test_ipip_between_two_nvods(lab_factory, tmp_path):
    lab = lab_factory(IPIP_TOPOLOGY)
    assert api(lab, "h1", "GET", "/v1/networks/300")["l3"] is True  # ipip is L3 by default
    api(lab, "h1", "POST", "/v1/networks/300/routes", {"prefix": "10.3.0.2/32", "remote": "10.100.0.2"})
    api(lab, "h2", "POST", "/v1/networks/300/routes", {"prefix": "10.3.0.0/24", "remote": "10.100.0.1"})
    routes = api(lab, "h2", "GET", "/v1/networks/300/routes")
    assert routes == [{"prefix": "10.3.0.0/24", "remote": "10.100.0.1"}], routes
    pcap = tmp_path / "h1.pcap"
    cap = lab.capture("h1", pcap, "ip proto 4")
    try:
        wait_for(lambda: lab.ping("c1", "10.3.0.2", count=1, check=False).returncode == 0,
                 timeout=15, what="c1 → c2 over IP-in-IP")
        lab.ping("c2", "10.3.0.1", count=3)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    rows = fields(pcap, "ip.src", "ip.proto", "icmp.type")
    assert rows and all(r[1].split(",")[0] == "4" for r in rows), rows
    assert any("8" in r[2].split(",") for r in rows), rows
    assert iperf3(lab, "c2", "c1", "10.3.0.2") > 1e6
