"""Prometheus metrics (issue 20, item 1): a real Prometheus server (Debian's) in the lab's
underlay scrapes the three nvods of a lab on their `http_listen` address; while iperf3 runs
between two containers and unknown-VNI VXLAN packets arrive at h1, its query API returns
`rate(...)` series for the tunnel traffic and for the drops. Each nvod's output passes
`promtool check metrics`, and the metrics listener is read-only and bounded as configured.

      c1 10.0.0.1        c2 10.0.0.2        c3 10.0.0.3             VNI 100
        |                  |                  |
     [ h1: nvod ]      [ h2: nvod ]      [ h3: nvod ]     metrics on UNDERLAY_IP:9477
          \\ eth0 .1        | eth0 .2        / eth0 .3      (nvod: {http_listen: ":9477"})
           +----- nvo-<lab>-ul: br0 10.100.0.0/24 -----+
                   .250: prometheus (scrape every 1 s; API on 127.0.0.1:9090 there)
                   .250: the test sends VXLAN for VNI 999 to h1 (dropped: unknown_vni)

Runs on both datapaths (NVO_LAB_DATAPATH=ebpf | userspace, as scripts/test.sh does).
"""

import json
import socket
import struct
import subprocess
import threading
import time
import urllib.parse

import pytest

from bgp_peers import Daemon, netns, private_dir, underlay_address
from conftest import run, wait_for

PROM_ADDR = "10.100.0.250"
PROM_API = "127.0.0.1:9090"
HOSTS = ("h1", "h2", "h3")
HEADER_TIMEOUT_S = 2

TOPOLOGY = f"""
underlay: {{family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}}
hosts:
  - {{name: h1, nvod: {{http_listen: ":9477", http_header_timeout_s: {HEADER_TIMEOUT_S}, http_max_connections: 8}}}}
  - {{name: h2, nvod: {{http_listen: ":9477", http_header_timeout_s: {HEADER_TIMEOUT_S}, http_max_connections: 8}}}}
  - {{name: h3, nvod: {{http_listen: ":9477", http_header_timeout_s: {HEADER_TIMEOUT_S}, http_max_connections: 8}}}}
networks: [{{vni: 100}}]
containers:
  - {{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24}}
  - {{name: c2, host: h2, vni: 100, ip: 10.0.0.2/24}}
  - {{name: c3, host: h3, vni: 100, ip: 10.0.0.3/24}}
"""


def host_ip(i):
    return f"10.100.0.{i + 1}"


def http(ns, addr, request, timeout=10.0):
    """Sends REQUEST (bytes) to ADDR from namespace NS; returns (status, head, body)."""
    with netns(ns):
        s = socket.create_connection(addr, timeout=timeout)
    with s:
        s.sendall(request)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/") else 0
    return status, head.decode(errors="replace"), body.decode(errors="replace")


def scrape(ns, ip):
    status, head, body = http(ns, (ip, 9477), b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 200, (head, body)
    assert "text/plain; version=0.0.4" in head.lower(), head
    return body


def query(ul, expr):
    """Prometheus' HTTP API, asked from inside the underlay namespace: the result vector."""
    path = "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    status, _, body = http(ul, ("127.0.0.1", 9090),
                           f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    assert status == 200, body
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def by_instance(result):
    return {r["metric"]["instance"]: float(r["value"][1]) for r in result}


def vxlan_unknown_vni_sender(ul, target, stop):
    """Sends VXLAN packets for VNI 999 (no such network) to TARGET:4789 until STOP is set."""
    with netns(ul):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    frame = bytes.fromhex("02000000aa01 02000000aa02 0800") + bytes(46)
    packet = struct.pack("!BBHI", 0x08, 0, 0, 999 << 8) + frame
    with s:
        while not stop.is_set():
            s.sendto(packet, (target, 4789))
            time.sleep(0.01)


@pytest.fixture
def prometheus(tmp_path):
    """Starts Prometheus in a lab's underlay namespace; stops it by its pid afterwards."""
    started = []

    def start(lab):
        ul = underlay_address(lab, PROM_ADDR)
        d = private_dir("nvozm-prom-")
        config = d / "prometheus.yml"
        targets = ", ".join(f"'{host_ip(i)}:9477'" for i in range(len(HOSTS)))
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            f"  - job_name: nvod\n    scrape_timeout: 1s\n    static_configs: [{{targets: [{targets}]}}]\n")
        daemon = Daemon(ul, ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={d / 'data'}",
                             f"--web.listen-address={PROM_API}"], tmp_path / "prometheus.log").start()
        started.append((daemon, d))
        return ul, daemon

    yield start
    for daemon, d in started:
        daemon.stop()
        subprocess.run(["rm", "-rf", str(d)], check=False)


def test_prometheus_scrapes_three_nvods_while_traffic_and_drops_run(lab_factory, prometheus):
    lab = lab_factory(TOPOLOGY)
    ul, daemon = prometheus(lab)
    # Every nvod is up for Prometheus (`up` appears after the first scrape: poll; Prometheus
    # itself takes a moment to listen).
    def three_up():
        try:
            return len([v for v in by_instance(query(ul, "up")).values() if v == 1.0]) == 3
        except ConnectionRefusedError:
            return False

    wait_for(three_up, timeout=30, what="three targets up")
    datapath = lab.nvo("h1", "node")["datapath"]
    info = by_instance(query(ul, f'nvo_datapath_info{{datapath="{datapath}"}}'))
    assert len(info) == 3 and set(info.values()) == {1.0}, info

    lab.exec("c2", "iperf3", "-s", "-D", "-1")
    wait_for(lambda: ":5201" in lab.exec("c2", "ss", "-ltn", check=False).stdout, what="iperf3 listening")
    client = subprocess.Popen(["ip", "netns", "exec", lab.ns("c1"), "iperf3", "-c", "10.0.0.2", "-t", "12"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()
    sender = threading.Thread(target=vxlan_unknown_vni_sender, args=(ul, host_ip(0), stop), daemon=True)
    sender.start()
    h1, h2 = f"{host_ip(0)}:9477", f"{host_ip(1)}:9477"
    try:
        def rates():
            tx = by_instance(query(ul, "rate(nvo_underlay_tx_bytes_total[4s])"))
            encap = by_instance(query(ul, 'rate(nvo_network_encap_unicast_total{vni="100"}[4s])'))
            rx = by_instance(query(ul, 'rate(nvo_network_rx_underlay_frames_total{vni="100"}[4s])'))
            drops = by_instance(query(ul, 'rate(nvo_drops_total{reason="unknown_vni"}[4s])'))
            ok = (len(tx) == 3 and tx.get(h1, 0) > 1e6 and encap.get(h1, 0) > 0 and rx.get(h2, 0) > 0
                  and drops.get(h1, 0) > 0)
            return (tx, encap, rx, drops) if ok else None

        tx, encap, rx, drops = wait_for(rates, timeout=20, interval=0.5,
                                        what="rate() series for tunnel traffic and drops")
        print(f"{datapath}: tunnel tx {tx[h1] * 8 / 1e6:.0f} Mbit/s from h1, "
              f"{encap[h1]:.0f} unicast encaps/s, {drops[h1]:.0f} unknown_vni drops/s at h1")
        # Only h1 is sent unknown-VNI packets.
        assert drops.get(h2, 0) == 0 and drops.get(f"{host_ip(2)}:9477", 0) == 0, drops
    finally:
        stop.set()
        sender.join(timeout=5)
        # The rates are read: the rest of the 12-second run would only cost suite time.
        client.terminate()
        client.wait(timeout=10)

    # A QoS profile and a meter are exported with their counters (zero here: nothing is
    # attached), by name and by number.
    lab.nvo("h1", "qos", "add", "silver", "--rate", "100mbit", "--burst", "64k")
    lab.nvo("h1", "meter", "add", "7", "--rate", "100mbit", "--burst", "64k")
    text = scrape(ul, host_ip(0))
    for line in ('nvo_qos_policed_frames_total{profile="silver"} 0',
                 'nvo_meter_dropped_frames_total{meter="7"} 0'):
        assert line in text.splitlines(), f"{line} not in h1's metrics"

    # Each nvod's real output passes Prometheus' linter.
    for i in range(len(HOSTS)):
        text = scrape(ul, host_ip(i))
        p = run("promtool", "check", "metrics", input=text, check=False)
        assert p.returncode == 0, f"promtool on h{i + 1}: rc {p.returncode}\n{p.stdout}{p.stderr}"


def test_metrics_listener_is_read_only_and_bounded(lab_factory):
    lab = lab_factory(TOPOLOGY)
    ul = underlay_address(lab, PROM_ADDR)
    target = (host_ip(0), 9477)
    status, head, _ = http(ul, target, b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                       b"Connection: close\r\n\r\n")
    assert status == 405 and "allow: get" in head.lower(), head
    for method in (b"PUT", b"DELETE"):
        status, _, _ = http(ul, target, method + b" /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert status == 405
    # No request body, refused before it is sent.
    t = time.monotonic()
    status, _, body = http(ul, target, b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\n")
    assert status == 413 and time.monotonic() - t < 1.0, body
    # The API is not reachable here: nothing can change nvod through this listener.
    status, _, _ = http(ul, target, b"GET /v1/networks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status == 404
    # A client that never finishes its header is closed after http_header_timeout_s.
    with netns(ul):
        slow = socket.create_connection(target, timeout=10)
    with slow:
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost:")
        t = time.monotonic()
        try:
            slow.recv(4096)
        except ConnectionResetError:
            pass
        took = time.monotonic() - t
    assert HEADER_TIMEOUT_S - 0.3 <= took < HEADER_TIMEOUT_S + 2, took
    # At the cap (8), idle connections make room: a scrape still answers.
    idle = []
    with netns(ul):
        for _ in range(20):
            idle.append(socket.create_connection(target, timeout=5))
    try:
        assert "nvo_build_info" in scrape(ul, host_ip(0))
    finally:
        for s in idle:
            s.close()
    assert lab.nvo("h1", "node")["node_id"]
