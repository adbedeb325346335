"""The status page (issue 20, item 4): `nvo ui` names the page nvod serves on `http_listen`;
headless Chromium (Debian's `chromium`, no other dependency) loads it from h1 while iperf3 runs
c1 -> c2 and c1 pings c3, and the DOM it leaves after a few polls shows this host, its two
peers, network 100 and a non-zero live rate for the tunnel traffic; a screenshot is saved as
the test's artifact. When status.json stops answering, the page says "stale" and keeps its
last figures.

      c1 10.0.0.1        c2 10.0.0.2        c3 10.0.0.3             VNI 100
        |                  |                  |
     [ h1: nvod ]      [ h2: nvod ]      [ h3: nvod ]     status page on UNDERLAY_IP:9477
          \\ eth0 .1        | eth0 .2        / eth0 .3      (nvod: {http_listen: ":9477"})
           +----- nvo-<lab>-ul: br0 10.100.0.0/24 -----+
     Chromium runs in h1's namespace and loads http://10.100.0.1:9477/ (what `nvo ui` prints).

Runs on both datapaths (NVO_LAB_DATAPATH=ebpf | userspace, as scripts/test.sh does).
Artifacts: tests/e2e/artifacts/ (gitignored), the path is printed.
"""

import html.parser
import json
import http.server
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import time

from bgp_peers import netns
from conftest import NVO, run, wait_for

ARTIFACTS = pathlib.Path(__file__).resolve().parent / "artifacts"
CHROMIUM = shutil.which("chromium")

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts:
  - {name: h1, nvod: {http_listen: ":9477"}}
  - {name: h2, nvod: {http_listen: ":9477"}}
  - {name: h3, nvod: {http_listen: ":9477"}}
networks: [{vni: 100}]
containers:
  - {name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}
  - {name: c3, host: h3, vni: 100, ip: 10.0.0.3/24}
"""



class Dom(html.parser.HTMLParser):
    """Every element's attributes and text, from Chromium's --dump-dom."""

    def __init__(self, text):
        super().__init__()
        self.elements = []  # [attrs dict with "_tag" and "_text"]
        self._open = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        e = dict(attrs)
        e["_tag"], e["_text"] = tag, ""
        self.elements.append(e)
        if tag not in ("meta", "br", "img", "input", "link"):
            self._open.append(e)

    def handle_endtag(self, tag):
        while self._open:
            if self._open.pop()["_tag"] == tag:
                break

    def handle_data(self, data):
        for e in self._open:
            e["_text"] += data

    def find(self, **attrs):
        want = {k if k.startswith("_") else k.replace("_", "-"): v for k, v in attrs.items()}
        return [e for e in self.elements if all(e.get(k) == v for k, v in want.items())]

    def one(self, **attrs):
        found = self.find(**attrs)
        assert len(found) == 1, f"{attrs}: {len(found)} elements"
        return found[0]


def chromium(ns, url, *extra, budget_ms=6000):
    """Runs headless Chromium in namespace NS on URL; returns its stdout (the DOM with
    --dump-dom). Virtual time lets the page's timers run BUDGET_MS ahead; fetches take real
    time, which the page's rates do not depend on (they use nvod's clock)."""
    assert CHROMIUM, "headless Chromium is required: Debian's chromium (scripts/setup.sh installs it)"
    profile = tempfile.mkdtemp(prefix="ui-chromium-")
    try:
        p = run("ip", "netns", "exec", ns, CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--disable-extensions", "--disable-dev-shm-usage",
                f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", *extra, url,
                timeout=120, env={**os.environ, "HOME": profile})
        return p.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def page_dom(lab, url):
    return Dom(chromium(lab.ns("h1"), url, "--dump-dom"))


def test_status_page_in_chromium_shows_hosts_networks_and_live_rates(lab_factory):
    lab = lab_factory(TOPOLOGY)
    url = run(NVO, "--socket", lab.socket("h1"), "ui").stdout.strip()
    assert url == "http://10.100.0.1:9477/", url
    datapath = lab.nvo("h1", "node")["datapath"]

    lab.exec("c2", "iperf3", "-s", "-D", "-1")
    wait_for(lambda: ":5201" in lab.exec("c2", "ss", "-ltn", check=False).stdout, what="iperf3 listening")
    lab.ping("c1", "10.0.0.3", count=2)
    client = subprocess.Popen(["ip", "netns", "exec", lab.ns("c1"), "iperf3", "-c", "10.0.0.2", "-t", "30",
                               "-b", "50M"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pinger = subprocess.Popen(["ip", "netns", "exec", lab.ns("c1"), "ping", "-i", "0.2", "-w", "30", "10.0.0.3"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)

        def loaded():
            d = page_dom(lab, url)
            tx = d.find(data_rate="network:100:tx")
            value = tx[0].get("data-value") if tx else ""
            to_h3 = d.find(data_rate="tunnel:10.100.0.3:tx_packets")
            pinged = datapath != "userspace" or (to_h3 and float(to_h3[0].get("data-value") or 0) > 0)
            return d if value and float(value) > 0 and pinged else None

        dom = wait_for(loaded, timeout=60, interval=1, what="a page with a live tunnel rate")
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / f"status-page-{datapath}.png"
        chromium(lab.ns("h1"), url, f"--screenshot={shot}", "--window-size=1400,1000", "--hide-scrollbars")
        assert shot.stat().st_size > 10_000, shot
        print(f"status page screenshot ({datapath}): {shot}")
    finally:
        client.terminate()
        pinger.terminate()
        client.wait(timeout=10)
        pinger.wait(timeout=10)

    assert dom.one(id="state")["data-state"] == "live"
    assert dom.one(id="host")["data-host"] == "10.100.0.1"
    assert dom.one(id="datapath")["_text"] == datapath
    # The three hosts: this one and the two peers, known from the flood list.
    rows = {e["data-host-row"]: e for e in dom.find(_tag="tr") if "data-host-row" in e}
    assert set(rows) == {"10.100.0.1", "10.100.0.2", "10.100.0.3"}, rows.keys()
    assert rows["10.100.0.1"].get("data-self") == "true"
    assert "flood" in rows["10.100.0.2"]["_text"]
    # Its network, with its port.
    net = dom.one(_tag="tr", data_network="100")
    assert net["data-profile"] == "vxlan"
    assert "c1" in net["_text"], net["_text"]
    # Live rates: tunnel traffic of network 100 out and back in, and the underlay in bits.
    rate = lambda name: float(dom.one(data_rate=name)["data-value"] or 0)
    tx, rx = rate("network:100:tx"), rate("network:100:rx")
    bits = rate("underlay:tx_bits")
    assert tx > 0 and rx > 0 and bits > 0, (tx, rx, bits)
    print(f"{datapath}: page shows network 100 {tx:.0f} frames/s out, {rx:.0f} in; underlay {bits / 1e6:.1f} Mbit/s out")
    # Tunnel rows, one per peer. The userspace datapath counts per remote: the tunnel to h2
    # carries iperf3 (megabits), the one to h3 the pings. The eBPF one does not, and the page
    # says so rather than show figures.
    tunnels = {e["data-tunnel"] for e in dom.find(_tag="tr") if "data-tunnel" in e}
    assert tunnels == {"10.100.0.2", "10.100.0.3"}, tunnels
    note = dom.one(id="tunnel-note")["_text"]
    if datapath == "userspace":
        to_h2, to_h3 = rate("tunnel:10.100.0.2:tx_bits"), rate("tunnel:10.100.0.3:tx_packets")
        assert to_h2 > 1e6 and rate("tunnel:10.100.0.2:rx_packets") > 0, to_h2
        assert to_h3 > 0, to_h3
        assert to_h2 > rate("tunnel:10.100.0.3:tx_bits")
        assert note == ""
        print(f"userspace: tunnel to h2 {to_h2 / 1e6:.1f} Mbit/s, to h3 {to_h3:.1f} packets/s")
    else:
        assert "does not count tunnel traffic per remote" in note, note
        assert dom.one(data_rate="tunnel:10.100.0.2:tx_bits")["_text"] == "not counted"
    # Recent events: at least the listener's start.
    assert dom.find(_tag="li", data_event_type="nvod")


class _Stub(http.server.BaseHTTPRequestHandler):
    """Serves the page nvod served, and a status.json that fails after the first answer."""
    page = b""
    status = b""
    served = 0

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/":
            body, code, kind = self.page, 200, "text/html; charset=utf-8"
        elif self.path.startswith("/status.json") and _Stub.served == 0:
            _Stub.served += 1
            body, code, kind = self.status, 200, "application/json"
        else:
            body, code, kind = b'{"error": "gone"}', 503, "application/json"
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_status_page_says_stale_when_nvod_stops_answering(lab_factory):
    lab = lab_factory(TOPOLOGY)
    fetch = lambda path: run("ip", "netns", "exec", lab.ns("h1"), "python3", "-c",
                             f"import sys, urllib.request; sys.stdout.buffer.write("
                             f"urllib.request.urlopen('http://10.100.0.1:9477{path}').read())").stdout
    _Stub.page, _Stub.status, _Stub.served = fetch("/").encode(), fetch("/status.json").encode(), 0
    with netns(lab.ns("h1")):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        dom = Dom(chromium(lab.ns("h1"), f"http://127.0.0.1:{server.server_address[1]}/", "--dump-dom"))
    finally:
        server.shutdown()
        server.server_close()
    state = dom.one(id="state")
    assert state["data-state"] == "stale", state
    assert "retrying" in state["_text"]
    # The last figures stay.
    assert dom.one(id="host")["data-host"] == "10.100.0.1"
    assert dom.find(_tag="tr", data_network="100")


def test_nvo_ui_says_how_to_turn_the_page_on(lab_factory):
    lab = lab_factory("""
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}]
""")
    p = run(NVO, "--socket", lab.socket("h1"), "ui", check=False)
    assert p.returncode == 1 and p.stdout == "", p
    assert "http_listen is not set" in p.stderr and "127.0.0.1:9477" in p.stderr, p.stderr


# One VXLAN packet for a VNI h1 does not serve (an unknown_vni drop at h1), sent from h2.
UNKNOWN_VNI = r"""
from scapy.all import IP, UDP, Ether, send
from scapy.layers.vxlan import VXLAN
inner = Ether(src="02:00:00:00:99:01", dst="ff:ff:ff:ff:ff:ff") / IP(src="10.9.9.1", dst="10.9.9.2") / UDP(sport=1111, dport=2222)
send(IP(dst="10.100.0.1") / UDP(sport=40000, dport=4789) / VXLAN(vni=999) / inner, verbose=0)
"""


def test_recent_events_show_drops_while_the_page_is_watched(lab_factory):
    """While status.json is polled, drops come into the page's recent events through a monitor
    listener; the page in Chromium lists them."""
    lab = lab_factory(TOPOLOGY)
    status = lambda: json.loads(run("ip", "netns", "exec", lab.ns("h1"), "python3", "-c",
                                    "import sys, urllib.request; sys.stdout.buffer.write(urllib.request."
                                    "urlopen('http://10.100.0.1:9477/status.json').read())").stdout)
    status()  # the page is watched from now on
    run("ip", "netns", "exec", lab.ns("h2"), "/usr/bin/python3", "-c", UNKNOWN_VNI)

    def drop_seen():
        events = status()["events"]
        drops = [e for e in events if e["type"] == "monitor.drop" and "unknown_vni vni 999" in e["text"]]
        return events if drops else None

    wait_for(drop_seen, timeout=15, interval=0.5, what="an unknown_vni drop in status.json's events")
    dom = page_dom(lab, "http://10.100.0.1:9477/")
    assert dom.find(_tag="li", data_event_type="monitor.drop"), "the page lists the drop"
