"""Learning from ports and from tunnels as two settings (issue 17): an EVPN network set up the
way FRR users set theirs — no learning from the tunnel (`learn_tunnels: false`, the kernel
VXLAN device's `nolearning`) — still learns its containers' MACs on local ports and advertises
them as type-2 routes. Tried as a new user would: a GoBGP route reflector and an FRR VTEP.

      c1                     c3
       |                      |
   [ h1: nvod ]     [ k1: zebra+bgpd, kernel VXLAN nolearning ]
   .1   \\                   / .2
         +-- nvo-<lab>-ul: br0 --+      RR 10.100.0.250 (gobgpd), AS 65000

Runs on the datapath NVO_LAB_DATAPATH selects (ebpf or userspace); the route reflector and
VTEP helpers are test_evpn.py's and bgp_peers.py's.
"""

from bgp_peers import ASN, RR_ADDR, FrrVtep, best, has_route, nvod_routes, quiet_containers, wait_until
from conftest import api
from test_evpn import ping_until, route_reflector, start_nvods

VNI = 100
UL = {"h1": "10.100.0.1", "k1": "10.100.0.2"}
IP = {"c1": "10.0.0.1", "c3": "10.0.0.3"}

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: k1, kind: kernel, learning: false}]
networks: [{vni: 100, flood: [], learn_tunnels: false}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c3, host: k1, vni: 100, ip: 10.0.0.3/24}
"""


def test_evpn_network_without_tunnel_learning_advertises_local_macs(lab_factory):
    lab = lab_factory(TOPOLOGY)
    quiet_containers(lab, ("c1", "c3"))
    net = api(lab, "h1", "GET", f"/v1/networks/{VNI}")
    assert (net["learning"], net["learn_ports"], net["learn_tunnels"]) == (True, True, False), net
    with route_reflector("gobgp", lab, [UL["h1"], UL["k1"]]) as rr, \
            FrrVtep(lab.ns("k1"), UL["k1"], ASN, RR_ADDR, [VNI]) as vtep:
        start_nvods(lab, rr, ("h1",))
        rr.wait_established([UL["k1"]])
        wait_until(lambda: UL["h1"] in vtep.remote_vteps(VNI), what="zebra flooding to h1")
        ping_until(lab, "c1", IP["c3"])
        c1, c3 = lab.mac("c1"), lab.mac("c3")
        # Learned on h1's port, advertised: at h1, at the route reflector, installed by zebra.
        wait_until(lambda: best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c1, source="local"),
                   what="h1 advertising c1's type-2 route")
        wait_until(lambda: has_route(rr.routes(), 2, vtep=UL["h1"], mac=c1), what="GoBGP holding c1's route")
        wait_until(lambda: vtep.macs(VNI).get(c1, {}).get("remoteVtep") == UL["h1"], what="zebra installing c1")
        # c3 comes from EVPN only: nothing is learned behind a tunnel.
        wait_until(lambda: best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c3, vtep=UL["k1"]),
                   what="h1 holding c3's type-2 route from FRR")
        fdb = {e["mac"]: e for e in lab.fdb("h1", VNI)}
        assert fdb[c1]["origin"] == "learned" and fdb[c1].get("port"), fdb
        assert fdb[c3]["origin"] == "evpn" and fdb[c3].get("remote") == UL["k1"], fdb
        learned_remote = [e for e in fdb.values() if e["origin"] == "learned" and e.get("remote")]
        assert not learned_remote, fdb
        lab.ping("c3", IP["c1"], count=3)

        # A network created while BGP is configured learns from ports, not from tunnels, by
        # default; `--tunnel-learning` and the old `--no-learning` still say otherwise.
        made = lab.nvo("h1", "network", "add", "300")
        assert (made["learn_ports"], made["learn_tunnels"]) == (True, False), made
        made = lab.nvo("h1", "network", "add", "301", "--tunnel-learning")
        assert (made["learn_ports"], made["learn_tunnels"]) == (True, True), made
        made = lab.nvo("h1", "network", "add", "302", "--no-learning")
        assert (made["learning"], made["learn_ports"], made["learn_tunnels"]) == (False, False, False), made
