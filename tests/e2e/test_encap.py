"""Every encapsulation profile carries tenant traffic end to end, and tshark decodes it.

        a101 .. a108               b101 .. b108        one network per profile, a container of it
            |                          |               on each host; 10.<vni-100>.0.1 and .2
      [ h1: nvod ]               [ h2: nvod ]
            \\ eth0                   / eth0          tcpdump on h1's eth0, tshark decodes
             +------ ul: bridge -----+                 underlay 10.100.0.0/24

 101 vxlan   102 vxlan-gbp (group 4660)   103 vxlan-gpe   104 geneve   105 nvgre
 106 overlay 107 stt   108 "ntun": a UDP header nvo does not ship, defined in the topology
"""

import json
import signal
import subprocess

import pytest

from conftest import ROOT, wait_for

# A header nvo does not know: 8 bytes on UDP 7777, magic "NV", a version byte, a flags byte,
# then the VNI in three bytes and a byte of entropy.
NTUN = """
  - name: ntun
    udp_port: 7777
    template: "4e56 0100 0000 0000"
    vni: {offset: 4, len: 3}
    entropy: {offset: 7, len: 1}
    matches: [{offset: 0, mask: "ffff ff", value: "4e56 01"}]
    payload: ethernet
"""

PROFILES = {
    101: "vxlan",
    102: "vxlan-gbp",
    103: "vxlan-gpe",
    104: "geneve",
    105: "nvgre",
    106: "overlay",
    107: "stt",
    108: "ntun",
}


def topology():
    nets, ctrs = [], []
    for vni, encap in PROFILES.items():
        params = ", params: {group: 4660}" if encap == "vxlan-gbp" else ""
        nets.append(f"  - {{vni: {vni}, encap: {encap}{params}}}")
        n = vni - 100
        ctrs.append(f"  - {{name: a{vni}, host: h1, vni: {vni}, ip: 10.{n}.0.1/24}}")
        ctrs.append(f"  - {{name: b{vni}, host: h2, vni: {vni}, ip: 10.{n}.0.2/24}}")
    return (
        "underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}\n"
        "hosts: [{name: h1}, {name: h2}]\n"
        "profiles:" + NTUN + "networks:\n" + "\n".join(nets) + "\ncontainers:\n" + "\n".join(ctrs) + "\n"
    )


def tshark(pcap, *fields, extra=()):
    args = ["tshark", "-r", str(pcap), *extra, "-T", "fields"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    # ip.src lists the outer address first, then the inner one: the outer first, the inner
    # (if any) last.
    return [[r[0].split(",")[0], *r[1:], (r[0].split(",") + [""])[1]] for r in rows]


def ours(rows, n):
    """The rows whose inner packet is this network's (the other networks' neighbour
    discovery and the like share the capture)."""
    return [r for r in rows if r[-1].startswith(f"10.{n}.0.")]


@pytest.fixture(scope="module")
def encap_lab(tmp_path_factory):
    """One lab for the whole module: building it takes a while."""
    import os
    from conftest import NVO, BIN, RUN, Lab, kill_strays, run

    name = f"e{os.getpid() % 1000}"
    path = tmp_path_factory.mktemp("encap") / f"{name}.yaml"
    path.write_text(f"name: {name}\n" + topology())
    try:
        run(NVO, "lab", "up", path, "--nvod", BIN / "nvod", timeout=240)
        yield Lab(name, path)
    finally:
        kill_strays(name)
        run(NVO, "lab", "down", name, check=False, timeout=60)
        left = [l for l in run("ip", "netns", "list").stdout.split() if l.startswith(f"nvo-{name}-")]
        assert not left, f"namespaces left behind: {left}"


@pytest.mark.parametrize("vni", sorted(PROFILES))
def test_profile_ping_and_tshark(encap_lab, vni, tmp_path):
    lab, encap, n = encap_lab, PROFILES[vni], vni - 100
    nets = {net["vni"]: net for net in lab.nvo("h1", "network", "list")}
    assert nets[vni]["encap"] == encap
    pcap = tmp_path / "ul.pcap"
    cap = lab.capture("h1", pcap, "ip")
    try:
        lab.ping(f"a{vni}", f"10.{n}.0.2", count=4)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)
    h1 = "10.100.0.1"
    node_h1 = lab.nvo("h1", "node")["node_id"]
    if encap in ("vxlan", "vxlan-gbp", "vxlan-gpe"):
        port = 4790 if encap == "vxlan-gpe" else 4789
        decode = () if encap == "vxlan-gpe" else ("-d", f"udp.port=={port},vxlan")
        rows = ours(tshark(pcap, "ip.src", "vxlan.vni", "vxlan.flag_g", "vxlan.gbp", "vxlan.next_proto", "icmp.type",
                           extra=("-Y", f"udp.dstport == {port}", *decode)), n)
        assert rows and all(r[1] == str(vni) for r in rows), rows
        mine = [r for r in rows if r[0] == h1]
        assert any("8" in r[5].split(",") for r in mine), "no echo request inside h1's packets"
        if encap == "vxlan-gbp":
            assert all(r[2] in ("1", "True") and r[3] == "4660" for r in mine), mine
        if encap == "vxlan-gpe":
            assert all(r[4] == "3" for r in mine), mine  # next protocol Ethernet
    elif encap == "geneve":
        rows = ours(tshark(pcap, "ip.src", "geneve.vni", "icmp.type", extra=("-Y", "geneve")), n)
        assert rows and all(int(r[1], 0) == vni for r in rows), rows
    elif encap == "nvgre":
        rows = ours(tshark(pcap, "ip.src", "gre.key", "gre.proto", "icmp.type", extra=("-Y", "gre")), n)
        assert rows, "no GRE packet captured"
        assert all(int(r[1], 0) >> 8 == vni and int(r[2], 0) == 0x6558 for r in rows), rows
    elif encap == "overlay":
        lua = ROOT / "dissectors" / "nvo_overlay.lua"
        rows = ours(tshark(pcap, "ip.src", "nvo.vni", "nvo.src_node", "icmp.type",
                           extra=("-X", f"lua_script:{lua}", "-Y", "nvo")), n)
        assert rows and all(r[1] == str(vni) for r in rows), rows
        assert all(r[2] == str(node_h1) for r in rows if r[0] == h1), rows
    elif encap == "stt":
        rows = ours(tshark(pcap, "ip.src", "stt.context_id", "icmp.type",
                           extra=("-o", "ip.try_heuristic_first:TRUE", "-Y", "stt")), n)
        assert rows and all(int(r[1], 0) == vni for r in rows), rows
    else:
        # Only network 108 uses UDP 7777; tshark does not know the header, so no inner fields.
        rows = tshark(pcap, "ip.src", "udp.payload", extra=("-Y", "udp.dstport == 7777"))
        assert rows, "no packet of the user-defined profile captured"
        for r in rows:
            payload = bytes.fromhex(r[1].replace(":", ""))
            assert payload[:3] == b"NV\x01" and int.from_bytes(payload[4:7], "big") == vni, r


@pytest.mark.parametrize("vni", sorted(PROFILES))
def test_profile_iperf3(encap_lab, vni):
    lab, n = encap_lab, vni - 100
    server = subprocess.Popen(["ip", "netns", "exec", lab.ns(f"b{vni}"), "iperf3", "-s", "-1", "-p", "5201"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def client():
            # iperf3 -J exits 0 even when it cannot connect; the JSON says whether it ran.
            p = lab.exec(f"a{vni}", "iperf3", "-c", f"10.{n}.0.2", "-p", "5201", "-t", "2", "-J", check=False, timeout=30)
            try:
                return json.loads(p.stdout)["end"]["sum_received"]
            except (ValueError, KeyError):
                return None
        received = wait_for(client, timeout=10, what=f"iperf3 over {PROFILES[vni]}")
        bps = received["bits_per_second"]
        assert bps > 1e6, f"{PROFILES[vni]}: {bps} bit/s"
    finally:
        server.kill()
        server.wait()
    drops = lab.counters("h2")["drops"]
    for reason in ("malformed_tunnel", "profile_mismatch", "unknown_vni"):
        assert drops.get(reason, 0) == 0, (reason, drops)
