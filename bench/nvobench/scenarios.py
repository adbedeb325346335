"""The scenarios: one topology shape, six ways to carry the traffic.

    c1 ──veth── h1 ──veth── [ul: bridge br0] ──veth── h2 ──veth── c2
   (client)   (host)             (underlay)           (host)     (server)

Every box is a network namespace; c1 talks to c2. What the hosts do with the frames differs:

- native: nothing is encapsulated. c1 and c2 are on different subnets (10.1.0.0/24 and
  10.2.0.0/24, MTU 1500); h1 and h2 route between them over the underlay. The upper bound.
- kernel: an `nvo lab` with two `kind: kernel` hosts: the Linux VXLAN device and a bridge per
  host (VNI 100, tenant MTU 1450), what users run today.
- ovs-afpacket, ovs-afxdp: Open vSwitch's userspace datapath with VXLAN on each host
  (ovsdb-server and ovs-vswitchd started by hand in the host namespace, `datapath_type=netdev`),
  the veths as AF_PACKET (`system`) or AF_XDP (`afxdp-nonpmd`) ports; tenant MTU 1450.
- nvo: the same lab with two nvo hosts: nvod (release build) on each, veth ports, every frame
  through nvod's userspace path (`datapath = "userspace"`).
- nvo-ebpf: the same, with nvod's kernel datapath (`datapath = "ebpf"`): nvod's tables in eBPF
  maps, frames carried by its tc programs on the ports and the underlay.

All of them have the same veth hops and the same underlay bridge, so the difference is what the
hosts do. Each scenario is built from scratch by `up()` and removed by the run's Inventory.
"""

import json
import pathlib

from . import ovs
from .sh import CommandFailed, in_ns, run

# The lab topology of the kernel and nvo scenarios; only the host kind differs.
LAB_TOPOLOGY = """\
# Written by bench/run.py: the {key} scenario (see bench/nvobench/scenarios.py).
name: {name}
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}
hosts:
  - {{name: h1, kind: {kind}{nvod}}}
  - {{name: h2, kind: {kind}{nvod}}}
{profiles}networks:
  - {{vni: 100, name: bench{encap}}}
containers:
  - {{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}}
"""


class SetupFailed(Exception):
    """A scenario could not be built; the message says which step and why."""


class Scenario:
    """What every scenario offers the measurements: where the client and server run, the
    server's address, the tenant MTU, and what to say about it in the report."""

    key = ""
    title = ""
    description = ""

    def __init__(self, run_id):
        self.name = f"{run_id}-{self.key}"
        self.status = "not built"
        self.reason = ""
        self.notes = []
        self.setup_s = None
        self.iperf_server = None

    def ns(self, node):
        """The namespace of `node` (`nvo-<name>-<node>`, the scheme `nvo lab` uses)."""
        return f"nvo-{self.name}-{node}"

    @property
    def client_ns(self):
        return self.ns("c1")

    @property
    def server_ns(self):
        return self.ns("c2")

    server_ip = ""
    tenant_mtu = 0

    def up(self, inv, env):
        raise NotImplementedError

    def daemons(self, inv):
        """{host: pid} of the daemons that carry this scenario's traffic (nvod)."""
        return {}

    def fail(self, reason):
        self.status = "failed"
        self.reason = reason


class Native(Scenario):
    key = "native"
    title = "native routing"
    description = ("no encapsulation: containers on different subnets (MTU 1500), "
                   "the hosts route and forward between them over the underlay")
    server_ip = "10.2.0.2"
    tenant_mtu = 1500

    def up(self, inv, env):
        build_underlay(self, inv)
        for i in (1, 2):
            host, cont = self.ns(f"h{i}"), self.ns(f"c{i}")
            ip(host, "addr", "add", f"10.100.0.{i}/24", "dev", "eth0")
            run(in_ns(host, "sysctl", "-qw", "net.ipv4.ip_forward=1"))
            ip(host, "link", "add", f"c-c{i}", "mtu", "1500", "type", "veth",
               "peer", "name", "eth0", "mtu", "1500", "netns", cont)
            ip(host, "addr", "add", f"10.{i}.0.1/24", "dev", f"c-c{i}")
            ip(host, "link", "set", f"c-c{i}", "up")
            ip(cont, "addr", "add", f"10.{i}.0.2/24", "dev", "eth0")
            ip(cont, "link", "set", "eth0", "up")
            ip(cont, "route", "add", "default", "via", f"10.{i}.0.1")
        ip(self.ns("h1"), "route", "add", "10.2.0.0/24", "via", "10.100.0.2")
        ip(self.ns("h2"), "route", "add", "10.1.0.0/24", "via", "10.100.0.1")


def ip(ns, *args):
    return run(["ip", "-n", ns, *args])


def link_mtu(ns, dev):
    out = run(["ip", "-n", ns, "-j", "link", "show", dev]).stdout
    return json.loads(out)[0]["mtu"]


def build_underlay(sc, inv):
    """The namespaces ul, h1, h2, c1, c2 of `sc`, the underlay bridge br0 in ul and a veth
    from it to each host, whose host end is `eth0` (up, no address yet)."""
    for node in ("ul", "h1", "h2", "c1", "c2"):
        inv.add_netns(sc.ns(node))
    ul = sc.ns("ul")
    ip(ul, "link", "add", "br0", "type", "bridge")
    ip(ul, "link", "set", "br0", "up")
    for i in (1, 2):
        host = sc.ns(f"h{i}")
        ip(ul, "link", "add", f"u-h{i}", "mtu", "1500", "type", "veth",
           "peer", "name", "eth0", "mtu", "1500", "netns", host)
        ip(ul, "link", "set", f"u-h{i}", "master", "br0", "up")
        ip(host, "link", "set", "eth0", "up")


class Lab(Scenario):
    """A scenario built by `nvo lab up` from LAB_TOPOLOGY."""

    kind = ""
    # The network's encapsulation profile and its parameters (YAML), None for the default.
    encap = None
    params = None
    # nvod's datapath on nvo hosts (None: the lab's default).
    datapath = None
    # A `profiles:` section (YAML) defining the profile `encap` names, if it is user-defined.
    profiles = None
    server_ip = "10.0.0.2"
    tenant_mtu = 1450

    def up(self, inv, env):
        path = pathlib.Path(env["workdir"]) / f"{self.name}.yaml"
        encap = f", encap: {self.encap}" if self.encap else ""
        encap += f", params: {self.params}" if self.params else ""
        keys = [f"datapath: {self.datapath}"] if self.datapath else []
        if self.kind == "nvo" and env.get("workers"):
            keys.append(f"workers: {env['workers']}")
        if self.kind == "nvo" and env.get("busy_poll_us"):
            keys.append(f"busy_poll_us: {env['busy_poll_us']}")
        nvod = f", nvod: {{{', '.join(keys)}}}" if keys else ""
        path.write_text(LAB_TOPOLOGY.format(key=self.key, name=self.name, kind=self.kind,
                                            encap=encap, nvod=nvod,
                                            profiles=self.profiles or ""))
        inv.lab_up(self.name, path, env["nvod"])
        # nvod chooses the tenant MTU per profile; the containers get what it chose.
        self.tenant_mtu = link_mtu(self.ns("c1"), "eth0")

    def socket(self, host):
        """The API socket of `host`'s nvod (the path `nvo lab` gives it)."""
        return f"/run/nvo/lab/{self.name}/{host}.sock"

    def lab_status(self, inv):
        out = run([inv.nvo, "-o", "json", "lab", "status", self.name]).stdout
        labs = json.loads(out)
        return labs[0] if labs else {}


class Kernel(Lab):
    key = "kernel"
    kind = "kernel"
    title = "kernel VXLAN + bridge"
    description = ("`nvo lab` with two `kind: kernel` hosts: a Linux VXLAN device (VNI 100, "
                   "port 4789, learning) and a bridge on each host, tenant MTU 1450")

    def up(self, inv, env):
        super().up(inv, env)
        # The baseline as users run it: `nvo lab` leaves the containers' offloads on for kernel
        # hosts; checked, so that a change there cannot cripple the baseline unnoticed.
        for node in ("c1", "c2"):
            out = run(in_ns(self.ns(node), "ethtool", "-k", "eth0")).stdout
            off = [f for f in ("tx-checksumming", "tcp-segmentation-offload")
                   if f"{f}: off" in out]
            if off:
                raise SetupFailed(f"{node}'s eth0 has {', '.join(off)} off: the kernel VXLAN "
                                  "baseline must run with its offloads on")


class Nvo(Lab):
    key = "nvo"
    kind = "nvo"
    datapath = "userspace"
    title = "nvo userspace (nvod VXLAN)"
    description = ("`nvo lab` with two nvo hosts: nvod (release build) on each, "
                   "`datapath = \"userspace\"`, containers on veth ports (AF_PACKET), VNI 100, "
                   "port 4789, learning, tenant MTU 1450")

    def daemons(self, inv):
        try:
            nodes = self.lab_status(inv).get("nodes", [])
        except (CommandFailed, ValueError):
            return {}
        return {n["name"]: n["nvod_pid"] for n in nodes if n.get("nvod_pid")}


class NvoEbpf(Nvo):
    key = "nvo-ebpf"
    datapath = "ebpf"
    title = "nvo eBPF (nvod VXLAN, kernel datapath)"
    description = ("as nvo, with `datapath = \"ebpf\"`: nvod's tc programs on the container "
                   "veths and the underlay carry the frames (nvod keeps the maps)")

    def up(self, inv, env):
        super().up(inv, env)
        for host in ("h1", "h2"):
            node = json.loads(run([inv.nvo, "--socket", self.socket(host), "-o", "json",
                                   "node"]).stdout)
            if node.get("datapath") != "ebpf":
                raise SetupFailed(f"{host}: nvod runs the {node.get('datapath')} datapath, "
                                  f"not ebpf ({node.get('datapath_reason')})")


class Ovs(Scenario):
    """Open vSwitch's userspace datapath with VXLAN, per host (see ovs.py for the daemons):

        c-cN (container's veth) ──┐ br-int (netdev) ── vx0 (VXLAN, VNI 100, to the peer host)
        eth0 (underlay veth) ─────┘ br-phy (netdev), the host's underlay IP on br-phy

    The underlay address sits on br-phy (a tap in netdev mode) so that OVS's tunnel routing
    finds the underlay through a bridge of its own and sends the encapsulated frames out of
    eth0 itself. Both veths are ports of type `port_type`. Learning (NORMAL) on both bridges."""

    port_type = ""
    server_ip = "10.0.0.2"
    tenant_mtu = 1450

    def __init__(self, run_id):
        super().__init__(run_id)
        self.hosts = {}

    def up(self, inv, env):
        missing = ovs.missing_tools()
        if missing:
            raise SetupFailed(f"Open vSwitch is not installed ({', '.join(missing)} missing): "
                              "scripts/setup.sh installs openvswitch-switch")
        build_underlay(self, inv)
        try:
            for i in (1, 2):
                self._host(inv, env, i)
        except ovs.OvsFailed as e:
            raise SetupFailed(str(e)) from e
        modes = sorted({line.rstrip(".") for h in self.hosts.values()
                        for line in h.log_lines("XDP mode will be in use")})
        if modes:
            self.notes.append("XDP mode, from ovs-vswitchd's logs: " + "; ".join(modes))

    def _host(self, inv, env, i):
        host, cont, peer = self.ns(f"h{i}"), self.ns(f"c{i}"), 3 - i
        ip(host, "link", "add", f"c-c{i}", "mtu", "1500", "type", "veth",
           "peer", "name", "eth0", "mtu", "1500", "netns", cont)
        ip(host, "link", "set", f"c-c{i}", "up")
        ip(cont, "link", "set", "eth0", "mtu", str(self.tenant_mtu), "up")
        ip(cont, "addr", "add", f"10.0.0.{i}/24", "dev", "eth0")
        # The container's frames reach OVS through a socket with their checksums left to an
        # offload that is not there; OVS does not complete them (PEERS.md).
        run(in_ns(cont, "ethtool", "-K", "eth0", "tx", "off"))
        h = ovs.OvsHost(host, env["workdir"], f"{self.key}-h{i}")
        self.hosts[f"h{i}"] = h
        h.start(inv)
        h.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                "--", "add-port", "br-phy", "eth0",
                "--", "set", "interface", "eth0", f"type={self.port_type}")
        ip(host, "addr", "add", f"10.100.0.{i}/24", "dev", "br-phy")
        ip(host, "link", "set", "br-phy", "up")
        h.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev",
                "--", "add-port", "br-int", f"c-c{i}",
                "--", "set", "interface", f"c-c{i}", f"type={self.port_type}",
                "--", "add-port", "br-int", "vx0",
                "--", "set", "interface", "vx0", "type=vxlan",
                f"options:remote_ip=10.100.0.{peer}", f"options:local_ip=10.100.0.{i}",
                "options:key=100")
        ip(host, "link", "set", "br-int", "up")
        h.check_ports(["eth0", f"c-c{i}", "vx0"])

    def daemons(self, inv):
        return {name: h.vswitchd.pid for name, h in self.hosts.items()
                if h.vswitchd and h.vswitchd.poll() is None}


class OvsAfPacket(Ovs):
    key = "ovs-afpacket"
    port_type = "system"
    title = "Open vSwitch userspace, AF_PACKET"
    description = ("ovs-vswitchd 3.1 (Debian) per host, `datapath_type=netdev`, no kernel "
                   "module; both veths as `system` ports (AF_PACKET), VXLAN VNI 100, port "
                   "4789, underlay IP on br-phy, defaults otherwise (no userspace TSO); "
                   "container tx checksum offload off; tenant MTU 1450")


class OvsAfXdp(Ovs):
    key = "ovs-afxdp"
    port_type = "afxdp-nonpmd"
    title = "Open vSwitch userspace, AF_XDP"
    description = ("as ovs-afpacket, but both veths as `afxdp-nonpmd` ports (AF_XDP sockets "
                   "polled by ovs-vswitchd's main thread, no busy-polling PMD threads)")


SCENARIOS = {cls.key: cls for cls in (Native, Kernel, OvsAfPacket, OvsAfXdp, Nvo, NvoEbpf)}
