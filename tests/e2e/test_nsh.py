"""An NSH service path across three hosts: the lookup key is SPI/SI, SI drops by one per hop.

   ca (10.50.0.1)                                           cc (10.50.0.3)
      |                                                         |
  [ ha: nvod ] --SPI 10 SI 255--> [ hb: nvod ] --SPI 10 SI 254--> [ hc: nvod ]
       ^                           relays, never                   |
       +------------------------ SPI 20 SI 255 --------------------+
                                   decapsulates

 profile vxlan-gpe-nsh (UDP 4790, GPE next protocol NSH, NSH MD type 2, Ethernet inside)
 ha: network 500 starts SPI 10 (params spi/si), floods to hb; key 00001 4ff (SPI 20, SI 255) → local 500
 hb: key 00000a ff (SPI 10, SI 255) → forward to hc
 hc: network 500 starts SPI 20, floods to ha;   key 00000a fe (SPI 10, SI 254) → local 500
 Learning is off: every frame follows the path (a learned entry would point at hb, the last
 hop, which has no key for traffic coming back). Packets arrive from the path's previous hop
 (hb's relay at hc, hc itself at ha), which is in neither network's flood list: the networks
 take tunnel packets from any remote (accept_remotes any).
"""

import signal
import subprocess

from conftest import api, wait_for

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: ha}, {name: hb}, {name: hc}]
networks:
  - {vni: 500, encap: vxlan-gpe-nsh, learning: false, flood: [hb], params: {spi: 10, si: 255},
     accept_remotes: any}
containers:
  - {name: ca, host: ha, vni: 500, ip: 10.50.0.1/24}
  - {name: cc, host: hc, vni: 500, ip: 10.50.0.3/24}
"""

ADDR = {"ha": "10.100.0.1", "hb": "10.100.0.2", "hc": "10.100.0.3"}


def test_service_path_across_three_hosts(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    # hc's network starts the way back, SPI 20: re-create it with its own params.
    port = next(p["name"] for p in api(lab, "hc", "GET", "/v1/ports") if p["vni"] == 500)
    api(lab, "hc", "DELETE", f"/v1/ports/{port}")
    api(lab, "hc", "DELETE", "/v1/networks/500")
    net = api(lab, "hc", "POST", "/v1/networks", {
        "vni": 500, "encap": "vxlan-gpe-nsh", "learning": False, "flood": [ADDR["ha"]],
        "params": {"spi": 20, "si": 255}, "accept_remotes": "any"})
    assert net["encap"] == "vxlan-gpe-nsh" and net["params"] == {"spi": 20, "si": 255}
    api(lab, "hc", "POST", "/v1/ports", {"name": port, "vni": 500})
    api(lab, "ha", "POST", "/v1/profiles/vxlan-gpe-nsh/keys", {"key": "000014ff", "local": 500})
    api(lab, "hb", "POST", "/v1/profiles/vxlan-gpe-nsh/keys", {"key": "00000aff", "forward": ADDR["hc"]})
    api(lab, "hc", "POST", "/v1/profiles/vxlan-gpe-nsh/keys", {"key": "00000afe", "local": 500})
    assert api(lab, "hb", "GET", "/v1/profiles/vxlan-gpe-nsh/keys") == [
        {"key": "00000aff", "forward": ADDR["hc"]}]

    pcap = tmp_path / "hb.pcap"
    cap = lab.capture("hb", pcap, "udp port 4790")
    try:
        wait_for(lambda: lab.ping("ca", "10.50.0.3", count=1, check=False).returncode == 0,
                 timeout=15, what="ping along the service path")
        lab.ping("ca", "10.50.0.3", count=5)
    finally:
        cap.send_signal(signal.SIGTERM)
        cap.wait(timeout=20)

    hb = lab.counters("hb")
    assert hb["underlay"]["relayed"] >= 6, hb["underlay"]
    # hb relays without decapsulating: nothing reached a network of its own.
    assert all(c.get("rx_underlay_frames", 0) == 0 for c in hb["networks"].values()), hb["networks"]
    assert hb["drops"]["hop_limit"] == 0

    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "ip.src", "-e", "ip.dst",
                          "-e", "vxlan.vni", "-e", "nsh.spi", "-e", "nsh.si", "-e", "icmp.type"],
                         capture_output=True, text=True, check=True).stdout
    # ip.src and ip.dst list the outer address first, then the inner one.
    rows = [[f.split(",")[0] if i < 2 else f for i, f in enumerate(l.split("\t"))]
            for l in out.splitlines() if l.strip()]
    into_hb = [r for r in rows if r[0] == ADDR["ha"] and r[1] == ADDR["hb"]]
    out_of_hb = [r for r in rows if r[0] == ADDR["hb"] and r[1] == ADDR["hc"]]
    assert into_hb and all((r[3], r[4]) == ("10", "255") for r in into_hb), into_hb
    assert out_of_hb and all((r[3], r[4]) == ("10", "254") for r in out_of_hb), out_of_hb
    assert any("8" in r[5].split(",") for r in out_of_hb), "no echo request relayed"
    assert all(r[2] == "500" for r in rows), rows
    # The way back does not pass hb.
    assert not [r for r in rows if r[0] == ADDR["hc"]], "hc's traffic should go straight to ha"


def test_si_running_out_is_dropped_and_counted(lab_factory):
    lab = lab_factory(TOPOLOGY)
    # A path that starts with SI 1: hb cannot relay it (it would leave with SI 0).
    port = next(p["name"] for p in api(lab, "ha", "GET", "/v1/ports") if p["vni"] == 500)
    api(lab, "ha", "DELETE", f"/v1/ports/{port}")
    api(lab, "ha", "DELETE", "/v1/networks/500")
    api(lab, "ha", "POST", "/v1/networks", {
        "vni": 500, "encap": "vxlan-gpe-nsh", "learning": False, "flood": [ADDR["hb"]],
        "params": {"spi": 10, "si": 1}})
    api(lab, "ha", "POST", "/v1/ports", {"name": port, "vni": 500})
    api(lab, "hb", "POST", "/v1/profiles/vxlan-gpe-nsh/keys", {"key": "00000a01", "forward": ADDR["hc"]})
    lab.ping("ca", "10.50.0.3", count=3, check=False)
    hb = wait_for(lambda: (c := lab.counters("hb"))["drops"]["hop_limit"] >= 3 and c,
                  what="hop_limit drops on hb")
    assert hb["underlay"]["relayed"] == 0
    assert lab.counters("hc")["underlay"]["rx_packets"] == 0
