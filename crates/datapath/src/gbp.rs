//! The identity on the wire (issue 18): a network with a policy sends each frame's source
//! group in VXLAN-GBP's Group Policy ID, with the A bit set when the sender applied policy, and
//! the receiver reads both back for the pipeline's ingress policy.
//!
//! ```text
//!  draft-smith-vxlan-group-policy-05 §2.1
//!   0                   1                   2                   3
//!   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |G|R|R|R|I|R|R|R|R|D|R|R|A|R|R|R|        Group Policy ID        |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |          VXLAN Network Identifier (VNI)       |   Reserved    |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! On `vxlan-gbp`, the per-network `group` parameter is what a network without a policy sends
//! (the template), a network with one sends its endpoints' groups instead. `geneve` carries the
//! same in an option, other profiles carry none (identity.rs chooses per profile).

use nvo_encap::builtin::ids::VXLAN_GBP;
use nvo_encap::profile::ProfileId;
use nvo_pipeline::policy::GroupTag;
use nvo_wire::vxlan;

/// GBP's A bit ("policy applied"), in the second flags byte.
const A: u8 = 0x08;

/// `header` with `tag` written into it when `profile` is VXLAN-GBP (a copy in `buf`), else
/// `header` itself.
pub(crate) fn tagged<'a>(
    header: &'a [u8],
    profile: ProfileId,
    tag: Option<GroupTag>,
    buf: &'a mut [u8; vxlan::HEADER_LEN],
) -> &'a [u8] {
    let Some(t) = tag.filter(|_| profile == VXLAN_GBP) else {
        return header;
    };
    if header.len() != vxlan::HEADER_LEN {
        return header;
    }
    buf.copy_from_slice(header);
    buf[2..4].copy_from_slice(&t.group.to_be_bytes());
    if t.applied {
        buf[1] |= A;
    } else {
        buf[1] &= !A;
    }
    &buf[..]
}

/// The identity a received VXLAN-GBP header carries (`packet` starts with the header).
pub(crate) fn read(profile: ProfileId, packet: &[u8]) -> Option<GroupTag> {
    if profile != VXLAN_GBP {
        return None;
    }
    let h = packet.get(..vxlan::HEADER_LEN)?;
    Some(GroupTag {
        group: u16::from_be_bytes([h[2], h[3]]),
        applied: h[1] & A != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_wire::vxlan::{Gbp, VxlanPacket, VxlanRepr};

    /// The template nvod sends for a network of vni 100 with group parameter 100.
    fn template() -> [u8; 8] {
        [0x88, 0, 0, 100, 0, 0, 100, 0]
    }

    #[test]
    fn writes_the_group_and_a_bit_that_the_wire_parser_reads() {
        let mut buf = [0; 8];
        let tag = GroupTag {
            group: 0x1234,
            applied: true,
        };
        let h = tagged(&template(), VXLAN_GBP, Some(tag), &mut buf).to_vec();
        // Read back by nvo-wire's independent VXLAN parser.
        let repr = VxlanRepr::parse(&VxlanPacket::new_checked(&h[..]).unwrap()).unwrap();
        assert_eq!(repr.vni, 100);
        assert_eq!(
            repr.gbp,
            Some(Gbp {
                dont_learn: false,
                policy_applied: true,
                group_policy_id: 0x1234
            })
        );
        assert_eq!(read(VXLAN_GBP, &h), Some(tag));
        // Not applied: the A bit is clear.
        let tag = GroupTag {
            group: 7,
            applied: false,
        };
        let h = tagged(&h, VXLAN_GBP, Some(tag), &mut buf).to_vec();
        assert_eq!(h[1], 0);
        assert_eq!(read(VXLAN_GBP, &h), Some(tag));
    }

    #[test]
    fn other_profiles_and_untagged_frames_keep_the_template() {
        let mut buf = [0; 8];
        let t = template();
        assert_eq!(tagged(&t, VXLAN_GBP, None, &mut buf), &t[..]);
        let vxlan = nvo_encap::builtin::ids::VXLAN;
        let tag = Some(GroupTag {
            group: 5,
            applied: true,
        });
        assert_eq!(tagged(&t, vxlan, tag, &mut buf), &t[..]);
        assert_eq!(read(vxlan, &t), None);
        assert_eq!(read(VXLAN_GBP, &t[..7]), None);
    }
}
