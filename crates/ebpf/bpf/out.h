/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Sending: to a local port, or — once encapsulated — to a remote VTEP. Each send is counted as
 * the pipeline counts it through count_tx: a port's tx_frames/tx_bytes, the underlay's
 * tx_packets/tx_bytes (tunnel header + inner frame, what nvod's socket counts), and a failure as
 * a tx_error drop.
 */
#ifndef NVO_OUT_H
#define NVO_OUT_H

/* Counts a send that failed. */
static __always_inline void tx_failed(struct __sk_buff *skb, int underlay)
{
	__u32 slot = NVO_DROP_TX_ERROR;
	__u64 *n = bpf_map_lookup_elem(&drop_counters, &slot);
	if (n)
		*n += 1;
	if (underlay) {
		struct nvo_node_counters *nc = node_count();
		if (nc)
			nc->tx_errors += 1;
	}
}

/* A copy of the frame to port `port_id` (the original stays with the caller). */
NVO_FUNC int nvo_port_copy(struct __sk_buff *skb, __u32 vni, __u32 port_id)
{
	struct nvo_config *cfg = node_config();
	struct nvo_port *p = bpf_map_lookup_elem(&port_out, &port_id);
	if (!p || !cfg) {
		tx_failed(skb, 0);
		return -1;
	}
	if (p->flags & NVO_PORT_USERSPACE)
		return punt(skb, NVO_PUNT_DELIVER, port_id, vni, 0, 0, 0);
	struct nvo_port_counters *pc = port_count(p->slot);
	trace_out(skb, cfg, NVO_TRACE_PORT, port_id);
	nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_PORT, vni, port_id);
	if (bpf_clone_redirect(skb, p->ifindex, 0)) {
		tx_failed(skb, 0);
		if (pc)
			pc->drops += 1;
		return -1;
	}
	if (pc) {
		pc->tx_frames += 1;
		pc->tx_bytes += skb->len;
	}
	return 0;
}

/* The frame itself to port `port_id`: the program's return value. `peer`: skb->protocol is
 * right for the frame, so a veth's peer can take it at its ingress directly. */
NVO_FUNC int nvo_port_deliver(struct __sk_buff *skb, __u32 vni, __u32 port_id, int peer)
{
	struct nvo_config *cfg = node_config();
	struct nvo_port *p = bpf_map_lookup_elem(&port_out, &port_id);
	if (!p || !cfg) {
		tx_failed(skb, 0);
		set_verdict(skb, NVO_VERDICT_DROP, port_id, NVO_DROP_TX_ERROR);
		return TC_ACT_SHOT;
	}
	set_verdict(skb, NVO_VERDICT_PORT, port_id, 0);
	if (p->flags & NVO_PORT_USERSPACE) {
		punt(skb, NVO_PUNT_DELIVER, port_id, vni, 0, 0, 0);
		return TC_ACT_SHOT;
	}
	struct nvo_port_counters *pc = port_count(p->slot);
	if (pc) {
		pc->tx_frames += 1;
		pc->tx_bytes += skb->len;
	}
	trace_out(skb, cfg, NVO_TRACE_PORT, port_id);
	nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_PORT, vni, port_id);
	if (peer && (p->flags & NVO_PORT_VETH) && !(p->flags & NVO_PORT_TAPPED))
		return bpf_redirect_peer(p->ifindex, 0);
	return bpf_redirect(p->ifindex, 0);
}

/* Addresses the encapsulated frame (room made by outer_push) to `remote` and sends it, as a
 * copy (`copy`) or as the frame itself. Returns the program's verdict for the frame itself;
 * for a copy, TC_ACT_OK or TC_ACT_SHOT (failed). `meta`: entropy | tos << 16 | ttl << 24. */
NVO_FUNC int nvo_remote_send(struct __sk_buff *skb, __u32 vni, __u32 remote, __u32 meta, int copy)
{
	struct nvo_config *cfg = node_config();
	struct nvo_network *net = bpf_map_lookup_elem(&networks, &vni);
	__u16 entropy = meta & 0xffff;
	__u8 tos = (meta >> 16) & 0xff, ttl = meta >> 24;
	if (!cfg || !net) {
		tx_failed(skb, 1);
		set_verdict(skb, NVO_VERDICT_DROP, 0, NVO_DROP_TX_ERROR);
		return TC_ACT_SHOT;
	}
	const struct nvo_tmpl *t = tmpl_for(net, vni, remote);
	struct next_hop nh = {};
	__u32 inner = outer_len(t);
	__u32 l4 = t->transport == NVO_TRANSPORT_UDP ? 8 : 0;

	int rc = next_hop(skb, cfg, remote, &nh);
	if (rc == 0)
		rc = outer_write(skb, cfg, t, remote, &nh, entropy, tos, ttl) ? 2 : 0;
	__u32 tag = skb->cb[3];
	if (rc == 0 && (tag & TAG_ON) && (net->flags & NVO_NET_GBP) && l4 == 8) {
		/* The source's group and the A bit (draft-smith-vxlan-group-policy-05 §2.1): the
		 * template's flags byte with A set or cleared, then the Group Policy ID. */
		__u8 g[3] = { (t->bytes[1] & ~0x08) | ((tag & TAG_APPLIED) ? 0x08 : 0),
			      (tag >> 8) & 0xff, tag & 0xff };
		if (bpf_skb_store_bytes(skb, ETH_HLEN + 20 + 8 + 1, g, 3, 0))
			rc = 2;
	}
	if (rc) {
		tx_failed(skb, 1);
		/* The argument says which step failed: the FIB (1) or writing the headers (2). */
		set_verdict(skb, NVO_VERDICT_DROP, rc, NVO_DROP_TX_ERROR);
		return TC_ACT_SHOT;
	}
	struct nvo_node_counters *nc = node_count();
	if (nh.unresolved) {
		/* No neighbour entry for the next hop yet. An IP frame itself can wait for it in
		 * the kernel's neighbour queue; anything else goes to nvod, whose socket send
		 * resolves it. */
		if (!copy && skb->protocol == bpf_htons(ETH_P_IP)) {
			if (nc) {
				nc->tx_packets += 1;
				nc->tx_bytes += skb->len - (ETH_HLEN + 20 + l4);
			}
			trace_out(skb, cfg, NVO_TRACE_UNDERLAY, nh.ifindex);
			nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_UNDERLAY, vni, remote);
			set_verdict(skb, NVO_VERDICT_REMOTE, remote, 0);
			return bpf_redirect_neigh(nh.ifindex, 0, 0, 0);
		}
		/* port_id: the identity policy's tag (policy.h), for the header nvod writes. */
		punt(skb, NVO_PUNT_ENCAP, tag, vni, inner, remote, entropy);
		set_verdict(skb, NVO_VERDICT_PUNT, remote, 0);
		return copy ? TC_ACT_OK : TC_ACT_SHOT;
	}
	trace_out(skb, cfg, NVO_TRACE_UNDERLAY, nh.ifindex);
	nvo_monitor_event(skb, NVO_MONITOR_TRACE, NVO_TRACE_UNDERLAY, vni, remote);
	if (copy) {
		if (bpf_clone_redirect(skb, nh.ifindex, 0)) {
			tx_failed(skb, 1);
			return TC_ACT_SHOT;
		}
	}
	if (nc) {
		nc->tx_packets += 1;
		nc->tx_bytes += skb->len - (ETH_HLEN + 20 + l4);
	}
	if (copy)
		return TC_ACT_OK;
	set_verdict(skb, NVO_VERDICT_REMOTE, remote, 0);
	return bpf_redirect(nh.ifindex, 0);
}

static __always_inline __u32 send_meta(__u16 entropy, __u8 tos, __u8 ttl)
{
	return entropy | ((__u32)tos << 16) | ((__u32)ttl << 24);
}

#endif
