/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The maps. Sizes here are placeholders: nvod sets every max_entries at load from the same
 * limits as the userspace pipeline's tables (crates/ebpf/src/limits.rs), so no map is larger
 * or smaller than the table it mirrors. Hash maps that can grow large are not preallocated.
 */
#ifndef NVO_MAPS_H
#define NVO_MAPS_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nvo_config);
} config SEC(".maps");

/* Outer UDP source ports, network order: entry entropy % config.entropy_ports. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NVO_MAX_ENTROPY);
	__type(key, __u32);
	__type(value, __u16);
} entropy_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* ifindex */
	__type(value, struct nvo_port);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* port id */
	__type(value, struct nvo_port);
} port_out SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* vni */
	__type(value, struct nvo_network);
} networks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct nvo_net_index);
	__type(value, __u32); /* port id */
} net_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_net_index);
	__type(value, struct nvo_remote);
} flood SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32); /* IPv4 remote, network order */
	__type(value, struct nvo_nexthop);
} nexthops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_remote_key);
	__type(value, struct nvo_tmpl);
} remote_tmpl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_fdb_key);
	__type(value, struct nvo_fdb_entry);
} fdb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_neigh_key);
	__type(value, struct nvo_neigh);
} neighbors SEC(".maps");

/* How many more MACs the kernel may learn in a network before nvod has caught up: nvod sets it
 * to (max_learned - learned) after each batch of reports, the programs take one per new MAC. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32); /* network slot */
	__type(value, __s64);
} learn_budget SEC(".maps");

/* The remote VTEPs of each network nvod wrote (mirror/vteps.rs): the known set of a network
 * with accept_remotes known, and every remote's learning budget. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_vtep_key);
	__type(value, struct nvo_vtep);
} vteps SEC(".maps");

/* How many more MACs the kernel may learn on each port (by port id) before nvod has caught
 * up: max_learned_per_port − the port's learned entries. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __s64);
} port_budget SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_key);
	__type(value, struct nvo_key_target);
} keys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NVO_MAX_PROFILES);
	__type(key, __u32);
	__type(value, struct nvo_profile);
} profiles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NVO_MAX_PROFILES);
	__type(key, struct nvo_transport_key);
	__type(value, struct nvo_transport);
} transports SEC(".maps");

/* Multicast groups this node receives tunnel packets on (IPv4, network order). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u32);
} groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_relay_key);
	__type(value, struct nvo_relay);
} relays SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nvo_relay_config);
} relay_config SEC(".maps");

/* The overlay socket's source ports, network order: entry (flow & 0xffff) % relay_config.sports. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NVO_MAX_ENTROPY);
	__type(key, __u32);
	__type(value, __u16);
} relay_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NVO_DROP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} drop_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nvo_net_counters);
} net_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct nvo_port_counters);
} port_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nvo_node_counters);
} node_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} punts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} trace SEC(".maps");

/* `nvo monitor`: entry 0 holds NVO_MONITOR_ON_* bits (nvod sets them); nvo_monitor_event()
 * writes a record to `monitor` then, at most NVO_MONITOR_RATE a second per CPU (its
 * `monitor_bucket`), and counts in `monitor_lost` (per CPU) each one the ring had no room for
 * and each one beyond the rate. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} monitor_on SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} monitor SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2); /* NVO_MONITOR_LOST_RING, NVO_MONITOR_LOST_RATE */
	__type(key, __u32);
	__type(value, __u64);
} monitor_lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nvo_monitor_bucket);
} monitor_bucket SEC(".maps");

/* Where a frame is put together for a ring record: one entry per CPU (programs run with
 * migration disabled, so a CPU's entry is theirs until they return). */
struct nvo_scratch {
	union {
		struct nvo_punt punt;
		struct nvo_trace trace;
		struct nvo_monitor monitor;
		__u8 head[48];
	};
	__u8 data[NVO_PUNT_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32); /* CPU */
	__type(value, struct nvo_scratch);
} scratch SEC(".maps");

#endif
