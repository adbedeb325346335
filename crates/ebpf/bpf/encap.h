/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Encapsulation knowing no protocol: a network's header template (nvo_tmpl, compiled by nvod
 * from the profile) goes in front of the frame behind an outer Ethernet, IPv4 and — for UDP
 * transports — UDP header; only the entropy field is written per packet.
 *
 *   before:  [inner eth][payload]
 *   after:   [outer eth][IPv4][UDP][tunnel header][inner eth][payload]
 *             \______________ outer_len(t) ______________/
 *
 * IP frames grow with bpf_skb_adjust_room(BPF_ADJ_ROOM_MAC) and the encapsulation flags, so a
 * GSO frame stays one GSO frame (UDP tunnel or GRE segmentation, done by the NIC or at the last
 * moment); anything else (ARP) grows at the head with bpf_skb_change_head.
 *
 * The outer header's fields follow what nvod's UDP socket would put there: DF and TTL/TOS as
 * configured or inherited, IP ID 0 with DF, the source port from the entropy port table,
 * UDP checksum 0 (RFC 7348 §4.2 for IPv4). The next hop and its MACs are what nvod resolved
 * from the host's routes and neighbours (map `nexthops`).
 */
#ifndef NVO_ENCAP_H
#define NVO_ENCAP_H

static __always_inline __u32 outer_len(const struct nvo_tmpl *t)
{
	__u32 l4 = t->transport == NVO_TRANSPORT_UDP ? 8 : 0;
	return ETH_HLEN + 20 + l4 + (t->len & 0x7f);
}

/* The outer TOS and TTL of a frame: the inner IP packet's when so configured (TTL 0 counts as
 * not inherited, as in nvod), else the configured values. */
static __always_inline void outer_tos_ttl(struct __sk_buff *skb, const struct nvo_config *cfg,
					  const __u8 *eth, __u8 *tos, __u8 *ttl)
{
	__u16 ethertype = ((__u16)eth[12] << 8) | eth[13];
	__u8 ip[8];

	*tos = cfg->tos;
	*ttl = cfg->ttl;
	if (!(cfg->flags & (NVO_CFG_TOS_INHERIT | NVO_CFG_TTL_INHERIT)))
		return;
	if (ethertype != ETH_P_IP && ethertype != ETH_P_IPV6)
		return;
	if (bpf_skb_load_bytes(skb, ETH_HLEN, ip, 8))
		return;
	__u8 in_tos, in_ttl;
	if (ip[0] >> 4 == 4) {
		__u8 rest[2];
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 8, rest, 1))
			return;
		in_tos = ip[1];
		in_ttl = rest[0];
	} else if (ip[0] >> 4 == 6) {
		in_tos = (ip[0] << 4) | (ip[1] >> 4);
		in_ttl = ip[7];
	} else {
		return;
	}
	if (cfg->flags & NVO_CFG_TOS_INHERIT)
		*tos = in_tos;
	if ((cfg->flags & NVO_CFG_TTL_INHERIT) && in_ttl != 0)
		*ttl = in_ttl;
}

/* Makes room for the outer headers of template `t` in front of the frame whose first 14 bytes
 * are `eth` (left in place as the inner Ethernet header). */
static __always_inline int outer_push(struct __sk_buff *skb, const struct nvo_tmpl *t,
				      const __u8 *eth)
{
	__u16 ethertype = ((__u16)eth[12] << 8) | eth[13];
	__u32 grow = outer_len(t);

	if (ethertype == ETH_P_IP || ethertype == ETH_P_IPV6) {
		__u64 flags = BPF_F_ADJ_ROOM_FIXED_GSO | BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 |
			      BPF_F_ADJ_ROOM_ENCAP_L2_ETH | BPF_F_ADJ_ROOM_ENCAP_L2(ETH_HLEN);
		flags |= t->transport == NVO_TRANSPORT_UDP ? BPF_F_ADJ_ROOM_ENCAP_L4_UDP
							   : BPF_F_ADJ_ROOM_ENCAP_L4_GRE;
		/* adjust_room inserts after the 14 bytes it leaves in front: those become the
		 * outer Ethernet header, the inner one is written back behind the new room. */
		if (bpf_skb_adjust_room(skb, grow, BPF_ADJ_ROOM_MAC, flags))
			return -1;
		return bpf_skb_store_bytes(skb, grow, eth, ETH_HLEN, 0) ? -1 : 0;
	}
	return bpf_skb_change_head(skb, grow, 0) ? -1 : 0;
}

/* Where a tunnel packet to `remote` leaves: egress ifindex and the two MACs. */
struct next_hop {
	__u32 ifindex;
	__u8 smac[6];
	__u8 dmac[6];
	int unresolved;  /* nvod knows no next hop yet: bpf_redirect_neigh or nvod's socket */
};

/* The next hop nvod resolved for `remote` (a route and a neighbour of the host's), or the
 * multicast MAC of a group. No FIB lookup here: bpf_fib_lookup refuses hosts that do not
 * forward, and a VTEP need not. */
static __always_inline int next_hop(struct __sk_buff *skb, const struct nvo_config *cfg,
				    __u32 remote, struct next_hop *nh)
{
	__u32 addr = bpf_ntohl(remote);

	if ((addr >> 28) == 0xe) {
		/* A multicast group: RFC 1112 §6.4 maps its low 23 bits into 01:00:5e. */
		nh->ifindex = cfg->underlay_ifindex;
		nh->dmac[0] = 0x01;
		nh->dmac[1] = 0x00;
		nh->dmac[2] = 0x5e;
		nh->dmac[3] = (addr >> 16) & 0x7f;
		nh->dmac[4] = (addr >> 8) & 0xff;
		nh->dmac[5] = addr & 0xff;
		__builtin_memcpy(nh->smac, cfg->underlay_mac, 6);
		nh->unresolved = 0;
		return 0;
	}
	struct nvo_nexthop *n = bpf_map_lookup_elem(&nexthops, &remote);
	if (!n) {
		nh->ifindex = cfg->underlay_ifindex;
		nh->unresolved = 1;
		return 0;
	}
	nh->ifindex = n->ifindex;
	__builtin_memcpy(nh->smac, n->smac, 6);
	__builtin_memcpy(nh->dmac, n->dmac, 6);
	nh->unresolved = 0;
	return 0;
}

static __always_inline __u16 ip_checksum(const void *hdr)
{
	__u64 sum = bpf_csum_diff(0, 0, (__be32 *)hdr, 20, 0);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

struct outer_hdr {
	__u8 eth[ETH_HLEN];
	__u8 ip[20];
	__u8 udp[8];
} __attribute__((packed));

/* Writes the outer headers for `remote` over the room outer_push made: Ethernet, IPv4, UDP,
 * then the template with this frame's entropy. */
static __always_inline int outer_write(struct __sk_buff *skb, const struct nvo_config *cfg,
				       const struct nvo_tmpl *t, __u32 remote,
				       const struct next_hop *nh, __u16 entropy, __u8 tos, __u8 ttl)
{
	struct outer_hdr h = {};
	__u32 udp = t->transport == NVO_TRANSPORT_UDP;
	__u32 tlen = t->len & 0x7f;
	__u32 ip_len = skb->len - ETH_HLEN;

	if (tlen > NVO_MAX_TMPL)
		return -1;
	__builtin_memcpy(h.eth, nh->dmac, 6);
	__builtin_memcpy(h.eth + 6, nh->smac, 6);
	h.eth[12] = ETH_P_IP >> 8;
	h.eth[13] = ETH_P_IP & 0xff;

	h.ip[0] = 0x45;
	h.ip[1] = tos;
	h.ip[2] = (ip_len >> 8) & 0xff;
	h.ip[3] = ip_len & 0xff;
	if (cfg->flags & NVO_CFG_DF) {
		h.ip[6] = 0x40;
	} else {
		__u32 id = bpf_get_prandom_u32();
		h.ip[4] = id & 0xff;
		h.ip[5] = (id >> 8) & 0xff;
	}
	h.ip[8] = ttl;
	h.ip[9] = udp ? IPPROTO_UDP : t->protocol;
	__builtin_memcpy(h.ip + 12, &cfg->locator, 4);
	__builtin_memcpy(h.ip + 16, &remote, 4);
	__u16 csum = ip_checksum(h.ip);
	__builtin_memcpy(h.ip + 10, &csum, 2);

	if (udp) {
		__u32 n = cfg->entropy_ports ? cfg->entropy_ports : 1;
		__u32 at = entropy % n;
		__u16 *sport = bpf_map_lookup_elem(&entropy_ports, &at);
		__u32 udp_len = ip_len - 20;
		if (sport)
			__builtin_memcpy(h.udp, sport, 2);
		h.udp[2] = t->port >> 8;
		h.udp[3] = t->port & 0xff;
		h.udp[4] = (udp_len >> 8) & 0xff;
		h.udp[5] = udp_len & 0xff;
		if (bpf_skb_store_bytes(skb, 0, &h, sizeof(h), 0))
			return -1;
	} else {
		if (bpf_skb_store_bytes(skb, 0, &h, ETH_HLEN + 20, 0))
			return -1;
	}
	__u32 base = ETH_HLEN + 20 + (udp ? 8 : 0);
	if (tlen > 0 && bpf_skb_store_bytes(skb, base, t->bytes, tlen, 0))
		return -1;
	__u32 elen = t->entropy_len;
	NVO_BARRIER(elen);
	if (elen > 0 && elen <= 8) {
		/* The entropy, big-endian in `elen` bytes: its low 16 bits, zeros above. */
		__u8 e[8] = {};
#pragma unroll
		for (int i = 0; i < 8; i++) {
			int shift = (int)elen - 1 - i; /* bytes below this one in the field */
			if (i < (int)elen && shift < 2)
				e[i] = (entropy >> (8 * shift)) & 0xff;
		}
		NVO_BARRIER(elen);
		if (elen == 0 || elen > 8)
			return -1;
		if (bpf_skb_store_bytes(skb, base + t->entropy_off, e, elen, 0))
			return -1;
	}
	return 0;
}

/* The header for `remote` on network `vni`: its own if it has one, else the network's. */
static __always_inline const struct nvo_tmpl *tmpl_for(const struct nvo_network *net, __u32 vni,
						       __u32 remote)
{
	if (net->flags & NVO_NET_REMOTE_TMPL) {
		struct nvo_remote_key k = { .vni = vni };
		k.addr[0] = remote;
		struct nvo_tmpl *t = bpf_map_lookup_elem(&remote_tmpl, &k);
		if (t)
			return t;
	}
	return &net->tmpl;
}

/* outer_push for a frame of local network `vni` to `remote` (its own template, if it has
 * one; `remote` 0: the network's, as a flood uses). Global (NVO_FUNC, not static) for the
 * verifier's sake: it checks it once, on its own, not on every path of nvo_port that reaches
 * a push. Its arguments are the context and scalars, so it finds the network and the frame's
 * first 14 bytes again (unchanged since the caller read them); -1 when it cannot, as when
 * the push fails. */
NVO_FUNC int nvo_outer_push(struct __sk_buff *skb, __u32 vni, __u32 remote)
{
	const struct nvo_network *net = bpf_map_lookup_elem(&networks, &vni);
	__u8 eth[ETH_HLEN];

	if (!net || bpf_skb_load_bytes(skb, 0, eth, ETH_HLEN))
		return -1;
	return outer_push(skb, remote ? tmpl_for(net, vni, remote) : &net->tmpl, eth);
}

#endif
