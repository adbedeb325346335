//! Tunnel ingress through the flow table (issue 17): a frame decapsulated from the underlay
//! for an L2 network meets the table before its normal delivery, coming in on the tunnel as a
//! port of the table ([`PortId::TUNNEL`], as a tunnel port of an Open vSwitch bridge) with
//! `tun_id` the VNI it arrived with.
//!
//! ```text
//!  decapsulated frame (vni V from remote R)
//!    table empty? ── yes ──────────────────────────► from_decapsulated, as before
//!    network V an L2 network of this profile, R accepted (accept_remotes)?
//!        no ──► from_decapsulated (which drops it: unknown_vni, profile_mismatch, unknown_remote)
//!    Key::extract(in_port = tunnel, tun_id = V, frame) ──► classifier
//!        miss ─────────────────────────────────────► from_decapsulated (normal delivery)
//!        rule, actions in order (flows.rs run_table, as on port ingress):
//!          drop (no actions)    → Drop(flow_drop)
//!          modifications        → the frame is rewritten in the caller's buffer
//!          output:N             → Deliver { port: N } (no learning: that is normal's)
//!          in_port, output:tunnel (encapsulation, flow_tunnel.rs)
//!                               → hairpin: that copy is not made, counted `hairpin`
//!          meter:N              → over the rate: Drop(qos_policed)
//!          normal               → then from_decapsulated on the (rewritten) frame
//! ```
//!
//! A rule matches tunnel frames when its `in_port` is unset or `tunnel` and its `tun_id`
//! (masked) fits; rules naming a local port never do, and a port's frames have `tun_id` 0.
//! The checks in front of the table are those that say the packet is a tunnel frame of this
//! network at all: a frame they refuse goes to `from_decapsulated`, which counts the drop as
//! before, so that no rule can bring in what the network would not take (a forged remote, a
//! VNI of another profile). When the table takes the frame (a drop, or outputs without
//! `normal`), it is counted here as `from_decapsulated` would have: one underlay packet, one
//! frame of the network from the underlay, the remote's traffic, and the drop by reason.
//!
//! Not covered: L3 networks (`from_decapsulated_ip`) and packets the overlay relays to another
//! node; they never meet the table.

use std::collections::HashSet;
use std::time::Instant;

use nvo_flow::{Field, Key};

use crate::actions::{Action, Actions};
use crate::flows::FlowVerdict;
use crate::pipeline::{accepts, count_drop};
use crate::{Decapsulated, DropReason, Pipeline, PortId, Vni};

/// Which networks' tunnel frames the table's rules may match ([`Pipeline::tunnel_cover`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TunnelCover {
    /// A rule admitting the tunnel has no `tun_id`: it covers every network.
    pub all: bool,
    /// The (value, mask) of the `tun_id`s of the other rules admitting the tunnel.
    pub keys: HashSet<(u128, u128)>,
}

impl TunnelCover {
    /// Whether a rule may match frames decapsulated for network `vni`.
    pub fn covers(&self, vni: Vni) -> bool {
        self.all || self.keys.iter().any(|&key| fits(vni, key))
    }
}

/// Whether `a` sends the frame into the tunnel: `in_port` (a `Deliver` to the tunnel's
/// number) or `output:tunnel` (an encapsulation) — or anything else that leaves by the
/// underlay (an ILA packet, which no rule makes, but would leave the same way).
fn into_tunnel(a: &Action) -> bool {
    match a {
        Action::Deliver { port } => *port == PortId::TUNNEL,
        Action::Encap { .. }
        | Action::EncapNode { .. }
        | Action::EncapL3 { .. }
        | Action::SendIla { .. } => true,
        Action::Reply { .. } | Action::Drop(_) => false,
    }
}

/// Whether `vni` fits a rule's `tun_id` (value, mask).
fn fits(vni: Vni, (value, mask): (u128, u128)) -> bool {
    (u128::from(vni.0) ^ value) & mask == 0
}

impl Pipeline {
    /// Which networks' tunnel frames some rule may match: one scan of the rules. Those
    /// networks' tunnel packets must reach this pipeline (the kernel path hands them over).
    pub fn tunnel_cover(&self) -> TunnelCover {
        let mut cover = TunnelCover::default();
        for key in self.tunnel_keys() {
            if key.1 == 0 {
                cover.all = true;
                break;
            }
            cover.keys.insert(key);
        }
        cover
    }

    /// [`Self::tunnel_cover`] for one network, without allocating.
    pub fn tunnel_covers(&self, vni: Vni) -> bool {
        self.tunnel_keys().any(|key| fits(vni, key))
    }

    /// The `tun_id` (value, mask) of every rule whose `in_port` admits the tunnel.
    fn tunnel_keys(&self) -> impl Iterator<Item = (u128, u128)> + '_ {
        self.flows.table.iter().filter_map(|rule| {
            let (port, port_mask) = rule.pattern.field(Field::InPort);
            ((u128::from(PortId::TUNNEL.0) ^ port) & port_mask == 0)
                .then(|| rule.pattern.field(Field::TunKey))
        })
    }

    /// Runs `inner`, the frame `decap` carried (in a tunnel packet of `outer_len` bytes),
    /// through the table. Clears `actions`, then holds the rule's outputs or its drop; `out`
    /// (at least 16 bytes longer than `inner`) receives the frame when a rule rewrites it. When
    /// the verdict says `normal`, the caller goes on with [`Pipeline::from_decapsulated_tagged`]
    /// on the frame (rewritten or not), which counts it; otherwise it was counted here.
    pub fn from_underlay_flows(
        &mut self,
        decap: &Decapsulated,
        outer_len: usize,
        inner: &[u8],
        out: &mut [u8],
        now: Instant,
        actions: &mut Actions,
    ) -> FlowVerdict {
        actions.clear();
        if self.flows.table.is_empty() {
            return FlowVerdict::NORMAL;
        }
        let Some(net) = self.networks.get(&decap.vni) else {
            return FlowVerdict::NORMAL;
        };
        if net.spec.profile != decap.profile
            || net.spec.l3_gateway.is_some()
            || !accepts(net, decap.src, &self.overlay_locators)
        {
            return FlowVerdict::NORMAL;
        }
        let key = Key::extract(PortId::TUNNEL.0, u64::from(decap.vni.0), inner);
        let from = (PortId::TUNNEL, Some(decap.vni));
        let Some((mut v, dropped)) = self.run_table(&key, from, inner, out, now, actions) else {
            return FlowVerdict::NORMAL;
        };
        // Back into the tunnel (in_port, output:tunnel with or without set_tunnel/tun_dst):
        // never relayed — a loop between VTEPs otherwise.
        let hairpin = actions.retain(|a| !into_tunnel(a)) > 0;
        if v.normal && dropped.is_none() {
            if hairpin {
                count_drop(&mut self.drops, None, DropReason::Hairpin);
            }
            return v;
        }
        // The frame ends here: count it as from_decapsulated would have.
        self.underlay.count_rx(outer_len);
        self.remotes.rx(decap.src, outer_len);
        if let Some(net) = self.networks.get_mut(&decap.vni) {
            net.counters.rx_underlay_frames += 1;
        }
        let nothing = if hairpin {
            DropReason::Hairpin
        } else {
            // A rule of modifications alone sends nothing: the rule's drop.
            DropReason::FlowDrop
        };
        match dropped.or_else(|| actions.is_empty().then_some(nothing)) {
            Some(reason) => {
                count_drop(&mut self.drops, None, reason);
                actions.clear();
                actions.push(Action::Drop(reason));
            }
            None if hairpin => count_drop(&mut self.drops, None, DropReason::Hairpin),
            None => {}
        }
        v.normal = false;
        v
    }
}
