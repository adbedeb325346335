"""Open vSwitch's userspace datapath, run by hand in one host namespace.

Debian's openvswitch-switch 3.1 without its kernel module (see /work/shared/PEERS.md): per host
namespace an ovsdb-server on a database made from the package's schema, and an ovs-vswitchd,
both with everything they write (database, sockets, pid files, logs, the bridges' management
sockets) in a private directory of the run's work directory, named by OVS_RUNDIR, OVS_DBDIR,
OVS_LOGDIR and OVS_SYSCONFDIR; bridges with `datapath_type=netdev`.

The daemons run in the foreground as children of the harness (no `--detach`): the run's
Inventory records them, stops them by their pid (SIGTERM, which they handle by exiting
cleanly and removing their XDP programs) and reaps them. Detached daemons would be reparented
to this machine's init, which does not reap them, and linger as zombies.
"""

import os
import pathlib
import shutil
import time

from .sh import CommandFailed, in_ns, run, tail

SCHEMA = pathlib.Path("/usr/share/openvswitch/vswitch.ovsschema")
TOOLS = ["ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-appctl"]


class OvsFailed(Exception):
    """An Open vSwitch step failed; the message names the host, the step and OVS's words."""


def missing_tools():
    """What of Open vSwitch is not installed (empty when all is there)."""
    missing = [t for t in TOOLS if not shutil.which(t)]
    if not SCHEMA.is_file():
        missing.append(str(SCHEMA))
    return missing


class OvsHost:
    """ovsdb-server and ovs-vswitchd of one host namespace, with their private directory."""

    def __init__(self, ns, workdir, name):
        self.ns = ns
        self.name = name
        self.dir = pathlib.Path(workdir) / f"ovs-{name}"
        self.env = dict(os.environ, OVS_RUNDIR=str(self.dir), OVS_DBDIR=str(self.dir),
                        OVS_LOGDIR=str(self.dir), OVS_SYSCONFDIR=str(self.dir))
        self.db = self.dir / "conf.db"
        self.sock = self.dir / "db.sock"
        self.vswitchd = None

    def _daemon(self, inv, name, args):
        """Starts one daemon in the namespace, in the foreground, its console to a file."""
        console = open(self.dir / f"{name}.console", "w")
        try:
            return inv.spawn(in_ns(self.ns, name, *args, "-vconsole:off", "-vfile:info",
                                   f"--pidfile={self.dir / name}.pid",
                                   f"--unixctl={self.dir / name}.ctl",
                                   f"--log-file={self.dir / name}.log"),
                             output=console, env=self.env)
        finally:
            console.close()

    def _wait_for(self, what, path, proc, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not path.exists():
            if proc.poll() is not None:
                raise OvsFailed(f"{self.name}: {what} exited {proc.returncode}: "
                                f"{self.log_tail(what)}")
            if time.monotonic() > deadline:
                raise OvsFailed(f"{self.name}: {what} made no {path.name} in {timeout} s")
            time.sleep(0.05)

    def log_tail(self, daemon):
        texts = []
        for suffix in ("console", "log"):
            p = self.dir / f"{daemon}.{suffix}"
            if p.exists():
                texts.append(p.read_text(errors="replace"))
        return tail("\n".join(texts), 2) or "no output"

    def start(self, inv):
        """Creates the database and starts both daemons; returns when ovs-vswitchd is up."""
        self.dir.mkdir(parents=True)
        run(["ovsdb-tool", "create", self.db, SCHEMA])
        db = self._daemon(inv, "ovsdb-server", [self.db, f"--remote=punix:{self.sock}"])
        self._wait_for("ovsdb-server", self.sock, db)
        self.vsctl("--no-wait", "init")
        self.vswitchd = self._daemon(inv, "ovs-vswitchd", [f"unix:{self.sock}"])
        self._wait_for("ovs-vswitchd", self.dir / "ovs-vswitchd.ctl", self.vswitchd)

    def vsctl(self, *args, timeout=15):
        """ovs-vsctl against this host's database. Without --no-wait it returns only once
        ovs-vswitchd has applied the change, so a dead or stuck vswitchd shows here."""
        try:
            return run(["ovs-vsctl", f"--db=unix:{self.sock}", f"--timeout={timeout}", *args],
                       timeout=timeout + 5, env=self.env).stdout
        except CommandFailed as e:
            raise OvsFailed(f"{self.name}: {e}; ovs-vswitchd says: "
                            f"{self.log_tail('ovs-vswitchd')}") from e

    def check_ports(self, names):
        """Raises OvsFailed with OVS's own error when a port did not open (OVS accepts the
        port into its database and reports the failure only in the Interface's error column
        and ofport -1)."""
        for name in names:
            err = self.vsctl("--if-exists", "get", "Interface", name, "error").strip()
            ofport = self.vsctl("get", "Interface", name, "ofport").strip()
            if err not in ("", "[]") or ofport in ("-1", "[]"):
                raise OvsFailed(f"{self.name}: port {name} did not open (ofport {ofport}): "
                                f"{err.strip(chr(34)) or self.log_tail('ovs-vswitchd')}")

    def log_lines(self, needle):
        """The lines of ovs-vswitchd's log that contain `needle`, without the log prefix."""
        p = self.dir / "ovs-vswitchd.log"
        if not p.exists():
            return []
        return [line.rsplit("|", 1)[-1].strip() for line in p.read_text(errors="replace")
                .splitlines() if needle in line]

    def rss_kib(self):
        """ovs-vswitchd's VmRSS in KiB, None when it is gone."""
        try:
            with open(f"/proc/{self.vswitchd.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, AttributeError):
            return None
        return None


__all__ = ["OvsFailed", "OvsHost", "missing_tools"]
