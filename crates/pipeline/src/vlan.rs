//! VLAN attachment circuits: a gateway port whose frames carry an 802.1Q (or 802.1ad) tag on the
//! wire, the hardware VTEP paper's AC-VP.
//!
//! A *trunk* is an interface (its own [`PortId`], never a member of a network) whose VLAN IDs
//! map to networks; each (interface, VLAN) pair is an *attachment circuit*, a port of the
//! pipeline like any other (its own `PortId`, counters, FDB entries, flood membership). An access
//! port of one VLAN whose frames are tagged on the wire is a trunk with one circuit.
//!
//! ```text
//!  from_trunk(trunk, tagged frame)                 a Deliver to a circuit (datapath)
//!    trunk known? ─ no → unknown_port               push(tag of the circuit, frame) → out of
//!    outer TPID the trunk's? ─ no → vlan_untagged     the trunk's interface
//!    VID mapped? ─ no → unknown_vlan
//!    pop the tag → (circuit, untagged frame) → from_port(circuit, …)
//! ```
//!
//! The tag is IEEE 802.1Q §9.6: TPID (0x8100, or 0x88a8 for an 802.1ad S-tag), then the TCI:
//! PCP (3 bits), DEI (1 bit), VID (12 bits). VIDs 0 (priority tag) and 4095 (reserved) name no
//! VLAN (§9.6 table 9-2). On an 802.1ad trunk the S-tag's VID selects the network and only the
//! S-tag is popped: a customer's inner 802.1Q tag travels through the tunnel as part of its
//! frame (transparent QinQ), and is pushed back under the S-tag on the way out. The PCP is not
//! kept (frames leave with PCP 0) — DSCP marking from it is later work.
//!
//! There is no native VLAN: an untagged frame on a trunk is dropped (`vlan_untagged`), as is a
//! frame with a VID the trunk does not map (`unknown_vlan`).

use std::collections::HashMap;

use crate::counters::PortCounters;
use crate::{DropReason, PortId, TableError, Vni};

/// The 802.1Q customer VLAN tag's TPID (C-tag).
pub const TPID_8021Q: u16 = 0x8100;
/// The 802.1ad service VLAN tag's TPID (S-tag).
pub const TPID_8021AD: u16 = 0x88a8;
/// The largest VLAN ID: 4094 (4095 is reserved).
pub const MAX_VID: u16 = 4094;
/// The most VLANs one trunk maps.
pub const MAX_TRUNK_VLANS: usize = 256;
/// Length of one tag.
pub const TAG_LEN: usize = 4;
/// Where the tag goes: after the two MAC addresses.
const MACS_LEN: usize = 12;

/// One VLAN of a trunk: its VID, the circuit's port and the circuit's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Circuit {
    /// The VLAN ID on the wire, `1..=4094`.
    pub vid: u16,
    /// The circuit's port in the pipeline.
    pub port: PortId,
    /// The circuit's network.
    pub vni: Vni,
}

/// A tag to push: TPID and VID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// 0x8100 or 0x88a8.
    pub tpid: u16,
    /// `1..=4094`.
    pub vid: u16,
}

impl VlanTag {
    /// The four bytes on the wire (PCP and DEI 0).
    pub fn bytes(self) -> [u8; TAG_LEN] {
        let [t0, t1] = self.tpid.to_be_bytes();
        let [v0, v1] = (self.vid & 0x0fff).to_be_bytes();
        [t0, t1, v0, v1]
    }
}

/// A trunk as the pipeline holds it.
#[derive(Debug)]
pub(crate) struct Trunk {
    pub(crate) tpid: u16,
    pub(crate) by_vid: HashMap<u16, PortId>,
    pub(crate) circuits: Vec<Circuit>,
    pub(crate) counters: PortCounters,
}

/// Whether a trunk's VLAN map can be installed: a known TPID, between 1 and
/// [`MAX_TRUNK_VLANS`] circuits, every VID in `1..=4094` and used once, every network once
/// (so that a network's frames leave the trunk under one tag), every circuit port distinct.
pub fn check_trunk(tpid: u16, circuits: &[Circuit]) -> Result<(), TableError> {
    if tpid != TPID_8021Q && tpid != TPID_8021AD {
        return Err(TableError::InvalidTpid(tpid));
    }
    if circuits.is_empty() || circuits.len() > MAX_TRUNK_VLANS {
        return Err(TableError::TrunkSize {
            vlans: circuits.len(),
            max: MAX_TRUNK_VLANS,
        });
    }
    for (i, c) in circuits.iter().enumerate() {
        if c.vid == 0 || c.vid > MAX_VID {
            return Err(TableError::InvalidVid(c.vid));
        }
        let earlier = &circuits[..i];
        if earlier.iter().any(|e| e.vid == c.vid) {
            return Err(TableError::DuplicateVid(c.vid));
        }
        if let Some(e) = earlier.iter().find(|e| e.vni == c.vni) {
            return Err(TableError::VniMappedTwice {
                vni: c.vni,
                first: e.vid,
                second: c.vid,
            });
        }
        if earlier.iter().any(|e| e.port == c.port) {
            return Err(TableError::PortExists {
                port: c.port,
                vni: c.vni,
            });
        }
    }
    Ok(())
}

/// What a trunk frame is once its tag is read: the circuit it came in on and the tag's length
/// (the frame without it is `MACs ‖ frame[12 + len..]`), or why it goes nowhere.
pub(crate) fn classify(trunk: &Trunk, frame: &[u8]) -> Result<PortId, DropReason> {
    let Some(tag) = frame.get(MACS_LEN..MACS_LEN + TAG_LEN) else {
        return Err(DropReason::MalformedFrame);
    };
    if u16::from_be_bytes([tag[0], tag[1]]) != trunk.tpid {
        return Err(DropReason::VlanUntagged);
    }
    // A tagged frame still needs its inner ethertype: 12 + 4 + 2 bytes.
    if frame.len() < MACS_LEN + TAG_LEN + 2 {
        return Err(DropReason::MalformedFrame);
    }
    let vid = u16::from_be_bytes([tag[2], tag[3]]) & 0x0fff;
    trunk
        .by_vid
        .get(&vid)
        .copied()
        .ok_or(DropReason::UnknownVlan)
}

/// Writes `frame` without its outer tag into `out`: its length, or `None` when `out` is too
/// short or the frame has no tag's room.
pub fn pop(frame: &[u8], out: &mut [u8]) -> Option<usize> {
    let len = frame.len().checked_sub(TAG_LEN)?;
    let rest = frame.get(MACS_LEN + TAG_LEN..)?;
    let dst = out.get_mut(..len)?;
    dst[..MACS_LEN].copy_from_slice(frame.get(..MACS_LEN)?);
    dst[MACS_LEN..].copy_from_slice(rest);
    Some(len)
}

/// Writes `frame` with `tag` pushed in front of its ethertype into `out`: its length, or
/// `None` when `out` is too short or `frame` shorter than its two MACs.
pub fn push(frame: &[u8], tag: VlanTag, out: &mut [u8]) -> Option<usize> {
    let macs = frame.get(..MACS_LEN)?;
    let len = frame.len() + TAG_LEN;
    let dst = out.get_mut(..len)?;
    dst[..MACS_LEN].copy_from_slice(macs);
    dst[MACS_LEN..MACS_LEN + TAG_LEN].copy_from_slice(&tag.bytes());
    dst[MACS_LEN + TAG_LEN..].copy_from_slice(&frame[MACS_LEN..]);
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(vid: u16, port: u32, vni: u32) -> Circuit {
        Circuit {
            vid,
            port: PortId(port),
            vni: Vni(vni),
        }
    }

    #[test]
    fn trunk_checks_name_the_offending_value() {
        assert_eq!(
            check_trunk(TPID_8021Q, &[c(10, 1, 100), c(20, 2, 200)]),
            Ok(())
        );
        assert_eq!(
            check_trunk(0x9100, &[c(10, 1, 100)]),
            Err(TableError::InvalidTpid(0x9100))
        );
        assert_eq!(
            check_trunk(TPID_8021Q, &[c(0, 1, 100)]),
            Err(TableError::InvalidVid(0))
        );
        assert_eq!(
            check_trunk(TPID_8021Q, &[c(4095, 1, 100)]),
            Err(TableError::InvalidVid(4095))
        );
        assert_eq!(
            check_trunk(TPID_8021AD, &[c(10, 1, 100), c(10, 2, 200)]),
            Err(TableError::DuplicateVid(10))
        );
        assert_eq!(
            check_trunk(TPID_8021Q, &[c(10, 1, 100), c(20, 2, 100)]),
            Err(TableError::VniMappedTwice {
                vni: Vni(100),
                first: 10,
                second: 20
            })
        );
        assert!(matches!(
            check_trunk(TPID_8021Q, &[]),
            Err(TableError::TrunkSize { vlans: 0, .. })
        ));
        let many: Vec<Circuit> = (1..=257)
            .map(|v| c(v, u32::from(v), u32::from(v)))
            .collect();
        assert!(matches!(
            check_trunk(TPID_8021Q, &many),
            Err(TableError::TrunkSize { vlans: 257, .. })
        ));
    }

    #[test]
    fn push_then_pop_is_the_frame() {
        let frame: Vec<u8> = (0u8..64).collect();
        let mut tagged = [0u8; 68];
        let tag = VlanTag {
            tpid: TPID_8021AD,
            vid: 4094,
        };
        assert_eq!(push(&frame, tag, &mut tagged), Some(68));
        assert_eq!(&tagged[12..16], &[0x88, 0xa8, 0x0f, 0xfe]);
        assert_eq!(&tagged[..12], &frame[..12]);
        assert_eq!(&tagged[16..], &frame[12..]);
        let mut back = [0u8; 64];
        assert_eq!(pop(&tagged, &mut back), Some(64));
        assert_eq!(&back[..], &frame[..]);
        // Too small a buffer or frame: nothing written, no panic.
        assert_eq!(push(&frame, tag, &mut [0u8; 67]), None);
        assert_eq!(push(&frame[..11], tag, &mut tagged), None);
        assert_eq!(pop(&tagged[..15], &mut back), None);
    }
}
