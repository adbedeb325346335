"""The report of a relay study (`bench/run.py --relay`), from its JSON document alone: the
figures with nvo's kernel-path relays ÷ kernel-relay leading, the relay checks, and one PNG (UDP packet rate
and throughput against payload size, RTT, TCP).
"""

import statistics

from . import report, relay, stats
from .measure import IP_UDP
from .plots import COLORS, _err, _pyplot

LABEL = {"nvo-xdp-relay": "nvo XDP relay", "nvo-ebpf-relay": "nvo tc relay",
         "nvo-relay": "nvo userspace relay", "kernel-relay": "kernel relay",
         "nvo-direct": "nvo direct", "kernel-direct": "kernel direct"}
COLOR = {"nvo-xdp-relay": "#2ca02c", "nvo-ebpf-relay": "#98df8a",
         "nvo-relay": COLORS["nvo"], "kernel-relay": COLORS["kernel"],
         "nvo-direct": "#ffbb78", "kernel-direct": "#aec7e8"}


READING = [
    "- Everything shares this machine's CPUs: both containers, the three hosts (three nvods in "
    "nvo-relay) and the underlay. A figure is what the whole path reaches on them.",
    "- In the kernel scenarios a veth hands each packet on inside the sending system call, so "
    "the whole path (ha's bridge and VXLAN device, the underlay bridge, hb's decapsulation, "
    "bridge and re-encapsulation, hc) runs on the sender's CPU and paces the sender: no loss, "
    "one CPU. nvod forwards on threads of its own, so the nvo path spreads over both CPUs "
    "while the sender runs ahead and the excess is lost (the loss table). Where nvo's UDP "
    "packet rate is the higher, that is part of why.",
    "- CPU per Gbit and per packet count the whole machine (all CPUs, idle excluded) during "
    "the run.",
    "- The relay packet rate (relay scenarios): nvo-blast in ha's namespace sends tunnel packets "
    "straight at hb and hb's underlay interface counts what it sends on (dropped at the "
    "underlay bridge before hc). On veths the whole path — the sender's system call, ha's stack, "
    "the bridge, hb's relay — runs on the sender's CPU, so the figure is that path's packet rate "
    "with hb's relay the only difference between scenarios; where the sent and relayed rates "
    "are equal (the kernel-path relays), the sender's CPU is the limit, not the relay.",
    "- On nvo's relay scenarios the endpoints (ha, hc) route by node in nvod's userspace even on "
    "the kernel datapath, so TCP, RTT and UDP through c1 → c2 measure nvod at the ends more "
    "than the relay.",
]


def _f(m, f):
    if not f:
        return "—"
    return f"{m.fmt.format(f['median'])} ({m.fmt.format(f['min'])}–{m.fmt.format(f['max'])})"


def _r(r, bold=False):
    if not r:
        return "—"
    x = f"{r['ratio']:.2f}"
    return f"{'**' + x + '**' if bold else x} ({r['lo']:.2f}–{r['hi']:.2f})"


def table(doc):
    figs = relay.figures(doc)
    rats = relay.ratios(figs)
    pairs = [f"{a}/{b}" for a, b in relay.PAIRS]
    heads = [f"{LABEL[a]} ÷ {LABEL[b]}" for a, b in relay.PAIRS]
    rows = ["| metric | better | " + " | ".join(LABEL[k] for k in relay.KEYS) + " | "
            + " | ".join(heads) + " |",
            "|---|---|" + "---|" * (len(relay.KEYS) + len(pairs))]
    for m in relay.metrics(doc["config"]["udp_sizes"]):
        cells = [_f(m, figs[m.key].get(k)) for k in relay.KEYS]
        cells += [_r(rats[m.key].get(p), bold=i == 0) if m.ratio else "" for i, p in
                  enumerate(pairs)]
        rows.append(f"| {m.label} ({m.unit}) | {m.better} | " + " | ".join(cells) + " |")
    return rows


def _loss_rows(doc):
    """Median UDP loss per scenario and size: what the sender pushed and nobody delivered."""
    rows = ["| UDP payload | " + " | ".join(LABEL[k] for k in relay.KEYS) + " |",
            "|---|" + "---|" * len(relay.KEYS)]
    for size in doc["config"]["udp_sizes"]:
        cells = []
        for k in relay.KEYS:
            vals = [s["loss"] for s in doc["samples"].get(k, {}).get(f"udp{size}", [])
                    if s.get("loss") is not None]
            cells.append(f"{statistics.median(vals) * 100:.0f} %" if vals else "—")
        rows.append(f"| {size} B | " + " | ".join(cells) + " |")
    return rows


def lead(doc):
    """A few sentences on nvo-relay ÷ kernel-relay, from the figures."""
    figs = relay.figures(doc)
    rats = relay.ratios(figs)
    out = []
    for a, b in [p for p in relay.PAIRS if p[0] in relay.RELAYS and p[1] in relay.RELAYS]:
        r = rats.get("relay_kpps", {}).get(f"{a}/{b}")
        if r:
            out.append(f"- Relay packet rate on hb ({relay.RELAY_FRAME} B frames sent at it): "
                       f"{LABEL[a]} ÷ {LABEL[b]} {_r(r)}.")
    lead_pairs = [("nvo-ebpf-relay", "kernel-relay"), ("nvo-relay", "kernel-relay")]
    for key, what in (("tcp1_gbps", "TCP throughput (1 stream, c1 → c2)"),
                      ("rtt_avg_us", "mean RTT"), ("udp64_kpps", "UDP 64 B delivered rate")):
        for a, b in lead_pairs:
            r = rats.get(key, {}).get(f"{a}/{b}")
            if r:
                side = ("the range spans 1: no clear difference" if r["lo"] <= 1 <= r["hi"]
                        else "nvo's figure is the higher" if r["lo"] > 1 else
                        "nvo's figure is the lower")
                out.append(f"- {what}: {LABEL[a]} ÷ {LABEL[b]} {_r(r)}; {side}.")
    for a, b in relay.COST_PAIRS:
        r = rats.get("tcp1_gbps", {}).get(f"{a}/{b}")
        if r:
            out.append(f"- What relaying costs TCP: {LABEL[a]} ÷ {LABEL[b]} {_r(r)}.")
    return out or ["Not enough samples for a statement (see the problems below)."]


def _checks(doc):
    out = []
    for key in relay.RELAYS:
        v = doc.get("verdicts", {}).get(key)
        if not v:
            out.append(f"- {LABEL[key]}: not checked (the scenario did not run).")
            continue
        ok, said = v
        what = ("decapsulates, bridges and re-encapsulates" if key == "kernel-relay"
                else "relays without decapsulating")
        out.append(f"- {LABEL[key]}: **{'passed' if ok else 'FAILED'}** (hb {what}): {said}.")
    return out


def _mtu_note(doc):
    sizes = doc["config"]["udp_sizes"]
    parts = []
    for k in relay.KEYS:
        mtu = doc["scenarios"].get(k, {}).get("tenant_mtu")
        if mtu:
            big = [s for s in sizes if s > mtu - IP_UDP]
            parts.append(f"{LABEL[k]} {mtu} (fragmented in c1: "
                         + (", ".join(f"{s} B" for s in big) or "none") + ")")
    return ("Tenant MTU and the payload sizes c1's IP stack fragments (larger than the MTU "
            "minus 28): " + "; ".join(parts) + ".")


def render(doc, name):
    c = doc["config"]
    out = [f"# nvo relay study: nvo's relay against the kernel's VXLAN → bridge → VXLAN, "
           f"{doc['started_utc']}", "",
           "c1 on ha talks to c2 on hc; ha and hc are cut from each other by nftables, so "
           "everything goes through hb. Median (min–max) of "
           f"{c['reps']} repetitions, scenarios in rotating order; ratios of medians with the "
           "range min/max .. max/min. The direct scenarios (two hosts, no relay) say what a "
           "relay costs each.", "", "## Figures", ""]
    out += table(doc)
    out += ["", _mtu_note(doc), "", "UDP loss (median; the sender's excess that the path did "
            "not deliver):", ""] + _loss_rows(doc)
    out += ["", "## What it means", ""] + lead(doc) + ["", "Reading the figures:", ""] + READING
    out += ["", "## Does hb really relay the way each scenario says?", ""] + _checks(doc)
    out += ["", "## Machine and run", ""] + report.run_lines(doc) + [
            f"- iperf3 {c['tcp_seconds']} s per run; nvo-blast {c['udp_seconds']} s per size "
            f"(4 flows, batches of 64); {c['ping_count']} pings per run."]
    for k, v in doc["scenarios"].items():
        state = "" if v["status"] == "ok" else f" **{v['status']}: {v['reason']}**"
        notes = f" Notes: {'; '.join(v['notes'])}." if v.get("notes") else ""
        out.append(f"- *{k}*: {v['description']}.{state}{notes}")
    if doc.get("problems"):
        out += ["", "Problems during the run:", ""] + [f"- {p}" for p in doc["problems"]]
    if doc.get("plots"):
        out += ["", f"![relay]({name}.png)"]
    elif doc.get("plots_missing"):
        out += ["", f"No plot: {doc['plots_missing']}."]
    out += ["", "## Method", "", relay.__doc__.strip()]
    return "\n".join(out) + "\n"


def _bars(ax, figs, metric_keys, labels, keys):
    """Grouped bars, one group per metric, one bar per scenario, error bars min..max."""
    width = 0.8 / max(len(keys), 1)
    for i, k in enumerate(keys):
        pts = [(j, figs[m].get(k)) for j, m in enumerate(metric_keys)]
        pts = [(j, f) for j, f in pts if f]
        if not pts:
            continue
        ys, lo, hi = zip(*(_err(f) for _, f in pts))
        xs = [j + (i - (len(keys) - 1) / 2) * width for j, _ in pts]
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=LABEL[k], color=COLOR[k])
    ax.set_xticks(range(len(metric_keys)))
    ax.set_xticklabels(labels)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()


def plot(path, doc):
    """UDP kpps and Mbit/s against size, RTT bars, TCP bars: the four scenarios."""
    plt = _pyplot()
    figs = relay.figures(doc)
    sizes = doc["config"]["udp_sizes"]
    keys = [k for k in relay.KEYS if doc["samples"].get(k)]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4))
    for ax, field, unit in ((axes[0][0], "kpps", "delivered packet rate (kpps)"),
                            (axes[0][1], "mbps", "delivered throughput (Mbit/s payload)")):
        for k in keys:
            pts = [(s, figs[f"udp{s}_{field}"].get(k)) for s in sizes]
            pts = [(s, f) for s, f in pts if f]
            if not pts:
                continue
            ys, lo, hi = zip(*(_err(f) for _, f in pts))
            ax.errorbar([s for s, _ in pts], ys, yerr=[lo, hi], marker="o", capsize=3,
                        label=LABEL[k], color=COLOR[k],
                        linestyle="-" if k.endswith("relay") else ":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(s) for s in sizes], rotation=45)
        ax.axvline(1422, color="#bbbbbb", linestyle="--", linewidth=1)
        ax.set_xlabel("UDP payload (bytes); beyond the dashed line c1 fragments")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    _bars(axes[1][0], figs, ["rtt_avg_us", "rtt_p99_us", "rtt_jitter_us"],
          ["mean RTT", "p99 RTT", "jitter"], keys)
    axes[1][0].set_ylabel("µs (ping, 128-byte packets every 2 ms)")
    _bars(axes[1][1], figs, ["tcp1_gbps", "tcp1_cpu"], ["Gbit/s", "CPU s per Gbit"], keys)
    axes[1][1].set_ylabel("TCP, 1 stream (iperf3)")
    fig.suptitle(f"relay on hb: nvo against the kernel's VXLAN → bridge → VXLAN — "
                 f"{doc['started_utc']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["lead", "plot", "render", "table"]
