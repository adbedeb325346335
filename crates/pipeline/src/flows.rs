//! The flow table (issue 17, items 3 and 5): one match–action table (OpenFlow's table 0) that
//! every frame a local port sends in meets before normal forwarding.
//!
//! ```text
//!  frame from port P ──► table empty? ── yes ──► normal forwarding (from_port), as before
//!                              │ no
//!                              ▼
//!        Key::extract(in_port = P, frame) ──► classifier (tuple-space search, nvo_flow)
//!            miss ──────────────────────────► normal forwarding (as the NORMAL flow Open
//!                                             vSwitch installs on a new bridge)
//!            rule, actions in order:
//!              drop (no actions)      → Drop(flow_drop), counted on the port
//!              mod_dl_src/dst, push/pop/mod_vlan, mod_nw_tos, mod_nw_ttl, dec_ttl
//!                                     → the frame is rewritten in the caller's buffer
//!                                       (IPv4 header checksum recomputed)
//!              output:N / in_port     → Deliver { port: N }
//!              set_tunnel, set_field:…->tun_id|tun_dst, then output:tunnel
//!                                     → Encap { remote: tun_dst, vni, entropy, profile of
//!                                       the VNI's network } (flow_tunnel.rs)
//!              meter:N                → through meter N's bucket (meters.rs): over the
//!                                       rate → Drop(qos_policed), counted on the meter;
//!                                       under it → the rule's next actions
//!              normal                 → then normal forwarding of the (rewritten) frame
//! ```
//!
//! A rule's `in_port` is a pipeline [`PortId`] (nvod's port id, which is also the OpenFlow
//! port number); a rule without `in_port` applies to every port. The table is bounded
//! ([`MAX_FLOWS`]); each rule counts packets and bytes, its last use, and may carry idle and
//! hard timeouts: [`Pipeline::expire_flows`] applies them with the `now` the caller passes
//! (nvod, which runs several copies of the pipeline, expires from their merged counters
//! instead, so that the copies keep or drop a rule together).
//!
//! Every action the flow syntax reads is carried out ([`FlowError::Unsupported`] is left for
//! what OpenFlow carries and nvo does not). Modifications apply to the frame before any output
//! of the same rule (nvo does not keep a copy per output as Open vSwitch does):
//! `output:2,mod_dl_dst:…` sends the rewritten frame. `output:tunnel` is checked when the rule
//! is installed (flow_tunnel.rs: a `tun_dst` before it, of the underlay's family, a VNI that
//! is an L2 network here); a network gone since is an `unknown_vni` drop.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use nvo_flow::key::ethertype;
use nvo_flow::syntax::Flow;
use nvo_flow::{Action as FlowAction, Classifier, ClassifierError, Field, Inserted, Key};

use crate::actions::{Action, Actions};
use crate::flow_tunnel::{self, Tunnel};
use crate::meters::Meters;
use crate::network::Network;
use crate::{DropReason, Pipeline, PortId, Vni};

pub use crate::flow_tunnel::{check_here, TunnelError};

/// The most rules the table holds.
pub const MAX_FLOWS: usize = 10_000;

/// The table: rules whose actions are lists of [`nvo_flow::Action`].
pub type FlowTable = Classifier<Vec<FlowAction>>;

/// Why a rule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlowError {
    /// The table holds [`MAX_FLOWS`] rules.
    #[error("the flow table is full ({0} rules); delete rules first")]
    Full(usize),
    /// An action nvo's datapaths do not carry out.
    #[error("action {0} is not carried out by nvo's datapaths (supported: drop, normal, output, in_port, mod_dl_src, mod_dl_dst, push_vlan, pop_vlan, mod_vlan_vid, mod_vlan_pcp, mod_nw_tos, mod_nw_ttl, dec_ttl, meter, set_tunnel, set_field:…->tun_id|tun_dst with output:tunnel)")]
    Unsupported(String),
    /// Tunnel actions that cannot be carried out as written.
    #[error(transparent)]
    Tunnel(#[from] TunnelError),
    /// A rule names a meter that does not exist.
    #[error("no meter {0}; add it first (nvo meter add {0} --rate RATE --burst SIZE)")]
    NoMeter(u32),
}

/// The table and its lookup counters.
#[derive(Debug)]
pub(crate) struct Flows {
    pub(crate) table: FlowTable,
    /// The meters rules name (meters.rs).
    pub(crate) meters: Meters,
    lookups: u64,
    matched: u64,
}

impl Default for Flows {
    fn default() -> Flows {
        Flows {
            table: Classifier::new(MAX_FLOWS),
            meters: Meters::default(),
            lookups: 0,
            matched: 0,
        }
    }
}

/// What the table decided for a frame; `actions` hold its outputs (and its drop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowVerdict {
    /// The frame was rewritten into the caller's buffer, this long: outputs and normal
    /// forwarding use `&out[..len]`, not the frame received.
    pub rewritten: Option<usize>,
    /// Normal forwarding follows (`Pipeline::from_port` on the frame, rewritten or not).
    pub normal: bool,
}

impl FlowVerdict {
    pub(crate) const NORMAL: FlowVerdict = FlowVerdict {
        rewritten: None,
        normal: true,
    };
}

/// Refuses the actions nvo cannot carry out as written (the checks that need no more than the
/// actions; [`check_here`] adds those that need this host).
pub fn check_actions(actions: &[FlowAction]) -> Result<(), FlowError> {
    Ok(flow_tunnel::check(actions)?)
}

/// Which ports the flow table's rules may match frames from ([`Pipeline::flow_cover`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowCover {
    /// A rule has no `in_port`: it covers every port.
    pub all: bool,
    /// The `in_port`s rules name.
    pub ports: HashSet<u32>,
}

impl FlowCover {
    /// Whether a rule may match frames from `port`.
    pub fn covers(&self, port: PortId) -> bool {
        self.all || self.ports.contains(&port.0)
    }
}

impl Pipeline {
    /// Whether the table holds any rule (when not, frames skip it).
    pub fn has_flows(&self) -> bool {
        !self.flows.table.is_empty()
    }

    /// Whether some rule may match frames from `port`: one with no `in_port`, or with this
    /// one. Such a port must be read by the userspace path (the kernel path hands it over).
    pub fn flows_cover(&self, port: PortId) -> bool {
        self.flow_cover().covers(port)
    }

    /// [`Self::flows_cover`] for every port at once: one scan of the rules.
    pub fn flow_cover(&self) -> FlowCover {
        cover_of(self.flows.table.iter())
    }

    /// The table, to read rules and counters.
    pub fn flow_table(&self) -> &FlowTable {
        &self.flows.table
    }

    /// The table, to change (OpenFlow's FLOW_MOD semantics: `nvo_openflow::apply_flow_mod`).
    /// The caller checks new actions with [`check_actions`] first.
    pub fn flow_table_mut(&mut self) -> &mut FlowTable {
        &mut self.flows.table
    }

    /// Installs a rule (replacing one with the same match and priority).
    pub fn flow_insert(&mut self, rule: Flow, now: Instant) -> Result<Inserted, FlowError> {
        check_actions(&rule.actions)?;
        self.check_meters(&rule.actions)?;
        self.flows.table.insert(rule, now).map_err(|e| match e {
            ClassifierError::Full(n) => FlowError::Full(n),
        })
    }

    /// How many rules of the table name meter `n`.
    pub fn meter_users(&self, n: u32) -> usize {
        self.flows
            .table
            .iter()
            .filter(|r| r.actions.contains(&FlowAction::Meter(n)))
            .count()
    }

    /// Refuses actions naming a meter that does not exist.
    pub fn check_meters(&self, actions: &[FlowAction]) -> Result<(), FlowError> {
        for a in actions {
            if let FlowAction::Meter(n) = a {
                if !self.flows.meters.contains(*n) {
                    return Err(FlowError::NoMeter(*n));
                }
            }
        }
        Ok(())
    }

    /// The ports metered rules may match frames from (their frames must all meet the one
    /// bucket: the datapath reads them on one worker).
    pub fn metered_cover(&self) -> FlowCover {
        cover_of(
            self.flows
                .table
                .iter()
                .filter(|r| r.actions.iter().any(|a| matches!(a, FlowAction::Meter(_)))),
        )
    }

    /// Lookups made and lookups that found a rule.
    pub fn flow_lookups(&self) -> (u64, u64) {
        (self.flows.lookups, self.flows.matched)
    }

    /// Removes the rules whose timeout passed; how many.
    pub fn expire_flows(&mut self, now: Instant) -> usize {
        if self.flows.table.is_empty() {
            return 0;
        }
        self.flows.table.expire(now).len()
    }

    /// Runs `frame`, received on `port`, through the table. Clears `actions`, then holds the
    /// rule's outputs or its drop; `out` (at least 16 bytes longer than `frame`) receives the
    /// frame when a rule rewrites it. When the verdict says `normal`, the caller goes on with
    /// [`Pipeline::from_port`] (which counts the frame on the port); otherwise the frame was
    /// counted here.
    pub fn from_port_flows(
        &mut self,
        port: PortId,
        frame: &[u8],
        out: &mut [u8],
        now: Instant,
        actions: &mut Actions,
    ) -> FlowVerdict {
        actions.clear();
        if self.flows.table.is_empty() || !self.ports.contains_key(&port) {
            return FlowVerdict::NORMAL;
        }
        let key = Key::extract(port.0, 0, frame);
        let vni = self.ports.get(&port).map(|p| p.vni);
        let Some((mut v, mut dropped)) =
            self.run_table(&key, (port, vni), frame, out, now, actions)
        else {
            return FlowVerdict::NORMAL;
        };
        if v.normal && dropped.is_none() {
            return v;
        }
        // The frame ends here: count it on its port, as from_port would have.
        if let Some(p) = self.ports.get_mut(&port) {
            p.counters.rx_frames += 1;
            p.counters.rx_bytes += frame.len() as u64;
            if dropped.is_some() {
                p.counters.drops += 1;
            } else if actions.is_empty() {
                // Only unsupported or no outputs: nothing to send (a rule of modifications
                // alone); counted as the rule's drop.
                p.counters.drops += 1;
                dropped = Some(DropReason::FlowDrop);
            }
        }
        if let Some(reason) = dropped {
            self.drops.add(reason);
            actions.clear();
            actions.push(Action::Drop(reason));
        }
        v.normal = false;
        v
    }

    /// Looks `key` up (counted) and carries out the rule found on `frame`, from `port` whose
    /// network (`output:tunnel`'s default VNI) is `vni`: the verdict and the drop, or `None`
    /// on a miss. Port and tunnel ingress (tunnel_flows.rs) share it.
    pub(crate) fn run_table(
        &mut self,
        key: &Key,
        (port, vni): (PortId, Option<Vni>),
        frame: &[u8],
        out: &mut [u8],
        now: Instant,
        actions: &mut Actions,
    ) -> Option<(FlowVerdict, Option<DropReason>)> {
        let flows = &mut self.flows;
        flows.lookups += 1;
        let (_, rule) = flows.table.classify(key, frame.len() as u64, now)?;
        flows.matched += 1;
        let mut meters = Metering {
            meters: &mut flows.meters,
            now,
        };
        let mut nets = Networks {
            all: &mut self.networks,
            port: vni,
        };
        Some(execute(
            rule,
            port,
            frame,
            out,
            actions,
            (&mut meters, &mut nets),
        ))
    }

    /// PACKET_OUT: `frame` through `rule_actions` as if it came in on `in_port` (`None`: from
    /// the controller), without the table. `actions` then hold its outputs; with `normal` the
    /// caller goes on with [`Pipeline::from_port`] on `in_port`. Nothing is counted but a
    /// drop.
    pub fn packet_out(
        &mut self,
        in_port: Option<PortId>,
        rule_actions: &[FlowAction],
        frame: &[u8],
        out: &mut [u8],
        now: Instant,
        actions: &mut Actions,
    ) -> FlowVerdict {
        actions.clear();
        let port = in_port.unwrap_or(PortId(u32::MAX));
        let mut meters = Metering {
            meters: &mut self.flows.meters,
            now,
        };
        let mut nets = Networks {
            all: &mut self.networks,
            port: self.ports.get(&port).map(|p| p.vni),
        };
        let (mut v, dropped) = execute(
            rule_actions,
            port,
            frame,
            out,
            actions,
            (&mut meters, &mut nets),
        );
        v.normal &= in_port.is_some() && dropped.is_none();
        if let Some(reason) = dropped {
            self.drops.add(reason);
            actions.clear();
            actions.push(Action::Drop(reason));
        }
        v
    }
}

/// The ports `rules` may match frames from: all for a rule without `in_port`.
fn cover_of<'a>(rules: impl Iterator<Item = &'a nvo_flow::Rule<Vec<FlowAction>>>) -> FlowCover {
    let mut cover = FlowCover::default();
    for rule in rules {
        let (value, mask) = rule.pattern.field(Field::InPort);
        if mask == 0 {
            cover.all = true;
        } else if let Ok(port) = u32::try_from(value) {
            cover.ports.insert(port);
        }
    }
    cover
}

/// The meters a rule's `meter:N` actions police through, and the time.
struct Metering<'a> {
    meters: &'a mut Meters,
    now: Instant,
}

/// The networks `output:tunnel` encapsulates into, and the network of the frame's port.
struct Networks<'a> {
    all: &'a mut HashMap<Vni, Network>,
    port: Option<Vni>,
}

/// Carries out a rule's actions on `frame` from `port`: outputs into `actions`, edits into
/// `out`, `meter:N` through `meters`, `output:tunnel` into one of `nets`; the verdict, and why
/// the frame is dropped if it is.
fn execute(
    rule: &[FlowAction],
    port: PortId,
    frame: &[u8],
    out: &mut [u8],
    actions: &mut Actions,
    (meters, nets): (&mut Metering<'_>, &mut Networks<'_>),
) -> (FlowVerdict, Option<DropReason>) {
    let mut v = FlowVerdict {
        rewritten: None,
        normal: false,
    };
    let mut dropped = rule.is_empty().then_some(DropReason::FlowDrop);
    let mut tunnel = Tunnel::default();
    for a in rule {
        if dropped.is_some() {
            break;
        }
        if tunnel.set(a) {
            continue;
        }
        match a {
            FlowAction::Normal => v.normal = true,
            a if flow_tunnel::is_output(a) => {
                let now = v.rewritten.and_then(|len| out.get(..len)).unwrap_or(frame);
                match tunnel.encap(nets.all, nets.port, now) {
                    Ok(encap) => actions.push(encap),
                    Err(reason) => dropped = Some(reason),
                }
            }
            FlowAction::Output(n) => actions.push(Action::Deliver { port: PortId(*n) }),
            FlowAction::InPort => actions.push(Action::Deliver { port }),
            FlowAction::Meter(n) => {
                // The frame as received is what the bucket is charged (edits before the meter
                // change its length by a tag at most). A meter deleted under a rule cannot
                // happen (refused while used); none found lets the frame pass.
                if !meters.meters.admit(*n, frame.len(), meters.now) {
                    dropped = Some(DropReason::QosPoliced);
                }
            }
            edit => {
                if v.rewritten.is_none() {
                    // A caller's buffer shorter than the frame: nowhere to rewrite it.
                    let Some(copy) = out.get_mut(..frame.len()) else {
                        dropped = Some(DropReason::TooBig);
                        break;
                    };
                    copy.copy_from_slice(frame);
                    v.rewritten = Some(frame.len());
                }
                let len = v.rewritten.unwrap_or(frame.len());
                match rewrite(edit, out, len) {
                    Ok(len) => v.rewritten = Some(len),
                    Err(reason) => dropped = Some(reason),
                }
            }
        }
    }
    (v, dropped)
}

/// Where the outermost VLAN tag is, if the frame (of `len` bytes) has one.
fn tag_at(b: &[u8], len: usize) -> Option<usize> {
    let t = u16::from_be_bytes([*b.get(12)?, *b.get(13)?]);
    (len >= 18 && (t == ethertype::VLAN || t == ethertype::QINQ)).then_some(14)
}

/// The EtherType after the tags and the L3 offset.
fn l3(b: &[u8], len: usize) -> Option<(u16, usize)> {
    let mut at = 12;
    loop {
        let t = u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]);
        if (t == ethertype::VLAN || t == ethertype::QINQ) && at + 6 <= len {
            at += 4;
            continue;
        }
        return Some((t, at + 2)).filter(|(_, l3)| *l3 <= len);
    }
}

/// Applies one modification to `b[..len]`; the new length, or why the frame is dropped.
fn rewrite(a: &FlowAction, b: &mut [u8], len: usize) -> Result<usize, DropReason> {
    if len < 14 {
        return Err(DropReason::MalformedFrame);
    }
    match a {
        FlowAction::SetEthDst(m) => b[..6].copy_from_slice(m),
        FlowAction::SetEthSrc(m) => b[6..12].copy_from_slice(m),
        FlowAction::PushVlan(tpid) => {
            // A pushed tag copies the outer tag's TCI, or is VID 0 (OpenFlow 1.3 §5.12.1).
            let tci = tag_at(b, len).map_or([0, 0], |t| [b[t], b[t + 1]]);
            return push_tag(b, len, *tpid, tci);
        }
        FlowAction::PopVlan if tag_at(b, len).is_some() => {
            b.copy_within(16..len, 12);
            return Ok(len - 4);
        }
        FlowAction::SetVlanVid(vid) => match tag_at(b, len) {
            Some(t) => {
                let tci = (u16::from_be_bytes([b[t], b[t + 1]]) & 0xf000) | (vid & 0x0fff);
                b[t..t + 2].copy_from_slice(&tci.to_be_bytes());
            }
            None => return push_tag(b, len, ethertype::VLAN, (vid & 0x0fff).to_be_bytes()),
        },
        FlowAction::SetVlanPcp(pcp) => {
            let pcp = u16::from(pcp & 7) << 13;
            match tag_at(b, len) {
                Some(t) => {
                    let tci = (u16::from_be_bytes([b[t], b[t + 1]]) & 0x1fff) | pcp;
                    b[t..t + 2].copy_from_slice(&tci.to_be_bytes());
                }
                None => return push_tag(b, len, ethertype::VLAN, pcp.to_be_bytes()),
            }
        }
        FlowAction::SetDscp(d) => ip_edit(b, len, |v4, ip| {
            if v4 {
                ip[1] = (d << 2) | (ip[1] & 3);
            } else {
                // Traffic class: the low 4 bits of byte 0 and the high 4 of byte 1.
                let tc = (d << 2) | ((ip[1] >> 4) & 3);
                ip[0] = (ip[0] & 0xf0) | (tc >> 4);
                ip[1] = (ip[1] & 0x0f) | (tc << 4);
            }
            Ok(())
        })?,
        FlowAction::SetTtl(t) => ip_edit(b, len, |v4, ip| {
            ip[if v4 { 8 } else { 7 }] = *t;
            Ok(())
        })?,
        FlowAction::DecTtl => ip_edit(b, len, |v4, ip| {
            let at = if v4 { 8 } else { 7 };
            if ip[at] <= 1 {
                return Err(DropReason::HopLimit);
            }
            ip[at] -= 1;
            Ok(())
        })?,
        // Outputs and tunnel fields are not edits.
        _ => {}
    }
    Ok(len)
}

fn push_tag(b: &mut [u8], len: usize, tpid: u16, tci: [u8; 2]) -> Result<usize, DropReason> {
    if len + 4 > b.len() {
        return Err(DropReason::TooBig);
    }
    b.copy_within(12..len, 16);
    b[12..14].copy_from_slice(&tpid.to_be_bytes());
    b[14..16].copy_from_slice(&tci);
    Ok(len + 4)
}

/// Runs `f` on the IP header (`true` for IPv4), recomputing an IPv4 header's checksum after.
/// A frame that is not IP is left as it is (the flow syntax's prerequisites keep such rules
/// on IP frames anyway).
fn ip_edit(
    b: &mut [u8],
    len: usize,
    f: impl FnOnce(bool, &mut [u8]) -> Result<(), DropReason>,
) -> Result<(), DropReason> {
    let Some((et, at)) = l3(b, len) else {
        return Ok(());
    };
    match et {
        ethertype::IPV4 => {
            let ihl = usize::from(b.get(at).copied().unwrap_or(0) & 0x0f) * 4;
            if ihl < 20 || at + ihl > len {
                return Err(DropReason::MalformedFrame);
            }
            let ip = &mut b[at..at + ihl];
            f(true, ip)?;
            ip[10..12].copy_from_slice(&[0, 0]);
            let sum = ip
                .chunks(2)
                .fold(0u32, |s, w| s + u32::from(u16::from_be_bytes([w[0], w[1]])));
            let sum = (sum & 0xffff) + (sum >> 16);
            let sum = (sum & 0xffff) + (sum >> 16);
            ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            Ok(())
        }
        ethertype::IPV6 if at + 40 <= len => f(false, &mut b[at..at + 40]),
        ethertype::IPV6 => Err(DropReason::MalformedFrame),
        _ => Ok(()),
    }
}
