/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The overlay relay (docs/design/overlay.md, "Relaying"): a packet for another node leaves again
 * without being decapsulated — OverlayTables::receive for the case the kernel takes, one next
 * hop that is another node — in XDP (nvo_relay) where the interface allows, at tc ingress
 * (nvo_underlay) otherwise. Both run relay_decide on the first RELAY_HDRS bytes:
 *
 *   IPv4 to the locator, no options, not a fragment, UDP to the overlay port, lengths that
 *     agree, a header of version 1 with both nodes ≠ 0 and TTL ≥ 2
 *   relays[(dst, app)] → the next hop's locators; none → nvod's
 *   the packet came from one of them (split horizon) → nvod's
 *   locator = flow % Σweights over the cumulative weights (overlay::pick); all drained → nvod's
 *   nexthops[locator] → interface and MACs; unresolved → nvod's (its socket resolves it)
 *
 * and rewrite it as nvod's overlay socket would send it: overlay TTL − 1, a new outer IPv4
 * header from this node's locator to the chosen one (the socket's TTL, TOS, DF), UDP source
 * port relay_ports[(flow & 0xffff) % n], the UDP checksum updated (tc: 0 stays 0) or none
 * (XDP: it cannot tell a partial checksum from a full one). Everything
 * else — local copies, trees, TTL ≤ 1, unknown applications, misses — goes on to nvod, whose
 * userspace relay does what the pipeline says (XDP_PASS, then TC_ACT_OK).
 */
#ifndef NVO_RELAY_H
#define NVO_RELAY_H

/* Ethernet, IPv4 without options, UDP, the overlay header. */
#define RELAY_HDRS (ETH_HLEN + 20 + 8 + 20)
#define RELAY_IP ETH_HLEN
#define RELAY_UDP (ETH_HLEN + 20)
#define RELAY_OV (ETH_HLEN + 28)
#define OVERLAY_VERSION 1

/* What relay_decide chose, and what the rewrite changes. */
struct relay_hop {
	struct nvo_nexthop nh;
	__u32 to;           /* the chosen locator, network order */
	__u32 old_words[5]; /* the 16-bit words the UDP checksum covers that change, ... */
	__u32 new_words[5]; /* ... before and after (network order, in the low 16 bits) */
	__u32 len;          /* the UDP payload: what nvod's counters count */
};

static __always_inline __u32 be32_at(const __u8 *p)
{
	return ((__u32)p[0] << 24) | ((__u32)p[1] << 16) | ((__u32)p[2] << 8) | p[3];
}

static __always_inline struct nvo_relay_config *relay_config_get(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&relay_config, &zero);
}

/* The locator of `r` a flow takes: overlay::pick. 0 when every locator is drained. */
static __always_inline __u32 relay_pick(const struct nvo_relay *r, __u32 flow)
{
	if (r->total == 0)
		return 0;
	__u32 point = flow % r->total;
	__u32 n = r->count;
#pragma unroll
	for (int i = 0; i < NVO_RELAY_LOCS; i++) {
		if (i < (int)n) {
			__u32 w = r->locs[i].weight;
			if (point < w)
				return r->locs[i].addr;
			point -= w;
		}
	}
	return 0;
}

/* Whether the kernel relays the packet whose first RELAY_HDRS bytes are `b` (of `pkt_len`),
 * and if so how: 0 and `hop` filled, or -1 (nvod's). Rewrites `b` into the relayed headers. */
static __always_inline int relay_decide(__u8 *b, __u32 pkt_len, const struct nvo_config *cfg,
					const struct nvo_relay_config *rc, struct relay_hop *hop)
{
	if (rc->port == 0)
		return -1;
	if (b[12] != 0x08 || b[13] != 0x00)
		return -1;
	__u8 *ip = b + RELAY_IP;
	if (ip[0] != 0x45 || (ip[6] & 0x3f) || ip[7] || ip[9] != IPPROTO_UDP)
		return -1;
	__u32 tot = ((__u32)ip[2] << 8) | ip[3];
	if (tot + ETH_HLEN != pkt_len)
		return -1;
	__u32 saddr, daddr;
	__builtin_memcpy(&saddr, ip + 12, 4);
	__builtin_memcpy(&daddr, ip + 16, 4);
	if (daddr != cfg->locator)
		return -1;
	__u8 *udp = b + RELAY_UDP;
	__u32 dport = ((__u32)udp[2] << 8) | udp[3];
	__u32 ulen = ((__u32)udp[4] << 8) | udp[5];
	if (dport != rc->port || ulen + 20 != tot)
		return -1;
	__u8 *ov = b + RELAY_OV;
	__u8 ttl = ov[2];
	struct nvo_relay_key k = { .dst = be32_at(ov + 12), .app = ov[1] };
	if (ov[0] != OVERLAY_VERSION || ttl < 2 || k.dst == 0 || be32_at(ov + 16) == 0)
		return -1;
	struct nvo_relay *r = bpf_map_lookup_elem(&relays, &k);
	if (!r)
		return -1;
	__u32 n = r->count;
#pragma unroll
	for (int i = 0; i < NVO_RELAY_LOCS; i++)
		if (i < (int)n && r->locs[i].addr == saddr)
			return -1; /* split horizon: nvod counts it */
	__u32 flow = be32_at(ov + 8);
	__u32 to = relay_pick(r, flow);
	if (to == 0)
		return -1;
	struct nvo_nexthop *nh = bpf_map_lookup_elem(&nexthops, &to);
	if (!nh)
		return -1;
	__u32 sports = rc->sports ? rc->sports : 1;
	__u32 at = (flow & 0xffff) % sports;
	__u16 *sport = bpf_map_lookup_elem(&relay_ports, &at);
	if (!sport)
		return -1;

	hop->nh = *nh;
	hop->to = to;
	hop->len = ulen - 8;
	/* The words the UDP checksum covers that change: both addresses (pseudo header), the
	 * source port, and the overlay word holding the TTL. */
	hop->old_words[0] = ((__u32)ip[12] << 8) | ip[13];
	hop->old_words[1] = ((__u32)ip[14] << 8) | ip[15];
	hop->old_words[2] = ((__u32)ip[16] << 8) | ip[17];
	hop->old_words[3] = ((__u32)ip[18] << 8) | ip[19];
	hop->old_words[4] = ((__u32)udp[0] << 8) | udp[1];

	__builtin_memcpy(b, nh->dmac, 6);
	__builtin_memcpy(b + 6, nh->smac, 6);
	ip[1] = cfg->tos;
	if (cfg->flags & NVO_CFG_DF) {
		ip[4] = 0;
		ip[5] = 0;
		ip[6] = 0x40;
	} else {
		__u32 id = bpf_get_prandom_u32();
		ip[4] = id & 0xff;
		ip[5] = (id >> 8) & 0xff;
		ip[6] = 0;
	}
	ip[8] = cfg->ttl;
	ip[10] = 0;
	ip[11] = 0;
	__builtin_memcpy(ip + 12, &cfg->locator, 4);
	__builtin_memcpy(ip + 16, &to, 4);
	__u16 csum = ip_checksum(ip);
	__builtin_memcpy(ip + 10, &csum, 2);
	__builtin_memcpy(udp, sport, 2);
	ov[2] = ttl - 1;

	hop->new_words[0] = ((__u32)ip[12] << 8) | ip[13];
	hop->new_words[1] = ((__u32)ip[14] << 8) | ip[15];
	hop->new_words[2] = ((__u32)ip[16] << 8) | ip[17];
	hop->new_words[3] = ((__u32)ip[18] << 8) | ip[19];
	hop->new_words[4] = ((__u32)udp[0] << 8) | udp[1];
	return 0;
}

/* Counts a relayed packet as nvod's relay counts one: received (rx_packets, rx_bytes,
 * relayed) and sent (tx_packets, tx_bytes), the UDP payload's bytes. */
static __always_inline void relay_count(const struct relay_hop *hop)
{
	struct nvo_node_counters *nc = node_count();
	if (!nc)
		return;
	nc->rx_packets += 1;
	nc->rx_bytes += hop->len;
	nc->relayed += 1;
	nc->tx_packets += 1;
	nc->tx_bytes += hop->len;
}

/* XDP: the packet relayed in place (XDP_TX, or a redirect to the next hop's interface), or
 * left to the stack (XDP_PASS) — the tc program and nvod after it. */
static __always_inline int relay_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct nvo_config *cfg = node_config();
	struct nvo_relay_config *rc = relay_config_get();
	if (!cfg || !rc || data + RELAY_HDRS > data_end)
		return XDP_PASS;
	__u8 b[RELAY_HDRS];
	__builtin_memcpy(b, data, RELAY_HDRS);
	struct relay_hop hop = {};
	if (relay_decide(b, (__u32)(data_end - data), cfg, rc, &hop))
		return XDP_PASS;
	/* No UDP checksum (0: none, which IPv4 allows; tunnels usually send none): XDP cannot tell
	 * a full checksum from the partial one a veth hands on from a local sender, so it could
	 * update neither rightly. The tc relay updates it through the kernel's helpers. */
	b[RELAY_UDP + 6] = 0;
	b[RELAY_UDP + 7] = 0;
	__builtin_memcpy(data, b, RELAY_HDRS);
	relay_count(&hop);
	nvo_monitor_xdp(ctx, NVO_MONITOR_TRACE, NVO_TRACE_RELAY, hop.to);
	if (hop.nh.ifindex == ctx->ingress_ifindex)
		return XDP_TX;
	return bpf_redirect(hop.nh.ifindex, 0);
}

/* tc: 1 and *verdict set when the packet was relayed (redirected to the next hop's interface),
 * 0 when it is not the kernel's to relay. The checksum goes through the kernel's helpers,
 * which know whether the socket buffer carries a full or a partial (offloaded) checksum. */
static __always_inline int relay_tc(struct __sk_buff *skb, const struct nvo_config *cfg,
				    const struct nvo_relay_config *rc, int *verdict)
{
	if (skb->gso_size || skb->len < RELAY_HDRS)
		return 0;
	__u8 b[RELAY_HDRS];
	if (bpf_skb_load_bytes(skb, 0, b, RELAY_HDRS))
		return 0;
	struct relay_hop hop = {};
	if (relay_decide(b, skb->len, cfg, rc, &hop))
		return 0;
	__u32 csum_off = RELAY_UDP + 6;
	__u64 pseudo = BPF_F_PSEUDO_HDR | BPF_F_MARK_MANGLED_0 | 2;
	__u64 plain = BPF_F_MARK_MANGLED_0 | 2;
	int err = 0;
#pragma unroll
	for (int i = 0; i < 4; i++)
		err |= bpf_l4_csum_replace(skb, csum_off, bpf_htons(hop.old_words[i]),
					   bpf_htons(hop.new_words[i]), pseudo);
	err |= bpf_l4_csum_replace(skb, csum_off, bpf_htons(hop.old_words[4]),
				   bpf_htons(hop.new_words[4]), plain);
	__u16 ttl_old = bpf_htons(0x100);
	err |= bpf_l4_csum_replace(skb, csum_off, ttl_old, 0, plain);
	/* Everything but the checksum the helpers just updated. */
	err |= bpf_skb_store_bytes(skb, 0, b, RELAY_UDP + 6, 0);
	err |= bpf_skb_store_bytes(skb, RELAY_OV, b + RELAY_OV, 20, 0);
	if (err) {
		tx_failed(skb, 1);
		set_verdict(skb, NVO_VERDICT_DROP, 2, NVO_DROP_TX_ERROR);
		*verdict = TC_ACT_SHOT;
		return 1;
	}
	relay_count(&hop);
	trace_out(skb, cfg, NVO_TRACE_UNDERLAY, hop.nh.ifindex);
	nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_RELAY, 0, hop.to);
	set_verdict(skb, NVO_VERDICT_REMOTE, hop.to, 0);
	*verdict = bpf_redirect(hop.nh.ifindex, 0);
	return 1;
}

#endif
