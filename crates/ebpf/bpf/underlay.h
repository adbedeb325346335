/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A packet from the underlay (tc ingress of the locator's interface): the engine's decap and the
 * pipeline's from_decapsulated, knowing no protocol.
 *
 *   IPv4 to the locator (or a joined group), not a fragment, on a transport some profile uses?
 *     ─ no → left to the host stack
 *   an overlay packet for another node the kernel relays (relay.h) → relayed
 *   the transport's profiles in receive order (the engine's Engine::decap, step for step):
 *     matches hold? header length, payload, key → keys: a kernel network / nvod's (pass)
 *     errors: malformed_vxlan, vxlan_flags (VXLAN's port), malformed_tunnel, unknown_vni
 *   network uses that profile and carries Ethernet? ─ no → profile_mismatch
 *   remote known (NVO_NET_KNOWN_ONLY: a `vteps` entry marked known)? ─ no → unknown_remote
 *   inner ethernet? ─ no → malformed_frame   source unicast? ─ no → invalid_source_mac
 *   learn src → the outer source address (unless the header says not to: GBP's D bit)
 *   identity policy (policy.h; the GBP group and A bit when the profile carries them):
 *     deny → policy_denied
 *   dst in fdb: port → decapsulated into it · remote or node → remote_to_remote
 *   else a decapsulated copy to every port; none → no_destination
 */
#ifndef NVO_UNDERLAY_H
#define NVO_UNDERLAY_H

#define MATCH_HOLDS 0
#define MATCH_FAILS 1
#define MATCH_SHORT 2

/* The engine's DecapError, in its order of precedence. */
#define DECAP_NO_MATCH 1
#define DECAP_TRUNCATED 2
#define DECAP_UNKNOWN_PAYLOAD 3
#define DECAP_UNKNOWN_KEY 4

/* The first bytes of a tunnel header, as much as the kernel path reads of it. */
struct hdr_buf {
	__u8 b[NVO_MAX_TMPL];
	__u32 avail; /* bytes of the packet from the header on (may exceed the buffer) */
};

static __always_inline int match_test(const struct nvo_match *m, const struct hdr_buf *h)
{
	__u32 off = m->offset;
	__u32 len = m->len;
	if (len > NVO_MATCH_LEN || off + len > h->avail)
		return MATCH_SHORT;
	if (off + len > NVO_MAX_TMPL)
		return MATCH_FAILS; /* nvod never compiles such a match */
#pragma unroll
	for (int i = 0; i < NVO_MATCH_LEN; i++) {
		if (i < (int)len) {
			__u32 at = (off + i) & (NVO_MAX_TMPL - 1);
			if ((h->b[at] & m->mask[i]) != m->value[i])
				return MATCH_FAILS;
		}
	}
	return MATCH_HOLDS;
}

/* A big-endian field of `len` (1..8) bytes at `off`; -1 when short. */
static __always_inline int field_read(const struct hdr_buf *h, __u32 off, __u32 len, __u64 *out)
{
	__u64 v = 0;
	if (len == 0 || len > 8 || off + len > h->avail || off + len > NVO_MAX_TMPL)
		return -1;
#pragma unroll
	for (int i = 0; i < 8; i++)
		if (i < (int)len)
			v = (v << 8) | h->b[(off + i) & (NVO_MAX_TMPL - 1)];
	*out = v;
	return 0;
}

struct decap {
	__u32 profile;
	__u32 header_len;
	__u32 target;     /* NVO_KEY_* */
	__u32 vni;
	int ethernet;     /* the payload is an Ethernet frame */
	int dont_learn;
};

/* What one profile makes of a header (decap_profile's return value). */
#define PROFILE_FAILS 0     /* invalid, or a match fails: the next profile */
#define PROFILE_SHORT 1     /* a match reaches past the packet: the next profile */
#define PROFILE_NO_KEY 2    /* matched, but no network has its key: the next profile */
#define PROFILE_PASS 3      /* matched, and its packets of this kind are nvod's */
#define PROFILE_FOUND 4     /* matched, with a key: `d` filled in */
#define PROFILE_ERROR 8     /* + DECAP_*: matched, and the packet fails at once */

/* One profile of the transport's order: Engine::decap's loop body.
 *
 * Global (NVO_FUNC, not static) for the verifier's sake: it checks this function once, on its
 * own, with every argument unknown. Inlined into the bpf_loop callback, its unrolled matches
 * were re-verified for every iteration the verifier explores and for every combination of the
 * caller's flags (matched, shorted, ...), which made nvo_underlay the slowest program to load
 * by far (docs/design/ebpf.md, "Load time"). Its arguments are what a global function may take:
 * pointers to sized memory (checked for NULL, as the verifier requires) and scalars. */
NVO_FUNC int decap_profile(const struct hdr_buf *h, __u32 id, struct decap *d)
{
	if (!h || !d)
		return PROFILE_FAILS;
	struct nvo_profile *p = bpf_map_lookup_elem(&profiles, &id);
	if (!p || !(p->flags & NVO_PROF_VALID))
		return PROFILE_FAILS;
	int res = MATCH_HOLDS;
	__u32 n = p->match_count;
#pragma unroll
	for (int m = 0; m < NVO_MAX_MATCHES; m++) {
		if (m < (int)n && res == MATCH_HOLDS)
			res = match_test(&p->matches[m], h);
	}
	if (res == MATCH_FAILS)
		return PROFILE_FAILS;
	if (res == MATCH_SHORT)
		return PROFILE_SHORT;
	if ((p->flags & NVO_PROF_KERNEL_MATCH) && match_test(&p->kernel, h) != MATCH_HOLDS) {
		/* The profile's packets of this kind are nvod's whatever their key (the overlay's
		 * node-routed packets: nvod relays or delivers them). */
		return PROFILE_PASS;
	}
	__u32 hl = p->min_len;
	if (p->flags & NVO_PROF_LEN_FIELD) {
		__u32 off = p->len_offset;
		if (off >= h->avail || off >= NVO_MAX_TMPL)
			return PROFILE_ERROR + DECAP_TRUNCATED;
		hl = p->len_base + (h->b[off & (NVO_MAX_TMPL - 1)] & p->len_mask) * p->len_scale;
	}
	if (hl < p->min_len || h->avail < hl)
		return PROFILE_ERROR + DECAP_TRUNCATED;
	int ethernet = 1;
	if (p->flags & NVO_PROF_PAYLOAD_FIELD) {
		__u64 v;
		if (field_read(h, p->payload_offset, p->payload_len, &v))
			return PROFILE_ERROR + DECAP_UNKNOWN_PAYLOAD;
		ethernet = v == p->payload_ethernet;
		int known = ethernet || ((p->payload_known_mask & 1) && v == p->payload_known[0]) ||
			    ((p->payload_known_mask & 2) && v == p->payload_known[1]) ||
			    ((p->payload_known_mask & 4) && v == p->payload_known[2]);
		if (!known)
			return PROFILE_ERROR + DECAP_UNKNOWN_PAYLOAD;
	} else {
		ethernet = p->payload_ethernet != 0;
	}
	struct nvo_key key = { .profile = id };
	if (p->flags & NVO_PROF_KEY) {
		__u32 off = p->key_offset, len = p->key_len;
		if (len == 0 || len > NVO_KEY_LEN || off + len > h->avail || off + len > NVO_MAX_TMPL)
			return PROFILE_ERROR + DECAP_TRUNCATED;
		key.len = len;
#pragma unroll
		for (int k = 0; k < NVO_KEY_LEN; k++)
			if (k < (int)len)
				key.bytes[k] = h->b[(off + k) & (NVO_MAX_TMPL - 1)];
	}
	struct nvo_key_target *t = bpf_map_lookup_elem(&keys, &key);
	if (!t)
		return PROFILE_NO_KEY;
	d->profile = id;
	d->header_len = hl;
	d->target = t->kind;
	d->vni = t->vni;
	d->ethernet = ethernet;
	d->dont_learn = (p->flags & NVO_PROF_DONT_LEARN) && match_test(&p->dont_learn, h) == MATCH_HOLDS;
	return PROFILE_FOUND;
}

struct decap_ctx {
	const struct hdr_buf *h;
	const struct nvo_transport *tr;
	struct decap *d;
	int matched;
	int shorted;
	int error;        /* DECAP_*, set when a matching profile fails the packet at once */
	int found;
	int pass;         /* a matching profile leaves this packet to nvod */
};

/* The transport's profiles in receive order, until one decides (bpf_loop's callback). */
static long decap_profile_cb(__u32 i, void *data)
{
	struct decap_ctx *c = data;
	__u32 id = c->tr->profiles[i & (NVO_MAX_ORDER - 1)];
	int r = decap_profile(c->h, id, c->d);
	switch (r) {
	case PROFILE_FAILS:
		return 0;
	case PROFILE_SHORT:
		c->shorted = 1;
		return 0;
	case PROFILE_NO_KEY:
		c->matched = 1;
		return 0;
	case PROFILE_PASS:
		c->matched = 1;
		c->pass = 1;
		return 1;
	case PROFILE_FOUND:
		c->matched = 1;
		c->found = 1;
		return 1;
	default:
		c->matched = 1;
		c->error = r - PROFILE_ERROR;
		return 1;
	}
}

/* The drop reason of a header no profile took (nvod's decap_drop: VXLAN keeps its own). */
static __always_inline __u32 decap_reason(int error, int vxlan)
{
	if (error == DECAP_UNKNOWN_KEY)
		return NVO_DROP_UNKNOWN_VNI;
	if (error == DECAP_TRUNCATED && vxlan)
		return NVO_DROP_MALFORMED_VXLAN;
	if (error == DECAP_NO_MATCH && vxlan)
		return NVO_DROP_VXLAN_FLAGS;
	return NVO_DROP_MALFORMED_TUNNEL;
}

/* Takes the outer headers off, leaving the inner frame (`inner_eth`: its first 14 bytes) at
 * the front: adjust_room removes everything behind the outer Ethernet header up to the end of
 * the inner one, which is then written over the outer. */
static __always_inline int decap_strip(struct __sk_buff *skb, __u32 inner_off, const __u8 *inner_eth)
{
	__u16 ethertype = ((__u16)inner_eth[12] << 8) | inner_eth[13];
	__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO;
	if (ethertype == ETH_P_IP)
		flags |= BPF_F_ADJ_ROOM_DECAP_L3_IPV4;
	else if (ethertype == ETH_P_IPV6)
		flags |= BPF_F_ADJ_ROOM_DECAP_L3_IPV6;
	if (bpf_skb_adjust_room(skb, -(__s32)inner_off, BPF_ADJ_ROOM_MAC, flags))
		return -1;
	return bpf_skb_store_bytes(skb, 0, inner_eth, ETH_HLEN, 0) ? -1 : 0;
}

/* Whether a GSO packet carries one inner frame (a TSO frame tunnelled whole, whose IP length
 * covers the rest of the packet) rather than several datagrams, each with a tunnel header. */
static __always_inline int one_frame(struct __sk_buff *skb, __u32 inner_off, __u16 inner_type)
{
	__u16 len;
	__u32 rest = skb->len - inner_off;
	if (inner_type == ETH_P_IP)
		return !load_be16(skb, inner_off + ETH_HLEN + 2, &len) && ETH_HLEN + len == rest;
	if (inner_type == ETH_P_IPV6)
		return !load_be16(skb, inner_off + ETH_HLEN + 4, &len) && ETH_HLEN + 40 + len == rest;
	return 0;
}

static __always_inline int underlay_in(struct __sk_buff *skb)
{
	struct nvo_config *cfg = node_config();
	__u8 eth[ETH_HLEN];
	__u8 ip[20];

	if (!cfg)
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, 0, eth, ETH_HLEN) || eth[12] != 0x08 || eth[13] != 0x00)
		return TC_ACT_OK;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, ip, 20) || ip[0] >> 4 != 4 || (ip[0] & 0xf) < 5)
		return TC_ACT_OK;
	/* Fragments go to the host stack, whose reassembly hands nvod's socket the datagram. */
	if ((ip[6] & 0x3f) || ip[7])
		return TC_ACT_OK;
	__u32 daddr, saddr;
	__builtin_memcpy(&saddr, ip + 12, 4);
	__builtin_memcpy(&daddr, ip + 16, 4);
	if (daddr != cfg->locator && !bpf_map_lookup_elem(&groups, &daddr))
		return TC_ACT_OK;

	__u32 l4 = ETH_HLEN + (ip[0] & 0xf) * 4;
	struct nvo_transport_key tk = {};
	__u32 hdr_off = l4;
	if (ip[9] == IPPROTO_UDP) {
		__u16 dport;
		if (load_be16(skb, l4 + 2, &dport))
			return TC_ACT_OK;
		tk.kind = NVO_TRANSPORT_UDP;
		tk.value = dport;
		hdr_off = l4 + 8;
		/* An overlay packet for another node: relayed here when nvo_relay (XDP) is not on
		 * this interface or left it to the stack (it decides the same way: then nvod's). */
		struct nvo_relay_config *rc = relay_config_get();
		int verdict;
		if (rc && rc->port == dport && relay_tc(skb, cfg, rc, &verdict))
			return verdict;
	} else {
		tk.kind = NVO_TRANSPORT_IP;
		tk.value = ip[9];
	}
	struct nvo_transport *tr = bpf_map_lookup_elem(&transports, &tk);
	if (!tr)
		return TC_ACT_OK;
	if (skb->len < hdr_off)
		return TC_ACT_OK;

	struct hdr_buf h = {};
	h.avail = skb->len - hdr_off;
	__u32 n = h.avail < NVO_MAX_TMPL ? h.avail : NVO_MAX_TMPL;
	if (n > 0 && bpf_skb_load_bytes(skb, hdr_off, h.b, n & (NVO_MAX_TMPL * 2 - 1)))
		return TC_ACT_OK;

	struct decap d = {};
	struct decap_ctx c = { .h = &h, .tr = tr, .d = &d };
	__u32 count = tr->count < NVO_MAX_ORDER ? tr->count : NVO_MAX_ORDER;
	bpf_loop(count, decap_profile_cb, &c, 0);
	struct nvo_node_counters *nc = node_count();
	if (c.pass) {
		if (nc)
			nc->passed += 1;
		set_verdict(skb, NVO_VERDICT_PASS, 0, 0);
		return TC_ACT_OK;
	}
	if (!c.found) {
		int error = c.error ? c.error
				    : c.matched ? DECAP_UNKNOWN_KEY
				    : c.shorted ? DECAP_TRUNCATED
						: DECAP_NO_MATCH;
		if (nc) {
			nc->rx_packets += 1;
			nc->rx_bytes += h.avail;
		}
		int vxlan = tr->flags & NVO_TRANSPORT_VXLAN;
		return drop(skb, decap_reason(error, vxlan), 0);
	}
	struct nvo_network *net = 0;
	__u32 vni = d.vni;
	if (d.target == NVO_KEY_LOCAL)
		net = bpf_map_lookup_elem(&networks, &vni);
	__u32 inner_off = hdr_off + d.header_len;
	__u8 inner[ETH_HLEN];
	int inner_ok = skb->len >= inner_off + ETH_HLEN &&
		       !bpf_skb_load_bytes(skb, inner_off, inner, ETH_HLEN);
	__u16 inner_type = inner_ok ? ((__u16)inner[12] << 8) | inner[13] : 0;
	struct nvo_vtep *vtep = 0;
	if (net) {
		struct nvo_vtep_key vk = { .vni = vni, .addr = saddr };
		vtep = bpf_map_lookup_elem(&vteps, &vk);
	}
	struct nvo_fdb_entry *dst = 0;
	if (net && inner_ok) {
		struct nvo_fdb_key k = { .vni = vni };
		__builtin_memcpy(k.mac, inner, 6);
		dst = bpf_map_lookup_elem(&fdb, &k);
	}
	/* nvod's: relays, userspace networks, overlay packets routed by node, a frame too short
	 * for adjust_room to leave (it keeps at least an IPv4 header's worth), floods to more
	 * ports than the kernel replicates to, and a GSO packet that is not one tunnelled frame
	 * (several datagrams sent at once with UDP GSO, which a veth hands on unsegmented): the
	 * host stack cuts that into its datagrams for nvod's socket. And learning from a remote
	 * the kernel has no budget for (accept_remotes any, no learned entry behind it yet):
	 * nvod learns it and writes the budget. */
	if (!net || (skb->gso_size && !one_frame(skb, inner_off, inner_type)) ||
	    (!vtep && !(net->flags & NVO_NET_KNOWN_ONLY) && (net->flags & NVO_NET_LEARN_TUNNELS) &&
	     !d.dont_learn) ||
	    (inner_ok && skb->len - inner_off - ETH_HLEN < 20) ||
	    ((net->flags & NVO_NET_POLICY) &&
	     (inner_type == ETH_P_8021Q || inner_type == ETH_P_8021AD)) ||
	    (inner_ok && !dst && net->port_count > NVO_MAX_NET_PORTS)) {
		if (nc)
			nc->passed += 1;
		set_verdict(skb, NVO_VERDICT_PASS, 0, 0);
		return TC_ACT_OK;
	}
	if (nc) {
		nc->rx_packets += 1;
		nc->rx_bytes += h.avail;
	}
	if (net->profile != d.profile || !d.ethernet)
		return drop(skb, NVO_DROP_PROFILE_MISMATCH, 0);
	struct nvo_net_counters *ncnt = net_count(net);
	if (ncnt)
		ncnt->rx_underlay_frames += 1;
	if ((net->flags & NVO_NET_KNOWN_ONLY) && !(vtep && vtep->known))
		return drop(skb, NVO_DROP_UNKNOWN_REMOTE, 0);
	/* Eth::parse: 14 bytes, 18 behind an 802.1Q tag. */
	if (!inner_ok || (inner_type == ETH_P_8021Q && skb->len < inner_off + 18))
		return drop(skb, NVO_DROP_MALFORMED_FRAME, 0);
	if (mac_is_multicast(inner + 6) || mac_is_zero(inner + 6))
		return drop(skb, NVO_DROP_INVALID_SOURCE_MAC, 0);
	if (!d.dont_learn)
		learn(net, vni, inner + 6, NVO_DEST_REMOTE, 0, saddr, vtep ? &vtep->budget : 0, 0);
	if (mac_eq(inner, inner + 6)) {
		/* A frame to its own sender: what learning just did to the entry counts. */
		struct nvo_fdb_key k = { .vni = vni };
		__builtin_memcpy(k.mac, inner, 6);
		dst = bpf_map_lookup_elem(&fdb, &k);
	}
	if (net->flags & NVO_NET_POLICY) {
		/* Identity policy (policy.h), where the pipeline applies it: after learning. */
		__u32 tag = 0;
		if (net->flags & NVO_NET_GBP)
			tag = TAG_ON | ((h.b[1] & 0x08) ? TAG_APPLIED : 0) | ((__u32)h.b[2] << 8) |
			      h.b[3];
		__u64 ids = pol_ingress(skb, inner_off, vni, net->slot, tag);
		if ((ids & POL_DECIDE) &&
		    pol_verdict(vni, net->slot, (ids >> 16) & 0xffff, ids & 0xffff) == POL_DENY)
			return drop(skb, NVO_DROP_POLICY_DENIED, 0);
	}
	if (dst && dst->dest != NVO_DEST_PORT)
		return drop(skb, NVO_DROP_REMOTE_TO_REMOTE, 0);
	if (!dst && net->port_count == 0)
		return drop(skb, NVO_DROP_NO_DESTINATION, 0);
	if (decap_strip(skb, inner_off, inner))
		return drop(skb, NVO_DROP_MALFORMED_FRAME, 0);
	int ip_inner = inner_type == ETH_P_IP || inner_type == ETH_P_IPV6;
	if (dst) {
		if (ncnt)
			ncnt->delivered += 1;
		return nvo_port_deliver(skb, vni, dst->port_id, ip_inner);
	}
	struct flood_ctx fc = { .skb = skb, .cfg = cfg, .net = net, .vni = vni, .ingress = ~0U };
	__u32 ports = flood_ports(&fc);
	if (ncnt)
		ncnt->delivered += ports;
	if (ports)
		nvo_monitor_event(skb, NVO_MONITOR_FLOOD, ports, vni, 0);
	set_verdict(skb, NVO_VERDICT_FLOOD, ports, 0);
	return TC_ACT_SHOT;
}

#endif
