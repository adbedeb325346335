#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/; each calls one check of nvo-wire-check or
# nvo-fuzz-check) for RUNS inputs, one target at a time, then minimises its corpus in place so
# that the committed corpus stays small, and writes a markdown table of what each run did:
# executions, exec/s, libFuzzer's coverage (cov: edges, ft: features), corpus files and bytes,
# wall time, and whether it found a crash (the input is then under fuzz/artifacts/TARGET/).
#
#   scripts/fuzz.sh [-r RUNS] [-t SECONDS] [-o REPORT] [--no-cmin] [TARGET...]
#     -r RUNS     inputs per target (default 10000000, or $RUNS)
#     -t SECONDS  stop a target after this long even if it has not reached RUNS (default: no limit)
#     -o REPORT   where the table goes (default fuzz/target/report.md); it is also printed
#     --no-cmin   keep the corpora as the run left them
#
# Needs nightly Rust and cargo-fuzz; the first run installs them (scripts/setup.sh --fuzz).
# CI does not run this script; it replays the committed corpora on stable Rust instead
# (crates/wire-check/tests/corpus.rs, crates/fuzz-check/tests/corpus.rs). docs/fuzzing.md has the
# figures of the last long run. Exit status 1 when a target crashed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

runs=${RUNS:-10000000}
report="$root/fuzz/target/report.md"
max_time=0
cmin=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        -r) runs="$2"; shift 2 ;;
        -t) max_time="$2"; shift 2 ;;
        -o) report="$(realpath -m "$2")"; shift 2 ;;
        --no-cmin) cmin=0; shift ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done

if ! cargo +nightly --version >/dev/null 2>&1 || ! cargo fuzz --version >/dev/null 2>&1; then
    "$root/scripts/setup.sh" --fuzz
fi

# Longest input per target: a tunnel header with its options fits in 1 KiB; a BGP message is at
# most 4096 bytes (RFC 4271 §4.1), and JSON, profile and topology documents get the same room.
max_len() {
    case "$1" in
        bgp_* | api_* | profile_* | lab_*) echo 4096 ;;
        *) echo 1024 ;;
    esac
}

# Release builds with debug assertions, so that an arithmetic overflow is a crash too.
build=(-O --debug-assertions)
cd "$root/fuzz"
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
mkdir -p "$(dirname "$report")" target/logs
rows=()
crashed=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    len=$(max_len "$t")
    log="target/logs/$t.log"
    echo "==> $t: $runs runs, max_len $len (log: fuzz/$log)"
    cargo +nightly fuzz build "${build[@]}" "$t" >/dev/null 2>&1 || cargo +nightly fuzz build "${build[@]}" "$t"
    start=$(date +%s)
    result=ok
    cargo +nightly fuzz run "${build[@]}" "$t" "corpus/$t" -- -runs="$runs" -max_len="$len" -max_total_time="$max_time" \
        -print_final_stats=1 >"$log" 2>&1 || result=CRASH
    secs=$(( $(date +%s) - start ))
    done_line=$(grep -E '^#[0-9]+' "$log" | grep -E 'cov: ' | tail -1 || true)
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$done_line")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$done_line")
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
    rate=$(sed -nE 's/^stat::average_exec_per_sec: *([0-9]+)/\1/p' "$log" | tail -1)
    # libFuzzer divides by whole seconds, and says 0 for a run under one.
    [ "${rate:-0}" != 0 ] || rate=$(( ${execs:-0} / (secs > 0 ? secs : 1) ))
    if [ "$result" = CRASH ]; then
        crashed=1
        grep -E 'panicked|ERROR|Test unit written' "$log" | head -5 | sed 's/^/    /'
    fi
    if [ "$cmin" = 1 ] && [ "$result" = ok ]; then
        # Edges only (no hit counts), smallest cover: a few hundred files, not thousands.
        cargo +nightly fuzz cmin "${build[@]}" "$t" "corpus/$t" -- -max_len="$len" \
            -use_counters=0 -set_cover_merge=1 >"target/logs/$t.cmin.log" 2>&1 ||
            echo "    cmin failed: see fuzz/target/logs/$t.cmin.log"
    fi
    files=$(find "corpus/$t" -type f | wc -l)
    bytes=$(find "corpus/$t" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
    row="| $t | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | $files | $bytes | ${secs} | $result |"
    echo "    $row"
    rows+=("$row")
done

{
    echo "Fuzz run of $(date -u +%Y-%m-%d) on $(nproc) cores, $(cargo +nightly fuzz --version 2>/dev/null),"
    echo "$(rustc +nightly --version), -runs=$runs$([ "$max_time" = 0 ] || echo " or -max_total_time=$max_time") per target; corpus after $([ "$cmin" = 1 ] && echo "cmin" || echo "the run")."
    echo
    echo "| target | executions | exec/s | cov | ft | corpus files | corpus bytes | seconds | result |"
    echo "|---|--:|--:|--:|--:|--:|--:|--:|---|"
    printf '%s\n' "${rows[@]}"
} >"$report"
echo
cat "$report"
exit "$crashed"
