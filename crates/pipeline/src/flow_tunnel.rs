//! The flow table's tunnel output (issue 17): Open vSwitch's flow-based tunnel,
//! `set_tunnel:VNI,set_field:IP->tun_dst,output:tunnel`, as one [`Action::Encap`].
//!
//! ```text
//!  set_tunnel:N / set_field:N->tun_id ─► key = N        (the rule's actions, in order)
//!  set_field:IP->tun_dst ──────────────► dst = IP
//!  output:tunnel (PortId::TUNNEL) ─────► vni = key, else the network of the frame's in_port
//!        network vni is an L2 network here? ─ no → Drop(unknown_vni), counted
//!        Encap { remote: dst, vni, entropy: flow hash of the frame as it is now
//!                (after the rule's rewrites), profile: that network's profile }
//! ```
//!
//! Checked when a rule is installed: [`check`] (needs nothing but the actions) refuses an
//! `output:tunnel` with no `tun_dst` before it, a `tun_dst` that is unspecified, and a key
//! wider than a VNI's 24 bits; [`check_here`] (needs this host: nvod runs it on every rule
//! from the API, OpenFlow and ACL profiles) refuses a `tun_dst` of another address family than
//! the underlay's, and a key that is not an L2 network on this host. A network removed after
//! its rule was installed makes the rule's frames `unknown_vni` drops, counted.
//!
//! The encapsulation is the network's, as for normal forwarding: its profile, and on the
//! datapath the outer TOS rules (a QoS profile's DSCP mark or trust, `inherit_tos` of the
//! frame as rewritten). No identity (VXLAN-GBP group, Geneve identity option) goes with it:
//! the rule, not the network's policy, chose the destination, so the receiver decides on its
//! own policy (as for a frame without the A bit).

use std::collections::HashMap;
use std::net::IpAddr;

use nvo_flow::Action as FlowAction;

use crate::actions::Action;
use crate::frame::{self, Eth};
use crate::network::Network;
use crate::{DropReason, PortId, Vni};

/// Why a rule's tunnel actions cannot be carried out (`FlowError::Tunnel`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunnelError {
    /// `output:tunnel` with no `tun_dst` before it.
    #[error("output:tunnel needs the remote VTEP first: set_field:IP->tun_dst before it")]
    NoDst,
    /// A `tun_dst` nothing can be sent to.
    #[error("tun_dst {0} is not a VTEP address")]
    Dst(IpAddr),
    /// A `tun_dst` of the other address family than the underlay's.
    #[error(
        "tun_dst {dst} is not of the underlay's address family (this node's locator is {locator})"
    )]
    Family {
        /// The rule's `tun_dst`.
        dst: IpAddr,
        /// This node's locator.
        locator: IpAddr,
    },
    /// A tunnel key wider than a VNI.
    #[error("set_tunnel:{0}: a VNI has 24 bits (1 to 16777215)")]
    Key(u64),
    /// A tunnel key that is no L2 network on this node.
    #[error("set_tunnel:{0}: no L2 network with VNI {0} on this node; add it first (nvo network add {0})")]
    NoNetwork(u64),
}

/// Whether `a` is `output:tunnel`.
pub(crate) fn is_output(a: &FlowAction) -> bool {
    *a == FlowAction::Output(PortId::TUNNEL.0)
}

/// The checks that need only the actions.
pub(crate) fn check(actions: &[FlowAction]) -> Result<(), TunnelError> {
    let mut dst = false;
    for a in actions {
        match a {
            FlowAction::SetTunnelKey(k) if *k > u64::from(Vni::MAX) => {
                return Err(TunnelError::Key(*k))
            }
            FlowAction::SetTunnelDst(ip) if ip.is_unspecified() => {
                return Err(TunnelError::Dst(*ip))
            }
            FlowAction::SetTunnelDst(_) => dst = true,
            a if is_output(a) && !dst => return Err(TunnelError::NoDst),
            _ => {}
        }
    }
    Ok(())
}

/// The checks that need this host: every `tun_dst` of the family of `locator` (the
/// underlay's), every `set_tunnel` key an L2 network here (`l2_network`).
pub fn check_here(
    actions: &[FlowAction],
    locator: IpAddr,
    l2_network: &dyn Fn(Vni) -> bool,
) -> Result<(), TunnelError> {
    for a in actions {
        match a {
            FlowAction::SetTunnelDst(ip) if ip.is_ipv4() != locator.is_ipv4() => {
                return Err(TunnelError::Family { dst: *ip, locator })
            }
            FlowAction::SetTunnelKey(k) => {
                let vni = u32::try_from(*k).map(Vni).ok().filter(|v| v.is_valid());
                if !vni.is_some_and(l2_network) {
                    return Err(TunnelError::NoNetwork(*k));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// What the rule's actions so far set for the tunnel.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tunnel {
    pub(crate) key: Option<u64>,
    pub(crate) dst: Option<IpAddr>,
}

impl Tunnel {
    /// Records `a` if it is a tunnel field; whether it was.
    pub(crate) fn set(&mut self, a: &FlowAction) -> bool {
        match a {
            FlowAction::SetTunnelKey(k) => self.key = Some(*k),
            FlowAction::SetTunnelDst(ip) => self.dst = Some(*ip),
            _ => return false,
        }
        true
    }

    /// `output:tunnel` for `frame` (as rewritten so far): the encapsulation into the network
    /// of the rule's key, else of `port_vni` (the network of the frame's port), counted on
    /// that network; or why it is dropped.
    pub(crate) fn encap(
        &self,
        networks: &mut HashMap<Vni, Network>,
        port_vni: Option<Vni>,
        frame: &[u8],
    ) -> Result<Action, DropReason> {
        // check() saw a tun_dst before every output:tunnel; a PACKET_OUT is checked alike.
        let remote = self.dst.ok_or(DropReason::NoDestination)?;
        let vni = match self.key {
            Some(k) => u32::try_from(k)
                .map(Vni)
                .map_err(|_| DropReason::UnknownVni)?,
            None => port_vni.ok_or(DropReason::UnknownVni)?,
        };
        let net = networks
            .get_mut(&vni)
            .filter(|n| n.spec.l3_gateway.is_none())
            .ok_or(DropReason::UnknownVni)?;
        let eth = Eth::parse(frame).ok_or(DropReason::MalformedFrame)?;
        net.counters.encap_unicast += 1;
        Ok(Action::Encap {
            remote,
            vni,
            entropy: frame::entropy(frame, &eth),
            profile: net.spec.profile,
        })
    }
}
