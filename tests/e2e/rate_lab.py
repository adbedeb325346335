"""Shared by the rate-limit tests (test_qos.py: QoS policers, test_meter.py: flow-table meters):
the measured TCP rate c1 -> c2, c1's port on h1, and the check that the lab runs the datapath the
run asked for."""

import json
import os

from conftest import wait_for


def iperf(lab, seconds=5, streams=1):
    """Received bit/s of STREAMS TCP streams c1 → c2, together."""
    lab.exec("c2", "iperf3", "-s", "-D", "-1")
    wait_for(lambda: lab.exec("c2", "ss", "-ltn", check=False).stdout.count(":5201") > 0,
             what="iperf3 listening")
    out = lab.exec("c1", "iperf3", "-c", "10.0.0.2", "-t", str(seconds), "-O", "1", "-P",
                   str(streams), "-J", timeout=60).stdout
    return json.loads(out)["end"]["sum_received"]["bits_per_second"]


def c1_port(lab):
    """The name of c1's port (network 100) on h1."""
    (port,) = [p["name"] for p in lab.nvo("h1", "port", "list") if p["vni"] == 100]
    return port


def assert_datapath(lab):
    """h1 runs the datapath NVO_LAB_DATAPATH asks for (if it asks)."""
    wanted = os.environ.get("NVO_LAB_DATAPATH")
    if wanted:
        assert lab.nvo("h1", "node")["datapath"] == wanted
