"""An Open vSwitch host with one container, plugged into a lab's underlay, for interop tests.
(Not named ovs.py: Debian's python3-openvswitch installs a package `ovs`.)

Open vSwitch's userspace datapath (Debian's openvswitch-switch, no kernel module; see
shared/PEERS.md): an ovsdb-server and an ovs-vswitchd run by hand inside the OVS host's own
namespace, each with its database, sockets, pid files and logs in a private directory named by
OVS_RUNDIR / OVS_DBDIR / OVS_LOGDIR / OVS_SYSCONFDIR. The daemons run in the foreground as
children of the test (no --detach) so that `close()` can stop them by pid and reap them.

    container ns (eth0, IP, tx checksum offload off: OVS does not complete partial checksums)
          | veth
    OVS host ns:  br-int (netdev): c0 + the tunnel port
                  br-phy (netdev): eth0, the underlay address on br-phy (OVS's tunnel routing
                  must find the underlay through a bridge of its own)
          | eth0 = veth
    the lab's underlay namespace: its bridge br0

The namespaces are not the lab's (ovsi-<pid>-<n>-h and -c), so `nvo lab down` never sees
them; `close()` kills every process in them, then deletes them, which also removes the veth
on the underlay bridge.
"""

import itertools
import os
import pathlib
import shutil
import subprocess
import time

from conftest import run

SCHEMA = pathlib.Path("/usr/share/openvswitch/vswitch.ovsschema")
TOOLS = ["ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl"]
_serial = itertools.count()


def missing_tools():
    """What of Open vSwitch is not installed (empty when all is there)."""
    missing = [t for t in TOOLS if not shutil.which(t)]
    return missing + ([] if SCHEMA.is_file() else [str(SCHEMA)])


def in_ns(ns, *cmd):
    return ["ip", "netns", "exec", ns, *map(str, cmd)]


class OvsPeer:
    """One OVS host (namespace `host`) with a container (namespace `container`) behind it."""

    def __init__(self, workdir, underlay_ns, ip, prefix=24):
        n = next(_serial)
        self.host = f"ovsi-{os.getpid()}-{n}-h"
        self.container = f"ovsi-{os.getpid()}-{n}-c"
        self.uplink = f"uo{os.getpid() % 100000}{n}"  # its end on the underlay bridge, <= 15 chars
        self.underlay_ns, self.ip, self.prefix = underlay_ns, ip, prefix
        self.dir = pathlib.Path(workdir) / f"ovs{n}"
        self.env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir),
                        OVS_LOGDIR=str(self.dir), OVS_SYSCONFDIR=str(self.dir))
        self.sock = self.dir / "db.sock"
        self.procs = []
        self.namespaces = []

    # --- life cycle -------------------------------------------------------------------------

    def start(self):
        """Namespaces, the underlay veth, both daemons, br-phy with the underlay address."""
        for ns in (self.host, self.container):
            run("ip", "netns", "add", ns)
            self.namespaces.append(ns)
            run(*in_ns(ns, "ip", "link", "set", "lo", "up"))
        run(*in_ns(self.underlay_ns, "ip", "link", "add", self.uplink, "type", "veth",
                   "peer", "name", "eth0", "netns", self.host))
        run(*in_ns(self.underlay_ns, "ip", "link", "set", self.uplink, "master", "br0", "up"))
        run(*in_ns(self.host, "ip", "link", "set", "eth0", "up"))
        self.start_daemons()
        self.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                   "--", "add-port", "br-phy", "eth0", "--", "set", "interface", "eth0", "type=system")
        run(*in_ns(self.host, "ip", "addr", "add", f"{self.ip}/{self.prefix}", "dev", "br-phy"))
        run(*in_ns(self.host, "ip", "link", "set", "br-phy", "up"))
        self.check_ports("eth0")

    def add_container(self, ip, mac, mtu):
        """The container on br-int: veth c0 <-> eth0 in the container namespace."""
        run(*in_ns(self.host, "ip", "link", "add", "c0", "mtu", mtu, "type", "veth",
                   "peer", "name", "eth0", "mtu", mtu, "netns", self.container))
        run(*in_ns(self.host, "ip", "link", "set", "c0", "up"))
        c = self.container
        run(*in_ns(c, "ip", "link", "set", "eth0", "address", mac))
        run(*in_ns(c, "ip", "addr", "add", ip, "dev", "eth0"))
        # Frames from the container reach OVS through an AF_PACKET socket with their checksums
        # left to an offload that is not there, and OVS's userspace does not complete them.
        run(*in_ns(c, "ethtool", "-K", "eth0", "tx", "off"))
        run(*in_ns(c, "ip", "link", "set", "eth0", "up"))
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev",
                   "--", "add-port", "br-int", "c0", "--", "set", "interface", "c0", "type=system")
        run(*in_ns(self.host, "ip", "link", "set", "br-int", "up"))
        self.check_ports("c0")

    def add_tunnel(self, name, kind, remote_ip, key):
        """A tunnel port on br-int (`type=geneve` or `type=gre`); returns its OpenFlow port."""
        self.vsctl("add-port", "br-int", name, "--", "set", "interface", name, f"type={kind}",
                   f"options:remote_ip={remote_ip}", f"options:local_ip={self.ip}", f"options:key={key}")
        self.check_ports(name)
        return self.ofport(name)

    def close(self):
        """Stops every process in the namespaces (the daemons first, by pid), deletes them."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        for ns in self.namespaces:
            # Whatever a test started in them (iperf3, ping) and nothing else lives there.
            for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (OSError, ValueError):
                    pass
        left = []
        for ns in self.namespaces:
            if run("ip", "netns", "delete", ns, check=False).returncode != 0:
                left.append(ns)
        self.namespaces = []
        assert not left, f"could not delete namespaces {left}"

    # --- OVS commands -----------------------------------------------------------------------

    def vsctl(self, *args, timeout=15):
        """ovs-vsctl against this host's database; without --no-wait it returns once
        ovs-vswitchd applied the change."""
        p = run("ovs-vsctl", f"--db=unix:{self.sock}", f"--timeout={timeout}", *args,
                env=self.env, check=False, timeout=timeout + 5)
        assert p.returncode == 0, f"ovs-vsctl {' '.join(args)}: {p.stderr}\n{self.log_tail()}"
        return p.stdout.strip()

    def ofctl(self, *args):
        """ovs-ofctl against br-int (its management socket lies in OVS_RUNDIR)."""
        return run("ovs-ofctl", *args, env=self.env).stdout

    def ofport(self, name):
        return int(self.vsctl("get", "Interface", name, "ofport"))

    def check_ports(self, *names):
        """OVS takes a port it cannot open into its database and says so only in the
        Interface's error column and an ofport of -1."""
        for name in names:
            err = self.vsctl("--if-exists", "get", "Interface", name, "error")
            ofport = self.vsctl("get", "Interface", name, "ofport")
            assert err in ("", "[]") and ofport not in ("-1", "[]"), \
                f"OVS port {name} did not open (ofport {ofport}): {err}\n{self.log_tail()}"

    def log_tail(self, lines=15):
        p = self.dir / "ovs-vswitchd.log"
        text = p.read_text(errors="replace") if p.exists() else ""
        return "ovs-vswitchd.log:\n" + "\n".join(text.splitlines()[-lines:])

    def start_daemons(self):
        """A fresh database in this peer's directory, ovsdb-server and ovs-vswitchd on it
        (in namespace `host`, which must exist)."""
        self.dir.mkdir(parents=True)
        run("ovsdb-tool", "create", self.dir / "conf.db", SCHEMA)
        self._daemon("ovsdb-server", self.dir / "conf.db", f"--remote=punix:{self.sock}")
        self._wait_for_file(self.sock, "ovsdb-server")
        self.vsctl("--no-wait", "init")
        self._daemon("ovs-vswitchd", f"unix:{self.sock}")
        self._wait_for_file(self.dir / "ovs-vswitchd.ctl", "ovs-vswitchd")

    # --- internals --------------------------------------------------------------------------

    def _daemon(self, name, *args):
        with open(self.dir / f"{name}.console", "w") as console:
            p = subprocess.Popen(
                in_ns(self.host, name, *args, "-vconsole:off", "-vfile:info",
                      f"--pidfile={self.dir / name}.pid", f"--unixctl={self.dir / name}.ctl",
                      f"--log-file={self.dir / name}.log"),
                stdout=console, stderr=subprocess.STDOUT, env=self.env)
        self.procs.append(p)
        return p

    def _wait_for_file(self, path, what, timeout=10.0):
        deadline = time.monotonic() + timeout
        proc = self.procs[-1]
        while not path.exists():
            assert proc.poll() is None, f"{what} exited {proc.returncode}: {self.log_tail()}"
            assert time.monotonic() < deadline, f"{what} made no {path.name} in {timeout} s"
            time.sleep(0.05)
