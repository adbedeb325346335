"""A real three-member etcd cluster (Debian's etcd-server) for the cluster-mode tests.

Each member runs in a network namespace of its own, hung off a bridge by a veth; a fourth
namespace holds the test's client (etcdctl), so that cutting the nvods off etcd leaves the test
able to write:

      [ h1 ] [ h2 ] [ h3 ]       lab hosts .1 .2 .3 (their eth0 on br0)
         \\     |     /
   nvo-<lab>-ul: br0 ─── veth ── <p>e1: 10.100.0.241 etcd m1
   (or <p>br: br0)  ├─── veth ── <p>e2: 10.100.0.242 etcd m2
                    ├─── veth ── <p>e3: 10.100.0.243 etcd m3
                    └─── veth ── <p>c:  10.100.0.240 etcdctl

With `bridge_ns` (a lab's underlay namespace) the members sit in the lab's underlay prefix and
every host reaches them without a route; without it the cluster makes a bridge namespace of its
own (<p>br), which is how the fixture is tested alone (tests/e2e/test_etcd_fixture.py).

Faults: `kill(i)` (SIGKILL) / `start(i)` restarts a member on its data directory; `cut(addrs)`
drops, with nftables in every member's namespace, all traffic to and from ADDRS (the client
namespace is never cut), and `heal()` removes the rules. `close()` stops every etcd by its pid and
removes every namespace, veth and directory it made, also after a failed start.
"""

import contextlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

CLIENT_PORT = 2379
PEER_PORT = 2380


def _sh(*cmd, check=True, timeout=30, stdin=None):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def _in(ns, *cmd, **kw):
    return _sh("ip", "netns", "exec", ns, *cmd, **kw)


class EtcdCluster:
    """Three etcd members in namespaces named PREFIX + e1/e2/e3 (PREFIX + c for the client)."""

    def __init__(self, prefix, bridge_ns=None, net="10.100.0", prefix_len=24, first=241):
        assert len(prefix) <= 10, "namespace and veth names must stay short"
        self.prefix = prefix
        self.own_bridge = bridge_ns is None
        self.bridge_ns = bridge_ns or f"{prefix}br"
        self.prefix_len = prefix_len
        self.addrs = [f"{net}.{first + i}" for i in range(3)]
        self.client_addr = f"{net}.{first - 1}"
        self.names = [f"m{i + 1}" for i in range(3)]
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"{prefix}-etcd-", dir="/tmp"))
        self.procs = [None, None, None]
        self.token = f"{prefix}-{os.getpid()}"
        self._made_ns = []
        self._veths = []
        self._cut = False

    # --- life ---------------------------------------------------------------------------------

    def member_ns(self, i):
        return f"{self.prefix}e{i + 1}"

    @property
    def client_ns(self):
        return f"{self.prefix}c"

    @property
    def endpoints(self):
        """Client URLs of the three members."""
        return [f"http://{a}:{CLIENT_PORT}" for a in self.addrs]

    def _netns(self, name):
        _sh("ip", "netns", "add", name)
        self._made_ns.append(name)
        _in(name, "ip", "link", "set", "lo", "up")

    def _attach(self, ns, addr, veth):
        """A veth from the bridge to NS's eth0 holding ADDR."""
        _in(self.bridge_ns, "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        self._veths.append(veth)
        _in(self.bridge_ns, "ip", "link", "set", veth, "master", "br0", "up")
        _in(ns, "ip", "addr", "add", f"{addr}/{self.prefix_len}", "dev", "eth0")
        _in(ns, "ip", "link", "set", "eth0", "up")

    def start_all(self, timeout=20):
        """Builds the namespaces and starts the members; returns once the cluster takes a write."""
        try:
            if self.own_bridge:
                self._netns(self.bridge_ns)
                _in(self.bridge_ns, "ip", "link", "add", "br0", "type", "bridge")
                _in(self.bridge_ns, "ip", "link", "set", "br0", "up")
            self._netns(self.client_ns)
            self._attach(self.client_ns, self.client_addr, f"{self.prefix}vc")
            for i in range(3):
                self._netns(self.member_ns(i))
                self._attach(self.member_ns(i), self.addrs[i], f"{self.prefix}v{i + 1}")
            for i in range(3):
                self.start(i)
            self.wait_writable(timeout)
        except BaseException:
            self.close()
            raise
        return self

    def start(self, i):
        """Starts member I (again, on its own data directory after `kill`)."""
        assert self.procs[i] is None or self.procs[i].poll() is not None, f"member {i} runs"
        a, name = self.addrs[i], self.names[i]
        initial = ",".join(f"{n}=http://{x}:{PEER_PORT}" for n, x in zip(self.names, self.addrs))
        argv = ["etcd", "--name", name, "--data-dir", self.dir / name,
                "--listen-peer-urls", f"http://{a}:{PEER_PORT}",
                "--initial-advertise-peer-urls", f"http://{a}:{PEER_PORT}",
                "--listen-client-urls", f"http://{a}:{CLIENT_PORT}",
                "--advertise-client-urls", f"http://{a}:{CLIENT_PORT}",
                "--initial-cluster", initial, "--initial-cluster-state", "new",
                "--initial-cluster-token", self.token, "--log-level", "warn", "--logger", "zap"]
        log = open(self.dir / f"{name}.log", "ab")
        self.procs[i] = subprocess.Popen(["ip", "netns", "exec", self.member_ns(i), *map(str, argv)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        log.close()

    def kill(self, i, sig=signal.SIGKILL):
        """Stops member I by its pid (SIGKILL by default: a crash, not a clean leave)."""
        p = self.procs[i]
        if p is None or p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, sig)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=10)

    def alive(self, i):
        return self.procs[i] is not None and self.procs[i].poll() is None

    def close(self):
        """Stops every member and removes everything made; safe to call twice."""
        for i in range(3):
            self.kill(i)
            self.procs[i] = None
        # A lab's underlay namespace outlives us: take our veths out of it (deleting the
        # namespaces would also delete them, but only once every end is gone).
        for veth in self._veths:
            _in(self.bridge_ns, "ip", "link", "del", veth, check=False)
        self._veths = []
        for ns in reversed(self._made_ns):
            for pid in _sh("ip", "netns", "pids", ns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _sh("ip", "netns", "del", ns, check=False)
        self._made_ns = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start_all()

    def __exit__(self, *exc):
        self.close()

    def log_tail(self, n=20):
        out = []
        for name in self.names:
            with contextlib.suppress(OSError):
                lines = (self.dir / f"{name}.log").read_text(errors="replace").splitlines()[-n:]
                out.append(f"--- etcd {name} ---\n" + "\n".join(lines))
        return "\n".join(out)

    # --- faults --------------------------------------------------------------------------------

    def cut(self, addrs):
        """Makes etcd unreachable for ADDRS (e.g. the lab's host addresses): every member drops
        what comes from or goes to them, established connections included, until `heal()`."""
        rules = "\n".join([
            "table inet clt_etcd_cut {",
            "  set cut { type ipv4_addr; elements = { %s } }" % ", ".join(addrs),
            "  chain cut_in {",
            "    type filter hook input priority -10",
            "    ip saddr @cut drop",
            "  }",
            "  chain cut_out {",
            "    type filter hook output priority -10",
            "    ip daddr @cut drop",
            "  }",
            "}",
        ])
        for i in range(3):
            _in(self.member_ns(i), "nft", "-f", "-", stdin=rules + "\n")
        self._cut = True

    def heal(self):
        for i in range(3):
            _in(self.member_ns(i), "nft", "delete", "table", "inet", "clt_etcd_cut", check=False)
        self._cut = False

    # --- the client ----------------------------------------------------------------------------

    def etcdctl(self, *args, endpoints=None, check=True, timeout=15, stdin=None):
        """etcdctl (API v3) from the client namespace against ENDPOINTS (default: all three)."""
        eps = ",".join(endpoints or self.endpoints)
        return _in(self.client_ns, "env", "ETCDCTL_API=3", "etcdctl", f"--endpoints={eps}",
                   "--dial-timeout=2s", "--command-timeout=5s", *args,
                   check=check, timeout=timeout, stdin=stdin)

    def put(self, key, value, **kw):
        """Puts VALUE (a str, or any other value as JSON) at KEY; the value is passed on stdin,
        so it may be anything (garbage included)."""
        if not isinstance(value, str):
            value = json.dumps(value)
        # etcdctl put KEY reads the value from stdin when it is not an argument.
        return self.etcdctl("put", key, stdin=value, **kw)

    def get(self, key):
        """The value at KEY (str), or None."""
        out = self.etcdctl("get", key, "--print-value-only").stdout
        return out[:-1] if out.endswith("\n") else (out or None)

    def get_prefix(self, prefix):
        """{key: value} of every key under PREFIX."""
        out = json.loads(self.etcdctl("get", prefix, "--prefix", "-w", "json").stdout)
        import base64
        return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv["value"]).decode()
                for kv in out.get("kvs", [])}

    def delete(self, key, prefix=False):
        """Deletes KEY (every key under it with PREFIX); returns how many were deleted."""
        args = ["del", key] + (["--prefix"] if prefix else [])
        return int(self.etcdctl(*args).stdout.strip() or 0)

    def revision(self, endpoints=None):
        out = json.loads(self.etcdctl("endpoint", "status", "-w", "json", endpoints=endpoints).stdout)
        return max(e["Status"]["header"]["revision"] for e in out)

    def wait_writable(self, timeout=20, endpoints=None):
        """Waits until a put succeeds (a leader exists and a quorum answers)."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            p = self.etcdctl("put", "/clt-probe", "x", endpoints=endpoints, check=False, timeout=10)
            if p.returncode == 0:
                self.etcdctl("del", "/clt-probe", endpoints=endpoints, check=False)
                return
            last = p.stderr.strip()
            time.sleep(0.2)
        raise AssertionError(f"etcd took no write within {timeout}s: {last}\n{self.log_tail()}")
