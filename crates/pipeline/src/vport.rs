//! Virtual ports per MAC on a shared port: the hardware VTEP paper's VM-VP.
//!
//! A *shared port* is an interface (a hypervisor's uplink, many VMs behind it) whose frames are
//! assigned to networks by source MAC, and by VLAN ID where the frame is 802.1Q-tagged. Like a
//! trunk (vlan.rs) it has its own [`PortId`] and is a member of no network; each *virtual port*
//! (one MAC, optionally one VLAN) is a port of the pipeline like any other, with its own id,
//! counters and network. An optional *default* virtual port takes untagged frames from MACs no
//! virtual port names, in a network of its own choosing; without one they are dropped
//! (`unknown_vport`).
//!
//! ```text
//!  from_shared(shared, frame)                     a Deliver to a virtual port (datapath)
//!    shared port known? ─ no → unknown_port         push its tag if it has one → out of the
//!    802.1Q tag? read the VID (0: untagged)           shared port's interface
//!    source MAC a virtual port's?
//!      yes: its VLAN the frame's? ─ no → unknown_vport
//!      no:  untagged and a default? ─ no → unknown_vport
//!    pop the tag → (virtual port, frame) → from_port(virtual port, …)
//! ```
//!
//! Virtual ports on one interface under one VLAN (or untagged) share a wire: a *segment*. Three
//! rules follow from it.
//! - A network floods once per segment: only one of its virtual ports per segment (the first
//!   added) is a member of the network's flood list, so one copy leaves the interface however
//!   many of the network's VMs live behind it. The copy is counted on that virtual port.
//! - Nothing goes back out of the segment it came in on (split horizon, `Pipeline::horizon`):
//!   the hypervisor's own switch already delivered it there. A flood from VM A in network 100
//!   thus never reaches VM B of network 200 on the same segment through nvod, and a unicast
//!   frame to a VM on the same segment is a `hairpin` drop.
//! - A virtual port's MAC is known by configuration: it is a static FDB entry of its network,
//!   pointing at the virtual port, for as long as the virtual port exists. A MAC some virtual
//!   port names never falls to the default network (not even with the wrong VLAN), so learning
//!   on a shared port never puts one MAC in two networks; adding a virtual port forgets what
//!   the default network had learned of its MAC.
//!
//! Only the 802.1Q C-tag (0x8100) selects a VLAN here; a tagged virtual port's frames leave
//! with PCP 0. Bounded: [`MAX_VPORTS_PER_PORT`] per shared port and [`MAX_VPORTS`] per node.

use std::collections::HashMap;

use crate::counters::PortCounters;
use crate::vlan::{self, VlanTag, TPID_8021Q};
use crate::{DropReason, Mac, PortId, Vni};

/// The most virtual ports (the default one included) one shared port holds.
pub const MAX_VPORTS_PER_PORT: usize = 1024;
/// The most virtual ports a node holds, over every shared port.
pub const MAX_VPORTS: usize = 16384;

/// Where the VLAN tag is: after the two MACs.
const MACS_LEN: usize = 12;

/// One virtual port: a MAC (and VLAN) of a shared port, and its network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vport {
    /// The virtual port's own id in the pipeline.
    pub port: PortId,
    /// The VM's MAC: frames with it as source are the virtual port's.
    pub mac: Mac,
    /// The 802.1Q VLAN ID its frames carry on the wire (`1..=4094`), `None` if untagged.
    pub vid: Option<u16>,
    /// Its network.
    pub vni: Vni,
}

impl Vport {
    /// The tag frames to it get, if any.
    pub fn tag(&self) -> Option<VlanTag> {
        self.vid.map(|vid| VlanTag {
            tpid: TPID_8021Q,
            vid,
        })
    }
}

/// What [`Pipeline::from_shared`] made of a frame: the virtual port it belongs to and, when
/// the frame was tagged, the length of the untagged copy written to `out`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classified {
    /// The virtual port.
    pub vport: PortId,
    /// `Some(len)`: the frame without its tag is `out[..len]`; `None`: the frame as it came.
    pub popped: Option<usize>,
}

/// A shared port's virtual ports, as [`crate::Pipeline::vports`] shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedView {
    /// Its virtual ports, by MAC.
    pub vports: Vec<Vport>,
    /// Its default virtual port and that port's network.
    pub default: Option<(PortId, Vni)>,
}

/// A shared port as the pipeline holds it.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) by_mac: HashMap<Mac, Vport>,
    /// The default virtual port and its network.
    pub(crate) default: Option<(PortId, Vni)>,
    pub(crate) counters: PortCounters,
}

/// The wire a virtual port's frames share with others: (shared port, VID or 0 untagged).
pub(crate) type Segment = (PortId, u16);

/// Every shared port, and the segment of every virtual port.
#[derive(Debug, Default)]
pub(crate) struct SharedPorts {
    pub(crate) ports: HashMap<PortId, Shared>,
    pub(crate) segments: HashMap<PortId, Segment>,
}

impl SharedPorts {
    /// Whether any virtual port exists (the per-frame check for `Pipeline::horizon`).
    pub(crate) fn any(&self) -> bool {
        !self.segments.is_empty()
    }
}

/// The virtual port of a shared port's frame and whether the frame is tagged, or why it goes
/// nowhere.
pub(crate) fn classify(s: &Shared, frame: &[u8]) -> Result<(PortId, bool), DropReason> {
    let (Some(src), Some(ethertype)) = (frame.get(6..MACS_LEN), frame.get(MACS_LEN..MACS_LEN + 2))
    else {
        return Err(DropReason::MalformedFrame);
    };
    let mut mac = [0u8; 6];
    mac.copy_from_slice(src);
    let mac = Mac(mac);
    let vid = if u16::from_be_bytes([ethertype[0], ethertype[1]]) == TPID_8021Q {
        // A tagged frame still needs its inner ethertype: 12 + 4 + 2 bytes.
        let tci = frame
            .get(MACS_LEN + 2..MACS_LEN + vlan::TAG_LEN + 2)
            .ok_or(DropReason::MalformedFrame)?;
        // VID 0 is a priority tag: the frame belongs to no VLAN (802.1Q §9.6).
        match u16::from_be_bytes([tci[0], tci[1]]) & 0x0fff {
            0 => None,
            vid => Some(vid),
        }
    } else {
        None
    };
    let tagged = u16::from_be_bytes([ethertype[0], ethertype[1]]) == TPID_8021Q;
    match (s.by_mac.get(&mac), s.default) {
        (Some(v), _) if v.vid == vid => Ok((v.port, tagged)),
        (Some(_), _) => Err(DropReason::UnknownVport),
        (None, Some((port, _))) if !tagged => Ok((port, false)),
        (None, _) => Err(DropReason::UnknownVport),
    }
}
