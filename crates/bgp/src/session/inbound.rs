//! A received UPDATE turned into what the speaker needs (RFC 4760, RFC 7606, RFC 4724 §2).
//!
//! Only AFI 25 / SAFI 70 routes are kept. The RFC 7606 verdict decides: session reset → `Err`
//! with the error whose NOTIFICATION to send; treat-as-withdraw (a malformed attribute, or a
//! missing well-known one, §3 d) → every EVPN route of the UPDATE is withdrawn; attributes
//! discarded → the routes stay, without them. EVPN NLRI that cannot be parsed resets the
//! session (§5.4 allows that or disabling the family; nvo has only this family). An MP_REACH
//! next hop that is neither 4, 16 nor 32 bytes long resets too (§7.11).
//!
//! Loops: routes whose AS_PATH holds our AS (RFC 4271 §9.1.2) or whose ORIGINATOR_ID is our
//! BGP identifier (RFC 4456 §8) are not accepted: they withdraw what the peer had announced
//! under the same NLRI, and count as ignored.

use std::net::{IpAddr, Ipv4Addr};

use super::{RouteAttrs, SessionEvent};
use crate::attribute::{attr_type, AttributeValue};
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::update_subcode as sub;
use crate::{Error, EvpnRoute, ParsedUpdate, Scope, UpdateRepr, Verdict};

/// RFC 4271 §6.3: Missing Well-known Attribute.
const MISSING_WELL_KNOWN: u8 = 3;

/// What one UPDATE amounts to.
#[derive(Debug)]
pub(super) struct Inbound {
    /// `Update` or `EndOfRib`; `None` when nothing for the speaker (IPv4 only, its EoR).
    pub(super) event: Option<SessionEvent>,
    pub(super) treat_as_withdraw: bool,
    pub(super) discarded: u64,
    pub(super) ignored: u64,
}

fn is_evpn(afi: u16, safi: u8) -> bool {
    afi == AFI_L2VPN && safi == SAFI_EVPN
}

/// Who we are, for the loop checks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Us {
    pub(super) asn: u32,
    pub(super) router_id: Ipv4Addr,
    pub(super) ibgp: bool,
}

/// Classifies an UPDATE; `Err` is a session reset with the error to notify.
pub(super) fn classify(parsed: ParsedUpdate, us: Us) -> Result<Inbound, Error> {
    let ibgp = us.ibgp;
    let ParsedUpdate {
        update,
        mut errors,
        verdict,
    } = parsed;
    if verdict == Verdict::SessionReset {
        let first = errors.iter().position(|e| e.scope() == Scope::Session);
        return Err(match first {
            Some(i) => errors.swap_remove(i),
            None => malformed_list(),
        });
    }
    let discarded = errors
        .iter()
        .filter(|e| e.scope() == Scope::AttributeDiscard)
        .count() as u64;
    if update.is_end_of_rib() {
        let evpn = update
            .mp_unreach()
            .is_some_and(|mp| is_evpn(mp.afi, mp.safi));
        return Ok(Inbound {
            event: evpn.then_some(SessionEvent::EndOfRib),
            treat_as_withdraw: false,
            discarded,
            ignored: 0,
        });
    }
    let mut ignored = (update.nlri.len() + update.withdrawn.len()) as u64;
    let mut withdraw = match update.mp_unreach() {
        Some(mp) if is_evpn(mp.afi, mp.safi) => EvpnRoute::parse_all(&mp.withdrawn)?,
        Some(_) => {
            ignored += 1;
            Vec::new()
        }
        None => Vec::new(),
    };
    let (mut announced, next_hop) = match update.mp_reach() {
        Some(mp) if is_evpn(mp.afi, mp.safi) => {
            let next_hop = mp.next_hop_ip().ok_or(Error::Attribute {
                type_code: attr_type::MP_REACH_NLRI,
                what: "next hop length",
                value: mp.next_hop.len() as u32,
                subcode: sub::OPTIONAL_ATTRIBUTE,
                scope: Scope::Session,
            })?;
            (EvpnRoute::parse_all(&mp.nlri)?, Some(next_hop))
        }
        Some(_) => {
            ignored += 1;
            (Vec::new(), None)
        }
        None => (Vec::new(), None),
    };
    let mut treat_as_withdraw = verdict == Verdict::TreatAsWithdraw;
    // A malformed mandatory attribute was left out by the parser: not "missing" as well.
    if !announced.is_empty() && !treat_as_withdraw {
        if let Some(type_code) = update.missing_mandatory(ibgp) {
            errors.push(Error::Attribute {
                type_code,
                what: "missing well-known attribute",
                value: 0,
                subcode: MISSING_WELL_KNOWN,
                scope: Scope::TreatAsWithdraw,
            });
            treat_as_withdraw = true;
        }
    }
    let looped = !announced.is_empty() && !treat_as_withdraw && is_loop(&update, us);
    if looped {
        ignored += announced.len() as u64;
    }
    let reach = match next_hop {
        Some(next_hop) if !treat_as_withdraw && !looped => {
            let attrs = route_attrs(&update, next_hop);
            announced
                .into_iter()
                .map(|route| (route, attrs.clone()))
                .collect()
        }
        _ => {
            withdraw.append(&mut announced);
            Vec::new()
        }
    };
    let event = (!reach.is_empty() || !withdraw.is_empty() || !errors.is_empty()).then_some(
        SessionEvent::Update {
            reach,
            withdraw,
            errors,
        },
    );
    Ok(Inbound {
        event,
        treat_as_withdraw,
        discarded,
        ignored,
    })
}

/// Our AS in the AS_PATH, or our identifier as ORIGINATOR_ID.
fn is_loop(update: &UpdateRepr, us: Us) -> bool {
    update.attributes.iter().any(|a| match &a.value {
        AttributeValue::AsPath(segments) => segments.iter().any(|s| s.asns.contains(&us.asn)),
        AttributeValue::OriginatorId(id) => *id == us.router_id,
        _ => false,
    })
}

fn malformed_list() -> Error {
    Error::Update {
        what: "attribute list",
        value: 0,
        subcode: sub::MALFORMED_ATTRIBUTE_LIST,
    }
}

fn route_attrs(update: &UpdateRepr, next_hop: IpAddr) -> RouteAttrs {
    let mut attrs = RouteAttrs {
        next_hop,
        communities: Vec::new(),
        pmsi: None,
        originator_id: None,
        cluster_list: Vec::new(),
        local_pref: None,
    };
    for attr in &update.attributes {
        match &attr.value {
            AttributeValue::ExtendedCommunities(list) => attrs.communities = list.clone(),
            AttributeValue::PmsiTunnel(p) => attrs.pmsi = Some(p.clone()),
            AttributeValue::OriginatorId(id) => attrs.originator_id = Some(*id),
            AttributeValue::ClusterList(ids) => attrs.cluster_list = ids.clone(),
            AttributeValue::LocalPref(v) => attrs.local_pref = Some(*v),
            _ => {}
        }
    }
    attrs
}
