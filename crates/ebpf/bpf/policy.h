/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Identity policy in the kernel (issue 18): nvo_pipeline::policy's egress and ingress, step for
 * step, over the maps of policy_maps.h.
 *
 *  egress (nvo_port, after learning)            ingress (nvo_underlay, after learning)
 *   not IP, ND, ICMP error → pass (exempt),      not IP, ND, ICMP error → pass (exempt)
 *     tag: the port's group, no A bit            tag's group ≠ 0 → pol_learned (LRU)
 *   tracked (pol_flows, either way) → pass, A    tracked → pass
 *   dst: labelled (pol_ids), else the port its   tag with the A bit → pass, tracked
 *     MAC is on, else learned (no A bit);        src: tag, else label, learned, EVPN, 0
 *     unknown → pass, no A bit                   dst: label, else the port its MAC is on, 0
 *   rules (first deny, else first allow, else    rules → deny: policy_denied;
 *     default) → deny: policy_denied;              allow: tracked
 *     allow: tracked, A unless dst was learned
 *
 * nvod's part (nvo_port punts before it counts or learns, pol_egress_probe): a flood of an IP
 * frame whose destination's identity is not this host's own knowledge — the pipeline then
 * decides each local copy with the identity of the port it goes to (flood_filter).
 *
 * The rule scan runs once per new flow (bpf_loop over a global function: the verifier checks
 * the rule test once, not per iteration — docs/design/ebpf.md, "Load time").
 */
#ifndef NVO_POLICY_H
#define NVO_POLICY_H

#define IPPROTO_ICMP 1

/* A decision (pol_decide): bit 31 allow, bits 24..25 who decided, bits 0..15 the rule. */
#define DEC_ALLOW (1U << 31)
#define DEC_RULE (0U << 24)
#define DEC_DEFAULT_DENY (1U << 24)
#define DEC_DEFAULT_ALLOW (2U << 24)
#define DEC_KIND(d) (((d) >> 24) & 3)

/* A tag (what pol_egress returns when the frame passes): bit 31 set, A bit, the group. */
#define TAG_ON (1U << 31)
#define TAG_APPLIED (1U << 16)
#define POL_DENY (-1)
#define POL_PUNT (-2)

#define pol_flow nvo_pol_scratch

static __always_inline struct nvo_pol_scratch *pol_scratch_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&pol_scratch, &zero);
}

static __always_inline __u16 l4_word(struct __sk_buff *skb, __u32 l4, __u32 l4_len, __u32 at)
{
	__u16 w;
	if (at + 2 > l4_len || load_be16(skb, l4 + at, &w))
		return 0;
	return w;
}

/* nvo_pipeline::policy::flow: 1 and `f` filled when the packet at `l3` (of `ethertype`) is
 * subject to policy; 0 when it is not (not IP, a header that does not check, ND, ICMP
 * errors). */
NVO_FUNC int pol_flow_parse(struct __sk_buff *skb, __u32 l3, __u32 ethertype, __u32 vni,
			    struct pol_flow *f)
{
	if (!f)
		return 0;
	__builtin_memset(&f->key, 0, sizeof(f->key));
	f->closing = 0;
	f->key.vni = vni;
	__u32 len = skb->len;
	if (l3 > len || l3 > 0xffff)
		return 0;
	__u32 avail = len - l3;
	__u32 l4, l4_len, first = 1;
	__u8 proto;
	if (ethertype == ETH_P_IP) {
		__u8 ip[12];
		if (avail < 20 || bpf_skb_load_bytes(skb, l3, ip, 12) ||
		    bpf_skb_load_bytes(skb, l3 + 12, f->key.src, 4) ||
		    bpf_skb_load_bytes(skb, l3 + 16, f->key.dst, 4))
			return 0;
		/* smoltcp's Ipv4Packet::check_len */
		__u32 hl = (ip[0] & 0xf) * 4;
		__u32 total = ((__u32)ip[2] << 8) | ip[3];
		if (avail < hl || hl > total || avail < total || hl < 20)
			return 0;
		first = !(ip[6] & 0x1f) && !ip[7];
		proto = ip[9];
		f->key.family = 4;
		l4 = l3 + hl;
		l4_len = total - hl;
	} else if (ethertype == ETH_P_IPV6) {
		__u8 ip[8];
		if (avail < 40 || bpf_skb_load_bytes(skb, l3, ip, 8) ||
		    bpf_skb_load_bytes(skb, l3 + 8, f->key.src, 16) ||
		    bpf_skb_load_bytes(skb, l3 + 24, f->key.dst, 16))
			return 0;
		__u32 plen = ((__u32)ip[4] << 8) | ip[5];
		if (avail < 40 + plen)
			return 0;
		proto = ip[6];
		f->key.family = 6;
		l4 = l3 + 40;
		l4_len = plen;
	} else {
		return 0;
	}
	f->key.proto = proto;
	__u8 type = 0;
	if ((proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) &&
	    (l4_len == 0 || bpf_skb_load_bytes(skb, l4, &type, 1)))
		return 0;
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == 132) && first) {
		f->key.sport = l4_word(skb, l4, l4_len, 0);
		f->key.dport = l4_word(skb, l4, l4_len, 2);
		__u8 flags;
		if (proto == IPPROTO_TCP && l4_len > 13 && !bpf_skb_load_bytes(skb, l4 + 13, &flags, 1))
			f->closing = (flags & 0x05) != 0; /* FIN or RST */
	} else if (proto == IPPROTO_ICMP) {
		/* Echo: one flow, keyed by the identifier both ways; errors are never held up. */
		if (type == 0 || type == 8)
			f->key.sport = f->key.dport = l4_word(skb, l4, l4_len, 4);
		else if (type == 3 || type == 4 || type == 5 || type == 11 || type == 12)
			return 0;
	} else if (proto == IPPROTO_ICMPV6) {
		if (type == 128 || type == 129)
			f->key.sport = f->key.dport = l4_word(skb, l4, l4_len, 4);
		else if ((type >= 1 && type <= 4) || (type >= 133 && type <= 137))
			return 0;
	}
	return 1;
}

static __always_inline __u64 ct_timeout(__u8 proto, int closing)
{
	if (proto == IPPROTO_TCP)
		return closing ? 10000000000ULL : 3600000000000ULL;
	if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6)
		return 30000000000ULL;
	return 60000000000ULL;
}

/* Conntrack::lookup: whether the flow (either way) is tracked and not idle past its timeout;
 * refreshes it, and a FIN or RST shortens its timeout. */
NVO_FUNC int ct_lookup(struct pol_flow *f)
{
	if (!f)
		return 0;
	struct nvo_flow *e = bpf_map_lookup_elem(&pol_flows, &f->key);
	if (!e) {
		struct nvo_flow_key *r = &f->rev;
		*r = f->key;
		__builtin_memcpy(r->src, f->key.dst, 16);
		__builtin_memcpy(r->dst, f->key.src, 16);
		r->sport = f->key.dport;
		r->dport = f->key.sport;
		e = bpf_map_lookup_elem(&pol_flows, r);
	}
	if (!e)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (now - e->last_ns >= e->idle_ns)
		return 0;
	e->last_ns = now;
	if (f->closing) {
		__u64 t = ct_timeout(f->key.proto, 1);
		if (t < e->idle_ns)
			e->idle_ns = t;
	}
	return 1;
}

/* Conntrack::insert; 0, or -1 when the table refused. The table is an LRU: when full it
 * forgets the least recently used flow where the pipeline's refuses the new one. */
static __always_inline int ct_insert(const struct pol_flow *f)
{
	struct nvo_flow e = { .last_ns = bpf_ktime_get_ns(), .idle_ns = ct_timeout(f->key.proto, 0) };
	return bpf_map_update_elem(&pol_flows, &f->key, &e, BPF_ANY) ? -1 : 0;
}

/* Whether `rule` of `vni` names `group` on `side`; the key is built in this CPU's scratch
 * (`s`), as every key of the rule scan: its frames are two calls below the underlay
 * program's, whose stack leaves them little. */
static __always_inline int is_member(struct nvo_pol_scratch *s, __u32 vni, __u32 rule, __u32 side,
				     __u32 group)
{
	struct nvo_member_key *k = &s->member;
	k->vni = vni;
	k->rule = rule;
	k->side = side;
	k->pad = 0;
	k->group = group;
	k->pad2 = 0;
	return bpf_map_lookup_elem(&pol_members, k) != 0;
}

/* Rule `i` of `vni` against a packet: 0 no match, 1 an allow matches, 2 a deny matches, 3 no
 * such rule. */
NVO_FUNC int rule_match(__u32 vni, __u32 i, __u32 from_to, __u32 proto_port)
{
	struct nvo_pol_scratch *s = pol_scratch_get();
	if (!s)
		return 3;
	s->rule.vni = vni;
	s->rule.index = i;
	struct nvo_rule *r = bpf_map_lookup_elem(&pol_rules, &s->rule);
	if (!r)
		return 3;
	__u32 from = from_to >> 16, to = from_to & 0xffff;
	__u32 proto = proto_port >> 16, port = proto_port & 0xffff;
	if (!(r->flags & NVO_RULE_ANY_PROTO) && r->proto != proto)
		return 0;
	if (r->nports) {
		int hit = 0;
#pragma unroll
		for (int p = 0; p < NVO_RULE_PORTS; p++)
			if (p < r->nports && r->ports[2 * p] <= port && port <= r->ports[2 * p + 1])
				hit = 1;
		if (!hit)
			return 0;
	}
	if (!(r->flags & NVO_RULE_ANY_FROM) && !is_member(s, vni, i, NVO_SIDE_FROM, from))
		return 0;
	if (!(r->flags & NVO_RULE_ANY_TO) && !is_member(s, vni, i, NVO_SIDE_TO, to))
		return 0;
	return (r->flags & NVO_RULE_ALLOW) ? 1 : 2;
}

struct rule_scan {
	__u32 vni;
	__u32 from_to;
	__u32 proto_port;
	__s32 allow_at;
	__s32 deny_at;
};

static long rule_scan_cb(__u32 i, void *data)
{
	struct rule_scan *s = data;
	int m = rule_match(s->vni, i, s->from_to, s->proto_port);
	if (m == 2) {
		s->deny_at = i; /* deny wins over every allow: the first one decides */
		return 1;
	}
	if (m == 1 && s->allow_at < 0)
		s->allow_at = i;
	return m == 3;
}

/* Policy::decide. */
NVO_FUNC __u32 pol_decide(__u32 vni, __u32 from, __u32 to, __u32 proto_port)
{
	struct nvo_pol_net *pn = bpf_map_lookup_elem(&pol_nets, &vni);
	if (!pn)
		return DEC_ALLOW | DEC_DEFAULT_ALLOW;
	struct rule_scan s = {
		.vni = vni,
		.from_to = (from << 16) | (to & 0xffff),
		.proto_port = proto_port,
		.allow_at = -1,
		.deny_at = -1,
	};
	__u32 n = pn->rules < NVO_MAX_RULES ? pn->rules : NVO_MAX_RULES;
	__u32 select_all = pn->flags & NVO_POL_SELECT_ALL;
	bpf_loop(n, rule_scan_cb, &s, 0);
	if (s.deny_at >= 0)
		return DEC_RULE | (s.deny_at & 0xffff);
	if (s.allow_at >= 0)
		return DEC_ALLOW | DEC_RULE | (s.allow_at & 0xffff);
	struct nvo_pol_scratch *ps = pol_scratch_get();
	if (select_all || (ps && is_member(ps, vni, 0xffff, NVO_SIDE_SELECTED, to)))
		return DEC_DEFAULT_DENY;
	return DEC_ALLOW | DEC_DEFAULT_ALLOW;
}

static __always_inline struct nvo_pol_counters *pol_count(__u32 slot)
{
	return bpf_map_lookup_elem(&pol_counters, &slot);
}

/* policy.rs `count`: the decision's counters. */
static __always_inline void count_decision(struct nvo_pol_counters *c, __u32 vni, __u32 d)
{
	if (!c)
		return;
	__u32 kind = DEC_KIND(d);
	if (kind == 1) {
		c->default_denied += 1;
	} else if (kind == 2) {
		c->default_allowed += 1;
	} else {
		struct nvo_rule_key k = { .vni = vni, .index = d & 0xffff };
		__u64 *hits = bpf_map_lookup_elem(&pol_rule_hits, &k);
		if (hits)
			*hits += 1;
		if (d & DEC_ALLOW)
			c->allowed += 1;
		else
			c->denied += 1;
	}
}

/* The group of local port `port_id` (0: none). */
static __always_inline __u32 port_group(__u32 port_id)
{
	struct nvo_port *p = bpf_map_lookup_elem(&port_out, &port_id);
	return p ? p->flags >> NVO_PORT_GROUP_SHIFT : 0;
}

static __always_inline void ident_key(struct nvo_ident_key *k, __u32 vni, const struct pol_flow *f,
				      int src)
{
	__builtin_memset(k, 0, sizeof(*k));
	k->vni = vni;
	k->family = f->key.family;
	__builtin_memcpy(k->ip, src ? f->key.src : f->key.dst, 16);
}

/* The destination's group by the MAC the frame goes to, when a local port has it: 1 and
 * `*group`, else 0. */
static __always_inline int dst_port_group(struct __sk_buff *skb, __u32 eth_off, __u32 vni,
					  __u32 *group)
{
	struct nvo_fdb_key k = { .vni = vni };
	if (bpf_skb_load_bytes(skb, eth_off, k.mac, 6))
		return 0;
	struct nvo_fdb_entry *e = bpf_map_lookup_elem(&fdb, &k);
	if (!e || e->dest != NVO_DEST_PORT)
		return 0;
	*group = port_group(e->port_id);
	return 1;
}

/* Policies::egress for a frame of local port group `group` in network `vni` (counters at
 * `slot`): POL_DENY, or the tag to send it with (TAG_ON | A | group). */
NVO_FUNC int pol_egress(struct __sk_buff *skb, __u32 vni, __u32 slot, __u32 group, __u32 ethertype)
{
	struct pol_flow *f = pol_scratch_get();
	struct nvo_pol_counters *c = pol_count(slot);
	if (!f || !pol_flow_parse(skb, ETH_HLEN, ethertype, vni, f)) {
		if (c)
			c->exempt += 1;
		return TAG_ON | group;
	}
	if (ct_lookup(f)) {
		if (c)
			c->tracked += 1;
		return TAG_ON | TAG_APPLIED | group;
	}
	/* Labels and local ports are this host's own knowledge: a decision on them is final (A
	 * bit). An identity learned from the wire only lets the sender drop early. */
	struct nvo_ident_key *ik = &f->ident;
	ident_key(ik, vni, f, 0);
	struct nvo_ident *id = bpf_map_lookup_elem(&pol_ids, ik);
	__u32 dst = 0, authoritative = 1;
	if (id && (id->flags & NVO_IDENT_LABEL)) {
		dst = id->label;
	} else if (!dst_port_group(skb, 0, vni, &dst)) {
		__u32 *learned = bpf_map_lookup_elem(&pol_learned, ik);
		if (!learned) {
			if (c)
				c->unknown_destination += 1;
			return TAG_ON | group;
		}
		dst = *learned;
		authoritative = 0;
	}
	__u32 d = pol_decide(vni, group, dst, ((__u32)f->key.proto << 16) | f->key.dport);
	count_decision(c, vni, d);
	if (!(d & DEC_ALLOW))
		return POL_DENY;
	if (ct_insert(f) && c)
		c->conntrack_full += 1;
	return TAG_ON | (authoritative ? TAG_APPLIED : 0) | group;
}

/* Whether nvod must take this frame, before anything is counted or learned: a flood (its
 * destination MAC unknown: `dst_known` 0) of an IP frame subject to policy, not tracked, whose
 * destination's identity is not a label here — the pipeline decides each local copy on its
 * own (flood_filter). The lookups refresh nothing but the flow's idle time. */
NVO_FUNC int pol_egress_punts(struct __sk_buff *skb, __u32 vni, __u32 ethertype, __u32 dst_known)
{
	struct pol_flow *f = pol_scratch_get();
	if (dst_known || !f || !pol_flow_parse(skb, ETH_HLEN, ethertype, vni, f))
		return 0;
	if (ct_lookup(f))
		return 0;
	ident_key(&f->ident, vni, f, 0);
	struct nvo_ident *id = bpf_map_lookup_elem(&pol_ids, &f->ident);
	return !(id && (id->flags & NVO_IDENT_LABEL));
}

/* The ipcache: where the source's identity (the address in this CPU's scratch `ident`) came
 * from the wire, remember it, and tell nvod, whose pipeline decides the frames handed to it
 * with the same table. A function of its own for the underlay program's stack. */
NVO_FUNC int pol_learn(__u32 vni, __u32 group)
{
	struct pol_flow *f = pol_scratch_get();
	if (!f)
		return 0;
	__u32 *known = bpf_map_lookup_elem(&pol_learned, &f->ident);
	if (known && *known == group)
		return 0;
	__u32 g = group;
	bpf_map_update_elem(&pol_learned, &f->ident, &g, BPF_ANY);
	struct nvo_event *ev = &f->event;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->kind = NVO_EVENT_IDENTITY;
	ev->vni = vni;
	ev->dest = f->key.family;
	ev->port_id = group;
	__builtin_memcpy(ev->remote, f->key.src, 16);
	if (bpf_ringbuf_output(&events, ev, sizeof(*ev), 0)) {
		struct nvo_node_counters *nc = node_count();
		if (nc)
			nc->events_lost += 1;
	}
	return 1;
}

/* What pol_ingress leaves to pol_verdict: bit 32, the source's group << 16, the destination's. */
#define POL_DECIDE (1ULL << 32)

/* Policies::ingress up to the rule scan, for the inner frame at `inner_off` (an untagged
 * Ethernet frame) of network `vni`, which carried `tag` (TAG_ON | A | group when the profile
 * has one): 0 to pass, or POL_DECIDE with the two groups for pol_verdict. Two functions, not
 * one, for the stack: the underlay program's frame leaves room for two levels of calls. */
NVO_FUNC __u64 pol_ingress(struct __sk_buff *skb, __u32 inner_off, __u32 vni, __u32 slot, __u32 tag)
{
	struct pol_flow *f = pol_scratch_get();
	struct nvo_pol_counters *c = pol_count(slot);
	__u16 ethertype;
	if (!f || inner_off > 0xffff || load_be16(skb, inner_off + 12, &ethertype) ||
	    !pol_flow_parse(skb, inner_off + ETH_HLEN, ethertype, vni, f)) {
		if (c)
			c->exempt += 1;
		return 0;
	}
	__u32 carried = (tag & TAG_ON) ? tag & 0xffff : 0;
	struct nvo_ident_key *k = &f->ident;
	ident_key(k, vni, f, 1);
	if (carried)
		pol_learn(vni, carried);
	if (ct_lookup(f)) {
		if (c)
			c->tracked += 1;
		return 0;
	}
	if (carried && (tag & TAG_APPLIED)) {
		if (c)
			c->sender_applied += 1;
		if (ct_insert(f) && c)
			c->conntrack_full += 1;
		return 0;
	}
	__u32 src = carried;
	if (!carried) {
		struct nvo_ident *id = bpf_map_lookup_elem(&pol_ids, k);
		__u32 *learned = bpf_map_lookup_elem(&pol_learned, k);
		if (id && (id->flags & NVO_IDENT_LABEL))
			src = id->label;
		else if (learned)
			src = *learned;
		else if (id && (id->flags & NVO_IDENT_EVPN))
			src = id->evpn;
	}
	ident_key(k, vni, f, 0);
	struct nvo_ident *did = bpf_map_lookup_elem(&pol_ids, k);
	__u32 dst = 0;
	if (did && (did->flags & NVO_IDENT_LABEL))
		dst = did->label;
	else
		dst_port_group(skb, inner_off, vni, &dst);
	return POL_DECIDE | ((__u64)(src & 0xffff) << 16) | (dst & 0xffff);
}

/* The rules' decision on the flow pol_ingress left in this CPU's scratch, counted; an allowed
 * flow is tracked. 0 to pass, POL_DENY. */
NVO_FUNC int pol_verdict(__u32 vni, __u32 slot, __u32 from, __u32 to)
{
	struct pol_flow *f = pol_scratch_get();
	if (!f)
		return 0;
	struct nvo_pol_counters *c = pol_count(slot);
	__u32 d = pol_decide(vni, from, to, ((__u32)f->key.proto << 16) | f->key.dport);
	count_decision(c, vni, d);
	if (!(d & DEC_ALLOW))
		return POL_DENY;
	if (ct_insert(f) && c)
		c->conntrack_full += 1;
	return 0;
}

#endif
