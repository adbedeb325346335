//! Our OPEN and the checks of the peer's (RFC 4271 §6.2, RFC 5492 §5, RFC 4724 §3).

use std::net::Ipv4Addr;

use super::{PeerGr, SessionConfig};
use crate::evpn::{AFI_L2VPN, SAFI_EVPN};
use crate::open::{open_subcode, GracefulRestartFamily};
use crate::{code, Capability, OpenRepr};

/// RFC 5492 §5: Unsupported Capability.
const UNSUPPORTED_CAPABILITY: u8 = 7;
/// Graceful restart flags (RFC 4724 §3): R, restarting.
const GR_RESTARTING: u8 = 0x8;
/// Per-family flags: F, forwarding state preserved.
const GR_FORWARDING: u8 = 0x80;
/// The restart time field has 12 bits.
const GR_MAX_TIME: u16 = 0x0fff;

/// What the OPEN exchange settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Negotiated {
    pub(super) peer_id: Ipv4Addr,
    /// The smaller hold time; 0 = no hold timer and no keepalives.
    pub(super) hold_time: u16,
    /// The peer's GR capability when it lists EVPN.
    pub(super) peer_gr: Option<PeerGr>,
    /// The restart time of any GR capability of the peer.
    pub(super) peer_restart_time: Option<u16>,
}

/// An OPEN we refuse: the NOTIFICATION to send and a line for `last_error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) code: u8,
    pub(super) subcode: u8,
    pub(super) data: Vec<u8>,
    pub(super) reason: String,
}

/// Our OPEN. `restarting` sets the R bit and the F bit for EVPN.
pub(super) fn local_open(cfg: &SessionConfig, restarting: bool) -> OpenRepr {
    let mut caps = vec![
        Capability::Multiprotocol {
            afi: AFI_L2VPN,
            safi: SAFI_EVPN,
        },
        Capability::RouteRefresh,
    ];
    if let Some(time) = cfg.graceful_restart {
        caps.push(Capability::GracefulRestart {
            flags: if restarting { GR_RESTARTING } else { 0 },
            restart_time: time.min(GR_MAX_TIME),
            families: vec![GracefulRestartFamily {
                afi: AFI_L2VPN,
                safi: SAFI_EVPN,
                flags: if restarting { GR_FORWARDING } else { 0 },
            }],
        });
    }
    // OpenRepr::new adds the 4-octet AS capability.
    OpenRepr::new(cfg.local_as, offered_hold(cfg), cfg.router_id, caps)
}

/// The hold time we offer: RFC 4271 §4.2 forbids 1 and 2, so those become 3.
fn offered_hold(cfg: &SessionConfig) -> u16 {
    match cfg.hold_time {
        1 | 2 => 3,
        other => other,
    }
}

/// Checks the peer's OPEN (already through [`OpenRepr::parse`], which refuses version ≠ 4,
/// hold time 1 or 2 and identifier 0) against the configuration.
pub(super) fn check_peer_open(cfg: &SessionConfig, open: &OpenRepr) -> Result<Negotiated, Refusal> {
    let refuse = |subcode, data: Vec<u8>, reason: String| Refusal {
        code: code::OPEN,
        subcode,
        data,
        reason,
    };
    if open.asn() != cfg.peer_as {
        return Err(refuse(
            open_subcode::BAD_PEER_AS,
            open.my_as.to_be_bytes().to_vec(),
            format!("peer as {} but {} configured", open.asn(), cfg.peer_as),
        ));
    }
    if open.bgp_id == cfg.router_id {
        return Err(refuse(
            open_subcode::BAD_BGP_ID,
            open.bgp_id.octets().to_vec(),
            format!("peer bgp identifier {} equals ours", open.bgp_id),
        ));
    }
    // AS_PATH is always read with 4-octet AS numbers (see Message::parse).
    if !open
        .capabilities
        .iter()
        .any(|c| matches!(c, Capability::FourOctetAs(_)))
    {
        return Err(refuse(
            UNSUPPORTED_CAPABILITY,
            vec![65, 4], // capability code, length: 4-octet AS
            "peer lacks the 4-octet as capability".to_string(),
        ));
    }
    if !open.families().any(|f| f == (AFI_L2VPN, SAFI_EVPN)) {
        return Err(refuse(
            UNSUPPORTED_CAPABILITY,
            vec![1, 4, 0, 25, 0, 70], // multiprotocol capability for 25/70
            "peer does not advertise l2vpn evpn (afi 25 safi 70)".to_string(),
        ));
    }
    let gr = open.capabilities.iter().find_map(|c| match c {
        Capability::GracefulRestart {
            flags,
            restart_time,
            families,
        } => Some((*flags, *restart_time, families)),
        _ => None,
    });
    let peer_gr = gr.and_then(|(flags, restart_time, families)| {
        let evpn = families
            .iter()
            .find(|f| f.afi == AFI_L2VPN && f.safi == SAFI_EVPN)?;
        Some(PeerGr {
            restart_time,
            restarting: flags & GR_RESTARTING != 0,
            forwarding_preserved: evpn.forwarding_preserved(),
        })
    });
    Ok(Negotiated {
        peer_id: open.bgp_id,
        hold_time: offered_hold(cfg).min(open.hold_time),
        peer_gr,
        peer_restart_time: gr.map(|(_, time, _)| time),
    })
}
