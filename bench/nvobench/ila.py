"""ILA against VXLAN on the same hosts (issue 18): `bench/run.py --ila` (`make bench-ila`).

One `nvo lab`, two nvo hosts (nvod release build, userspace datapath: the eBPF datapath runs
no network over an IPv6 underlay) on an IPv6 underlay, two networks side by side on the same
nvods and the same underlay:

    c1 (fd20::1) ─┐                                              ┌─ c2 (fd20::2)   VNI 100, VXLAN
                  ├─ h1: nvod ── eth0 ── [ul: br0] ── eth0 ── h2: nvod ─┤
    i1 (fd10::1) ─┘                                              └─ i2 (fd10::2)   VNI 900, ILA

- vxlan6: VXLAN over IPv6 (40 IPv6 + 8 UDP + 8 VXLAN + 14 inner Ethernet = 70 bytes a packet),
  nvod's UDP sockets with GSO/GRO;
- ila: no tunnel header (0 bytes): nvod rewrites the destination and writes the packet to its
  TUN `nvoila0` (virtio-net header, TSO frames whole), the kernel routes it as plain IPv6.

Measured, the two in alternating order per repetition: single-stream TCP (iperf3 -6, first
container → second) with the CPU of the whole machine over the run (CPU seconds per Gbit, as
the other scenarios), and the mean size of what crossed the underlay (h1's eth0 tx bytes per
packet: above the MTU means GSO packets crossing whole). The overhead per packet is read
from the lab: the underlay MTU minus the tenant MTU nvod gave the first container. The report
is ILA ÷ VXLAN for each figure.
"""

import json
import pathlib

from . import measure, stats
from .scenarios import Scenario, SetupFailed, link_mtu
from .sh import run

TOPOLOGY = """\
# Written by bench/run.py --ila (bench/nvobench/ila.py).
name: {name}
underlay: {{family: ipv6, ipv6: "fd00:100::/64", mtu: {mtu}}}
hosts:
  - {{name: h1, kind: nvo, nvod: {{datapath: userspace}}}}
  - {{name: h2, kind: nvo, nvod: {{datapath: userspace}}}}
networks:
  - {{vni: 100, name: vxlan6}}
  - {{vni: 900, name: ila, encap: ila, flood: []}}
containers:
  - {{name: c1, host: h1, vni: 100, ip: 10.0.0.1/24, ipv6: "fd20::1/64"}}
  - {{name: c2, host: h2, vni: 100, ip: 10.0.0.2/24, ipv6: "fd20::2/64"}}
  - {{name: i1, host: h1, vni: 900, ip: 10.9.0.1/24, ipv6: "fd10::1/64"}}
  - {{name: i2, host: h2, vni: 900, ip: 10.9.0.2/24, ipv6: "fd10::2/64"}}
"""
UNDERLAY_MTU = 1500
FIELDS = [("gbps", "TCP throughput, 1 stream", "Gbit/s", "higher"),
          ("cpu_s_per_gbit", "CPU per Gbit (whole machine)", "CPU s/Gbit", "lower"),
          ("overhead", "bytes of overhead per packet", "B", "lower"),
          ("ul_tx_bytes", "underlay, bytes per packet (h1 eth0)", "B", "—"),
          ("retransmits", "retransmits", "", "lower")]


class Side(Scenario):
    """One network of the shared lab, as the measurements see a scenario."""

    lab_name = ""
    client, server = "", ""

    def __init__(self, run_id):
        super().__init__(run_id)
        self.name = f"{run_id}-ila"

    @property
    def client_ns(self):
        return self.ns(self.client)

    @property
    def server_ns(self):
        return self.ns(self.server)

    def up(self, inv, env):
        if self.key == "vxlan6":
            path = pathlib.Path(env["workdir"]) / f"{self.name}.yaml"
            path.write_text(TOPOLOGY.format(name=self.name, mtu=UNDERLAY_MTU))
            inv.lab_up(self.name, path, env["nvod"])
        self.tenant_mtu = link_mtu(self.client_ns, "eth0")
        node = json.loads(run([inv.nvo, "--socket", f"/run/nvo/lab/{self.name}/h1.sock",
                               "-o", "json", "node"]).stdout)
        if node.get("datapath") != "userspace":
            raise SetupFailed(f"h1's nvod runs the {node.get('datapath')} datapath")


class Vxlan6(Side):
    key, client, server, server_ip = "vxlan6", "c1", "c2", "fd20::2"
    title = "VXLAN over IPv6 (nvod, userspace)"
    description = "VNI 100: VXLAN in UDP over the IPv6 underlay, 70 bytes of headers a packet"


class Ila(Side):
    key, client, server, server_ip = "ila", "i1", "i2", "fd10::2"
    title = "ILA (nvod, userspace, TUN nvoila0)"
    description = "VNI 900: the destination rewritten SIR → ILA, no tunnel header"


SCENARIOS = [Vxlan6, Ila]


def _tx(ns):
    link = json.loads(run(["ip", "-n", ns, "-j", "-s", "link", "show", "eth0"]).stdout)[0]
    return link["stats64"]["tx"]["bytes"], link["stats64"]["tx"]["packets"]


def one(sc, seconds):
    """One single-stream iperf3 run with the underlay's tx counters around it."""
    b0, p0 = _tx(sc.ns("h1"))
    sample = measure.tcp(sc, 1, seconds)
    b1, p1 = _tx(sc.ns("h1"))
    sample["ul_tx_bytes"] = (b1 - b0) / (p1 - p0) if p1 > p0 else None
    sample["overhead"] = float(UNDERLAY_MTU - sc.tenant_mtu)
    return sample


def study(scs, cfg, doc, log):
    """`cfg["reps"]` repetitions, the order of the two alternating."""
    for rep in range(cfg["reps"]):
        order = scs if rep % 2 == 0 else list(reversed(scs))
        log(f"ila: repetition {rep + 1}/{cfg['reps']}: {' → '.join(sc.key for sc in order)}")
        for sc in order:
            sample, err = measure.safely(f"{sc.key} tcp1", one, sc, cfg["tcp_seconds"])
            if err:
                doc["problems"].append(err)
                log(f"  {err}")
                continue
            doc["samples"].setdefault(sc.key, []).append(sample)
            log(f"  {sc.key:7} " + ", ".join(
                f"{k}={v:.4g}" for k, v in sample.items() if isinstance(v, float)))


def figures(doc):
    """{scenario: {field: summary}} and {field: ILA ÷ VXLAN}."""
    figs = {k: {f: stats.summarise([s.get(f) for s in ss]) for f, *_ in FIELDS}
            for k, ss in doc["samples"].items()}
    ila, vx = figs.get("ila", {}), figs.get("vxlan6", {})
    ratios = {}
    for f, *_ in FIELDS:
        a, b = ila.get(f), vx.get(f)
        if f == "overhead" and a and b and b["median"]:
            ratios[f] = {"ratio": a["median"] / b["median"], "lo": None, "hi": None}
        else:
            ratios[f] = stats.ratio(a, b)
    return figs, ratios


def render(doc, name):
    """The report, markdown."""
    figs, ratios = doc["figures"], doc["ratios"]
    m = doc["machine"]
    lines = [f"# ILA against VXLAN over IPv6 — {name}", "",
             f"{doc['started_utc']} → {doc['finished_utc']}; commit {doc['git']['commit'][:12]}"
             f"{' (dirty)' if doc['git']['dirty'] else ''}; {doc['config']['reps']} repetitions,"
             f" iperf3 -t {doc['config']['tcp_seconds']}, single TCP stream.",
             f"Machine: {m['nproc']} × {m['cpu_model']}, kernel {m['kernel']}; load average "
             f"{m['loadavg_start']} at the start, {m.get('loadavg_end')} at the end; other "
             f"people's load before the run: {m['background_busy']:.0%} of all CPUs busy, "
             f"{m['foreign_namespaces']} foreign namespaces.", "",
             "One lab, the same two nvods and underlay carry both networks (see "
             "bench/nvobench/ila.py). Figures are medians (min–max); ratios are ILA ÷ VXLAN "
             "(range: least to most favourable pairing).", "",
             "| figure | unit | VXLAN over IPv6 | ILA | ILA ÷ VXLAN |", "|---|---|---|---|---|"]

    def cell(s, fmt="{:.3g}"):
        if not s:
            return "—"
        if s["min"] == s["max"]:
            return fmt.format(s["median"])
        return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"

    for f, label, unit, _ in FIELDS:
        r = ratios.get(f)
        rc = "—"
        if r:
            rc = f"{r['ratio']:.2f}" + (f" ({r['lo']:.2f}–{r['hi']:.2f})" if r["lo"] else "")
        lines.append(f"| {label} | {unit} | {cell(figs.get('vxlan6', {}).get(f))} | "
                     f"{cell(figs.get('ila', {}).get(f))} | {rc} |")
    if doc["problems"]:
        lines += ["", "Problems:", ""] + [f"- {p}" for p in doc["problems"]]
    for key, sc in doc["scenarios"].items():
        if sc["status"] != "ok":
            lines.append(f"- {key}: {sc['status']}: {sc['reason']}")
    return "\n".join(lines) + "\n"


__all__ = ["SCENARIOS", "figures", "render", "study"]
