//! The flow table on the datapath (nvo_pipeline's flows.rs): frames from ports meet it before
//! normal forwarding, FLOW_MODs change it, and — on the kernel path — a port some rule covers
//! is handed to nvod.
//!
//! ```text
//!  port frame ──► table empty? ── yes ──► from_port ──► perform       (no cost but one test)
//!                     │ no
//!                     ▼
//!            from_port_flows ──► perform outputs (on the frame, or its rewritten copy)
//!                     └─ normal ──► from_port (the same frame) ──► perform
//! ```
//!
//! The hand-over (the project's rule: a feature one datapath lacks is handed to the other,
//! explicitly): the tables are applied by the userspace pipeline only, so a veth the kernel
//! path runs is taken back when a rule covers it (a rule with its `in_port`, or with none):
//! its tc program comes off (the mirror's next sync sees it as a userspace port, like a TAP,
//! and punts frames for it to nvod) and nvod opens a reading socket on it. When no rule
//! covers it any more, the send-only socket comes back and the mirror attaches the program
//! again (the one decision for every reason a veth is nvod's: handoff.rs). Why this and not a per-port "to userspace" flag in an eBPF map: the port's frames
//! then reach nvod exactly as a userspace port's do (batches, GSO, fanout), with no new path
//! through the programs, and nothing of the kernel path changes when no rule exists.

use std::time::Instant;

use nvo_io::FrameMeta;
use nvo_openflow::{apply_flow_mod, Command as OfCommand, FlowMod, OfError};
use nvo_pipeline::flows::check_actions;
use nvo_pipeline::{Actions, FlowError, FlowVerdict, Pipeline, PortId, MAX_FLOWS};

use crate::command::{DatapathError, FlowDump, Reply};

use super::forward::Core;

impl Core {
    /// A frame from local port `port`: through the flow table, then normal forwarding.
    pub(super) fn ingress(
        &mut self,
        port: PortId,
        frame: &[u8],
        meta: &FrameMeta,
        segment_len: usize,
        now: Instant,
    ) {
        let was = frame.len();
        self.through_table(
            frame,
            meta,
            |p, buf, actions| p.from_port_flows(port, frame, buf, now, actions),
            // A GSO frame's segments grow or shrink by what the rewrite pushed or popped.
            |p, f, actions| {
                let segment_len = (segment_len + f.len()).saturating_sub(was);
                p.from_port_gso(port, f, segment_len, now, actions)
            },
        );
    }

    /// The step every ingress shares (the diagrams above and in tunnel_flows.rs): with an
    /// empty table only `normal` runs on `frame`; otherwise `table` runs the flow table (a
    /// rewrite goes into `flow_frame`, which it is given), its outputs are performed on the
    /// frame or its rewritten copy, and, when the verdict says so, `normal` forwards that same
    /// frame.
    pub(super) fn through_table(
        &mut self,
        frame: &[u8],
        meta: &FrameMeta,
        table: impl FnOnce(&mut Pipeline, &mut [u8], &mut Actions) -> FlowVerdict,
        normal: impl FnOnce(&mut Pipeline, &[u8], &mut Actions),
    ) {
        if !self.pipeline.has_flows() {
            normal(&mut self.pipeline, frame, &mut self.actions);
            return self.perform(frame, meta);
        }
        let mut buf = std::mem::take(&mut self.flow_frame);
        if buf.len() < frame.len() + 16 {
            buf.resize(frame.len() + 16, 0);
        }
        let v = table(&mut self.pipeline, &mut buf, &mut self.actions);
        let (f, meta) = match v.rewritten {
            Some(len) => (&buf[..len], shifted(meta, len, frame.len())),
            None => (frame, *meta),
        };
        if !self.actions.is_empty() {
            self.perform(f, &meta);
        }
        if v.normal {
            normal(&mut self.pipeline, f, &mut self.actions);
            self.perform(f, &meta);
        }
        self.flow_frame = buf;
    }
}

/// A rewritten frame's offload state: a partial checksum's start moves with a tag pushed or
/// popped in front of it.
pub(super) fn shifted(meta: &FrameMeta, len: usize, was: usize) -> FrameMeta {
    let mut m = *meta;
    m.csum = m.csum.map(|(start, offset)| {
        let start = (usize::from(start) + len).saturating_sub(was);
        (u16::try_from(start).unwrap_or(u16::MAX), offset)
    });
    m
}

/// Runs a FLOW_MOD on the table (the loop's `handoff::rehome` then hands over, or back, the
/// ports whose coverage changed).
pub(super) fn flow_mod(core: &mut Core, m: FlowMod, now: Instant) -> Result<Reply, DatapathError> {
    if !matches!(m.command, OfCommand::Delete { .. }) {
        check_actions(&m.actions)?;
        core.pipeline.check_meters(&m.actions)?;
    }
    apply_flow_mod(core.pipeline.flow_table_mut(), m, now).map_err(|e| match e {
        OfError::FLOW_MOD_TABLE_FULL => FlowError::Full(MAX_FLOWS),
        other => FlowError::Unsupported(format!("(OpenFlow error {}/{})", other.kind, other.code)),
    })?;
    Ok(Reply::Done)
}

/// The table's rules and counters.
pub(super) fn dump(core: &Core, now: Instant) -> Reply {
    let table = core.pipeline.flow_table();
    let (lookups, matched) = core.pipeline.flow_lookups();
    let (rules, idle) = table
        .rules()
        .into_iter()
        .map(|(_, r, s)| {
            let stat = nvo_openflow::FlowStat {
                rule: r.clone(),
                packets: s.packets,
                bytes: s.bytes,
                duration: now.saturating_duration_since(s.installed),
            };
            (stat, now.saturating_duration_since(s.last_used))
        })
        .unzip();
    Reply::Flows(FlowDump {
        rules,
        idle,
        lookups,
        matched,
        capacity: table.capacity(),
    })
}

/// The rule the table picks for `key`, without counting (`nvo trace`).
pub(super) fn lookup(core: &Core, key: &nvo_flow::Key, now: Instant) -> Reply {
    let table = core.pipeline.flow_table();
    let found = table.lookup(key).and_then(|id| table.get(id));
    Reply::FlowMatch(found.map(|(rule, s)| nvo_openflow::FlowStat {
        rule: rule.clone(),
        packets: s.packets,
        bytes: s.bytes,
        duration: now.saturating_duration_since(s.installed),
    }))
}

/// PACKET_OUT: the frame through `actions`, sent at once.
pub(super) fn packet_out(
    core: &mut Core,
    in_port: Option<PortId>,
    actions: &[nvo_flow::Action],
    frame: &[u8],
    now: Instant,
) -> Result<Reply, DatapathError> {
    check_actions(actions)?;
    core.pipeline.check_meters(actions)?;
    let mut buf = vec![0; frame.len() + 16 + 4 * actions.len()];
    let v = core
        .pipeline
        .packet_out(in_port, actions, frame, &mut buf, now, &mut core.actions);
    let f = match v.rewritten {
        Some(len) => &buf[..len],
        None => frame,
    };
    core.perform(f, &FrameMeta::COMPLETE);
    if let (true, Some(port)) = (v.normal, in_port) {
        core.pipeline.from_port(port, f, now, &mut core.actions);
        core.perform(f, &FrameMeta::COMPLETE);
    }
    core.flush();
    Ok(Reply::Done)
}
