"""Identities in EVPN routes (issue 18, item 2): on a network whose profile has no field for
the group (plain VXLAN), the receiver takes a source's identity from the EVPN route that
advertises it — the Group Policy ID extended community (type 0x03, sub-type 0x17,
draft-wlin-bess-group-policy-id-extended-community) on the sender's MAC/IP routes, reflected
unchanged by a GoBGP route reflector.

      web1 10.0.0.1 (app=web)  batch1 10.0.0.3 (app=batch)      db2 10.0.0.2 (app=db)
              \\                    /                                |
              [ h1: nvod ] ---------- ul: bridge ----------- [ h2: nvod ]
                  .1                 RR .250 (gobgpd)                .2

Policy (both hosts): web -> db TCP 5432 allowed, everything else to db denied. h2 labels no
remote address: web1's packets (no group on the wire) pass only because h1's route for
10.0.0.1 carries group 10; batch1's (group 30) are denied; relabelled, web1's route carries
the new group and its next connection is denied. Runs on the datapath NVO_LAB_DATAPATH selects
(the policy hands the network to nvod on the eBPF one).
"""

from bgp_peers import ASN, RR_ADDR, nvod_routes, quiet_containers, wait_until
from conftest import wait_for
from test_evpn import route_reflector, start_nvods
from test_policy import connects, rule, start_server
from test_policy_geneve import POLICY  # network 100: web 10, db 20, batch 30; web -> db tcp 5432

VNI = 100
UL = {"h1": "10.100.0.1", "h2": "10.100.0.2"}

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: web1, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}
  - {name: batch1, host: h1, vni: 100, ip: 10.0.0.3/24, labels: {app: batch}}
  - {name: db2, host: h2, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}
"""


def route_group(lab, host, ip):
    """The group h's best type-2 route for IP carries (0: none, None: no such route)."""
    for r in nvod_routes(lab, host, vni=VNI, rtype=2):
        if r.get("ip") == ip and r["best"]:
            return r.get("group", 0)
    return None


def trace(lab, src):
    return lab.nvo("h2", "policy", "trace", str(VNI), "--from", src, "--to", "10.0.0.2",
                   "--proto", "tcp", "--dport", "5432")


def test_the_group_in_an_evpn_route_is_the_source_identity_at_the_receiver(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    quiet_containers(lab, ("web1", "batch1", "db2"))
    with route_reflector("gobgp", lab, list(UL.values())) as rr:
        start_nvods(lab, rr, ("h1", "h2"))
        start_server(lab, "db2")
        # Open before any policy: the hosts snoop each container's ARP, so MAC/IP routes go out.
        for c in ("web1", "batch1"):
            wait_for(lambda c=c: connects(lab, c, "10.0.0.2", 5433), timeout=20, what=f"{c} to db2")
        policy = tmp_path / "policy.yaml"
        policy.write_text(POLICY)
        for h in ("h1", "h2"):
            lab.nvo(h, "policy", "apply", str(policy))

        # h1 re-advertises its hosts with their groups; h2 holds them (through the reflector).
        wait_until(lambda: route_group(lab, "h2", "10.0.0.1") == 10, what="web1's route with group 10 at h2")
        wait_until(lambda: route_group(lab, "h2", "10.0.0.3") == 30, what="batch1's route with group 30 at h2")
        assert route_group(lab, "h1", "10.0.0.1") == 10
        # db2's route comes back to h1 with its group once h2 applied the policy and re-read its
        # hosts: another round through the reflector, so waited for, not assumed.
        wait_until(lambda: route_group(lab, "h1", "10.0.0.2") == 20, what="db2's route with group 20 at h1")

        # web1 → db2:5432 passes, by the rule; batch1's does not; nothing else to db passes.
        assert connects(lab, "web1", "10.0.0.2", 5432), "web1 (group 10 from EVPN) denied"
        assert not connects(lab, "batch1", "10.0.0.2", 5432), "batch1 (group 30) reached db2:5432"
        assert not connects(lab, "web1", "10.0.0.2", 5433), "web1 reached db2:5433"
        t = trace(lab, "10.0.0.1")
        assert (t["verdict"], t["rule"], t["from_group"]) == ("allow", "web-db", "web"), t
        t = trace(lab, "10.0.0.3")
        assert (t["verdict"], t["rule"], t["from_group"]) == ("deny", "default-deny", "batch"), t
        # An address no route names is one h2 knows nothing of: no label, no local port, no
        # identity from the wire or an EVPN route (Policy::trace finds none: "unknown"), unlike
        # a known address without a group ("unlabelled").
        assert trace(lab, "10.0.0.9")["from_group"] == "unknown"
        shown = lab.nvo("h2", "policy", "show", str(VNI))
        assert rule(shown, "web-db")["packets"] >= 1
        # On the eBPF datapath the programs decided, with the route's group from pol_ids.
        want = "kernel" if lab.nvo("h2", "node")["datapath"] == "ebpf" else "nvod"
        assert shown["datapath"] == want, shown

        # web1 relabelled batch on h1: its routes carry group 30, and h2 decides new flows by it.
        (port,) = [p for p, l in lab.nvo("h1", "endpoint", "list")["ports"].items() if l.get("app") == "web"]
        lab.nvo("h1", "endpoint", "label", port, "app=batch")
        wait_until(lambda: route_group(lab, "h2", "10.0.0.1") == 30, what="web1's route with group 30 at h2")
        assert not connects(lab, "web1", "10.0.0.2", 5432), "web1, now batch, reached db2:5432"
        assert trace(lab, "10.0.0.1")["from_group"] == "batch"
