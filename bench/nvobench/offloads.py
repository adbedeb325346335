"""STT against VXLAN with offloads toggled: which offload makes the difference?

STT's case (draft-davie-stt) is that a TCP-like outer header lets a sender hand whole TSO
frames (up to 64 KiB) to the tunnel and a receiver take them back whole, so the per-packet
cost is paid once per 64 KiB instead of once per MTU. The question the STT paper leaves is
which half of that matters: transmit segmentation (TSO/GSO) or receive coalescing (LRO/GRO).
This study measures single-stream TCP (iperf3 c1 → c2) over nvod's `stt` and `vxlan`
profiles, each in its own lab (the `nvo` and `nvo-stt` scenarios), under a matrix of toggles
applied to the built lab and undone after each measurement:

- all-on: nothing changed (containers send TSO frames, nvod keeps them whole and delivers
  whole frames with their MSS to the receiving container, the underlay's offloads on);
- sender-tso-off: c1's eth0 `tso off gso off`: the sender's stack cuts MTU-sized segments,
  so STT gets MTU-sized frames to carry;
- rx-no-large: c2's port re-added with `--no-large-frames`: nvod cuts a large frame before
  delivering it (no GRO-like coalesced frame toward the receiving container);
- underlay-off: the hosts' eth0 `gro off gso off tso off tx-udp-segmentation off`: nothing
  crosses the underlay bigger than its MTU and nothing is coalesced on the way in;
- all-off: all three at once.

Besides throughput and CPU per Gbit, each measurement reads the interface counters around it:
the mean size of what c1 sent, of what crossed the underlay (h1's eth0) and of what c2
received. A mean far above the MTU is a large (TSO/GSO/GRO) frame passed as one unit.
"""

import json
import statistics

from . import measure, stats
from .sh import CommandFailed, in_ns, run

PROFILES = ["nvo-stt", "nvo"]
LABEL = {"nvo-stt": "STT", "nvo": "VXLAN"}
# ethtool -K names and the names `ethtool -k` prints them under.
FEATURE = {"tso": "tcp-segmentation-offload", "gso": "generic-segmentation-offload",
           "gro": "generic-receive-offload", "tx-udp-segmentation": "tx-udp-segmentation"}
UNDERLAY_OFF = {"gro": "off", "gso": "off", "tso": "off", "tx-udp-segmentation": "off"}
SENDER_OFF = {"tso": "off", "gso": "off"}


class Config:
    """One row of the matrix: ethtool changes per (node, device) and whether c2's port is
    re-added with --no-large-frames."""

    def __init__(self, key, label, what, ethtool=(), rx_no_large=False):
        self.key, self.label, self.what = key, label, what
        self.ethtool, self.rx_no_large = list(ethtool), rx_no_large


CONFIGS = [
    Config("all-on", "(a) all on", "defaults"),
    Config("sender-tso-off", "(b) sender TSO/GSO off", "c1 eth0: tso off gso off",
           [("c1", SENDER_OFF)]),
    Config("rx-no-large", "(c) receiver large frames off",
           "c2's port on h2: --no-large-frames", rx_no_large=True),
    Config("underlay-off", "(d) underlay GRO/GSO/TSO off",
           "h1, h2 eth0: gro off gso off tso off tx-udp-segmentation off",
           [("h1", UNDERLAY_OFF), ("h2", UNDERLAY_OFF)]),
    Config("all-off", "(e) (b)+(c)+(d)", "all of the above",
           [("c1", SENDER_OFF), ("h1", UNDERLAY_OFF), ("h2", UNDERLAY_OFF)], rx_no_large=True),
]
FIELDS = [("gbps", "Gbit/s"), ("cpu_s_per_gbit", "CPU s/Gbit"),
          ("c1_tx_bytes", "c1 sent, B/frame"), ("ul_tx_bytes", "underlay, B/packet"),
          ("c2_rx_bytes", "c2 got, B/frame"), ("retransmits", "retransmits")]


def features(ns, dev="eth0"):
    """{ethtool -K name: "on" | "off"} of the features FEATURE names."""
    out = run(in_ns(ns, "ethtool", "-k", dev)).stdout
    state = {}
    for line in out.splitlines():
        name, _, rest = line.strip().partition(":")
        for short, long in FEATURE.items():
            if name == long and rest.split():
                state[short] = rest.split()[0]
    return state


def set_features(ns, changes, dev="eth0"):
    args = [x for name, value in changes.items() for x in (name, value)]
    run(in_ns(ns, "ethtool", "-K", dev, *args))


def readd_port(sc, inv, large_frames):
    """Re-adds c2's port on h2, with or without --no-large-frames."""
    nvo = [inv.nvo, "--socket", sc.socket("h2"), "port"]
    run(nvo + ["del", "c-c2"])
    run(nvo + ["add", "c-c2", "--vni", "100"] + ([] if large_frames else ["--no-large-frames"]))


def apply(sc, inv, cfg):
    """Applies `cfg` to scenario `sc`; returns (undo steps, what the devices now say)."""
    undo, state = [], {}
    for node, changes in cfg.ethtool:
        ns = sc.ns(node)
        before = features(ns)
        undo.append((ns, {k: before[k] for k in changes if k in before}))
        set_features(ns, changes)
        state[node] = features(ns)
    if cfg.rx_no_large:
        undo.append(("port", None))
        readd_port(sc, inv, large_frames=False)
    return undo, state


def revert(sc, inv, undo):
    for ns, changes in reversed(undo):
        if ns == "port":
            readd_port(sc, inv, large_frames=True)
        elif changes:
            set_features(ns, changes)


def counters(ns, dev="eth0"):
    link = json.loads(run(["ip", "-n", ns, "-j", "-s", "link", "show", dev]).stdout)[0]
    s = link["stats64"]
    return {d: (s[d]["bytes"], s[d]["packets"]) for d in ("tx", "rx")}


def _mean_size(a, b, direction):
    db, dp = (b[direction][0] - a[direction][0]), (b[direction][1] - a[direction][1])
    return db / dp if dp else None


def one(sc, seconds):
    """One iperf3 single-stream run with the counters around it."""
    where = {"c1": (sc.ns("c1"), "tx"), "ul": (sc.ns("h1"), "tx"), "c2": (sc.ns("c2"), "rx")}
    before = {k: counters(ns) for k, (ns, _) in where.items()}
    sample = measure.tcp(sc, 1, seconds)
    after = {k: counters(ns) for k, (ns, _) in where.items()}
    for k, (_, d) in where.items():
        sample[f"{k}_{d}_bytes"] = _mean_size(before[k], after[k], d)
    return sample


def study(scs, inv, cfg, doc, log):
    """The matrix, `cfg["reps"]` times, the configuration order rotating per repetition."""
    for rep in range(cfg["reps"]):
        order = CONFIGS[rep % len(CONFIGS):] + CONFIGS[:rep % len(CONFIGS)]
        log(f"offloads: repetition {rep + 1}/{cfg['reps']}")
        for c in order:
            for sc in scs:
                _measure_one(sc, inv, c, cfg, doc, log)


def _measure_one(sc, inv, c, cfg, doc, log):
    what = f"{sc.key} {c.key}"
    undo = []
    try:
        undo, state = apply(sc, inv, c)
        doc["states"].setdefault(c.key, {})[sc.key] = state
        why = measure.sanity(sc)
        if why:
            raise measure.MeasureFailed(why)
        sample, err = measure.safely(what, one, sc, cfg["tcp_seconds"])
    except (CommandFailed, measure.MeasureFailed, OSError, ValueError, KeyError) as e:
        sample, err = None, f"{what}: {e}"
    finally:
        try:
            revert(sc, inv, undo)
        except (CommandFailed, OSError) as e:
            doc["problems"].append(f"{what}: undoing the toggles failed: {e}")
    if err:
        doc["problems"].append(err)
        log(f"  {err}")
        return
    doc["samples"].setdefault(c.key, {}).setdefault(sc.key, []).append(sample)
    log(f"  {sc.key:8} {c.key:15} " + ", ".join(
        f"{k}={v:.4g}" for k, v in sample.items() if isinstance(v, float)))


def figures(doc):
    """{config: {profile: {field: summary}}}."""
    return {c: {p: {f: stats.summarise([s.get(f) for s in ss]) for f, _ in FIELDS}
                for p, ss in by_p.items()} for c, by_p in doc["samples"].items()}


__all__ = ["CONFIGS", "PROFILES", "figures", "study"]
