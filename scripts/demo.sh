#!/usr/bin/env bash
# The README's first command: installs what nvo needs, builds it, and decodes a capture that holds
# every tunnel nvo speaks (made by scapy: tests/vectors/gen_scapy.py), as text and then as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
scripts/setup.sh
cargo build --release --quiet --bin nvo
echo
echo "\$ nvo decode samples/tunnels.pcap"
target/release/nvo decode samples/tunnels.pcap
echo
echo "\$ nvo decode -o json samples/tunnels.pcap   (first packet)"
target/release/nvo -o json decode samples/tunnels.pcap | /usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["packets"][0], indent=1))'
