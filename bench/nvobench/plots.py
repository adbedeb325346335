"""The report's PNG plots (matplotlib, Debian's python3-matplotlib). Every point or bar is a
median, its error bar the min..max of the repetitions.

- throughput: UDP delivered packet rate and throughput against payload size;
- rtt: RTT mean, p99 and jitter per scenario;
- cpu: TCP throughput and CPU seconds per gigabit (1 and 4 streams), and CPU microseconds
  per UDP packet delivered, per scenario.
"""

COLORS = {"native": "#7f7f7f", "kernel": "#1f77b4", "ovs-afpacket": "#2ca02c",
          "ovs-afxdp": "#9467bd", "nvo": "#ff7f0e", "nvo-vxlan-gbp": "#ffbb78",
          "nvo-vxlan-gpe": "#d62728", "nvo-geneve": "#8c564b", "nvo-nvgre": "#e377c2",
          "nvo-overlay": "#bcbd22", "nvo-stt": "#17becf", "nvo-ebpf": "#393b79",
          "nvo-ebpf-vxlan-gbp": "#ff9896", "nvo-ebpf-vxlan-gpe": "#c49c94",
          "nvo-ebpf-geneve": "#f7b6d2", "nvo-ebpf-nvgre": "#dbdb8d",
          "nvo-ebpf-overlay": "#9edae5"}


def available():
    """None when matplotlib can be used, else why not."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        return f"matplotlib is missing ({e}); scripts/setup.sh installs python3-matplotlib"
    return None


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _err(f):
    """(median, [lower error], [upper error]) of a summary, for errorbar/bar."""
    return f["median"], f["median"] - f["min"], f["max"] - f["median"]


def throughput(path, figs, scenarios, sizes, title):
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, field, unit in ((axes[0], "kpps", "delivered packet rate (kpps)"),
                            (axes[1], "mbps", "delivered throughput (Mbit/s payload)")):
        for sc in scenarios:
            pts = [(s, figs[f"udp{s}_{field}"].get(sc)) for s in sizes]
            pts = [(s, f) for s, f in pts if f]
            if not pts:
                continue
            xs = [s for s, _ in pts]
            ys, lo, hi = zip(*(_err(f) for _, f in pts))
            ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=sc,
                        color=COLORS.get(sc))
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([str(s) for s in sizes], rotation=45 if len(sizes) > 4 else 0)
        if max(sizes) > 1422:
            ax.axvline(1422, color="#bbbbbb", linestyle="--", linewidth=1)
            ax.text(1422, ax.get_ylim()[1] * 0.97, " fragments beyond\n (tenant MTU 1450)",
                    fontsize=7, va="top", color="#777777")
        ax.set_xlabel("UDP payload (bytes)")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"UDP with nvo-blast — {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _grouped_bars(ax, figs, keys, labels, scenarios):
    width = 0.8 / max(len(scenarios), 1)
    for i, sc in enumerate(scenarios):
        xs, ys, lo, hi = [], [], [], []
        for j, key in enumerate(keys):
            f = figs[key].get(sc)
            if not f:
                continue
            m, l, h = _err(f)
            xs.append(j + (i - (len(scenarios) - 1) / 2) * width)
            ys.append(m)
            lo.append(l)
            hi.append(h)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=sc, color=COLORS.get(sc))
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels)
    ax.grid(axis="y", alpha=0.3)
    ax.legend()


def rtt(path, figs, scenarios, title):
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    _grouped_bars(ax, figs, ["rtt_avg_us", "rtt_p99_us", "rtt_jitter_us"],
                  ["mean RTT", "p99 RTT", "jitter"], scenarios)
    ax.set_ylabel("µs")
    ax.set_title(f"ping, 128-byte packets every 2 ms — {title}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cpu(path, figs, scenarios, sizes, title):
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    _grouped_bars(axes[0], figs, ["tcp1_gbps", "tcp4_gbps"], ["1 stream", "4 streams"],
                  scenarios)
    axes[0].set_ylabel("TCP throughput (Gbit/s)")
    _grouped_bars(axes[1], figs, ["tcp1_cpu", "tcp4_cpu"], ["1 stream", "4 streams"],
                  scenarios)
    axes[1].set_ylabel("TCP: CPU seconds per Gbit (all CPUs; lower is better)")
    _grouped_bars(axes[2], figs, [f"udp{s}_cpu" for s in sizes], [f"{s} B" for s in sizes],
                  scenarios)
    axes[2].set_ylabel("UDP: CPU µs per packet delivered (lower is better)")
    fig.suptitle(f"CPU cost: TCP (iperf3) and UDP (nvo-blast) — {title}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
