/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What every program uses: counters, the one place drops are counted, verdicts in skb->cb,
 * punting a frame to nvod, tracing what is sent.
 */
#ifndef NVO_COMMON_H
#define NVO_COMMON_H

#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define ETH_P_ARP 0x0806
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_ICMPV6 58
#define IPPROTO_GRE 47
#define AF_INET 2

/* Flags of bpf_skb_adjust_room missing from older uapi headers (Linux 6.3). */
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

/* Keeps the compiler from reloading a value whose bounds a check just established (the
 * verifier only knows the bounds of the register that was checked). */
#define NVO_BARRIER(x) asm volatile("" : "+r"(x))

/* A function the verifier checks once, on its own (see NVO_FUNC below). */
#define NVO_FUNC_EARLY __attribute__((noinline))

/* Bytes in front of the data of a ring record (struct nvo_punt or nvo_trace, padded). */
#define NVO_RECORD_HEAD 48

static __always_inline struct nvo_config *node_config(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&config, &zero);
}

static __always_inline struct nvo_node_counters *node_count(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&node_counters, &zero);
}

static __always_inline struct nvo_net_counters *net_count(const struct nvo_network *net)
{
	__u32 slot = net->slot;
	return bpf_map_lookup_elem(&net_counters, &slot);
}

static __always_inline struct nvo_port_counters *port_count(__u32 slot)
{
	return bpf_map_lookup_elem(&port_counters, &slot);
}

static __always_inline void set_verdict(struct __sk_buff *skb, __u32 verdict, __u32 arg,
					__u32 reason)
{
	skb->cb[0] = verdict;
	skb->cb[1] = arg;
	skb->cb[2] = reason;
}

static __always_inline struct nvo_scratch *cpu_scratch(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	return bpf_map_lookup_elem(&scratch, &cpu);
}

/* Takes one of this CPU's monitor tokens: NVO_MONITOR_RATE a second, a burst of as many
 * (refilled from the clock as events come; a fraction of a token keeps its time counting). */
static __always_inline int monitor_token(void)
{
	__u32 zero = 0;
	struct nvo_monitor_bucket *b = bpf_map_lookup_elem(&monitor_bucket, &zero);
	__u64 now, elapsed, add;

	if (!b)
		return 0;
	now = bpf_ktime_get_ns();
	if (b->filled_ns == 0) {
		b->tokens = NVO_MONITOR_RATE;
		b->filled_ns = now;
	}
	elapsed = now - b->filled_ns;
	add = elapsed >= 1000000000ULL ? NVO_MONITOR_RATE : elapsed * NVO_MONITOR_RATE / 1000000000ULL;
	if (add) {
		b->tokens += add;
		if (b->tokens > NVO_MONITOR_RATE)
			b->tokens = NVO_MONITOR_RATE;
		b->filled_ns = now;
	}
	if (!b->tokens)
		return 0;
	b->tokens -= 1;
	return 1;
}

static __always_inline void monitor_count_lost(__u32 slot)
{
	__u64 *lost = bpf_map_lookup_elem(&monitor_lost, &slot);

	if (lost)
		*lost += 1;
}

/* The start of every monitor record: while `nvo monitor` listens (`monitor_on` has the bit
 * `kind` needs) and this CPU has a token, this CPU's scratch with a zeroed record head (else
 * NULL; no token counts in `monitor_lost`'s rate slot). */
static __always_inline struct nvo_scratch *monitor_begin(__u32 kind)
{
	__u32 zero = 0;
	__u32 *on = bpf_map_lookup_elem(&monitor_on, &zero);
	__u32 want = kind == NVO_MONITOR_TRACE ? NVO_MONITOR_ON_TRACES : NVO_MONITOR_ON_EVENTS;
	struct nvo_scratch *s;

	if (!on || !(*on & want))
		return NULL;
	if (!monitor_token()) {
		monitor_count_lost(NVO_MONITOR_LOST_RATE);
		return NULL;
	}
	s = cpu_scratch();
	if (!s)
		return NULL;
	__builtin_memset(s->head, 0, sizeof(s->head));
	s->monitor.kind = kind;
	return s;
}

/* While `nvo monitor` listens and this CPU has a token (monitor_begin), copies the first
 * bytes of the packet with what happened to it to the `monitor` ring; a full ring counts in
 * `monitor_lost`. Nobody listening, it costs the call and one array lookup. A function of its
 * own, verified once: the flag's branch is not explored again at every call site (nvo_port
 * is near the verifier's instruction budget). */
NVO_FUNC_EARLY int nvo_monitor_event(struct __sk_buff *skb, __u32 kind, __u32 arg, __u32 vni,
				     __u32 target)
{
	struct nvo_scratch *s = monitor_begin(kind);
	__u32 len;

	if (!s)
		return 0;
	len = skb->len;
	if (len > NVO_MONITOR_CAPTURE)
		len = NVO_MONITOR_CAPTURE;
	s->monitor.arg = arg;
	s->monitor.ifindex = skb->ifindex;
	s->monitor.len = skb->len;
	s->monitor.captured = len;
	s->monitor.vni = vni;
	s->monitor.target = target;
	NVO_BARRIER(len);
	if (len == 0 || len > NVO_MONITOR_CAPTURE)
		return 0;
	NVO_BARRIER(len);
	if (bpf_skb_load_bytes(skb, 0, s->data, len) == 0 &&
	    bpf_ringbuf_output(&monitor, s, NVO_RECORD_HEAD + len, 0) == 0)
		return 0;
	monitor_count_lost(NVO_MONITOR_LOST_RING);
	return 0;
}

/* nvo_monitor_event for the XDP relay: the same record, the bytes read from the XDP buffer. */
NVO_FUNC_EARLY int nvo_monitor_xdp(struct xdp_md *ctx, __u32 kind, __u32 arg, __u32 target)
{
	struct nvo_scratch *s = monitor_begin(kind);
	__u32 len;

	if (!s)
		return 0;
	len = ctx->data_end - ctx->data;
	s->monitor.arg = arg;
	s->monitor.ifindex = ctx->ingress_ifindex;
	s->monitor.len = len;
	if (len > NVO_MONITOR_CAPTURE)
		len = NVO_MONITOR_CAPTURE;
	s->monitor.captured = len;
	s->monitor.target = target;
	NVO_BARRIER(len);
	if (len == 0 || len > NVO_MONITOR_CAPTURE)
		return 0;
	NVO_BARRIER(len);
	if (bpf_xdp_load_bytes(ctx, 0, s->data, len) == 0 &&
	    bpf_ringbuf_output(&monitor, s, NVO_RECORD_HEAD + len, 0) == 0)
		return 0;
	monitor_count_lost(NVO_MONITOR_LOST_RING);
	return 0;
}

/* The one place a drop is counted: by reason, and against the port it came from, if any; and
 * reported to `nvo monitor` while it listens. */
static __always_inline int drop(struct __sk_buff *skb, __u32 reason, struct nvo_port_counters *pc)
{
	__u32 slot = reason;
	__u64 *n = bpf_map_lookup_elem(&drop_counters, &slot);
	if (n)
		*n += 1;
	if (pc)
		pc->drops += 1;
	nvo_monitor_event(skb, NVO_MONITOR_DROP, reason, 0, 0);
	set_verdict(skb, NVO_VERDICT_DROP, 0, reason);
	return TC_ACT_SHOT;
}

/* Copies `len` bytes of the frame from `off` behind the record head already in `s`, and writes
 * the record to `ring`. Returns 0, or -1 when it did not fit (or `len` is out of range). */
static __always_inline int ring_out(void *ring, struct __sk_buff *skb, struct nvo_scratch *s,
				    __u32 off, __u32 len)
{
	/* Two checks with a barrier between: fused into one unsigned compare on a copy, they
	 * would leave the verifier without the lower bound. */
	if (len > NVO_PUNT_MAX)
		return -1;
	NVO_BARRIER(len);
	if (len == 0)
		return -1;
	NVO_BARRIER(len);
	if (bpf_skb_load_bytes(skb, off, s->data, len))
		return -1;
	return bpf_ringbuf_output(ring, s, NVO_RECORD_HEAD + len, 0) ? -1 : 0;
}

/* A function the verifier checks once, on its own, rather than at every call site: its
 * arguments are the context and scalars (the BPF calling convention allows five). */
#define NVO_FUNC __attribute__((noinline))

/* Hands the frame (bytes from `off`) to nvod. `kind_off`: NVO_PUNT_* | off << 8;
 * `remote_entropy`: the IPv4 remote | entropy << 32. */
NVO_FUNC int nvo_punt(struct __sk_buff *skb, __u32 kind_off, __u32 port_id, __u32 vni,
		      __u64 remote_entropy)
{
	__u32 kind = kind_off & 0xff, off = kind_off >> 8;
	__u32 remote = (__u32)remote_entropy;
	__u16 entropy = remote_entropy >> 32;
	struct nvo_node_counters *nc = node_count();
	struct nvo_scratch *s = cpu_scratch();
	__u32 len = skb->len > off ? skb->len - off : 0;
	int ok = -1;

	if (s) {
		__builtin_memset(s->head, 0, sizeof(s->head));
		s->punt.kind = kind;
		s->punt.port_id = port_id;
		s->punt.vni = vni;
		s->punt.len = len;
		s->punt.remote[0] = remote;
		s->punt.gso_size = skb->gso_size;
		s->punt.entropy = entropy;
		ok = ring_out(&punts, skb, s, off, len);
	}
	if (nc) {
		if (ok == 0)
			nc->punted += 1;
		else
			nc->punt_lost += 1;
	}
	return ok;
}

static __always_inline int punt(struct __sk_buff *skb, __u32 kind, __u32 port_id, __u32 vni,
				__u32 off, __u32 remote, __u16 entropy)
{
	return nvo_punt(skb, kind | (off << 8), port_id, vni, remote | ((__u64)entropy << 32));
}

/* With tracing on, copies what is about to be sent (the whole skb) to the trace ring. */
static __always_inline void trace_out(struct __sk_buff *skb, const struct nvo_config *cfg,
				      __u32 kind, __u32 target)
{
	struct nvo_scratch *s;

	if (!(cfg->flags & NVO_CFG_TRACE))
		return;
	s = cpu_scratch();
	if (!s)
		return;
	__builtin_memset(s->head, 0, sizeof(s->head));
	s->trace.kind = kind;
	s->trace.target = target;
	s->trace.len = skb->len;
	ring_out(&trace, skb, s, 0, skb->len);
}

/* A 16-bit value of a header at a byte offset, from the packet. */
static __always_inline int load_be16(struct __sk_buff *skb, __u32 off, __u16 *out)
{
	__u16 v;
	if (bpf_skb_load_bytes(skb, off, &v, 2))
		return -1;
	*out = bpf_ntohs(v);
	return 0;
}

static __always_inline int mac_is_multicast(const __u8 *mac)
{
	return mac[0] & 1;
}

static __always_inline int mac_eq(const __u8 *a, const __u8 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4] &&
	       a[5] == b[5];
}

static __always_inline int mac_is_zero(const __u8 *mac)
{
	return (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) == 0;
}

#endif
