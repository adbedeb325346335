"""GET /v1/events: every overlay change, as nvod commits it, reaches a listener as a
server-sent event (`event: node|route|own`, `data:` the change as JSON).

   [ h1: nvod ] ◄── a listener on the API socket, and `nvo overlay …` making changes
"""

import json
import socket
import time

from conftest import api

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}]
networks: []
containers: []
"""


def read_events(sock, want, timeout=10):
    """Reads the stream until `want` events came; returns them as (kind, data) pairs."""
    sock.settimeout(timeout)
    buf, events = b"", []
    deadline = time.monotonic() + timeout
    while len(events) < want and time.monotonic() < deadline:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            block, buf = buf.split(b"\n\n", 1)
            lines = [l for l in block.decode(errors="replace").splitlines()]
            kind = next((l[7:] for l in lines if l.startswith("event: ")), None)
            data = next((l[6:] for l in lines if l.startswith("data: ")), None)
            if kind and data:
                events.append((kind, json.loads(data)))
    return events


def test_changes_arrive_as_events(lab_factory):
    lab = lab_factory(TOPOLOGY)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(lab.socket("h1")))
    sock.sendall(b"GET /v1/events HTTP/1.1\r\nHost: nvod\r\n\r\n")
    head = sock.recv(4096)
    assert b"200" in head.split(b"\r\n")[0] and b"text/event-stream" in head, head
    time.sleep(0.2)
    api(lab, "h1", "PUT", "/v1/overlay/nodes/7", {"locators": [{"addr": "10.100.0.7", "weight": 3}]})
    api(lab, "h1", "PUT", "/v1/overlay/routes/ethernet/9", {"next_hops": [7]})
    api(lab, "h1", "DELETE", "/v1/overlay/routes/ethernet/9")
    api(lab, "h1", "DELETE", "/v1/overlay/nodes/7")
    events = read_events(sock, 4)
    sock.close()
    assert [(k, d["action"]) for k, d in events] == [
        ("node", "set"), ("route", "set"), ("route", "removed"), ("node", "removed")], events
    assert events[0][1]["locators"] == [{"addr": "10.100.0.7", "weight": 3}]
    assert events[1][1]["app"] == "ethernet" and events[1][1]["dst"] == 9 and events[1][1]["next_hops"] == [7]
    # A refused change is no event: a listener only hears what was committed.
    api(lab, "h1", "PUT", "/v1/overlay/routes/ethernet/9", {"next_hops": [9, 9]}, expect=400)
