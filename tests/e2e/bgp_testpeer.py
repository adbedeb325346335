"""A minimal BGP speaker for robustness tests: plain sockets and struct, no BGP library.

It connects to (or accepts from) a speaker, does OPEN (capabilities MP l2vpn/evpn 25/70, 4-octet
AS, route refresh) and KEEPALIVE, answers keepalives from a thread, sends any bytes it is given and
records what comes back (UPDATEs, NOTIFICATIONs as (code, subcode), the connection closing).

Builders make valid EVPN UPDATEs (RFC 7432 type 2 MAC/IP and type 3 inclusive multicast, RFC 8365
VXLAN: label = VNI, encapsulation extended community 0x030c tunnel type 8, PMSI ingress
replication) and the malformations of RFC 7606 in `MALFORMED`, each with the reaction RFC 7606
asks for. Checked against FRR bgpd 8.4 and GoBGP 3.10, which install these routes and decode them
field by field (test_evpn_robustness.py::test_testpeer_against_frr).

Sockets are made inside a network namespace with `bgp_peers.netns`, so the pytest process itself
never leaves its own.
"""

import ipaddress
import queue
import socket
import struct
import threading
import time

from bgp_peers import netns

MARKER = b"\xff" * 16
OPEN, UPDATE, NOTIFICATION, KEEPALIVE, ROUTE_REFRESH = 1, 2, 3, 4, 5
AFI_L2VPN, SAFI_EVPN = 25, 70
# Path attribute type codes (RFC 4271, 4760, 4360, 6514).
ORIGIN, AS_PATH, NEXT_HOP, LOCAL_PREF, MP_REACH, MP_UNREACH, EXT_COMMUNITIES, PMSI_TUNNEL = 1, 2, 3, 5, 14, 15, 16, 22
OPTIONAL, TRANSITIVE, PARTIAL, EXTENDED = 0x80, 0x40, 0x20, 0x10
AS_TRANS = 23456


# ---- encoding ----

def message(mtype, body=b"", marker=MARKER):
    return marker + struct.pack("!HB", 19 + len(body), mtype) + body


def capability(code, value=b""):
    return struct.pack("!BB", code, len(value)) + value


def open_msg(asn, router_id, hold=9, caps=None, version=4):
    if caps is None:
        caps = [capability(1, struct.pack("!HBB", AFI_L2VPN, 0, SAFI_EVPN)),
                capability(65, struct.pack("!I", asn)), capability(2)]
    params = b"".join(struct.pack("!BB", 2, len(c)) + c for c in caps)
    body = struct.pack("!BHH4sB", version, asn if asn < 65536 else AS_TRANS, hold,
                       ipaddress.IPv4Address(router_id).packed, len(params)) + params
    return message(OPEN, body)


def keepalive():
    return message(KEEPALIVE)


def notification(code, subcode, data=b""):
    return message(NOTIFICATION, struct.pack("!BB", code, subcode) + data)


def update(attrs=b"", withdrawn=b"", nlri=b""):
    return message(UPDATE, struct.pack("!H", len(withdrawn)) + withdrawn + struct.pack("!H", len(attrs)) + attrs + nlri)


def attr(flags, code, value, length=None):
    """One path attribute; extended length when the value needs it (or EXTENDED is in flags).
    LENGTH overrides the encoded length (for malformations)."""
    n = len(value) if length is None else length
    if n > 255 or flags & EXTENDED:
        return struct.pack("!BBH", flags | EXTENDED, code, n) + value
    return struct.pack("!BBB", flags, code, n) + value


def origin(value=0, length=None):
    return attr(TRANSITIVE, ORIGIN, bytes([value]) if length is None else bytes([value]) * length, length)


def as_path(asns=(), four_octet=True):
    if not asns:
        return attr(TRANSITIVE, AS_PATH, b"")
    fmt = "!I" if four_octet else "!H"
    return attr(TRANSITIVE, AS_PATH, struct.pack("!BB", 2, len(asns)) + b"".join(struct.pack(fmt, a) for a in asns))


def local_pref(value=100):
    return attr(TRANSITIVE, LOCAL_PREF, struct.pack("!I", value))


def rt(asn, number):
    """Route target, two-octet AS specific (RFC 4360 §4: type 0x00, subtype 0x02)."""
    return struct.pack("!BBHI", 0x00, 0x02, asn, number)


def encap_vxlan():
    """BGP encapsulation extended community (RFC 9012 §4.1, RFC 8365 §5.1.3): tunnel type 8."""
    return struct.pack("!BB4xH", 0x03, 0x0C, 8)


def mac_mobility(seq, sticky=False):
    """RFC 7432 §7.7: type 0x06 subtype 0x00, flags (bit 0 sticky), reserved, sequence number."""
    return struct.pack("!BBBxI", 0x06, 0x00, 1 if sticky else 0, seq)


def ext_communities(*comms):
    return attr(OPTIONAL | TRANSITIVE, EXT_COMMUNITIES, b"".join(comms))


def pmsi(vni, endpoint):
    """PMSI tunnel attribute (RFC 6514 §5, RFC 8365 §5.1.3): ingress replication (6), label =
    VNI in the 3-octet field, tunnel identifier = the VTEP address."""
    return attr(OPTIONAL | TRANSITIVE, PMSI_TUNNEL,
                struct.pack("!BB", 0, 6) + vni.to_bytes(3, "big") + ipaddress.ip_address(endpoint).packed)


def rd_ip(ip, number):
    """Route distinguisher type 1: IPv4 address + 2-octet number."""
    return struct.pack("!H4sH", 1, ipaddress.IPv4Address(ip).packed, number)


def rd_as(asn, number):
    """Route distinguisher type 0: 2-octet AS + 4-octet number."""
    return struct.pack("!HHI", 0, asn, number)


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def evpn_type2(rd, mac, vni, ip=None, etag=0, esi=b"\0" * 10):
    """RFC 7432 §7.2 MAC/IP advertisement route; the MPLS label 1 field carries the VNI (RFC 8365)."""
    ipb = ipaddress.ip_address(ip).packed if ip else b""
    value = rd + esi + struct.pack("!I", etag) + bytes([48]) + mac_bytes(mac) + bytes([len(ipb) * 8]) + ipb \
        + vni.to_bytes(3, "big")
    return bytes([2, len(value)]) + value


def evpn_type3(rd, originator, etag=0):
    """RFC 7432 §7.3 inclusive multicast Ethernet tag route."""
    ipb = ipaddress.ip_address(originator).packed
    value = rd + struct.pack("!I", etag) + bytes([len(ipb) * 8]) + ipb
    return bytes([3, len(value)]) + value


def mp_reach(next_hop, nlri, afi=AFI_L2VPN, safi=SAFI_EVPN):
    nh = ipaddress.ip_address(next_hop).packed
    return attr(OPTIONAL, MP_REACH, struct.pack("!HBB", afi, safi, len(nh)) + nh + b"\0" + nlri)


def mp_unreach(nlri, afi=AFI_L2VPN, safi=SAFI_EVPN):
    return attr(OPTIONAL, MP_UNREACH, struct.pack("!HB", afi, safi) + nlri)


class Route:
    """One EVPN route to announce: its NLRI and the attributes that go with it."""

    def __init__(self, nlri, next_hop, comms, extra=b"", path=()):
        self.nlri, self.next_hop, self.comms, self.extra, self.path = nlri, next_hop, comms, extra, tuple(path)

    def attrs(self, first=None, mp=None, lp=None, comms=None):
        """MP_REACH first (RFC 7606 §5.1: so that a receiver that finds a later attribute
        malformed still knows which routes to treat as withdrawn), then ORIGIN, AS_PATH,
        LOCAL_PREF, EXT_COMMUNITIES and the extra ones. FIRST replaces the ORIGIN attribute's
        bytes, MP the MP_REACH's, LP the LOCAL_PREF's, COMMS the EXT_COMMUNITIES'."""
        o = origin() if first is None else first
        m = mp_reach(self.next_hop, self.nlri) if mp is None else mp
        lp = local_pref() if lp is None else lp
        c = ext_communities(*self.comms) if comms is None else comms
        return m + o + as_path(self.path) + lp + c + self.extra

    def announce(self):
        return update(self.attrs())

    def withdraw(self):
        return update(mp_unreach(self.nlri))


def type2_route(mac, vni, vtep, asn, ip=None, seq=0, sticky=False, rd=None, path=()):
    """A type-2 route with RT ASN:VNI; PATH is the AS_PATH (empty for iBGP)."""
    comms = [rt(asn, vni), encap_vxlan()]
    if seq or sticky:
        comms.append(mac_mobility(seq, sticky))
    return Route(evpn_type2(rd or rd_ip(vtep, vni & 0xFFFF), mac, vni, ip), vtep, comms, path=path)


def type3_route(vni, vtep, asn, rd=None, path=()):
    return Route(evpn_type3(rd or rd_ip(vtep, vni & 0xFFFF), vtep), vtep, [rt(asn, vni), encap_vxlan()],
                 extra=pmsi(vni, vtep), path=path)


def end_of_rib():
    """RFC 4724 §2: an UPDATE with an empty MP_UNREACH for l2vpn/evpn."""
    return update(mp_unreach(b""))


# ---- malformations (RFC 7606) ----
# Each builder takes a valid Route and returns the bad message. The reaction:
#   "treat-as-withdraw": the session stays up; the route the message carries is withdrawn.
#   "attribute-discard" / "kept": the session stays up; the route is installed.
#   ("session-reset", code, {subcodes}): a NOTIFICATION with that code and one of the subcodes,
#   then the connection closes.

def _bad_origin(r):  # RFC 7606 §7.1: undefined ORIGIN value
    return update(r.attrs(first=origin(7)))


def _origin_bad_length(r):  # RFC 7606 §7.1: ORIGIN length ≠ 1 (well-known, mandatory)
    return update(r.attrs(first=origin(0, length=2)))


def _missing_origin(r):  # RFC 7606 §3 (d): a well-known mandatory attribute is missing
    return update(r.attrs(first=b""))


def _local_pref_bad_length(r):  # RFC 7606 §7.5
    return update(r.attrs(lp=attr(TRANSITIVE, LOCAL_PREF, b"\0\0\0\0\0\x64")))


def _ext_comm_bad_length(r):  # RFC 7606 §7.14: length not a multiple of 8
    return update(r.attrs(comms=attr(OPTIONAL | TRANSITIVE, EXT_COMMUNITIES, b"".join(r.comms) + b"\0\0\0")))


def _duplicate_origin(r):  # RFC 7606 §3 (g): all but the first occurrence are discarded
    return update(r.attrs(first=origin(0) + origin(2)))


def _unknown_optional_transitive(r):  # RFC 4271 §5: unrecognized optional transitive: kept, passed on
    return update(r.attrs() + attr(OPTIONAL | TRANSITIVE, 255, b"nvo-test"))


def _duplicate_mp_reach(r):  # RFC 7606 §3 (g): MP_REACH twice → Malformed Attribute List (3, 1)
    m = mp_reach(r.next_hop, r.nlri)
    return update(r.attrs(mp=m + m))


def _mp_reach_nlri_overrun(r):  # RFC 7606 §5.3/§7.11: NLRI length past the attribute → session reset
    nlri = bytes([r.nlri[0], r.nlri[1] + 20]) + r.nlri[2:]
    return update(r.attrs(mp=mp_reach(r.next_hop, nlri)))


def _mp_reach_bad_next_hop_len(r):  # RFC 7606 §7.11: next hop length that is not an address
    nh = b"\x0a\x64\x00"
    bad = attr(OPTIONAL, MP_REACH, struct.pack("!HBB", AFI_L2VPN, SAFI_EVPN, len(nh)) + nh + b"\0" + r.nlri)
    return update(r.attrs(mp=bad))


def _attr_overrun(r):  # RFC 7606 §4: the last attribute's length runs past the attribute list
    # → treat-as-withdraw, the NLRI found by the Total Path Attribute Length (MP_REACH came first)
    body = r.attrs()
    return update(body + struct.pack("!BBB", OPTIONAL | TRANSITIVE, 8, 40) + b"\0\0\0\x64")


MALFORMED = {
    "bad_origin": (_bad_origin, "treat-as-withdraw"),
    "origin_bad_length": (_origin_bad_length, "treat-as-withdraw"),
    "missing_origin": (_missing_origin, "treat-as-withdraw"),
    "local_pref_bad_length": (_local_pref_bad_length, "treat-as-withdraw"),
    "ext_comm_bad_length": (_ext_comm_bad_length, "treat-as-withdraw"),
    "duplicate_origin": (_duplicate_origin, "attribute-discard"),
    "unknown_optional_transitive": (_unknown_optional_transitive, "kept"),
    "duplicate_mp_reach": (_duplicate_mp_reach, ("session-reset", 3, {1})),
    "mp_reach_nlri_overrun": (_mp_reach_nlri_overrun, ("session-reset", 3, {1, 9, 10})),
    "mp_reach_bad_next_hop_len": (_mp_reach_bad_next_hop_len, ("session-reset", 3, {1, 9})),
    "attr_overrun": (_attr_overrun, "treat-as-withdraw"),
}


# ---- decoding (what the other side sends) ----

def parse_open(body):
    version, asn, hold, rid, plen = struct.unpack("!BHH4sB", body[:10])
    caps, params = {}, body[10:10 + plen]
    while len(params) >= 2:
        ptype, l = params[0], params[1]
        p, params = params[2:2 + l], params[2 + l:]
        while ptype == 2 and len(p) >= 2:
            code, cl = p[0], p[1]
            caps.setdefault(code, []).append(p[2:2 + cl])
            p = p[2 + cl:]
    if 65 in caps:
        asn = struct.unpack("!I", caps[65][0])[0]
    return {"version": version, "asn": asn, "hold": hold, "router_id": str(ipaddress.IPv4Address(rid)), "caps": caps}


def parse_attrs(data):
    attrs = []
    while data:
        flags, code = data[0], data[1]
        if flags & EXTENDED:
            (l,) = struct.unpack("!H", data[2:4])
            value, data = data[4:4 + l], data[4 + l:]
        else:
            l = data[2]
            value, data = data[3:3 + l], data[3 + l:]
        attrs.append((flags, code, value))
    return attrs


def parse_evpn_nlri(data):
    routes = []
    while len(data) >= 2:
        rtype, l = data[0], data[1]
        v, data = data[2:2 + l], data[2 + l:]
        r = {"type": rtype, "rd": _rd_str(v[:8])}
        if rtype == 2:
            r["etag"] = struct.unpack("!I", v[18:22])[0]
            r["mac"] = ":".join(f"{b:02x}" for b in v[23:29])
            iplen = v[29] // 8
            r["ip"] = str(ipaddress.ip_address(v[30:30 + iplen])) if iplen else None
            r["vni"] = int.from_bytes(v[30 + iplen:33 + iplen], "big")
        elif rtype == 3:
            r["etag"] = struct.unpack("!I", v[8:12])[0]
            iplen = v[12] // 8
            r["ip"] = str(ipaddress.ip_address(v[13:13 + iplen]))
        routes.append(r)
    return routes


def _rd_str(rd):
    t = struct.unpack("!H", rd[:2])[0]
    if t == 1:
        return f"{ipaddress.IPv4Address(rd[2:6])}:{struct.unpack('!H', rd[6:8])[0]}"
    if t == 0:
        a, n = struct.unpack("!HI", rd[2:8])
        return f"{a}:{n}"
    a, n = struct.unpack("!IH", rd[2:8])
    return f"{a}:{n}"


def parse_update(body):
    """An UPDATE's EVPN content: {"reach": [routes with next_hop, rt, seq, pmsi], "withdraw": [...],
    "eor": bool}."""
    (wl,) = struct.unpack("!H", body[:2])
    (al,) = struct.unpack("!H", body[2 + wl:4 + wl])
    attrs = parse_attrs(body[4 + wl:4 + wl + al])
    out = {"reach": [], "withdraw": [], "eor": False, "attrs": attrs}
    comms, pmsi_ep, seq, nh = [], None, 0, None
    for _, code, v in attrs:
        if code == EXT_COMMUNITIES:
            for i in range(0, len(v) - 7, 8):
                c = v[i:i + 8]
                if c[0] == 0 and c[1] == 2:
                    comms.append("{}:{}".format(*struct.unpack("!HI", c[2:])))
                elif c[0] == 6 and c[1] == 0:
                    seq = struct.unpack("!I", c[4:])[0]
        elif code == PMSI_TUNNEL:
            pmsi_ep = str(ipaddress.ip_address(v[5:]))
    for _, code, v in attrs:
        if code == MP_REACH:
            nhl = v[3]
            nh = str(ipaddress.ip_address(v[4:4 + nhl]))
            for r in parse_evpn_nlri(v[5 + nhl:]):
                r.update(next_hop=nh, rt=comms, seq=seq, pmsi=pmsi_ep)
                out["reach"].append(r)
        elif code == MP_UNREACH:
            nlri = v[3:]
            out["eor"] = not nlri and len(attrs) == 1
            out["withdraw"] += parse_evpn_nlri(nlri)
    return out


# ---- the speaker ----

class TestPeer:
    """One BGP session from namespace NS, address LOCAL, to PEER (port 179)."""

    __test__ = False  # not a pytest class

    def __init__(self, ns, local, peer, asn, router_id=None, hold=9, port=179):
        self.ns, self.local, self.peer, self.asn, self.port = ns, local, peer, asn, port
        self.router_id, self.hold = router_id or local, hold
        self.sock = None
        self.inbox = queue.Queue()
        self.updates, self.notifications = [], []
        self.peer_open = None
        self.closed = threading.Event()
        self.established = False
        self._stop = threading.Event()
        self._send_lock = threading.Lock()
        self._threads = []

    # -- connection --
    def connect(self, timeout=10):
        """Active open: connects from LOCAL to PEER:port, retrying until TIMEOUT."""
        deadline = time.monotonic() + timeout
        while True:
            with netns(self.ns):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.local, 0))
            s.settimeout(2)
            try:
                s.connect((self.peer, self.port))
                break
            except OSError:
                s.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        self._start(s)
        return self

    def accept(self, timeout=30):
        """Passive open: listens on LOCAL:port and takes the first connection from PEER."""
        with netns(self.ns):
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((self.local, self.port))
            ls.listen(4)
            ls.settimeout(timeout)
            while True:
                s, (addr, _) = ls.accept()
                if addr == self.peer:
                    break
                s.close()
        finally:
            ls.close()
        self._start(s)
        return self

    def _start(self, s):
        s.settimeout(None)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        t = threading.Thread(target=self._reader, daemon=True)
        t.start()
        self._threads.append(t)

    def _recv_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def _reader(self):
        try:
            while not self._stop.is_set():
                head = self._recv_exact(19)
                length, mtype = struct.unpack("!HB", head[16:19])
                body = self._recv_exact(length - 19) if length > 19 else b""
                if mtype == NOTIFICATION:
                    self.notifications.append((body[0], body[1], body[2:]))
                elif mtype == UPDATE:
                    self.updates.append(parse_update(body))
                self.inbox.put((mtype, body))
        except (OSError, ConnectionError, struct.error):
            pass
        finally:
            self.closed.set()
            self.established = False

    def _keepalives(self, interval):
        while not self._stop.wait(interval):
            if self.closed.is_set():
                return
            try:
                self.send(keepalive())
            except OSError:
                return

    def send(self, data):
        with self._send_lock:
            self.sock.sendall(data)

    def next_message(self, types=None, timeout=10):
        """The next message received of one of TYPES (others are skipped): (type, body)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no BGP message of types {types} within {timeout}s "
                                     f"(notifications: {self.notifications}, closed: {self.closed.is_set()})")
            try:
                mtype, body = self.inbox.get(timeout=min(left, 0.2))
            except queue.Empty:
                if self.closed.is_set() and self.inbox.empty():
                    raise AssertionError(f"connection closed waiting for {types} "
                                         f"(notifications: {self.notifications})")
                continue
            if mtype == NOTIFICATION and NOTIFICATION not in (types or ()):
                raise AssertionError(f"NOTIFICATION {body[0]}/{body[1]} while waiting for {types}")
            if types is None or mtype in types:
                return mtype, body

    def handshake(self, open_bytes=None, timeout=10):
        """Sends OPEN, takes the peer's OPEN and KEEPALIVE, sends KEEPALIVE: Established."""
        self.send(open_bytes or open_msg(self.asn, self.router_id, self.hold))
        _, body = self.next_message((OPEN,), timeout)
        self.peer_open = parse_open(body)
        self.send(keepalive())
        self.next_message((KEEPALIVE,), timeout)
        self.established = True
        hold = min(self.hold, self.peer_open["hold"])
        if hold:
            t = threading.Thread(target=self._keepalives, args=(max(hold / 3, 0.5),), daemon=True)
            t.start()
            self._threads.append(t)
        return self.peer_open

    def wait_notification(self, timeout=10):
        """(code, subcode) of the first NOTIFICATION received, waiting up to TIMEOUT."""
        deadline = time.monotonic() + timeout
        while not self.notifications and time.monotonic() < deadline:
            if self.closed.is_set():
                time.sleep(0.1)  # the reader may still be appending
                break
            time.sleep(0.05)
        return self.notifications[0][:2] if self.notifications else None

    def wait_closed(self, timeout=10):
        return self.closed.wait(timeout)

    def received_routes(self):
        """Routes the peer announced and has not withdrawn, keyed (type, rd, mac/ip...)."""
        table = {}
        for u in self.updates:
            for r in u["withdraw"]:
                table.pop(_key(r), None)
            for r in u["reach"]:
                table[_key(r)] = r
        return list(table.values())

    def close(self, notify=True):
        self._stop.set()
        if self.sock is not None:
            if notify and not self.closed.is_set():
                try:
                    self.send(notification(6, 2))  # Cease, administrative shutdown
                except OSError:
                    pass
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self.sock.close()
        for t in self._threads:
            t.join(timeout=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _key(r):
    return (r["type"], r["rd"], r.get("mac"), r.get("ip"), r.get("etag"))
