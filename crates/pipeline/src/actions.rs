//! What the datapath must do with a frame: the pipeline's only output.
//!
//! `from_port` and `from_underlay` clear the [`Actions`] they are given and fill it. The buffer
//! is meant to be reused for every frame: once it has grown to the largest fan-out seen (every
//! port and flood remote of the biggest network) it never allocates again.
//!
//! A frame yields either one `Drop`, or one or more `Deliver`/`Encap`/`EncapNode` actions, or — for an
//! oversized frame — a `Reply` followed by `Drop(TooBig)`: the frame itself is dropped but an ICMP
//! error built in the pipeline's scratch buffer goes back to the sender.

use std::net::IpAddr;

use crate::{DropReason, NodeId, PortId, ProfileTag, Vni};

/// One thing to do with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send the frame out of a local port. For `from_underlay` the frame is the inner Ethernet
    /// frame, which starts after the 8-byte VXLAN header
    /// ([`nvo_wire::vxlan::HEADER_LEN`]).
    Deliver {
        /// The port.
        port: PortId,
    },
    /// Send the frame to a remote VTEP (or the network's multicast group) inside the tunnel
    /// header of the network's `profile`, carrying `vni`; the datapath builds the header (nvod:
    /// with the `nvo-encap` engine).
    Encap {
        /// The underlay destination address.
        remote: IpAddr,
        /// The VNI to put in the header.
        vni: Vni,
        /// A hash of the inner flow (MACs, IPs, ports): picks the outer UDP source port so that
        /// the underlay spreads flows (RFC 7348 §5) without reordering any one of them.
        entropy: u16,
        /// The network's encapsulation profile.
        profile: ProfileTag,
    },
    /// Send the frame to an overlay node (docs/design/overlay.md): the datapath routes it in
    /// its overlay tables (application Ethernet) and sends it, inside the overlay header with
    /// this node as the source, to each next hop's locator. Emitted for an FDB entry
    /// `FdbDest::Node` and for BUM frames of a network in `BumMode::Overlay` (one copy, to the
    /// tree's node ID).
    EncapNode {
        /// The destination node (or replication tree).
        node: NodeId,
        /// The VNI to put in the header.
        vni: Vni,
        /// A hash of the inner flow: the header's flow hash and the outer UDP source port.
        entropy: u16,
        /// The network's encapsulation profile.
        profile: ProfileTag,
    },
    /// Send the IP packet in the frame, `&frame[offset..]` (the Ethernet header off), to a
    /// remote inside the tunnel header of an L3 network's `profile`.
    EncapL3 {
        /// The underlay destination address.
        remote: IpAddr,
        /// The VNI to put in the header.
        vni: Vni,
        /// A hash of the inner flow.
        entropy: u16,
        /// The network's encapsulation profile.
        profile: ProfileTag,
        /// Where the IP packet starts in the frame.
        offset: usize,
    },
    /// Send the IPv6 packet in the frame, `&frame[offset..]`, of ILA network `vni` to the
    /// kernel for routing on the underlay, with no tunnel header: its destination translated
    /// to the ILA address at `locator` first ([`crate::l3::ila::translate_egress`], per
    /// segment for a GSO frame).
    SendIla {
        /// The locator (upper 64 bits) of the host the destination lives on.
        locator: u64,
        /// The network, which the identifier carries.
        vni: Vni,
        /// Where the IPv6 packet starts in the frame.
        offset: usize,
    },
    /// Send the first `len` bytes of `Pipeline::scratch()` out of `port`: a frame the pipeline
    /// built, valid until the next call into the pipeline.
    Reply {
        /// The port.
        port: PortId,
        /// The length of the frame in the scratch buffer.
        len: usize,
    },
    /// The frame goes nowhere (already counted).
    Drop(DropReason),
}

/// The identity a frame carries to the wire (VXLAN-GBP, or nvo's Geneve option): its source
/// group, and whether the sender applied policy (GBP's A bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupTag {
    /// The source endpoint's group ID (0: none).
    pub group: u16,
    /// Policy was applied at the sender (draft-smith-vxlan-group-policy §2.1, A bit).
    pub applied: bool,
}

/// A reusable list of actions for one frame.
#[derive(Debug, Default, Clone)]
pub struct Actions {
    list: Vec<Action>,
    /// Set when the copies are a flood (broadcast, multicast or unknown unicast), not a
    /// lookup's answer: what `nvo monitor` reports as a `flood` event.
    flooded: bool,
    /// The identity to put on the wire with the frame's `Encap` actions (VXLAN-GBP, Geneve), set
    /// when its network has a policy.
    group: Option<GroupTag>,
}

impl Actions {
    /// An empty buffer; it grows to the largest fan-out it sees.
    pub fn new() -> Actions {
        Actions::default()
    }

    /// A buffer that will not allocate for fan-outs up to `capacity`.
    pub fn with_capacity(capacity: usize) -> Actions {
        Actions {
            list: Vec::with_capacity(capacity),
            flooded: false,
            group: None,
        }
    }

    /// The actions for the last frame, in order.
    pub fn as_slice(&self) -> &[Action] {
        &self.list
    }

    /// Iterates over the actions for the last frame.
    pub fn iter(&self) -> std::slice::Iter<'_, Action> {
        self.list.iter()
    }

    /// How many actions there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none (only before the first frame).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many actions fit without allocating.
    pub fn capacity(&self) -> usize {
        self.list.capacity()
    }

    /// The drop reason, when the frame was dropped.
    pub fn dropped(&self) -> Option<DropReason> {
        self.list.iter().find_map(|a| match a {
            Action::Drop(reason) => Some(*reason),
            _ => None,
        })
    }

    /// Whether the frame was flooded: its `Deliver`/`Encap`/`EncapNode` actions are the
    /// copies of a flood rather than the one destination the FDB knows.
    pub fn flooded(&self) -> bool {
        self.flooded
    }

    /// The source identity to write into a VXLAN-GBP header (or a Geneve option) for this
    /// frame's `Encap` actions, with whether policy was applied (the A bit); `None` when its
    /// network has no policy.
    pub fn group(&self) -> Option<GroupTag> {
        self.group
    }

    /// Sets that identity: the pipeline's egress policy does, and a datapath that took a
    /// frame's decision elsewhere (the kernel path's, for a frame it hands over to be
    /// encapsulated) sets what was decided there.
    pub fn set_group(&mut self, tag: Option<GroupTag>) {
        self.group = tag;
    }

    pub(crate) fn clear(&mut self) {
        self.list.clear();
        self.flooded = false;
        self.group = None;
    }

    pub(crate) fn set_flooded(&mut self) {
        self.flooded = true;
    }

    pub(crate) fn push(&mut self, action: Action) {
        self.list.push(action);
    }

    /// Keeps the actions `keep` says yes to; how many went.
    pub(crate) fn retain(&mut self, keep: impl FnMut(&Action) -> bool) -> usize {
        let before = self.list.len();
        self.list.retain(keep);
        before - self.list.len()
    }
}

impl<'a> IntoIterator for &'a Actions {
    type Item = &'a Action;
    type IntoIter = std::slice::Iter<'a, Action>;

    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}
