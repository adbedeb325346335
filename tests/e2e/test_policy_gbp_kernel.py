"""Identity policy against the Linux kernel's own VXLAN-GBP (issue 18): the kernel host sends
with the group in its skb mark (nftables), nvod allows group 100 and denies group 200 to db on
TCP 5432; the kernel host sees nvod's group IDs (db is group 20) in its skb mark, counted by
nftables; tshark decodes the group IDs on the wire.

      db1 (10.0.0.2, app=db, group 20)
        |
     +-----------+                  +------------------------------------------+
     | h1: nvod  |                  | k1: vx0 = kernel vxlan id 100 gbp,        |
     | vni 100   |                  |     10.0.0.9/24 on it; nftables sets the  |
     | vxlan-gbp |                  |     mark (group) on output, counts it on  |
     +-----+-----+                  |     input                                 |
           | eth0 10.100.0.1        +---------------------+--------------------+
           +------------------ ul: bridge ----------------+ eth0 10.100.0.2

The kernel sends ARP without a group (no G bit), which a vxlan-gbp network does not take: both
ends get static neighbour entries. Runs on the datapath NVO_LAB_DATAPATH selects.
"""

import json
import subprocess

from test_policy import connects, start_server
from conftest import run, wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: h1}, {name: k1, kind: kernel}]
networks: [{vni: 100, encap: vxlan-gbp, params: {group: 1}, flood: []}]
containers: [{name: db1, host: h1, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}]
"""

POLICY = """
network: 100
groups:
  - {name: db, id: 20, match: {app: db}}
  - {name: kernel-ok, id: 100, match: {role: kernel-ok}}
  - {name: kernel-bad, id: 200, match: {role: kernel-bad}}
rules:
  - {name: ok-db, from: kernel-ok, to: db, proto: tcp, ports: [5432], action: allow}
"""

K1_MAC = "02:00:00:00:09:09"


def nft(lab, script):
    p = subprocess.run(["ip", "netns", "exec", lab.ns("k1"), "nft", "-f", "-"], input=script, text=True,
                       capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr


def set_group(lab, group):
    nft(lab, f"""
flush chain inet g post
table inet g {{
  chain post {{
    oifname "vx0" meta mark set {group}
  }}
}}
""")


def test_kernel_gbp_groups_meet_nvods_policy(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    lab.nvo("h1", "flood", "add", "100", "10.100.0.2")
    k1 = ("ip", "netns", "exec", lab.ns("k1"))
    for cmd in ("ip link add vx0 type vxlan id 100 dstport 4789 local 10.100.0.2 remote 10.100.0.1 gbp",
                f"ip link set vx0 address {K1_MAC}", "ip addr add 10.0.0.9/24 dev vx0", "ip link set vx0 up",
                f"ip neigh replace 10.0.0.2 lladdr {lab.mac('db1')} dev vx0 nud permanent"):
        run(*k1, *cmd.split())
    lab.exec("db1", "ip", "neigh", "replace", "10.0.0.9", "lladdr", K1_MAC, "dev", "eth0", "nud", "permanent")
    nft(lab, """
table inet g {
  chain post { type filter hook postrouting priority mangle; }
  chain pre {
    type filter hook prerouting priority mangle;
    iifname "vx0" meta mark and 0xffff == 20 counter
  }
}
""")
    set_group(lab, 100)
    start_server(lab, "db1")
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY)
    lab.nvo("h1", "policy", "apply", str(policy))

    pcap = tmp_path / "gbp.pcap"
    cap = lab.capture("h1", pcap)
    try:
        ok = wait_for(lambda: connects(lab, "k1", "10.0.0.2", 5432), timeout=10, what="k1 (group 100) -> db1:5432")
    finally:
        cap.terminate()
        cap.wait(timeout=10)
    assert ok
    assert not connects(lab, "k1", "10.0.0.2", 5433)
    set_group(lab, 200)
    assert not connects(lab, "k1", "10.0.0.2", 5432)

    view = lab.nvo("h1", "policy", "show", "100")
    # On the eBPF datapath the programs decided (the GBP header read in nvo_underlay).
    want = "kernel" if lab.nvo("h1", "node")["datapath"] == "ebpf" else "nvod"
    assert view["datapath"] == want, view
    assert next(r for r in view["rules"] if r["name"] == "ok-db")["packets"] >= 1, view
    assert view["verdicts"]["default_denied"] >= 2, view
    # The kernel saw db's group (20) in the mark of what nvod sent it.
    rules = json.loads(run(*k1, "nft", "-j", "list", "chain", "inet", "g", "pre").stdout)
    counted = [e["counter"]["packets"] for item in rules["nftables"] if "rule" in item
               for e in item["rule"]["expr"] if "counter" in e]
    assert counted and counted[0] >= 2, rules
    # tshark reads both groups in the VXLAN-GBP headers.
    fields = run("tshark", "-r", pcap, "-T", "fields", "-e", "vxlan.gbp", "-Y", "vxlan.flag_g == 1").stdout.split()
    assert {"100", "20"} <= set(fields), fields
