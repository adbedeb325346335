//! The identity on the wire (issue 18), per profile: a network with a policy sends each frame's
//! source group, and whether the sender applied policy, in the header; the receiver reads both
//! back for the pipeline's ingress policy.
//!
//! - `vxlan-gbp`: the Group Policy ID and the A bit ([`super::gbp`]).
//! - `geneve`: nvo's identity option ([`nvo_wire::geneve::identity`]: class 0xFFF0, type 0x01,
//!   not critical), appended to the engine's header, whose `Opt Len` grows by its two words.
//!
//! Other profiles carry nothing: their receivers derive the identity from the source address
//! (nvo_pipeline::policy). Only frames of networks with a policy are tagged, and only those
//! networks use a tag they receive (Geneve options are not even read without a policy), so a
//! network without one sends the same bytes as before and ignores what a sender puts there.
//! The header is per frame, so a GSO super-datagram's segments (each behind its own copy of
//! the header) all carry the same option.

use nvo_encap::builtin::ids::{GENEVE, VXLAN_GBP};
use nvo_encap::profile::ProfileId;
use nvo_pipeline::policy::GroupTag;
use nvo_pipeline::{Actions, Pipeline, Vni};
use nvo_wire::geneve::identity::{self, Identity};
use nvo_wire::geneve::{GenevePacket, HEADER_LEN as GENEVE_LEN, MAX_OPTIONS_LEN};
use nvo_wire::vxlan;

/// Room for a tagged header: VXLAN-GBP's 8 bytes, or a Geneve header (the built-in template is
/// 8 bytes without options) and the identity option.
const TAG_BUF_LEN: usize = 32;

/// Where [`tagged`] writes a tagged copy of a header.
pub(crate) type TagBuf = [u8; TAG_BUF_LEN];

/// A Geneve option list that does not walk as whole options, or an identity option of another
/// length: the packet is a `malformed_tunnel` drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BadOptions;

/// `header` with `tag` written into it (a copy in `buf`) when `profile` carries the identity,
/// else `header` itself.
pub(crate) fn tagged<'a>(
    header: &'a [u8],
    profile: ProfileId,
    tag: Option<GroupTag>,
    buf: &'a mut TagBuf,
) -> &'a [u8] {
    match profile {
        VXLAN_GBP => {
            match <&mut [u8; vxlan::HEADER_LEN]>::try_from(&mut buf[..vxlan::HEADER_LEN]) {
                Ok(b) => super::gbp::tagged(header, profile, tag, b),
                Err(_) => header,
            }
        }
        GENEVE => match tag {
            Some(t) => geneve_tagged(header, t, buf),
            None => header,
        },
        _ => header,
    }
}

/// A Geneve header with the identity option after its options (a copy in `buf`); `header`
/// itself when it is not a Geneve header with room for one more option.
fn geneve_tagged<'a>(header: &'a [u8], tag: GroupTag, buf: &'a mut TagBuf) -> &'a [u8] {
    let len = header.len();
    let Ok(packet) = GenevePacket::new_checked(header) else {
        return header;
    };
    let options = packet.options_len();
    if packet.header_len() != len
        || len + identity::LEN > buf.len()
        || options + identity::LEN > MAX_OPTIONS_LEN
    {
        return header;
    }
    buf[..len].copy_from_slice(header);
    let id = Identity {
        group: tag.group,
        applied: tag.applied,
    };
    if id.emit(&mut buf[len..len + identity::LEN]).is_err() {
        return header;
    }
    // Not critical: the C bit stays as the engine set it.
    GenevePacket::new_unchecked(&mut buf[..]).set_options_len(options + identity::LEN);
    &buf[..len + identity::LEN]
}

/// The identity a received header carries (`packet` starts with the header, `header_len`
/// bytes long).
pub(crate) fn read(
    profile: ProfileId,
    packet: &[u8],
    header_len: usize,
) -> Result<Option<GroupTag>, BadOptions> {
    match profile {
        VXLAN_GBP => Ok(super::gbp::read(profile, packet)),
        GENEVE => {
            let options = packet.get(GENEVE_LEN..header_len).ok_or(BadOptions)?;
            let id = Identity::find(options).map_err(|_| BadOptions)?;
            Ok(id.map(|id| GroupTag {
                group: id.group,
                applied: id.applied,
            }))
        }
        _ => Ok(None),
    }
}

/// The identity to send with a frame to network `vni` whose pipeline call left `actions`: the
/// pipeline's, when the network has a policy (a frame the kernel hands over for encapsulation
/// did not go through the pipeline, and its network has none). The policy lookup runs only for
/// a frame with a tag.
pub(crate) fn to_send(actions: &Actions, pipeline: &Pipeline, vni: Vni) -> Option<GroupTag> {
    actions.group().filter(|_| pipeline.has_policy(vni))
}

/// The identity `packet`, a tunnel packet of `profile` for network `vni` whose header is
/// `header_len` bytes long, carries: VXLAN-GBP's fields, or the Geneve option when the network
/// has a policy (a receiver without one does not look at options); `Err` when those Geneve
/// options do not parse (the caller counts a `malformed_tunnel` drop).
pub(crate) fn received(
    pipeline: &Pipeline,
    (profile, vni, header_len): (ProfileId, u32, usize),
    packet: &[u8],
) -> Result<Option<GroupTag>, BadOptions> {
    match profile {
        // The GBP fields are always there; the pipeline ignores them without a policy.
        VXLAN_GBP => read(profile, packet, header_len),
        // Only a header with options costs the policy lookup (none for most packets).
        GENEVE if header_len > GENEVE_LEN && pipeline.has_policy(Vni(vni)) => {
            read(profile, packet, header_len)
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_wire::geneve::{GeneveOption, GeneveRepr};

    /// The template nvod sends for a `geneve` network of vni 100: Ethernet, no options.
    const TEMPLATE: [u8; 8] = [0, 0, 0x65, 0x58, 0, 0, 100, 0];

    fn tag(group: u16, applied: bool) -> Option<GroupTag> {
        Some(GroupTag { group, applied })
    }

    #[test]
    fn geneve_carries_the_identity_option_that_the_wire_parser_reads() {
        let mut buf = [0; TAG_BUF_LEN];
        let h = tagged(&TEMPLATE, GENEVE, tag(0x1234, true), &mut buf).to_vec();
        assert_eq!(h.len(), 16);
        assert_eq!(&h[8..], &[0xff, 0xf0, 0x01, 0x01, 0x12, 0x34, 0x08, 0x00]);
        // Read back by nvo-wire's Geneve parser: Opt Len 2, not critical, the same VNI.
        let repr = GeneveRepr::parse(&GenevePacket::new_checked(&h[..]).unwrap()).unwrap();
        assert_eq!(
            (repr.vni, repr.options.len(), repr.critical),
            (100, 8, false)
        );
        let option = repr.option_iter().next().unwrap().unwrap();
        assert_eq!(
            (option.class, option.kind),
            (identity::CLASS, identity::TYPE)
        );
        assert!(!option.critical());
        assert_eq!(read(GENEVE, &h, h.len()), Ok(tag(0x1234, true)));
        let h = tagged(&TEMPLATE, GENEVE, tag(7, false), &mut buf).to_vec();
        assert_eq!(&h[12..], &[0, 7, 0, 0]);
        assert_eq!(read(GENEVE, &h, h.len()), Ok(tag(7, false)));
    }

    #[test]
    fn appended_after_the_options_a_header_has() {
        let mut header = [0u8; 12];
        header[..8].copy_from_slice(&TEMPLATE);
        header[0] = 1; // Opt Len 1: one empty option
        header[8..].copy_from_slice(&[0x01, 0x02, 0x03, 0x00]);
        let mut buf = [0; TAG_BUF_LEN];
        let h = tagged(&header, GENEVE, tag(10, true), &mut buf).to_vec();
        assert_eq!((h.len(), h[0]), (20, 3));
        assert_eq!(&h[8..12], &header[8..]);
        assert_eq!(read(GENEVE, &h, h.len()), Ok(tag(10, true)));
        // A header whose Opt Len disagrees with its length is sent as it is.
        assert_eq!(
            tagged(&header[..8], GENEVE, tag(10, true), &mut buf),
            &header[..8]
        );
    }

    #[test]
    fn untagged_frames_and_other_profiles_keep_the_template() {
        let mut buf = [0; TAG_BUF_LEN];
        assert_eq!(tagged(&TEMPLATE, GENEVE, None, &mut buf), &TEMPLATE[..]);
        let vxlan = nvo_encap::builtin::ids::VXLAN;
        assert_eq!(
            tagged(&TEMPLATE, vxlan, tag(5, true), &mut buf),
            &TEMPLATE[..]
        );
        assert_eq!(read(vxlan, &TEMPLATE, 8), Ok(None));
        assert_eq!(read(GENEVE, &TEMPLATE, 8), Ok(None));
        // VXLAN-GBP still goes through gbp.rs.
        let gbp = [0x88, 0, 0, 100, 0, 0, 100, 0];
        let h = tagged(&gbp, VXLAN_GBP, tag(0x0102, true), &mut buf).to_vec();
        assert_eq!(h, [0x88, 0x08, 0x01, 0x02, 0, 0, 100, 0]);
        assert_eq!(read(VXLAN_GBP, &h, 8), Ok(tag(0x0102, true)));
    }

    #[test]
    fn received_options_unknown_skipped_malformed_refused() {
        let mut packet = [0u8; 8 + 12 + 8];
        packet[..8].copy_from_slice(&TEMPLATE);
        packet[0] = 5;
        // An unknown option that is critical by its type, then the identity.
        let unknown = GeneveOption {
            class: 0x0102,
            kind: 0x80,
            data: &[1, 2, 3, 4, 5, 6, 7, 8],
        };
        unknown.emit(&mut packet[8..20]).unwrap();
        packet[20..].copy_from_slice(&[0xff, 0xf0, 0x01, 0x01, 0, 20, 0, 0]);
        assert_eq!(read(GENEVE, &packet, 28), Ok(tag(20, false)));
        // The identity's data cut off by Opt Len, or the packet shorter than its header.
        assert_eq!(read(GENEVE, &packet, 24), Err(BadOptions));
        assert_eq!(read(GENEVE, &packet[..26], 28), Err(BadOptions));
        // Its class and type with the critical bit: not the identity (and not read).
        packet[22] = 0x81;
        assert_eq!(read(GENEVE, &packet, 28), Ok(None));
    }
}
