/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * nvo's kernel datapath (docs/design/ebpf.md): two tc programs and an XDP relay over maps
 * nvod fills from the same desired state as its userspace pipeline.
 *
 *   nvo_port      tc ingress of each port's host-side interface: a frame from a container
 *   nvo_underlay  tc ingress of the locator's interface: a tunnel packet for this node
 *   nvo_relay     XDP on the locator's interface, where it can run: overlay packets for
 *                 another node relayed before the stack sees them (relay.h); the rest passes
 *
 * Neither knows a tunnel protocol: headers come from templates and receive rules nvod compiles
 * from each profile. What the programs do not do goes to nvod (`punts` ring, or the host stack
 * for underlay packets), never to the floor. Every drop is counted by its DropReason code.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "layout.h"
#include "drop_reasons.h"
#include "maps.h"
#include "policy_maps.h"
#include "common.h"
#include "hash.h"
#include "learn.h"
#include "policy.h"
#include "encap.h"
#include "out.h"
#include "port.h"
#include "relay.h"
#include "underlay.h"

SEC("classifier")
int nvo_port(struct __sk_buff *skb)
{
	return port_in(skb);
}

SEC("classifier")
int nvo_underlay(struct __sk_buff *skb)
{
	return underlay_in(skb);
}

SEC("xdp")
int nvo_relay(struct xdp_md *ctx)
{
	return relay_xdp(ctx);
}

char LICENSE[] SEC("license") = "GPL";
