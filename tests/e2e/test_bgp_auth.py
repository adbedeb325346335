"""Authenticated BGP (issue 15, item 6): nvod listens on its locator only, closes connections
from addresses that are no neighbour, signs its sessions with TCP-MD5 (RFC 2385) and applies
GTSM (RFC 5082) to directly connected neighbours — with FRR and GoBGP route reflectors.

      c1            c2
       |             |
   [ h1: nvod ]  [ h2: nvod ]
   .1   \\           / .2
         +-- nvo-<lab>-ul: br0 --+        underlay 10.100.0.0/24
      RR 10.100.0.250 (FRR bgpd -Z or gobgpd)      .251 / .252: a Python socket (no neighbour,
                                                    or a neighbour sending with TTL 64)

Every namespace is the lab's (created and removed by `nvo lab`); the peers are stopped by pid
by their context managers. What the kernel says is read with `nstat` inside the namespaces
(TCPMD5Failure, TCPMD5NotFound, TCPMinTTLDrop are per network namespace).
"""

import json
import socket
import time

import pytest

from bgp_peers import (ASN, PEER_ADDR, RR_ADDR, FrrRouteReflector, GobgpRouteReflector, UnderlayCapture, bgp_summary,
                       configure_bgp, netns, nvod_neighbor, nvod_routes, quiet_containers, underlay_address,
                       wait_nvod_established, wait_until)
from conftest import NVO, RUN, api, run, wait_for

VNI = 100
UL = {"h1": "10.100.0.1", "h2": "10.100.0.2"}
IP = {"c1": "10.0.0.1", "c2": "10.0.0.2"}
OTHER_ADDR = "10.100.0.252"
PASSWORD = "nvo-Md5-s3cret"

TWO_NVODS = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

ONE_NVOD = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}]
networks: [{vni: 100, flood: []}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
"""


def route_reflector(kind, lab, clients, **auth):
    ns = underlay_address(lab, RR_ADDR)
    if kind == "frr":
        return FrrRouteReflector(ns, RR_ADDR, ASN, clients, **auth)
    return GobgpRouteReflector(ns, RR_ADDR, ASN, clients, **auth)


def nstat(ns, counter):
    """A kernel TCP counter of namespace NS (TcpExt<COUNTER>; absolute, not since the last
    call, and not touching nstat's history file)."""
    name = f"TcpExt{counter}"
    out = run("ip", "netns", "exec", ns, "nstat", "-a", "-z", "-s", "-j", name).stdout
    data = json.loads(out)
    return int(data.get("kernel", data).get(name, 0))


def nvod_log(lab, host):
    return (RUN / lab.name / f"{host}.log").read_text(errors="replace")


def connect_from(ns, src, dst, port=179, ttl=None, timeout=3.0):
    """A TCP connection from SRC in namespace NS to DST:PORT with IP_TTL TTL; what happened:
    ("timeout", None), ("refused", None), ("closed", bytes read before EOF/RST) or ("open", the
    first bytes nvod sent)."""
    with netns(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl or 64)
        s.bind((src, 0))
        s.settimeout(timeout)
        try:
            s.connect((dst, port))
        except socket.timeout:
            return "timeout", None
        except ConnectionRefusedError:
            return "refused", None
        try:
            data = s.recv(4096)
        except socket.timeout:
            return "open", b""
        except ConnectionResetError:
            return "closed", b""
        return ("open", data) if data else ("closed", b"")
    finally:
        s.close()


@pytest.mark.parametrize("rr_kind,gtsm", [("frr", False), ("gobgp", False), ("frr", True), ("gobgp", True)])
def test_md5_sessions_with_route_reflectors(lab_factory, tmp_path, rr_kind, gtsm):
    """Both nvods peer with the RR with TCP-MD5 (and GTSM): sessions come up, type-3 and MAC
    routes go both ways, containers reach each other; every BGP segment on the wire is signed
    (and sent with TTL 255); the password shows nowhere."""
    lab = lab_factory(TWO_NVODS)
    quiet_containers(lab, ("c1", "c2"))
    hosts = ("h1", "h2")
    with route_reflector(rr_kind, lab, [UL[h] for h in hosts], password=PASSWORD, ttl_security=gtsm) as rr:
        with UnderlayCapture(lab, tmp_path / "bgp.pcap", "tcp port 179") as cap:
            t = time.monotonic()
            for h in hosts:
                configure_bgp(lab, h, UL[h], [{"address": RR_ADDR, "password": PASSWORD, "ttl_security": gtsm}])
            wait_nvod_established(lab, hosts, RR_ADDR, timeout=40)
            rr.wait_established([UL[h] for h in hosts], timeout=10)
            print(f"{rr_kind} md5{'+gtsm' if gtsm else ''}: established {time.monotonic() - t:.2f} s after PUT")
        from_nvods = " || ".join(f"ip.src == {UL[h]}" for h in hosts)
        signed = cap.count(f"({from_nvods}) && tcp.options.md5")
        unsigned = cap.count(f"({from_nvods}) && !tcp.options.md5")
        print(f"segments from the nvods: {signed} signed, {unsigned} not")
        assert signed > 0 and unsigned == 0
        if gtsm:
            assert cap.count(f"({from_nvods}) && ip.ttl != 255") == 0
        wait_until(lambda: all(any(r["best"] and r["source"] != "local" for r in nvod_routes(lab, h, vni=VNI, rtype=3))
                               for h in hosts), what="type-3 routes through the RR")
        wait_for(lambda: lab.ping("c1", IP["c2"], count=1, check=False).returncode == 0, timeout=15,
                 what="c1 → c2")
        mac2 = lab.mac("c2")
        wait_until(lambda: any(r["mac"] == mac2 and r["best"] for r in nvod_routes(lab, "h1", vni=VNI, rtype=2)),
                   what="c2's MAC route at h1")
        # The kernel signed and checked: the underlay saw no MD5 failure.
        ul = lab.ns("ul")
        assert nstat(ul, "TCPMD5Failure") == 0 and nstat(ul, "TCPMD5NotFound") == 0

        # Nowhere to be read: GET /v1/bgp, `nvo bgp show`, `nvo bgp summary`, nvod's log.
        summary = bgp_summary(lab, "h1")
        n = summary["config"]["neighbors"][0]
        assert n.get("password_set") is True and "password" not in n, n
        assert PASSWORD not in json.dumps(summary)
        for args in (("bgp", "show"), ("bgp", "summary")):
            for fmt in ("text", "json"):
                out = run(NVO, "--socket", lab.socket("h1"), "-o", fmt, *args).stdout
                assert PASSWORD not in out, out
        assert "password_set = true" in run(NVO, "--socket", lab.socket("h1"), "bgp", "show").stdout
        for h in hosts:
            assert PASSWORD not in nvod_log(lab, h)

        # What GET showed, written back (`nvo bgp neighbor add` does that), keeps the password:
        # the new configuration restarts the sessions, and the one with the RR comes back (it
        # could not without the password: the RR drops unsigned segments).
        run(NVO, "--socket", lab.socket("h1"), "bgp", "neighbor", "add", "10.100.0.99", "--passive")
        stored = bgp_summary(lab, "h1")["config"]["neighbors"]
        assert [n.get("password_set") for n in stored] == [True, None], stored
        wait_nvod_established(lab, ["h1"], RR_ADDR, timeout=40)
        lab.ping("c1", IP["c2"], count=2)


def test_wrong_password_keeps_the_session_down(lab_factory):
    """h1 has another password than the RR: no session, nvod says why, the kernel counts it."""
    lab = lab_factory(ONE_NVOD)
    with route_reflector("frr", lab, [UL["h1"]], password=PASSWORD) as rr:
        failures = nstat(lab.ns("ul"), "TCPMD5Failure")
        configure_bgp(lab, "h1", UL["h1"], [{"address": RR_ADDR, "password": "not-the-password"}])
        # With connect retry 1 s, a few attempts each way.
        time.sleep(10)
        n = nvod_neighbor(lab, "h1", RR_ADDR)
        assert n["state"] != "established" and n["established"] == 0, n
        assert rr.peer_state(UL["h1"]) != "Established"
        assert "tcp-md5 is on" in (n.get("last_error") or ""), n
        log = nvod_log(lab, "h1")
        line = [l for l in log.splitlines() if "tcp-md5 is on" in l]
        assert line and "10.100.0.250" in line[0], log[-2000:]
        # Logged once while it stays the same, not at every retry (about ten by now).
        assert len(line) <= 2, line
        # Both kernels saw bad signatures: the RR's from our SYNs, ours from the RR's.
        assert nstat(lab.ns("ul"), "TCPMD5Failure") > failures
        assert nstat(lab.ns("h1"), "TCPMD5Failure") > 0
        print(f"TCPMD5Failure: ul {nstat(lab.ns('ul'), 'TCPMD5Failure')}, h1 {nstat(lab.ns('h1'), 'TCPMD5Failure')}")
        # The right password brings it up.
        configure_bgp(lab, "h1", UL["h1"], [{"address": RR_ADDR, "password": PASSWORD}])
        wait_nvod_established(lab, ["h1"], RR_ADDR, timeout=30)


def test_listens_on_the_locator_only_and_refuses_strangers(lab_factory):
    lab = lab_factory(ONE_NVOD)
    ul = underlay_address(lab, PEER_ADDR)
    configure_bgp(lab, "h1", UL["h1"], [RR_ADDR])
    wait_for(lambda: bgp_summary(lab, "h1").get("listening"), what="nvod listening")
    assert bgp_summary(lab, "h1")["listening"] == [f"{UL['h1']}:179"]
    listeners = lab.exec("h1", "ss", "-Hltn", "sport = :179").stdout
    assert f"{UL['h1']}:179" in listeners and "0.0.0.0:179" not in listeners and "*:179" not in listeners, listeners
    # Not on loopback: only where configured.
    assert connect_from(lab.ns("h1"), "127.0.0.1", "127.0.0.1")[0] == "refused"

    # A host that is no neighbour: accepted by the kernel, closed by nvod at once, three times.
    for _ in range(3):
        t = time.monotonic()
        what, _ = connect_from(ul, PEER_ADDR, UL["h1"])
        took = time.monotonic() - t
        assert what == "closed" and took < 1.0, (what, took)
    assert bgp_summary(lab, "h1")["connections_refused"] == 3
    lines = [l for l in nvod_log(lab, "h1").splitlines() if "not a configured neighbour" in l]
    assert len(lines) == 1 and PEER_ADDR in lines[0], lines
    assert "3 connections refused" in run(NVO, "--socket", lab.socket("h1"), "bgp", "summary").stdout

    # listen_addresses moves it; listen = false closes it.
    configure_bgp(lab, "h1", UL["h1"], [RR_ADDR], listen_addresses=["127.0.0.1"])
    wait_for(lambda: bgp_summary(lab, "h1")["listening"] == ["127.0.0.1:179"], what="listening on 127.0.0.1")
    assert connect_from(ul, PEER_ADDR, UL["h1"])[0] == "refused"
    configure_bgp(lab, "h1", UL["h1"], [RR_ADDR], listen=False)
    assert bgp_summary(lab, "h1")["listening"] == []
    # Refused with the reason: a listen address that is no unicast address.
    e = api(lab, "h1", "PUT", "/v1/bgp", {"asn": ASN, "router_id": UL["h1"], "neighbors": [],
                                          "listen_addresses": ["224.0.0.5"]}, expect=400)
    assert "224.0.0.5" in json.dumps(e), e


def test_gtsm_refuses_low_ttl(lab_factory):
    """A GTSM neighbour whose SYN arrives with TTL 64 cannot connect; with TTL 255 it gets
    nvod's OPEN. Alone (every neighbour GTSM) the kernel drops the SYN; beside a neighbour
    without GTSM nvod reads the SYN's TTL and closes the connection."""
    lab = lab_factory(ONE_NVOD)
    ul = underlay_address(lab, PEER_ADDR)
    in_ul = ("ip", "netns", "exec", ul)
    run(*in_ul, "ip", "addr", "replace", f"{OTHER_ADDR}/24", "dev", "br0")
    gtsm = {"address": PEER_ADDR, "ttl_security": True, "passive": True}
    configure_bgp(lab, "h1", UL["h1"], [gtsm])
    wait_for(lambda: bgp_summary(lab, "h1").get("listening"), what="nvod listening")
    drops = nstat(lab.ns("h1"), "TCPMinTTLDrop")
    assert connect_from(ul, PEER_ADDR, UL["h1"], ttl=64)[0] == "timeout"
    assert nstat(lab.ns("h1"), "TCPMinTTLDrop") > drops
    what, data = connect_from(ul, PEER_ADDR, UL["h1"], ttl=255)
    assert what == "open" and data[:16] == b"\xff" * 16 and data[18] == 1, (what, data)

    # Beside a neighbour without GTSM the listener cannot require TTL 255 for everyone.
    configure_bgp(lab, "h1", UL["h1"], [gtsm, {"address": OTHER_ADDR, "passive": True}])
    time.sleep(0.5)
    what, _ = connect_from(ul, PEER_ADDR, UL["h1"], ttl=64)
    assert what == "closed", what
    assert bgp_summary(lab, "h1")["connections_ttl_refused"] == 1
    assert any("ttl 64, not 255" in l for l in nvod_log(lab, "h1").splitlines())
    what, data = connect_from(ul, PEER_ADDR, UL["h1"], ttl=255)
    assert what == "open" and data[18] == 1, (what, data)
    # The other neighbour connects with any TTL.
    what, data = connect_from(ul, OTHER_ADDR, UL["h1"], ttl=64)
    assert what == "open" and data[18] == 1, (what, data)
