"""tshark, on the underlay, decodes what nvod sends as VXLAN with the right VNI; and
`nvo capture` (nvod's own capture, streamed over the API socket) writes pcapng tshark reads:
a network's inner frames, the underlay's VXLAN packets, a port's frames.

      red1                 red2
        |                    |
   [ h1: nvod ]         [ h2: nvod ]      tcpdump captures on h1's eth0, tshark decodes
         \\ eth0             / eth0
          +-- ul: bridge ---+              VNI 4711, underlay 10.100.0.0/24
"""

import os
import pathlib
import re
import select
import signal
import subprocess
import time

from bgp_peers import nvod_pid
from conftest import NVO, run, wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 4711}]
containers:
  - {name: red1, host: h1, vni: 4711, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 4711, ip: 10.0.0.2/24}
"""


def test_tshark_decodes_nvod_vxlan(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    pcap = tmp_path / "ul.pcap"
    cap = lab.capture("h1", pcap)
    try:
        lab.ping("red1", "10.0.0.2", count=5)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "ip.src", "-e", "udp.srcport", "-e", "vxlan.vni",
                          "-e", "icmp.type"], capture_output=True, text=True, check=True).stdout
    rows = [l.split("\t") for l in out.splitlines() if l.strip()]
    assert rows, "no VXLAN packet captured"
    assert all(r[2] == "4711" for r in rows), rows
    sent = [r for r in rows if r[0].startswith("10.100.0.1")]
    assert any("8" in r[3].split(",") for r in sent), "no ICMP echo request inside nvod's VXLAN"
    # The outer source port carries flow entropy from nvod's pool (49152 and up).
    assert all(int(r[1]) >= 49152 for r in sent), rows


# ---- `nvo capture`: nvod's own captures, streamed over the API socket (docs/capture.md) ----

def nvo_capture(lab, host, *args, timeout=30, check=True):
    """Runs `nvo capture ARGS` against HOST's nvod; the CompletedProcess (bytes out)."""
    p = subprocess.run([NVO, "--socket", str(lab.socket(host)), "capture", *map(str, args)],
                       capture_output=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"nvo capture {args} exited {p.returncode}: {p.stderr.decode()}")
    return p


def start_capture(lab, host, *args):
    """Starts `nvo capture ARGS` in the background and returns once its stream has begun: nvod
    sends the section header only after it has opened every tap (nvo_capture::Sessions::start),
    so nothing sent afterwards is missed. Unlike a count of nvod's sockets, this cannot be
    fooled by another capture's taps closing meanwhile. With `-w FILE` the header shows as the
    file's first bytes; on stdout the bytes read are kept in `proc.head`, to go before what
    communicate() returns."""
    args = [str(a) for a in args]
    proc = subprocess.Popen([NVO, "--socket", str(lab.socket(host)), "capture", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.head = b""
    path = pathlib.Path(args[args.index("-w") + 1]) if "-w" in args else None

    def begun():
        if path is not None:
            return path.exists() and path.stat().st_size > 0
        if select.select([proc.stdout], [], [], 0)[0]:
            proc.head = os.read(proc.stdout.fileno(), 1 << 16)  # b"" at the end of the stream
        return bool(proc.head)

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ended = proc.poll() is not None
        if begun():
            return proc
        if ended:
            raise AssertionError(f"nvo capture {' '.join(args)} exited {proc.returncode} before its stream "
                                 f"began: {proc.stderr.read().decode()!r}")
        time.sleep(0.05)
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise AssertionError(f"nvo capture {' '.join(args)}: no stream within 10 s; it said: {err.decode()!r}")


def ping_until_done(lab, proc, timeout=30):
    """Pings red1 -> red2 once a second until the capture `proc` has its count, so that traffic
    sent before nvod's taps were open cannot leave it short; returns its (stdout, stderr)."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        lab.ping("red1", "10.0.0.2", count=1)
        time.sleep(0.5)
    return proc.communicate(timeout=10)


def capture_sockets(lab, host):
    """How many AF_PACKET sockets nvod holds (its datapath's ports included)."""
    pid = nvod_pid(lab, host)
    assert pid, f"no nvod in {lab.ns(host)}"
    inodes = set()
    for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    lines = pathlib.Path(f"/proc/{pid}/net/packet").read_text().splitlines()[1:]
    return sum(1 for l in lines if l.split()[-1] in inodes)


def tshark_fields(pcap, *fields, display=None):
    cmd = ["tshark", "-r", str(pcap), "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    if display:
        cmd += ["-Y", display]
    out = run(*cmd).stdout
    return [l.split("\t") for l in out.splitlines() if l.strip()]


def host_port(lab, host):
    ports = lab.nvo(host, "port", "list")
    assert ports, f"no port on {host}"
    return ports[0]["name"]


CAP_TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}]
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.0.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.0.2/24}
"""


def test_nvo_capture_network_port_underlay(lab_factory, tmp_path):
    """--network shows the inner frames (tenant addresses, not the underlay's), --underlay the
    VXLAN packets with the network's VNI, --port the container's frames; nvod holds capture
    sockets only while a capture runs."""
    lab = lab_factory(CAP_TOPOLOGY)
    lab.ping("red1", "10.0.0.2", count=2)  # learn both ways first
    idle = capture_sockets(lab, "h1")

    # --network 100 -c 4 -w F icmp, during a ping: requests and replies, inner addresses.
    net = tmp_path / "net.pcapng"
    cap = start_capture(lab, "h1", "--network", "100", "-c", "4", "-w", net, "icmp")
    during = capture_sockets(lab, "h1")
    lab.ping("red1", "10.0.0.2", count=6)
    out, err = cap.communicate(timeout=20)
    assert cap.returncode == 0, err.decode()
    assert b"4 frames captured" in err, err.decode()
    rows = tshark_fields(net, "ip.src", "ip.dst", "icmp.type")
    assert len(rows) == 4, rows
    assert {tuple(r) for r in rows} == {("10.0.0.1", "10.0.0.2", "8"), ("10.0.0.2", "10.0.0.1", "0")}, rows
    # Inner frames only: no VXLAN, no underlay address.
    assert not tshark_fields(net, "frame.number", display="vxlan or ip.addr==10.100.0.0/24")

    # nvod ends a capture that reached its count on its own, a moment after the client: its taps
    # close.
    wait_for(lambda: capture_sockets(lab, "h1") == idle, timeout=5, what="capture sockets closed")

    # --underlay -c 2: VXLAN with VNI 100 between the hosts' locators.
    ul = tmp_path / "ul.pcapng"
    cap = subprocess.Popen([NVO, "--socket", str(lab.socket("h1")), "capture", "--underlay", "-c", "2", "-w", str(ul)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = ping_until_done(lab, cap)
    assert cap.returncode == 0, err.decode()
    rows = tshark_fields(ul, "ip.src", "ip.dst", "vxlan.vni", "icmp.type")
    assert len(rows) == 2, rows
    assert all(r[2] == "100" for r in rows), rows
    assert all(r[0].startswith("10.100.0.") and r[1].startswith("10.100.0.") for r in rows), rows

    wait_for(lambda: capture_sockets(lab, "h1") == idle, timeout=5, what="capture sockets closed")

    # --port NAME: the container's frames, both directions, written to stdout.
    port = host_port(lab, "h1")
    cap = subprocess.Popen([NVO, "--socket", str(lab.socket("h1")), "capture", "--port", port, "-c", "4", "icmp"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = ping_until_done(lab, cap)
    assert cap.returncode == 0, err.decode()
    stdout_pcap = tmp_path / "port.pcapng"
    stdout_pcap.write_bytes(out)
    rows = tshark_fields(stdout_pcap, "ip.src", "ip.dst", "icmp.type", "frame.interface_name")
    assert len(rows) == 4, rows
    assert {r[0] for r in rows} == {"10.0.0.1", "10.0.0.2"}, rows
    assert all(r[3] == port for r in rows), rows

    # Idle again: the taps are closed once the captures end.
    print(f"nvod packet sockets on h1: {idle} idle, {during} during a --network capture")
    assert during > idle, (idle, during)
    wait_for(lambda: capture_sockets(lab, "h1") == idle, timeout=5, what="capture sockets closed")


def test_nvo_capture_refusals_and_bounds(lab_factory, tmp_path):
    """A bad filter is a clear error (libpcap's words) and exit 1; unknown targets are named;
    --duration ends a quiet capture with a valid empty file; nvod keeps running."""
    lab = lab_factory(CAP_TOPOLOGY)
    p = nvo_capture(lab, "h1", "--network", "100", "-c", "1", "icmp", "andd", check=False)
    assert p.returncode == 1
    err = p.stderr.decode()
    assert 'bad filter "icmp andd"' in err and "syntax error" in err and "HTTP 400" in err, err
    p = nvo_capture(lab, "h1", "--network", "999", "-c", "1", check=False)
    assert p.returncode == 1 and "no network 999" in p.stderr.decode(), p.stderr
    p = nvo_capture(lab, "h1", "--port", "nosuch0", "-c", "1", check=False)
    assert p.returncode == 1 and "no port" in p.stderr.decode(), p.stderr

    # A capture that sees nothing ends at its duration, with a file tshark reads (no frames).
    quiet = tmp_path / "quiet.pcapng"
    started = time.monotonic()
    p = nvo_capture(lab, "h1", "--underlay", "--duration", "2", "-w", quiet, "udp port 9")
    assert 1.5 < time.monotonic() - started < 10
    assert b"0 frames captured, 0 dropped by the kernel, 0 dropped by nvod" in p.stderr, p.stderr
    assert tshark_fields(quiet, "frame.number") == []

    # At most 4 captures at once: the fifth is refused with 409, and nvod says why.
    idle = capture_sockets(lab, "h1")
    running = [start_capture(lab, "h1", "--underlay", "--duration", "60", "-w", tmp_path / f"c{i}.pcapng")
               for i in range(4)]
    try:
        p = nvo_capture(lab, "h1", "--underlay", "-c", "1", check=False)
        assert p.returncode == 1, p
        assert "4 captures are running already" in p.stderr.decode() and "HTTP 409" in p.stderr.decode(), p.stderr
    finally:
        for proc in running:
            proc.kill()
            proc.wait(timeout=10)
    # A client that goes away ends its capture: nvod closes the taps.
    wait_for(lambda: capture_sockets(lab, "h1") == idle, timeout=5, what="capture sockets closed")
    p = nvo_capture(lab, "h1", "--underlay", "--duration", "1", check=False)
    assert p.returncode == 0, p.stderr

    # nvod still answers and forwards.
    assert lab.nvo("h1", "node")["locator"]
    lab.ping("red1", "10.0.0.2", count=2)


def test_nvo_capture_slow_client_drops_are_counted(lab_factory, tmp_path):
    """A client that does not read while a flood passes: nvod drops frames rather than wait,
    counts them, and the stream stays a valid capture whose frame count matches the line
    nvo capture prints."""
    lab = lab_factory(CAP_TOPOLOGY)
    lab.ping("red1", "10.0.0.2", count=2)
    # stdout is a pipe nobody reads until the flood is over.
    proc = start_capture(lab, "h1", "--network", "100", "--duration", "8", "icmp")
    try:
        # 24000 frames: well over the 4096 queued plus what the pipe and socket buffers hold.
        lab.exec("red1", "ping", "-f", "-c", "12000", "-w", "40", "-s", "200", "10.0.0.2", timeout=60, check=False)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err.decode()
    m = re.search(rb"(\d+) frames captured, (\d+) dropped by the kernel, (\d+) dropped by nvod", err)
    assert m, err.decode()
    print(err.decode().strip())
    captured, _kernel, slow = map(int, m.groups())
    assert slow > 0, err.decode()
    assert 4096 <= captured < 24000, err.decode()
    pcap = tmp_path / "slow.pcapng"
    pcap.write_bytes(proc.head + out)
    assert len(tshark_fields(pcap, "frame.number")) == captured
    # nvod forwards on.
    lab.ping("red1", "10.0.0.2", count=2)


TWO_PROFILES = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, ipv6: "fd00:100::/64", mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks:
  - {vni: 100, encap: geneve}
  - {vni: 200, encap: nvgre}
containers:
  - {name: red1, host: h1, vni: 100, ip: 10.0.1.1/24}
  - {name: red2, host: h2, vni: 100, ip: 10.0.1.2/24}
  - {name: blue1, host: h1, vni: 200, ip: 10.0.2.1/24}
  - {name: blue2, host: h2, vni: 200, ip: 10.0.2.2/24}
"""


def test_nvo_capture_network_picks_its_vni_and_profile(lab_factory, tmp_path):
    """Two networks on two other profiles (Geneve over UDP, NVGRE over IP protocol 47): a
    capture of one shows its own inner frames both ways, decapsulated with its profile, and
    none of the other network's, though those cross the same underlay first."""
    lab = lab_factory(TWO_PROFILES)
    lab.ping("red1", "10.0.1.2", count=2)
    lab.ping("blue1", "10.0.2.2", count=2)
    for vni, first, second, prefix in ((200, ("red1", "10.0.1.2"), ("blue1", "10.0.2.2"), "10.0.2."),
                                       (100, ("blue1", "10.0.2.2"), ("red1", "10.0.1.2"), "10.0.1.")):
        pcap = tmp_path / f"net{vni}.pcapng"
        cap = start_capture(lab, "h1", "--network", vni, "-c", "6", "-w", pcap, "icmp")
        lab.ping(*first, count=3)   # the other network's traffic: not this capture's
        lab.ping(*second, count=3)
        _, err = cap.communicate(timeout=20)
        assert cap.returncode == 0, err.decode()
        rows = tshark_fields(pcap, "ip.src", "ip.dst", "icmp.type", "frame.interface_name")
        assert len(rows) == 6, rows
        assert all(r[0].startswith(prefix) and r[1].startswith(prefix) for r in rows), (vni, rows)
        assert sorted(r[2] for r in rows) == ["0", "0", "0", "8", "8", "8"], rows
        # Replies came decapsulated from the underlay, requests from the local port.
        assert {r[3] for r in rows if r[2] == "0"} == {"eth0"}, rows
        assert len({r[3] for r in rows if r[2] == "8"} - {"eth0"}) == 1, rows
