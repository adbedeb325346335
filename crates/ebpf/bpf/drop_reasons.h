/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Drop reason codes: nvo_pipeline::DropReason, whose codes never change meaning (the model is
 * Cilium's drop_reasons.h). The Rust test `drop_reasons_match_the_pipeline` (crates/ebpf/src/
 * layout.rs) reads this file and fails unless every line below names a reason of the enum with
 * its code, and every reason of the enum is here.
 */
#ifndef NVO_DROP_REASONS_H
#define NVO_DROP_REASONS_H

#define NVO_DROP_MALFORMED_FRAME 1
#define NVO_DROP_UNKNOWN_PORT 2
#define NVO_DROP_INVALID_SOURCE_MAC 3
#define NVO_DROP_HAIRPIN 4
#define NVO_DROP_TOO_BIG 5
#define NVO_DROP_NO_DESTINATION 6
#define NVO_DROP_MALFORMED_VXLAN 7
#define NVO_DROP_VXLAN_FLAGS 8
#define NVO_DROP_UNKNOWN_VNI 9
#define NVO_DROP_REMOTE_TO_REMOTE 10
#define NVO_DROP_TX_ERROR 11
#define NVO_DROP_QUEUE_FULL 12
#define NVO_DROP_MALFORMED_TUNNEL 13
#define NVO_DROP_PROFILE_MISMATCH 14
#define NVO_DROP_STT_REASSEMBLY 15
#define NVO_DROP_HOP_LIMIT 16
/* STT runs in userspace only; its drop codes are listed so that the table stays whole. */
#define NVO_DROP_STT_MALFORMED 17
#define NVO_DROP_STT_WRONG_PORT 18
#define NVO_DROP_STT_BAD_CHECKSUM 19
#define NVO_DROP_STT_DUPLICATE 20
#define NVO_DROP_STT_OVERLAP 21
#define NVO_DROP_STT_TOO_LARGE 22
#define NVO_DROP_STT_TOO_MANY_HOLES 23
#define NVO_DROP_UNKNOWN_REMOTE 24
#define NVO_DROP_PORT_LEARN_LIMIT 25
/* VLAN trunks run in userspace only (nvod reads their interfaces itself). */
#define NVO_DROP_VLAN_UNTAGGED 26
#define NVO_DROP_UNKNOWN_VLAN 27
/* Shared ports (virtual ports per MAC) run in userspace only, as trunks do. */
#define NVO_DROP_UNKNOWN_VPORT 28
/* Ports with a QoS policer run in userspace only (nvod reads them). */
#define NVO_DROP_QOS_POLICED 29
/* Flow tables run in userspace only (a port a rule covers is handed to nvod). */
#define NVO_DROP_FLOW_DROP 30
/* Identity policy: in the kernel (policy.h) and in the pipeline. */
#define NVO_DROP_POLICY_DENIED 31
/* L3 networks run in userspace only (compile.rs, Unsupported::L3Network). */
#define NVO_DROP_LINK_CONTROL 32

#endif
