"""Running commands, and the inventory of everything a run made.

Every namespace, lab and process a run creates is written into the `Inventory` *before* it is
created, so `teardown()` removes exactly what the run made, also after an exception or a
signal half-way through a step. Nothing is removed by a broad pattern: processes by the
handle we started them with, labs by name (`nvo lab down NAME`), namespaces by name.
"""

import os
import signal
import subprocess
import sys
import time


class CommandFailed(Exception):
    """A command exited non-zero or timed out; the message carries its output."""


class Interrupted(BaseException):
    """A signal (Ctrl-C, SIGTERM) asked the run to stop. A BaseException, so that the
    `except Exception` around single measurements does not swallow it."""


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def tail(text, lines=3):
    """The last non-empty lines of a command's output, joined on one line."""
    kept = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return " / ".join(kept[-lines:])


def run(cmd, timeout=60, check=True, env=None):
    """Runs `cmd` (a list), capturing text output; raises CommandFailed when `check` and it
    fails or outlives `timeout` seconds. `env` replaces the environment when given."""
    cmd = [str(c) for c in cmd]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise CommandFailed(f"{' '.join(cmd)}: no answer within {timeout} s") from e
    if check and p.returncode != 0:
        raise CommandFailed(f"{' '.join(cmd)} exited {p.returncode}: {tail(p.stderr or p.stdout)}")
    return p


def in_ns(ns, *cmd):
    """`cmd` run inside namespace `ns`."""
    return ["ip", "netns", "exec", ns, *[str(c) for c in cmd]]


def namespaces():
    """Names of the network namespaces that exist now."""
    out = run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


class Inventory:
    """What this run made: processes, labs (taken down with `nvo lab down`) and namespaces
    made directly. `prefix` starts the name of every namespace the run may make; whatever
    still carries it after teardown is removed and reported as a leak."""

    def __init__(self, nvo, prefix):
        self.nvo = nvo
        self.prefix = prefix
        self.procs = []
        self.labs = []
        self.netns = []
        self.markers = []

    def watch(self, marker):
        """Records a string that appears in the command line of every process the run starts
        under a name of its own (the run's work directory in the daemons' arguments): whatever
        still carries it after teardown is a leak, killed by its pid and reported."""
        self.markers.append(marker)

    def spawn(self, cmd, output=None, **kw):
        """Starts a background process and records it. Its stdout and stderr are captured as
        text, or go to the open file `output` (for daemons, whose output nobody reads: a pipe
        would fill and block them)."""
        out = output if output is not None else subprocess.PIPE
        p = subprocess.Popen([str(c) for c in cmd], stdout=out,
                             stderr=subprocess.STDOUT if output is not None else subprocess.PIPE,
                             text=True, **kw)
        self.procs.append(p)
        return p

    def stop(self, p, grace=2.0):
        """Stops one process we started: SIGTERM, then SIGKILL after `grace` seconds."""
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        if p in self.procs:
            self.procs.remove(p)

    def add_netns(self, name):
        """Creates a namespace (recorded first) with its loopback up."""
        self.netns.append(name)
        run(["ip", "netns", "add", name])
        run(["ip", "-n", name, "link", "set", "lo", "up"])

    def lab_up(self, name, topology, nvod, timeout=180):
        """`nvo lab up` (recorded first: an interrupted `up` leaves a half-built lab that
        `nvo lab down` still removes)."""
        self.labs.append(name)
        run([self.nvo, "lab", "up", topology, "--nvod", nvod], timeout=timeout)

    def teardown(self):
        """Removes everything recorded, newest first; returns the problems met (empty when
        all went)."""
        problems = []
        for p in list(reversed(self.procs)):
            try:
                self.stop(p)
            except (OSError, subprocess.SubprocessError) as e:
                problems.append(f"process {p.pid} ({p.args[-1]}): {e}")
        for lab in reversed(self.labs):
            p = run([self.nvo, "lab", "down", lab], timeout=60, check=False)
            if p.returncode != 0 and "no lab" not in (p.stderr or "").lower():
                problems.append(f"nvo lab down {lab}: {tail(p.stderr)}")
        self.labs.clear()
        existing = set(namespaces())
        for ns in reversed(self.netns):
            if ns in existing:
                p = run(["ip", "netns", "del", ns], check=False)
                if p.returncode != 0:
                    problems.append(f"ip netns del {ns}: {tail(p.stderr)}")
        self.netns.clear()
        problems += self._kill_marked()
        time.sleep(0.2)
        for ns in namespaces():
            if ns.startswith(self.prefix):
                problems.append(f"namespace {ns} was left behind; removed it")
                run(["ip", "netns", "del", ns], check=False)
        return problems

    def _kill_marked(self):
        """Kills (by pid) every process whose command line carries one of the markers."""
        problems = []
        if not self.markers:
            return problems
        for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if pid != os.getpid() and any(m in cmdline for m in self.markers):
                problems.append(f"process {pid} ({cmdline.strip()[:80]}) was left behind; "
                                "killed it")
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        return problems
