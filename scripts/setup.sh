#!/usr/bin/env bash
# Installs everything nvo's demo and tests need on a Debian machine, idempotently:
# Debian packages (tshark, scapy, iproute2, nftables for STT, a C toolchain, clang and the libbpf
# headers for the eBPF datapath, libpcap-dev for `nvo capture`'s filters, bpftool to look at it,
# prometheus and promtool for the metrics tests, containernetworking-plugins, Go, containerd and
# busybox-static for the CNI tests, chromium for the status page's test, run headless, etcd-server,
# etcd-client for cluster mode's etcd test cluster, protobuf-compiler and libprotobuf-dev for the
# etcd-client crate's build: it runs protoc on etcd's .proto files, which import protobuf's own
# google/protobuf/descriptor.proto, shipped in libprotobuf-dev, not with protoc), cnitool
# (the CNI project's client, built with Debian's Go) and the Rust components (rustfmt, clippy).
# Safe to run again: it installs only what is missing and says what it did.
# `scripts/setup.sh --fuzz` installs instead what fuzzing needs (nightly Rust, cargo-fuzz).
set -euo pipefail

APT_PACKAGES=(tshark python3-scapy python3-pytest python3-matplotlib iproute2 iperf3 ethtool iputils-ping tcpdump nftables build-essential pkg-config ca-certificates openvswitch-switch frr gobgpd clang llvm libbpf-dev linux-libc-dev libpcap-dev bpftool prometheus containernetworking-plugins golang-go containerd busybox-static chromium etcd-server etcd-client protobuf-compiler libprotobuf-dev)

say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# `setup.sh --fuzz`: only what scripts/fuzz.sh needs — rustup's nightly toolchain and cargo-fuzz,
# for the user who runs it (no root, no Debian packages). The plain setup and CI skip this:
# compiling cargo-fuzz takes minutes, and CI replays the corpora on stable instead.
if [ "${1:-}" = "--fuzz" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
    command -v rustup >/dev/null || die "fuzzing needs rustup (https://rustup.rs) for a nightly toolchain"
    if rustup toolchain list | grep -q '^nightly'; then
        say "nightly toolchain present"
    else
        say "installing the nightly toolchain (libFuzzer's sanitizer flags need it)"
        rustup toolchain install nightly --profile minimal
    fi
    if cargo fuzz --version >/dev/null 2>&1; then
        say "$(cargo fuzz --version) present"
    else
        say "installing cargo-fuzz from crates.io"
        cargo install cargo-fuzz --locked
    fi
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then exec sudo -E "$0" "$@"; fi
    die "run as root (apt-get and network namespaces need it)"
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # tshark asks whether non-root users may capture; the answer does not matter for nvo.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Debian's prometheus package enables a system server listening on :9090 of every address;
    # the tests start their own inside namespaces, so a server this script brought in is
    # stopped and disabled (one the host had before is left alone).
    if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
    # containerd likewise: the CNI test runs its own, with a private configuration.
    if [[ " ${missing[*]} " == *" containerd "* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now containerd >/dev/null 2>&1 || true
    fi
    # etcd-server likewise enables a system etcd on localhost:2379; the cluster tests run their
    # own three members in namespaces, so one this script brought in is stopped and disabled.
    if [[ " ${missing[*]} " == *" etcd-server "* ]] && [ -d /run/systemd/system ]; then
        systemctl disable --now etcd >/dev/null 2>&1 || true
    fi
else
    say "Debian packages present"
fi

# cnitool, the CNI project's reference client (tests/e2e/test_cni.py drives nvo-cni with it): not
# packaged by Debian, so built from its module with Debian's Go (GOTOOLCHAIN=local: no toolchain
# download) into /usr/local/bin.
if command -v cnitool >/dev/null; then
    say "cnitool present"
else
    say "building cnitool v1.1.2 with Debian's Go"
    gotmp=$(mktemp -d)
    GOTOOLCHAIN=local GOBIN=/usr/local/bin GOPATH="$gotmp/gopath" GOCACHE="$gotmp/cache" \
        /usr/bin/go install github.com/containernetworking/cni/cnitool@v1.1.2 \
        || { chmod -R u+w "$gotmp"; rm -rf "$gotmp"; die "go install of cnitool failed (is the Go module proxy reachable?)"; }
    chmod -R u+w "$gotmp"; rm -rf "$gotmp"
fi

# Rust: rustup's stable toolchain, as on the project's machines. Debian's own rustc is too old
# for the workspace (rust-version in Cargo.toml); Debian 13 and later package rustup itself.
export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null; then
    if ! command -v rustup >/dev/null; then
        say "installing rustup from Debian"
        apt-get install -y -qq rustup >/dev/null 2>&1 || die "no cargo and no rustup package: install Rust with rustup (https://rustup.rs), then run this again"
    fi
    rustup default stable >/dev/null
fi
if command -v rustup >/dev/null; then
    for c in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$c" || { say "adding rust component $c"; rustup component add "$c"; }
    done
fi
command -v cargo-clippy >/dev/null || die "clippy is missing: rustup component add clippy"
command -v rustfmt >/dev/null || die "rustfmt is missing: rustup component add rustfmt"

/usr/bin/python3 -c 'import scapy' 2>/dev/null || die "python3-scapy installed but /usr/bin/python3 cannot import scapy"
command -v tshark >/dev/null || die "tshark installed but not on PATH"
command -v clang >/dev/null || die "clang installed but not on PATH (the eBPF programs are compiled with it)"
command -v promtool >/dev/null || die "prometheus installed but promtool is not on PATH (the metrics tests lint nvod's output with it)"
[ -x /usr/lib/cni/host-local ] || die "containernetworking-plugins installed but /usr/lib/cni/host-local is missing"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || die "etcd-server/etcd-client installed but etcd or etcdctl is not on PATH (tests/e2e/test_cluster.py runs them)"
command -v protoc >/dev/null || die "protobuf-compiler installed but protoc is not on PATH (the etcd-client crate's build needs it)"
command -v chromium >/dev/null || die "chromium installed but not on PATH (tests/e2e/test_ui.py loads the status page in it, headless)"
[ -f /usr/include/bpf/bpf_helpers.h ] || die "libbpf-dev installed but /usr/include/bpf/bpf_helpers.h is missing"
[ -f /usr/include/google/protobuf/descriptor.proto ] || die "libprotobuf-dev installed but /usr/include/google/protobuf/descriptor.proto is missing (the etcd-client crate's build needs it)"
say "ready: $(cargo --version), $(tshark --version 2>/dev/null | head -1), scapy $(/usr/bin/python3 -c 'import scapy; print(scapy.__version__)')"
