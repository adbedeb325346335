#!/usr/bin/env bash
# The README's first command. Installs what nvo needs (scripts/setup.sh), builds it, and runs
# the README demo with `nvo lab` (examples/lab/demo.yaml): two tenants, red (VNI 100) and blue
# (VNI 200), that use the SAME subnet 10.0.0.0/24 on three hosts, each host a network namespace
# running nvod, each container a namespace of its own. It shows
#   1. red1 reaches red2 and red3 across the VXLAN overlay;
#   2. the tenants are isolated: 10.0.0.2 is red2 for red1 and blue2 for blue1 (by MAC address);
#   3. a 3-second iperf3 from red1 to red2;
#   4. h1's forwarding database for VNI 100 and its counters;
# then takes the lab down (a trap does it on any exit, Ctrl-C included) and ends with
# `nvo decode`, the tunnel layers of a capture holding every tunnel nvo speaks.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then exec sudo -E "$0" "$@"; fi
    echo "demo: run as root (network namespaces need it)" >&2
    exit 1
fi
export PATH="$PWD/target/release:$HOME/.cargo/bin:$PATH"
LAB=demo

say() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }
die() { printf 'demo: FAILED: %s\n' "$*" >&2; exit 1; }

scripts/setup.sh
say "building release binaries"
cargo build --release --quiet --bins

# Refuse rather than take down a lab someone else left up under the same name.
if nvo lab status "$LAB" >/dev/null 2>&1; then
    die "lab $LAB is already up; take it down first: target/release/nvo lab down $LAB"
fi
trap 'nvo lab down "$LAB" >/dev/null 2>&1 || true' EXIT

say "three hosts running nvod, two tenants with the same subnet"
show nvo lab up examples/lab/demo.yaml

say "red1 reaches red2 and red3 through VNI 100"
show nvo lab exec red1 -- ping -c 3 -W 2 10.0.0.2
show nvo lab exec red1 -- ping -c 3 -W 2 10.0.0.3

say "tenants are isolated: 10.0.0.2 is red2 for red1 and blue2 for blue1"
show nvo lab exec blue1 -- ping -c 2 -W 2 -q 10.0.0.2
mac() { nvo lab exec "$1" -- cat /sys/class/net/eth0/address; }
neigh() { nvo lab exec "$1" -- ip neigh show 10.0.0.2 dev eth0 | awk '{print $3}'; }
red2=$(mac red2) blue2=$(mac blue2)
show nvo lab exec red1 -- ip neigh show 10.0.0.2
show nvo lab exec blue1 -- ip neigh show 10.0.0.2
[ "$(neigh red1)" = "$red2" ] || die "red1's 10.0.0.2 is $(neigh red1), not red2's $red2"
[ "$(neigh blue1)" = "$blue2" ] || die "blue1's 10.0.0.2 is $(neigh blue1), not blue2's $blue2"
echo "red1 -> 10.0.0.2 = $red2 (red2);  blue1 -> 10.0.0.2 = $blue2 (blue2)"

say "3 seconds of TCP from red1 to red2"
if command -v iperf3 >/dev/null; then
    # One test (-1), in the background (-D) inside red2; `nvo lab down` stops it if it lingers.
    nvo lab exec red2 -- iperf3 -s -1 -D
    sleep 0.5
    show nvo lab exec red1 -- iperf3 -c 10.0.0.2 -t 3 -f m
else
    echo "(skipped: iperf3 is not installed; apt-get install iperf3)"
fi

say "what nvod on h1 knows: the FDB of VNI 100 and the data path's counters"
show nvo lab exec h1 -- nvo fdb show 100
show nvo lab exec h1 -- nvo counters

say "taking the lab down"
trap - EXIT
show nvo lab down "$LAB"

say "decoding a capture of every tunnel nvo speaks (made by scapy: tests/vectors/gen_scapy.py)"
# Captured first, then cut: `head` closing the pipe early must not fail the demo.
decoded=$(nvo decode samples/tunnels.pcap)
printf '$ nvo decode samples/tunnels.pcap | head\n'
printf '%s\n' "$decoded" | head
