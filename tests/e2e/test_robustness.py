"""Bad input never takes nvod down: malformed underlay packets are dropped and counted by reason,
bad API calls get a 4xx and change nothing, and a kill -9 loses no configuration.

      red1                 red2
        |                    |
   [ h1: nvod ]  <-----  [ h2: nvod ]   scapy in h2's namespace sends the bad packets to h1:4789
         \\ eth0             / eth0
          +-- ul: bridge ---+            underlay 10.100.0.0/24 (h1 = .1, h2 = .2)
"""

import http.client
import json
import socket
import os
import pathlib
import signal
import subprocess
import time

from conftest import NVO, run, wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""

MALFORMED = r"""
import random
from scapy.all import IP, UDP, Raw, Ether, send
from scapy.layers.vxlan import VXLAN
random.seed(7)
dst = "10.100.0.1"
inner = bytes(Ether(src="02:00:00:00:99:01", dst="ff:ff:ff:ff:ff:ff") / IP() / UDP())
pkts = []
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / Raw(b"\x08\x00\x00")] * 50              # truncated header
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / VXLAN(flags=0, vni=100) / Raw(inner)] * 50  # I flag clear
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / VXLAN(vni=999) / Raw(inner)] * 50           # unknown VNI
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / VXLAN(vni=100) / Raw(inner[:5])] * 50       # runt inner frame
bad_src = bytes(Ether(src="01:00:5e:00:00:01", dst="ff:ff:ff:ff:ff:ff") / IP() / UDP())
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / VXLAN(vni=100) / Raw(bad_src)] * 50         # multicast source MAC
pkts += [IP(dst=dst) / UDP(sport=40000, dport=4789) / Raw(bytes(random.getrandbits(8) for _ in range(random.randrange(0, 200))))
         for _ in range(300)]                                                                       # garbage
send(pkts, verbose=0)
"""


def test_malformed_underlay_packets_are_dropped_and_counted(lab_factory):
    lab = lab_factory(TOPOLOGY)
    lab.ping("red1", "10.0.0.2")
    before = lab.counters("h1")["drops"]
    lab.exec("h2", "/usr/bin/python3", "-c", MALFORMED, timeout=120)
    after = wait_for(lambda: (lambda d: d if d["unknown_vni"] >= before["unknown_vni"] + 50 else None)(lab.counters("h1")["drops"]),
                     what="drop counters on h1")
    for reason in ("malformed_vxlan", "vxlan_flags", "unknown_vni", "malformed_frame", "invalid_source_mac"):
        assert after[reason] >= before[reason] + 50, (reason, before[reason], after[reason])
    # Still alive and still forwarding, with its configuration intact.
    lab.ping("red1", "10.0.0.2")
    assert [n["vni"] for n in lab.nvo("h1", "network", "list")] == [100]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("nvod", timeout=10)
        self.path = str(path)

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(lab, host, method, path, body=None):
    """One raw API request: (status, decoded JSON or None)."""
    conn = UnixHTTPConnection(lab.socket(host))
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    raw = r.read()
    conn.close()
    return r.status, (json.loads(raw) if raw else None)


def snapshot(lab, host):
    """What an API call could change: configuration and static entries. Learned entries (and
    their count) are left out: tenant traffic may teach nvod a MAC at any moment."""
    networks = [{k: v for k, v in n.items() if k != "learned"} for n in api(lab, host, "GET", "/v1/networks")[1]]
    fdb = [e for e in api(lab, host, "GET", "/v1/networks/100/fdb")[1] if e["origin"] == "static"]
    return networks, api(lab, host, "GET", "/v1/ports")[1], fdb, api(lab, host, "GET", "/v1/networks/100/flood")[1]


def test_bad_api_calls_get_4xx_and_change_nothing(lab_factory):
    lab = lab_factory(TOPOLOGY)
    lab.nvo("h1", "fdb", "add", "100", "02:00:00:00:55:55", "--remote", "10.100.0.2")
    before = snapshot(lab, "h1")
    bad = [
        ("POST", "/v1/networks", {"vni": 0}, 400),
        ("POST", "/v1/networks", {"vni": 16777216}, 400),
        ("POST", "/v1/networks", {"vni": 100}, 409),
        ("POST", "/v1/networks", {"vni": 7, "mtu": 9999}, 400),
        ("POST", "/v1/networks", {"vni": 7, "colour": "red"}, 400),
        ("POST", "/v1/networks", b"{not json", 400),
        ("POST", "/v1/networks", b"x" * 200000, 413),
        ("DELETE", "/v1/networks/100", None, 409),
        ("DELETE", "/v1/networks/555", None, 404),
        ("GET", "/v1/networks/abc", None, 400),
        ("POST", "/v1/ports", {"name": "nosuchif0", "vni": 100}, 400),
        ("POST", "/v1/ports", {"name": "a/b", "vni": 100}, 400),
        ("POST", "/v1/ports", {"name": "x" * 16, "vni": 100}, 400),
        ("POST", "/v1/networks/100/fdb", {"mac": "zz:zz:zz:zz:zz:zz", "remote": "10.100.0.9"}, 400),
        ("POST", "/v1/networks/100/fdb", {"mac": "02:00:00:00:00:09"}, 400),
        ("POST", "/v1/networks/100/fdb", {"mac": "02:00:00:00:00:09", "remote": "fd00::9"}, 400),
        ("POST", "/v1/networks/555/fdb", {"mac": "02:00:00:00:00:09", "remote": "10.100.0.9"}, 404),
        ("DELETE", "/v1/networks/100/fdb/02:00:00:00:00:09", None, 404),
        ("POST", "/v1/networks/100/flood", {"remote": "not-an-ip"}, 400),
        ("GET", "/v1/nothing", None, 404),
    ]
    for method, path, body, want in bad:
        status, answer = api(lab, "h1", method, path, body)
        assert status == want, (method, path, status, answer)
        assert isinstance(answer, dict) and "\n" not in answer["error"] and answer["error"], (path, answer)
    assert snapshot(lab, "h1") == before
    assert lab.ping("red1", "10.0.0.2").returncode == 0
    # The CLI turns an API error into one line.
    p = lab.nvo("h1", "network", "del", "100", check=False)
    assert p.returncode == 1 and p.stderr.startswith("nvo: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr


def nvod_pid(lab, host):
    for pid in run("ip", "netns", "pids", lab.ns(host)).stdout.split():
        if pathlib.Path(f"/proc/{pid}/comm").read_text().strip() == "nvod":
            return int(pid)
    return None


def test_kill_9_and_restart_restores_state(lab_factory):
    lab = lab_factory(TOPOLOGY)
    lab.nvo("h2", "fdb", "add", "100", "02:00:00:00:77:77", "--remote", "10.100.0.1")
    lab.nvo("h2", "network", "add", "300", "--flood", "10.100.0.1")
    lab.ping("red1", "10.0.0.2")
    want = (lab.nvo("h2", "network", "list"), lab.nvo("h2", "port", "list"))
    pid = nvod_pid(lab, "h2")
    cmdline = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pathlib.Path(f"/proc/{pid}").exists(), what="nvod to die")
    proc = subprocess.Popen(["ip", "netns", "exec", lab.ns("h2")] + [c.decode() for c in cmdline],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: lab.nvo("h2", "node", check=False).returncode == 0, what="nvod to answer again")
        got = (lab.nvo("h2", "network", "list"), lab.nvo("h2", "port", "list"))
        assert [n["vni"] for n in got[0]] == [n["vni"] for n in want[0]]
        assert [(p["name"], p["vni"]) for p in got[1]] == [(p["name"], p["vni"]) for p in want[1]]
        assert any(e["mac"] == "02:00:00:00:77:77" and e["origin"] == "static" for e in lab.fdb("h2", 100))
        # Traffic resumes with no manual step; learned entries are relearned.
        wait_for(lambda: lab.ping("red1", "10.0.0.2", count=1, check=False).returncode == 0, timeout=15,
                 what="traffic to resume")
        assert any(e["mac"] == lab.mac("red1") for e in lab.fdb("h2", 100))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
