"""The report of an offload study (`bench/run.py --offloads`), from its JSON document alone.

The "What it means" paragraph is written from the figures: every statement in it is a ratio
of this run's medians with its range (min/max .. max/min of the repetitions, stats.ratio),
and where two effects' ranges overlap it says the run cannot tell them apart.
"""

import textwrap

from . import report, offloads, stats
from .offloads import CONFIGS, LABEL, PROFILES, figures

STT, VXLAN = PROFILES
# An Ethernet frame of the underlay's MTU (1500 + 14): a mean above it means large frames.
UNDERLAY_FRAME = 1514


def _f(s, fmt="{:.2f}"):
    if not s:
        return "—"
    return f"{fmt.format(s['median'])} ({fmt.format(s['min'])}–{fmt.format(s['max'])})"


def _r(r):
    return f"{r['ratio']:.2f} ({r['lo']:.2f}–{r['hi']:.2f})" if r else "—"


def _get(figs, c, p, field):
    return figs.get(c, {}).get(p, {}).get(field)


def _ratio(figs, a, b, field):
    """figure a ÷ figure b, each a (config, profile)."""
    return stats.ratio(_get(figs, *a, field), _get(figs, *b, field))


def table(doc):
    figs = figures(doc)
    rows = ["| toggle | what changed | STT Gbit/s | VXLAN Gbit/s | STT ÷ VXLAN | STT ÷ its (a) "
            "| VXLAN ÷ its (a) | STT CPU s/Gbit | VXLAN CPU s/Gbit |",
            "|---|---|---|---|---|---|---|---|---|"]
    for c in CONFIGS:
        k = c.key
        cells = [_f(_get(figs, k, STT, "gbps")), _f(_get(figs, k, VXLAN, "gbps")),
                 _r(_ratio(figs, (k, STT), (k, VXLAN), "gbps")),
                 _r(_ratio(figs, (k, STT), ("all-on", STT), "gbps")),
                 _r(_ratio(figs, (k, VXLAN), ("all-on", VXLAN), "gbps")),
                 _f(_get(figs, k, STT, "cpu_s_per_gbit"), "{:.3f}"),
                 _f(_get(figs, k, VXLAN, "cpu_s_per_gbit"), "{:.3f}")]
        rows.append(f"| {c.label} | {c.what} | " + " | ".join(cells) + " |")
    rows += ["", "Mean size of what passed each point (bytes per frame or packet, medians); "
             "above the MTU means large frames passed whole:", "",
             "| toggle | " + " | ".join(f"{LABEL[p]}: c1 sent / underlay / c2 got"
                                       for p in PROFILES) + " | retransmits STT / VXLAN |",
             "|---|---|---|---|"]
    fmt = lambda s: f"{s['median']:.0f}" if s else "—"
    for c in CONFIGS:
        sizes = [" / ".join(fmt(_get(figs, c.key, p, f))
                            for f in ("c1_tx_bytes", "ul_tx_bytes", "c2_rx_bytes"))
                 for p in PROFILES]
        rtx = " / ".join(fmt(_get(figs, c.key, p, "retransmits")) for p in PROFILES)
        rows.append(f"| {c.label} | " + " | ".join(sizes) + f" | {rtx} |")
    return rows


def _pct(r):
    """'−38 % (−52 to −20 %)' for a ratio r to a baseline."""
    return (f"{(r['ratio'] - 1) * 100:+.0f} % ({(r['lo'] - 1) * 100:+.0f} to "
            f"{(r['hi'] - 1) * 100:+.0f} %)")


def _advantage(r):
    if r["lo"] > 1:
        return "STT ahead"
    if r["hi"] < 1:
        return "VXLAN ahead"
    return "no clear difference (the range spans 1)"


def meaning(doc):
    """The paragraph, as a list of Markdown lines."""
    figs = figures(doc)
    base = _ratio(figs, ("all-on", STT), ("all-on", VXLAN), "gbps")
    if not base:
        return ["Not enough samples for a statement (see the problems above)."]
    out = [f"- With every offload on, STT ÷ VXLAN throughput is {_r(base)}: "
           f"{_advantage(base)}; CPU per Gbit STT ÷ VXLAN is "
           f"{_r(_ratio(figs, ('all-on', STT), ('all-on', VXLAN), 'cpu_s_per_gbit'))}."]
    effects = {}
    for c in CONFIGS[1:]:
        rs = _ratio(figs, (c.key, STT), ("all-on", STT), "gbps")
        rv = _ratio(figs, (c.key, VXLAN), ("all-on", VXLAN), "gbps")
        rsv = _ratio(figs, (c.key, STT), (c.key, VXLAN), "gbps")
        if not (rs and rv and rsv):
            out.append(f"- {c.label}: not measured for both profiles.")
            continue
        effects[c.key] = (c, rs, rv, rsv)
        out.append(f"- {c.label}: STT {_pct(rs)}, VXLAN {_pct(rv)} against their own (a); "
                   f"STT ÷ VXLAN {_r(rsv)}, {_advantage(rsv)}.")
    out += _sizes(figs) + _verdict(effects)
    return out


def _sizes(figs):
    """Where large frames pass whole with everything on: the mean sizes against the MTU."""
    out = []
    for p in PROFILES:
        s = {f: _get(figs, "all-on", p, f) for f in ("c1_tx_bytes", "ul_tx_bytes", "c2_rx_bytes")}
        if not all(s.values()):
            continue
        big = lambda f: s[f]["median"] > UNDERLAY_FRAME
        said = lambda f, what: (f"{what} {s[f]['median']:.0f} B on average "
                                + ("(large frames, passed whole)" if big(f) else "(MTU-sized)"))
        out.append(f"- {LABEL[p]}, everything on: " + "; ".join([
            said("c1_tx_bytes", "the sender's frames"),
            said("ul_tx_bytes", "the underlay's packets"),
            said("c2_rx_bytes", "the frames the receiver got")]) + ".")
    return out


def _verdict(effects):
    """Which single toggle costs each profile most, and transmit segmentation (b) against
    receive coalescing (c) for STT, the paper's question."""
    single = {k: v for k, v in effects.items() if k != "all-off"}
    if not single:
        return []
    out = []
    for i, p in ((1, STT), (2, VXLAN)):
        worst = min(single.values(), key=lambda e: e[i]["ratio"])
        out.append(f"- Of the single toggles, {worst[0].label} costs {LABEL[p]} the most "
                   f"({_pct(worst[i])}).")
    tx, rx = effects.get("sender-tso-off"), effects.get("rx-no-large")
    if tx and rx:
        a, b = tx[1], rx[1]
        overlap = max(a["lo"], b["lo"]) <= min(a["hi"], b["hi"])
        if overlap:
            said = ("their ranges overlap, so this run cannot say which of the two matters "
                    "more")
        elif a["ratio"] < b["ratio"]:
            said = ("transmit segmentation makes the larger difference here (the ranges do not "
                    "overlap)")
        else:
            said = ("receive coalescing makes the larger difference here (the ranges do not "
                    "overlap)")
        out.append(f"- Transmit segmentation against receive coalescing, for STT: the "
                   f"sender's TSO/GSO off changes its throughput by {_pct(a)}, large-frame "
                   f"delivery to the receiver off by {_pct(b)}; {said}.")
    return out


def render(doc, image_prefix):
    c = doc["config"]
    out = [f"# nvo offload study: STT against VXLAN, {doc['started_utc']}", "",
           "Single-stream TCP (`iperf3 -P 1 -t " + str(c["tcp_seconds"]) + "`, c1 → c2) over "
           "nvod's `stt` and `vxlan` profiles, each in its own two-host lab, with offloads "
           f"toggled; median (min–max) of {c['reps']} repetitions, the toggles taken in "
           "rotating order. Ratios have the range min/max .. max/min.", "",
           "## Figures", ""]
    out += table(doc)
    out += ["", "## What it means", "",
            "Written from the figures above; a statement holds within the stated ranges.", ""]
    out += meaning(doc)
    out += ["", "## Machine and run", ""] + report.run_lines(doc) + [
            "- Tenant MTU: " + ", ".join(f"{LABEL[k]} {v.get('tenant_mtu')}"
                                         for k, v in doc["scenarios"].items()) + "."]
    bad = [f"{k}: {v['reason']}" for k, v in doc["scenarios"].items() if v["status"] != "ok"]
    out += [f"- **Not measured:** {b}" for b in bad]
    if doc.get("problems"):
        out += ["", "Problems during the run:", ""] + [f"- {p}" for p in doc["problems"]]
    out += ["", "What the toggled devices reported after each toggle (ethtool -k):", ""]
    for ck, by_p in doc.get("states", {}).items():
        for p, state in by_p.items():
            if state:
                out.append(f"- {ck}, {LABEL.get(p, p)}: " + "; ".join(
                    f"{node} " + " ".join(f"{k} {v}" for k, v in feats.items())
                    for node, feats in state.items()))
    if doc.get("plots"):
        out += ["", f"![offloads]({image_prefix}.png)"]
    out += ["", "## Method", "", offloads.__doc__.strip()]
    return "\n".join(out) + "\n"


def plot(path, doc):
    """Throughput and CPU per Gbit per toggle, STT beside VXLAN."""
    from .plots import _grouped_bars, _pyplot
    plt = _pyplot()
    figs = figures(doc)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    keys = [c.key for c in CONFIGS]
    labels = [textwrap.fill(c.label, 16) for c in CONFIGS]
    for ax, field, unit in ((axes[0], "gbps", "TCP 1 stream (Gbit/s)"),
                            (axes[1], "cpu_s_per_gbit", "CPU seconds per Gbit (lower is better)")):
        by = {k: {p: _get(figs, k, p, field) for p in PROFILES} for k in keys}
        _grouped_bars(ax, by, keys, labels, PROFILES)
        ax.set_ylabel(unit)
        ax.tick_params(axis="x", labelsize=8)
        ax.legend([LABEL[p] for p in PROFILES])
    fig.suptitle(f"STT against VXLAN with offloads toggled — {doc['started_utc']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["meaning", "plot", "render", "table"]
