# nvo: the README commands and the benchmark harness. Every target but fuzz needs root.
#   make test        the whole test suite (scripts/test.sh)
#   make demo        the README demo (scripts/demo.sh)
#   make fuzz        every fuzz target for 10M inputs, corpora minimised, a table of the figures
#                    (scripts/fuzz.sh; needs no root; installs nightly and cargo-fuzz on first use)
#   make bench       quick benchmark: nvo (eBPF and userspace datapaths) against native routing,
#                    kernel VXLAN and Open vSwitch (~6 min)
#   make bench-full  full benchmark: 5 repetitions, longer runs, 8 UDP payload sizes (~35 min)
#   make bench-encaps   every encapsulation profile, both datapaths, against native and kernel VXLAN (~16 min)
#   make bench-offloads STT against VXLAN with TSO/GSO/GRO toggled, 5 repetitions (~5 min)
#   make bench-relay    relaying on a middle host: nvo against the kernel's VXLAN + bridge (~12 min)
#   make bench-ila      ILA against VXLAN over an IPv6 underlay on the same two nvods: single-stream
#                       TCP, CPU per Gbit, bytes of overhead per packet, as ratios (~2 min); its
#                       own target, not a section of make bench: ILA needs an IPv6 underlay and
#                       nvod's userspace path, which no default scenario has, and two more
#                       measured networks would push make bench past its ~6 min
#   make bench-evpn     EVPN control plane: 10k and 100k MAC routes via an FRR route reflector to
#                       nvod hosts and an FRR VTEP: convergence time and memory per route (~3 min)
#   make bench-api      API write latency with 10, 1000 and 4000 networks (~2 min after the build)
#   make bench-cni      nvo-cni ADD/DEL latency over 100 containers, both datapaths (~1 min after the build)
#   make bench-cluster  cluster mode: etcd write -> traffic on 3 hosts (median of 10), and 1 000
#                       networks through etcd: convergence time and RSS per nvod (~2 min after the build)
#   make bench-monitor  forwarding rate with nvo monitor + /metrics scraping on vs off, both
#                       datapaths, as ratios (~4 min after the build)
#   make bench-flow     the flow table's classifier: ns per lookup with 1, 100 and 10 000 rules
#                       (one mask, and every rule its own mask), key extraction (~1 min; no root)
# Results go to bench/results/ (latest.md is the newest report).

PYTHON ?= /usr/bin/python3

.PHONY: test demo fuzz bench bench-full bench-encaps bench-offloads bench-relay

test:
	scripts/test.sh

demo:
	scripts/demo.sh

fuzz:
	scripts/fuzz.sh

bench:
	$(PYTHON) bench/run.py --quick

bench-full:
	$(PYTHON) bench/run.py --full

bench-encaps:
	$(PYTHON) bench/run.py --quick --scenarios native,kernel,encaps

bench-offloads:
	$(PYTHON) bench/run.py --offloads --reps 5

bench-relay:
	$(PYTHON) bench/run.py --relay

.PHONY: bench-ila
bench-ila:
	$(PYTHON) bench/run.py --ila --reps 5

.PHONY: bench-evpn
bench-evpn:
	$(PYTHON) bench/evpn_scale.py

.PHONY: bench-api
bench-api:
	$(PYTHON) bench/api_writes.py

.PHONY: bench-cni
bench-cni:
	$(PYTHON) bench/cni_add.py

.PHONY: bench-cluster
bench-cluster:
	$(PYTHON) bench/cluster_converge.py

.PHONY: bench-monitor
bench-monitor:
	$(PYTHON) bench/monitor_overhead.py

.PHONY: bench-flow
bench-flow:
	cargo bench -p nvo-flow --bench classify -- --noplot
