"""Do two runs agree? (`bench/run.py --compare A.json B.json`)

A report states the noise of each ratio as its range: from the least to the most favourable
pairing of the two figures' repetitions, min/max .. max/min (stats.ratio). Two runs *agree on a
ratio* when those two stated ranges overlap, max(lo_A, lo_B) <= min(hi_A, hi_B): there is a
value both runs' repetitions allow. They agree overall when they agree on every ratio that
either of them has. A ratio one run has and the other lacks (a scenario failed or was not
selected in one of them) is a disagreement; a ratio neither has is not counted, and neither
is a metric that only one run's configuration measures (other UDP payload sizes).

The ratios are recomputed from each run's figures with today's pairs (stats.ALL_PAIRS), so runs
written by an older harness compare on the pairs they can.
"""

import json
import pathlib

from . import stats


def load(path):
    doc = json.loads(pathlib.Path(path).read_text())
    if "figures" not in doc:
        raise ValueError(f"{path} holds no figures (not a bench/run.py results file)")
    return doc


def _fmt(r):
    return f"{r['ratio']:.2f} ({r['lo']:.2f}–{r['hi']:.2f})" if r else "—"


def verdict(ra, rb):
    """("agree" | "DIFFER" | "MISSING" | None, change of the median in %)."""
    if not ra and not rb:
        return None, None
    if not ra or not rb:
        return "MISSING", None
    change = (rb["ratio"] - ra["ratio"]) / ra["ratio"] * 100 if ra["ratio"] else None
    overlap = max(ra["lo"], rb["lo"]) <= min(ra["hi"], rb["hi"])
    return ("agree" if overlap else "DIFFER"), change


def compare(path_a, path_b):
    """Prints the comparison table; returns (agreeing, counted): counted ratios and how many
    of them agree."""
    a, b = load(path_a), load(path_b)
    ra, rb = stats.ratios(a["figures"]), stats.ratios(b["figures"])
    sizes = [s for s in a["config"]["udp_sizes"] if s in b["config"]["udp_sizes"]]
    print(f"A: {path_a} ({a['mode']}, {a['started_utc']}, {a['config']['reps']} reps)")
    print(f"B: {path_b} ({b['mode']}, {b['started_utc']}, {b['config']['reps']} reps)")
    print("Agree = the two ratios' stated ranges (min/max .. max/min of the repetitions) "
          "overlap.\n")
    head = f"{'metric':36} {'ratio':22} {'A: median (range)':22} {'B: median (range)':22} " \
           f"{'B vs A':>7}  verdict"
    print(head)
    print("-" * len(head))
    counted = agreeing = 0
    for m in (m for m in stats.metrics(sizes) if m.ratio):
        for num, den in stats.ALL_PAIRS:
            key = f"{num}/{den}"
            x, y = ra.get(m.key, {}).get(key), rb.get(m.key, {}).get(key)
            v, change = verdict(x, y)
            if v is None:
                continue
            counted += 1
            agreeing += v == "agree"
            ch = f"{change:+.0f} %" if change is not None else ""
            print(f"{m.label:36} {num + ' ÷ ' + den:22} {_fmt(x):22} {_fmt(y):22} {ch:>7}  {v}")
    only = sorted(set(a["config"]["udp_sizes"]) ^ set(b["config"]["udp_sizes"]))
    if only:
        print(f"\nnot compared: UDP payload sizes {only} are measured by only one of the runs")
    for name, doc in (("A", a), ("B", b)):
        bad = [f"{k} ({v['status']}: {v['reason']})" for k, v in doc.get("scenarios", {}).items()
               if v["status"] != "ok"]
        if bad:
            print(f"{name}: scenarios not measured: {'; '.join(bad)}")
    print(f"\n{agreeing} of {counted} ratios agree: "
          + ("the runs AGREE" if counted and agreeing == counted else "the runs DISAGREE"))
    return agreeing, counted


__all__ = ["compare", "verdict"]
