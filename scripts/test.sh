#!/usr/bin/env bash
# Runs the whole test suite: the README's second command, and what CI runs (.ci/run).
#   1. dependencies (scripts/setup.sh, idempotent)
#   2. the scapy byte vectors are regenerated and must equal the committed ones
#   3. cargo fmt --check and cargo clippy -D warnings; no two files of a crate import each other
#      and no file is over 800 lines without a reason (scripts/check_imports.py)
#   4. cargo test: unit, scapy vectors, tshark round trips, property tests, fuzz corpus replay,
#      nvod and nvo-io tests in network namespaces
#   5. end-to-end tests (tests/e2e, pytest): labs of namespaces with nvod and the kernel's VXLAN,
#      twice: every nvod on the kernel datapath (eBPF), then every nvod on the userspace one;
#      each run ends with its 15 slowest tests (pytest --durations), where to look for time
# Needs root: the namespace tests are part of the suite, not skipped.
# Each step prints its name; the first failure stops the run and says which step broke.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }
fail() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || { echo "scripts/test.sh: run as root (the suite builds network namespaces)" >&2; exit 1; }

step "setup"
scripts/setup.sh || fail "scripts/setup.sh could not install the dependencies"

step "scapy vectors are reproducible"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tests/vectors/gen_scapy.py "$tmp/vectors" "$tmp/tunnels.pcap" || fail "tests/vectors/gen_scapy.py crashed"
/usr/bin/python3 tests/vectors/gen_ila_scapy.py "$tmp/vectors" || fail "tests/vectors/gen_ila_scapy.py crashed"
/usr/bin/python3 tests/vectors/gen_siit_scapy.py "$tmp/vectors" || fail "tests/vectors/gen_siit_scapy.py crashed"
for f in "$tmp"/vectors/*.json; do
    cmp -s "$f" "tests/vectors/$(basename "$f")" ||
        fail "tests/vectors/$(basename "$f") differs from what gen_scapy.py writes now; regenerate with tests/vectors/gen_scapy.py or gen_ila_scapy.py (see their headers)"
done
cmp -s "$tmp/tunnels.pcap" samples/tunnels.pcap || fail "samples/tunnels.pcap differs from what gen_scapy.py writes now"
echo "vectors match"

step "cargo fmt --check"
cargo fmt --all -- --check || fail "formatting: run cargo fmt"
cargo fmt --manifest-path fuzz/Cargo.toml -- --check || fail "formatting of fuzz targets: run cargo fmt --manifest-path fuzz/Cargo.toml"

step "module structure: no two-file import circles, no file over 800 lines"
/usr/bin/python3 scripts/check_imports.py . || fail "module structure (see above)"

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings || fail "clippy"

step "fuzz targets build"
cargo check --manifest-path fuzz/Cargo.toml --bins --quiet || fail "fuzz targets do not build"

step "cargo test"
if ! cargo test --workspace --locked 2>&1 | tee "$tmp/test.log"; then
    fail "cargo test (see the failures above)"
fi

cargo build --workspace --bins --locked --quiet || fail "building nvo and nvod for the end-to-end tests"
ip netns list | awk '{print $1}' | sort > "$tmp/netns.before"
: > "$tmp/e2e.counts"
for datapath in ebpf userspace; do
    step "end-to-end tests (tests/e2e) with every nvod on the $datapath datapath"
    # Hosts whose topology chooses a datapath keep it (tests/e2e/test_datapath.py mixes them).
    if ! NVO_LAB_DATAPATH=$datapath /usr/bin/python3 -m pytest tests/e2e -q -p no:cacheprovider --durations=15 2>&1 | tee "$tmp/e2e.$datapath.log"; then
        fail "end-to-end tests on the $datapath datapath (see the failures above)"
    fi
    grep -Eo '[0-9]+ passed' "$tmp/e2e.$datapath.log" | tail -1 | awk '{print $1+0}' >> "$tmp/e2e.counts"
    leftover=$(ip netns list | awk '{print $1}' | sort | comm -13 "$tmp/netns.before" - | tr '\n' ' ')
    [ -z "$leftover" ] || fail "namespaces left behind by the tests ($datapath): $leftover"
done

passed=$(grep -Eo '^test result: .* ([0-9]+) passed' "$tmp/test.log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
e2e=$(awk '{s+=$1} END {print s+0}' "$tmp/e2e.counts")
printf '\nall steps passed\n%s passed, 0 failed\n' "$((passed + e2e))"
