"""The scenarios: one topology shape, three ways to carry the traffic.

    c1 ──veth── h1 ──veth── [ul: bridge br0] ──veth── h2 ──veth── c2
   (client)   (host)             (underlay)           (host)     (server)

Every box is a network namespace; c1 talks to c2. What the hosts do with the frames differs:

- native: nothing is encapsulated. c1 and c2 are on different subnets (10.1.0.0/24 and
  10.2.0.0/24, MTU 1500); h1 and h2 route between them over the underlay. The upper bound.
- kernel: an `nvo lab` with two `kind: kernel` hosts: the Linux VXLAN device and a bridge per
  host (VNI 100, tenant MTU 1450), what users run today.
- nvo: the same lab with two nvo hosts: nvod (release build) on each, veth ports.

All three have the same veth hops and the same underlay bridge, so the difference is what the
hosts do. Each scenario is built from scratch by `up()` and removed by the run's Inventory.
"""

import json
import pathlib

from .sh import CommandFailed, in_ns, run

# The lab topology of the kernel and nvo scenarios; only the host kind differs.
LAB_TOPOLOGY = """\
# Written by bench/run.py: the {key} scenario (see bench/nvobench/scenarios.py).
name: {name}
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}}
hosts:
  - {{name: h1, kind: {kind}}}
  - {{name: h2, kind: {kind}}}
networks:
  - {{vni: 100, name: bench}}
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
        nodes = ["ul", "h1", "h2", "c1", "c2"]
        for node in nodes:
            inv.add_netns(self.ns(node))
        ul = self.ns("ul")
        ip = lambda ns, *args: run(["ip", "-n", ns, *args])
        ip(ul, "link", "add", "br0", "type", "bridge")
        ip(ul, "link", "set", "br0", "up")
        for i in (1, 2):
            host, cont = self.ns(f"h{i}"), self.ns(f"c{i}")
            ip(ul, "link", "add", f"u-h{i}", "mtu", "1500", "type", "veth",
               "peer", "name", "eth0", "mtu", "1500", "netns", host)
            ip(ul, "link", "set", f"u-h{i}", "master", "br0", "up")
            ip(host, "addr", "add", f"10.100.0.{i}/24", "dev", "eth0")
            ip(host, "link", "set", "eth0", "up")
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


class Lab(Scenario):
    """A scenario built by `nvo lab up` from LAB_TOPOLOGY."""

    kind = ""
    server_ip = "10.0.0.2"
    tenant_mtu = 1450

    def up(self, inv, env):
        path = pathlib.Path(env["workdir"]) / f"{self.name}.yaml"
        path.write_text(LAB_TOPOLOGY.format(key=self.key, name=self.name, kind=self.kind))
        inv.lab_up(self.name, path, env["nvod"])

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
        # `nvo lab` turns transmit checksum offload off in containers of kernel hosts, for
        # nvod peers only (see crates/cli/src/lab/up.rs); between two kernel hosts it is not
        # needed, and without it the kernel loses TSO. Turned back on: the kernel as users run it.
        for node in ("c1", "c2"):
            run(in_ns(self.ns(node), "ethtool", "-K", "eth0", "tx", "on"))
        self.notes.append("container transmit checksum offload (and with it TSO) turned back on "
                          "after `nvo lab up`, which turns it off on kernel hosts for nvod peers")


class Nvo(Lab):
    key = "nvo"
    kind = "nvo"
    title = "nvo (nvod VXLAN)"
    description = ("`nvo lab` with two nvo hosts: nvod (release build) on each, containers on "
                   "veth ports (AF_PACKET), VNI 100, port 4789, learning, tenant MTU 1450")

    def daemons(self, inv):
        try:
            nodes = self.lab_status(inv).get("nodes", [])
        except (CommandFailed, ValueError):
            return {}
        return {n["name"]: n["nvod_pid"] for n in nodes if n.get("nvod_pid")}


SCENARIOS = {cls.key: cls for cls in (Native, Kernel, Nvo)}
