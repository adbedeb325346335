//! Counters: per drop reason, per network, per port, for the underlay and per remote VTEP.
//!
//! The live counters sit next to what they count (a network's in its table entry, a port's in the
//! port table) and are plain `u64` additions on the datapath thread. [`Counters`] is a snapshot
//! taken by `Pipeline::counters()` for the control thread; it is `Serialize` in the shape the API
//! shows: `{drops: {reason: n}, networks: {vni: {...}}, ports: {port: {...}}, underlay: {...}}`.
//!
//! Counters of a removed network or port go with it. Per-remote counters ([`RemoteTable`]) are
//! kept for at most [`MAX_COUNTED_REMOTES`] addresses, never removed: past that many, a new
//! address's traffic counts in the underlay totals only. A received packet makes an entry only
//! once a network took it from that remote (its VNI known, its profile right, the remote
//! accepted), so packets from forged sources or for unknown VNIs cannot fill the table.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::{DropReason, PortId, Vni};

/// One count per [`DropReason`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropCounters([u64; DropReason::COUNT]);

impl DropCounters {
    /// The count for one reason.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason.index()]
    }

    /// The sum over every reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `n` drops of `reason`: how a datapath that counts on its own (the eBPF path)
    /// merges its counts into the pipeline's.
    pub fn add_count(&mut self, reason: DropReason, n: u64) {
        self.0[reason.index()] += n;
    }

    pub(crate) fn add(&mut self, reason: DropReason) {
        self.0[reason.index()] += 1;
    }
}

impl Serialize for DropCounters {
    /// A map from every reason's name to its count, zeros included, so that the set of keys is
    /// stable.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(DropReason::COUNT))?;
        for reason in DropReason::ALL {
            map.serialize_entry(reason.name(), &self.get(reason))?;
        }
        map.end()
    }
}

/// What happened to a network's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct NetworkCounters {
    /// Frames received from the network's ports.
    pub rx_port_frames: u64,
    /// VXLAN packets received for the network's VNI.
    pub rx_underlay_frames: u64,
    /// Copies delivered to local ports (a flood counts once per port).
    pub delivered: u64,
    /// Frames encapsulated to the one remote their destination MAC is behind.
    pub encap_unicast: u64,
    /// Copies encapsulated by flooding: one per flood-list remote, or one per frame to the
    /// multicast group.
    pub encap_flood: u64,
    /// MACs learned (new learned entries).
    pub learned: u64,
    /// Learned MACs that showed up behind another destination and moved there.
    pub moves: u64,
    /// Frames whose source MAC was not learned because the network held `max_learned` entries,
    /// or the port or remote it came from its own bound (those are counted below as well).
    pub learn_limit: u64,
    /// Of those, frames from a port holding `max_learned_per_port` learned entries.
    pub learn_limit_port: u64,
    /// Of those, frames from a remote VTEP (or overlay node) holding `max_learned_per_remote`.
    pub learn_limit_remote: u64,
    /// Tunnelled frames whose source MAC is learned on a local port: the entry stays there
    /// (sticky local MACs); the frame goes on.
    pub learn_local_conflict: u64,
    /// Learned entries removed by ageing.
    pub aged: u64,
    /// ARP requests an L3 network's gateway answered.
    pub arp_replies: u64,
    /// ARP requests an L3 network's gateway sent for a destination no container had announced.
    pub arp_requests: u64,
    /// Neighbor solicitations an L3 network's gateway answered.
    pub nd_replies: u64,
    /// Neighbor solicitations an L3 network's gateway sent for a destination no container
    /// had announced.
    pub nd_requests: u64,
    /// ARP requests from local ports answered from the neighbour table (ARP suppression).
    pub arp_suppressed: u64,
    /// Neighbor solicitations from local ports answered from the neighbour table.
    pub nd_suppressed: u64,
    /// ARP requests for a peer's address (not gratuitous, not probes) from local ports that
    /// were flooded: suppression off, or the target unknown.
    pub arp_flooded: u64,
    /// Neighbor solicitations (not DAD) from local ports that were flooded.
    pub nd_flooded: u64,
    /// EVPN-installed MACs that showed up on a local port and became learned local entries
    /// (counted in `moves` too).
    pub evpn_moves: u64,
}

/// What happened on one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PortCounters {
    /// Frames received from the port.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames the datapath reported sent on the port.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames from the port that were dropped, and frames to it that failed to go out.
    pub drops: u64,
    /// Frames from the port whose source MAC was not learned: the port's or the network's
    /// learned-entry bound was reached.
    pub learn_limit: u64,
}

/// What happened on the underlay socket(s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct UnderlayCounters {
    /// UDP payloads handed to `from_underlay`.
    pub rx_packets: u64,
    /// Bytes of those payloads.
    pub rx_bytes: u64,
    /// Packets the datapath reported sent.
    pub tx_packets: u64,
    /// Bytes of those packets, as reported.
    pub tx_bytes: u64,
    /// Packets the datapath failed to send or to queue.
    pub tx_errors: u64,
    /// Packets relayed to a next hop without decapsulation (their sends are counted in
    /// `tx_packets` too).
    pub relayed: u64,
}

impl UnderlayCounters {
    /// One packet of `len` bytes received.
    pub(crate) fn count_rx(&mut self, len: usize) {
        self.rx_packets += 1;
        self.rx_bytes += len as u64;
    }
}

/// Tunnel traffic with one remote VTEP (or overlay locator, or multicast group): packets
/// decapsulated from it, packets the kernel took for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RemoteCounters {
    /// Tunnel packets from it that a network accepted (unknown VNIs, profile mismatches and
    /// refused remotes count in the underlay totals only).
    pub rx_packets: u64,
    /// Bytes of those (the UDP or IP payload, as `underlay.rx_bytes`).
    pub rx_bytes: u64,
    /// Tunnel packets sent to it.
    pub tx_packets: u64,
    /// Bytes of those, as reported.
    pub tx_bytes: u64,
}

/// Most remote addresses counted one by one: a bound on the memory a stream of packets from
/// forged source addresses can make the table take.
pub const MAX_COUNTED_REMOTES: usize = 4096;

/// The per-remote counters: a sorted map (a few comparisons per packet for the tens of remotes
/// a host talks to), bounded by [`MAX_COUNTED_REMOTES`].
#[derive(Debug, Clone, Default)]
pub(crate) struct RemoteTable(BTreeMap<IpAddr, RemoteCounters>);

impl RemoteTable {
    /// The counters of `remote`; none when the table is full and does not hold it.
    pub(crate) fn get(&mut self, remote: IpAddr) -> Option<&mut RemoteCounters> {
        if self.0.len() >= MAX_COUNTED_REMOTES && !self.0.contains_key(&remote) {
            return None;
        }
        Some(self.0.entry(remote).or_default())
    }

    /// Counts a decapsulated packet of `len` bytes from `remote`.
    pub(crate) fn rx(&mut self, remote: IpAddr, len: usize) {
        if let Some(c) = self.get(remote) {
            c.rx_packets += 1;
            c.rx_bytes += len as u64;
        }
    }

    pub(crate) fn snapshot(&self) -> BTreeMap<IpAddr, RemoteCounters> {
        self.0.clone()
    }
}

/// A snapshot of every counter.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Counters {
    /// Drops by reason, over the whole pipeline.
    pub drops: DropCounters,
    /// Per network.
    pub networks: BTreeMap<Vni, NetworkCounters>,
    /// Per port.
    pub ports: BTreeMap<PortId, PortCounters>,
    /// The underlay.
    pub underlay: UnderlayCounters,
    /// Tunnel traffic per remote address (at most [`MAX_COUNTED_REMOTES`]). A datapath that
    /// forwards packets the pipeline never sees (the eBPF one) leaves it empty rather than show
    /// the part it saw.
    pub remotes: BTreeMap<IpAddr, RemoteCounters>,
}

/// Where the datapath sent (or tried to send) a frame, for `Pipeline::count_tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxTarget {
    /// A local port (a `Deliver` or `Reply` action).
    Port(PortId),
    /// The underlay (an `Encap` action).
    Underlay,
    /// The underlay, to this remote address: counted as `Underlay`, and for the remote too.
    Remote(IpAddr),
}

/// How sending went, for `Pipeline::count_tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOutcome {
    /// The kernel took the frame.
    Sent,
    /// The send failed; counted as [`DropReason::TxError`].
    Failed,
    /// The datapath's send queue had no room; counted as [`DropReason::QueueFull`].
    QueueFull,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let mut c = Counters::default();
        c.drops.add(DropReason::Hairpin);
        c.networks.insert(
            Vni(100),
            NetworkCounters {
                delivered: 2,
                ..Default::default()
            },
        );
        c.ports.insert(
            PortId(7),
            PortCounters {
                rx_frames: 1,
                ..Default::default()
            },
        );
        let json: serde_json::Value = serde_json::to_value(&c).unwrap();
        assert_eq!(json["drops"]["hairpin"], 1);
        assert_eq!(json["drops"]["queue_full"], 0);
        assert_eq!(json["drops"].as_object().unwrap().len(), DropReason::COUNT);
        assert_eq!(json["networks"]["100"]["delivered"], 2);
        assert_eq!(json["ports"]["7"]["rx_frames"], 1);
        assert_eq!(json["underlay"]["tx_errors"], 0);
        assert_eq!(c.drops.total(), 1);
        assert_eq!(json["remotes"], serde_json::json!({}));
    }

    #[test]
    fn the_remote_table_is_bounded() {
        let mut t = RemoteTable::default();
        for i in 0..MAX_COUNTED_REMOTES as u32 {
            t.rx(IpAddr::from(i.to_be_bytes()), 100);
        }
        let known = IpAddr::from([0, 0, 0, 7]);
        let new = IpAddr::from([10, 0, 0, 1]);
        t.rx(known, 50);
        t.rx(new, 50);
        assert!(t.get(new).is_none());
        let s = t.snapshot();
        assert_eq!(s.len(), MAX_COUNTED_REMOTES);
        assert_eq!(
            s[&known],
            RemoteCounters {
                rx_packets: 2,
                rx_bytes: 150,
                ..Default::default()
            }
        );
    }
}
