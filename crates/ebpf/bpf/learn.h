/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Learning source MACs in the kernel, as the pipeline's Fdb::learn does, and reporting them.
 *
 * The kernel inserts a new MAC at once (so the next frame to it is not flooded), moves a learned
 * one, and leaves static and EVPN entries alone — except that an EVPN MAC seen on a local port
 * is reported, for nvod to move it here as the pipeline does. Every insert and move, and every
 * `refresh_ns` an entry stays active, goes to nvod as an event: nvod runs the pipeline's learn
 * on it (counting it, ageing it, telling EVPN) and writes the pipeline's verdict back, so the
 * pipeline stays the table of record. The per-network limit is a budget nvod sets from the
 * pipeline's count; the kernel spends one per insert and learns nothing when it is spent.
 */
#ifndef NVO_LEARN_H
#define NVO_LEARN_H

#define NVO_EVPN_REPORT_NS 1000000000ULL

static __always_inline void report(__u32 vni, const __u8 *mac, __u8 dest, __u32 port_id,
				   __u32 remote)
{
	struct nvo_event ev = {};

	ev.kind = NVO_EVENT_LEARN;
	ev.vni = vni;
	__builtin_memcpy(ev.mac, mac, 6);
	ev.dest = dest;
	ev.port_id = port_id;
	ev.remote[0] = remote;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0)) {
		struct nvo_node_counters *nc = node_count();
		if (nc)
			nc->events_lost += 1;
	}
}

/* Learns that frames from `mac` of network `vni` come from a port (`dest` NVO_DEST_PORT,
 * `port_id`) or a remote VTEP (NVO_DEST_REMOTE, IPv4 `remote`). */
static __always_inline void learn(const struct nvo_network *net, __u32 vni, const __u8 *mac,
				  __u8 dest, __u32 port_id, __u32 remote)
{
	struct nvo_fdb_key key = { .vni = vni };
	struct nvo_fdb_entry *e;
	__u64 now = bpf_ktime_get_ns();

	if (!(net->flags & NVO_NET_LEARNING))
		return;
	__builtin_memcpy(key.mac, mac, 6);
	e = bpf_map_lookup_elem(&fdb, &key);
	if (e) {
		if (e->origin == NVO_ORIGIN_STATIC)
			return;
		if (e->origin == NVO_ORIGIN_EVPN) {
			/* Only a local port overrides the control plane (the pipeline's rule): the
			 * MAC moved here. Reported at once (nvod writes EVPN entries with
			 * reported_ns 0), then at most once a second while nvod decides. */
			if (dest == NVO_DEST_PORT && now - e->reported_ns >= NVO_EVPN_REPORT_NS) {
				e->reported_ns = now;
				report(vni, mac, dest, port_id, remote);
			}
			return;
		}
		int same = e->dest == dest &&
			   (dest == NVO_DEST_PORT ? e->port_id == port_id : e->remote[0] == remote);
		if (same) {
			if (now - e->reported_ns >= net->refresh_ns) {
				e->reported_ns = now;
				report(vni, mac, dest, port_id, remote);
			}
			return;
		}
		e->dest = dest;
		e->port_id = port_id;
		e->remote[0] = remote;
		e->remote[1] = 0;
		e->remote[2] = 0;
		e->remote[3] = 0;
		e->reported_ns = now;
		report(vni, mac, dest, port_id, remote);
		return;
	}

	__u32 slot = net->slot;
	__s64 *budget = bpf_map_lookup_elem(&learn_budget, &slot);
	if (!budget)
		return;
	if (__sync_fetch_and_add(budget, -1) <= 0) {
		__sync_fetch_and_add(budget, 1);
		struct nvo_net_counters *c = net_count(net);
		if (c)
			c->learn_limit += 1;
		return;
	}
	struct nvo_fdb_entry fresh = {
		.dest = dest,
		.origin = NVO_ORIGIN_LEARNED,
		.port_id = port_id,
		.reported_ns = now,
	};
	fresh.remote[0] = remote;
	if (bpf_map_update_elem(&fdb, &key, &fresh, BPF_NOEXIST)) {
		/* Another CPU learned it first, or the table is full: the budget goes back. */
		__sync_fetch_and_add(budget, 1);
		return;
	}
	report(vni, mac, dest, port_id, remote);
}

#endif
