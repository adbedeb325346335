/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Learning source MACs in the kernel, as the pipeline's Fdb::learn does, and reporting them.
 *
 * The kernel inserts a new MAC at once (so the next frame to it is not flooded), moves a learned
 * one, and leaves static and EVPN entries alone — except that an EVPN MAC seen on a local port
 * is reported, for nvod to move it here as the pipeline does. Every insert and move, and every
 * `refresh_ns` an entry stays active, goes to nvod as an event: nvod runs the pipeline's learn
 * on it (counting it, ageing it, telling EVPN) and writes the pipeline's verdict back, so the
 * pipeline stays the table of record.
 *
 * Bounds, as the pipeline's Fdb::learn checks them (the network's max_learned, then the port's
 * max_learned_per_port or the remote's max_learned_per_remote): each is a budget nvod sets from
 * the pipeline's counts after every batch of reports and every sync — `learn_budget` (per
 * network slot), `port_budget` (per port id), `vteps` (per network and remote address) — and
 * the kernel spends one per insert, and one of the destination's per move. Ageing is
 * userspace's (the pipeline ages, the mirror removes the kernel's entry and recomputes the
 * budgets), so the counts behind the budgets never drift from the table of record: at worst
 * a budget is stale for one batch, the kernel inserts a MAC the pipeline then refuses, and the
 * report's write-back takes it out again (counted once, by the pipeline). A destination
 * without a budget entry is not decided here: the caller hands the frame to nvod (a port not
 * yet written, a remote of an `accept_remotes any` network that holds no learned entry yet).
 *
 * Sticky local MACs: a learned entry on a local port is not moved by a tunnel's frame while
 * it lives (the pipeline ages it; a live kernel entry is a live pipeline entry) —
 * learn_local_conflict, no report.
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

/* Spends one of `budget`; 0 when it was spent already (and leaves it as it was). */
static __always_inline int spend(__s64 *budget)
{
	if (__sync_fetch_and_add(budget, -1) <= 0) {
		__sync_fetch_and_add(budget, 1);
		return 0;
	}
	return 1;
}

/* Counts a MAC not learned: `which` the bound that refused it (0 the network's). */
static __always_inline void limit_hit(const struct nvo_network *net, struct nvo_port_counters *pc,
				      __u8 dest, int which)
{
	struct nvo_net_counters *c = net_count(net);
	if (c) {
		c->learn_limit += 1;
		if (which && dest == NVO_DEST_PORT)
			c->learn_limit_port += 1;
		else if (which)
			c->learn_limit_remote += 1;
	}
	if (pc)
		pc->learn_limit += 1;
}

/* Learns that frames from `mac` of network `vni` come from a port (`dest` NVO_DEST_PORT,
 * `port_id`, counters `pc`) or a remote VTEP (NVO_DEST_REMOTE, IPv4 `remote`). `dest_budget`
 * is the port's entry of `port_budget` or the remote's `vteps` budget; the caller has handed
 * the frame to nvod when there is none. Returns 1 when the destination's own bound refused
 * the MAC (a port's frame is then dropped: port_learn_limit), 0 otherwise. */
static __always_inline int learn(const struct nvo_network *net, __u32 vni, const __u8 *mac,
				  __u8 dest, __u32 port_id, __u32 remote, __s64 *dest_budget,
				  struct nvo_port_counters *pc)
{
	struct nvo_fdb_key key = { .vni = vni };
	struct nvo_fdb_entry *e;
	__u64 now = bpf_ktime_get_ns();

	if (!(net->flags & (dest == NVO_DEST_PORT ? NVO_NET_LEARN_PORTS : NVO_NET_LEARN_TUNNELS)))
		return 0;
	__builtin_memcpy(key.mac, mac, 6);
	e = bpf_map_lookup_elem(&fdb, &key);
	if (e) {
		if (e->origin == NVO_ORIGIN_STATIC)
			return 0;
		if (e->origin == NVO_ORIGIN_EVPN) {
			/* Only a local port overrides the control plane (the pipeline's rule): the
			 * MAC moved here. Reported at once (nvod writes EVPN entries with
			 * reported_ns 0), then at most once a second while nvod decides. */
			if (dest != NVO_DEST_PORT)
				return 0;
			/* The pipeline's bounds first, as Fdb::learn checks them: the network's,
			 * then the port's. */
			__u32 eslot = net->slot;
			__s64 *nb = bpf_map_lookup_elem(&learn_budget, &eslot);
			if (nb && *nb <= 0) {
				limit_hit(net, pc, dest, 0);
				return 0;
			}
			if (dest_budget && *dest_budget <= 0) {
				limit_hit(net, pc, dest, 1);
				return 1;
			}
			if (now - e->reported_ns >= NVO_EVPN_REPORT_NS) {
				e->reported_ns = now;
				report(vni, mac, dest, port_id, remote);
			}
			return 0;
		}
		int same = e->dest == dest &&
			   (dest == NVO_DEST_PORT ? e->port_id == port_id : e->remote[0] == remote);
		if (same) {
			if (now - e->reported_ns >= net->refresh_ns) {
				e->reported_ns = now;
				report(vni, mac, dest, port_id, remote);
			}
			return 0;
		}
		if (e->dest == NVO_DEST_PORT && dest != NVO_DEST_PORT) {
			struct nvo_net_counters *c = net_count(net);
			if (c)
				c->learn_local_conflict += 1;
			return 0;
		}
		if (!dest_budget || !spend(dest_budget)) {
			limit_hit(net, pc, dest, 1);
			return 1;
		}
		e->dest = dest;
		e->port_id = port_id;
		e->remote[0] = remote;
		e->remote[1] = 0;
		e->remote[2] = 0;
		e->remote[3] = 0;
		e->reported_ns = now;
		report(vni, mac, dest, port_id, remote);
		return 0;
	}

	__u32 slot = net->slot;
	__s64 *budget = bpf_map_lookup_elem(&learn_budget, &slot);
	if (!budget)
		return 0;
	if (!spend(budget)) {
		limit_hit(net, pc, dest, 0);
		return 0;
	}
	if (!dest_budget || !spend(dest_budget)) {
		__sync_fetch_and_add(budget, 1);
		limit_hit(net, pc, dest, 1);
		return 1;
	}
	struct nvo_fdb_entry fresh = {
		.dest = dest,
		.origin = NVO_ORIGIN_LEARNED,
		.port_id = port_id,
		.reported_ns = now,
	};
	fresh.remote[0] = remote;
	if (bpf_map_update_elem(&fdb, &key, &fresh, BPF_NOEXIST)) {
		/* Another CPU learned it first, or the table is full: the budgets go back. */
		__sync_fetch_and_add(budget, 1);
		__sync_fetch_and_add(dest_budget, 1);
		return 0;
	}
	report(vni, mac, dest, port_id, remote);
	return 0;
}

#endif
