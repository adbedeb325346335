"""Virtual ports per MAC (VM-VP): three "VMs" behind one hypervisor's Linux bridge, whose uplink
is a shared port of h1's nvod. VM1 and VM2 belong to VNI 100 and VM3 to VNI 200 by their MACs;
each reaches the container of its own network behind h2 and no other; a fourth VM whose MAC no
virtual port names is dropped and counted (unknown_vport) — or, with a default network on the
shared port, lands in that network until a virtual port names it. A VM that tags its own frames
(VLAN 20) has a tagged virtual port: its tag is popped towards the network and pushed back.

    vm1 10.0.0.11   vm2 10.0.0.12   vm3 10.0.0.13   vm4 10.0.0.14 (no virtual port)
      | eth0          | eth0          | eth0          | eth0
    [ hv: Linux bridge br0 (plain learning bridge: local frames stay local) ]
      | up0
      | veth
    hv0  (nvo port add hv0 --shared; nvo vport add hv0 MAC --vni 100|200)
    [ h1: nvod ]                         red1 10.0.0.1 (VNI 100)   blue1 10.0.0.2 (VNI 200)
      | eth0                            [ h2: nvod ]
      +-------------------- ul: bridge, 10.100.0.0/24 ---------+

Every address is in one subnet, so a frame that leaked into the other network would be
answered. The bridge switches between VMs locally (as a hypervisor's does); what nvod decides
is what crosses the VTEP: a VM's frames enter only its own network, a network's frames leave
hv0 once however many of its VMs live behind it, and nothing a VM sent goes back out of hv0.
The hypervisor and VM namespaces are the test's own (vpo-<pid>-…) and are deleted at the end
whatever happens. The datapath is the lab's (NVO_LAB_DATAPATH): on the eBPF one, nvod reads
the shared port itself and the kernel punts frames for its virtual ports to nvod.
"""

import os
import signal
import subprocess

import pytest

from conftest import run, wait_for
from hypervisor import Hypervisor, reachable
from ovs_peer import in_ns

RED, BLUE = 100, 200
RED1_IP, BLUE1_IP = "10.0.0.1", "10.0.0.2"
VMS = {
    1: ("02:00:00:00:01:01", "10.0.0.11"),
    2: ("02:00:00:00:01:02", "10.0.0.12"),
    3: ("02:00:00:00:01:03", "10.0.0.13"),
    4: ("02:00:00:00:01:99", "10.0.0.14"),
}

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: h2}]
networks: [{vni: 100}, {vni: 200}]
containers:
  - {name: red1, host: h2, vni: 100, ip: 10.0.0.1/24}
  - {name: blue1, host: h2, vni: 200, ip: 10.0.0.2/24}
"""


@pytest.fixture
def hypervisor(lab_factory):
    """The lab and the hypervisor with its uplink hv0 in h1's namespace (no nvod port yet)."""
    lab = lab_factory(TOPOLOGY)
    hv = Hypervisor(VMS)
    try:
        hv.start(lab.ns("h1"))
        # The lab floods only between hosts with containers of a network: h1 has none.
        for vni in (RED, BLUE):
            lab.nvo("h2", "flood", "add", str(vni), "10.100.0.1")
        yield lab, hv
    finally:
        hv.close()


def captured_out(lab, dev, bpf, traffic):
    """Runs TRAFFIC while tcpdump records what leaves DEV in h1's namespace (-Q out: what nvod
    sends); returns the capture as text lines."""
    cmd = ["tcpdump", "-i", dev, "-Q", "out", "-e", "-l", "-n", "--immediate-mode", bpf]
    cap = subprocess.Popen(["ip", "netns", "exec", lab.ns("h1"), *cmd],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen = ""
        while "listening on" not in seen:
            line = cap.stderr.readline()
            assert line, f"tcpdump did not start on {dev}: {seen}"
            seen += line
        traffic()
    finally:
        cap.send_signal(signal.SIGTERM)
        out, _ = cap.communicate(timeout=20)
    return [line for line in out.splitlines() if line.strip()]


def seconds(line):
    """The time of day of a tcpdump line (HH:MM:SS.ffffff), in seconds."""
    h, m, sec = line.split()[0].split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def vports(lab):
    return {v["mac"]: v for v in lab.nvo("h1", "vport", "show", "hv0") if v.get("mac")}


def test_vms_reach_their_own_network_only_and_unknown_macs_are_dropped(hypervisor):
    lab, hv = hypervisor
    wanted = os.environ.get("NVO_LAB_DATAPATH")
    if wanted:
        assert lab.nvo("h1", "node")["datapath"] == wanted
    port = lab.nvo("h1", "port", "add", "hv0", "--shared")
    assert port["vni"] == 0 and port["shared"] == {}, port
    for n, vni in ((1, RED), (2, RED), (3, BLUE)):
        vp = lab.nvo("h1", "vport", "add", "hv0", VMS[n][0], "--vni", str(vni))
        assert vp["name"] == f"hv0/{VMS[n][0]}" and vp["vni"] == vni, vp

    reachable(lambda c: hv.ping(1, RED1_IP, count=c), "vm1 → red1 (VNI 100)")
    reachable(lambda c: hv.ping(2, RED1_IP, count=c), "vm2 → red1 (VNI 100)")
    reachable(lambda c: hv.ping(3, BLUE1_IP, count=c), "vm3 → blue1 (VNI 200)")
    assert lab.ping("red1", VMS[2][1], check=False).returncode == 0
    assert lab.ping("blue1", VMS[3][1], check=False).returncode == 0

    # Isolation across the VTEP, both ways (every address is in one subnet: a leak answers).
    assert hv.ping(1, BLUE1_IP, count=2).returncode != 0
    assert hv.ping(3, RED1_IP, count=2).returncode != 0
    assert lab.ping("red1", VMS[3][1], count=2, check=False).returncode != 0
    assert lab.ping("blue1", VMS[1][1], count=2, check=False).returncode != 0
    assert lab.neigh_mac("red1", VMS[3][1]) in (None, "")
    assert lab.neigh_mac("red1", VMS[1][1]) == VMS[1][0]
    assert lab.neigh_mac("blue1", VMS[3][1]) == VMS[3][0]

    # The VMs' MACs are their virtual ports' in their own network only (static: configured).
    red_fdb = {e["mac"]: e for e in lab.fdb("h1", RED)}
    blue_fdb = {e["mac"]: e for e in lab.fdb("h1", BLUE)}
    for n in (1, 2):
        mac = VMS[n][0]
        assert red_fdb[mac]["port"] == f"hv0/{mac}" and red_fdb[mac]["origin"] == "static"
        assert mac not in blue_fdb, blue_fdb
    assert blue_fdb[VMS[3][0]]["port"] == f"hv0/{VMS[3][0]}" and VMS[3][0] not in red_fdb

    # A flood of VNI 100 leaves hv0 once (VM1 and VM2 share the wire), and nothing VM1 sends
    # comes back out of hv0 (the bridge delivered it there already).
    def traffic():
        lab.ping("red1", "10.0.0.77", count=2, check=False)  # ARP requests nobody answers
        hv.ping(1, "10.0.0.78", count=2)
        hv.ping(1, RED1_IP, count=2)

    lines = captured_out(lab, "hv0", "arp or icmp", traffic)
    red1_mac = lab.mac("red1")
    who_has_77 = [ln for ln in lines if "Request who-has 10.0.0.77" in ln]
    assert who_has_77 and all(red1_mac in ln for ln in who_has_77), lines
    # red1 asks about once a second; each request crossed hv0 once, not once per VM of VNI
    # 100 (two copies would leave within a millisecond of each other).
    times = sorted(seconds(ln) for ln in who_has_77)
    assert all(b - a > 0.2 for a, b in zip(times, times[1:])), who_has_77
    assert not [ln for ln in lines if ln.split()[1:2] == [VMS[1][0]] or f"{VMS[1][0]} >" in ln], lines
    assert not [ln for ln in lines if "who-has 10.0.0.78" in ln], lines

    # A MAC no virtual port names: dropped and counted, learned nowhere, reaches nobody.
    before = lab.counters("h1")
    assert hv.ping(4, RED1_IP, count=3).returncode != 0
    after = wait_for(lambda: (lambda c: c if c["drops"]["unknown_vport"] > before["drops"]["unknown_vport"]
                              else None)(lab.counters("h1")), timeout=10, what="unknown_vport drops on h1")
    assert after["drops"]["unknown_vport"] - before["drops"]["unknown_vport"] >= 3, after["drops"]
    assert after["ports"]["hv0"]["drops"] > before["ports"]["hv0"]["drops"], after["ports"]["hv0"]
    for vni in (RED, BLUE):
        assert VMS[4][0] not in {e["mac"] for e in lab.fdb("h1", vni)}
    assert lab.neigh_mac("red1", VMS[4][1]) in (None, "")

    # Each virtual port counts its own traffic, in `vport show` and per port in the counters.
    shown = vports(lab)
    assert set(shown) == {VMS[1][0], VMS[2][0], VMS[3][0]}, shown
    for n in (1, 2, 3):
        vp = shown[VMS[n][0]]
        assert vp["rx_frames"] >= 3 and vp["tx_frames"] >= 1 and vp["rx_bytes"] > 0, vp
    ports = after["ports"]
    assert ports[f"hv0/{VMS[3][0]}"]["rx_frames"] >= 3, ports

    # Deleting VM2's virtual port: its frames are unknown from then on.
    lab.nvo("h1", "vport", "del", "hv0", VMS[2][0])
    assert VMS[2][0] not in vports(lab)
    assert VMS[2][0] not in {e["mac"] for e in lab.fdb("h1", RED)}
    assert hv.ping(2, RED1_IP, count=2).returncode != 0
    # VM1 still works (it kept or took over VNI 100's flood copy).
    lab.exec("red1", "ip", "neigh", "flush", "all")
    reachable(lambda c: lab.ping("red1", VMS[1][1], count=c, check=False), "red1 → vm1 after vm2 left")


def test_a_default_network_takes_unknown_macs_until_a_virtual_port_names_one(hypervisor):
    lab, hv = hypervisor
    port = lab.nvo("h1", "port", "add", "hv0", "--shared", "--default-vni", str(RED))
    assert port["shared"] == {"default_vni": RED}, port
    lab.nvo("h1", "vport", "add", "hv0", VMS[3][0], "--vni", str(BLUE))
    # VM4 (and VM1) have no virtual port: the default network, VNI 100, takes them.
    reachable(lambda c: hv.ping(4, RED1_IP, count=c), "vm4 → red1 through the default network")
    assert hv.ping(4, BLUE1_IP, count=2).returncode != 0
    reachable(lambda c: hv.ping(3, BLUE1_IP, count=c), "vm3 → blue1 (its own virtual port)")
    assert hv.ping(3, RED1_IP, count=2).returncode != 0
    red_fdb = {e["mac"]: e for e in lab.fdb("h1", RED)}
    assert red_fdb[VMS[4][0]]["port"] == "hv0/default" and red_fdb[VMS[4][0]]["origin"] == "learned"
    default = [v for v in lab.nvo("h1", "vport", "show", "hv0") if v.get("mac") is None]
    assert default and default[0]["vni"] == RED and default[0]["rx_frames"] >= 3, default

    # VM4 gets a virtual port in VNI 200: VNI 100 forgets it, VNI 200 has it.
    lab.nvo("h1", "vport", "add", "hv0", VMS[4][0], "--vni", str(BLUE))
    assert VMS[4][0] not in {e["mac"] for e in lab.fdb("h1", RED)}
    for ns in ("red1", "blue1"):
        lab.exec(ns, "ip", "neigh", "flush", "all")
    run(*in_ns(hv.vms[4], "ip", "neigh", "flush", "all"))
    reachable(lambda c: hv.ping(4, BLUE1_IP, count=c), "vm4 → blue1 after its virtual port")
    assert hv.ping(4, RED1_IP, count=2).returncode != 0
    # The shared port goes with its virtual ports; the networks are free to go.
    lab.nvo("h1", "port", "del", "hv0")
    assert lab.nvo("h1", "vport", "show") == []
    assert VMS[3][0] not in {e["mac"] for e in lab.fdb("h1", BLUE)}


# A VM that tags its own frames (VLAN 20): sends a tagged ARP request for blue1 from VM_T_MAC
# and waits for the answer, which must come back tagged VLAN 20 (the kernel moves a received
# tag into PACKET_AUXDATA). Then the same request untagged, which nvod must drop.
TAGGED_VM = r"""
import socket, struct, sys, time
SOL_PACKET, PACKET_AUXDATA = 263, 8
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))
s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
s.settimeout(0.2)
mac = bytes.fromhex(sys.argv[1].replace(":", ""))
arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, mac, socket.inet_aton("10.0.0.23"),
                  bytes(6), socket.inet_aton("10.0.0.2")) + bytes(18)
tag = b"\x81\x00\x00\x14"
if sys.argv[2] == "untagged":
    for _ in range(5):
        s.send(b"\xff" * 6 + mac + b"\x08\x06" + arp)
    sys.exit(0)
deadline = time.time() + 10
while time.time() < deadline:
    s.send(b"\xff" * 6 + mac + tag + b"\x08\x06" + arp)
    end = time.time() + 0.5
    while time.time() < end:
        try:
            data, anc, _, _ = s.recvmsg(2048, 64)
        except socket.timeout:
            break
        if data[:6] != mac or data[12:14] != b"\x08\x06":
            continue
        for level, kind, aux in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA:
                status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", aux[:20])
                print("reply", hex(tpid), tci & 0xfff, socket.inet_ntoa(data[28:32]))
                sys.exit(0)
        print("reply untagged", socket.inet_ntoa(data[28:32]))
        sys.exit(1)
print("no reply")
sys.exit(1)
"""


def test_a_tagged_virtual_port_pops_and_pushes_its_vlan(hypervisor):
    lab, hv = hypervisor
    lab.nvo("h1", "port", "add", "hv0", "--shared")
    vm_t = VMS[3][0]
    lab.nvo("h1", "vport", "add", "hv0", vm_t, "--vni", str(BLUE), "--vlan", "20")
    p = run(*in_ns(hv.vms[3], "/usr/bin/python3", "-c", TAGGED_VM, vm_t, "tagged"),
            check=False, timeout=30)
    assert p.returncode == 0 and "reply 0x8100 20 10.0.0.2" in p.stdout, (p.stdout, p.stderr)
    # In the network the frame arrives untagged: blue1 learned the VM's MAC for its address.
    assert lab.neigh_mac("blue1", "10.0.0.23") == vm_t
    shown = vports(lab)[vm_t]
    assert shown["vlan"] == 20 and shown["rx_frames"] >= 1 and shown["tx_frames"] >= 1, shown
    # The VM's MAC without its VLAN belongs to no one (not even a default network).
    before = lab.counters("h1")["drops"]["unknown_vport"]
    run(*in_ns(hv.vms[3], "/usr/bin/python3", "-c", TAGGED_VM, vm_t, "untagged"), timeout=30)
    wait_for(lambda: lab.counters("h1")["drops"]["unknown_vport"] >= before + 5, timeout=10,
             what="unknown_vport drops for the untagged frames")


def test_a_virtual_port_is_policed_on_its_own(hypervisor):
    """A QoS profile on VM1's virtual port: VM1's flood of pings beyond 1 Mbit/s is dropped
    (qos_policed, counted in the profile and the virtual port); VM2 on the same shared port is
    not policed."""
    lab, hv = hypervisor
    lab.nvo("h1", "port", "add", "hv0", "--shared")
    for n in (1, 2):
        lab.nvo("h1", "vport", "add", "hv0", VMS[n][0], "--vni", str(RED))
    reachable(lambda c: hv.ping(1, RED1_IP, count=c), "vm1 → red1")
    lab.nvo("h1", "qos", "add", "slow", "--rate", "1mbit", "--burst", "4k")
    lab.nvo("h1", "qos", "attach", "hv0", VMS[1][0], "slow")
    before = lab.counters("h1")["drops"]["qos_policed"]
    # 100 pings of 1400 bytes 2 ms apart (they take about 0.6 s: 2 Mbit/s offered) into a
    # bucket of 4 KiB at 1 Mbit/s: about half pass (53 in the runs here).
    flood = run(*in_ns(hv.vms[1], "ping", "-c", 100, "-i", "0.002", "-s", 1400, "-W", "1",
                       RED1_IP), check=False, timeout=60)
    assert "100 packets transmitted" in flood.stdout, flood.stdout
    after = lab.counters("h1")["drops"]["qos_policed"]
    assert after - before >= 20, (before, after)
    (slow,) = lab.nvo("h1", "qos", "show")
    assert slow["attached"] == [f"hv0/{VMS[1][0]}"] and slow["policed_frames"] >= 20, slow
    assert vports(lab)[VMS[1][0]]["drops"] >= 20
    # VM2, same shared port, no profile: every ping of a slower flood answered.
    assert hv.ping(2, RED1_IP, count=20).returncode == 0
    assert vports(lab)[VMS[2][0]]["drops"] == 0
