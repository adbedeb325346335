"""Interop with the Linux kernel's own VXLAN device + bridge, in learning and in static
(nolearning + `bridge fdb append`) mode, on port 4789 and on the kernel's old default 8472.

      red1                          red2
        |                             |
   [ h1: nvod ]                [ k1: vxlan + bridge ]      (the kernel's VTEP)
         \\ eth0                     / eth0
          +-------- ul: bridge -----+                      underlay 10.100.0.0/24
"""

import json

import pytest

TOPOLOGY = """
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts:
  - {{name: h1, vxlan_port: {port}}}
  - {{name: k1, kind: kernel, learning: {learning}, vxlan_port: {port}}}
networks: [{{vni: 4242}}]
containers:
  - {{name: red1, host: h1, vni: 4242, ip: 10.0.0.1/24}}
  - {{name: red2, host: k1, vni: 4242, ip: 10.0.0.2/24}}
"""


def iperf(lab, server, client, addr):
    lab.exec(server, "iperf3", "-s", "-1", "-D", "--logfile", "/dev/null")
    out = lab.exec(client, "iperf3", "-c", addr, "-t", "2", "-J", "--connect-timeout", "3000", timeout=30)
    return json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]


@pytest.mark.parametrize("learning", [True, False], ids=["learning", "static"])
@pytest.mark.parametrize("port", [4789, 8472])
def test_kernel_vtep_both_ways(lab_factory, learning, port):
    lab = lab_factory(TOPOLOGY.format(port=port, learning=str(learning).lower()))
    lab.ping("red1", "10.0.0.2")
    lab.ping("red2", "10.0.0.1")
    assert iperf(lab, "red2", "red1", "10.0.0.2") > 1e6
    assert iperf(lab, "red1", "red2", "10.0.0.1") > 1e6
    # nvod learned the kernel-side MAC behind the kernel VTEP's address.
    remotes = {e["mac"]: e.get("remote") for e in lab.fdb("h1", 4242)}
    # k1 is the second host: underlay address .2 (nvo lab's address plan).
    assert remotes.get(lab.mac("red2")) == "10.100.0.2", remotes


def test_path_mtu(lab_factory):
    """Tenant MTU is the underlay's minus 50. A DF packet too big for it is refused with the MTU;
    a big packet without DF is fragmented by the sender and arrives."""
    lab = lab_factory(TOPOLOGY.format(port=4789, learning="true"))
    lab.ping("red1", "10.0.0.2")
    # Fits: 1422 + 28 = 1450.
    lab.ping("red1", "10.0.0.2", count=2, extra=("-M", "do", "-s", "1422"))
    # 1600 with DF: the sender learns it cannot (PMTU discovery), nothing is silently lost.
    p = lab.ping("red1", "10.0.0.2", count=2, check=False, extra=("-M", "do", "-s", "1600"))
    assert p.returncode != 0 and "1450" in (p.stdout + p.stderr), p.stdout + p.stderr
    # 1600 and 3200 without DF: fragmented at the sender, reassembled at the receiver.
    lab.ping("red1", "10.0.0.2", count=2, extra=("-s", "1600"))
    lab.ping("red1", "10.0.0.2", count=2, extra=("-s", "3200"))


def test_oversized_frame_gets_fragmentation_needed(lab_factory):
    """A container whose MTU is wrong (1500 on a 1450 network) sends a DF frame nvod cannot
    carry: nvod answers ICMP fragmentation-needed with MTU 1450, and the sender's kernel then
    knows the path MTU."""
    lab = lab_factory(TOPOLOGY.format(port=4789, learning="true"))
    # Both ends of the veth: a veth drops frames larger than its peer's MTU before nvod sees them.
    (port,) = [p["name"] for p in lab.nvo("h1", "port", "list")]
    lab.exec("h1", "ip", "link", "set", port, "mtu", "1500")
    lab.exec("red1", "ip", "link", "set", "eth0", "mtu", "1500")
    lab.ping("red1", "10.0.0.2")
    before = lab.counters("h1")["drops"]["too_big"]
    p = lab.ping("red1", "10.0.0.2", count=3, check=False, extra=("-M", "do", "-s", "1472"))
    assert p.returncode != 0
    assert lab.counters("h1")["drops"]["too_big"] > before
    route = lab.exec("red1", "ip", "route", "get", "10.0.0.2").stdout
    assert "mtu 1450" in route, route
