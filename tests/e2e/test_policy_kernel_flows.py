"""A flow the eBPF datapath's programs track, whose packets reach nvod's socket instead (issue 18,
docs/policy.md "On the eBPF datapath"): bulk TCP from a userspace-datapath nvod arrives as UDP-GSO
batches of several datagrams, which the programs leave to the stack. nvod's pipeline misses them
in its own connection table, asks the programs' `pol_flows`, and passes them as tracked; decided
by the rules again, they would be denied (web is a selected group, db → web TCP is allowed by no
rule).

      web1 (10.0.0.1, app=web)                  db2 (10.0.0.2, app=db)
       | iperf3 -R client                        | iperf3 server: the bulk goes db2 → web1
   [ h1: nvod, datapath: ebpf ]             [ h2: nvod, datapath: userspace ]
        \\ eth0 10.100.0.1                      / eth0 10.100.0.2 (UDP GSO sends)
         +---------------- ul: bridge --------+         VNI 100, plain vxlan

Both hosts pin their datapath, so the test runs once (skipped when NVO_LAB_DATAPATH=userspace).
"""

import json
import os

import pytest

from conftest import run, wait_for
from test_policy import connects, start_server

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts:
  - {name: h1, nvod: {datapath: ebpf}}
  - {name: h2, nvod: {datapath: userspace}}
networks: [{vni: 100, encap: vxlan}]
containers:
  - {name: web1, host: h1, vni: 100, ip: 10.0.0.1/24, labels: {app: web}}
  - {name: db2, host: h2, vni: 100, ip: 10.0.0.2/24, labels: {app: db}}
"""

# web -> db TCP 5201 (iperf3); db -> web UDP 9 makes web a selected group too.
POLICY = """
network: 100
groups:
  - {name: web, id: 10, match: {app: web}}
  - {name: db, id: 20, match: {app: db}}
rules:
  - {name: web-db, from: web, to: db, proto: tcp, ports: [5201, 5432], action: allow}
  - {name: db-web, from: db, to: web, proto: udp, ports: [9], action: allow}
"""

pytestmark = pytest.mark.skipif(
    os.environ.get("NVO_LAB_DATAPATH") == "userspace",
    reason="both hosts pin their datapath (ebpf and userspace): the test runs once, with ebpf")


def test_bulk_replies_nvod_meets_pass_as_the_kernel_tracked_them(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    assert lab.nvo("h1", "node")["datapath"] == "ebpf"
    assert lab.nvo("h2", "node")["datapath"] == "userspace"
    start_server(lab, "db2")
    wait_for(lambda: connects(lab, "web1", "10.0.0.2", 5432), timeout=10, what="db2's server")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    for h in ("h1", "h2"):
        lab.nvo(h, "policy", "apply", str(policy))
        # Plain vxlan carries no group: the controller labels the remote addresses.
        lab.nvo(h, "endpoint", "label", "10.0.0.1", "--vni", "100", "app=web")
        lab.nvo(h, "endpoint", "label", "10.0.0.2", "--vni", "100", "app=db")
    assert lab.nvo("h1", "policy", "show", "100")["datapath"] == "kernel"
    assert connects(lab, "web1", "10.0.0.2", 5432)
    assert not connects(lab, "db2", "10.0.0.1", 5432), "db -> web TCP is denied"
    denied = lab.counters("h1")["drops"].get("policy_denied", 0)

    lab.exec("db2", "iperf3", "-s", "-1", "-D", "--logfile", "/dev/null")
    wait_for(lambda: ":5201" in lab.exec("db2", "ss", "-ltn", check=False).stdout,
             what="iperf3 listening on db2")
    out = run("ip", "netns", "exec", lab.ns("web1"), "iperf3", "-c", "10.0.0.2", "-R", "-t", "2",
              "-J", "--connect-timeout", "3000", timeout=30)
    bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
    assert bps > 50e6, f"db2 -> web1 bulk (replies of web1's flow) moved only {bps} bit/s"
    drops = lab.counters("h1")["drops"].get("policy_denied", 0)
    assert drops == denied, f"h1 denied {drops - denied} packets of a tracked flow"
    view = lab.nvo("h1", "policy", "show", "100")
    assert view["verdicts"]["tracked"] >= 100, view
