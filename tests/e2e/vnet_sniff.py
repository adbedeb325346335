"""A packet socket with PACKET_VNET_HDR on a lab node's eth0, run for some seconds.

Such a socket sees GSO frames whole (a 10-byte virtio-net header first: flags, gso_type,
hdr_len, gso_size, csum_start, csum_offset) and, bound with ETH_P_ALL, outgoing frames too.
Each test gives the body that counts what it is after: it sets `seen` (printed as JSON at the
end) and defines `see(data, addr)`, called for every frame.

    p = start(lab, "h1", BODY, 6)    # returns once the socket is bound
    ... traffic ...
    seen = result(p)
"""

import json
import subprocess
import sys

HEAD = r"""
import json, socket, struct, sys, time
# ETH_P_ALL: only such sockets see outgoing frames.
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.setsockopt(263, 15, 1)  # SOL_PACKET, PACKET_VNET_HDR
s.bind(("eth0", 0))
s.settimeout(0.2)
"""

LOOP = r"""
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    try:
        data, addr = s.recvfrom(70000)
    except socket.timeout:
        continue
    see(data, addr)
print(json.dumps(seen), flush=True)
"""


def start(lab, node, body, seconds):
    """Starts the sniffer with `body` in `node` for `seconds`; returns once it is listening."""
    p = subprocess.Popen(["ip", "netns", "exec", lab.ns(node), sys.executable, "-c", HEAD + body + LOOP,
                          str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    return p


def result(p):
    """What the sniffer saw (its `seen`), once its time is up."""
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return json.loads(out)
