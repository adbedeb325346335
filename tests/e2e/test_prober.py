"""The RON-style prober (`nvo prober`, a control plane on the public API) moves a destination
onto a one-relay path when the direct underlay path degrades, and back when it recovers.

   [ ha: nvod + nvo prober ] ---- direct: 70 % loss (nftables random drop on hc) ---- [ hc ]
                \\                                                                  /
                 +------------------------- [ hb ] (relay) -----------------------+

 Probes are overlay packets nvod sends and answers (POST /v1/overlay/probe); the prober installs
 `route ethernet hc → [hb]` (or removes it) through the API, with hysteresis.
"""

import json
import subprocess

from conftest import NVO, api, wait_for
from test_overlay import UL

TOPOLOGY = """
underlay: {family: ipv4, ipv4: 10.100.0.0/24, mtu: 1500}
hosts: [{name: ha}, {name: hb}, {name: hc}]
networks: []
containers: []
"""

LOSSY = ("add table inet lossy\n"
         "add chain inet lossy in { type filter hook input priority 0; }\n"
         "add rule inet lossy in ip saddr 10.100.0.1 numgen random mod 100 < 70 counter drop\n")


def test_probe_api_measures_direct_and_relay_paths(lab_factory):
    lab = lab_factory(TOPOLOGY)
    ids = {h: api(lab, h, "GET", "/v1/overlay")["node_id"] for h in ("ha", "hb", "hc")}
    for h in ids:
        for other, node in ids.items():
            api(lab, h, "PUT", f"/v1/overlay/nodes/{node}", {"locators": [{"addr": UL[other]}]})
    direct = api(lab, "ha", "POST", "/v1/overlay/probe", {"dst": ids["hc"], "count": 20})
    relay = api(lab, "ha", "POST", "/v1/overlay/probe", {"dst": ids["hc"], "via": ids["hb"], "count": 20})
    assert (direct["sent"], direct["received"], direct["loss"]) == (20, 20, 0.0), direct
    assert relay["received"] == 20 and relay["rtt_us"]["mean"] > 0, relay
    assert lab.counters("hb")["overlay"]["relayed"] >= 20
    # Bad requests are refused with a reason.
    for body, word in (({"dst": 0}, "node 0"), ({"dst": ids["hc"], "count": 1000}, "count"),
                       ({"dst": ids["hc"], "via": 77}, "77")):
        answer = api(lab, "ha", "POST", "/v1/overlay/probe", body, expect=400)
        assert word in answer["error"], (body, answer)


def test_prober_moves_to_a_relay_and_back(lab_factory, tmp_path):
    lab = lab_factory(TOPOLOGY)
    ids = {h: api(lab, h, "GET", "/v1/overlay")["node_id"] for h in ("ha", "hb", "hc")}
    for h in ids:
        for other, node in ids.items():
            api(lab, h, "PUT", f"/v1/overlay/nodes/{node}", {"locators": [{"addr": UL[other]}]})
    log = open(tmp_path / "prober.log", "w")
    prober = subprocess.Popen([NVO, "--socket", str(lab.socket("ha")), "prober", "--interval", "0.3",
                               "--timeout-ms", "150", "--count", "10"], stdout=log, stderr=subprocess.STDOUT)
    route = f"/v1/overlay/routes/ethernet"

    def via():
        routes = api(lab, "ha", "GET", route)
        hops = [r["next_hops"] for r in routes if r["dst"] == ids["hc"]]
        return hops[0] if hops else None
    try:
        # Healthy: direct stays direct.
        import time
        time.sleep(2)
        assert via() is None, "the prober left the direct path while it was fine"
        subprocess.run(["ip", "netns", "exec", lab.ns("hc"), "nft", "-f", "-"], input=LOSSY, text=True, check=True)
        wait_for(lambda: via() == [ids["hb"]], timeout=30, what="the prober to route hc via hb")
        subprocess.run(["ip", "netns", "exec", lab.ns("hc"), "nft", "delete", "table", "inet", "lossy"], check=True)
        wait_for(lambda: via() is None, timeout=30, what="the prober to go back to direct")
    finally:
        prober.terminate()
        prober.wait(timeout=10)
        log.close()
    text = (tmp_path / "prober.log").read_text()
    assert "replaces" in text, text
