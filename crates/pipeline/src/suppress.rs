//! ARP/ND snooping and suppression on an L2 network's local ports (docs/design/evpn.md).
//!
//! ```text
//!  frame from a local port
//!   ARP request or reply, sender IP ≠ 0.0.0.0, sender MAC = Ethernet source ┐
//!   NS with source ≠ :: and a source link-layer address option             ├→ neighbour table:
//!   NA: target → target link-layer address option, or the Ethernet source ┘  (ip, mac, port)
//!                                                                             as Local
//!   ARP request asking for a peer (not gratuitous, not a probe), NS not DAD:
//!     suppression on and the target known, not behind the ingress port
//!       → the reply, from the target's MAC, back out of the ingress port; not flooded
//!         (arp_suppressed / nd_suppressed)
//!     else forwarded as any frame; if flooded, arp_flooded / nd_flooded
//! ```
//!
//! Snooping is always on: it feeds `Pipeline::local_hosts` (what the EVPN speaker advertises)
//! whether or not the network suppresses. A probe (RFC 5227 §2.1.1) and a DAD solicitation
//! (RFC 4862 §5.4.2) are never answered: the host is checking that nobody else holds the
//! address, and a stale entry answering for its owner would make it give the address up.
//! The replies are the ones Linux's bridge sends with `neigh_suppress` (br_arp_nd_proxy.c): an
//! ARP reply to the requester's sender MAC; a solicited, override NA to the solicitation's
//! source, at its source link-layer address (or Ethernet source), with a target link-layer
//! address option.

use std::net::{IpAddr, Ipv6Addr};
use std::time::Instant;

use nvo_wire::std_wire::ArpOperation;

use crate::actions::{Action, Actions};
use crate::arp::Arp;
use crate::frame::Eth;
use crate::nd::{self, Nd};
use crate::neigh::{Neighbor, Snooped};
use crate::network::Network;
use crate::types::is_unicast_ip;
use crate::{FdbDest, Mac, PortId};

/// A request for a peer's address that suppression may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Question {
    /// An ARP request.
    Arp(Arp),
    /// A Neighbor Solicitation from `src`, whose answer goes to `reply_to`.
    Solicit {
        src: Ipv6Addr,
        target: Ipv6Addr,
        reply_to: Mac,
    },
}

/// Where and when a frame to snoop came in, and the table's bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snoop {
    pub(crate) port: PortId,
    pub(crate) now: Instant,
    pub(crate) max: usize,
}

impl Snoop {
    /// Records what `frame` says about its sender's (or an NA's target's) address, bumping
    /// `generation` when a local entry is new or changed; returns the question the frame
    /// asks, if it is one suppression may answer.
    pub(crate) fn frame(
        &self,
        net: &mut Network,
        frame: &[u8],
        eth: &Eth,
        generation: &mut u64,
    ) -> Option<Question> {
        if let Some(arp) = Arp::parse(frame, eth) {
            let op = arp.op;
            if matches!(op, ArpOperation::Request | ArpOperation::Reply)
                && arp.sender_mac == eth.src
            {
                self.record(net, IpAddr::V4(arp.sender_ip), arp.sender_mac, generation);
            }
            return (arp.asks_peer() && arp.sender_mac.is_unicast()).then_some(Question::Arp(arp));
        }
        match Nd::parse(frame, eth)? {
            Nd::Solicit { src, target, slla } => {
                if let Some(mac) = slla {
                    self.record(net, IpAddr::V6(src), mac, generation);
                }
                let reply_to = slla.unwrap_or(eth.src);
                let asks = !src.is_unspecified() && reply_to.is_unicast() && target != src;
                asks.then_some(Question::Solicit {
                    src,
                    target,
                    reply_to,
                })
            }
            Nd::Advert { target, tlla } => {
                self.record(net, IpAddr::V6(target), tlla.unwrap_or(eth.src), generation);
                None
            }
        }
    }

    fn record(&self, net: &mut Network, ip: IpAddr, mac: Mac, generation: &mut u64) {
        if !is_unicast_ip(ip) || !mac.is_unicast() {
            return;
        }
        match net.neigh.snoop(ip, mac, self.port, self.now, self.max) {
            Snooped::Changed => *generation += 1,
            Snooped::Refreshed | Snooped::Limit => {}
        }
    }
}

/// Answers `question`, asked on `port`, from the neighbour table when the network suppresses
/// and knows the target elsewhere than behind `port`: the reply is built in `scratch` and sent
/// back out of `port`. Returns whether it did.
pub(crate) fn answer(
    net: &mut Network,
    port: PortId,
    question: &Question,
    eth: &Eth,
    scratch: &mut [u8],
    actions: &mut Actions,
) -> bool {
    if !net.suppress {
        return false;
    }
    let (target, counter) = match question {
        Question::Arp(arp) => (IpAddr::V4(arp.target_ip), &mut net.counters.arp_suppressed),
        Question::Solicit { target, .. } => (IpAddr::V6(*target), &mut net.counters.nd_suppressed),
    };
    let Some(neighbor) = net.neigh.lookup(target) else {
        return false;
    };
    if behind(&neighbor, port, net.fdb.lookup(neighbor.mac)) {
        return false;
    }
    let len = match *question {
        Question::Arp(arp) => arp
            .reply(neighbor.mac)
            .emit(arp.sender_mac, eth.vlan_tci, scratch),
        Question::Solicit {
            src,
            target,
            reply_to,
        } => nd::advert(
            scratch,
            (reply_to, eth.vlan_tci),
            target,
            neighbor.mac,
            src,
            false,
        ),
    };
    let Some(len) = len else {
        return false;
    };
    *counter += 1;
    actions.push(Action::Reply { port, len });
    true
}

/// Whether the neighbour is behind `port` — snooped there, or its MAC's FDB entry points there:
/// it answers for itself.
fn behind(neighbor: &Neighbor, port: PortId, fdb: Option<FdbDest>) -> bool {
    neighbor.port() == Some(port) || fdb == Some(FdbDest::Port(port))
}

/// Counts a question another datapath answered (`Pipeline::from_port_answered`): an ARP
/// request, `arp_suppressed`. Returns false for anything else (it was not answered).
pub(crate) fn count_answered(net: &mut Network, question: &Question) -> bool {
    match question {
        Question::Arp(_) => {
            net.counters.arp_suppressed += 1;
            true
        }
        Question::Solicit { .. } => false,
    }
}

/// Counts a question that is flooded (suppression off, or the target unknown).
pub(crate) fn count_flooded(net: &mut Network, question: &Question) {
    match question {
        Question::Arp(_) => net.counters.arp_flooded += 1,
        Question::Solicit { .. } => net.counters.nd_flooded += 1,
    }
}
