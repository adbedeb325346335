"""Two tenants with the same IP subnet on three hosts: each reaches only its own peers.

      red1 blue1         red2 blue2         red3 blue3     containers; 10.0.0.N/24 in both tenants
        |    |             |    |             |    |       (red = VNI 100, blue = VNI 200)
     +-------------+   +-------------+   +-------------+
     | h1: nvod    |   | h2: nvod    |   | h3: nvod    |   host namespaces
     +------+------+   +------+------+   +------+------+
            | eth0            | eth0            | eth0
            +---------- ul: bridge -------------+          underlay: 10.100.0.0/24 or fd00:100::/64
"""

import pytest

TOPOLOGY = """
underlay: {{family: {family}, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts: [{{name: h1}}, {{name: h2}}, {{name: h3}}]
networks: [{{vni: 100}}, {{vni: 200}}]
containers:
  - {{name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}}
  - {{name: red3, host: h3, vni: 100, ip: 10.0.0.3/24}}
  - {{name: blue1, host: h1, vni: 200, ip: 10.0.0.1/24}}
  - {{name: blue2, host: h2, vni: 200, ip: 10.0.0.2/24}}
  - {{name: blue3, host: h3, vni: 200, ip: 10.0.0.3/24}}
"""


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_each_tenant_reaches_only_its_own_peers(lab_factory, family):
    lab = lab_factory(TOPOLOGY.format(family=family))
    for tenant in ("red", "blue"):
        for i in (2, 3):
            lab.ping(f"{tenant}1", f"10.0.0.{i}")
            # The address answered from the right tenant's container, not the other one's.
            assert lab.neigh_mac(f"{tenant}1", f"10.0.0.{i}") == lab.mac(f"{tenant}{i}"), (tenant, i)
        lab.ping(f"{tenant}3", "10.0.0.2")
    h1 = lab.counters("h1")
    for vni in ("100", "200"):
        net = h1["networks"][vni]
        assert net["encap_unicast"] > 0 and net["delivered"] > 0, net
    # Tenant traffic never crossed: each network on h1 learned only its own tenant's MACs.
    red_macs = {e["mac"] for e in lab.fdb("h1", 100)}
    blue_macs = {e["mac"] for e in lab.fdb("h1", 200)}
    assert lab.mac("red2") in red_macs and lab.mac("red2") not in blue_macs
    assert lab.mac("blue2") in blue_macs and lab.mac("blue2") not in red_macs


def test_iperf3_across_hosts(lab_factory):
    lab = lab_factory(TOPOLOGY.format(family="ipv4"))
    server = lab.exec("red2", "iperf3", "-s", "-1", "-D", "--logfile", "/dev/null")
    assert server.returncode == 0
    out = lab.exec("red1", "iperf3", "-c", "10.0.0.2", "-t", "2", "-J", "--connect-timeout", "3000", timeout=30)
    import json

    result = json.loads(out.stdout)
    bps = result["end"]["sum_received"]["bits_per_second"]
    assert bps > 1e6, f"iperf3 across the overlay moved only {bps} bit/s"
