"""ILA mappings from EVPN (docs/ila.md, "Mappings"; issue 18 item 5): no static mapping anywhere;
each nvod advertises the containers of its ILA network as type 2 MAC+IP routes whose next hop is
an address of its ILA locator /64 (fd00:1a:0:i::1), a GoBGP route reflector reflects them (IPv6
next hop in MP_REACH_NLRI), and the receivers take the locator from the next hop; the same with
FRR's bgpd as the reflector (it keeps and reflects the IPv6 next hop, though FRR 8.4 displays every
EVPN next hop as IPv4). Then c2 MOVES
from h2 to h3 with its MAC and IPv6 address (a live migration: the new port comes up while the
old one is still there, and the container announces itself with an unsolicited NA, RFC 4861
§7.2.6): h3 advertises it with a higher MAC mobility sequence (RFC 7432 §15) and c1 reaches it
again, within 2 s of the move (the issue's must-show).

      c1 (fd10::1)          c2 (fd10::2) ── moves ──►   c2
         |                     |                         |
   [ h1: nvod ]          [ h2: nvod ]              [ h3: nvod ]      ILA network 900, ila_mappings: evpn
   locator fd00:1a:0:1   fd00:1a:0:2               fd00:1a:0:3       (no container at first)
     eth0 fd00:100::1 ── eth0 fd00:100::2 ── ul: br0 ── eth0 fd00:100::3
                     RR fd00:100::250 (gobgpd), AS 65000, every host an iBGP client
"""

import json
import subprocess
import time

import pytest

from bgp_peers import (FrrRouteReflector, GobgpRouteReflector, best, configure_bgp, in_ns, nvod_routes, underlay_ns,
                       wait_nvod_established, wait_until)
from conftest import api
from rate_lab import assert_datapath

VNI = 900
RR = "fd00:100::250"
HOSTS = ("h1", "h2", "h3")
UL = {"h1": "fd00:100::1", "h2": "fd00:100::2", "h3": "fd00:100::3"}
# Each host's routes of the ILA network have its locator's ::1 as next hop (its BGP next hop,
# the underlay address, is not in the locator).
NEXT_HOP = {"h1": "fd00:1a:0:1::1", "h2": "fd00:1a:0:2::1", "h3": "fd00:1a:0:3::1"}

TOPOLOGY = """
underlay: {family: ipv6, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}, {name: h3}]
networks: [{vni: 900, encap: ila, flood: [], ila_mappings: evpn}]
containers:
  - {name: c1, host: h1, vni: 900, ip: 10.9.0.1/24, ipv6: "fd10::1/64"}
  - {name: c2, host: h2, vni: 900, ip: 10.9.0.2/24, ipv6: "fd10::2/64"}
"""


def reaches(lab, src, dst):
    """One echo, answered within 0.3 s."""
    return lab.exec(src, "ping", "-6", "-c", "1", "-W", "0.3", dst, check=False, timeout=10).returncode == 0


class Announcer:
    """An unsolicited Neighbor Advertisement (override, to all nodes; RFC 4861 §7.2.6) from
    container NAME, as a migrated VM announces itself: scapy is loaded beforehand (it takes a
    second or more) and sends on `fire()`, on whatever eth0 is then."""

    def __init__(self, lab, name, mac, addr):
        script = ("import sys\nfrom scapy.all import Ether, IPv6, ICMPv6ND_NA, ICMPv6NDOptDstLLAddr, sendp\n"
                  f"p = Ether(src='{mac}', dst='33:33:00:00:00:01')/IPv6(src='{addr}', dst='ff02::1', hlim=255)"
                  f"/ICMPv6ND_NA(R=0, S=0, O=1, tgt='{addr}')/ICMPv6NDOptDstLLAddr(lladdr='{mac}')\n"
                  "print('ready', flush=True)\nsys.stdin.readline()\n"
                  "sendp(p, iface='eth0', count=1, verbose=0)\nprint('sent', flush=True)\n")
        self.proc = subprocess.Popen(["ip", "netns", "exec", lab.ns(name), "/usr/bin/python3", "-c", script],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def fire(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "sent"
        self.proc.wait(timeout=10)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def where(lab, name):
    """Container NAME's eth0: MAC, MTU, global IPv6 addresses (with prefix), default gateway."""
    link = json.loads(lab.exec(name, "ip", "-j", "addr", "show", "eth0").stdout)[0]
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])
             if a["family"] == "inet6" and a.get("scope") == "global"]
    gw = json.loads(lab.exec(name, "ip", "-j", "-6", "route", "show", "default").stdout)[0]["gateway"]
    return link["address"], str(link["mtu"]), addrs, gw


def move(lab, name, to_host, eth0, announcer):
    """Moves container NAME to TO_HOST with its MAC, IPv6 addresses and default route (ETH0, as
    `where` gave them), as a live migration does: a new veth `c-<name>` attached to TO_HOST's
    nvod becomes its eth0 while the old one (still a port of the old host) is renamed old0 and
    taken down; then the container announces itself."""
    port = f"c-{name}"
    mac, mtu, addrs, gw = eth0
    lab.exec(to_host, "ip", "link", "add", port, "mtu", mtu, "type", "veth", "peer", "name", "eth1", "mtu", mtu,
             "netns", lab.ns(name))
    lab.exec(to_host, "ip", "link", "set", port, "up")
    api(lab, to_host, "POST", "/v1/ports", {"name": port, "vni": VNI})
    lab.exec(name, "ip", "link", "set", "eth0", "down")
    lab.exec(name, "ip", "link", "set", "eth0", "name", "old0")
    lab.exec(name, "ip", "link", "set", "eth1", "name", "eth0")
    lab.exec(name, "ip", "link", "set", "eth0", "address", mac)
    for a in addrs:
        lab.exec(name, "ip", "-6", "addr", "add", a, "dev", "eth0", "nodad")
    lab.exec(name, "ip", "link", "set", "eth0", "up")
    lab.exec(name, "ip", "-6", "route", "replace", "default", "via", gw, "dev", "eth0")
    announcer.fire()


REFLECTORS = {"gobgp": GobgpRouteReflector, "frr": FrrRouteReflector}


@pytest.mark.parametrize("reflector", sorted(REFLECTORS))
def test_ila_mappings_from_evpn_and_a_moved_container(lab_factory, reflector):
    lab = lab_factory(TOPOLOGY)
    assert_datapath(lab)
    # The lab installed no mapping: whatever maps an identifier comes from EVPN.
    for h in HOSTS:
        assert api(lab, h, "GET", f"/v1/networks/{VNI}/routes") == [], h
    ns = underlay_ns(lab)
    in_ns(ns, "ip", "addr", "replace", f"{RR}/64", "dev", "br0", "nodad")
    in_ns(ns, "ip", "link", "set", "lo", "up")
    with REFLECTORS[reflector](ns, RR, 65000, [UL[h] for h in HOSTS], router_id="10.255.0.250") as rr:
        for i, h in enumerate(HOSTS, 1):
            configure_bgp(lab, h, f"10.255.0.{i}", [RR])
        wait_nvod_established(lab, HOSTS, RR, timeout=30)
        rr.wait_established([UL[h] for h in HOSTS], timeout=15)

        # A container is advertised once it has spoken from its address (as EVPN advertises
        # a MAC+IP once ARP/ND is snooped): the first pings teach h1 and h2 their containers.
        def both_ways():
            # Both directions every round: each first ping is what teaches its own host.
            there, back = reaches(lab, "c1", "fd10::2"), reaches(lab, "c2", "fd10::1")
            return there and back
        wait_until(both_ways, timeout=20, what="c1 ⇄ c2 through EVPN-installed mappings")
        c2 = lab.mac("c2")
        r = best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c2, ip="fd10::2")
        assert r and r["vtep"] == NEXT_HOP["h2"] and r["source"] != "local", nvod_routes(lab, "h1", vni=VNI)
        local = best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=c2, ip="fd10::2", source="local")
        assert local and local["vtep"] == NEXT_HOP["h2"], nvod_routes(lab, "h2", vni=VNI)
        # The reflector holds it with the IPv6 next hop (it decoded and kept MP_REACH's 16 bytes;
        # FRR 8.4 does not display an IPv6 EVPN next hop, but h1's route above came through it).
        shown = NEXT_HOP["h2"] if reflector == "gobgp" else None
        assert any(x["type"] == 2 and x["mac"] == c2 and x["ip"] == "fd10::2" and x["nexthop"] == shown
                   for x in rr.routes()), rr.routes()
        # No type 3 route for an ILA network (nothing floods), and still no static mapping.
        for h in HOSTS:
            assert nvod_routes(lab, h, vni=VNI, rtype=3) == [], h
            assert api(lab, h, "GET", f"/v1/networks/{VNI}/routes") == [], h
        old_seq = local["seq"]

        eth0 = where(lab, "c2")
        announcer = Announcer(lab, "c2", c2, "fd10::2")
        try:
            t0 = time.monotonic()
            move(lab, "c2", "h3", eth0, announcer)
        finally:
            announcer.close()
        deadline = t0 + 2.0
        while not reaches(lab, "c1", "fd10::2"):
            assert time.monotonic() < deadline, (
                f"c1 does not reach c2 {time.monotonic() - t0:.2f} s after the move",
                nvod_routes(lab, "h1", vni=VNI, rtype=2))
        took = time.monotonic() - t0
        print(f"ila/evpn mobility: c1 reaches the moved c2 {took * 1000:.0f} ms after the move began")

        # h3 won with a higher sequence; h1 follows it; h2 gave up its local route.
        def moved():
            r = best(nvod_routes(lab, "h1", vni=VNI, rtype=2), 2, mac=c2, ip="fd10::2")
            return r and r["vtep"] == NEXT_HOP["h3"] and r["seq"] > old_seq
        wait_until(moved, timeout=5, what="h1 holding c2's route from h3 with a higher sequence")
        new = best(nvod_routes(lab, "h3", vni=VNI, rtype=2), 2, mac=c2, ip="fd10::2", source="local")
        assert new and new["seq"] == old_seq + 1 and new["vtep"] == NEXT_HOP["h3"], nvod_routes(lab, "h3", vni=VNI)
        wait_until(lambda: not best(nvod_routes(lab, "h2", vni=VNI, rtype=2), 2, mac=c2, source="local"),
                   timeout=5, what="h2 withdrawing its route for c2")
        # The old port goes: nothing changes for c1.
        api(lab, "h2", "DELETE", "/v1/ports/c-c2")
        lab.exec("h2", "ip", "link", "del", "c-c2")
        lab.ping("c1", "fd10::2", count=3)
        lab.ping("c2", "fd10::1", count=3)
        for h in HOSTS:
            assert api(lab, h, "GET", f"/v1/networks/{VNI}/routes") == [], h
            assert lab.counters(h)["drops"]["malformed_tunnel"] == 0, h
