#!/usr/bin/env bash
# Runs every fuzz target (parse -> emit -> parse, see fuzz/fuzz_targets/) for RUNS inputs each,
# then minimises its corpus in place so that the committed corpus stays small.
# Needs nightly Rust and cargo-fuzz (cargo install cargo-fuzz). CI does not run this script; it
# replays the committed corpora on stable Rust instead (crates/wire/tests/fuzz_corpus.rs).
#   scripts/fuzz.sh [RUNS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export PATH="$HOME/.cargo/bin:$PATH"
runs=${1:-5000000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t"
    echo "==> $t: $runs runs"
    cargo +nightly fuzz run "$t" "corpus/$t" -- -runs="$runs" -max_len=1024 2>&1 | grep -E '^(Done|#[0-9]+ +DONE)|ERROR|panicked' || true
    cargo +nightly fuzz cmin "$t" "corpus/$t" >/dev/null 2>&1
    echo "    corpus: $(ls "corpus/$t" | wc -l) files"
done
