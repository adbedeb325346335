//! nvod's metric families (docs/metrics.md is the reference), rendered from a [`Snapshot`].
//!
//! Counters come from the maps `GET /v1/counters` answers with, key by key, so that a counter
//! added to the pipeline (a new drop reason, a new per-port counter) appears here without a
//! change: `nvo_drops_total{reason}` has one series per reason of the drop-reason table, and a
//! map key this file has no words for still becomes `nvo_<group>_<key>_total` with a generic
//! HELP. Labels are bounded: `vni` (networks, at most `[limits] networks`), `port` (at most
//! `[limits] ports`), `reason` (the drop-reason table), `neighbor` (configured BGP
//! neighbours), `table`, `type`, `state`, `profile`, `meter`; never a MAC, an address of a tenant or a
//! flow.

use std::collections::BTreeMap;

use nvo_api::{BgpSummary, Counters, MessageCounts, NeighborState, SessionState};

use crate::text::{name_part, Exposition, Kind, TextError};

mod policing;

pub use policing::Policer;

/// What nvod knows at one scrape.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// nvod's version.
    pub version: String,
    /// The datapath that forwards: "ebpf" or "userspace".
    pub datapath: String,
    /// Every counter, as `GET /v1/counters` shows them.
    pub counters: Counters,
    /// Node-wide tables and their `[limits]`.
    pub tables: Vec<Table>,
    /// Each network's profile and tables.
    pub networks: Vec<NetworkTables>,
    /// Each port's network: port name → VNI.
    pub ports: BTreeMap<String, u32>,
    /// The EVPN speaker, when it runs.
    pub bgp: Option<BgpSummary>,
    /// `stt_reassembly_bytes`: the most bytes STT reassembly holds.
    pub stt_limit_bytes: u64,
    /// Monitor events lost so far, by stage (`nvo monitor`, docs/monitor.md).
    pub monitor_lost: crate::monitor::Lost,
    /// Cluster mode, when it is on.
    pub cluster: Option<ClusterMetrics>,
    /// Packets each userspace datapath worker received, worker 0 first (one entry per
    /// worker; empty: an nvod that does not say, read as one worker).
    pub worker_packets: Vec<u64>,
    /// Each QoS profile's policer counters, summed over its attachments.
    pub qos: Vec<Policer>,
    /// Each flow-table meter's counters.
    pub meters: Vec<Policer>,
}

/// Cluster mode's link to etcd and what it skips (issue 19).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMetrics {
    /// Connected to etcd and watching.
    pub connected: bool,
    /// The etcd revision last applied.
    pub revision: u64,
    /// Objects skipped now.
    pub skipped: u64,
    /// Invalid or refused objects found so far.
    pub invalid_total: u64,
    /// Full reads after a reconnection.
    pub resyncs_total: u64,
    /// Registered hosts.
    pub hosts: u64,
}

/// A table's size against its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The table (the `table` label).
    pub name: &'static str,
    /// Entries now.
    pub entries: u64,
    /// The most it may hold.
    pub limit: u64,
}

/// One network's profile and tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkTables {
    /// VNI.
    pub vni: u32,
    /// Its encapsulation profile.
    pub profile: String,
    /// Its tables.
    pub tables: Vec<Table>,
}

/// Words for the counters this file knows: (key, HELP).
const NETWORK_HELP: &[(&str, &str)] = &[
    ("rx_port_frames", "Frames received from the network's local ports."),
    ("rx_underlay_frames", "Tunnel packets received for the network's VNI."),
    ("delivered", "Copies delivered to local ports (a flood counts once per port)."),
    ("encap_unicast", "Frames encapsulated to the one remote their destination is behind."),
    ("encap_flood", "Copies encapsulated by flooding (one per flood-list remote, or one to the multicast group)."),
    ("learned", "MACs learned (new learned FDB entries)."),
    ("moves", "Learned MACs that moved to another destination."),
    ("learn_limit", "Source MACs not learned: the network, or the port or remote they came from, was at its bound."),
    ("learn_limit_port", "Of learn_limit: frames from a port holding max_learned_per_port entries."),
    ("learn_limit_remote", "Of learn_limit: frames from a remote holding max_learned_per_remote entries."),
    ("learn_local_conflict", "Tunnelled frames whose source MAC is learned on a local port (the entry stays)."),
    ("aged", "Learned FDB entries removed by ageing."),
    ("arp_replies", "ARP requests an L3 network's gateway answered."),
    ("arp_requests", "ARP requests an L3 network's gateway sent."),
    ("nd_replies", "Neighbor solicitations an L3 network's gateway answered."),
    ("nd_requests", "Neighbor solicitations an L3 network's gateway sent."),
    ("arp_suppressed", "ARP requests from local ports answered from the neighbour table."),
    ("nd_suppressed", "Neighbor solicitations from local ports answered from the neighbour table."),
    ("arp_flooded", "ARP requests from local ports that were flooded."),
    ("nd_flooded", "Neighbor solicitations from local ports that were flooded."),
    ("evpn_moves", "EVPN-installed MACs that showed up on a local port."),
];

const PORT_HELP: &[(&str, &str)] = &[
    ("rx_frames", "Frames received from the port."),
    ("rx_bytes", "Bytes of the frames received from the port."),
    ("tx_frames", "Frames sent on the port."),
    ("tx_bytes", "Bytes of the frames sent on the port."),
    (
        "drops",
        "Frames from the port that were dropped, and frames to it that failed to go out.",
    ),
    (
        "learn_limit",
        "Frames from the port whose source MAC was not learned: the port's or the network's bound was reached.",
    ),
];

const UNDERLAY_HELP: &[(&str, &str)] = &[
    ("rx_packets", "Tunnel packets received on the underlay."),
    (
        "rx_bytes",
        "Bytes of the tunnel packets received (UDP payloads or IP payloads).",
    ),
    ("tx_packets", "Tunnel packets sent on the underlay."),
    ("tx_bytes", "Bytes of the tunnel packets sent."),
    (
        "tx_errors",
        "Tunnel packets that could not be sent or queued.",
    ),
    (
        "relayed",
        "Packets relayed to a next hop without decapsulation.",
    ),
    ("recv_truncated", "Underlay datagrams truncated on receive."),
    (
        "send_would_block",
        "Underlay sends that found the socket buffer full.",
    ),
    ("send_errors", "Underlay sends the kernel refused."),
    (
        "gso_fallbacks",
        "Sends that fell back from UDP GSO to one datagram each.",
    ),
    ("multicast_joins", "Underlay multicast groups joined."),
    ("multicast_leaves", "Underlay multicast groups left."),
    (
        "ila_tx_gso_whole",
        "GSO frames written to the ILA TUN whole, for the kernel to segment.",
    ),
    (
        "ila_tx_finished",
        "GSO frames for the ILA TUN cut into segments by nvod first (UDP GSO, IPv4 tenants' TCP).",
    ),
    (
        "ila_rx_gso_whole",
        "GSO packets read from the ILA TUN and translated back whole.",
    ),
    (
        "ila_rx_refused",
        "Packets read from the ILA TUN dropped: a virtio-net header that did not fit them.",
    ),
];

const STT_HELP: &[(&str, &str)] = &[
    ("segments", "STT segments pushed into reassembly."),
    ("frames_single", "STT frames that arrived in one segment."),
    (
        "frames_reassembled",
        "STT frames put together from several segments.",
    ),
    ("duplicates", "STT segments ignored as exact duplicates."),
    (
        "overlaps",
        "STT frames dropped for an overlap with other content.",
    ),
    (
        "bad_checksum",
        "STT segments dropped for a wrong TCP checksum.",
    ),
    (
        "malformed",
        "STT segments dropped for an impossible header or length.",
    ),
    (
        "not_stt",
        "TCP segments to the STT socket not to the STT port.",
    ),
    (
        "expired",
        "STT frames dropped unfinished when their time ran out.",
    ),
    (
        "evicted",
        "STT frames dropped unfinished to make room for a new one.",
    ),
    (
        "too_large",
        "STT frames refused for a declared length above stt_reassembly_bytes.",
    ),
    (
        "too_many_holes",
        "STT frames dropped for having too many holes.",
    ),
];

/// STT transmit's counters, in the same `stt` map (keys `tx_*`), exported as `nvo_stt_tx_*`.
const STT_TX_HELP: &[(&str, &str)] = &[
    (
        "tx_frames_kernel",
        "STT frames sent whole, cut into segments by the kernel's TCP segmentation (stt_offload).",
    ),
    (
        "tx_frames_software",
        "STT frames cut into segments by nvod and sent one datagram each.",
    ),
    (
        "tx_kernel_errors",
        "STT frames the kernel's TUN device refused, then cut by nvod.",
    ),
];

/// STT reassembly's gauges: (key, metric name, HELP).
const STT_GAUGES: &[(&str, &str, &str)] = &[
    (
        "in_progress",
        "nvo_stt_reassembly_frames_in_progress",
        "STT frames being reassembled now.",
    ),
    (
        "bytes_buffered",
        "nvo_stt_reassembly_buffered_bytes",
        "Bytes (declared lengths) of the STT frames being reassembled now.",
    ),
];

const OVERLAY_HELP: &[(&str, &str)] = &[
    ("forwarded", "Overlay packets sent from this node."),
    (
        "relayed",
        "Overlay packets relayed to a next hop (TTL - 1).",
    ),
    ("local", "Overlay packets with a copy for this node."),
    (
        "ttl_expired",
        "Overlay packets whose relay copies were dropped for their TTL.",
    ),
    (
        "no_route",
        "Overlay packets that went nowhere: no next hop had a usable locator.",
    ),
    (
        "no_locator",
        "Overlay next hops skipped for want of a locator.",
    ),
    (
        "split_horizon",
        "Overlay next hops skipped because the packet came from them.",
    ),
    ("replicated", "Overlay copies beyond the first of a packet."),
    (
        "malformed",
        "Received overlay packets whose header was refused.",
    ),
];

/// The exposition of `snap`.
pub fn render(snap: &Snapshot) -> Result<String, TextError> {
    let mut e = Exposition::new();
    e.family(
        "nvo_build_info",
        Kind::Gauge,
        "nvod's build: always 1, the version in a label.",
    )?
    .sample(&[("version", &snap.version)], 1)?;
    e.family(
        "nvo_datapath_info",
        Kind::Gauge,
        "The datapath forwarding on this node (ebpf or userspace): always 1.",
    )?
    .sample(&[("datapath", &snap.datapath)], 1)?;
    e.family(
        "nvo_datapath_workers",
        Kind::Gauge,
        "Userspace datapath threads forwarding (nvod's workers; 1 while the kernel path runs).",
    )?
    .sample(&[], snap.worker_packets.len().max(1) as u64)?;
    let mut per_worker = e.family(
        "nvo_datapath_worker_packets_total",
        Kind::Counter,
        "Packets (tunnel datagrams and port frames) each userspace datapath worker received.",
    )?;
    for (worker, &n) in snap.worker_packets.iter().enumerate() {
        per_worker.sample(&[("worker", &worker.to_string())], n)?;
    }
    let mut drops = e.family(
        "nvo_drops_total",
        Kind::Counter,
        "Frames and packets dropped, by reason (the drop-reason table; docs/metrics.md).",
    )?;
    for (reason, &n) in &snap.counters.drops {
        drops.sample(&[("reason", reason)], n)?;
    }
    keyed(
        &mut e,
        "network",
        "vni",
        NETWORK_HELP,
        snap.counters
            .networks
            .iter()
            .map(|(vni, c)| (vni.to_string(), c)),
    )?;
    keyed(
        &mut e,
        "port",
        "port",
        PORT_HELP,
        snap.counters.ports.iter().map(|(p, c)| (p.clone(), c)),
    )?;
    plain(
        &mut e,
        "nvo_underlay",
        UNDERLAY_HELP,
        &snap.counters.underlay,
        &[],
    )?;
    let (stt_tx, stt_reassembly): (BTreeMap<_, _>, BTreeMap<_, _>) = snap
        .counters
        .stt
        .iter()
        .map(|(k, &v)| (k.clone(), v))
        .partition(|(k, _)| k.starts_with("tx_"));
    plain(
        &mut e,
        "nvo_stt_reassembly",
        STT_HELP,
        &stt_reassembly,
        STT_GAUGES,
    )?;
    plain(&mut e, "nvo_stt", STT_TX_HELP, &stt_tx, &[])?;
    e.family(
        "nvo_stt_reassembly_limit_bytes",
        Kind::Gauge,
        "The most bytes STT reassembly holds (stt_reassembly_bytes).",
    )?
    .sample(&[], snap.stt_limit_bytes)?;
    plain(
        &mut e,
        "nvo_overlay",
        OVERLAY_HELP,
        &snap.counters.overlay,
        &[],
    )?;
    let mut lost = e.family(
        "nvo_monitor_events_lost_total",
        Kind::Counter,
        "Monitor events (nvo monitor) lost, by where: a listener's queue, the datapath's ring, the eBPF ring, the FDB event buffer, the datapath's rate limit.",
    )?;
    for (stage, n) in snap.monitor_lost.stages() {
        lost.sample(&[("stage", stage)], n)?;
    }
    policing::policing_families(&mut e, &snap.qos, &snap.meters)?;
    info(&mut e, snap)?;
    tables(&mut e, snap)?;
    if let Some(bgp) = &snap.bgp {
        bgp_families(&mut e, bgp)?;
    }
    if let Some(cluster) = &snap.cluster {
        cluster_families(&mut e, cluster)?;
    }
    Ok(e.finish())
}

/// `nvo_cluster_*`: cluster mode's link to etcd and the objects it skips.
fn cluster_families(e: &mut Exposition, c: &ClusterMetrics) -> Result<(), TextError> {
    let families: [(&str, Kind, &str, u64); 6] = [
        ("nvo_cluster_connected", Kind::Gauge, "1 while nvod is connected to etcd and watching, else 0 (it keeps its tables as they are).", u64::from(c.connected)),
        ("nvo_cluster_revision", Kind::Gauge, "The etcd revision last applied.", c.revision),
        ("nvo_cluster_objects_skipped", Kind::Gauge, "Cluster objects skipped now (invalid, refused, or blocked by attached ports); nvo cluster status lists them.", c.skipped),
        ("nvo_cluster_invalid_objects_total", Kind::Counter, "Cluster objects found invalid or refused (each key and reason counted once when it appears).", c.invalid_total),
        ("nvo_cluster_resyncs_total", Kind::Counter, "Full reads of the cluster prefix after reconnecting to etcd.", c.resyncs_total),
        ("nvo_cluster_hosts", Kind::Gauge, "Hosts registered in the cluster (this one included).", c.hosts),
    ];
    for (name, kind, help, value) in families {
        e.family(name, kind, help)?.sample(&[], value)?;
    }
    Ok(())
}

/// The HELP of `key` in `known`, or a generic one naming the key and its group.
fn help_of(known: &[(&str, &str)], group: &str, key: &str) -> String {
    known
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, h)| (*h).to_owned())
        .unwrap_or_else(|| format!("The {group} counter {key} (as nvo counters --all shows it)."))
}

/// `nvo_<group>_<key>_total{<label>}`: one family per counter key, one series per object.
fn keyed<'a>(
    e: &mut Exposition,
    group: &str,
    label: &str,
    known: &[(&str, &str)],
    objects: impl Iterator<Item = (String, &'a BTreeMap<String, u64>)> + Clone,
) -> Result<(), TextError> {
    // Every key any object has, in a stable order.
    let mut keys: Vec<&str> = objects
        .clone()
        .flat_map(|(_, c)| c.keys().map(String::as_str))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let name = counter_name(&format!("nvo_{group}"), key);
        let mut f = e.family(&name, Kind::Counter, &help_of(known, group, key))?;
        for (id, counters) in objects.clone() {
            if let Some(&n) = counters.get(key) {
                f.sample(&[(label, &id)], n)?;
            }
        }
    }
    Ok(())
}

/// `<prefix>_<key>_total` for each key of one map; `gauges` are (key, name, HELP).
fn plain(
    e: &mut Exposition,
    prefix: &str,
    known: &[(&str, &str)],
    counters: &BTreeMap<String, u64>,
    gauges: &[(&str, &str, &str)],
) -> Result<(), TextError> {
    let group = prefix.trim_start_matches("nvo_").replace('_', " ");
    for (key, &n) in counters {
        if let Some((_, name, help)) = gauges.iter().find(|(k, _, _)| k == key) {
            e.family(name, Kind::Gauge, help)?.sample(&[], n)?;
            continue;
        }
        let name = counter_name(prefix, key);
        e.family(&name, Kind::Counter, &help_of(known, &group, key))?
            .sample(&[], n)?;
    }
    Ok(())
}

fn counter_name(prefix: &str, key: &str) -> String {
    let part = name_part(key);
    if part.ends_with("_total") {
        format!("{prefix}_{part}")
    } else {
        format!("{prefix}_{part}_total")
    }
}

/// The info families: which network a port is in, which profile a network uses, and how many
/// networks use each profile (join on `vni` to sum traffic per profile).
fn info(e: &mut Exposition, snap: &Snapshot) -> Result<(), TextError> {
    let mut f = e.family(
        "nvo_network_info",
        Kind::Gauge,
        "Each network: always 1, its encapsulation profile in a label.",
    )?;
    for n in &snap.networks {
        f.sample(&[("vni", &n.vni.to_string()), ("profile", &n.profile)], 1)?;
    }
    let mut f = e.family(
        "nvo_port_info",
        Kind::Gauge,
        "Each port: always 1, its network's VNI in a label.",
    )?;
    for (port, vni) in &snap.ports {
        f.sample(&[("port", port), ("vni", &vni.to_string())], 1)?;
    }
    let mut per_profile: BTreeMap<&str, u64> = BTreeMap::new();
    for n in &snap.networks {
        *per_profile.entry(&n.profile).or_default() += 1;
    }
    let mut f = e.family(
        "nvo_profile_networks",
        Kind::Gauge,
        "Networks using each encapsulation profile.",
    )?;
    for (profile, n) in per_profile {
        f.sample(&[("profile", profile)], n)?;
    }
    Ok(())
}

/// Table sizes against their `[limits]`.
fn tables(e: &mut Exposition, snap: &Snapshot) -> Result<(), TextError> {
    let mut f = e.family(
        "nvo_table_entries",
        Kind::Gauge,
        "Entries in each node-wide table.",
    )?;
    for t in &snap.tables {
        f.sample(&[("table", t.name)], t.entries)?;
    }
    let mut f = e.family(
        "nvo_table_limit",
        Kind::Gauge,
        "The most entries each node-wide table holds ([limits] in nvod's config).",
    )?;
    for t in &snap.tables {
        f.sample(&[("table", t.name)], t.limit)?;
    }
    let mut f = e.family(
        "nvo_network_table_entries",
        Kind::Gauge,
        "Entries in each network's tables.",
    )?;
    for n in &snap.networks {
        let vni = n.vni.to_string();
        for t in &n.tables {
            f.sample(&[("vni", &vni), ("table", t.name)], t.entries)?;
        }
    }
    let mut f = e.family(
        "nvo_network_table_limit",
        Kind::Gauge,
        "The most entries each network's tables hold ([limits], or the network's max_learned).",
    )?;
    for n in &snap.networks {
        let vni = n.vni.to_string();
        for t in &n.tables {
            f.sample(&[("vni", &vni), ("table", t.name)], t.limit)?;
        }
    }
    Ok(())
}

/// A session state's label value (RFC 4271 §8.2.2 names in snake_case, as the API writes them).
fn state_word(s: SessionState) -> &'static str {
    match s {
        SessionState::Idle => "idle",
        SessionState::Connect => "connect",
        SessionState::Active => "active",
        SessionState::OpenSent => "open_sent",
        SessionState::OpenConfirm => "open_confirm",
        SessionState::Established => "established",
    }
}

const STATES: [SessionState; 6] = [
    SessionState::Idle,
    SessionState::Connect,
    SessionState::Active,
    SessionState::OpenSent,
    SessionState::OpenConfirm,
    SessionState::Established,
];

fn messages(m: &MessageCounts) -> [(&'static str, u64); 5] {
    [
        ("open", m.open),
        ("update", m.update),
        ("notification", m.notification),
        ("keepalive", m.keepalive),
        ("route_refresh", m.route_refresh),
    ]
}

/// One per-neighbour family.
fn per_neighbor(
    e: &mut Exposition,
    name: &str,
    kind: Kind,
    help: &str,
    neighbors: &[NeighborState],
    value: impl Fn(&NeighborState) -> u64,
) -> Result<(), TextError> {
    let mut f = e.family(name, kind, help)?;
    for n in neighbors {
        f.sample(&[("neighbor", &n.address.to_string())], value(n))?;
    }
    Ok(())
}

fn bgp_families(e: &mut Exposition, bgp: &BgpSummary) -> Result<(), TextError> {
    let ns = &bgp.neighbors;
    let mut f = e.family(
        "nvo_bgp_session_state",
        Kind::Gauge,
        "Each BGP session's state: 1 for the state it is in, 0 for the others.",
    )?;
    for n in ns {
        let addr = n.address.to_string();
        for s in STATES {
            f.sample(
                &[("neighbor", &addr), ("state", state_word(s))],
                u64::from(n.state == s),
            )?;
        }
    }
    per_neighbor(
        e,
        "nvo_bgp_session_state_seconds",
        Kind::Gauge,
        "Seconds each BGP session has been in its current state.",
        ns,
        |n| n.state_s,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_session_established_total",
        Kind::Counter,
        "Times each BGP session reached Established.",
        ns,
        |n| n.established,
    )?;
    for (name, help, out) in [
        (
            "nvo_bgp_messages_received_total",
            "BGP messages received, by type.",
            false,
        ),
        (
            "nvo_bgp_messages_sent_total",
            "BGP messages sent, by type.",
            true,
        ),
    ] {
        let mut f = e.family(name, Kind::Counter, help)?;
        for n in ns {
            let addr = n.address.to_string();
            let m = if out { &n.messages_out } else { &n.messages_in };
            for (kind, count) in messages(m) {
                f.sample(&[("neighbor", &addr), ("type", kind)], count)?;
            }
        }
    }
    per_neighbor(
        e,
        "nvo_bgp_prefixes_received",
        Kind::Gauge,
        "EVPN routes held from each neighbour (stale ones included).",
        ns,
        |n| n.received,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_prefixes_stale",
        Kind::Gauge,
        "EVPN routes from each neighbour kept stale for graceful restart.",
        ns,
        |n| n.stale,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_prefixes_sent",
        Kind::Gauge,
        "EVPN routes sent to each neighbour now.",
        ns,
        |n| n.sent,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_updates_treated_as_withdraw_total",
        Kind::Counter,
        "UPDATEs treated as withdraw (RFC 7606).",
        ns,
        |n| n.treat_as_withdraw,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_attributes_discarded_total",
        Kind::Counter,
        "Path attributes discarded (RFC 7606).",
        ns,
        |n| n.attributes_discarded,
    )?;
    per_neighbor(
        e,
        "nvo_bgp_routes_ignored_total",
        Kind::Counter,
        "Routes of types this speaker does not use.",
        ns,
        |n| n.ignored_routes,
    )?;
    let mut f = e.family(
        "nvo_bgp_routes",
        Kind::Gauge,
        "EVPN routes in the table: local, received (every peer's), installed in the data path.",
    )?;
    for (kind, n) in [
        ("local", bgp.routes_local),
        ("received", bgp.routes_received),
        ("installed", bgp.routes_installed),
    ] {
        f.sample(&[("kind", kind)], n)?;
    }
    e.family(
        "nvo_bgp_duplicate_macs",
        Kind::Gauge,
        "MACs marked duplicate by EVPN mobility detection.",
    )?
    .sample(&[], bgp.duplicate_macs)?;
    e.family(
        "nvo_bgp_routes_dropped_total",
        Kind::Counter,
        "Received EVPN routes dropped because the table was full.",
    )?
    .sample(&[], bgp.routes_dropped)?;
    e.family(
        "nvo_bgp_routes_refused_total",
        Kind::Counter,
        "EVPN changes the data path refused (a full table, a static entry).",
    )?
    .sample(&[], bgp.routes_refused)?;
    let mut f = e.family(
        "nvo_bgp_connections_refused_total",
        Kind::Counter,
        "Incoming BGP connections closed at once: from no configured neighbour, or failing GTSM.",
    )?;
    f.sample(&[("reason", "not_neighbor")], bgp.connections_refused)?;
    f.sample(&[("reason", "ttl")], bgp.connections_ttl_refused)?;
    Ok(())
}

#[cfg(test)]
mod tests;
