/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The layout of every map the programs share with nvod. crates/ebpf/src/layout.rs mirrors each
 * struct field for field (#[repr(C)]); both sides assert the sizes below, and the differential
 * tests would fail on any other disagreement. Change both files together.
 *
 * Byte order: addresses, ports and MACs are in network order (as on the wire); every other
 * integer is in host order. IPv4 addresses sit in the first 4 bytes of a 16-byte address with the
 * rest zero (the kernel path carries IPv4 underlays only; see docs/design/ebpf.md).
 */
#ifndef NVO_LAYOUT_H
#define NVO_LAYOUT_H

/* Bounds the programs are compiled with. */
#define NVO_MAX_TMPL 64        /* tunnel header bytes the kernel path pushes */
#define NVO_MAX_MATCHES 4      /* receive matches per profile */
#define NVO_MATCH_LEN 8        /* bytes one match tests */
#define NVO_KEY_LEN 8          /* receive key bytes */
#define NVO_MAX_ORDER 8        /* profiles tried on one transport */
#define NVO_MAX_PROFILES 64    /* the engine's profile limit */
#define NVO_MAX_FLOOD 256      /* the pipeline's flood-list limit */
#define NVO_MAX_NET_PORTS 64   /* local ports one flood reaches in the kernel; more: userspace */
#define NVO_PUNT_MAX 65536     /* frame bytes a punt record carries */
#define NVO_DROP_SLOTS 64      /* drop counters (codes 1..63) */
#define NVO_MAX_ENTROPY 16384  /* entries of the entropy source-port table */
#define NVO_RELAY_LOCS 8       /* locators of one relay next hop (the overlay's default limit) */

/* nvo_config.flags */
#define NVO_CFG_TRACE 1        /* every packet a program sends is copied to the trace ring */
#define NVO_CFG_DF 2           /* Don't Fragment on outer IPv4 */
#define NVO_CFG_TTL_INHERIT 4  /* outer TTL from the inner IP packet */
#define NVO_CFG_TOS_INHERIT 8  /* outer TOS from the inner IP packet */

/* The node: one entry of the array map `config`. */
struct nvo_config {
	__u32 underlay_ifindex; /* where tunnel packets leave */
	__u32 locator;          /* IPv4 source of tunnel packets, network order */
	__u32 flags;            /* NVO_CFG_* */
	__u16 entropy_ports;    /* entries of `entropy_ports` in use, at least 1 */
	__u8 ttl;               /* outer TTL when not inherited */
	__u8 tos;               /* outer TOS when not inherited */
	__u8 multicast_ttl;     /* outer TTL towards a multicast group */
	__u8 underlay_mac[6];   /* source MAC of what goes to a multicast group */
	__u8 pad;
};

/* port_info.flags */
#define NVO_PORT_VETH 1        /* the other end is a veth peer: bpf_redirect_peer reaches it */
#define NVO_PORT_USERSPACE 2   /* nvod reads and writes this port itself (TAP): punt to it */
#define NVO_PORT_TAPPED 4      /* `nvo capture` taps the host end: deliver through its egress
                                * (bpf_redirect), where the tap sees the frame, not to the peer */

/* A port by the ifindex of its interface (map `ports`, frames in) and by its id (map
 * `port_out`, frames out). */
struct nvo_port {
	__u32 port_id;  /* the pipeline's PortId */
	__u32 vni;      /* its network */
	__u32 ifindex;
	__u32 slot;     /* index into `port_counters` */
	__u32 flags;    /* NVO_PORT_* */
};

/* A tunnel header as pushed: a profile's template with VNI, payload and parameters written in. */
struct nvo_tmpl {
	__u8 bytes[NVO_MAX_TMPL];
	__u8 len;           /* bytes used, 0..NVO_MAX_TMPL */
	__u8 entropy_off;   /* where the flow entropy goes ... */
	__u8 entropy_len;   /* ... and how many bytes (0: none), big-endian, low bytes of a u16 */
	__u8 transport;     /* NVO_TRANSPORT_* */
	__u16 port;         /* UDP destination port, host order (UDP transport) */
	__u8 protocol;      /* IP protocol (IP transport) */
	__u8 pad;
};

#define NVO_TRANSPORT_UDP 1
#define NVO_TRANSPORT_IP 2

/* nvo_network.flags */
#define NVO_NET_LEARN_PORTS 1  /* learn source MACs of local ports' frames */
#define NVO_NET_BUM_HEAD_END 2 /* flood to the flood list */
#define NVO_NET_BUM_GROUP 4    /* flood once to `group` */
#define NVO_NET_BUM_USER 8     /* flooding is userspace's (an overlay tree) */
#define NVO_NET_REMOTE_TMPL 16 /* some remotes have a header of their own: look in `remote_tmpl` */
#define NVO_NET_SUPPRESS 32    /* ARP suppression: answer requests from `neighbors` */
#define NVO_NET_KNOWN_ONLY 64  /* accept_remotes known: tunnel packets only from `vteps` entries marked known */
#define NVO_NET_LEARN_TUNNELS 128 /* learn inner source MACs of tunnel packets */

/* A network the kernel path forwards (map `networks`, by VNI). Networks that only userspace
 * serves have no entry: their ports carry no program and their keys say NVO_KEY_PASS. */
struct nvo_network {
	__u32 slot;          /* index into `net_counters` and `learn_budget` */
	__u32 flags;         /* NVO_NET_* */
	__u16 mtu;           /* tenant MTU (IP packet, no L2 header) */
	__u16 profile;       /* the engine's ProfileId */
	__u32 flood_count;   /* remotes in `flood` under this VNI */
	__u32 port_count;    /* ports in `net_ports` under this VNI */
	__u32 group;         /* the BUM multicast group (IPv4, network order) */
	__u64 refresh_ns;    /* report a learned MAC again after this long */
	struct nvo_tmpl tmpl;
};

/* A network's nth flood remote or local port. */
struct nvo_net_index {
	__u32 vni;
	__u32 index;
};

struct nvo_remote {
	__u32 addr[4];
};

/* How to reach a remote on the underlay (map `nexthops`, by IPv4 address): nvod resolves it
 * from the host's routes and neighbours. Without an entry the kernel resolves it itself
 * (bpf_redirect_neigh) or hands the packet to nvod's socket. */
struct nvo_nexthop {
	__u32 ifindex;
	__u8 smac[6];
	__u8 dmac[6];
};

/* A per-destination header (map `remote_tmpl`). */
struct nvo_remote_key {
	__u32 vni;
	__u32 addr[4];
};

/* ARP suppression's neighbour table (map `neighbors`): the pipeline's, IPv4 entries of the
 * networks that suppress. */
struct nvo_neigh_key {
	__u32 vni;
	__u32 ip;           /* network order */
};

struct nvo_neigh {
	__u8 mac[6];
	__u16 pad;
	__u32 port_id;      /* the local port it lives behind (a port answers for itself); 0: none */
};

/* FDB (map `fdb`). */
struct nvo_fdb_key {
	__u32 vni;
	__u8 mac[6];
	__u16 pad;
};

#define NVO_DEST_PORT 1
#define NVO_DEST_REMOTE 2
#define NVO_DEST_NODE 3        /* an overlay node: userspace routes it */

#define NVO_ORIGIN_STATIC 1
#define NVO_ORIGIN_LEARNED 2
#define NVO_ORIGIN_EVPN 3

struct nvo_fdb_entry {
	__u8 dest;          /* NVO_DEST_* */
	__u8 origin;        /* NVO_ORIGIN_* */
	__u16 pad;
	__u32 port_id;      /* NVO_DEST_PORT: the port; NVO_DEST_NODE: the node ID */
	__u32 remote[4];    /* NVO_DEST_REMOTE */
	__u64 reported_ns;  /* learned entries: when the kernel last told nvod about it */
};

/* Receive key (map `keys`): the bytes of a profile's key field. */
struct nvo_key {
	__u16 profile;
	__u8 len;
	__u8 pad;
	__u8 bytes[NVO_KEY_LEN];
};

#define NVO_KEY_LOCAL 1        /* a kernel network: decapsulate here */
#define NVO_KEY_PASS 2         /* a userspace network or a relay: to nvod's socket */

struct nvo_key_target {
	__u32 kind;
	__u32 vni;
};

/* One receive match: (bytes[offset..offset+len] & mask) == value. */
struct nvo_match {
	__u16 offset;
	__u8 len;
	__u8 pad;
	__u8 mask[NVO_MATCH_LEN];
	__u8 value[NVO_MATCH_LEN];
};

/* nvo_profile.flags */
#define NVO_PROF_VALID 1
#define NVO_PROF_LEN_FIELD 2   /* header length = base + (bytes[len_offset] & len_mask) * len_scale */
#define NVO_PROF_PAYLOAD_FIELD 4
#define NVO_PROF_DONT_LEARN 8  /* `dont_learn` is a match */
#define NVO_PROF_KERNEL_MATCH 16 /* `kernel` must hold, else the packet is userspace's */
#define NVO_PROF_KEY 32        /* has a key field */

/* What the receive side knows of a profile (array map `profiles`, by ProfileId). */
struct nvo_profile {
	__u32 flags;
	__u16 min_len;      /* the template's length: a header claiming less is truncated */
	__u16 len_base;
	__u16 len_offset;
	__u8 len_mask;
	__u8 len_scale;
	__u8 match_count;
	__u8 key_len;
	__u16 key_offset;
	__u16 payload_offset;   /* payload field */
	__u8 payload_len;
	__u8 pad;
	__u64 payload_ethernet; /* the payload field's value for Ethernet */
	__u64 payload_known[3]; /* values naming IPv4, IPv6, NSH (known but not Ethernet) */
	__u8 payload_known_mask; /* which of payload_known are set */
	__u8 pad2[7];
	struct nvo_match matches[NVO_MAX_MATCHES];
	struct nvo_match dont_learn;
	struct nvo_match kernel;
};

/* The profiles on one transport, in receive order (map `transports`). */
struct nvo_transport_key {
	__u8 kind;          /* NVO_TRANSPORT_* */
	__u8 pad;
	__u16 value;        /* UDP port or IP protocol, host order */
};

#define NVO_TRANSPORT_VXLAN 1   /* the VXLAN port: its drops keep VXLAN's own reasons */

struct nvo_transport {
	__u32 count;
	__u16 profiles[NVO_MAX_ORDER];
	__u32 flags;        /* NVO_TRANSPORT_VXLAN */
};

/* Counters: per CPU, summed by nvod, merged into /v1/counters under the pipeline's names. */
struct nvo_net_counters {
	__u64 rx_port_frames;
	__u64 rx_underlay_frames;
	__u64 delivered;
	__u64 encap_unicast;
	__u64 encap_flood;
	__u64 learn_limit;
	__u64 learn_limit_port;
	__u64 learn_limit_remote;
	__u64 learn_local_conflict;
};

struct nvo_port_counters {
	__u64 rx_frames;
	__u64 rx_bytes;
	__u64 tx_frames;
	__u64 tx_bytes;
	__u64 drops;
	__u64 learn_limit;
};

struct nvo_node_counters {
	__u64 rx_packets;      /* tunnel packets decapsulated (or dropped) by the kernel */
	__u64 rx_bytes;
	__u64 tx_packets;      /* tunnel packets the kernel sent */
	__u64 tx_bytes;
	__u64 tx_errors;
	__u64 relayed;
	__u64 punted;          /* frames handed to nvod */
	__u64 punt_lost;       /* ... that did not fit the punt ring */
	__u64 events_lost;     /* learn reports that did not fit the event ring */
	__u64 passed;          /* underlay packets left to the host stack (nvod's sockets) */
};

/* The overlay relay (map `relays`, by application and destination node): the locators of the
 * one next hop a packet for `dst` goes to, when that is a node other than this one. nvod writes
 * an entry only for such routes (and for every other node of the LIB, reached directly); trees,
 * local copies and IPv6 locators have none, and their packets are nvod's. */
struct nvo_relay_key {
	__u32 dst;          /* destination node ID */
	__u8 app;           /* the header's application number (7, 4, 6) */
	__u8 pad[3];
};

struct nvo_relay_loc {
	__u32 addr;         /* IPv4, network order */
	__u32 weight;       /* 0: drained */
};

struct nvo_relay {
	__u32 count;        /* locators in use */
	__u32 total;        /* sum of their weights */
	struct nvo_relay_loc locs[NVO_RELAY_LOCS];
};

/* How nvod's overlay socket sends (array map `relay_config`, one entry): a relayed packet leaves
 * as that socket would send it. */
struct nvo_relay_config {
	__u16 port;         /* the overlay's UDP port, host order; 0: the kernel relays nothing */
	__u16 sports;       /* entries of `relay_ports` in use */
	__u32 pad;
};

/* A remote VTEP of a network (hash `vteps`): whether the network knows it (accept_remotes), and
 * how many more MACs the kernel may learn behind it before nvod has caught up. */
struct nvo_vtep_key {
	__u32 vni;
	__u32 addr;        /* IPv4, network order */
};

struct nvo_vtep {
	__s64 budget;
	__u32 known;       /* 1: in the known set; 0: only a learning budget (accept_remotes any) */
	__u32 pad;
};

/* Learn reports (ring `events`). */
#define NVO_EVENT_LEARN 1      /* a new or moved source MAC, or one still active */
#define NVO_EVENT_IDENTITY 2   /* a group learned from a GBP header (policy.h): port_id = the
                                * group, dest = the family (4, 6), remote = the address */

struct nvo_event {
	__u32 kind;
	__u32 vni;
	__u8 mac[6];
	__u8 dest;          /* NVO_DEST_PORT or NVO_DEST_REMOTE */
	__u8 pad;
	__u32 port_id;
	__u32 remote[4];
};

/* Frames for nvod (ring `punts`): a header, then `len` bytes of the frame. */
#define NVO_PUNT_PORT 1        /* a frame from port `port_id`: nvod runs the pipeline on it */
#define NVO_PUNT_DELIVER 2     /* deliver this frame to userspace port `port_id` */
#define NVO_PUNT_ENCAP 3       /* encapsulate this frame of `vni` to `remote` (unresolved next hop);
				* port_id: its policy tag (bit 31 set: bit 16 the A bit, bits 0-15 the group) */
#define NVO_PUNT_ANSWERED 4    /* an ARP request from port `port_id` the kernel answered: snoop it */

struct nvo_punt {
	__u32 kind;            /* NVO_PUNT_* */
	__u32 port_id;
	__u32 vni;
	__u32 len;             /* frame bytes that follow */
	__u32 remote[4];
	__u16 gso_size;        /* a GSO frame's segment size, 0 otherwise */
	__u16 entropy;
	__u32 pad;
};

/* What a program did with a frame, written to skb->cb so that BPF_PROG_RUN returns it. */
#define NVO_VERDICT_PASS 0
#define NVO_VERDICT_DROP 1
#define NVO_VERDICT_PORT 2     /* to a port (cb[1] = port id) */
#define NVO_VERDICT_REMOTE 3   /* tunnelled to one remote */
#define NVO_VERDICT_FLOOD 4    /* copies to ports and remotes */
#define NVO_VERDICT_PUNT 5     /* to nvod */

/* Trace records (ring `trace`, only with NVO_CFG_TRACE): each copy a program sends. */
#define NVO_TRACE_PORT 1
#define NVO_TRACE_UNDERLAY 2
#define NVO_TRACE_RELAY 3 /* monitor records only: relayed, not decapsulated, to `target` */

struct nvo_trace {
	__u32 kind;            /* NVO_TRACE_* */
	__u32 target;          /* port id, or the egress ifindex */
	__u32 len;
	__u32 pad;
};

/* Records for `nvo monitor` (ring `monitor`): a header, then the first `captured` bytes of the
 * packet as the program saw it. `monitor_on` is a bit field: NVO_MONITOR_ON_EVENTS while
 * someone listens (drops and floods are recorded), NVO_MONITOR_ON_TRACES while someone asked
 * for traces (each packet sent is recorded). */
#define NVO_MONITOR_CAPTURE 128
#define NVO_MONITOR_ON_EVENTS 1
#define NVO_MONITOR_ON_TRACES 2

/* Records a second each CPU writes at most (a burst of as many): beyond, an event is counted at
 * NVO_MONITOR_LOST_RATE of `monitor_lost` and nothing is copied. nvod's datapath applies the
 * same rate to what it hands on (nvo_datapath::monitor::RATE). */
#define NVO_MONITOR_RATE 1000
#define NVO_MONITOR_LOST_RING 0 /* `monitor_lost` slot: the ring was full */
#define NVO_MONITOR_LOST_RATE 1 /* `monitor_lost` slot: beyond NVO_MONITOR_RATE */

/* One CPU's token bucket (`monitor_bucket`). */
struct nvo_monitor_bucket {
	__u64 tokens;
	__u64 filled_ns; /* when tokens were last added; 0 before the first event */
};

#define NVO_MONITOR_DROP 0     /* arg: the drop code */
#define NVO_MONITOR_FLOOD 1    /* arg: copies sent */
#define NVO_MONITOR_TRACE 2    /* arg: NVO_TRACE_PORT, NVO_TRACE_UNDERLAY or NVO_TRACE_RELAY */

struct nvo_monitor {
	__u32 kind;            /* NVO_MONITOR_* */
	__u32 arg;             /* per kind (above) */
	__u32 ifindex;         /* the interface the program ran on */
	__u32 len;             /* the packet's length */
	__u32 captured;        /* bytes that follow */
	__u32 vni;             /* flood, trace: the network */
	__u32 target;          /* trace: the port id, or the remote's (next hop's) IPv4 address */
	__u32 pad;
};

/* The sizes crates/ebpf/src/layout.rs asserts too. */
_Static_assert(sizeof(struct nvo_config) == 24, "nvo_config");
_Static_assert(sizeof(struct nvo_port) == 20, "nvo_port");
_Static_assert(sizeof(struct nvo_tmpl) == 72, "nvo_tmpl");
_Static_assert(sizeof(struct nvo_network) == 104, "nvo_network");
_Static_assert(sizeof(struct nvo_net_index) == 8, "nvo_net_index");
_Static_assert(sizeof(struct nvo_remote) == 16, "nvo_remote");
_Static_assert(sizeof(struct nvo_nexthop) == 16, "nvo_nexthop");
_Static_assert(sizeof(struct nvo_remote_key) == 20, "nvo_remote_key");
_Static_assert(sizeof(struct nvo_fdb_key) == 12, "nvo_fdb_key");
_Static_assert(sizeof(struct nvo_neigh_key) == 8, "nvo_neigh_key");
_Static_assert(sizeof(struct nvo_neigh) == 12, "nvo_neigh");
_Static_assert(sizeof(struct nvo_fdb_entry) == 32, "nvo_fdb_entry");
_Static_assert(sizeof(struct nvo_key) == 12, "nvo_key");
_Static_assert(sizeof(struct nvo_key_target) == 8, "nvo_key_target");
_Static_assert(sizeof(struct nvo_match) == 20, "nvo_match");
_Static_assert(sizeof(struct nvo_profile) == 184, "nvo_profile");
_Static_assert(sizeof(struct nvo_transport_key) == 4, "nvo_transport_key");
_Static_assert(sizeof(struct nvo_transport) == 24, "nvo_transport");
_Static_assert(sizeof(struct nvo_net_counters) == 72, "nvo_net_counters");
_Static_assert(sizeof(struct nvo_port_counters) == 48, "nvo_port_counters");
_Static_assert(sizeof(struct nvo_vtep_key) == 8, "nvo_vtep_key");
_Static_assert(sizeof(struct nvo_vtep) == 16, "nvo_vtep");
_Static_assert(sizeof(struct nvo_node_counters) == 80, "nvo_node_counters");
_Static_assert(sizeof(struct nvo_relay_key) == 8, "nvo_relay_key");
_Static_assert(sizeof(struct nvo_relay) == 72, "nvo_relay");
_Static_assert(sizeof(struct nvo_relay_config) == 8, "nvo_relay_config");
_Static_assert(sizeof(struct nvo_event) == 36, "nvo_event");
_Static_assert(sizeof(struct nvo_punt) == 40, "nvo_punt");
_Static_assert(sizeof(struct nvo_trace) == 16, "nvo_trace");
_Static_assert(sizeof(struct nvo_monitor) == 32, "nvo_monitor");

#endif
