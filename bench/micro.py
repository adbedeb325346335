#!/usr/bin/env python3
"""Runs the pipeline's microbenchmarks and writes a summary (issue 4, "Microbenchmarks").

    bench/micro.py [--filter REGEX] [--out DIR]

Runs `cargo bench -p nvo-pipeline --bench pipeline --bench memory -- --noplot`: the criterion
benchmarks of crates/pipeline/benches/pipeline.rs (FDB lookup at 1k, 100k and 1M entries, hit
and miss; encapsulation and decapsulation of 64- and 1400-byte frames; learning a new MAC) and
the memory benchmark of crates/pipeline/benches/memory.rs (bytes per FDB entry, allocations per
frame).
About a minute of measurement on two cores, plus the build.

Writes DIR/micro-latest.json and DIR/micro-latest.md (DIR defaults to bench/results):
  {"date", "machine": {...}, "git": {...}, "command",
   "benchmarks": [{"id", "what", "median_ns", "median_ci95_ns": [lo, hi], "mean_ns",
                   "mpps"}],               # ns per frame; mpps = 1000 / median_ns
   "fdb_memory": [{"entries", "bytes", "bytes_per_entry", "peak_bytes",
                   "peak_bytes_per_entry"}],
   "allocations_per_frame": {"fdb_hit", "fdb_miss", "encap", "decap"}}

The figures come from criterion's own files (target/criterion/<id>/new/estimates.json) of the
benchmarks this run measured, and from the memory benchmark's `NVO_BENCH {json}` line. Exits
non-zero, writing nothing, when cargo fails or a figure is missing.
"""

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# What each benchmark measures, for the report; ids not listed here are reported without.
WHAT = {
    "fdb/hit": "from_port, known unicast, dst uniform over {n} learned MACs -> Deliver",
    "fdb/miss": "from_port, unknown dst, {n} learned MACs -> flood: 1 port + 2 remotes",
    "encap": "from_port -> Encap to a known remote, {n}-byte frame",
    "decap": "from_underlay, VXLAN header + {n}-byte frame -> Deliver",
    "learn/new": "from_port from a MAC never seen: insert into a warm FDB",
}


def run_cargo(criterion_args):
    """Runs the benchmarks, echoing their output; returns it, or exits on failure."""
    # The bench targets by name: with `--benches` or none, cargo also runs the library's libtest
    # harness, which refuses criterion's options.
    cmd = ["cargo", "bench", "-p", "nvo-pipeline", "--bench", "pipeline", "--bench", "memory",
           "--", "--noplot", *criterion_args]
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    if proc.wait() != 0:
        sys.exit(f"micro.py: `{' '.join(cmd)}` exited with {proc.returncode}; see its output above")
    return cmd, "".join(lines)


def target_dir():
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    return Path(json.loads(meta.stdout)["target_directory"])


def describe(full_id):
    for prefix, text in WHAT.items():
        if full_id == prefix or full_id.startswith(prefix + "/"):
            return text.format(n=full_id[len(prefix) + 1:])
    return ""


def criterion_results(root, since):
    """The benchmarks criterion wrote under `root` after `since` (a time.time() value)."""
    results = []
    for meta_path in sorted(root.glob("**/new/benchmark.json")):
        estimates_path = meta_path.with_name("estimates.json")
        if not estimates_path.exists() or estimates_path.stat().st_mtime < since:
            continue  # left over from an earlier run, or from a benchmark since renamed
        full_id = json.loads(meta_path.read_text())["full_id"]
        est = json.loads(estimates_path.read_text())
        median = est["median"]
        ci = median["confidence_interval"]
        results.append({
            "id": full_id,
            "what": describe(full_id),
            "median_ns": round(median["point_estimate"], 2),
            "median_ci95_ns": [round(ci["lower_bound"], 2), round(ci["upper_bound"], 2)],
            "mean_ns": round(est["mean"]["point_estimate"], 2),
            "mpps": round(1000.0 / median["point_estimate"], 2),
        })
    order = {prefix: i for i, prefix in enumerate(WHAT)}

    def key(r):
        group = next((p for p in WHAT if r["id"].startswith(p)), "")
        size = re.findall(r"(\d+)(k|M)?$", r["id"])
        scale = {"": 1, "k": 1e3, "M": 1e6}
        n = float(size[0][0]) * scale[size[0][1]] if size else 0
        return (order.get(group, len(order)), n, r["id"])

    return sorted(results, key=key)


def memory_results(output):
    for line in output.splitlines():
        if line.startswith("NVO_BENCH "):
            return json.loads(line[len("NVO_BENCH "):])
    sys.exit("micro.py: the memory benchmark printed no `NVO_BENCH {...}` line")


def machine():
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "kernel": platform.release(),
        "rustc": rustc,
    }


def git():
    def out(*args):
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()

    return {"commit": out("rev-parse", "HEAD"), "dirty": bool(out("status", "--porcelain"))}


def markdown(summary):
    m, g = summary["machine"], summary["git"]
    lines = [
        "# Pipeline microbenchmarks",
        "",
        f"{summary['date']} on {m['cpu']} ({m['cores']} cores), Linux {m['kernel']}, "
        f"{m['rustc']}; commit {g['commit'][:12]}{' with local changes' if g['dirty'] else ''}. "
        f"Written by bench/micro.py (`{' '.join(summary['command'])}`).",
        "",
        "Nanoseconds per frame through `nvo_pipeline::Pipeline` (criterion: median of the "
        "samples and its 95% confidence interval; a quick run, 2 s per benchmark). The FDB "
        "lookups draw the destination uniformly from every learned MAC, so the large tables "
        "are measured out of cache.",
        "",
        "| benchmark | what | median ns | 95% CI ns | Mpps |",
        "|---|---|---:|---:|---:|",
    ]
    for b in summary["benchmarks"]:
        lo, hi = b["median_ci95_ns"]
        lines.append(
            f"| `{b['id']}` | {b['what']} | {b['median_ns']:.1f} | {lo:.1f}–{hi:.1f} "
            f"| {b['mpps']:.1f} |"
        )
    lines += [
        "",
        "FDB memory: live heap after learning n MACs minus before (sizes asked of the allocator), "
        "and the peak while the table grows.",
        "",
        "| learned entries | bytes | bytes per entry | peak bytes per entry |",
        "|---:|---:|---:|---:|",
    ]
    for f in summary["fdb_memory"]:
        lines.append(
            f"| {f['entries']:,} | {f['bytes']:,} | {f['bytes_per_entry']:.1f} "
            f"| {f['peak_bytes_per_entry']:.1f} |"
        )
    lines += ["", "Allocations per frame once warm (the data plane's contract is zero): "]
    lines[-1] += ", ".join(
        f"{path} {n:g}" for path, n in sorted(summary["allocations_per_frame"].items())
    ) + "."
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", help="only the criterion benchmarks whose id matches REGEX")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results",
                        help="where micro-latest.json and .md go (default: bench/results)")
    args = parser.parse_args()

    since = time.time()
    cmd, output = run_cargo([args.filter] if args.filter else [])
    benchmarks = criterion_results(target_dir() / "criterion", since)
    if not benchmarks:
        sys.exit("micro.py: criterion wrote no estimates in this run; was every benchmark filtered out?")
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "git": git(),
        "command": cmd,
        "benchmarks": benchmarks,
        **memory_results(output),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "micro-latest.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "micro-latest.md").write_text(markdown(summary))
    print(f"\nwrote {args.out / 'micro-latest.json'} and {args.out / 'micro-latest.md'}")


if __name__ == "__main__":
    main()
