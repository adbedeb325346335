/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A frame from a local port (tc ingress of the port's host-side interface): the pipeline's
 * from_port, for the frames the kernel takes.
 *
 *   port known? ─ no → unknown_port
 *   an ARP request ARP suppression answers from `neighbors` → the reply back out of the port,
 *     the request to nvod to snoop (arp_answer)
 *   frame for nvod? (network not in the kernel, 802.1Q tag, ARP or NS/NA to snoop and maybe
 *     answer, longer than the MTU, destination an overlay node, a flood the kernel does not
 *     replicate) → punted whole, before anything is counted or learned
 *   ethernet header? ─ no → malformed_frame       source unicast? ─ no → invalid_source_mac
 *   learn src → port
 *   identity policy (policy.h): deny → policy_denied; the group tag for the tunnel header
 *   dst in fdb: this port → hairpin · other port → that port's peer · remote → encapsulated
 *   else flood: a copy to every other port, then one per flood remote (or one to the group)
 *   nothing to do → no_destination
 */
#ifndef NVO_PORT_H
#define NVO_PORT_H

/* Whether nvod must see this frame: the snooping and suppression of ARP and IPv6 neighbour
 * discovery stay in the pipeline. */
static __always_inline int neighbour_discovery(struct __sk_buff *skb, __u16 ethertype)
{
	if (ethertype == ETH_P_ARP)
		return 1;
	if (ethertype != ETH_P_IPV6)
		return 0;
	__u8 nh, type;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &nh, 1) || nh != IPPROTO_ICMPV6)
		return 0;
	if (bpf_skb_load_bytes(skb, ETH_HLEN + 40, &type, 1))
		return 0;
	return type == 135 || type == 136;
}

#define ARP_FRAME (ETH_HLEN + 28)

/* ARP suppression (the pipeline's suppress::answer, for ARP): a request from a port that asks
 * for a peer (not gratuitous, not a probe), whose target the network's neighbour table knows
 * somewhere other than behind this port, is answered here — the reply, from the target's MAC,
 * back out of the port — and the request goes to nvod flagged answered, which snoops and
 * counts it (arp_suppressed) without answering again. Returns the program's verdict, or -1
 * when the frame is not answered here (it is then punted whole, as every ARP frame is). */
static __always_inline int arp_answer(struct __sk_buff *skb, const struct nvo_config *cfg,
				      __u32 vni, const struct nvo_port *port, const __u8 *eth,
				      struct nvo_port_counters *pc)
{
	__u8 a[28];
	if (skb->vlan_present || bpf_skb_load_bytes(skb, ETH_HLEN, a, 28))
		return -1;
	/* Ethernet/IPv4, 6/4-byte addresses, a request (what ArpRepr::parse takes). */
	if (a[0] || a[1] != 1 || a[2] != 0x08 || a[3] || a[4] != 6 || a[5] != 4 || a[6] ||
	    a[7] != 1)
		return -1;
	const __u8 *sender_mac = a + 8, *sender_ip = a + 14, *target_ip = a + 24;
	__u32 sip, tip;
	__builtin_memcpy(&sip, sender_ip, 4);
	__builtin_memcpy(&tip, target_ip, 4);
	/* Arp::asks_peer, and a unicast sender to answer to. */
	if (sip == 0 || tip == 0 || sip == tip || mac_is_multicast(sender_mac) ||
	    mac_is_zero(sender_mac) || mac_is_multicast(eth + 6) || mac_is_zero(eth + 6))
		return -1;
	struct nvo_neigh_key nk = { .vni = vni, .ip = tip };
	struct nvo_neigh *n = bpf_map_lookup_elem(&neighbors, &nk);
	if (!n || n->port_id == port->port_id)
		return -1;
	struct nvo_fdb_key fk = { .vni = vni };
	__builtin_memcpy(fk.mac, n->mac, 6);
	struct nvo_fdb_entry *f = bpf_map_lookup_elem(&fdb, &fk);
	if (f && f->dest == NVO_DEST_PORT && f->port_id == port->port_id)
		return -1; /* behind this port: it answers for itself */
	__u8 reply[ARP_FRAME];
	__builtin_memcpy(reply, sender_mac, 6);
	__builtin_memcpy(reply + 6, n->mac, 6);
	reply[12] = ETH_P_ARP >> 8;
	reply[13] = ETH_P_ARP & 0xff;
	__builtin_memcpy(reply + 14, a, 6);
	reply[20] = 0;
	reply[21] = 2;
	__builtin_memcpy(reply + 22, n->mac, 6);
	__builtin_memcpy(reply + 28, target_ip, 4);
	__builtin_memcpy(reply + 32, sender_mac, 6);
	__builtin_memcpy(reply + 38, sender_ip, 4);
	/* The request to nvod first (snooping stays the pipeline's); not answered if it cannot
	 * go, so that nvod sees every ARP frame. */
	if (punt(skb, NVO_PUNT_ANSWERED, port->port_id, vni, 0, 0, 0))
		return -1;
	if ((skb->len != ARP_FRAME && bpf_skb_change_tail(skb, ARP_FRAME, 0)) ||
	    bpf_skb_store_bytes(skb, 0, reply, ARP_FRAME, 0)) {
		tx_failed(skb, 0);
		set_verdict(skb, NVO_VERDICT_DROP, port->port_id, NVO_DROP_TX_ERROR);
		return TC_ACT_SHOT;
	}
	if (pc) {
		pc->tx_frames += 1;
		pc->tx_bytes += ARP_FRAME;
	}
	trace_out(skb, cfg, NVO_TRACE_PORT, port->port_id);
	nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_PORT, vni, port->port_id);
	set_verdict(skb, NVO_VERDICT_PORT, port->port_id, 0);
	return bpf_redirect(port->ifindex, 0);
}

/* The length of the largest frame this one becomes: a GSO frame's headers plus one segment. */
static __always_inline __u32 segment_len(struct __sk_buff *skb, __u16 ethertype)
{
	__u32 gso = skb->gso_size;
	if (gso == 0)
		return skb->len;
	__u32 l4;
	__u8 proto;
	if (ethertype == ETH_P_IP) {
		__u8 ip[10];
		if (bpf_skb_load_bytes(skb, ETH_HLEN, ip, 10))
			return skb->len;
		l4 = ETH_HLEN + (ip[0] & 0xf) * 4;
		proto = ip[9];
	} else if (ethertype == ETH_P_IPV6) {
		if (bpf_skb_load_bytes(skb, ETH_HLEN + 6, &proto, 1))
			return skb->len;
		l4 = ETH_HLEN + 40;
	} else {
		return skb->len;
	}
	__u32 l4_len = 8;
	if (proto == IPPROTO_TCP) {
		__u8 doff;
		if (bpf_skb_load_bytes(skb, l4 + 12, &doff, 1))
			return skb->len;
		l4_len = (doff >> 4) * 4;
	}
	__u32 seg = l4 + l4_len + gso;
	return seg < skb->len ? seg : skb->len;
}

struct flood_ctx {
	struct __sk_buff *skb;
	const struct nvo_config *cfg;
	const struct nvo_network *net;
	__u32 vni;
	__u32 ingress;   /* port id the frame came from (none from the underlay: ~0) */
	__u32 delivered; /* copies to ports */
	__u16 entropy;
	__u8 tos;
	__u8 ttl;
};

static long flood_port_cb(__u32 i, void *data)
{
	struct flood_ctx *c = data;
	struct nvo_net_index k = { .vni = c->vni, .index = i };
	__u32 *port_id = bpf_map_lookup_elem(&net_ports, &k);
	if (!port_id)
		return 1;
	if (*port_id == c->ingress)
		return 0;
	nvo_port_copy(c->skb, c->vni, *port_id);
	c->delivered += 1;
	return 0;
}

static long flood_remote_cb(__u32 i, void *data)
{
	struct flood_ctx *c = data;
	struct nvo_net_index k = { .vni = c->vni, .index = i };
	struct nvo_remote *r = bpf_map_lookup_elem(&flood, &k);
	if (!r)
		return 1;
	nvo_remote_send(c->skb, c->vni, r->addr[0], send_meta(c->entropy, c->tos, c->ttl), 1);
	return 0;
}

/* Copies to every local port of the network but `ingress`; returns how many. */
static __always_inline __u32 flood_ports(struct flood_ctx *c)
{
	__u32 n = c->net->port_count;
	if (n > NVO_MAX_NET_PORTS)
		n = NVO_MAX_NET_PORTS;
	c->delivered = 0;
	bpf_loop(n, flood_port_cb, c, 0);
	return c->delivered;
}

static __always_inline int port_flood(struct flood_ctx *c, struct nvo_net_counters *ncnt,
				      struct nvo_port_counters *pc)
{
	struct __sk_buff *skb = c->skb;
	const struct nvo_network *net = c->net;
	__u32 ports = flood_ports(c);
	__u32 remotes = 0;

	if (ncnt)
		ncnt->delivered += ports;
	if (net->flags & NVO_NET_BUM_GROUP)
		remotes = 1;
	else if (net->flags & NVO_NET_BUM_HEAD_END)
		remotes = net->flood_count > NVO_MAX_FLOOD ? NVO_MAX_FLOOD : net->flood_count;
	if (ports + remotes > 0)
		nvo_monitor_event(skb, NVO_MONITOR_FLOOD, ports + remotes, c->vni, 0);
	if (remotes == 0) {
		if (ports == 0)
			return drop(skb, NVO_DROP_NO_DESTINATION, pc);
		set_verdict(skb, NVO_VERDICT_FLOOD, ports, 0);
		return TC_ACT_SHOT; /* every copy is out */
	}
	if (ncnt)
		ncnt->encap_flood += remotes;
	if (nvo_outer_push(skb, c->vni, 0)) {
		tx_failed(skb, 1);
		set_verdict(skb, NVO_VERDICT_DROP, 3, NVO_DROP_TX_ERROR);
		return TC_ACT_SHOT;
	}
	if (net->flags & NVO_NET_BUM_GROUP) {
		__u32 meta = send_meta(c->entropy, c->tos, c->cfg->multicast_ttl);
		if (ports == 0)
			return nvo_remote_send(skb, c->vni, net->group, meta, 0);
		nvo_remote_send(skb, c->vni, net->group, meta, 1);
	} else {
		bpf_loop(remotes, flood_remote_cb, c, 0);
	}
	set_verdict(skb, NVO_VERDICT_FLOOD, ports, remotes);
	return TC_ACT_SHOT;
}

static __always_inline int port_in(struct __sk_buff *skb)
{
	struct nvo_config *cfg = node_config();
	__u32 ifindex = skb->ifindex;
	__u8 eth[ETH_HLEN];

	if (!cfg)
		return TC_ACT_SHOT;
	skb->cb[3] = 0; /* no group tag (policy.h) until the policy gives one */
	struct nvo_port *port = bpf_map_lookup_elem(&ports, &ifindex);
	if (!port)
		return drop(skb, NVO_DROP_UNKNOWN_PORT, 0);
	__u32 vni = port->vni;
	struct nvo_network *net = bpf_map_lookup_elem(&networks, &vni);
	struct nvo_port_counters *pc = port_count(port->slot);
	int parsed = skb->len >= ETH_HLEN && !bpf_skb_load_bytes(skb, 0, eth, ETH_HLEN);
	__u16 ethertype = parsed ? ((__u16)eth[12] << 8) | eth[13] : 0;

	/* What nvod does itself goes up before the kernel has counted or learned anything. */
	struct nvo_fdb_entry *dst = 0;
	if (net && parsed) {
		struct nvo_fdb_key k = { .vni = vni };
		__builtin_memcpy(k.mac, eth, 6);
		dst = bpf_map_lookup_elem(&fdb, &k);
	}
	/* A port nvod has not given a learning budget yet: nvod learns (and forwards) for it. */
	__u32 port_id = port->port_id;
	__s64 *budget = bpf_map_lookup_elem(&port_budget, &port_id);
	int to_nvod = !net || skb->vlan_present || ethertype == ETH_P_8021Q ||
		      ethertype == ETH_P_8021AD || (!budget && (net->flags & NVO_NET_LEARN_PORTS));
	if (!to_nvod && parsed) {
		to_nvod = neighbour_discovery(skb, ethertype) ||
			  segment_len(skb, ethertype) > (__u32)net->mtu + ETH_HLEN ||
			  (dst && dst->dest == NVO_DEST_NODE) ||
			  (!dst && ((net->flags & NVO_NET_BUM_USER) ||
				    net->port_count > NVO_MAX_NET_PORTS ||
				    net->flood_count > NVO_MAX_FLOOD)) ||
			  ((net->flags & NVO_NET_POLICY) &&
			   pol_egress_punts(skb, vni, ethertype, dst || mac_eq(eth, eth + 6)));
	}
	if (to_nvod && net && parsed && ethertype == ETH_P_ARP && (net->flags & NVO_NET_SUPPRESS)) {
		int verdict = arp_answer(skb, cfg, vni, port, eth, pc);
		if (verdict >= 0)
			return verdict;
	}
	if (to_nvod) {
		punt(skb, NVO_PUNT_PORT, port->port_id, vni, 0, 0, 0);
		set_verdict(skb, NVO_VERDICT_PUNT, port->port_id, 0);
		return TC_ACT_SHOT;
	}
	if (!net)
		return TC_ACT_SHOT; /* not reached: punted above (keeps the verifier sure) */

	if (pc) {
		pc->rx_frames += 1;
		pc->rx_bytes += skb->len;
	}
	struct nvo_net_counters *ncnt = net_count(net);
	if (ncnt)
		ncnt->rx_port_frames += 1;
	if (!parsed)
		return drop(skb, NVO_DROP_MALFORMED_FRAME, pc);
	if (mac_is_multicast(eth + 6) || mac_is_zero(eth + 6))
		return drop(skb, NVO_DROP_INVALID_SOURCE_MAC, pc);
	if (learn(net, vni, eth + 6, NVO_DEST_PORT, port->port_id, 0, budget, pc))
		return drop(skb, NVO_DROP_PORT_LEARN_LIMIT, pc);
	if (mac_eq(eth, eth + 6)) {
		/* A frame to its own sender: what learning just did to the entry counts. */
		struct nvo_fdb_key k = { .vni = vni };
		__builtin_memcpy(k.mac, eth, 6);
		dst = bpf_map_lookup_elem(&fdb, &k);
	}
	if (net->flags & NVO_NET_POLICY) {
		/* Identity policy (policy.h), where the pipeline applies it: after learning, before
		 * the destination is looked at. The tag goes into the tunnel header (out.h). */
		int tag = pol_egress(skb, vni, net->slot, port->flags >> NVO_PORT_GROUP_SHIFT,
				     ethertype);
		if (tag == POL_DENY)
			return drop(skb, NVO_DROP_POLICY_DENIED, pc);
		skb->cb[3] = tag;
	}

	if (dst && dst->dest == NVO_DEST_PORT) {
		if (dst->port_id == port->port_id)
			return drop(skb, NVO_DROP_HAIRPIN, pc);
		if (ncnt)
			ncnt->delivered += 1;
		return nvo_port_deliver(skb, vni, dst->port_id, 1);
	}

	struct flood_ctx c = {
		.skb = skb,
		.cfg = cfg,
		.net = net,
		.vni = vni,
		.ingress = port->port_id,
	};
	c.entropy = nvo_flow_entropy(skb);
	outer_tos_ttl(skb, cfg, eth, &c.tos, &c.ttl);
	if (dst && dst->dest == NVO_DEST_REMOTE) {
		if (ncnt)
			ncnt->encap_unicast += 1;
		if (nvo_outer_push(skb, vni, dst->remote[0])) {
			tx_failed(skb, 1);
			set_verdict(skb, NVO_VERDICT_DROP, 0, NVO_DROP_TX_ERROR);
			return TC_ACT_SHOT;
		}
		return nvo_remote_send(skb, vni, dst->remote[0], send_meta(c.entropy, c.tos, c.ttl), 0);
	}
	return port_flood(&c, ncnt, pc);
}

#endif
