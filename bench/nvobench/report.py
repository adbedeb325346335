"""The Markdown report of a run, written from the run's JSON document alone (so a report can be
regenerated from a results file). It leads with the ratios, then the machine and its noise,
then the scenarios (failed ones with their reason), the absolute figures and the method.
"""

from . import encaps
from .stats import PAIRS, metrics

# Said of a results file from the harness's first version, which had no OVS scenarios.
OVS_ABSENT = ("Open vSwitch userspace datapath (VXLAN; AF_PACKET and AF_XDP ports)",
              "not in the harness version that made this run")

# Said when no profile scenario has samples.
PROFILES_ABSENT = ("nvo with its other encapsulation profiles (" +
                   ", ".join(p for p, _ in encaps.PROFILES) + ")",
                   "not selected in this run: `bench/run.py --scenarios encaps` measures them "
                   "beside native, kernel and nvo's VXLAN")
OFFLOADS_ABSENT = ("STT against VXLAN with offloads toggled",
                   "a separate mode: `bench/run.py --offloads` writes "
                   "bench/results/<stamp>-offloads.md")

NOT_MEASURED = [
    ("microbenchmarks (FDB lookup, pipeline ns per packet)",
     "not part of this run: bench/micro.py runs them (criterion) and writes "
     "bench/results/micro-latest.md"),
]

READING = [
    "- Everything shares this machine's CPUs: the client, the server, both hosts and the "
    "underlay. A figure is what the whole path reaches on them, not what one host could do.",
    "- In *native* and *kernel* a veth hands each packet on inside the sending system call, so "
    "the whole path (both hosts, the bridge, the VXLAN devices) runs on the sender's CPU and "
    "the sender slows to its pace: no loss, one CPU. nvod forwards on its own threads, so "
    "*nvo*'s path is spread over the CPUs while the sender runs ahead and the excess is lost. "
    "Where nvo's UDP packet rate beats native's, that is why, and its loss column shows the "
    "excess.",
    "- *ovs-afpacket* and *ovs-afxdp* are like nvo in that respect: the veths hand the frames "
    "to sockets (AF_PACKET or AF_XDP) that ovs-vswitchd's main thread drains, so OVS, too, "
    "runs beside the sender and loses what it cannot keep up with. Their containers have "
    "transmit checksum offload off (OVS's userspace datapath needs it; PEERS.md), which also "
    "turns off TSO: TCP then goes in MTU-sized segments, as it does for nvo.",
    "- *nvo-ebpf* is nvod's kernel datapath: tc programs on the container veths and the "
    "underlay encapsulate, decapsulate and redirect inside the same softirq as *native* and "
    "*kernel*, so like them it runs at the sender's pace on the sender's CPU; nvod only keeps "
    "the maps. Its containers keep their offloads (TSO, checksum offload) as the kernel's do.",
    "- CPU per Gbit and per packet count the whole machine (all CPUs, idle time excluded) "
    "during the run; when every CPU is saturated they come down to CPUs / throughput.",
]

TOPOLOGY = """\
    c1 ──veth── h1 ──veth── [ul: bridge br0] ──veth── h2 ──veth── c2
  (client)    (host)            (underlay)            (host)     (server)
"""


def _num(metric, v):
    return metric.fmt.format(v)


def _fig(metric, f):
    if not f:
        return "—"
    return (f"{_num(metric, f['median'])} ({_num(metric, f['min'])}–{_num(metric, f['max'])}, "
            f"±{f['spread'] * 50:.0f} %)" if f["spread"] is not None else _num(metric, f["median"]))


def _ratio(r, why_missing):
    if not r:
        return f"— {why_missing}".rstrip()
    return f"**{r['ratio']:.2f}** ({r['lo']:.2f}–{r['hi']:.2f})"


def _missing(doc, a, b):
    status = {s: doc["scenarios"].get(s, {}).get("status") for s in (a, b)}
    bad = [f"{s} {'not run' if st in (None, 'skipped') else st}"
           for s, st in status.items() if st != "ok"]
    return f"({', '.join(bad)})" if bad else "(no samples)"


def _measured(doc):
    """The scenarios that have samples, in the run's order."""
    return [sc for sc in doc["scenarios"] if doc["samples"].get(sc)]


def run_lines(doc):
    """The machine, commit, time span and load of a study's run (the offloads and relay
    reports share them)."""
    m = doc["machine"]
    return [
        f"- {m['nproc']} CPUs ({m['cpu_model']}), Linux {m['kernel']}; commit "
        f"`{doc['git'].get('commit', '?')[:12]}`"
        + (", with uncommitted changes" if doc["git"].get("dirty") else "") + ".",
        f"- {doc['started_utc']} to {doc.get('finished_utc', '?')} "
        f"({doc.get('duration_s', 0) / 60:.1f} min); load average {m['loadavg_start']} at "
        f"the start, {m.get('loadavg_end', '?')} at the end; "
        f"{m['background_busy'] * 100:.0f} % of the CPUs busy before the run.",
    ]


def _machine(doc):
    m = doc["machine"]
    git = doc["git"]
    dirty = ", with uncommitted changes" if git.get("dirty") else ""
    lines = [
        f"- **Machine:** {m['nproc']} CPUs ({m['cpu_model']}), {m['mem_gib']:.1f} GiB, "
        f"Linux {m['kernel']}; commit `{git.get('commit', '?')[:12]}`{dirty}.",
        f"- **When:** {doc['started_utc']} to {doc['finished_utc']} "
        f"({doc['duration_s'] / 60:.1f} min), {doc['mode']} mode, "
        f"{doc['config']['reps']} repetitions of every measurement.",
        f"- **Other load:** {m['background_busy'] * 100:.0f} % of the CPUs were busy over 2 s "
        f"before the run started, with nothing of the run going; load average "
        f"{m['loadavg_start']} at the start, {m['loadavg_end']} at the end; "
        f"{m['foreign_namespaces']} network namespaces of other people's runs existed at the "
        "start. This machine is shared: absolute figures drift with that load, ratios less.",
    ]
    if doc["config"]["reps"] < 3:
        lines.append(f"- **Not a result:** only {doc['config']['reps']} repetition(s); the "
                     "harness's figures need at least 3 (a development run).")
    n = doc.get("noise")
    if n:
        lines.append(
            f"- **Noise:** a figure's spread is (max − min) / median of its repetitions. Over "
            f"this run's figures the median spread is {n['median_spread'] * 100:.0f} % and "
            f"the largest {n['max_spread'] * 100:.0f} % ({n['max_at'][0]}, {n['max_at'][1]}). "
            "A ratio's range (in brackets) pairs the repetitions least and most favourably.")
    return lines


def _ratio_table(doc, mlist):
    head = " | ".join(f"{a} ÷ {b}" for a, b in PAIRS)
    rows = [f"| metric | better | {head} |", "|---|---|" + "---|" * len(PAIRS)]
    for m in (m for m in mlist if m.ratio):
        rs = doc["ratios"].get(m.key, {})
        cells = [_ratio(rs.get(f"{a}/{b}"), _missing(doc, a, b)) for a, b in PAIRS]
        rows.append(f"| {m.label} | {m.better} | " + " | ".join(cells) + " |")
    return rows


def _scenarios(doc):
    rows = ["| scenario | status | built in | what |", "|---|---|---|---|"]
    notes = []
    for key, sc in doc["scenarios"].items():
        status = "measured" if sc["status"] == "ok" else f"**{sc['status']}**: {sc['reason']}"
        built = f"{sc['setup_s']:.1f} s" if sc.get("setup_s") is not None else "—"
        if sc.get("tenant_mtu") and sc["status"] == "ok":
            built += f", tenant MTU {sc['tenant_mtu']}"
        rows.append(f"| {key} | {status} | {built} | **{sc['title']}**: {sc['description']} |")
        notes += [f"- {key}: {n}" for n in sc.get("notes", [])]
    return rows + ([""] + notes if notes else [])


def _figures(doc, mlist):
    scs = _measured(doc)
    rows = ["| metric | unit | " + " | ".join(scs) + " |", "|---|---|" + "---|" * len(scs)]
    for m in mlist:
        cells = [_fig(m, doc["figures"][m.key].get(sc)) for sc in scs]
        rows.append(f"| {m.label} | {m.unit} | " + " | ".join(cells) + " |")
    return rows


def _udp_detail(doc):
    scs = _measured(doc)
    rows = ["| payload | " + " | ".join(f"{sc}: offered kpps / loss" for sc in scs) + " |",
            "|---|" + "---|" * len(scs)]
    for size in doc["config"]["udp_sizes"]:
        cells = []
        for sc in scs:
            samples = doc["samples"].get(sc, {}).get(f"udp{size}", [])
            if not samples:
                cells.append("—")
                continue
            offered = sorted(s["sent_kpps"] for s in samples)[len(samples) // 2]
            loss = sorted(s["loss"] for s in samples if s["loss"] is not None)
            cells.append(f"{offered:.0f} / {loss[len(loss) // 2] * 100:.0f} %" if loss else "—")
        frag = " (fragmented)" if size > 1422 else ""
        rows.append(f"| {size} B{frag} | " + " | ".join(cells) + " |")
    return rows


def _memory(doc):
    mem = doc.get("nvod_memory") or {}
    rows = (["| host | VmRSS after the runs | VmHWM (peak) |", "|---|---|---|"] if mem else
            ["nvod's memory was not read (the nvo scenario did not run)."])
    for host, m in sorted(mem.items()):
        if "error" in m:
            rows.append(f"| {host} | {m['error']} | |")
        else:
            rows.append(f"| {host} | {m['rss_kib'] / 1024:.1f} MiB | {m['hwm_kib'] / 1024:.1f} MiB |")
    for key, hosts in sorted((doc.get("ovs_memory") or {}).items()):
        cells = ", ".join(f"{h} {kib / 1024:.1f} MiB" if kib else f"{h} gone"
                          for h, kib in sorted(hosts.items()))
        rows += ["", f"For scale, ovs-vswitchd's VmRSS in {key} after the runs: {cells}."]
    return rows


def _method(doc):
    c = doc["config"]
    return [
        "```", TOPOLOGY.rstrip(), "```",
        "Every box is a network namespace on this machine; c1 is the client, c2 the server.",
        f"Each repetition measures every scenario in turn (the order rotates by one scenario per "
        f"repetition, so that drift in the machine's load falls on all of them alike); every "
        f"figure is the median of the {c['reps']} repetitions with their min and max.",
        "",
        f"- **TCP:** `iperf3 -t {c['tcp_seconds']} -P 1` and `-P 4`, c1 → c2; the receiver's "
        "goodput.",
        f"- **UDP:** `nvo-blast send --size N --seconds {c['udp_seconds']} --flows 4 --batch 64` "
        "(sendmmsg, 4 source ports) c1 → c2 and `nvo-blast recv` (recvmmsg) on c2; the figure "
        "is the rate the receiver got, from its first datagram to its last (payload bits for "
        "Mbit/s). Payloads above 1422 bytes exceed the tenant MTU of 1450 (1472 bytes of "
        "native's 1500) and are fragmented by the sender's IP layer: one datagram is then "
        "several packets on the wire, reassembled at c2. c2's reassembly timeout "
        "(`net.ipv4.ipfrag_time`) is 1 s instead of 30 s in every scenario, with a 1.5 s pause "
        "after each fragmented run: on a lossy path incomplete datagrams fill the reassembly "
        "memory, and with 30 s they would starve the rest of the run and the next one. A lossy "
        "path still delivers few fragmented datagrams whole: one lost fragment loses all.",
        f"- **RTT:** `ping -s 100 -i 0.002 -c {c['ping_count']}` (128-byte IP packets), parsed "
        "per reply. p99 by nearest rank. **Jitter** is the mean absolute difference of "
        "successive RTTs, mean(|RTTᵢ − RTTᵢ₋₁|) (RFC 3550's D, without its smoothing); the "
        "JSON also holds the variance of those differences (`diff_var_us2`).",
        "- **CPU per Gbit:** busy jiffies of all CPUs (user, nice, system, irq, softirq, steal "
        "from /proc/stat) over each TCP run, in seconds, divided by the gigabits received. It "
        "counts the whole machine, iperf3 itself and any other load included.",
        "- **nvod memory:** VmRSS of each nvod from /proc after all repetitions.",
        "- **Open vSwitch:** Debian's openvswitch-switch; per host namespace an ovsdb-server "
        "(database from `vswitch.ovsschema`) and an ovs-vswitchd, started by hand in the "
        "foreground with a private OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR/OVS_SYSCONFDIR in the run's "
        "temporary directory and stopped by pid; bridges br-int (container port and VXLAN port "
        "`vx0`, `options:key=100`, `remote_ip`/`local_ip` the underlay addresses) and br-phy "
        "(the underlay veth, the host's underlay address on br-phy), both "
        "`datapath_type=netdev`, NORMAL forwarding. A port OVS could not open (its Interface "
        "`error` column, ofport −1) fails the scenario with OVS's words.",
        "- Before measuring, each scenario must pass 3 pings c1 → c2; a scenario that cannot "
        "be built or fails this check is reported as failed with the reason.",
    ]


def render(doc, image_prefix):
    """The report as Markdown; plots are linked as `<image_prefix>-<name>.png`."""
    mlist = metrics(doc["config"]["udp_sizes"])
    out = [f"# nvo benchmark: {doc['mode']} run of {doc['started_utc']}", "",
           "## nvo relative to native routing, the kernel's VXLAN and Open vSwitch", "",
           "Ratios of medians measured in this run, range in brackets. For *higher is "
           "better* rows a ratio below 1 means nvo is slower; for *lower is better* rows a "
           "ratio above 1 means nvo takes longer or costs more. The last column is the "
           "kernel's own distance from native, for scale.", ""]
    out += _ratio_table(doc, mlist)
    out += ["", "How to read them:", "", *READING]
    out += encaps.render(doc, mlist)
    out += ["", "## Machine and noise", ""] + _machine(doc)
    out += ["", "## Scenarios", ""] + _scenarios(doc)
    out += ["", "Not measured in this run:", ""]
    absent = [] if any(k.startswith("ovs-") for k in doc["scenarios"]) else [OVS_ABSENT]
    if not any(k not in ("nvo", "nvo-ebpf") for k in encaps.measured(doc)):
        absent.append(PROFILES_ABSENT)
    absent.append(OFFLOADS_ABSENT)
    out += [f"- {what}: {why}." for what, why in absent + NOT_MEASURED]
    if doc.get("problems"):
        out += ["", "Problems during the run:", ""] + [f"- {p}" for p in doc["problems"]]
    out += ["", "## Figures", "",
            "Median (min–max, ± half the spread) over the repetitions.", ""]
    out += _figures(doc, mlist)
    out += ["", "UDP: what the sender offered and the share that did not arrive (medians):",
            ""] + _udp_detail(doc)
    out += ["", "nvod's memory:", ""] + _memory(doc)
    if doc.get("plots"):
        out += ["", "## Plots", ""]
        out += [f"![{name}]({image_prefix}-{name}.png)" for name in doc["plots"]]
    elif doc.get("plots_missing"):
        out += ["", f"No plots: {doc['plots_missing']}."]
    out += ["", "## Method", ""] + _method(doc)
    return "\n".join(out) + "\n"
