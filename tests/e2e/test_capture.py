"""tshark, on the underlay, decodes what nvod sends as VXLAN with the right VNI.

      red1                 red2
        |                    |
   [ h1: nvod ]         [ h2: nvod ]      tcpdump captures on h1's eth0, tshark decodes
         \\ eth0             / eth0
          +-- ul: bridge ---+              VNI 4711, underlay 10.100.0.0/24
"""

import signal
import subprocess

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
