/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The flow entropy of a frame, bit for bit the pipeline's (crates/pipeline/src/hash.rs and
 * frame.rs `entropy`): the FxHash step over 64-bit little-endian words, a short tail zero-padded
 * with its length in the top byte, MurmurHash3's fmix64, the four 16-bit lanes folded. The
 * fields: destination and source MAC, ethertype, and for IPv4/IPv6 that smoltcp accepts (the
 * same length checks) the addresses, the protocol and — TCP/UDP, not a fragment — the ports.
 * The differential tests compare every frame's outer source port, which carries it.
 */
#ifndef NVO_HASH_H
#define NVO_HASH_H

#define FH_K 0x517cc1b727220a95ULL
#define FH_SEED 0x9e3779b97f4a7c15ULL

static __always_inline __u64 fh_word(__u64 s, __u64 w)
{
	return (((s << 5) | (s >> 59)) ^ w) * FH_K;
}

/* A tail of `len` (< 8) bytes as one word. */
static __always_inline __u64 fh_tail(const __u8 *b, int len)
{
	__u64 w = 0;
#pragma unroll
	for (int i = 0; i < 7; i++)
		if (i < len)
			w |= (__u64)b[i] << (8 * i);
	return w | ((__u64)len << 56);
}

/* Eight bytes as one little-endian word. */
static __always_inline __u64 fh_full(const __u8 *b)
{
	__u64 w = 0;
#pragma unroll
	for (int i = 0; i < 8; i++)
		w |= (__u64)b[i] << (8 * i);
	return w;
}

static __always_inline __u16 fh_finish(__u64 h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (__u16)(h ^ (h >> 16) ^ (h >> 32) ^ (h >> 48));
}

/* The ports of a TCP or UDP header at `off`, when `avail` bytes of it are there. */
static __always_inline __u64 fh_ports(struct __sk_buff *skb, __u64 s, __u8 proto, __u32 off,
				      __u32 avail)
{
	__u8 p[4];
	if ((proto != IPPROTO_TCP && proto != IPPROTO_UDP) || avail < 4)
		return s;
	if (bpf_skb_load_bytes(skb, off, p, 4))
		return s;
	return fh_word(s, fh_tail(p, 4));
}

/* The entropy of the Ethernet frame at the start of the skb. */
NVO_FUNC __u32 nvo_flow_entropy(struct __sk_buff *skb)
{
	__u8 eth[ETH_HLEN];
	if (bpf_skb_load_bytes(skb, 0, eth, ETH_HLEN))
		return 0;
	__u16 ethertype = ((__u16)eth[12] << 8) | eth[13];
	__u32 len = skb->len > ETH_HLEN ? skb->len - ETH_HLEN : 0;
	__u64 s = FH_SEED;

	s = fh_word(s, fh_tail(eth, 6));
	s = fh_word(s, fh_tail(eth + 6, 6));
	s = fh_word(s, ethertype);
	if (ethertype == ETH_P_IP && len >= 20) {
		__u8 ip[20];
		if (bpf_skb_load_bytes(skb, ETH_HLEN, ip, 20))
			return fh_finish(s);
		__u32 hl = (ip[0] & 0xf) * 4;
		__u32 total = ((__u32)ip[2] << 8) | ip[3];
		/* smoltcp's Ipv4Packet::check_len */
		if (len < hl || hl > total || len < total || hl < 20)
			return fh_finish(s);
		s = fh_word(s, fh_tail(ip + 12, 4));
		s = fh_word(s, fh_tail(ip + 16, 4));
		s = fh_word(s, ip[9]);
		int more = ip[6] & 0x20;
		int offset = ((ip[6] & 0x1f) << 8) | ip[7];
		if (!more && offset == 0)
			s = fh_ports(skb, s, ip[9], ETH_HLEN + hl, total - hl);
	} else if (ethertype == ETH_P_IPV6 && len >= 40) {
		__u8 ip[40];
		if (bpf_skb_load_bytes(skb, ETH_HLEN, ip, 40))
			return fh_finish(s);
		__u32 payload = ((__u32)ip[4] << 8) | ip[5];
		/* smoltcp's Ipv6Packet::check_len */
		if (len < 40 + payload)
			return fh_finish(s);
		s = fh_word(s, fh_full(ip + 8));
		s = fh_word(s, fh_full(ip + 16));
		s = fh_word(s, fh_full(ip + 24));
		s = fh_word(s, fh_full(ip + 32));
		s = fh_word(s, ip[6]);
		s = fh_ports(skb, s, ip[6], ETH_HLEN + 40, payload);
	}
	return fh_finish(s);
}

#endif
