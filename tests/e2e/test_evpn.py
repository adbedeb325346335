"""EVPN (docs/design/evpn.md): nvods as iBGP clients of FRR and GoBGP route reflectors, with FRR
VTEPs, MAC mobility and graceful restart. The flood lists are empty in every topology (`flood:
[]`): hosts learn where to flood only from type-3 routes.

      c1          c2          c3                      (c3 on k1: the FRR VTEP test)
       |           |           |
   [ h1: nvod ] [ h2: nvod ] [ h3: nvod | k1: zebra+bgpd, kernel VXLAN ]
   .1   \\          | .2        / .3
         +------ nvo-<lab>-ul: br0 -------+        underlay 10.100.0.0/24
                     RR 10.100.0.250 (FRR bgpd -Z or gobgpd), AS 65000, every host a client

Assumptions about nvod (docs/design/evpn.md, crates/api/src/evpn.rs): PUT /v1/bgp takes
{asn, router_id, neighbors: [{address}], hold_time_s, connect_retry_s}; GET /v1/bgp lists
`neighbors` with `state` "established"; GET /v1/evpn/routes is a list of routes with `type`,
`mac`, `ip`, `vtep`, `source`, `seq`, `best`, `stale`; MACs advertised MAC+IP once nvod snooped
the container's ARP; network counters `encap_flood`, `arp_suppressed`; ARP suppression on by
default for EVPN networks; a restarted nvod keeps its BGP config (persisted) and advertises
graceful restart (default 120 s).
"""

import signal
import time

import pytest

from bgp_peers import (ASN, RR_ADDR, FrrRouteReflector, bgp_summary, FrrVtep, GobgpRouteReflector, PingStream, RestartedNvod,
                       UnderlayCapture, best, configure_bgp, drop_old_port, has_route, move_container, nvod_pid, nvod_routes,
                       quiet_containers, send_garp, underlay_address, wait_nvod_established, wait_until)
from conftest import wait_for

VNI = 100
UL = {"h1": "10.100.0.1", "h2": "10.100.0.2", "h3": "10.100.0.3", "k1": "10.100.0.3"}
IP = {"c1": "10.0.0.1", "c2": "10.0.0.2", "c3": "10.0.0.3"}

THREE_NVODS = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}, {name: h3}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
  - {name: c3, host: h3, vni: 100, ip: 10.0.0.3/24}
"""

TWO_KERNEL = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: k1, kind: kernel, learning: false}, {name: k2, kind: kernel, learning: false}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: k1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: k2, vni: 100, ip: 10.0.0.2/24}
"""

NVODS_AND_FRR_VTEP = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}, {name: k1, kind: kernel, learning: false}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
  - {name: c3, host: k1, vni: 100, ip: 10.0.0.3/24}
"""


def route_reflector(kind, lab, clients):
    ns = underlay_address(lab, RR_ADDR)
    if kind == "frr":
        return FrrRouteReflector(ns, RR_ADDR, ASN, clients)
    return GobgpRouteReflector(ns, RR_ADDR, ASN, clients)


def start_nvods(lab, rr, hosts, **extra):
    """Configures BGP on HOSTS (router ID = locator) and waits until every session is up."""
    t = time.monotonic()
    for h in hosts:
        configure_bgp(lab, h, UL[h], [RR_ADDR], **extra)
    wait_nvod_established(lab, hosts, RR_ADDR, timeout=30)
    rr.wait_established([UL[h] for h in hosts], timeout=10)
    print(f"sessions established {time.monotonic() - t:.2f} s after PUT /v1/bgp")


def wait_type3(lab, hosts, vteps, timeout=20):
    """Every host in HOSTS has a best type-3 route from every other VTEP in VTEPS."""
    def ok():
        for h in hosts:
            have = {r["vtep"] for r in nvod_routes(lab, h, vni=VNI, rtype=3) if r["best"] and r["source"] != "local"}
            if not {v for v in vteps if v != UL.get(h)} <= have:
                return False
        return True
    wait_until(ok, timeout=timeout, what=f"type-3 routes of {vteps} on {hosts}")


def ping_until(lab, node, addr, timeout=15):
    wait_for(lambda: lab.ping(node, addr, count=1, check=False).returncode == 0, timeout=timeout,
             what=f"{node} → {addr}")


def full_mesh(lab, containers):
    for a in containers:
        for b in containers:
            if a != b:
                ping_until(lab, a, IP[b])


def wait_macip(lab, hosts, containers, timeout=20):
    """Every host has a best MAC+IP type-2 route for every remote container."""
    where = {c: lab.mac(c) for c in containers}

    def ok():
        for h in hosts:
            routes = nvod_routes(lab, h, vni=VNI, rtype=2)
            for c, mac in where.items():
                r = best(routes, 2, mac=mac, ip=IP[c])
                if r is None:
                    return False
        return True
    wait_until(ok, timeout=timeout, what=f"MAC+IP routes of {containers} on {hosts}")


def net_counter(lab, host, name):
    return lab.counters(host)["networks"][str(VNI)].get(name, 0)


@pytest.mark.parametrize("rr_kind", ["frr", "gobgp"])
def test_frr_vteps_through_rr_baseline(lab_factory, rr_kind):
    """The harness and the peers alone: two FRR VTEPs on kernel hosts, clients of the RR; no
    nvod involved. Containers reach each other and the RR holds both VTEPs' type-2/3 routes."""
    lab = lab_factory(TWO_KERNEL)
    with route_reflector(rr_kind, lab, ["10.100.0.1", "10.100.0.2"]) as rr, \
            FrrVtep(lab.ns("k1"), "10.100.0.1", ASN, RR_ADDR, [VNI]) as v1, \
            FrrVtep(lab.ns("k2"), "10.100.0.2", ASN, RR_ADDR, [VNI]) as v2:
        t = time.monotonic()
        rr.wait_established(["10.100.0.1", "10.100.0.2"])
        wait_until(lambda: v1.remote_vteps(VNI) and v2.remote_vteps(VNI), what="remote VTEPs in zebra")
        print(f"{rr_kind}: VTEPs converged in {time.monotonic() - t:.2f} s")
        ping_until(lab, "c1", IP["c2"])
        lab.ping("c2", IP["c1"])
        routes = rr.routes()
        for vtep, c in (("10.100.0.1", "c1"), ("10.100.0.2", "c2")):
            assert has_route(routes, 3, vtep=vtep), routes
            assert has_route(routes, 2, vtep=vtep, mac=lab.mac(c)), routes
        assert "65000:100" in routes[0]["rt"], routes
        # zebra installed the remote MAC learned through BGP, not from traffic (nolearning).
        assert v1.macs(VNI)[lab.mac("c2")]["type"] == "remote"


@pytest.mark.parametrize("rr_kind", ["frr", "gobgp"])
def test_three_nvods_through_rr(lab_factory, tmp_path, rr_kind):
    lab = lab_factory(THREE_NVODS)
    quiet_containers(lab, ("c1", "c2", "c3"))
    hosts = ("h1", "h2", "h3")
    with route_reflector(rr_kind, lab, [UL[h] for h in hosts]) as rr:
        t = time.monotonic()
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        print(f"{rr_kind}: type-3 routes everywhere {time.monotonic() - t:.2f} s after PUT")
        full_mesh(lab, ("c1", "c2", "c3"))
        wait_macip(lab, hosts, ("c1", "c2", "c3"))
        print(f"{rr_kind}: MAC+IP routes everywhere {time.monotonic() - t:.2f} s after PUT")
        routes = rr.routes()
        for h in hosts:
            assert has_route(routes, 3, vtep=UL[h]), routes
        # Installed: h1's FDB has c2 and c3 from EVPN, behind their VTEPs.
        fdb = {e["mac"]: e for e in lab.fdb("h1", VNI)}
        for c, h in (("c2", "h2"), ("c3", "h3")):
            e = fdb.get(lab.mac(c))
            assert e and e.get("origin") == "evpn" and e.get("remote") == UL[h], fdb

        # Known hosts: ARP answered locally, nothing flooded.
        for c in ("c1", "c2", "c3"):
            lab.exec(c, "ip", "neigh", "flush", "all")
        flood = {h: net_counter(lab, h, "encap_flood") for h in hosts}
        suppressed = {h: net_counter(lab, h, "arp_suppressed") for h in hosts}
        with UnderlayCapture(lab, tmp_path / "ul.pcap") as cap:
            for a, b in (("c1", "c2"), ("c1", "c3"), ("c2", "c3")):
                lab.ping(a, IP[b], count=2)
        after_flood = {h: net_counter(lab, h, "encap_flood") for h in hosts}
        after_suppressed = {h: net_counter(lab, h, "arp_suppressed") for h in hosts}
        print(f"{rr_kind}: encap_flood {flood} → {after_flood}; arp_suppressed {suppressed} → {after_suppressed}")
        assert after_flood == flood
        assert all(after_suppressed[h] > suppressed[h] for h in hosts), (suppressed, after_suppressed)
        assert cap.count("icmp") >= 12, "the capture saw no tunnelled ping"
        assert cap.count("arp && eth.dst == ff:ff:ff:ff:ff:ff") == 0, "an ARP broadcast went into a tunnel"


def test_interop_with_frr_vtep(lab_factory):
    lab = lab_factory(NVODS_AND_FRR_VTEP)
    quiet_containers(lab, ("c1", "c2", "c3"))
    with route_reflector("frr", lab, [UL["h1"], UL["h2"], UL["k1"]]) as rr, \
            FrrVtep(lab.ns("k1"), UL["k1"], ASN, RR_ADDR, [VNI]) as vtep:
        start_nvods(lab, rr, ("h1", "h2"))
        rr.wait_established([UL["k1"]])
        wait_type3(lab, ("h1", "h2"), [UL["h1"], UL["h2"], UL["k1"]])
        wait_until(lambda: all(has_route(vtep.routes(), 3, vtep=UL[h]) for h in ("h1", "h2")),
                   what="FRR VTEP holding the nvods' type-3 routes")
        wait_until(lambda: set(vtep.remote_vteps(VNI)) >= {UL["h1"], UL["h2"]}, what="zebra flooding to the nvods")
        full_mesh(lab, ("c1", "c2", "c3"))
        c1, c3 = lab.mac("c1"), lab.mac("c3")
        # FRR → nvo: the kernel VTEP's MAC, MAC only (FRR has no SVI address here).
        wait_until(lambda: best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c3, vtep=UL["k1"]),
                   what="h1 holding c3's type-2 route from FRR")
        fdb = {e["mac"]: e for e in lab.fdb("h2", VNI)}
        assert fdb.get(c3, {}).get("origin") == "evpn" and fdb[c3].get("remote") == UL["k1"], fdb
        # nvo → FRR: c1's MAC (and MAC+IP) at the kernel VTEP, installed by zebra.
        wait_until(lambda: has_route(vtep.routes(), 2, vtep=UL["h1"], mac=c1), what="FRR holding c1's route")
        wait_until(lambda: vtep.macs(VNI).get(c1, {}).get("remoteVtep") == UL["h1"], what="zebra installing c1")
        lab.ping("c3", IP["c1"], count=3)
        lab.ping("c2", IP["c3"], count=3)


def test_mac_mobility(lab_factory):
    """c1 moves from h1 to h2 with its MAC and IP (h1 still has it: a live migration) and
    announces itself with a gratuitous ARP: h2 advertises it with a higher sequence number,
    h1 withdraws its own route and every other nvod follows."""
    lab = lab_factory(THREE_NVODS)
    quiet_containers(lab, ("c1", "c2", "c3"))
    hosts = ("h1", "h2", "h3")
    with route_reflector("frr", lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        full_mesh(lab, ("c1", "c2", "c3"))
        mac = lab.mac("c1")
        wait_until(lambda: all(best(nvod_routes(lab, h, vni=VNI, rtype=2), 2, mac=mac, vtep=UL["h1"])
                               for h in ("h2", "h3")), what="c1 known at h1 everywhere")
        old_seq = best(nvod_routes(lab, "h3", vni=VNI, rtype=2), 2, mac=mac)["seq"]

        move_container(lab, "c1", "h1", "h2", VNI)
        t0 = send_garp(lab, "c1", mac, IP["c1"])

        def moved():
            for h in ("h1", "h3"):
                r = best(nvod_routes(lab, h, vni=VNI, rtype=2), 2, mac=mac)
                if not r or r["vtep"] != UL["h2"] or r["seq"] <= old_seq:
                    return False
            return True
        wait_until(moved, timeout=10, interval=0.05, what="every nvod to see c1 at h2 with a higher sequence")
        took = time.time() - t0
        local = best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=mac, source="local")
        print(f"mobility: converged in {took * 1000:.0f} ms; seq {old_seq} → {local and local['seq']}")
        assert local and local["seq"] == old_seq + 1, nvod_routes(lab, "h2", vni=VNI, rtype=2)
        assert has_route(rr.routes(), 2, vtep=UL["h2"], mac=mac)
        assert not any(r["mac"] == mac and r["vtep"] == UL["h1"] and r["best"] for r in rr.routes() if r["type"] == 2)
        ping_until(lab, "c3", IP["c1"], timeout=5)
        lab.ping("c1", IP["c2"], count=3)
        fdb = {e["mac"]: e for e in lab.fdb("h3", VNI)}
        assert fdb[mac].get("remote") == UL["h2"], fdb
        # h1 gave up its local route and forwards to h2 (the pipeline counted the move).
        assert not best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=mac, source="local")
        assert {e["mac"]: e for e in lab.fdb("h1", VNI)}[mac].get("remote") == UL["h2"]
        drop_old_port(lab, "c1", "h1")
        lab.ping("c2", IP["c1"], count=3)
        # The convergence time is printed, not asserted (timings belong to benchmarks); the
        # 10 s wait above is only how long the test waits before calling it broken.


@pytest.mark.parametrize("rr_kind,sig", [("gobgp", "KILL"), ("frr", "KILL"), ("gobgp", "TERM")])
def test_graceful_restart(lab_factory, rr_kind, sig):
    """h2's nvod is killed (-9; or stopped with SIGTERM: it saves its state and closes its
    sessions without a NOTIFICATION) and started again with the same state. GoBGP keeps h2's routes as
    stale meanwhile, so h1 keeps c2 installed and forwards to it as soon as h2 forwards again.
    FRR 8.4 does not keep EVPN routes for a restarting peer (its graceful restart covers
    unicast and VPN families only; the same with FRR's own VTEP as the client), so with FRR only
    the recovery is checked. Traffic between c1 and c3 never notices."""
    lab = lab_factory(THREE_NVODS)
    quiet_containers(lab, ("c1", "c2", "c3"))
    hosts = ("h1", "h2", "h3")
    with route_reflector(rr_kind, lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        full_mesh(lab, ("c1", "c2", "c3"))
        c2 = lab.mac("c2")
        wait_until(lambda: has_route(rr.routes(), 2, vtep=UL["h2"], mac=c2), what="c2's route at the RR")
        pid = nvod_pid(lab, "h2")

        def of_h2():
            return [r for r in rr.routes() if r["peer"] == UL["h2"]]

        with RestartedNvod(lab, "h2") as restart:
            to_c2 = PingStream(lab, "c1", IP["c2"], duration=12)
            other = PingStream(lab, "c1", IP["c3"], duration=12)
            try:
                time.sleep(2)
                t_kill = time.monotonic()
                restart.kill(getattr(signal, f"SIG{sig}"))
                if rr_kind == "gobgp":
                    wait_until(lambda: (rs := of_h2()) and all(r["stale"] for r in rs), timeout=5,
                               what="the RR marking h2's routes stale")
                    stale = of_h2()
                    print(f"graceful restart: the RR holds {len(stale)} stale routes of h2")
                    assert has_route(stale, 3, vtep=UL["h2"]) and has_route(stale, 2, mac=c2), stale
                    # The RR still advertises them: h1 keeps c2 installed.
                    time.sleep(1)
                    assert best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c2, vtep=UL["h2"])
                time.sleep(max(0.0, 2 - (time.monotonic() - t_kill)))
                new_pid = restart.start()
                t_start = time.monotonic()
                assert new_pid != pid
                wait_nvod_established(lab, ["h2"], RR_ADDR, timeout=20)
                t_up = time.monotonic()
                wait_until(lambda: (rs := of_h2()) and not any(r["stale"] for r in rs) and has_route(rs, 3, vtep=UL["h2"]),
                           timeout=20, what="h2's routes fresh again at the RR (End-of-RIB)")
                t_fresh = time.monotonic()
                wait_type3(lab, ["h2"], [UL["h1"], UL["h3"]])
                sent_c2, got_c2 = to_c2.result()
                sent_other, got_other = other.result()
            finally:
                to_c2.close()
                other.close()
            lost_s = (sent_c2 - got_c2) * to_c2.interval
            print(f"graceful restart ({rr_kind}, SIG{sig}): nvod down {t_start - t_kill:.2f} s, session up "
                  f"{t_up - t_start:.2f} s after start, routes fresh {t_fresh - t_start:.2f} s after start; "
                  f"c1→c2 lost {sent_c2 - got_c2}/{sent_c2} (~{lost_s:.2f} s), "
                  f"c1→c3 lost {sent_other - got_other}/{sent_other}")
            assert got_other == sent_other, "traffic between c1 and c3 was disturbed"
            # Lost only while h2 had no data plane, plus 2 s to come back.
            assert lost_s < (t_start - t_kill) + 2.0, lost_s
            lab.ping("c2", IP["c3"], count=3)


TWO_NVODS = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""


def test_flapping_mac_is_marked_duplicate(lab_factory):
    """c1's MAC shows up on h1 and on h2 in turn (a loop, a cloned VM): each side outbids the
    other's sequence number until, after dup_moves (3) moves within dup_window_s, the MAC is
    marked duplicate and frozen — its sequence number stops climbing (RFC 7432 §15.1)."""
    lab = lab_factory(TWO_NVODS)
    quiet_containers(lab, ("c1", "c2"))
    hosts = ("h1", "h2")
    with route_reflector("frr", lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts, dup_moves=3, dup_window_s=60)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        # c2's own MAC, advertised before the flapping starts: it must still be there at the end.
        # (The containers are quiet, and every frame c2 sends below carries c1's MAC, so c2's own
        # is announced only by this one.)
        send_garp(lab, "c2", lab.mac("c2"), IP["c2"])
        wait_until(lambda: best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=lab.mac("c2"), vtep=UL["h2"]),
                   what="c2's MAC at h2, seen from h1")
        mac = lab.mac("c1")
        send_garp(lab, "c1", mac, IP["c1"])
        wait_until(lambda: best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=mac, vtep=UL["h1"]),
                   what="c1's MAC at h1, seen from h2")

        def duplicates():
            return {h: bgp_summary(lab, h)["duplicate_macs"] for h in hosts}

        def top_seq():
            return max((r["seq"] for h in hosts for r in nvod_routes(lab, h, vni=VNI, rtype=2)
                        if r["mac"] == mac), default=0)

        # Moves: to h2 (c2 sends with c1's MAC), back to h1, to h2, ... until detection.
        for i in range(6):
            src, at = ("c2", "h2") if i % 2 == 0 else ("c1", "h1")
            other = "h1" if at == "h2" else "h2"
            seq = top_seq()
            send_garp(lab, src, mac, IP["c1"])

            def moved():
                if any(duplicates().values()):
                    return True
                r = best(nvod_routes(lab, other, vni=VNI, rtype=2), 2, mac=mac)
                return r is not None and r["vtep"] == UL[at] and r["seq"] > seq
            wait_until(moved, timeout=10, interval=0.1, what=f"move {i + 1} of c1's MAC to {at}")
            if any(duplicates().values()):
                break
        dup = duplicates()
        print(f"duplicate MACs after {i + 1} announcements: {dup}; top sequence {top_seq()}")
        assert any(dup.values()), dup
        flagged = [(h, r) for h in hosts for r in nvod_routes(lab, h, vni=VNI, rtype=2)
                   if r["mac"] == mac and r.get("duplicate")]
        assert flagged, "no route of the duplicate MAC is flagged"
        # Frozen: the host that marked it neither advertises nor follows it any more, so more
        # flapping moves the sequence number at most once more (the other side's last bid).
        dup_host = next(h for h, n in dup.items() if n)

        def own_route():
            r = best(nvod_routes(lab, dup_host, vni=VNI, rtype=2), 2, mac=mac, source="local")
            return r and r["seq"]
        frozen, own = top_seq(), own_route()
        for src in ("c2", "c1", "c2", "c1", "c2", "c1"):
            send_garp(lab, src, mac, IP["c1"])
            time.sleep(0.3)
        time.sleep(1.0)
        print(f"after six more announcements: top sequence {top_seq()}, {dup_host}'s own {own_route()}")
        assert own_route() == own, (own, own_route())
        assert top_seq() <= frozen + 1, (frozen, top_seq())
        # The other routes are unaffected: c2's MAC is still advertised from h2, seen at h1.
        assert best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=lab.mac("c2"), vtep=UL["h2"])


THREE_NVODS_V6 = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}, {name: h3}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, ipv6: "fd10::1/64"}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24, ipv6: "fd10::2/64"}
  - {name: c3, host: h3, vni: 100, ip: 10.0.0.3/24, ipv6: "fd10::3/64"}
"""


def test_neighbour_solicitations_answered_locally(lab_factory):
    """IPv6: c1's address reaches h3 in a MAC+IP route (h1 snooped it from c1's neighbour
    solicitation); c3's solicitation for it is answered by h3 (nd_suppressed), and c3's kernel
    accepts the advertisement nvod built: ping6 works."""
    lab = lab_factory(THREE_NVODS_V6)
    hosts = ("h1", "h2", "h3")
    with route_reflector("frr", lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        # c1 and c2 talk: their solicitation and advertisement teach h1 and h2 their addresses.
        wait_for(lambda: lab.exec("c1", "ping", "-6", "-c", "1", "-W", "2", "fd10::2", check=False).returncode == 0,
                 timeout=20, what="c1 → fd10::2")
        mac1 = lab.mac("c1")
        wait_until(lambda: best(nvod_routes(lab, "h3", vni=VNI, rtype=2), 2, mac=mac1, ip="fd10::1"),
                   what="c1's MAC+IPv6 route on h3")
        before = net_counter(lab, "h3", "nd_suppressed")
        lab.exec("c3", "ip", "-6", "neigh", "flush", "all")
        lab.exec("c3", "ping", "-6", "-c", "2", "-W", "2", "fd10::1")
        after = net_counter(lab, "h3", "nd_suppressed")
        print(f"h3 nd_suppressed {before} → {after}")
        assert after > before
        assert lab.neigh_mac("c3", "fd10::1") == mac1


def test_flood_entries_set_by_the_operator_stay(lab_factory):
    """An operator adds to a network's flood list a VTEP that EVPN had put there already (201,
    not 409); when that VTEP's type 3 route goes away, the entry stays: EVPN only removes what
    it added. Seen on the wire: h1 still floods c1's broadcasts to h2."""
    from conftest import api
    lab = lab_factory(TWO_NVODS)
    quiet_containers(lab, ("c1", "c2"))
    hosts = ("h1", "h2")
    with route_reflector("frr", lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        api(lab, "h1", "POST", f"/v1/networks/{VNI}/flood", {"remote": UL["h2"]}, expect=201)
        api(lab, "h2", "DELETE", "/v1/bgp", expect=204)
        wait_until(lambda: not best(nvod_routes(lab, "h1", vni=VNI, rtype=3), 3, vtep=UL["h2"]),
                   what="h2's type 3 route gone from h1")
        time.sleep(0.5)  # the speaker applies its changes at once; leave it a tick anyway
        before = net_counter(lab, "h2", "rx_underlay_frames")
        script = ("from scapy.all import Ether, ARP, sendp\n"
                  "sendp(Ether(dst='ff:ff:ff:ff:ff:ff')/ARP(pdst='10.0.0.99', psrc='10.0.0.1'), "
                  "iface='eth0', count=3, verbose=0)\n")
        lab.exec("c1", "/usr/bin/python3", "-c", script)
        wait_until(lambda: net_counter(lab, "h2", "rx_underlay_frames") >= before + 3, timeout=5,
                   what="h1's broadcasts reaching h2 through the operator's flood entry")


def test_static_host_is_advertised_before_it_speaks(lab_factory):
    """A static FDB entry for c1 on its port, with its address, as a cloud controller would
    set it: h1 advertises c1's MAC+IP before c1 has sent an ARP, and h2 answers c2's ARP for
    c1 from that route. The addresses are kept across a restart of nvod (state.json)."""
    from conftest import api
    lab = lab_factory(TWO_NVODS)
    quiet_containers(lab, ("c1", "c2"))
    hosts = ("h1", "h2")
    with route_reflector("frr", lab, [UL[h] for h in hosts]) as rr:
        start_nvods(lab, rr, hosts)
        wait_type3(lab, hosts, [UL[h] for h in hosts])
        mac1 = lab.mac("c1")
        port = next(p["name"] for p in api(lab, "h1", "GET", "/v1/ports") if p["vni"] == VNI)
        assert not best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=mac1, ip=IP["c1"]), \
            "c1's address is known before anyone was told it"
        for bad in ({"mac": mac1, "remote": UL["h2"], "ips": [IP["c1"]]},
                    {"mac": mac1, "port": port, "ips": ["224.0.0.1"]}):
            api(lab, "h1", "POST", f"/v1/networks/{VNI}/fdb", bad, expect=400)
        entry = api(lab, "h1", "POST", f"/v1/networks/{VNI}/fdb",
                    {"mac": mac1, "port": port, "ips": [IP["c1"]]}, expect=201)
        assert entry["ips"] == [IP["c1"]], entry
        wait_until(lambda: best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=mac1, ip=IP["c1"],
                                vtep=UL["h1"]), what="c1's MAC+IP route on h2")
        before = net_counter(lab, "h2", "arp_suppressed")
        lab.ping("c2", IP["c1"], count=2)
        assert net_counter(lab, "h2", "arp_suppressed") > before
        with RestartedNvod(lab, "h1") as restart:
            restart.kill()
            restart.start()
            got = {e["mac"]: e for e in lab.fdb("h1", VNI)}
            assert got[mac1].get("ips") == [IP["c1"]], got
