//! The status page's JSON (`GET /status.json`): built by [`build`] from [`Inputs`], the reads
//! `Control::status_inputs` makes (the same ones `GET /v1/node`, `/v1/counters`,
//! `/v1/networks`, `/v1/networks/{vni}/fdb`, `/v1/overlay/nodes` and `/v1/bgp` answer with).
//! Pure: no table, socket or clock is touched here, so the shape is unit-tested.
//!
//! Live rates are not computed here: the page divides the difference of two samples' counters
//! by the difference of their `sample_ms` (nvod's clock, not the browser's).
//! The userspace datapath counts tunnel traffic per remote address (`GET /v1/counters`'
//! `remotes`); the eBPF one does not, and there `tunnels.per_remote` is false and each tunnel
//! row carries no counters rather than invented ones. On both, tunnel traffic is counted per
//! network (frames encapsulated, frames decapsulated) and on the underlay as a whole.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use nvo_api as api;
use serde::Serialize;

use super::events::Event;

/// FDBs are listed, to count the MACs behind each remote, only up to this many entries in all
/// (networks in VNI order, a network whole or not at all): a poll every second must stay cheap
/// for the datapath thread that answers it, and for the control lock it holds meanwhile.
pub const MAX_FDB_LISTED: usize = 4096;

/// And in at most this many networks (one datapath round trip each).
pub const MAX_FDB_NETWORKS: usize = 64;

/// Top drop reasons shown.
pub const TOP_DROPS: usize = 8;

/// Why the tunnel rows carry no counters on the eBPF datapath.
pub const NO_PER_REMOTE: &str = "the ebpf datapath does not count tunnel traffic per remote \
     VTEP; tunnel traffic is shown per network and for the whole underlay";

/// What the status is built from.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `GET /v1/node`.
    pub node: api::NodeInfo,
    /// This node's overlay locators (besides `node.locator`).
    pub overlay_locators: Vec<IpAddr>,
    /// `GET /v1/counters`.
    pub counters: api::Counters,
    /// Every network.
    pub networks: Vec<NetworkInput>,
    /// Ports by name: their VNI.
    pub ports: BTreeMap<String, u32>,
    /// Overlay nodes by ID: their locators (this node's included).
    pub overlay_nodes: BTreeMap<u32, Vec<IpAddr>>,
    /// The EVPN speaker's summary; none when BGP is off or the speaker did not answer.
    pub bgp: Option<api::BgpSummary>,
}

/// One network as read.
#[derive(Debug, Clone)]
pub struct NetworkInput {
    /// The VNI.
    pub vni: u32,
    /// The encapsulation profile.
    pub profile: String,
    /// The flood list.
    pub flood: Vec<IpAddr>,
    /// Learned, static and EVPN FDB entries.
    pub learned: usize,
    /// Static entries.
    pub static_entries: usize,
    /// EVPN entries.
    pub evpn: usize,
    /// The FDB entries, when they fit in [`MAX_FDB_LISTED`] and [`MAX_FDB_NETWORKS`].
    pub fdb: Option<Vec<api::FdbEntry>>,
}

/// Facts about the process, not the control state.
#[derive(Debug, Clone)]
pub struct Process {
    /// The host name (the kernel's; namespaces of one machine share it).
    pub name: String,
    /// Milliseconds since nvod's status listener started: the page's clock for rates.
    pub uptime_ms: u64,
    /// Wall-clock time of the sample, RFC 3339.
    pub time: String,
}

/// `GET /status.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// This host.
    pub host: Host,
    /// nvod's monotonic clock at the sample, in milliseconds: rates divide by its difference.
    pub sample_ms: u64,
    /// Wall-clock time of the sample.
    pub time: String,
    /// Every other host this one knows, by underlay address.
    pub peers: Vec<Peer>,
    /// The networks.
    pub networks: Vec<NetworkStatus>,
    /// Tunnels to the peers, and the traffic counters there are.
    pub tunnels: Tunnels,
    /// The most frequent drop reasons (non-zero only), most first.
    pub drops: Vec<DropCount>,
    /// Every drop, all reasons.
    pub drops_total: u64,
    /// Recent events, oldest first.
    pub events: Vec<Event>,
}

/// This host.
#[derive(Debug, Clone, Serialize)]
pub struct Host {
    /// Host name.
    pub name: String,
    /// Overlay node ID.
    pub node_id: u32,
    /// Underlay addresses: the locator first, then overlay locators.
    pub locators: Vec<IpAddr>,
    /// `ebpf` or `userspace`.
    pub datapath: String,
    /// Why that datapath.
    pub datapath_reason: String,
    /// nvod's version.
    pub version: String,
    /// Seconds since the status listener started (with nvod).
    pub uptime_s: u64,
}

/// Another host, by underlay address.
#[derive(Debug, Clone, Serialize)]
pub struct Peer {
    /// Its underlay address.
    pub address: IpAddr,
    /// How this host knows it: `flood`, `fdb`, `bgp`, `overlay`.
    pub sources: BTreeSet<&'static str>,
    /// Networks it is in the flood list or FDB of.
    pub networks: BTreeSet<u32>,
    /// MACs behind it (networks whose FDB was listed).
    pub macs: u64,
    /// Its overlay node ID, when a node has this locator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<u32>,
    /// Its BGP session, when it is a BGP neighbour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp: Option<BgpPeer>,
}

/// A BGP session.
#[derive(Debug, Clone, Serialize)]
pub struct BgpPeer {
    /// Its AS.
    pub asn: u32,
    /// The state (RFC 4271 names, snake_case).
    pub state: String,
    /// Seconds in that state.
    pub state_s: u64,
    /// Routes held from it.
    pub received: u64,
}

/// One network.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkStatus {
    /// VNI.
    pub vni: u32,
    /// Encapsulation profile.
    pub profile: String,
    /// Local ports.
    pub ports: Vec<String>,
    /// MACs in the FDB: learned, static, EVPN.
    pub macs: Macs,
    /// Flood list.
    pub flood: Vec<IpAddr>,
    /// Whether `macs` behind each remote could be counted (FDB small enough to list).
    pub fdb_listed: bool,
    /// Counters (`GET /v1/counters`' `networks`), by name.
    pub counters: BTreeMap<String, u64>,
}

/// FDB entries by origin.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Macs {
    /// Learned from traffic.
    pub learned: usize,
    /// Set through the API.
    #[serde(rename = "static")]
    pub static_entries: usize,
    /// Installed by EVPN.
    pub evpn: usize,
}

/// Tunnels and tunnel traffic.
#[derive(Debug, Clone, Serialize)]
pub struct Tunnels {
    /// Whether the datapath counts traffic per remote (the userspace one does).
    pub per_remote: bool,
    /// Why the rows below carry no counters, when they do not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
    /// One per peer reached by a tunnel: its address and networks.
    pub remotes: Vec<TunnelRemote>,
    /// Tunnel traffic per network: frames encapsulated (`tx_frames`, unicast and flood copies)
    /// and decapsulated (`rx_frames`).
    pub networks: Vec<TunnelTraffic>,
    /// The underlay sockets as a whole: packets and bytes each way.
    pub underlay: BTreeMap<String, u64>,
}

/// A tunnel to one remote.
#[derive(Debug, Clone, Serialize)]
pub struct TunnelRemote {
    /// The remote's underlay address.
    pub remote: IpAddr,
    /// The networks it carries.
    pub networks: Vec<u32>,
    /// Its traffic (`rx_packets`, `rx_bytes`, `tx_packets`, `tx_bytes`), when the datapath
    /// counts per remote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<BTreeMap<String, u64>>,
}

/// One network's tunnel traffic.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TunnelTraffic {
    /// VNI.
    pub vni: u32,
    /// Frames encapsulated: to one remote, and flood copies.
    pub tx_frames: u64,
    /// Frames received from tunnels for the VNI.
    pub rx_frames: u64,
}

/// One drop reason.
#[derive(Debug, Clone, Serialize)]
pub struct DropCount {
    /// Its stable name.
    pub reason: String,
    /// How many.
    pub count: u64,
}

/// Builds the status from what was read.
pub fn build(inputs: &Inputs, process: &Process, events: Vec<Event>) -> Status {
    let node = &inputs.node;
    let mut locators = vec![node.locator];
    for addr in &inputs.overlay_locators {
        if !locators.contains(addr) {
            locators.push(*addr);
        }
    }
    let own: BTreeSet<IpAddr> = locators.iter().copied().collect();
    let peers = peers(inputs, &own);
    let networks: Vec<NetworkStatus> = inputs
        .networks
        .iter()
        .map(|n| NetworkStatus {
            vni: n.vni,
            profile: n.profile.clone(),
            ports: inputs
                .ports
                .iter()
                .filter(|(_, &vni)| vni == n.vni)
                .map(|(name, _)| name.clone())
                .collect(),
            macs: Macs {
                learned: n.learned,
                static_entries: n.static_entries,
                evpn: n.evpn,
            },
            flood: n.flood.clone(),
            fdb_listed: n.fdb.is_some(),
            counters: inputs
                .counters
                .networks
                .get(&n.vni)
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    let per_remote = node.datapath == "userspace";
    let remotes = peers
        .iter()
        .filter(|p| !p.networks.is_empty())
        .map(|p| TunnelRemote {
            remote: p.address,
            networks: p.networks.iter().copied().collect(),
            counters: per_remote.then(|| remote_counters(&inputs.counters, p.address)),
        })
        .collect();
    let traffic = networks
        .iter()
        .map(|n| {
            let c = |name: &str| n.counters.get(name).copied().unwrap_or(0);
            TunnelTraffic {
                vni: n.vni,
                tx_frames: c("encap_unicast").saturating_add(c("encap_flood")),
                rx_frames: c("rx_underlay_frames"),
            }
        })
        .collect();
    let underlay = [
        "rx_packets",
        "rx_bytes",
        "tx_packets",
        "tx_bytes",
        "tx_errors",
    ]
    .iter()
    .filter_map(|&k| {
        let v = inputs.counters.underlay.get(k)?;
        Some((k.to_owned(), *v))
    })
    .collect();
    let mut drops: Vec<DropCount> = inputs
        .counters
        .drops
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(reason, &count)| DropCount {
            reason: reason.clone(),
            count,
        })
        .collect();
    drops.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.reason.cmp(&b.reason)));
    drops.truncate(TOP_DROPS);
    Status {
        host: Host {
            name: process.name.clone(),
            node_id: node.node_id,
            locators,
            datapath: node.datapath.clone(),
            datapath_reason: node.datapath_reason.clone(),
            version: node.version.clone(),
            uptime_s: process.uptime_ms / 1000,
        },
        sample_ms: process.uptime_ms,
        time: process.time.clone(),
        peers,
        networks,
        tunnels: Tunnels {
            per_remote,
            note: (!per_remote).then_some(NO_PER_REMOTE),
            remotes,
            networks: traffic,
            underlay,
        },
        drops_total: inputs
            .counters
            .drops
            .values()
            .fold(0u64, |a, &n| a.saturating_add(n)),
        drops,
        events,
    }
}

/// The traffic with `remote`: zeros until a packet goes either way.
fn remote_counters(counters: &api::Counters, remote: IpAddr) -> BTreeMap<String, u64> {
    let c = counters.remotes.get(&remote);
    ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes"]
        .iter()
        .map(|&k| {
            let n = c.and_then(|c| c.get(k)).copied().unwrap_or(0);
            (k.to_owned(), n)
        })
        .collect()
}

/// Every other host, merged by address from the flood lists, the FDBs, the overlay's locator
/// table and the BGP neighbours; this host's own addresses are left out.
fn peers(inputs: &Inputs, own: &BTreeSet<IpAddr>) -> Vec<Peer> {
    let mut by_addr: BTreeMap<IpAddr, Peer> = BTreeMap::new();
    fn entry<'a>(
        by_addr: &'a mut BTreeMap<IpAddr, Peer>,
        own: &BTreeSet<IpAddr>,
        addr: IpAddr,
    ) -> Option<&'a mut Peer> {
        if own.contains(&addr) || addr.is_unspecified() {
            return None;
        }
        Some(by_addr.entry(addr).or_insert_with(|| Peer {
            address: addr,
            sources: BTreeSet::new(),
            networks: BTreeSet::new(),
            macs: 0,
            node_id: None,
            bgp: None,
        }))
    }
    for n in &inputs.networks {
        for &remote in &n.flood {
            if let Some(p) = entry(&mut by_addr, own, remote) {
                p.sources.insert("flood");
                p.networks.insert(n.vni);
            }
        }
        for e in n.fdb.iter().flatten() {
            let Some(remote) = e.remote else { continue };
            if let Some(p) = entry(&mut by_addr, own, remote) {
                p.sources.insert("fdb");
                p.networks.insert(n.vni);
                p.macs += 1;
            }
        }
    }
    for (&id, addrs) in &inputs.overlay_nodes {
        for &addr in addrs {
            if let Some(p) = entry(&mut by_addr, own, addr) {
                p.sources.insert("overlay");
                p.node_id = Some(id);
            }
        }
    }
    for n in inputs.bgp.iter().flat_map(|b| &b.neighbors) {
        if let Some(p) = entry(&mut by_addr, own, n.address) {
            p.sources.insert("bgp");
            p.bgp = Some(BgpPeer {
                asn: n.asn,
                state: serde_json::to_value(n.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                state_s: n.state_s,
                received: n.received,
            });
        }
    }
    by_addr.into_values().collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::{json, Value};

    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn fdb(mac: &str, remote: Option<&str>, port: Option<&str>) -> api::FdbEntry {
        serde_json::from_value(json!({
            "mac": mac, "remote": remote, "port": port, "origin": "learned", "age_s": 1
        }))
        .unwrap()
    }

    /// A host 10.0.0.1 (overlay node 1, second locator 10.1.0.1) with network 100 flooding to
    /// .2 and .3 and learned MACs behind .2 and a port; network 200 with a too-large FDB; node
    /// 4 at 10.0.0.4; BGP neighbours .3 (up) and .9 (down).
    fn inputs() -> Inputs {
        let node: api::NodeInfo = serde_json::from_value(json!({
            "node_id": 1, "locator": "10.0.0.1", "vxlan_port": 4789, "underlay_mtu": 1500,
            "offloads": {"gro": false, "gso": false}, "datapath": "userspace",
            "datapath_reason": "configured", "relay": "userspace", "version": "0.1.0"
        }))
        .unwrap();
        let counters: api::Counters = serde_json::from_value(json!({
            "drops": {"unknown_vni": 5, "hairpin": 0, "no_route": 9, "ttl": 5},
            "networks": {"100": {"encap_unicast": 10, "encap_flood": 3, "rx_underlay_frames": 7,
                                 "delivered": 7}},
            "ports": {},
            "underlay": {"rx_packets": 7, "rx_bytes": 700, "tx_packets": 13, "tx_bytes": 1300,
                         "tx_errors": 0, "relayed": 0, "sockets": 1},
            "remotes": {"10.0.0.2": {"rx_packets": 7, "rx_bytes": 700, "tx_packets": 10,
                                     "tx_bytes": 1000},
                        "10.0.0.250": {"rx_packets": 1, "rx_bytes": 60, "tx_packets": 0,
                                       "tx_bytes": 0}}
        }))
        .unwrap();
        let neighbor = |address: &str, asn: u32, state: &str, received: u64| {
            let m = json!({"open": 0, "update": 0, "notification": 0, "keepalive": 0,
                           "route_refresh": 0});
            json!({"address": address, "asn": asn, "state": state, "state_s": 30,
                   "established": 0, "received": received, "stale": 0, "sent": 0,
                   "messages_in": m, "messages_out": m, "treat_as_withdraw": 0,
                   "attributes_discarded": 0, "ignored_routes": 0})
        };
        let bgp: api::BgpSummary = serde_json::from_value(json!({
            "config": {"asn": 65001, "router_id": "10.0.0.1", "neighbors": []},
            "neighbors": [neighbor("10.0.0.3", 65001, "established", 4),
                          neighbor("10.0.0.9", 65002, "active", 0)],
            "routes_local": 0, "routes_received": 0, "routes_installed": 0, "duplicate_macs": 0
        }))
        .unwrap();
        Inputs {
            node,
            overlay_locators: vec![ip("10.1.0.1")],
            counters,
            networks: vec![
                NetworkInput {
                    vni: 100,
                    profile: "vxlan".to_owned(),
                    flood: vec![ip("10.0.0.2"), ip("10.0.0.3")],
                    learned: 3,
                    static_entries: 0,
                    evpn: 0,
                    fdb: Some(vec![
                        fdb("02:00:00:00:00:01", Some("10.0.0.2"), None),
                        fdb("02:00:00:00:00:02", Some("10.0.0.2"), None),
                        fdb("02:00:00:00:00:03", None, Some("c0")),
                    ]),
                },
                NetworkInput {
                    vni: 200,
                    profile: "geneve".to_owned(),
                    flood: vec![ip("10.0.0.1")],
                    learned: MAX_FDB_LISTED + 1,
                    static_entries: 0,
                    evpn: 0,
                    fdb: None,
                },
            ],
            ports: [("c0".to_owned(), 100), ("c1".to_owned(), 200)].into(),
            overlay_nodes: [
                (1, vec![ip("10.0.0.1"), ip("10.1.0.1")]),
                (4, vec![ip("10.0.0.4")]),
            ]
            .into(),
            bgp: Some(bgp),
        }
    }

    fn status() -> Value {
        let process = Process {
            name: "h1".to_owned(),
            uptime_ms: 61_500,
            time: "2026-11-27T00:00:00.000Z".to_owned(),
        };
        let events = vec![Event {
            time: "2026-11-27T00:00:00.000Z".to_owned(),
            kind: "overlay.node".to_owned(),
            text: "node 4 set: 10.0.0.4".to_owned(),
        }];
        serde_json::to_value(build(&inputs(), &process, events)).unwrap()
    }

    #[test]
    fn the_host_is_this_node() {
        let s = status();
        assert_eq!(
            s["host"],
            json!({"name": "h1", "node_id": 1, "locators": ["10.0.0.1", "10.1.0.1"],
                   "datapath": "userspace", "datapath_reason": "configured",
                   "version": "0.1.0", "uptime_s": 61})
        );
        assert_eq!(s["sample_ms"], 61_500);
    }

    #[test]
    fn peers_merge_every_source_and_leave_this_host_out() {
        let s = status();
        let peers = s["peers"].as_array().unwrap();
        let addrs: Vec<&str> = peers
            .iter()
            .map(|p| p["address"].as_str().unwrap())
            .collect();
        // 10.0.0.1 (flood list of 200, and node 1) and 10.1.0.1 are this host.
        assert_eq!(addrs, ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.9"]);
        assert_eq!(peers[0]["sources"], json!(["fdb", "flood"]));
        assert_eq!(peers[0]["macs"], 2);
        assert_eq!(peers[0]["networks"], json!([100]));
        assert_eq!(peers[1]["bgp"]["state"], "established");
        assert_eq!(peers[1]["sources"], json!(["bgp", "flood"]));
        assert_eq!(peers[2]["node_id"], 4);
        assert_eq!(peers[2]["sources"], json!(["overlay"]));
        assert_eq!(peers[3]["bgp"]["state"], "active");
        assert_eq!(peers[3]["networks"], json!([]));
    }

    #[test]
    fn networks_show_ports_macs_and_whether_the_fdb_was_listed() {
        let s = status();
        let n = &s["networks"];
        assert_eq!(n[0]["vni"], 100);
        assert_eq!(n[0]["ports"], json!(["c0"]));
        assert_eq!(n[0]["macs"], json!({"learned": 3, "static": 0, "evpn": 0}));
        assert_eq!(n[0]["fdb_listed"], true);
        assert_eq!(n[1]["profile"], "geneve");
        assert_eq!(n[1]["fdb_listed"], false);
        assert_eq!(n[1]["counters"], json!({}));
    }

    #[test]
    fn tunnels_carry_per_remote_counters_on_userspace_and_per_network_traffic() {
        let t = status()["tunnels"].clone();
        assert_eq!(t["per_remote"], true);
        assert_eq!(t.get("note"), None);
        // Peers with a network only: not the overlay node nor the BGP-only neighbour; a remote
        // nothing went to or came from yet has zeros.
        assert_eq!(
            t["remotes"],
            json!([{"remote": "10.0.0.2", "networks": [100],
                    "counters": {"rx_packets": 7, "rx_bytes": 700, "tx_packets": 10,
                                 "tx_bytes": 1000}},
                   {"remote": "10.0.0.3", "networks": [100],
                    "counters": {"rx_packets": 0, "rx_bytes": 0, "tx_packets": 0,
                                 "tx_bytes": 0}}])
        );
        assert_eq!(
            t["networks"][0],
            json!({"vni": 100, "tx_frames": 13, "rx_frames": 7})
        );
        assert_eq!(t["networks"][1]["tx_frames"], 0);
        assert_eq!(
            t["underlay"],
            json!({"rx_packets": 7, "rx_bytes": 700, "tx_packets": 13, "tx_bytes": 1300,
                   "tx_errors": 0})
        );
    }

    #[test]
    fn on_ebpf_tunnels_say_there_are_no_per_remote_counters() {
        let mut inputs = inputs();
        inputs.node.datapath = "ebpf".to_owned();
        let process = Process {
            name: "h1".to_owned(),
            uptime_ms: 1,
            time: String::new(),
        };
        let t =
            serde_json::to_value(build(&inputs, &process, Vec::new())).unwrap()["tunnels"].clone();
        assert_eq!(t["per_remote"], false);
        assert_eq!(t["note"], NO_PER_REMOTE);
        assert_eq!(
            t["remotes"][0],
            json!({"remote": "10.0.0.2", "networks": [100]})
        );
    }

    #[test]
    fn drops_are_the_non_zero_reasons_most_first() {
        let s = status();
        assert_eq!(
            s["drops"],
            json!([{"reason": "no_route", "count": 9}, {"reason": "ttl", "count": 5},
                   {"reason": "unknown_vni", "count": 5}])
        );
        assert_eq!(s["drops_total"], 19);
        assert_eq!(
            s["events"],
            json!([{"time": "2026-11-27T00:00:00.000Z", "type": "overlay.node",
                    "text": "node 4 set: 10.0.0.4"}])
        );
    }
}
