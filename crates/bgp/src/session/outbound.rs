//! UPDATEs a speaker sends for EVPN (RFC 7432 §7, RFC 4760 §3–4, RFC 4724 §2).
//!
//! Each builder checks that the message fits in 4096 bytes, so a speaker learns it must split
//! a batch before the session has to drop it: about 90 type-2 routes fit in one UPDATE.

use super::{RouteAttrs, SessionConfig};
use crate::attribute::{AsPathSegment, Origin};
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::message::{HEADER_LEN, MAX_MESSAGE_LEN};
use crate::{AttributeValue, Error, EvpnRoute, MpReach, MpUnreach, PathAttribute, UpdateRepr};

/// LOCAL_PREF sent to iBGP peers when the attributes carry none (RFC 4271 §5.1.5).
const DEFAULT_LOCAL_PREF: u32 = 100;
/// AS_SEQUENCE (RFC 4271 §4.3).
const AS_SEQUENCE: u8 = 2;

/// An UPDATE announcing `routes` with `attrs` (next hop, communities, PMSI) to the neighbour of
/// `cfg`: ORIGIN IGP; iBGP gets an empty AS_PATH and LOCAL_PREF, eBGP gets AS_PATH `[local_as]`.
/// ORIGINATOR_ID and CLUSTER_LIST of `attrs` are not sent (they belong to route reflectors).
pub fn announce(
    cfg: &SessionConfig,
    routes: &[EvpnRoute],
    attrs: &RouteAttrs,
) -> Result<UpdateRepr, Error> {
    let as_path = if cfg.ibgp() {
        Vec::new()
    } else {
        vec![AsPathSegment {
            kind: AS_SEQUENCE,
            asns: vec![cfg.local_as],
        }]
    };
    let mut values = vec![
        AttributeValue::MpReach(MpReach::evpn(attrs.next_hop, routes)?),
        AttributeValue::Origin(Origin::Igp),
        AttributeValue::AsPath(as_path),
    ];
    if cfg.ibgp() {
        values.push(AttributeValue::LocalPref(
            attrs.local_pref.unwrap_or(DEFAULT_LOCAL_PREF),
        ));
    }
    if !attrs.communities.is_empty() {
        values.push(AttributeValue::ExtendedCommunities(
            attrs.communities.clone(),
        ));
    }
    if let Some(pmsi) = &attrs.pmsi {
        values.push(AttributeValue::PmsiTunnel(pmsi.clone()));
    }
    checked(UpdateRepr {
        withdrawn: Vec::new(),
        attributes: values.into_iter().map(PathAttribute::new).collect(),
        nlri: Vec::new(),
    })
}

/// An UPDATE withdrawing `routes` (MP_UNREACH_NLRI only).
pub fn withdraw(routes: &[EvpnRoute]) -> Result<UpdateRepr, Error> {
    let mut withdrawn = Vec::new();
    EvpnRoute::emit_all(routes, &mut withdrawn)?;
    checked(unreach(withdrawn))
}

/// The End-of-RIB marker for AFI 25 / SAFI 70: an UPDATE with only an empty MP_UNREACH_NLRI.
pub fn end_of_rib() -> UpdateRepr {
    crate::pack::end_of_rib()
}

fn unreach(withdrawn: Vec<u8>) -> UpdateRepr {
    UpdateRepr {
        withdrawn: Vec::new(),
        attributes: vec![PathAttribute::new(AttributeValue::MpUnreach(MpUnreach {
            afi: AFI_L2VPN,
            safi: SAFI_EVPN,
            withdrawn,
        }))],
        nlri: Vec::new(),
    }
}

/// The UPDATE if it emits within 4096 bytes, else the emit error.
fn checked(update: UpdateRepr) -> Result<UpdateRepr, Error> {
    let mut body = Vec::new();
    update.emit(&mut body)?;
    let len = HEADER_LEN + body.len();
    if len > MAX_MESSAGE_LEN {
        return Err(Error::Emit {
            what: "update length",
            value: len,
        });
    }
    Ok(update)
}
