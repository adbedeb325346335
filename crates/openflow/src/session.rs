//! One controller connection, sans-IO: bytes in, answers out, the switch asked through
//! [`Switch`]. The caller owns the socket.
//!
//! ```text
//!  new()            HELLO (version bitmap: 1.3) queued
//!  input(bytes)     messages cut out of the stream by their length; each answered:
//!                   HELLO → version agreed (1.3) or HELLO_FAILED and close
//!                   ECHO_REQUEST → ECHO_REPLY        FEATURES_REQUEST → FEATURES_REPLY
//!                   GET_CONFIG_REQUEST → REPLY       SET_CONFIG → (nothing)
//!                   FLOW_MOD → the switch            PACKET_OUT → the switch
//!                   METER_MOD (add/delete, one DROP band in kbit/s: meter.rs) → the switch
//!                   MULTIPART_REQUEST DESC, FLOW, AGGREGATE, TABLE, PORT_STATS, PORT_DESC,
//!                     TABLE_FEATURES → replies (split with REPLY_MORE past 64 KiB)
//!                   BARRIER_REQUEST → BARRIER_REPLY (everything before it is done: the
//!                     session handles messages in order, synchronously)
//!                   anything else, or anything malformed → OFPT_ERROR with its first 64 bytes
//!  output()         what to send
//! ```
//!
//! Untrusted input: a message is at most 65,535 bytes (its length field), so the buffer of an
//! incomplete message is bounded; a length below 8 cannot be resynchronised and closes the
//! session after an error; every other bad message gets its error and the session goes on.
//! The caller bounds [`Session::pending`] (stop reading while the peer does not read).

use std::time::Duration;

use nvo_flow::Match;

use crate::actions::{emit_instructions, parse_actions, parse_instructions};
use crate::meter::parse_meter_mod;
use crate::oxm::{emit_match, parse_match};
use crate::switch::{Command, FlowFilter, FlowMod, Switch};
use crate::wire::{self, error, finish, msg, multipart, port, start, Header, OfError, Reader};

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// The peer speaks no version nvo does.
    Incompatible,
    /// A header with a length below 8: the stream cannot be followed.
    BadLength,
}

/// One connection's state.
#[derive(Debug, Default)]
pub struct Session {
    input: Vec<u8>,
    output: Vec<u8>,
    closed: Option<Closed>,
    /// Messages answered with an error.
    pub errors: u64,
    /// Messages handled.
    pub messages: u64,
}

const NO_BUFFER: u32 = 0xffff_ffff;

impl Session {
    /// A session with its HELLO queued.
    pub fn new() -> Session {
        let mut s = Session::default();
        let mut m = start(msg::HELLO, 1);
        // One element: VERSIONBITMAP (type 1, length 8) with bit 4 (1.3).
        m.extend_from_slice(&[0, 1, 0, 8, 0, 0, 0, 1 << wire::VERSION]);
        s.output.extend_from_slice(&finish(m));
        s
    }

    /// Why the session ended, once it has.
    pub fn closed(&self) -> Option<Closed> {
        self.closed
    }

    /// Bytes waiting to be sent.
    pub fn pending(&self) -> usize {
        self.output.len()
    }

    /// Takes what is to be sent.
    pub fn output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.output)
    }

    /// Handles `bytes` from the peer.
    pub fn input(&mut self, bytes: &[u8], sw: &mut dyn Switch) {
        if self.closed.is_some() {
            return;
        }
        self.input.extend_from_slice(bytes);
        let mut at = 0;
        while let Some(h) = Header::parse(&self.input[at..]) {
            let len = usize::from(h.length);
            if len < wire::HEADER {
                let bad = self.input[at..at + wire::HEADER].to_vec();
                self.fail(OfError::BAD_LEN, h.xid, &bad);
                self.closed = Some(Closed::BadLength);
                break;
            }
            if self.input.len() - at < len {
                break;
            }
            let message = self.input[at..at + len].to_vec();
            at += len;
            self.messages += 1;
            self.handle(h, &message, sw);
            if self.closed.is_some() {
                break;
            }
        }
        self.input.drain(..at.min(self.input.len()));
    }

    fn fail(&mut self, e: OfError, xid: u32, message: &[u8]) {
        self.errors += 1;
        self.output.extend_from_slice(&error(e, xid, message));
    }

    fn send(&mut self, m: Vec<u8>) {
        self.output.extend_from_slice(&finish(m));
    }

    fn handle(&mut self, h: Header, m: &[u8], sw: &mut dyn Switch) {
        if h.kind == msg::HELLO {
            return self.hello(h, m);
        }
        if h.version != wire::VERSION {
            return self.fail(OfError::BAD_VERSION, h.xid, m);
        }
        let body = &m[wire::HEADER..];
        let result = match h.kind {
            msg::ERROR | msg::ECHO_REPLY => Ok(()),
            msg::ECHO_REQUEST => {
                let mut r = start(msg::ECHO_REPLY, h.xid);
                r.extend_from_slice(body);
                self.send(r);
                Ok(())
            }
            msg::FEATURES_REQUEST => {
                let mut r = start(msg::FEATURES_REPLY, h.xid);
                r.extend_from_slice(&sw.datapath_id().to_be_bytes());
                r.extend_from_slice(&0u32.to_be_bytes()); // n_buffers
                r.extend_from_slice(&[1, 0, 0, 0]); // n_tables, auxiliary_id, pad
                r.extend_from_slice(&(1u32 | 2 | 4).to_be_bytes()); // FLOW, TABLE, PORT stats
                r.extend_from_slice(&0u32.to_be_bytes());
                self.send(r);
                Ok(())
            }
            msg::GET_CONFIG_REQUEST => {
                let mut r = start(msg::GET_CONFIG_REPLY, h.xid);
                r.extend_from_slice(&[0, 0, 0, 128]);
                self.send(r);
                Ok(())
            }
            msg::SET_CONFIG => {
                if body.len() == 4 {
                    Ok(())
                } else {
                    Err(OfError::BAD_LEN)
                }
            }
            msg::BARRIER_REQUEST => {
                self.send(start(msg::BARRIER_REPLY, h.xid));
                Ok(())
            }
            msg::FLOW_MOD => parse_flow_mod(body).and_then(|f| sw.flow_mod(f)),
            msg::METER_MOD => parse_meter_mod(body).and_then(|m| sw.meter_mod(m)),
            msg::PACKET_OUT => packet_out(body, sw),
            msg::MULTIPART_REQUEST => self.multipart(h, body, sw),
            msg::EXPERIMENTER => Err(OfError::BAD_EXPERIMENTER),
            _ => Err(OfError::BAD_TYPE),
        };
        if let Err(e) = result {
            self.fail(e, h.xid, m);
        }
    }

    /// Version negotiation (§6.3.1): the highest common version, from the peer's bitmap if it
    /// sent one, else its header's version; 1.3 or nothing.
    fn hello(&mut self, h: Header, m: &[u8]) {
        let mut ok = h.version >= wire::VERSION;
        let mut r = Reader::new(&m[wire::HEADER..]);
        while let (Some(t), Some(len)) = (r.u16(), r.u16()) {
            let len = usize::from(len);
            let Some(body) = len.checked_sub(4).and_then(|n| r.bytes(n)) else {
                break;
            };
            r.skip(wire::pad8(len)).unwrap_or_default();
            if t == 1 {
                // Bitmap words, least significant first: version v is bit v of word v / 32.
                ok = body.get(..4).is_some_and(|w| {
                    let w0 = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
                    w0 & (1 << wire::VERSION) != 0
                });
            }
        }
        if !ok {
            self.fail(OfError::HELLO_INCOMPATIBLE, h.xid, m);
            self.closed = Some(Closed::Incompatible);
        }
    }

    fn multipart(&mut self, h: Header, body: &[u8], sw: &mut dyn Switch) -> Result<(), OfError> {
        let mut r = Reader::new(body);
        let kind = r.u16().ok_or(OfError::BAD_LEN)?;
        let flags = r.u16().ok_or(OfError::BAD_LEN)?;
        r.skip(4).ok_or(OfError::BAD_LEN)?;
        if flags & 1 != 0 {
            // Requests in several parts (REQ_MORE) are not taken.
            return Err(OfError::BAD_MULTIPART);
        }
        let entries: Vec<Vec<u8>> = match kind {
            multipart::DESC => vec![desc()],
            multipart::FLOW | multipart::AGGREGATE => {
                let filter = flow_filter(&mut r)?;
                let stats = sw.flows(&filter);
                if kind == multipart::AGGREGATE {
                    let mut e = Vec::new();
                    e.extend_from_slice(
                        &stats.iter().map(|s| s.packets).sum::<u64>().to_be_bytes(),
                    );
                    e.extend_from_slice(&stats.iter().map(|s| s.bytes).sum::<u64>().to_be_bytes());
                    e.extend_from_slice(&(stats.len() as u32).to_be_bytes());
                    e.extend_from_slice(&[0; 4]);
                    vec![e]
                } else {
                    stats.iter().map(flow_entry).collect()
                }
            }
            multipart::TABLE => {
                let (active, lookups, matched) = sw.table_stats();
                let mut e = vec![0, 0, 0, 0];
                e.extend_from_slice(&active.to_be_bytes());
                e.extend_from_slice(&lookups.to_be_bytes());
                e.extend_from_slice(&matched.to_be_bytes());
                vec![e]
            }
            multipart::PORT_STATS => {
                let p = r.u32().ok_or(OfError::BAD_LEN)?;
                sw.port_stats(p)?.iter().map(port_stats).collect()
            }
            multipart::PORT_DESC => sw.ports().iter().map(port_desc).collect(),
            multipart::TABLE_FEATURES => {
                if r.left() > 0 {
                    // Setting table features: nvo's one table is what it is.
                    return Err(OfError::BAD_MULTIPART);
                }
                vec![crate::features::table_features(sw.table_capacity())]
            }
            _ => return Err(OfError::BAD_MULTIPART),
        };
        self.multipart_reply(h.xid, kind, &entries);
        Ok(())
    }

    /// Replies of `kind` holding `entries`, as many messages as 64 KiB allows, all but the
    /// last flagged REPLY_MORE.
    fn multipart_reply(&mut self, xid: u32, kind: u16, entries: &[Vec<u8>]) {
        let head = |more: bool| {
            let mut m = start(msg::MULTIPART_REPLY, xid);
            m.extend_from_slice(&kind.to_be_bytes());
            m.extend_from_slice(&(if more { multipart::REPLY_MORE } else { 0 }).to_be_bytes());
            m.extend_from_slice(&[0; 4]);
            m
        };
        let mut m = head(false);
        for e in entries {
            if m.len() + e.len() > usize::from(u16::MAX) {
                m[10..12].copy_from_slice(&multipart::REPLY_MORE.to_be_bytes());
                self.send(std::mem::replace(&mut m, head(false)));
            }
            m.extend_from_slice(e);
        }
        self.send(m);
    }
}

fn parse_flow_mod(body: &[u8]) -> Result<FlowMod, OfError> {
    let mut r = Reader::new(body);
    let short = || OfError::BAD_LEN;
    let cookie = r.u64().ok_or_else(short)?;
    let cookie_mask = r.u64().ok_or_else(short)?;
    let table = r.u8().ok_or_else(short)?;
    let command = r.u8().ok_or_else(short)?;
    let idle_timeout = r.u16().ok_or_else(short)?;
    let hard_timeout = r.u16().ok_or_else(short)?;
    let priority = r.u16().ok_or_else(short)?;
    let buffer = r.u32().ok_or_else(short)?;
    let out_port = r.u32().ok_or_else(short)?;
    let _out_group = r.u32().ok_or_else(short)?;
    let flags = r.u16().ok_or_else(short)?;
    r.skip(2).ok_or_else(short)?;
    let command = match command {
        0 => Command::Add,
        1 => Command::Modify { strict: false },
        2 => Command::Modify { strict: true },
        3 => Command::Delete { strict: false },
        4 => Command::Delete { strict: true },
        _ => return Err(OfError::FLOW_MOD_BAD_COMMAND),
    };
    let deleting = matches!(command, Command::Delete { .. });
    if !(table == 0 || (table == 0xff && deleting)) {
        return Err(OfError::FLOW_MOD_BAD_TABLE_ID);
    }
    if buffer != NO_BUFFER && !deleting {
        return Err(OfError::BUFFER_UNKNOWN);
    }
    // SEND_FLOW_REM (1) is taken (no FLOW_REMOVED is sent: docs/openflow.md); RESET_COUNTS
    // (4) and the counter flags (8, 16) too; CHECK_OVERLAP (2) and unknown bits are not.
    if flags & !(1 | 4 | 8 | 16) != 0 {
        return Err(OfError::FLOW_MOD_BAD_FLAGS);
    }
    let pattern = parse_match(&mut r)?;
    let actions = parse_instructions(&mut r)?;
    Ok(FlowMod {
        command,
        cookie,
        cookie_mask,
        idle_timeout,
        hard_timeout,
        priority,
        out_port: if deleting { out_port } else { port::ANY },
        reset_counts: flags & 4 != 0,
        pattern,
        actions,
    })
}

fn flow_filter(r: &mut Reader<'_>) -> Result<FlowFilter, OfError> {
    let table = r.u8().ok_or(OfError::BAD_LEN)?;
    r.skip(3).ok_or(OfError::BAD_LEN)?;
    let out_port = r.u32().ok_or(OfError::BAD_LEN)?;
    let _out_group = r.u32().ok_or(OfError::BAD_LEN)?;
    r.skip(4).ok_or(OfError::BAD_LEN)?;
    let cookie = r.u64().ok_or(OfError::BAD_LEN)?;
    let cookie_mask = r.u64().ok_or(OfError::BAD_LEN)?;
    if table != 0 && table != 0xff {
        return Err(OfError::BAD_TABLE_ID);
    }
    let pattern: Match = parse_match(r)?;
    Ok(FlowFilter {
        out_port,
        cookie,
        cookie_mask,
        pattern,
    })
}

fn packet_out(body: &[u8], sw: &mut dyn Switch) -> Result<(), OfError> {
    let mut r = Reader::new(body);
    let buffer = r.u32().ok_or(OfError::BAD_LEN)?;
    let in_port = r.u32().ok_or(OfError::BAD_LEN)?;
    let actions_len = usize::from(r.u16().ok_or(OfError::BAD_LEN)?);
    r.skip(6).ok_or(OfError::BAD_LEN)?;
    if buffer != NO_BUFFER {
        return Err(OfError::BUFFER_UNKNOWN);
    }
    let mut actions = Reader::new(r.bytes(actions_len).ok_or(OfError::BAD_LEN)?);
    let actions = parse_actions(&mut actions)?;
    let frame = r.rest();
    if frame.len() < 14 {
        return Err(OfError::BAD_PACKET);
    }
    sw.packet_out(in_port, &actions, frame)
}

fn flow_entry(s: &crate::switch::FlowStat) -> Vec<u8> {
    let mut e = vec![0, 0, 0, 0]; // length, table 0, pad
    let (sec, nsec) = split(s.duration);
    e.extend_from_slice(&sec.to_be_bytes());
    e.extend_from_slice(&nsec.to_be_bytes());
    e.extend_from_slice(&s.rule.priority.to_be_bytes());
    let t = |d: Option<Duration>| d.map_or(0, |d| u16::try_from(d.as_secs()).unwrap_or(u16::MAX));
    e.extend_from_slice(&t(s.rule.idle_timeout).to_be_bytes());
    e.extend_from_slice(&t(s.rule.hard_timeout).to_be_bytes());
    e.extend_from_slice(&[0; 6]); // flags, pad
    e.extend_from_slice(&s.rule.cookie.to_be_bytes());
    e.extend_from_slice(&s.packets.to_be_bytes());
    e.extend_from_slice(&s.bytes.to_be_bytes());
    emit_match(&s.rule.pattern, &mut e);
    emit_instructions(&s.rule.actions, &mut e);
    let len = e.len() as u16;
    e[0..2].copy_from_slice(&len.to_be_bytes());
    e
}

fn port_desc(p: &crate::switch::PortDesc) -> Vec<u8> {
    let mut e = Vec::with_capacity(64);
    e.extend_from_slice(&p.port_no.to_be_bytes());
    e.extend_from_slice(&[0; 4]);
    e.extend_from_slice(&p.mac);
    e.extend_from_slice(&[0; 2]);
    let mut name = [0u8; 16];
    for (d, s) in name.iter_mut().zip(p.name.bytes().take(15)) {
        *d = s;
    }
    e.extend_from_slice(&name);
    e.extend_from_slice(&0u32.to_be_bytes()); // config
    e.extend_from_slice(&(u32::from(!p.up)).to_be_bytes()); // state: LINK_DOWN
    e.extend_from_slice(&[0; 16]); // curr, advertised, supported, peer
    e.extend_from_slice(&[0; 8]); // curr_speed, max_speed
    e
}

fn port_stats(p: &crate::switch::PortStats) -> Vec<u8> {
    let mut e = Vec::with_capacity(112);
    e.extend_from_slice(&p.port_no.to_be_bytes());
    e.extend_from_slice(&[0; 4]);
    for v in [
        p.rx_packets,
        p.tx_packets,
        p.rx_bytes,
        p.tx_bytes,
        p.rx_dropped,
        p.tx_dropped,
        0, // rx_errors
        0, // tx_errors
        0, // rx_frame_err
        0, // rx_over_err
        0, // rx_crc_err
        0, // collisions
    ] {
        e.extend_from_slice(&v.to_be_bytes());
    }
    let (sec, nsec) = split(p.duration);
    e.extend_from_slice(&sec.to_be_bytes());
    e.extend_from_slice(&nsec.to_be_bytes());
    e
}

fn desc() -> Vec<u8> {
    let field = |s: &str, n: usize| {
        let mut f = vec![0u8; n];
        for (d, c) in f.iter_mut().zip(s.bytes().take(n - 1)) {
            *d = c;
        }
        f
    };
    let mut e = field("nvo", 256);
    e.extend(field("nvod", 256));
    e.extend(field(concat!("nvod ", env!("CARGO_PKG_VERSION")), 256));
    e.extend(field("", 32));
    e.extend(field("nvo flow table (one table)", 256));
    e
}

fn split(d: Duration) -> (u32, u32) {
    (
        u32::try_from(d.as_secs()).unwrap_or(u32::MAX),
        d.subsec_nanos(),
    )
}
