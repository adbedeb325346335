//! Every reason a frame is dropped, with a stable numeric code (the model is Cilium's
//! `drop_reasons.h`).
//!
//! The codes and names are an interface: counters, the API and the eBPF datapath use them. A
//! reason may be added with a new code; an existing code never changes meaning and is never
//! reused. Code 0 means "not dropped" and is not a reason. Codes are contiguous so that
//! `code - 1` indexes a counter array.

use std::fmt;

use serde::{Serialize, Serializer};

/// Why a frame went nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum DropReason {
    /// A frame from a port or inside VXLAN shorter than an Ethernet header (14 bytes, 18 when
    /// 802.1Q-tagged).
    MalformedFrame = 1,
    /// A frame from a port the pipeline does not know (removed, or never added).
    UnknownPort = 2,
    /// A frame whose source MAC is multicast, broadcast or zero (IEEE 802.1Q §8.6.2 never learns
    /// or forwards those as sources).
    InvalidSourceMac = 3,
    /// A frame whose destination MAC was learned on the very port it came from: sending it back
    /// would duplicate it on that segment.
    Hairpin = 4,
    /// A frame longer than the network MTU allows. A frag-needed (IPv4 with DF) or packet-too-big
    /// (IPv6) reply may go back to the sender alongside the drop.
    TooBig = 5,
    /// A frame with nowhere to go: flooded in a network with no other local port and (from a port)
    /// no flood-list remote.
    NoDestination = 6,
    /// A UDP payload on the VXLAN port shorter than the 8-byte VXLAN header.
    MalformedVxlan = 7,
    /// A VXLAN header with the I flag clear (RFC 7348 §5: the VNI is not valid).
    VxlanFlags = 8,
    /// A VXLAN packet for a VNI without a network.
    UnknownVni = 9,
    /// A frame from the underlay whose destination is another remote VTEP. A VTEP never forwards
    /// underlay to underlay (split horizon): the sender reaches that VTEP itself.
    RemoteToRemote = 10,
    /// The datapath failed to send a frame (reported back through `Pipeline::count_tx`).
    TxError = 11,
    /// The datapath had no room to queue a frame for sending (reported through `count_tx`).
    QueueFull = 12,
    /// A packet on a tunnel transport (UDP port or IP protocol) whose header no profile on that
    /// transport accepts, or that is shorter than the header it announces.
    MalformedTunnel = 13,
    /// A tunnelled frame for a VNI whose network uses another encapsulation profile.
    ProfileMismatch = 14,
    /// Retired: an STT segment the reassembler refused, whatever the cause. Since codes 17 to
    /// 23 say which cause, nothing counts under it; it stays so that the code is never reused.
    SttReassembly = 15,
    /// A packet to relay whose hop count (NSH service index, overlay TTL) ran out.
    HopLimit = 16,
    /// An STT segment with an impossible header or length (STT reassembly's `malformed`).
    SttMalformed = 17,
    /// A TCP segment to the STT socket that is not to the STT port (`not_stt`).
    SttWrongPort = 18,
    /// An STT segment with a wrong TCP checksum (`bad_checksum`).
    SttBadChecksum = 19,
    /// An STT segment that repeats bytes already received, as they were (`duplicates`): harmless,
    /// but the segment goes no further.
    SttDuplicate = 20,
    /// An STT segment overlapping received bytes with other content; its frame is dropped
    /// (`overlaps`).
    SttOverlap = 21,
    /// An STT frame declaring more bytes than the reassembly limit (`too_large`).
    SttTooLarge = 22,
    /// An STT segment that would leave its frame with too many holes; the frame is dropped
    /// (`too_many_holes`).
    SttTooManyHoles = 23,
    /// A tunnel packet from a remote VTEP its network does not know (`accept_remotes` =
    /// `known`): not in its flood list, behind none of its static or EVPN FDB entries, no
    /// overlay node's locator. Nothing of it is learned or delivered.
    UnknownRemote = 24,
    /// A frame from a port whose source MAC is new there while the port holds its
    /// `max_learned_per_port` learned entries (port security's "restrict"): a MAC flood from
    /// one port goes no further than its share of the table, on this host or any other.
    PortLearnLimit = 25,
    /// A frame on a VLAN trunk (or tagged access port) without the trunk's outer tag: there is
    /// no native VLAN (vlan.rs).
    VlanUntagged = 26,
    /// A frame on a VLAN trunk whose VLAN ID the trunk does not map to a network.
    UnknownVlan = 27,
    /// A frame on a shared port whose source MAC (with its VLAN) no virtual port names, and
    /// that no default network takes (vport.rs).
    UnknownVport = 28,
    /// A frame from a port beyond its QoS profile's rate and burst (qos.rs).
    QosPoliced = 29,
    /// A frame a flow-table rule drops (a rule without actions, `actions=drop`), or one a
    /// rule only rewrites without saying where it goes (flows.rs).
    FlowDrop = 30,
    /// A packet the network's identity policy denies (issue 18): at the sender (egress from a
    /// local port) or at the receiver (ingress from a tunnel); `nvo policy show` says which
    /// rule, or the default deny of a selected destination.
    PolicyDenied = 31,
    /// An IPv6 link-control message from a port of an L3 network, which the gateway consumes
    /// without forwarding: router solicitation or advertisement, redirect (RFC 4861 §4.1,
    /// §4.2, §4.5), an MLD query or report (RFC 2710 §3, RFC 3810 §5), or a neighbour
    /// advertisement or solicitation it learns from but does not answer (duplicate address
    /// detection, a solicitation for the sender's own address).
    LinkControl = 32,
}

impl DropReason {
    /// Every reason, in code order.
    pub const ALL: [DropReason; 32] = [
        DropReason::MalformedFrame,
        DropReason::UnknownPort,
        DropReason::InvalidSourceMac,
        DropReason::Hairpin,
        DropReason::TooBig,
        DropReason::NoDestination,
        DropReason::MalformedVxlan,
        DropReason::VxlanFlags,
        DropReason::UnknownVni,
        DropReason::RemoteToRemote,
        DropReason::TxError,
        DropReason::QueueFull,
        DropReason::MalformedTunnel,
        DropReason::ProfileMismatch,
        DropReason::SttReassembly,
        DropReason::HopLimit,
        DropReason::SttMalformed,
        DropReason::SttWrongPort,
        DropReason::SttBadChecksum,
        DropReason::SttDuplicate,
        DropReason::SttOverlap,
        DropReason::SttTooLarge,
        DropReason::SttTooManyHoles,
        DropReason::UnknownRemote,
        DropReason::PortLearnLimit,
        DropReason::VlanUntagged,
        DropReason::UnknownVlan,
        DropReason::UnknownVport,
        DropReason::QosPoliced,
        DropReason::FlowDrop,
        DropReason::PolicyDenied,
        DropReason::LinkControl,
    ];

    /// How many reasons there are.
    pub const COUNT: usize = DropReason::ALL.len();

    /// The stable numeric code.
    pub const fn code(self) -> u16 {
        self as u16
    }

    /// The reason with this code, if any.
    pub fn from_code(code: u16) -> Option<DropReason> {
        DropReason::ALL.into_iter().find(|r| r.code() == code)
    }

    /// The position of this reason's counter: `code - 1`.
    pub(crate) const fn index(self) -> usize {
        self as usize - 1
    }

    /// The stable snake_case name.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::MalformedFrame => "malformed_frame",
            DropReason::UnknownPort => "unknown_port",
            DropReason::InvalidSourceMac => "invalid_source_mac",
            DropReason::Hairpin => "hairpin",
            DropReason::TooBig => "too_big",
            DropReason::NoDestination => "no_destination",
            DropReason::MalformedVxlan => "malformed_vxlan",
            DropReason::VxlanFlags => "vxlan_flags",
            DropReason::UnknownVni => "unknown_vni",
            DropReason::RemoteToRemote => "remote_to_remote",
            DropReason::TxError => "tx_error",
            DropReason::QueueFull => "queue_full",
            DropReason::MalformedTunnel => "malformed_tunnel",
            DropReason::ProfileMismatch => "profile_mismatch",
            DropReason::SttReassembly => "stt_reassembly",
            DropReason::HopLimit => "hop_limit",
            DropReason::SttMalformed => "stt_malformed",
            DropReason::SttWrongPort => "stt_wrong_port",
            DropReason::SttBadChecksum => "stt_bad_checksum",
            DropReason::SttDuplicate => "stt_duplicate",
            DropReason::SttOverlap => "stt_overlap",
            DropReason::SttTooLarge => "stt_too_large",
            DropReason::SttTooManyHoles => "stt_too_many_holes",
            DropReason::UnknownRemote => "unknown_remote",
            DropReason::PortLearnLimit => "port_learn_limit",
            DropReason::VlanUntagged => "vlan_untagged",
            DropReason::UnknownVlan => "unknown_vlan",
            DropReason::UnknownVport => "unknown_vport",
            DropReason::QosPoliced => "qos_policed",
            DropReason::FlowDrop => "flow_drop",
            DropReason::PolicyDenied => "policy_denied",
            DropReason::LinkControl => "link_control",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for DropReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_contiguous_and_stable() {
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            assert_eq!(reason.index(), i);
            assert_eq!(usize::from(reason.code()), i + 1);
            assert_eq!(DropReason::from_code(reason.code()), Some(reason));
        }
        assert_eq!(DropReason::from_code(0), None);
        assert_eq!(DropReason::from_code(33), None);
        // Spot checks that pin published codes: changing one of these breaks the eBPF datapath
        // and every dashboard reading the counters.
        assert_eq!(DropReason::MalformedFrame.code(), 1);
        assert_eq!(DropReason::RemoteToRemote.code(), 10);
        assert_eq!(DropReason::QueueFull.code(), 12);
        assert_eq!(DropReason::SttReassembly.code(), 15);
        assert_eq!(DropReason::SttTooManyHoles.code(), 23);
        assert_eq!(DropReason::UnknownRemote.code(), 24);
        assert_eq!(DropReason::PortLearnLimit.code(), 25);
        assert_eq!(DropReason::VlanUntagged.code(), 26);
        assert_eq!(DropReason::UnknownVlan.code(), 27);
        assert_eq!(DropReason::UnknownVport.code(), 28);
        assert_eq!(DropReason::QosPoliced.code(), 29);
        assert_eq!(DropReason::FlowDrop.code(), 30);
        assert_eq!(DropReason::PolicyDenied.code(), 31);
        assert_eq!(DropReason::LinkControl.code(), 32);
    }

    #[test]
    fn names_are_unique_snake_case() {
        let mut names: Vec<&str> = DropReason::ALL.iter().map(|r| r.name()).collect();
        for n in &names {
            assert!(n.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{n}");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DropReason::COUNT);
        assert_eq!(DropReason::TooBig.to_string(), "too_big");
    }
}
