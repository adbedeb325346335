"""The relay study: a tenant's traffic relayed on B by nvo, against B relaying with the kernel's
VXLAN decapsulation → bridge → VXLAN re-encapsulation (the comparison of the ovstack paper).

   c1 ──veth── ha ──veth── [ul: bridge br0] ──veth── hc ──veth── c2
 (client)                          │                         (server)
                                 veth
                                   │
                                  hb  (the relay)

   nftables on ha and hc drop what goes between them: every packet goes ha → hb → hc.

Every box is a network namespace; the containers are on ha and hc only, c1 talks to c2.

- nvo-relay: an `nvo lab` of three nvo hosts on nvod's userspace datapath, one network (VNI 100)
  on the `overlay` profile.
  ha routes destination hc to next hop hb, hc routes ha to hb, and each node knows only the
  locators it needs (ha and hc: hb's; hb: both). Broadcast goes to a tree node whose routes
  are ha → [ha, hb], hb → [ha, hc], hc → [hc, hb]. hb relays: TTL − 1, new outer addresses,
  the overlay header and frame untouched, never decapsulated.
- nvo-ebpf-relay: the same with every nvod on the kernel datapath; hb's tc program relays
  (`xdp = "off"`). nvo-xdp-relay: the same with hb's `xdp = "generic"`, the XDP relay
  (XDP_TX) in generic mode; driver mode on a veth did not deliver XDP_TX frames here.
  The endpoints' nvods route by node in userspace on both (the kernel path leaves node routing
  to nvod), so TCP and the UDP rates through c1 → c2 are bounded by them; the relay's own rate
  is `relay_kpps`.
- kernel-relay: built by hand with ip and bridge. ha and hc each have a VXLAN device (VNI 100,
  learning) in a bridge with the container's veth, and one static entry `00:00:00:00:00:00 dst
  hb`. hb has a bridge (learning) with two VXLAN devices, vx-a (VNI 100, UDP 4789, `dst ha`)
  and vx-c (VNI 100, UDP 4790, `dst hc`): a frame from ha is decapsulated by vx-a, switched by
  the bridge and encapsulated again by vx-c. Two devices because a bridge never sends a frame
  back out of the port it came in on, and the kernel allows one device per VNI and UDP port;
  a single device with hairpin mode would reflect every broadcast to its sender, whose bridge
  would then learn its own container's MAC on the tunnel port. Tenant MTU 1450 throughout.
- nvo-direct: two nvo hosts, the same network on the `overlay` profile, no relay and no cut
  (the `nvo-overlay` scenario of bench/nvobench/encaps.py).
- kernel-direct: two kernel hosts, VXLAN + bridge, no relay (the `kernel` scenario).

The direct scenarios say what a relay costs each of them. The relay's own packet rate
(`relay`, relay scenarios only): nvo-blast in ha's namespace sends tunnel packets — each
scenario's header around a 64-byte inner frame c1 → c2 — straight at hb as fast as it can, and
hb's underlay interface counts what it sends on (the underlay bridge drops it before hc, so
the receiver's work does not share the two CPUs). Every scenario is measured with the
same tools in rotating order, each repetition: RTT (ping, 128-byte IP packets every 2 ms),
TCP with one stream (iperf3), and UDP packet rate per payload size (nvo-blast). Sizes larger
than the tenant MTU minus 28 (IPv4 + UDP) are fragmented by c1's IP stack: every datagram
then crosses as several frames and is reassembled in c2.

The checks, read once traffic passes and again after the last measurement: on nvo-relay, hb's
overlay counter `relayed` grows and its network's `rx_underlay_frames` stays 0 (nothing
decapsulated); on kernel-relay, hb's bridge has learned both containers' MACs, c1's on vx-a
and c2's on vx-c (it switched decapsulated frames).
"""

import http.client
import json
import pathlib
import socket
import subprocess
import time

from . import measure, stats
from .encaps import SCENARIOS as PROFILE_SCENARIOS
from .scenarios import Kernel, Lab, Scenario, SetupFailed, ip, link_mtu
from .sh import CommandFailed, in_ns, run

KEYS = ["nvo-xdp-relay", "nvo-ebpf-relay", "nvo-relay", "kernel-relay", "nvo-direct",
        "kernel-direct"]
RELAYS = ["nvo-xdp-relay", "nvo-ebpf-relay", "nvo-relay", "kernel-relay"]
SIZES = [64, 128, 256, 512, 1024, 1400, 4096, 8900]
# (numerator, denominator) of every ratio the report shows; the first one leads.
PAIRS = [("nvo-xdp-relay", "kernel-relay"), ("nvo-ebpf-relay", "kernel-relay"),
         ("nvo-relay", "kernel-relay"), ("nvo-xdp-relay", "nvo-relay"),
         ("nvo-ebpf-relay", "nvo-relay"), ("nvo-relay", "nvo-direct"),
         ("kernel-relay", "kernel-direct"), ("nvo-direct", "kernel-direct")]
# What relaying costs each: relay ÷ direct (the report's TCP lines).
COST_PAIRS = [("nvo-relay", "nvo-direct"), ("kernel-relay", "kernel-direct")]
# The relay packet rate: inner frames of this many bytes sent straight at hb (see relay_pps).
RELAY_FRAME = 64
UL = {"ha": "10.100.0.1", "hb": "10.100.0.2", "hc": "10.100.0.3"}
VNI = 100
TREE = 0xff000001  # the broadcast tree's destination ID

RELAY_TOPOLOGY = """\
# Written by bench/run.py --relay: the nvo-relay scenario (see bench/nvobench/relay.py).
name: {name}
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}
hosts: [{{name: ha{nvod}}}, {{name: hb{nvod_hb}}}, {{name: hc{nvod}}}]
networks: [{{vni: {vni}, name: relay, encap: overlay, flood: []}}]
containers:
  - {{name: c1, host: ha, vni: {vni}, ip: 10.0.0.1/24}}
  - {{name: c2, host: hc, vni: {vni}, ip: 10.0.0.2/24}}
"""


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = str(path)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(sock, method, path, body=None):
    """One request to nvod's API; the decoded answer, or SetupFailed with nvod's words."""
    conn = _UnixHTTP(sock)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        text = resp.read().decode()
    except OSError as e:
        raise SetupFailed(f"{method} {path} on {sock}: {e}") from e
    finally:
        conn.close()
    if resp.status >= 300:
        raise SetupFailed(f"{method} {path} on {sock}: {resp.status} {text.strip()}")
    return json.loads(text) if text else None


def cut(sc, a, b):
    """No underlay path between hosts a and b: nftables on each drops the other's address."""
    for x, y in ((a, b), (b, a)):
        rules = ("add table inet cut\n"
                 "add chain inet cut out { type filter hook output priority 0; }\n"
                 "add chain inet cut in { type filter hook input priority 0; }\n"
                 f"add rule inet cut out ip daddr {UL[y]} counter drop\n"
                 f"add rule inet cut in ip saddr {UL[y]} counter drop\n")
        try:
            p = subprocess.run(in_ns(sc.ns(x), "nft", "-f", "-"), input=rules, text=True,
                               capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SetupFailed(f"nft in {sc.ns(x)}: {e}") from e
        if p.returncode != 0:
            raise SetupFailed(f"nft in {sc.ns(x)} exited {p.returncode}: {p.stderr.strip()}")


class NvoRelay(Lab):
    key = "nvo-relay"
    kind = "nvo"
    title = "nvo userspace relay on hb (overlay profile)"
    description = ("`nvo lab` with three nvo hosts on the userspace datapath, ha and hc cut "
                   "from each other; the network on the `overlay` profile, routes ha → hc and "
                   "hc → ha via hb; hb's nvod relays the overlay packets without decapsulating "
                   "them")
    # nvod's datapath on every host, and hb's xdp key (None: not written).
    datapath = "userspace"
    xdp = None
    # What /v1/node must say of hb's relay.
    relay_says = "userspace"

    def up(self, inv, env):
        path = pathlib.Path(env["workdir"]) / f"{self.name}.yaml"
        nvod = f", nvod: {{datapath: {self.datapath}}}"
        nvod_hb = (f", nvod: {{datapath: {self.datapath}, xdp: {self.xdp}}}" if self.xdp
                   else nvod)
        path.write_text(RELAY_TOPOLOGY.format(name=self.name, vni=VNI, nvod=nvod,
                                              nvod_hb=nvod_hb))
        inv.lab_up(self.name, path, env["nvod"])
        node = api(self.socket("hb"), "GET", "/v1/node")
        if not node.get("relay", "userspace").startswith(self.relay_says):
            raise SetupFailed(f"hb relays on {node.get('relay')!r}, not {self.relay_says}… "
                              f"(datapath {node.get('datapath')}: {node.get('datapath_reason')})")
        self.notes.append(f"hb: datapath {node.get('datapath')}, relay {node.get('relay')}")
        cut(self, "ha", "hc")
        ids = {h: api(self.socket(h), "GET", "/v1/overlay")["node_id"] for h in UL}
        self.ids = ids
        for h in UL:
            self._tree_network(h)
        for h, others in (("ha", ["hb"]), ("hc", ["hb"]), ("hb", ["ha", "hc"])):
            for o in others:
                api(self.socket(h), "PUT", f"/v1/overlay/nodes/{ids[o]}",
                    {"locators": [{"addr": UL[o], "weight": 1}]})
        for h, dst in (("ha", "hc"), ("hc", "ha")):
            api(self.socket(h), "PUT", f"/v1/overlay/routes/ethernet/{ids[dst]}",
                {"next_hops": [ids["hb"]]})
        for h, hops in (("ha", ["ha", "hb"]), ("hb", ["ha", "hc"]), ("hc", ["hc", "hb"])):
            api(self.socket(h), "PUT", f"/v1/overlay/routes/ethernet/{TREE}",
                {"next_hops": [ids[x] for x in hops]})
        self.tenant_mtu = link_mtu(self.ns("c1"), "eth0")
        self.notes.append("node IDs " + ", ".join(f"{h} {i}" for h, i in ids.items())
                          + f"; broadcast tree node {TREE:#x}")

    def relay_probe(self):
        """(hb's address and port, the payload prefix) of a packet hb relays to hc: the
        overlay header (TTL 64, VNI, node IDs) and an inner frame's headers c1 → c2."""
        ov = bytes([1, 7, 64, 0]) + VNI.to_bytes(3, "big") + bytes([0])
        ov += (0x01020304).to_bytes(4, "big") + self.ids["hc"].to_bytes(4, "big")
        ov += self.ids["ha"].to_bytes(4, "big")
        return f"{UL['hb']}:60002", ov + inner_eth(self)

    def _tree_network(self, host):
        """Re-creates the network on `host` with its broadcast going to the tree node (the
        lab creates it with a flood list), its ports with it."""
        sock = self.socket(host)
        ports = [p["name"] for p in api(sock, "GET", "/v1/ports") if p["vni"] == VNI]
        for p in ports:
            api(sock, "DELETE", f"/v1/ports/{p}")
        api(sock, "DELETE", f"/v1/networks/{VNI}")
        api(sock, "POST", "/v1/networks",
            {"vni": VNI, "encap": "overlay", "bum": {"mode": "overlay", "node": TREE}})
        for p in ports:
            api(sock, "POST", "/v1/ports", {"name": p, "vni": VNI})

    def daemons(self, inv):
        try:
            nodes = self.lab_status(inv).get("nodes", [])
        except (CommandFailed, ValueError):
            return {}
        return {n["name"]: n["nvod_pid"] for n in nodes if n.get("nvod_pid")}

    def check(self, inv):
        """hb's overlay and network counters: relayed, and frames it decapsulated."""
        out = run([inv.nvo, "--socket", self.socket("hb"), "-o", "json", "counters",
                   "--all"]).stdout
        c = json.loads(out)
        net = c.get("networks", {}).get(str(VNI), {})
        ov = c.get("overlay", {})
        return {"hb_relayed": ov.get("relayed"), "hb_ttl_expired": ov.get("ttl_expired"),
                "hb_rx_underlay_frames": net.get("rx_underlay_frames")}


class NvoEbpfRelay(NvoRelay):
    key = "nvo-ebpf-relay"
    title = "nvo kernel-path relay on hb, tc (overlay profile)"
    description = ("as nvo-relay with every nvod on the kernel datapath (`datapath = \"ebpf\"`) "
                   "and hb's `xdp = \"off\"`: hb's tc program on its underlay interface relays "
                   "the overlay packets (the endpoints' nvods still route by node in userspace)")
    datapath = "ebpf"
    xdp = "off"
    relay_says = "tc on"


class NvoXdpRelay(NvoRelay):
    key = "nvo-xdp-relay"
    title = "nvo kernel-path relay on hb, XDP generic (overlay profile)"
    description = ("as nvo-ebpf-relay with hb's `xdp = \"generic\"`: nvo_relay runs as generic "
                   "XDP on hb's underlay veth and sends relayed packets back out with XDP_TX "
                   "(driver-mode XDP on a veth did not deliver its XDP_TX frames to the peer "
                   "here, so the veth lab measures generic mode)")
    datapath = "ebpf"
    xdp = "generic"
    relay_says = "xdp generic"


def inner_eth(sc):
    """An inner frame's headers from c1 to c2: Ethernet, IPv4 (10.0.0.1 → 10.0.0.2) and UDP
    (port 9) with lengths for a RELAY_FRAME-byte frame. The kernel's VXLAN drops an inner
    IPv4 header that is not one, so the frame must be real."""
    ip_len = RELAY_FRAME - 14
    ip = bytearray([0x45, 0, ip_len >> 8, ip_len & 0xff, 0, 0, 0x40, 0, 64, 17, 0, 0,
                    10, 0, 0, 1, 10, 0, 0, 2])
    total = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while total > 0xffff:
        total = (total & 0xffff) + (total >> 16)
    ip[10:12] = (~total & 0xffff).to_bytes(2, "big")
    udp = (9).to_bytes(2, "big") * 2 + (ip_len - 20).to_bytes(2, "big") + b"\x00\x00"
    return (bytes.fromhex(mac(sc.ns("c2")).replace(":", ""))
            + bytes.fromhex(mac(sc.ns("c1")).replace(":", "")) + b"\x08\x00" + bytes(ip) + udp)


def tx_packets(ns, dev="eth0"):
    out = run(in_ns(ns, "ip", "-s", "-j", "link", "show", dev)).stdout
    return json.loads(out)[0]["stats64"]["tx"]["packets"]


def relay_pps(sc, inv, blast, seconds):
    """The relay's packet rate: nvo-blast in ha's namespace sends tunnel packets (the
    scenario's header around a 64-byte UDP frame c1 → c2) straight at hb, 16 flows, and hb's
    underlay interface counts what it sends on; the underlay bridge drops it there (nftables,
    bridge family) so that hc's cost does not share the CPUs. kpps relayed, and the share of
    what was sent."""
    dst, prefix = sc.relay_probe()
    size = len(prefix) - 42 + RELAY_FRAME  # the tunnel header and the whole inner frame
    ul = sc.ns("ul")
    rules = ("add table bridge nvo_relay_cut\n"
             "add chain bridge nvo_relay_cut fw { type filter hook forward priority 0; }\n"
             f"add rule bridge nvo_relay_cut fw ip daddr {UL['hc']} counter drop\n")
    subprocess.run(in_ns(ul, "nft", "-f", "-"), input=rules, text=True, check=True,
                   capture_output=True, timeout=30)
    try:
        t0 = tx_packets(sc.ns("hb"))
        send = run(in_ns(sc.ns("ha"), blast, "send", "--dst", dst, "--size", size,
                         "--prefix", prefix.hex(), "--seconds", seconds, "--flows", 16,
                         "--batch", 64, "--json"), timeout=seconds + 30)
        time.sleep(0.2)
        t1 = tx_packets(sc.ns("hb"))
    finally:
        subprocess.run(in_ns(ul, "nft", "delete", "table", "bridge", "nvo_relay_cut"),
                       capture_output=True, timeout=30)
    s = json.loads(send.stdout)
    relayed = t1 - t0
    if relayed <= 0:
        raise measure.MeasureFailed(f"hb relayed nothing of {s['packets']} packets sent")
    return {"kpps": relayed / s["seconds"] / 1e3, "sent_kpps": s["pps"] / 1e3,
            "share": relayed / s["packets"] if s["packets"] else None}


class KernelRelay(Scenario):
    key = "kernel-relay"
    title = "kernel relay on hb (VXLAN → bridge → VXLAN)"
    description = ("built by hand: ha and hc a VXLAN device (VNI 100) + bridge each, all "
                   "their traffic to hb (static `00:00:00:00:00:00 dst hb`), cut from each "
                   "other; hb a learning bridge with two VXLAN devices (VNI 100; UDP 4789 to "
                   "ha, 4790 to hc) that decapsulates and re-encapsulates; tenant MTU 1450")
    server_ip = "10.0.0.2"
    tenant_mtu = 1450
    # host → [(device, UDP port, remote host)]; the containers' side of each end host.
    TUNNELS = {"ha": [("vx0", 4789, "hb")], "hc": [("vx0", 4790, "hb")],
               "hb": [("vx-a", 4789, "ha"), ("vx-c", 4790, "hc")]}
    CONTAINERS = {"ha": ("c1", "10.0.0.1/24"), "hc": ("c2", "10.0.0.2/24")}

    def up(self, inv, env):
        for node in ("ul", "ha", "hb", "hc", "c1", "c2"):
            inv.add_netns(self.ns(node))
        ul = self.ns("ul")
        ip(ul, "link", "add", "br0", "type", "bridge")
        ip(ul, "link", "set", "br0", "up")
        for h, addr in UL.items():
            host = self.ns(h)
            ip(ul, "link", "add", f"u-{h}", "mtu", "1500", "type", "veth",
               "peer", "name", "eth0", "mtu", "1500", "netns", host)
            ip(ul, "link", "set", f"u-{h}", "master", "br0", "up")
            ip(host, "addr", "add", f"{addr}/24", "dev", "eth0")
            ip(host, "link", "set", "eth0", "up")
            ip(host, "link", "add", "br1", "mtu", str(self.tenant_mtu), "type", "bridge")
            for dev, port, peer in self.TUNNELS[h]:
                ip(host, "link", "add", dev, "mtu", str(self.tenant_mtu), "type", "vxlan",
                   "id", VNI, "dstport", port, "local", addr, "dev", "eth0")
                ip(host, "link", "set", dev, "master", "br1", "up")
                run(["bridge", "-n", host, "fdb", "append", "00:00:00:00:00:00", "dev", dev,
                     "dst", UL[peer]])
            if h in self.CONTAINERS:
                cont, caddr = self.CONTAINERS[h]
                ip(host, "link", "add", f"c-{cont}", "mtu", str(self.tenant_mtu), "type",
                   "veth", "peer", "name", "eth0", "mtu", str(self.tenant_mtu), "netns",
                   self.ns(cont))
                ip(host, "link", "set", f"c-{cont}", "master", "br1", "up")
                ip(self.ns(cont), "addr", "add", caddr, "dev", "eth0")
                ip(self.ns(cont), "link", "set", "eth0", "up")
            ip(host, "link", "set", "br1", "up")
        cut(self, "ha", "hc")

    def relay_probe(self):
        """(hb's address and VXLAN port from ha, the payload prefix): a VXLAN header (VNI)
        and an inner frame's headers c1 → c2, which hb's bridge switches to vx-c."""
        return f"{UL['hb']}:4789", bytes([8, 0, 0, 0]) + VNI.to_bytes(3, "big") + b"\x00" \
            + inner_eth(self)

    def check(self, inv):
        """hb's bridge: where it learned each container's MAC."""
        macs = {c: mac(self.ns(c)) for c in ("c1", "c2")}
        out = run(["bridge", "-n", self.ns("hb"), "-j", "fdb", "show", "br", "br1"]).stdout
        learned = {}
        for e in json.loads(out or "[]"):
            for c, m in macs.items():
                if e.get("mac") == m and "permanent" not in e.get("state", ""):
                    learned[c] = e.get("ifname")
        return {"hb_bridge_learned": learned, "macs": macs}


def mac(ns, dev="eth0"):
    return run(in_ns(ns, "cat", f"/sys/class/net/{dev}/address")).stdout.strip()


_Overlay = next(cls for cls in PROFILE_SCENARIOS if cls.key == "nvo-overlay")


class NvoDirect(_Overlay):
    key = "nvo-direct"
    title = "nvo direct (overlay profile, no relay)"
    description = ("`nvo lab` with two nvo hosts, the network on the `overlay` profile, no "
                   "routes, no cut: the packets go straight from h1 to h2")


class KernelDirect(Kernel):
    key = "kernel-direct"
    title = "kernel VXLAN + bridge, no relay"
    description = ("the `kernel` scenario: `nvo lab` with two kernel hosts, a VXLAN device "
                   "(VNI 100) and a bridge each, tenant MTU 1450")


SCENARIOS = {cls.key: cls for cls in (NvoXdpRelay, NvoEbpfRelay, NvoRelay, KernelRelay,
                                       NvoDirect, KernelDirect)}


def metrics(sizes):
    """The study's metrics: the relay's own packet rate first, then the run's, less TCP with
    4 streams."""
    relay = [stats.Metric("relay_kpps", f"relay packet rate on hb ({RELAY_FRAME} B frames "
                          "sent at it)", "kpps", "higher", "relay", "kpps", "{:.0f}")]
    return relay + [m for m in stats.metrics(sizes) if not m.key.startswith("tcp4")]


def _checks(scs, inv, doc, when):
    for sc in scs:
        if hasattr(sc, "check"):
            try:
                doc["checks"].setdefault(sc.key, {})[when] = sc.check(inv)
            except (CommandFailed, SetupFailed, OSError, ValueError) as e:
                doc["problems"].append(f"{sc.key}: the relay check ({when}) failed: {e}")


def study(scs, inv, cfg, doc, log, blast):
    """Every measurement of every scenario, `cfg["reps"]` times in rotating order, with the
    relay checks before and after."""
    doc["checks"] = {}
    _checks(scs, inv, doc, "before")
    for rep in range(cfg["reps"]):
        order = scs[rep % len(scs):] + scs[:rep % len(scs)] if scs else []
        log(f"relay: repetition {rep + 1}/{cfg['reps']}: {' → '.join(sc.key for sc in order)}")
        for sc in order:
            jobs = [("rtt", measure.rtt, (sc, cfg["ping_count"])),
                    ("tcp1", measure.tcp, (sc, 1, cfg["tcp_seconds"]))]
            if hasattr(sc, "relay_probe"):
                jobs.append(("relay", relay_pps, (sc, inv, blast, cfg["udp_seconds"])))
            jobs += [(f"udp{s}", measure.udp, (sc, inv, blast, s, cfg["udp_seconds"]))
                     for s in cfg["udp_sizes"]]
            for source, fn, fargs in jobs:
                sample, err = measure.safely(f"{sc.key} {source}", fn, *fargs)
                if err:
                    doc["problems"].append(err)
                    log(f"  {err}")
                    continue
                doc["samples"].setdefault(sc.key, {}).setdefault(source, []).append(sample)
                log(f"  {sc.key:13} {source:8} " + ", ".join(
                    f"{k}={v:.4g}" for k, v in sample.items() if isinstance(v, float)))
    _checks(scs, inv, doc, "after")
    doc["verdicts"] = verdicts(doc["checks"])


def verdicts(checks):
    """{scenario: (passed, what was seen)} from the before/after readings."""
    out = {}
    for key in ("nvo-xdp-relay", "nvo-ebpf-relay", "nvo-relay"):
        nvo = checks.get(key, {})
        if "before" not in nvo or "after" not in nvo:
            continue
        b, a = nvo["before"], nvo["after"]
        grew = (a["hb_relayed"] or 0) - (b["hb_relayed"] or 0)
        ok = grew > 0 and a["hb_rx_underlay_frames"] == 0
        out[key] = (ok, f"hb relayed {grew} packets during the measurements "
                        f"({b['hb_relayed']} → {a['hb_relayed']}), its network "
                        f"decapsulated {a['hb_rx_underlay_frames']} frames "
                        f"(rx_underlay_frames), TTL expiries {a['hb_ttl_expired']}")
    ker = checks.get("kernel-relay", {})
    for when in ("before", "after"):
        if when not in ker:
            continue
        seen = ker[when]["hb_bridge_learned"]
        ok = seen.get("c1") == "vx-a" and seen.get("c2") == "vx-c"
        prev = out.get("kernel-relay", (True, ""))
        said = (f"{when} the measurements hb's bridge had c1's MAC on "
                f"{seen.get('c1', 'no port')} and c2's on {seen.get('c2', 'no port')}")
        out["kernel-relay"] = (prev[0] and ok, f"{prev[1]}; {said}" if prev[1] else said)
    return out


def figures(doc):
    return stats.figures(doc["samples"], metrics(doc["config"]["udp_sizes"]))


def ratios(figs):
    """{metric: {"a/b": ratio}} for PAIRS."""
    return {key: {f"{a}/{b}": stats.ratio(by.get(a), by.get(b)) for a, b in PAIRS}
            for key, by in figs.items()}


__all__ = ["KEYS", "PAIRS", "SCENARIOS", "SIZES", "figures", "metrics", "ratios", "study",
           "verdicts"]
