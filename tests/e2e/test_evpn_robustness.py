"""Bad BGP input never takes nvod's speaker down: the Python test peer (bgp_testpeer.py) sends
RFC 7606 malformations and FSM errors to nvod, next to a good session with a route reflector,
and each gets its RFC reaction while nvod (same pid), the other session and its routes stay.

                  c1                c2
                   |                 |
              [ h1: nvod ]      [ h2: nvod ]
               .1 \\                / .2
                   +--- nvo-<lab>-ul: br0 ---+
                   RR 10.100.0.250 (FRR bgpd -Z), clients h1 and h2
                   test peer 10.100.0.251 (Python, in the same namespace) → h1:179; h1 has
                   it as a passive neighbour

The first tests need no nvod: they check the test peer's messages against FRR bgpd 8.4 and
GoBGP 3.10, so that a reaction seen from nvod is a reaction to what the test intended.

Assumptions about nvod (crates/api/src/evpn.rs): NeighborSpec takes `passive: true`; GET /v1/bgp
shows per neighbour `state`, `established`, `treat_as_withdraw`, `attributes_discarded`; routes
from the peer appear in GET /v1/evpn/routes with `source` = its address; a peer without the
graceful restart capability loses its routes when its session is reset.
"""

import struct
import time

from bgp_peers import (ASN, PEER_ADDR, RR_ADDR, FrrRouteReflector, GobgpRouteReflector, best, configure_bgp,
                       has_route, nvod_neighbor, nvod_pid, nvod_routes, quiet_containers, underlay_address,
                       wait_nvod_established, wait_until)
from bgp_testpeer import (KEEPALIVE, MALFORMED, TestPeer, capability, message, open_msg,
                          type2_route, type3_route)
from conftest import wait_for

VNI = 100
VTEP = "10.100.0.77"  # the test peer's routes point here; nothing needs to answer

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

PEERS_ONLY = """
hosts: [{name: k1, kind: kernel}]
"""

# FRR 8.4 relaxes error handling (RFC 7606) for eBGP peers only, and not everywhere: where it
# differs from MALFORMED's RFC reaction, it is noted.
FRR_EBGP = {
    **{name: want for name, (_, want) in MALFORMED.items()},
    # RFC 7606 §7.5: LOCAL_PREF from an external peer is discarded, whatever its length.
    "local_pref_bad_length": "attribute-discard",
    # Deviations of FRR 8.4: a repeated attribute resets (RFC 7606 §3 g: discard the repeats);
    # an attribute overrunning the attribute list resets with (3, 5) (§4: treat-as-withdraw).
    "duplicate_origin": ("session-reset", 3, {1}),
    "attr_overrun": ("session-reset", 3, {5}),
}


def mac_for(i):
    return f"02:00:00:00:bb:{i:02x}"


def reaction_ok(want, notification, present_before, present_after, closed):
    """Whether what happened is WANT. present_*: the case's route before/after the message."""
    if want == "treat-as-withdraw":
        return notification is None and not closed and present_before and not present_after
    if want in ("attribute-discard", "kept"):
        return notification is None and not closed and present_after
    _, code, subcodes = want
    return notification is not None and notification[0] == code and notification[1] in subcodes


def test_testpeer_against_frr(lab_factory):
    """The test peer as an eBGP neighbour of FRR: its routes decode field by field, and each
    malformation gets the reaction FRR gives it (FRR_EBGP)."""
    lab = lab_factory(PEERS_ONLY)
    ul = underlay_address(lab, RR_ADDR)
    underlay_address(lab, PEER_ADDR)
    peer_as = 65001
    with FrrRouteReflector(ul, RR_ADDR, ASN, [], ebgp={PEER_ADDR: peer_as}) as rr:
        def session():
            tp = TestPeer(ul, PEER_ADDR, RR_ADDR, peer_as).connect()
            tp.handshake()
            rr.wait_established([PEER_ADDR], timeout=10)
            return tp

        def present(mac):
            return has_route(rr.routes(), 2, mac=mac)

        tp = session()
        tp.send(type2_route("02:00:00:00:aa:01", VNI, VTEP, ASN, ip="10.0.0.77", seq=4, path=[peer_as]).announce())
        tp.send(type3_route(VNI, VTEP, ASN, path=[peer_as]).announce())
        wait_until(lambda: len([r for r in rr.routes() if r["peer"] == PEER_ADDR]) == 2, timeout=5,
                   what="FRR to take both routes")
        t2, t3 = sorted((r for r in rr.routes() if r["peer"] == PEER_ADDR), key=lambda r: r["type"])
        assert (t2["mac"], t2["ip"], t2["nexthop"], t2["rd"], t2["rt"], t2["seq"]) == \
            ("02:00:00:00:aa:01", "10.0.0.77", VTEP, f"{VTEP}:{VNI}", [f"{ASN}:{VNI}"], 4), t2
        assert (t3["ip"], t3["rd"], t3["rt"]) == (VTEP, f"{VTEP}:{VNI}", [f"{ASN}:{VNI}"]), t3
        detail = rr.vtysh("show bgp l2vpn evpn route detail")
        assert "ET:8" in detail and "VNI 100" in detail and "Ingress Replication, label: 100" in detail, detail

        results = {}
        for i, (name, (build, _)) in enumerate(MALFORMED.items()):
            want = FRR_EBGP[name]
            if tp.closed.is_set():
                tp.close()
                tp = session()
            mac = mac_for(i)
            r = type2_route(mac, VNI, VTEP, ASN, path=[peer_as])
            if want == "treat-as-withdraw":
                tp.send(r.announce())
                wait_until(lambda: present(mac), timeout=5, what=f"{name}: the route before")
            before = present(mac)
            tp.send(build(r))
            time.sleep(0.5)
            note = tp.wait_notification(timeout=1)
            after = present(mac)
            results[name] = (want, note, after, reaction_ok(want, note, before, after, tp.closed.is_set()))
        tp.close()
        for name, (want, note, after, ok) in results.items():
            print(f"FRR {name:28} want {want!s:28} got notification {note} route {'kept' if after else 'gone'}")
        assert all(ok for *_, ok in results.values()), {n: r for n, r in results.items() if not r[3]}

        # FSM: an UPDATE before OPEN, a bad marker.
        time.sleep(1.2)
        tp = TestPeer(ul, PEER_ADDR, RR_ADDR, peer_as).connect()
        tp.send(type3_route(VNI, VTEP, ASN, path=[peer_as]).announce())
        assert tp.wait_notification(5) == (5, 1)
        tp.close()
        time.sleep(1.2)
        tp = session()
        tp.send(message(KEEPALIVE, marker=b"\0" * 16))
        assert tp.wait_notification(5) == (1, 1)
        tp.close()


def test_testpeer_routes_decode_in_gobgp(lab_factory):
    """The test peer as an iBGP client of GoBGP: GoBGP decodes its type-2 and type-3 routes."""
    lab = lab_factory(PEERS_ONLY)
    ul = underlay_address(lab, RR_ADDR)
    underlay_address(lab, PEER_ADDR)
    with GobgpRouteReflector(ul, RR_ADDR, ASN, [PEER_ADDR]) as rr, \
            TestPeer(ul, PEER_ADDR, RR_ADDR, ASN).connect() as tp:
        tp.handshake()
        tp.send(type2_route("02:00:00:00:aa:02", VNI, VTEP, ASN, ip="10.0.0.78", seq=7).announce())
        tp.send(type3_route(VNI, VTEP, ASN).announce())
        wait_until(lambda: len(rr.routes()) == 2, timeout=10, what="GoBGP to take both routes")
        t2, t3 = sorted(rr.routes(), key=lambda r: r["type"])
        assert (t2["mac"], t2["ip"], t2["vni"], t2["nexthop"], t2["rd"], t2["rt"], t2["seq"]) == \
            ("02:00:00:00:aa:02", "10.0.0.78", VNI, VTEP, f"{VTEP}:{VNI}", [f"{ASN}:{VNI}"], 7), t2
        assert (t3["ip"], t3["vni"], t3["rd"]) == (VTEP, VNI, f"{VTEP}:{VNI}"), t3


# ---- nvod ----

class Setup:
    """The lab with h1 and h2 as clients of the RR, h1 also passive neighbour of the test peer."""

    def __init__(self, lab, rr, ul):
        self.lab, self.rr, self.ul = lab, rr, ul

    def session(self, timeout=15):
        """A new test peer session with h1, Established on both sides."""
        deadline = time.monotonic() + timeout
        while True:
            tp = TestPeer(self.ul, PEER_ADDR, "10.100.0.1", ASN).connect(timeout=timeout)
            try:
                tp.handshake(timeout=5)
                break
            except AssertionError:
                tp.close(notify=False)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        wait_nvod_established(self.lab, ["h1"], PEER_ADDR, timeout=10)
        return tp

    def present(self, mac):
        return best(nvod_routes(self.lab, "h1", vni=VNI, rtype=2), 2, mac=mac, source=PEER_ADDR) is not None

    def snapshot(self):
        rr = nvod_neighbor(self.lab, "h1", RR_ADDR)
        return {"pid": nvod_pid(self.lab, "h1"), "rr_state": rr["state"], "rr_established": rr["established"],
                "h2_type3": best(nvod_routes(self.lab, "h1", vni=VNI, rtype=3), 3, vtep="10.100.0.2") is not None}


def nvod_setup(lab_factory):
    lab = lab_factory(TOPOLOGY)
    quiet_containers(lab, ("c1", "c2"))
    ul = underlay_address(lab, RR_ADDR)
    underlay_address(lab, PEER_ADDR)
    rr = FrrRouteReflector(ul, RR_ADDR, ASN, ["10.100.0.1", "10.100.0.2"])
    try:
        configure_bgp(lab, "h1", "10.100.0.1", [RR_ADDR, {"address": PEER_ADDR, "passive": True}])
        configure_bgp(lab, "h2", "10.100.0.2", [RR_ADDR])
        wait_nvod_established(lab, ["h1", "h2"], RR_ADDR)
        wait_until(lambda: best(nvod_routes(lab, "h1", vni=VNI, rtype=3), 3, vtep="10.100.0.2"),
                   what="h2's type-3 route on h1")
        wait_for(lambda: lab.ping("c1", "10.0.0.2", count=1, check=False).returncode == 0, timeout=15,
                 what="c1 → c2")
    except BaseException:
        rr.close()
        raise
    return Setup(lab, rr, ul)


def test_nvod_open_and_advertisements_decode(lab_factory):
    """nvod's OPEN and its type-3 / type-2 routes, as the test peer decodes them."""
    s = nvod_setup(lab_factory)
    with s.rr, s.session() as tp:
        caps = tp.peer_open["caps"]
        assert b"\x00\x19\x00\x46" in caps.get(1, []), caps  # MP: l2vpn (25) / evpn (70)
        assert 65 in caps and 64 in caps, caps  # 4-octet AS, graceful restart
        assert tp.peer_open["asn"] == ASN and tp.peer_open["router_id"] == "10.100.0.1"
        c1 = s.lab.mac("c1")

        def got():
            rs = tp.received_routes()
            t3 = [r for r in rs if r["type"] == 3 and r["ip"] == "10.100.0.1"]
            t2 = [r for r in rs if r["type"] == 2 and r["mac"] == c1 and r["ip"] == "10.0.0.1"]
            return (t3, t2) if t3 and t2 else None
        (t3,), (t2,) = wait_until(got, timeout=10, what="nvod's routes at the test peer")
        print(f"nvod advertised: {t3}\n {t2}")
        assert (t3["next_hop"], t3["pmsi"], t3["rt"], t3["etag"]) == ("10.100.0.1", "10.100.0.1", ["65000:100"], 0), t3
        assert (t2["next_hop"], t2["vni"], t2["rt"], t2["rd"]) == ("10.100.0.1", VNI, ["65000:100"], "10.100.0.1:100"), t2
        # nvod is not a route reflector: it advertises its own routes only, never h2's.
        assert not any(r.get("next_hop") == "10.100.0.2" for r in tp.received_routes())
        # ROUTE-REFRESH for L2VPN EVPN (RFC 2918): nvod sends its routes again.
        seen = len(tp.updates)
        tp.send(message(5, struct.pack("!HBB", 25, 0, 70)))

        def resent():
            again = [r for u in tp.updates[seen:] for r in u["reach"]]
            return any(r["type"] == 2 and r["mac"] == c1 for r in again) and \
                any(r["type"] == 3 and r["ip"] == "10.100.0.1" for r in again)
        wait_until(resent, timeout=10, what="nvod's routes again after a ROUTE-REFRESH")


def test_malformed_updates_get_rfc7606_reactions(lab_factory):
    s = nvod_setup(lab_factory)
    with s.rr:
        start = s.snapshot()
        tp = s.session()
        results = {}
        try:
            for i, (name, (build, want)) in enumerate(MALFORMED.items()):
                if tp.closed.is_set():
                    tp.close()
                    tp = s.session()
                mac = mac_for(i)
                r = type2_route(mac, VNI, VTEP, ASN)
                before_counts = nvod_neighbor(s.lab, "h1", PEER_ADDR)
                if want == "treat-as-withdraw":
                    tp.send(r.announce())
                    wait_until(lambda: s.present(mac), timeout=5, what=f"{name}: the route installed first")
                before = s.present(mac)
                tp.send(build(r))
                if want == "treat-as-withdraw":
                    ok_route = _eventually(lambda: not s.present(mac))
                elif want in ("kept", "attribute-discard"):
                    ok_route = _eventually(lambda: s.present(mac))
                else:
                    tp.wait_closed(5)
                    ok_route = _eventually(lambda: not s.present(mac))
                note = tp.wait_notification(timeout=0.5 if want in ("kept", "attribute-discard") or
                                            want == "treat-as-withdraw" else 5)
                after = s.present(mac)
                n = nvod_neighbor(s.lab, "h1", PEER_ADDR)
                counters = {k: n.get(k, 0) - before_counts.get(k, 0) for k in ("treat_as_withdraw", "attributes_discarded")}
                ok = reaction_ok(want, note, before, after, tp.closed.is_set()) and ok_route
                if want == "treat-as-withdraw":
                    ok = ok and counters["treat_as_withdraw"] >= 1 and n["state"] == "established"
                if isinstance(want, tuple):
                    ok = ok and n["established"] == before_counts["established"]
                now = s.snapshot()
                results[name] = (want, note, "kept" if after else "gone", counters, ok and now == start)
        finally:
            tp.close()
        for name, (want, note, route, counters, ok) in results.items():
            print(f"nvod {name:28} want {want!s:28} got notification {note} route {route} {counters} "
                  f"{'ok' if ok else 'WRONG'}")
        assert s.snapshot() == start, (start, s.snapshot())
        assert all(r[-1] for r in results.values()), {n: r for n, r in results.items() if not r[-1]}
        # The data path still carries traffic between the good hosts.
        s.lab.ping("c1", "10.0.0.2", count=3)


def _eventually(pred, timeout=5.0):
    try:
        wait_until(pred, timeout=timeout)
        return True
    except AssertionError:
        return False


FSM_CASES = {
    # name: (how the session starts: "connect" (no OPEN from us) or "established"; what to send;
    #        acceptable (code, subcode)s)
    "update_before_open": ("connect", lambda: type3_route(VNI, VTEP, ASN).announce(), {(5, 0), (5, 1)}),
    "open_in_established": ("established", lambda: open_msg(ASN, PEER_ADDR), {(5, 0), (5, 3)}),
    "bad_marker": ("established", lambda: message(KEEPALIVE, marker=b"\0" * 16), {(1, 1)}),
    "short_length": ("established", lambda: b"\xff" * 16 + b"\x00\x12\x04", {(1, 2)}),
    "unknown_type": ("established", lambda: message(9), {(1, 3)}),
    "open_bad_version": ("connect", lambda: open_msg(ASN, PEER_ADDR, version=3), {(2, 1)}),
    "open_bad_peer_as": ("connect", lambda: open_msg(65099, PEER_ADDR, caps=[
        capability(1, b"\x00\x19\x00\x46"), capability(65, (65099).to_bytes(4, "big"))]), {(2, 2)}),
    "open_bad_hold_time": ("connect", lambda: open_msg(ASN, PEER_ADDR, hold=2), {(2, 6)}),
}


def test_fsm_errors_get_notifications(lab_factory):
    s = nvod_setup(lab_factory)
    with s.rr:
        start = s.snapshot()
        results = {}
        for name, (mode, build, want) in FSM_CASES.items():
            if mode == "established":
                tp = s.session()
            else:
                tp = TestPeer(s.ul, PEER_ADDR, "10.100.0.1", ASN).connect(timeout=15)
            try:
                tp.send(build())
                note = tp.wait_notification(5)
                closed = tp.wait_closed(5)
            finally:
                tp.close(notify=False)
            now = s.snapshot()
            results[name] = (note, closed, note in want and closed and now == start)
            print(f"nvod {name:22} want {sorted(want)} got {note} closed {closed} {'ok' if results[name][-1] else 'WRONG'}")
        # A good session still comes up afterwards.
        with s.session():
            pass
        assert s.snapshot() == start
        assert all(r[-1] for r in results.values()), results
        s.lab.ping("c1", "10.0.0.2", count=3)


def test_bad_bgp_api_calls_are_refused_and_change_nothing(lab_factory):
    """Bad BGP configurations and route queries get 400 with one line naming the value; the
    configuration in force and its session stay as they were."""
    from conftest import api
    lab = lab_factory("""
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}]
networks: [{vni: 100, flood: []}]
""")
    good = {"asn": 65000, "router_id": "10.100.0.1", "neighbors": [{"address": "10.100.0.250"}]}
    api(lab, "h1", "PUT", "/v1/bgp", good)
    before = api(lab, "h1", "GET", "/v1/bgp")["config"]
    nb = good["neighbors"]
    bad = [
        ({**good, "asn": 0}, "asn 0"),
        ({**good, "router_id": "0.0.0.0"}, "0.0.0.0"),
        ({**good, "hold_time_s": 2}, "hold_time_s 2"),
        ({**good, "graceful_restart_s": 5000}, "5000"),
        ({**good, "neighbors": nb + nb}, "twice"),
        ({**good, "neighbors": [{"address": "224.0.0.5"}]}, "224.0.0.5"),
        ({**good, "vnis": [{"vni": 0}]}, "vni 0"),
        ({**good, "vnis": [{"vni": 100, "rd": "what"}]}, "\"what\""),
        ({**good, "vnis": [{"vni": 100, "import_rt": ["65000:x"]}]}, "\"x\""),
        ({**good, "colour": "red"}, "colour"),
    ]
    for body, named in bad:
        answer = api(lab, "h1", "PUT", "/v1/bgp", body, expect=400)
        assert named in answer["error"] and "\n" not in answer["error"], (body, answer)
    for query, named in [("?type=9", "type 9"), ("?vni=abc", "\"abc\""), ("?colour=red", "\"colour\"")]:
        answer = api(lab, "h1", "GET", "/v1/evpn/routes" + query, expect=400)
        assert named in answer["error"], (query, answer)
    assert api(lab, "h1", "GET", "/v1/bgp")["config"] == before
    # DELETE stops the speaker (and is persisted: the config file's [bgp] no longer applies).
    api(lab, "h1", "DELETE", "/v1/bgp", expect=204)
    summary = api(lab, "h1", "GET", "/v1/bgp")
    assert summary.get("config") is None and summary["neighbors"] == [], summary
