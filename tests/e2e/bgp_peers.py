"""Real BGP/EVPN peers for the end-to-end tests: FRR and GoBGP route reflectors, FRR as a VTEP.

Where they run: a lab's underlay namespace (`nvo-<lab>-ul`) holds the bridge `br0` every host's
eth0 hangs off. `underlay_address(lab, addr)` gives br0 one more address in the underlay prefix
(the lab numbers hosts from .1, so .250 and up are free) and a route reflector runs right there,
reachable from every host without a route:

      [ h1 ]   [ h2 ]   [ k1: zebra+bgpd ]        hosts: .1 .2 .3 ...
        \\        |        /
   nvo-<lab>-ul: br0 10.100.0.250 (RR: bgpd -Z or gobgpd), .251 (the Python test peer)

An FRR VTEP runs on top of a lab *kernel* host (`kind: kernel, learning: false`): the lab
already made `vx<VNI>` (with `local <locator>`, which zebra reads the VTEP address from, and
`nolearning`) inside bridge `br<VNI>` with the containers' veths. FrrVtep checks that and removes
the static all-zeros flood entries the lab may have added, so flooding comes from EVPN type-3
routes only.

Every daemon runs in the foreground under `ip netns exec` (which execs, so the pid is the
daemon's), with a private directory; `stop()` ends it by pid (SIGTERM, then SIGKILL) and every
class is a context manager, so a failing test leaves nothing running.
"""

import contextlib
import ctypes
import grp
import json
import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

RR_ADDR = "10.100.0.250"
PEER_ADDR = "10.100.0.251"
ASN = 65000
FRR_LIB = "/usr/lib/frr"
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def sh(*cmd, check=True, timeout=30):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def in_ns(ns, *cmd, check=True, timeout=30):
    return sh("ip", "netns", "exec", ns, *cmd, check=check, timeout=timeout)


@contextlib.contextmanager
def netns(name):
    """Runs the body with this thread in namespace NAME (sockets made there stay there)."""
    orig = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, _CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        try:
            yield
        finally:
            if _libc.setns(orig, _CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back to the original namespace")
    finally:
        os.close(orig)
        os.close(target)


def underlay_ns(lab):
    return lab.ns("ul")


def underlay_address(lab, addr, prefix_len=24):
    """Gives the underlay bridge ADDR, so a peer can run in the underlay namespace."""
    ns = underlay_ns(lab)
    in_ns(ns, "ip", "addr", "replace", f"{addr}/{prefix_len}", "dev", "br0")
    in_ns(ns, "ip", "link", "set", "lo", "up")
    return ns


def wait_until(pred, timeout=20.0, interval=0.2, what="condition"):
    """conftest.wait_for with the longer default that BGP convergence wants."""
    from conftest import wait_for
    return wait_for(pred, timeout=timeout, interval=interval, what=what)


class Daemon:
    """One process in a namespace, started in the foreground and stopped by its pid."""

    def __init__(self, ns, argv, log):
        self.ns, self.argv, self.log = ns, [str(a) for a in argv], pathlib.Path(log)
        self.proc = None

    def start(self):
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, *self.argv], stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, grace=3.0):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.proc = None

    def tail(self, n=30):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def private_dir(prefix, owner=None):
    """A directory under /tmp that OWNER (e.g. frr) can use: pytest's tmp_path is root-only."""
    d = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    d.chmod(0o755)
    if owner:
        os.chown(d, pwd.getpwnam(owner).pw_uid, grp.getgrnam(owner).gr_gid)
    return d


class _Frr:
    """What FRR route reflectors and VTEPs share: a directory, daemons, vtysh."""

    def __init__(self, ns, name):
        self.ns, self.name = ns, name
        self.dir = private_dir(f"nvo-frr-{name}-{os.getpid()}-", owner="frr")
        self.daemons = []

    def _daemon(self, prog, conf_text, extra=()):
        conf = self.dir / f"{prog}.conf"
        conf.write_text(conf_text)
        os.chown(conf, pwd.getpwnam("frr").pw_uid, grp.getgrnam("frr").gr_gid)
        d = self.dir
        argv = [f"{FRR_LIB}/{prog}", "-f", conf, "-i", d / f"{prog}.pid", "-z", d / "zserv.api",
                "--vty_socket", d, "-u", "frr", "-g", "frr", *extra]
        daemon = Daemon(self.ns, argv, d / f"{prog}.out").start()
        self.daemons.append(daemon)
        wait_until(lambda: (d / f"{prog}.vty").exists() or not daemon.alive(), timeout=10,
                   what=f"{prog} of {self.name} to open its vty")
        if not daemon.alive():
            raise AssertionError(f"{prog} of {self.name} died:\n{daemon.tail()}\n{self.log_tail()}")
        return daemon

    def _start_or_close(self):
        """Starts the daemons; if one fails, stops those already started (the constructor then
        raises, so no `with` would stop them)."""
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def vtysh(self, *commands, check=True):
        args = []
        for c in commands:
            args += ["-c", c]
        return sh("vtysh", "--vty_socket", self.dir, *args, check=check).stdout

    def vtysh_json(self, command):
        out = self.vtysh(command)
        return json.loads(out) if out.strip() else {}

    def log_tail(self, n=40):
        p = self.dir / "frr.log"
        try:
            return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def routes(self):
        """`show bgp l2vpn evpn json`, flattened by `frr_evpn_routes`."""
        return frr_evpn_routes(self.vtysh_json("show bgp l2vpn evpn json"))

    def summary(self):
        """`show bgp l2vpn evpn summary json`: {"peers": {addr: {"state": ..., ...}}, ...}."""
        s = self.vtysh_json("show bgp l2vpn evpn summary json")
        return s.get("l2VpnEvpn", s)

    def peer_state(self, addr):
        return self.summary().get("peers", {}).get(addr, {}).get("state")

    def wait_established(self, addrs, timeout=30):
        wait_until(lambda: all(self.peer_state(a) == "Established" for a in addrs), timeout=timeout,
                   what=f"{self.name}: sessions with {addrs} established "
                        f"(now {[(a, self.peer_state(a)) for a in addrs]})")

    def stop(self):
        for d in reversed(self.daemons):
            d.stop()
        self.daemons = []

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            print(f"--- {self.name} log ---\n{self.log_tail()}")
        self.close()


def _frr_header(name, log):
    return (f"frr defaults datacenter\nhostname {name}\nlog file {log} debugging\n"
            "log timestamp precision 3\n!\n")


class FrrRouteReflector(_Frr):
    """bgpd -Z (no zebra) in NS as an l2vpn evpn route reflector for CLIENTS, listening on ADDR
    only (so another speaker may listen on another address of the same namespace). Graceful
    restart helper is FRR's default: a client that advertised GR keeps its routes as stale.
    EBGP maps more neighbours to their AS (FRR relaxes RFC 7606 error handling for eBGP peers
    only: an iBGP peer's malformed attribute resets the session). PASSWORD: TCP-MD5 with every
    client (`neighbor CLIENTS password`); TTL_SECURITY: GTSM with every client (`ttl-security
    hops 1`). ROUTER_ID: its router and cluster ID (default ADDR; an IPv4 one when ADDR is IPv6)."""

    def __init__(self, ns, addr, asn, clients, keepalive=3, hold=9, debug=False, ebgp=None, password=None,
                 ttl_security=False, router_id=None):
        super().__init__(ns, f"rr-{addr}")
        self.addr, self.asn, self.clients, self.ebgp = addr, asn, list(clients), dict(ebgp or {})
        self.router_id = router_id or addr
        self.keepalive, self.hold, self.debug = keepalive, hold, debug
        self.password, self.ttl_security = password, ttl_security
        self._start_or_close()

    def config(self):
        c = _frr_header("rr", self.dir / "frr.log")
        if self.debug:
            c += "debug bgp neighbor-events\ndebug bgp updates\n!\n"
        c += (f"router bgp {self.asn}\n bgp router-id {self.router_id}\n no bgp default ipv4-unicast\n"
              f" bgp cluster-id {self.router_id}\n coalesce-time 100\n bgp graceful-restart\n"
              f" timers bgp {self.keepalive} {self.hold}\n"
              f" neighbor CLIENTS peer-group\n neighbor CLIENTS remote-as {self.asn}\n"
              f" neighbor CLIENTS timers connect 1\n")
        if self.password:
            c += f" neighbor CLIENTS password {self.password}\n"
        if self.ttl_security:
            c += " neighbor CLIENTS ttl-security hops 1\n"
        for a in self.clients:
            c += f" neighbor {a} peer-group CLIENTS\n"
        for a, peer_as in self.ebgp.items():
            c += f" neighbor {a} remote-as {peer_as}\n neighbor {a} timers connect 1\n"
        c += (" address-family l2vpn evpn\n  neighbor CLIENTS activate\n"
              "  neighbor CLIENTS route-reflector-client\n")
        for a in self.ebgp:
            c += f"  neighbor {a} activate\n"
        c += " exit-address-family\n!\n"
        return c

    def start(self):
        self._daemon("bgpd", self.config(), extra=["-Z", "-l", self.addr])
        return self

    def restart(self):
        self.stop()
        self.start()


class FrrVtep(_Frr):
    """zebra + bgpd on a lab kernel host: an EVPN VTEP with the kernel's VXLAN devices, a client
    of the route reflector at RR_ADDR, advertising every VNI (advertise-all-vni)."""

    def __init__(self, ns, vtep_ip, asn, rr_addr, vnis, keepalive=3, hold=9):
        super().__init__(ns, f"vtep-{vtep_ip}")
        self.vtep_ip, self.asn, self.rr_addr, self.vnis = vtep_ip, asn, rr_addr, list(vnis)
        self.keepalive, self.hold = keepalive, hold
        self._check_devices()
        self._start_or_close()

    def _check_devices(self):
        for vni in self.vnis:
            info = json.loads(in_ns(self.ns, "ip", "-d", "-j", "link", "show", f"vx{vni}").stdout)[0]
            vx = info.get("linkinfo", {}).get("info_data", {})
            assert vx.get("local") == self.vtep_ip, f"vx{vni} has no `local {self.vtep_ip}`: {vx}"
            assert vx.get("learning") is False, f"vx{vni} learns (give the host learning: false): {vx}"
            assert info.get("master") == f"br{vni}", f"vx{vni} is not in br{vni}: {info}"
            # Only EVPN type-3 routes say where to flood.
            fdb = json.loads(in_ns(self.ns, "bridge", "-j", "fdb", "show", "dev", f"vx{vni}").stdout)
            for e in fdb:
                if e.get("mac") == "00:00:00:00:00:00" and e.get("dst"):
                    in_ns(self.ns, "bridge", "fdb", "del", "00:00:00:00:00:00", "dev", f"vx{vni}", "dst", e["dst"])

    def start(self):
        header = _frr_header("vtep", self.dir / "frr.log")
        self._daemon("zebra", header)
        bgp = header + (
            f"router bgp {self.asn}\n bgp router-id {self.vtep_ip}\n no bgp default ipv4-unicast\n"
            f" coalesce-time 100\n bgp graceful-restart\n timers bgp {self.keepalive} {self.hold}\n"
            f" neighbor {self.rr_addr} remote-as {self.asn}\n neighbor {self.rr_addr} timers connect 1\n"
            f" address-family l2vpn evpn\n  neighbor {self.rr_addr} activate\n  advertise-all-vni\n"
            " exit-address-family\n!\n")
        self._daemon("bgpd", bgp)
        return self

    def restart(self):
        self.stop()
        self.start()

    def macs(self, vni):
        """zebra's MAC table of VNI: {mac: {"type": "local"|"remote", "remoteVtep": ..., ...}}."""
        return self.vtysh_json(f"show evpn mac vni {vni} json").get("macs", {})

    def remote_vteps(self, vni):
        v = self.vtysh_json(f"show evpn vni {vni} json")
        return v.get("remoteVteps", v.get("numRemoteVteps", []))


class GobgpRouteReflector:
    """gobgpd in NS as an l2vpn-evpn route reflector for CLIENTS, BGP on ADDR:179, its gRPC API
    on 127.0.0.1:50051 inside the namespace (lo must be up, `underlay_address` does it).
    PASSWORD: TCP-MD5 with every client (`auth-password`); TTL_SECURITY: GTSM (`ttl-security`,
    ttl-min 255). ROUTER_ID: its router and cluster ID (default ADDR; an IPv4 one when ADDR is
    IPv6)."""

    def __init__(self, ns, addr, asn, clients, keepalive=3, hold=9, password=None, ttl_security=False,
                 router_id=None):
        self.ns, self.addr, self.asn, self.clients = ns, addr, asn, list(clients)
        self.router_id = router_id or addr
        self.keepalive, self.hold = keepalive, hold
        self.password, self.ttl_security = password, ttl_security
        self.dir = private_dir(f"nvo-gobgp-{os.getpid()}-")
        self.daemon = None
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def config(self):
        c = (f'[global.config]\n  as = {self.asn}\n  router-id = "{self.router_id}"\n'
             f'  local-address-list = ["{self.addr}"]\n')
        for a in self.clients:
            c += (f'\n[[neighbors]]\n  [neighbors.config]\n    neighbor-address = "{a}"\n    peer-as = {self.asn}\n'
                  + (f'    auth-password = "{self.password}"\n' if self.password else '')
                  + ('  [neighbors.ttl-security.config]\n    enabled = true\n    ttl-min = 255\n'
                     if self.ttl_security else '')
                  + f'  [neighbors.timers.config]\n    connect-retry = 1\n    hold-time = {self.hold}\n'
                  f'    keepalive-interval = {self.keepalive}\n'
                  f'  [neighbors.route-reflector.config]\n    route-reflector-client = true\n'
                  f'    route-reflector-cluster-id = "{self.router_id}"\n'
                  f'  [neighbors.graceful-restart.config]\n    enabled = true\n'
                  f'  [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n'
                  f'      afi-safi-name = "l2vpn-evpn"\n'
                  f'    [neighbors.afi-safis.mp-graceful-restart.config]\n      enabled = true\n')
        return c

    def start(self):
        conf = self.dir / "gobgpd.toml"
        conf.write_text(self.config())
        self.daemon = Daemon(self.ns, ["gobgpd", "-f", conf, "-t", "toml", "-p", "-l", "debug",
                                       "--api-hosts", "127.0.0.1:50051", "--pprof-disable"],
                             self.dir / "gobgpd.log").start()
        wait_until(lambda: self.gobgp("global", check=False).returncode == 0 or not self.daemon.alive(),
                   timeout=10, what="gobgpd's API")
        if not self.daemon.alive():
            raise AssertionError(f"gobgpd died:\n{self.daemon.tail()}")
        return self

    def stop(self):
        if self.daemon:
            self.daemon.stop()

    def restart(self):
        self.stop()
        self.start()

    def gobgp(self, *args, check=True):
        return in_ns(self.ns, "gobgp", *args, check=check)

    def routes(self):
        """`gobgp global rib -a evpn -j`, flattened by `gobgp_evpn_routes`."""
        out = self.gobgp("global", "rib", "-a", "evpn", "-j").stdout
        return gobgp_evpn_routes(json.loads(out) if out.strip() else {})

    def neighbors(self):
        out = self.gobgp("neighbor", "-j").stdout
        return json.loads(out) if out.strip() else []

    def peer_state(self, addr):
        for n in self.neighbors():
            if n.get("conf", {}).get("neighbor_address") == addr:
                st = n.get("state", {}).get("session_state")
                # gobgp -j gives the state as a number (6 = established) or a name.
                return "Established" if st in (6, "ESTABLISHED", "established") else str(st)
        return None

    def wait_established(self, addrs, timeout=30):
        wait_until(lambda: all(self.peer_state(a) == "Established" for a in addrs), timeout=timeout,
                   what=f"gobgp: sessions with {addrs} established (now {[(a, self.peer_state(a)) for a in addrs]})")

    def add_macadv(self, mac, ip, vni, rd, rt, nexthop, etag=0):
        """Injects a type-2 route (IP None: a MAC-only route). gobgp's CLI cannot attach a MAC
        mobility community; bgp_testpeer can."""
        self.gobgp("global", "rib", "-a", "evpn", "add", "macadv", mac, ip or "0.0.0.0", "etag", str(etag),
                   "label", str(vni), "rd", rd, "rt", rt, "encap", "vxlan", "nexthop", nexthop)

    def del_macadv(self, mac, ip, vni, rd, etag=0):
        self.gobgp("global", "rib", "-a", "evpn", "del", "macadv", mac, ip or "0.0.0.0", "etag", str(etag),
                   "label", str(vni), "rd", rd)

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None and self.daemon:
            print(f"--- gobgpd log ---\n{self.daemon.tail()}")
        self.close()


# ---- route tables of the peers, flattened to one shape ----
# {"type": 2|3, "rd": str, "mac": str|None, "ip": str|None, "vtep": str, "vni": int|None,
#  "stale": bool, "seq": int, "rt": [str], "best": bool}


def _frr_prefix(prefix):
    """Parses FRR's "[2]:[0]:[48]:[mac]" / "[2]:[0]:[48]:[mac]:[32]:[ip]" / "[3]:[0]:[32]:[ip]"."""
    parts = [p.strip("[]") for p in prefix.split("]:[")]
    rtype = int(parts[0])
    if rtype == 2:
        return {"type": 2, "mac": parts[3].lower(), "ip": parts[5] if len(parts) > 5 else None}
    if rtype == 3:
        return {"type": 3, "mac": None, "ip": parts[3]}
    return {"type": rtype, "mac": None, "ip": None}


def _frr_best(b):
    return bool(b.get("overall")) if isinstance(b, dict) else bool(b)


def frr_evpn_routes(j):
    routes = []
    for rd, entries in j.items():
        if not isinstance(entries, dict):
            continue
        for prefix, e in entries.items():
            if not isinstance(e, dict) or "paths" not in e:
                continue
            for path in e["paths"]:
                # FRR wraps each path in a list in some versions.
                for p in (path if isinstance(path, list) else [path]):
                    r = {"rd": rd, **_frr_prefix(prefix)}
                    nh = (p.get("nexthops") or [{}])[0].get("ip")
                    # FRR 8.4 shows every EVPN next hop as IPv4 (attr->nexthop): an IPv6 one,
                    # which it keeps and reflects unchanged, reads "0.0.0.0". Not a next hop.
                    nh = None if nh == "0.0.0.0" else nh
                    comm = p.get("extendedCommunity", {}).get("string", "")
                    seq = 0
                    for tok in comm.split():
                        if tok.startswith("MM:"):
                            seq = int(tok[3:].split(",")[0])
                    r.update(vtep=nh if r["type"] == 2 else (r["ip"] or nh), nexthop=nh,
                             stale=bool(p.get("stale")), best=_frr_best(p.get("bestpath")),
                             rt=[t[3:] for t in comm.split() if t.startswith("RT:")], seq=seq,
                             vni=p.get("vni"), peer=p.get("peerId"))
                    routes.append(r)
    return routes


def _gobgp_rd(rd):
    if isinstance(rd, dict):
        return f"{rd.get('admin')}:{rd.get('assigned')}"
    return str(rd)


def gobgp_evpn_routes(j):
    routes = []
    for _prefix, paths in j.items():
        for p in paths:
            n = p.get("nlri", {})
            rtype = n.get("type")
            value = n.get("value", {})
            r = {"type": rtype, "rd": _gobgp_rd(value.get("rd")), "stale": bool(p.get("stale")),
                 "best": bool(p.get("best")), "seq": 0, "rt": [], "vni": None, "peer": p.get("neighbor-ip")}
            ip = value.get("ip")
            ip = None if ip in (None, "<nil>", "0.0.0.0", "::") else ip
            if rtype == 2:
                r.update(mac=str(value.get("mac", "")).lower(), ip=ip, vni=(value.get("labels") or [None])[0])
            else:
                r.update(mac=None, ip=ip)
            nh = None
            for a in p.get("attrs", []):
                if a.get("type") == 14:
                    nh = a.get("nexthop")
                if a.get("type") == 22 and rtype == 3:
                    r["vni"] = a.get("label")
                if a.get("type") == 16:
                    for c in a.get("value", []):
                        if c.get("type") == 0 and c.get("subtype") == 2:
                            r["rt"].append(str(c.get("value")))
                        if c.get("type") == 6 and c.get("subtype") == 0:
                            r["seq"] = c.get("sequence", 0)
            r["nexthop"] = nh
            r["vtep"] = nh if rtype == 2 else (r["ip"] or nh)
            routes.append(r)
    return routes


def has_route(routes, rtype, vtep=None, mac=None, ip=None):
    return any(r["type"] == rtype and (vtep is None or r["vtep"] == vtep)
               and (mac is None or r.get("mac") == mac.lower()) and (ip is None or r.get("ip") == ip)
               for r in routes)


# ---- nvod's side: its BGP API (crates/api/src/evpn.rs), restarts, containers that move ----

def configure_bgp(lab, host, router_id, neighbors, **extra):
    """PUT /v1/bgp on HOST. NEIGHBORS: addresses or NeighborSpec dicts. Short timers by default
    (hold 9 s, connect retry 1 s) so sessions come up and fail over within a test."""
    from conftest import api
    specs = [n if isinstance(n, dict) else {"address": n} for n in neighbors]
    body = {"asn": ASN, "router_id": router_id, "neighbors": specs, "hold_time_s": 9, "connect_retry_s": 1, **extra}
    return api(lab, host, "PUT", "/v1/bgp", body)


def bgp_summary(lab, host):
    from conftest import api
    return api(lab, host, "GET", "/v1/bgp")


def nvod_neighbor(lab, host, addr):
    for n in bgp_summary(lab, host).get("neighbors", []):
        if n.get("address") == addr:
            return n
    return None


def wait_nvod_established(lab, hosts, addr, timeout=30):
    def up():
        return all((nvod_neighbor(lab, h, addr) or {}).get("state") == "established" for h in hosts)
    wait_until(up, timeout=timeout, what=f"nvods {hosts}: session with {addr} established "
               f"(now {[(h, (nvod_neighbor(lab, h, addr) or {}).get('state')) for h in hosts]})")


def nvod_routes(lab, host, vni=None, rtype=None):
    """GET /v1/evpn/routes[?vni=&type=]: a list of EvpnRoute dicts, MACs lowercased."""
    from conftest import api
    q = "&".join(f"{k}={v}" for k, v in (("vni", vni), ("type", rtype)) if v is not None)
    routes = api(lab, host, "GET", "/v1/evpn/routes" + (f"?{q}" if q else "")) or []
    for r in routes:
        if r.get("mac"):
            r["mac"] = r["mac"].lower()
    return routes


def best(routes, rtype, mac=None, ip=None, vtep=None, source=None):
    """The best route of RTYPE matching the given fields, or None."""
    for r in routes:
        if r["type"] == rtype and r.get("best") and (mac is None or r.get("mac") == mac.lower()) \
                and (ip is None or r.get("ip") == ip) and (vtep is None or r.get("vtep") == vtep) \
                and (source is None or r.get("source") == source):
            return r
    return None


def nvod_pid(lab, host):
    for pid in sh("ip", "netns", "pids", lab.ns(host)).stdout.split():
        try:
            if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "nvod":
                return int(pid)
        except OSError:
            pass
    return None


class RestartedNvod:
    """Kills HOST's nvod (SIGKILL by default) and starts it again with the same command line
    (same config and state directory) on `start()`. The lab does not know the new process, so
    `close()` ends it; use as a context manager."""

    def __init__(self, lab, host):
        self.lab, self.host, self.proc = lab, host, None
        self.pid = nvod_pid(lab, host)
        assert self.pid, f"no nvod in {host}"
        self.cmdline = [c.decode() for c in pathlib.Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")[:-1]]

    def kill(self, sig=signal.SIGKILL):
        os.kill(self.pid, sig)
        wait_until(lambda: not pathlib.Path(f"/proc/{self.pid}").exists(), timeout=10, what="nvod to die")

    def start(self):
        from conftest import RUN
        log = open(RUN / self.lab.name / f"{self.host}.log", "ab")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.lab.ns(self.host), *self.cmdline],
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        log.close()
        wait_until(lambda: self.lab.nvo(self.host, "node", check=False).returncode == 0, timeout=15,
                   what=f"restarted nvod on {self.host} to answer")
        return self.proc.pid

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def quiet_containers(lab, containers):
    """IPv6 off in the containers, so router solicitations and MLD reports do not flood."""
    for c in containers:
        for key in ("all", "default", "eth0"):
            lab.exec(c, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1", check=False)


def move_container(lab, name, from_host, to_host, vni):
    """Moves container NAME from FROM_HOST to TO_HOST as a live migration does: the new link
    comes up while the old port is still in place (FROM_HOST still has the MAC, so TO_HOST must
    win with a higher mobility sequence). A new veth `c-<name>` in TO_HOST, attached to its nvod,
    becomes the container's eth0 with the same MAC and addresses; the old one, renamed old0, is
    taken down. `drop_old_port` removes the old port later."""
    from conftest import api
    port = f"c-{name}"
    link = json.loads(lab.exec(name, "ip", "-j", "addr", "show", "eth0").stdout)[0]
    mac, mtu = link["address"], link["mtu"]
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", []) if a["family"] == "inet"]
    lab.exec(to_host, "ip", "link", "add", port, "mtu", mtu, "type", "veth", "peer", "name", "eth1", "mtu", mtu,
             "netns", lab.ns(name))
    lab.exec(to_host, "ip", "link", "set", port, "up")
    api(lab, to_host, "POST", "/v1/ports", {"name": port, "vni": vni})
    lab.exec(name, "ip", "link", "set", "eth0", "down")
    lab.exec(name, "ip", "addr", "flush", "dev", "eth0")
    lab.exec(name, "ip", "link", "set", "eth0", "name", "old0")
    lab.exec(name, "ip", "link", "set", "eth1", "name", "eth0")
    lab.exec(name, "ip", "link", "set", "eth0", "address", mac)
    for a in addrs:
        lab.exec(name, "ip", "addr", "add", a, "dev", "eth0")
    lab.exec(name, "ip", "link", "set", "eth0", "up")
    return mac, addrs


def drop_old_port(lab, name, from_host):
    """The old host lets go of a moved container's port (and deletes the veth, old0 with it)."""
    from conftest import api
    port = f"c-{name}"
    api(lab, from_host, "DELETE", f"/v1/ports/{port}")
    lab.exec(from_host, "ip", "link", "del", port)


def send_garp(lab, name, mac, ip, count=1):
    """A gratuitous ARP (request form, target = sender) from container NAME, sent with scapy;
    returns the wall-clock time (time.time()) it went out."""
    script = ("import time\nfrom scapy.all import Ether, ARP, sendp\n"
              f"p = Ether(src='{mac}', dst='ff:ff:ff:ff:ff:ff')/ARP(op=1, hwsrc='{mac}', psrc='{ip}', "
              f"hwdst='00:00:00:00:00:00', pdst='{ip}')\n"
              "t = time.time()\n"
              f"sendp(p, iface='eth0', count={count}, inter=0.05, verbose=0)\nprint(t)\n")
    return float(lab.exec(name, "/usr/bin/python3", "-c", script, timeout=60).stdout.split()[-1])


class UnderlayCapture:
    """tcpdump on the underlay bridge (every host's traffic) into PCAP while the body runs."""

    def __init__(self, lab, pcap, filter_expr="udp port 4789"):
        self.lab, self.pcap, self.filter = lab, pcap, filter_expr
        self.proc = None

    def __enter__(self):
        import select
        cmd = ["tcpdump", "-i", "br0", "--immediate-mode", "-U", "-n", "-Z", "root", "-w", str(self.pcap), self.filter]
        self.proc = subprocess.Popen(["ip", "netns", "exec", underlay_ns(self.lab), *cmd],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seen, deadline = "", time.monotonic() + 10
        while "listening on" not in seen:
            ready, _, _ = select.select([self.proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            line = self.proc.stderr.readline() if ready else ""
            if not line:
                self.proc.kill()
                raise AssertionError(f"tcpdump did not start on the underlay: {seen}")
            seen += line
        return self

    def __exit__(self, *exc):
        time.sleep(0.3)
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)

    def count(self, display_filter):
        out = sh("tshark", "-r", self.pcap, "-Y", display_filter, "-T", "fields", "-e", "frame.number").stdout
        return len([l for l in out.splitlines() if l.strip()])


class PingStream:
    """DURATION / INTERVAL pings (`ping -i INTERVAL -c N -W 1`) from a container in the
    background; `result()` gives (sent, received). A count, not a deadline (`-w`): with a
    deadline ping exits with the last echo still in flight, which then counts as lost (a
    suite run lost 1 of 216 that way on a path nothing disturbed)."""

    def __init__(self, lab, node, addr, duration, interval=0.05):
        self.interval = interval
        count = max(1, round(duration / interval))
        self.proc = subprocess.Popen(["ip", "netns", "exec", lab.ns(node), "ping", "-n", "-q", "-i", str(interval),
                                      "-W", "1", "-c", str(count), addr],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def result(self, timeout=120):
        import re
        out, _ = self.proc.communicate(timeout=timeout)
        m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        assert m, out
        return int(m.group(1)), int(m.group(2))

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
