"""From samples to figures and ratios.

A figure is the median of a scenario's repetitions with their min and max, and its spread
(max − min) / median: the noise of that figure on this machine in this run. A ratio is
nvo's median over another scenario's median, measured in the same run; its range runs from
the least to the most favourable pairing of the two ranges (min/max .. max/min).
"""

import statistics

from . import encaps


class Metric:
    """One figure the report shows: where its samples come from and which way is better."""

    def __init__(self, key, label, unit, better, source, field, fmt="{:.2f}", ratio=True):
        self.key, self.label, self.unit, self.better = key, label, unit, better
        self.source, self.field, self.fmt = source, field, fmt
        # False when the ratio would repeat another row's (Mbit/s is kpps times the size).
        self.ratio = ratio


def metrics(sizes):
    """Every metric of a run over UDP payload `sizes`, in report order."""
    out = [
        Metric("tcp1_gbps", "TCP throughput, 1 stream", "Gbit/s", "higher", "tcp1", "gbps"),
        Metric("tcp4_gbps", "TCP throughput, 4 streams", "Gbit/s", "higher", "tcp4", "gbps"),
    ]
    for size in sizes:
        out.append(Metric(f"udp{size}_kpps", f"UDP packet rate, {size} B payload", "kpps",
                          "higher", f"udp{size}", "kpps", "{:.0f}"))
    for size in sizes:
        out.append(Metric(f"udp{size}_mbps", f"UDP throughput, {size} B payload", "Mbit/s",
                          "higher", f"udp{size}", "mbps", "{:.0f}", ratio=False))
    out += [
        Metric("rtt_avg_us", "RTT, mean (128 B ping)", "µs", "lower", "rtt", "avg_us", "{:.1f}"),
        Metric("rtt_p99_us", "RTT, p99", "µs", "lower", "rtt", "p99_us", "{:.1f}"),
        Metric("rtt_jitter_us", "RTT jitter", "µs", "lower", "rtt", "jitter_us", "{:.1f}"),
        Metric("tcp1_cpu", "CPU per Gbit, TCP 1 stream", "CPU s/Gbit", "lower", "tcp1",
               "cpu_s_per_gbit", "{:.3f}"),
        Metric("tcp4_cpu", "CPU per Gbit, TCP 4 streams", "CPU s/Gbit", "lower", "tcp4",
               "cpu_s_per_gbit", "{:.3f}"),
    ]
    for size in sizes:
        out.append(Metric(f"udp{size}_cpu", f"CPU per UDP packet, {size} B payload",
                          "CPU µs/packet", "lower", f"udp{size}", "cpu_us_per_packet",
                          "{:.2f}"))
    return out


def summarise(values):
    """median, min, max, n and spread of a list of numbers (None when empty)."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"median": med, "min": lo, "max": hi, "n": len(values),
            "spread": (hi - lo) / med if med else None, "samples": values}


def ratio(a, b):
    """a ÷ b for two summaries: the ratio of medians and its range; None if either is missing."""
    if not a or not b or not b["median"] or not b["min"]:
        return None
    return {"ratio": a["median"] / b["median"],
            "lo": a["min"] / b["max"], "hi": a["max"] / b["min"]}


# The ratios the report leads with, (numerator, denominator): nvo's kernel datapath against
# native routing, the kernel's VXLAN and nvo's userspace path; the userspace path against
# native, the kernel's VXLAN and Open vSwitch's userspace datapath with each port type. The
# last one is context: how far the kernel's VXLAN is from native on this machine.
PAIRS = [("nvo-ebpf", "native"), ("nvo-ebpf", "kernel"), ("nvo-ebpf", "nvo"),
         ("nvo", "native"), ("nvo", "kernel"), ("nvo", "ovs-afpacket"), ("nvo", "ovs-afxdp"),
         ("kernel", "native")]
# Every ratio a run computes: the lead pairs, then each encapsulation profile against native,
# the kernel and nvo's VXLAN (encaps.PAIRS; the ones PAIRS already has are not repeated).
ALL_PAIRS = PAIRS + [p for p in encaps.PAIRS if p not in PAIRS]


def figures(samples, metric_list):
    """{metric key: {scenario: summary}} from {scenario: {source: [sample dicts]}}."""
    out = {}
    for m in metric_list:
        out[m.key] = {}
        for sc, by_source in samples.items():
            values = [s.get(m.field) for s in by_source.get(m.source, [])]
            out[m.key][sc] = summarise(values)
    return out


def ratios(figs):
    """{metric key: {"nvo/native": ratio, ...}} for every pair of ALL_PAIRS; None where either
    figure is missing."""
    out = {}
    for key, by_sc in figs.items():
        out[key] = {f"{a}/{b}": ratio(by_sc.get(a), by_sc.get(b)) for a, b in ALL_PAIRS}
    return out


def noise(figs):
    """(median spread, largest spread, (metric, scenario) of the largest) over all figures."""
    spreads = [(f["spread"], key, sc) for key, by_sc in figs.items()
               for sc, f in by_sc.items() if f and f["spread"] is not None]
    if not spreads:
        return None
    worst = max(spreads)
    return {"median_spread": statistics.median(s for s, _, _ in spreads),
            "max_spread": worst[0], "max_at": [worst[1], worst[2]]}
