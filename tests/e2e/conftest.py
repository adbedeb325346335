"""Fixtures for nvo's end-to-end tests: labs of network namespaces built by `nvo lab`.

Every test gets labs with unique names and tears them down even when it fails, so a failed run
leaves no namespace or nvod behind. Tests run as root (CI runs them as root).
"""

import http.client
import itertools
import json
import os
import pathlib
import select
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("NVO_BIN_DIR", ROOT / "target" / "debug"))
NVO = str(BIN / "nvo")
RUN = pathlib.Path("/run/nvo/lab")
_serial = itertools.count()


def run(*cmd, check=True, timeout=60, **kw):
    """Runs a command, returning the CompletedProcess; a failure shows its output."""
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


class Lab:
    """A running lab: its nodes, their namespaces and the nvod API of each nvo host."""

    def __init__(self, name, topology_path):
        self.name = name
        self.topology = topology_path

    def ns(self, node):
        return f"nvo-{self.name}-{node}"

    def exec(self, node, *cmd, check=True, timeout=60):
        return run("ip", "netns", "exec", self.ns(node), *cmd, check=check, timeout=timeout)

    def socket(self, host):
        return RUN / self.name / f"{host}.sock"

    def nvo(self, host, *args, check=True):
        """Runs `nvo -o json ARGS` against HOST's nvod and decodes the answer."""
        p = run(NVO, "--socket", self.socket(host), "-o", "json", *args, check=check)
        if not check:
            return p
        return json.loads(p.stdout) if p.stdout.strip() else None

    def counters(self, host):
        return self.nvo(host, "counters", "--all")

    def fdb(self, host, vni):
        return self.nvo(host, "fdb", "show", str(vni))

    def ping(self, node, addr, count=3, check=True, extra=()):
        return self.exec(node, "ping", "-c", str(count), "-i", "0.2", "-W", "2", *extra, addr, check=check, timeout=30)

    def mac(self, node, dev="eth0"):
        return pathlib.Path(f"/sys/class/net/{dev}/address").read_text().strip() if False else \
            self.exec(node, "cat", f"/sys/class/net/{dev}/address").stdout.strip()

    def neigh_mac(self, node, addr):
        out = self.exec(node, "ip", "-j", "neigh", "show", addr).stdout
        entries = json.loads(out or "[]")
        return entries[0].get("lladdr") if entries else None

    def capture(self, host, pcap, filter_expr="udp port 4789"):
        """Starts tcpdump on HOST's eth0 writing PCAP, each packet written at once (-U,
        --immediate-mode); returns the process once tcpdump says it listens. Stop it with
        SIGTERM (it flushes) and wait for it."""
        cmd = ["tcpdump", "-i", "eth0", "--immediate-mode", "-U", "-n", "-Z", "root", "-w", str(pcap), filter_expr]
        cap = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *cmd],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        seen = ""
        while "listening on" not in seen:
            ready, _, _ = select.select([cap.stderr], [], [], max(0.0, deadline - time.monotonic()))
            line = cap.stderr.readline() if ready else ""
            if not line:
                cap.kill()
                raise AssertionError(f"tcpdump did not start on {host}: {seen}")
            seen += line
        return cap

    def lab_state(self):
        return json.loads((RUN / self.name / "lab.json").read_text())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so lab_factory knows a test failed."""
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


def dump_lab(name):
    """What a failed test leaves to read: the tail of every nvod log of lab NAME, and the
    datapath each nvod ran."""
    for log in sorted((RUN / name).glob("*.log")):
        lines = log.read_text(errors="replace").splitlines()[-25:]
        print(f"--- {name}/{log.name} (last {len(lines)} lines) ---")
        print("\n".join(lines))


@pytest.fixture
def lab_factory(tmp_path, request):
    """Builds labs from topology text (YAML without the name: line); tears all of them down."""
    made, attempted = [], []

    def make(topology_yaml):
        name = f"t{os.getpid() % 1000}{next(_serial)}"
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"name: {name}\n" + topology_yaml)
        attempted.append(name)
        # A failed `up` takes down what it built, so only labs that came up need `down`.
        run(NVO, "lab", "up", path, "--nvod", BIN / "nvod", timeout=180)
        made.append(name)
        return Lab(name, path)

    yield make
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        for name in made:
            dump_lab(name)
    failures = []
    for name in made:
        kill_strays(name)
        p = run(NVO, "lab", "down", name, check=False, timeout=60)
        if p.returncode != 0:
            failures.append(f"{name}: {p.stderr.strip()}")
    leftover = [l for l in run("ip", "netns", "list").stdout.split() if any(l.startswith(f"nvo-{n}-") for n in attempted)]
    assert not failures and not leftover, f"lab teardown failed: {failures} leftover namespaces: {leftover}"


def kill_strays(lab_name):
    """Kills what tests started inside a lab's namespaces (iperf3 servers, tshark), leaving nvod
    to `nvo lab down`."""
    for ns in run("ip", "netns", "list").stdout.split():
        if not ns.startswith(f"nvo-{lab_name}-"):
            continue
        for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                comm = pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
                if comm != "nvod":
                    os.kill(int(pid), 9)
            except (OSError, ValueError):
                pass


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = str(path)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(lab, host, method, path, body=None, expect=None):
    """One call of HOST's nvod API: asserts a 2xx answer (or exactly `expect`) and returns the
    decoded JSON (None for an empty body)."""
    conn = UnixHTTP(lab.socket(host))
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    text = resp.read().decode()
    conn.close()
    if expect is None:
        assert resp.status < 300, f"{method} {path} on {host}: {resp.status} {text}"
    else:
        assert resp.status == expect, f"{method} {path} on {host}: {resp.status} {text}"
    return json.loads(text) if text else None


def wait_for(predicate, timeout=10.0, interval=0.2, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
