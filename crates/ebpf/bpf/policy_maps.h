/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Identity policy's layouts and maps (issue 18, policy.h): nvod compiles each kernel network's
 * policy (nvo_policy::Policy, resolved by the pipeline) into them, from the same state the
 * userspace pipeline decides on; the programs write only the connection table and the
 * identities learned from GBP headers. crates/ebpf/src/layout.rs mirrors every struct.
 */
#ifndef NVO_POLICY_MAPS_H
#define NVO_POLICY_MAPS_H

#define NVO_MAX_RULES 4096     /* rules of one network the kernel scans (the pipeline's bound) */
#define NVO_RULE_PORTS 8       /* port ranges of one rule; more: userspace */
#define NVO_NET_POLICY 256     /* network flag: an identity policy filters it */
#define NVO_NET_GBP 512        /* network flag: its frames carry the group (VXLAN-GBP) */
#define NVO_PORT_GROUP_SHIFT 16 /* a port's group: nvo_port.flags >> 16 */

/* map pol_nets, by VNI */
struct nvo_pol_net {
	__u32 rules;           /* rules in pol_rules under this VNI, 0..NVO_MAX_RULES */
	__u32 flags;           /* NVO_POL_SELECT_ALL */
};
#define NVO_POL_SELECT_ALL 1   /* a rule's destination is `any`: every group is selected */

/* map pol_rules (and pol_rule_hits), by (VNI, rule index) */
struct nvo_rule_key {
	__u32 vni;
	__u32 index;
};

struct nvo_rule {
	__u8 flags;            /* NVO_RULE_* */
	__u8 proto;            /* IP protocol, unless NVO_RULE_ANY_PROTO */
	__u8 nports;           /* port ranges used (0: any port) */
	__u8 pad;
	__u16 ports[NVO_RULE_PORTS * 2]; /* lo, hi (host order), inclusive */
};
#define NVO_RULE_ALLOW 1
#define NVO_RULE_ANY_FROM 2
#define NVO_RULE_ANY_TO 4
#define NVO_RULE_ANY_PROTO 8

/* map pol_members: (VNI, rule, side, group) present when the rule names the group on that
 * side; side NVO_SIDE_SELECTED with rule 0xffff: the group is selected (default deny). */
struct nvo_member_key {
	__u32 vni;
	__u16 rule;
	__u8 side;
	__u8 pad;
	__u16 group;
	__u16 pad2;
};
#define NVO_SIDE_FROM 0
#define NVO_SIDE_TO 1
#define NVO_SIDE_SELECTED 2

/* An address of a network (maps pol_ids and pol_learned). family 4: the first 4 bytes. */
struct nvo_ident_key {
	__u32 vni;
	__u32 family;
	__u8 ip[16];
};

/* map pol_ids: what nvod knows of an address: its labels' group, an EVPN route's group. */
struct nvo_ident {
	__u16 label;
	__u16 evpn;
	__u32 flags;           /* NVO_IDENT_* */
};
#define NVO_IDENT_LABEL 1
#define NVO_IDENT_EVPN 2

/* map pol_flows (the connection table), keyed as nvo_policy::FlowKey. */
struct nvo_flow_key {
	__u32 vni;
	__u8 proto;
	__u8 family;
	__u16 sport;
	__u16 dport;
	__u16 pad;
	__u8 src[16];
	__u8 dst[16];
};

struct nvo_flow {
	__u64 last_ns;         /* bpf_ktime_get_ns of its last packet */
	__u64 idle_ns;         /* its timeout (nvo_policy::conntrack::timeout) */
};

/* Per network slot, per CPU: nvo_pipeline::policy::PolicyCounters but the rules' own and
 * nvod's own; src/pol_counters.rs generates the Rust side from one field list and checks it
 * against this struct, field for field and in order. */
struct nvo_pol_counters {
	__u64 allowed;
	__u64 denied;
	__u64 default_allowed;
	__u64 default_denied;
	__u64 tracked;
	__u64 sender_applied;
	__u64 unknown_destination;
	__u64 exempt;
	__u64 conntrack_full;
};

_Static_assert(sizeof(struct nvo_pol_net) == 8, "nvo_pol_net");
_Static_assert(sizeof(struct nvo_rule_key) == 8, "nvo_rule_key");
_Static_assert(sizeof(struct nvo_rule) == 36, "nvo_rule");
_Static_assert(sizeof(struct nvo_member_key) == 12, "nvo_member_key");
_Static_assert(sizeof(struct nvo_ident_key) == 24, "nvo_ident_key");
_Static_assert(sizeof(struct nvo_ident) == 8, "nvo_ident");
_Static_assert(sizeof(struct nvo_flow_key) == 44, "nvo_flow_key");
_Static_assert(sizeof(struct nvo_flow) == 16, "nvo_flow");
_Static_assert(sizeof(struct nvo_pol_counters) == 72, "nvo_pol_counters");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct nvo_pol_net);
} pol_nets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_rule_key);
	__type(value, struct nvo_rule);
} pol_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_rule_key);
	__type(value, __u64);
} pol_rule_hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 262144);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_member_key);
	__type(value, __u8);
} pol_members SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct nvo_ident_key);
	__type(value, struct nvo_ident);
} pol_ids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct nvo_ident_key);
	__type(value, __u32);
} pol_learned SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 262144);
	__type(key, struct nvo_flow_key);
	__type(value, struct nvo_flow);
} pol_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32); /* network slot */
	__type(value, struct nvo_pol_counters);
} pol_counters SEC(".maps");

/* Where the policy functions keep a packet's flow key and an address key: off the stack, which
 * the underlay program's frame leaves little of (programs run with migration disabled, so a
 * CPU's entry is theirs until they return). */
struct nvo_pol_scratch {
	struct nvo_flow_key key;
	__u32 closing;
	struct nvo_ident_key ident;
	struct nvo_flow_key rev;   /* `key` the other way */
	struct nvo_rule_key rule;
	struct nvo_member_key member;
	struct nvo_event event;    /* an identity report being put together */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nvo_pol_scratch);
} pol_scratch SEC(".maps");

#endif
