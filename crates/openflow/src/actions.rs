//! Instructions and actions (§7.2.4, §7.2.5) read into a list of [`nvo_flow::Action`] and
//! written back.
//!
//! ```text
//!  instruction:  type (16) | len (16) | …      APPLY_ACTIONS (4): pad (32), actions
//!                                             METER (6): meter id (32)
//!  action:       type (16) | len (16) | …      OUTPUT (0): port (32), max_len (16), pad (48)
//!                                             PUSH_VLAN (17): ethertype (16), pad (16)
//!                                             POP_VLAN (18), DEC_NW_TTL (24): pad (32)
//!                                             SET_NW_TTL (23): ttl (8), pad (24)
//!                                             SET_FIELD (25): one OXM TLV, pad to 8
//! ```
//!
//! nvo has one table and applies actions at once: WRITE_ACTIONS, CLEAR_ACTIONS, GOTO_TABLE and
//! WRITE_METADATA are refused (UNSUP_INST), as are group, queue, MPLS and PBB actions and the
//! reserved ports nvo has no meaning for (FLOOD, ALL, CONTROLLER, LOCAL, TABLE: BAD_OUT_PORT).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use nvo_flow::Action;

use crate::oxm::{ofb, oxm_header, CLASS_BASIC, CLASS_NXM1, NXM_TUN_IPV4_DST, NXM_TUN_IPV6_DST};
use crate::wire::{pad8, port, OfError, Reader};

/// Most actions in one rule.
pub const MAX_ACTIONS: usize = 64;

mod kind {
    pub const OUTPUT: u16 = 0;
    pub const PUSH_VLAN: u16 = 17;
    pub const POP_VLAN: u16 = 18;
    pub const SET_NW_TTL: u16 = 23;
    pub const DEC_NW_TTL: u16 = 24;
    pub const SET_FIELD: u16 = 25;
    pub const APPLY_ACTIONS: u16 = 4;
    pub const METER: u16 = 6;
}

/// Reads the instructions that fill the rest of `r`: the actions to apply, with a METER
/// instruction first as [`Action::Meter`].
pub fn parse_instructions(r: &mut Reader<'_>) -> Result<Vec<Action>, OfError> {
    let mut meter = None;
    let mut actions = Vec::new();
    while r.left() > 0 {
        let t = r.u16().ok_or(OfError::INSTRUCTION_BAD_LEN)?;
        let len = usize::from(r.u16().ok_or(OfError::INSTRUCTION_BAD_LEN)?);
        if len < 8 || len % 8 != 0 {
            return Err(OfError::INSTRUCTION_BAD_LEN);
        }
        let mut body = Reader::new(r.bytes(len - 4).ok_or(OfError::INSTRUCTION_BAD_LEN)?);
        match t {
            kind::APPLY_ACTIONS => {
                body.skip(4).ok_or(OfError::INSTRUCTION_BAD_LEN)?;
                actions.extend(parse_actions(&mut body)?);
            }
            kind::METER => {
                meter = Some(body.u32().ok_or(OfError::INSTRUCTION_BAD_LEN)?);
            }
            1..=5 => return Err(OfError::INSTRUCTION_UNSUPPORTED),
            _ => return Err(OfError::INSTRUCTION_UNKNOWN),
        }
    }
    if let Some(m) = meter {
        actions.insert(0, Action::Meter(m));
    }
    Ok(actions)
}

/// Reads the actions that fill the rest of `r` (an APPLY_ACTIONS' list, a PACKET_OUT's).
pub fn parse_actions(r: &mut Reader<'_>) -> Result<Vec<Action>, OfError> {
    let mut out = Vec::new();
    while r.left() > 0 {
        if out.len() == MAX_ACTIONS {
            return Err(OfError::ACTION_TOO_MANY);
        }
        let t = r.u16().ok_or(OfError::ACTION_BAD_LEN)?;
        let len = usize::from(r.u16().ok_or(OfError::ACTION_BAD_LEN)?);
        if len < 8 || len % 8 != 0 {
            return Err(OfError::ACTION_BAD_LEN);
        }
        let mut body = Reader::new(r.bytes(len - 4).ok_or(OfError::ACTION_BAD_LEN)?);
        let short = || OfError::ACTION_BAD_LEN;
        out.push(match t {
            kind::OUTPUT => match body.u32().ok_or_else(short)? {
                port::NORMAL => Action::Normal,
                port::IN_PORT => Action::InPort,
                p if p < port::MAX && p != 0 => Action::Output(p),
                _ => return Err(OfError::ACTION_BAD_OUT_PORT),
            },
            kind::PUSH_VLAN => match body.u16().ok_or_else(short)? {
                t @ (0x8100 | 0x88a8) => Action::PushVlan(t),
                _ => return Err(OfError::ACTION_BAD_ARGUMENT),
            },
            kind::POP_VLAN => Action::PopVlan,
            kind::SET_NW_TTL => Action::SetTtl(body.u8().ok_or_else(short)?),
            kind::DEC_NW_TTL => Action::DecTtl,
            kind::SET_FIELD => set_field(&mut body)?,
            0xffff => return Err(OfError::ACTION_BAD_EXPERIMENTER),
            _ => return Err(OfError::ACTION_BAD_TYPE),
        });
    }
    Ok(out)
}

fn set_field(body: &mut Reader<'_>) -> Result<Action, OfError> {
    let class = body.u16().ok_or(OfError::ACTION_BAD_SET_LEN)?;
    let fh = body.u8().ok_or(OfError::ACTION_BAD_SET_LEN)?;
    let len = usize::from(body.u8().ok_or(OfError::ACTION_BAD_SET_LEN)?);
    if fh & 1 == 1 {
        return Err(OfError::ACTION_BAD_SET_ARGUMENT);
    }
    let v = body.bytes(len).ok_or(OfError::ACTION_BAD_SET_LEN)?;
    let n = v.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b));
    let mac =
        || -> Result<[u8; 6], OfError> { v.try_into().map_err(|_| OfError::ACTION_BAD_SET_LEN) };
    let want = |l: usize| {
        if len == l {
            Ok(())
        } else {
            Err(OfError::ACTION_BAD_SET_LEN)
        }
    };
    Ok(match (class, fh >> 1) {
        (CLASS_BASIC, ofb::ETH_DST) => Action::SetEthDst(mac()?),
        (CLASS_BASIC, ofb::ETH_SRC) => Action::SetEthSrc(mac()?),
        (CLASS_BASIC, ofb::VLAN_VID) => {
            want(2)?;
            Action::SetVlanVid((n & 0x0fff) as u16)
        }
        (CLASS_BASIC, ofb::VLAN_PCP) => {
            want(1)?;
            if n > 7 {
                return Err(OfError::ACTION_BAD_SET_ARGUMENT);
            }
            Action::SetVlanPcp(n as u8)
        }
        (CLASS_BASIC, ofb::IP_DSCP) => {
            want(1)?;
            if n > 63 {
                return Err(OfError::ACTION_BAD_SET_ARGUMENT);
            }
            Action::SetDscp(n as u8)
        }
        (CLASS_BASIC, ofb::TUNNEL_ID) => {
            want(8)?;
            Action::SetTunnelKey(n)
        }
        (CLASS_NXM1, NXM_TUN_IPV4_DST) => {
            want(4)?;
            Action::SetTunnelDst(IpAddr::V4(Ipv4Addr::from(n as u32)))
        }
        (CLASS_NXM1, NXM_TUN_IPV6_DST) => {
            let ip: [u8; 16] = v.try_into().map_err(|_| OfError::ACTION_BAD_SET_LEN)?;
            Action::SetTunnelDst(IpAddr::V6(Ipv6Addr::from(ip)))
        }
        _ => return Err(OfError::ACTION_BAD_SET_TYPE),
    })
}

/// Writes `actions` as instructions: METER for [`Action::Meter`], the rest in one
/// APPLY_ACTIONS (none for a rule that drops).
pub fn emit_instructions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        if let Action::Meter(m) = a {
            out.extend_from_slice(&kind::METER.to_be_bytes());
            out.extend_from_slice(&8u16.to_be_bytes());
            out.extend_from_slice(&m.to_be_bytes());
        }
    }
    if !actions.iter().any(|a| !matches!(a, Action::Meter(_))) {
        return;
    }
    let start = out.len();
    out.extend_from_slice(&kind::APPLY_ACTIONS.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    emit_actions(actions, out);
    let len = (out.len() - start) as u16;
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Writes `actions` (but meters) as an action list.
pub fn emit_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        let start = out.len();
        let head = |out: &mut Vec<u8>, t: u16| {
            out.extend_from_slice(&t.to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        };
        match a {
            Action::Meter(_) => continue,
            Action::Normal | Action::InPort | Action::Output(_) => {
                head(out, kind::OUTPUT);
                let p = match a {
                    Action::Normal => port::NORMAL,
                    Action::InPort => port::IN_PORT,
                    Action::Output(p) => *p,
                    _ => 0,
                };
                out.extend_from_slice(&p.to_be_bytes());
                out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
            }
            Action::PushVlan(t) => {
                head(out, kind::PUSH_VLAN);
                out.extend_from_slice(&t.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
            }
            Action::PopVlan | Action::DecTtl => {
                head(
                    out,
                    if *a == Action::PopVlan {
                        kind::POP_VLAN
                    } else {
                        kind::DEC_NW_TTL
                    },
                );
                out.extend_from_slice(&[0, 0, 0, 0]);
            }
            Action::SetTtl(t) => {
                head(out, kind::SET_NW_TTL);
                out.extend_from_slice(&[*t, 0, 0, 0]);
            }
            Action::SetEthSrc(m) => field(out, CLASS_BASIC, ofb::ETH_SRC, m),
            Action::SetEthDst(m) => field(out, CLASS_BASIC, ofb::ETH_DST, m),
            Action::SetVlanVid(v) => {
                field(out, CLASS_BASIC, ofb::VLAN_VID, &(v | 0x1000).to_be_bytes())
            }
            Action::SetVlanPcp(p) => field(out, CLASS_BASIC, ofb::VLAN_PCP, &[*p]),
            Action::SetDscp(d) => field(out, CLASS_BASIC, ofb::IP_DSCP, &[*d]),
            Action::SetTunnelKey(k) => field(out, CLASS_BASIC, ofb::TUNNEL_ID, &k.to_be_bytes()),
            Action::SetTunnelDst(IpAddr::V4(ip)) => {
                field(out, CLASS_NXM1, NXM_TUN_IPV4_DST, &ip.octets())
            }
            Action::SetTunnelDst(IpAddr::V6(ip)) => {
                field(out, CLASS_NXM1, NXM_TUN_IPV6_DST, &ip.octets())
            }
        }
        let len = out.len() - start;
        let pad = pad8(len);
        out.resize(out.len() + pad, 0);
        let len = (len + pad) as u16;
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
    }
}

fn field(out: &mut Vec<u8>, class: u16, f: u8, value: &[u8]) {
    out.extend_from_slice(&kind::SET_FIELD.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    oxm_header(out, class, f, false, value.len() as u8);
    out.extend_from_slice(value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ovs_ofctls_instructions_read_back() {
        // `meter:1,normal` as ovs-ofctl -O OpenFlow13 sends it: METER 1, then APPLY_ACTIONS
        // with OUTPUT:NORMAL.
        let bytes = [
            0x00, 0x06, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x00, 0x04, 0x00, 0x18, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0xff, 0xff, 0xff, 0xfa, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00,
        ];
        let actions = parse_instructions(&mut Reader::new(&bytes)).unwrap();
        assert_eq!(actions, vec![Action::Meter(1), Action::Normal]);
        let mut out = Vec::new();
        emit_instructions(&actions, &mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn ovs_ofctls_tunnel_set_fields_read_back() {
        // The APPLY_ACTIONS of `set_field:0x64->tun_id,set_field:10.100.0.2->tun_dst,
        // output:65279` and of `set_field:0xc8->tun_id,set_field:2001:db8::2->tun_ipv6_dst,
        // output:65279`, as ovs-ofctl 3.1.0 -O OpenFlow13 sent them (captured with tcpdump on
        // loopback): OXM TUNNEL_ID (0x8000, 38), NXM_1 tun_dst (0x0001, 32) and tun_ipv6_dst
        // (0x0001, 110), OUTPUT 0xfeff.
        let v4: &[u8] = &[
            0x00, 0x04, 0x00, 0x38, 0x00, 0x00, 0x00, 0x00, // APPLY_ACTIONS, 56 bytes
            0x00, 0x19, 0x00, 0x10, 0x80, 0x00, 0x4c, 0x08, // SET_FIELD tun_id
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x64, //
            0x00, 0x19, 0x00, 0x10, 0x00, 0x01, 0x40, 0x04, // SET_FIELD tun_dst
            0x0a, 0x64, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0xfe, 0xff, // OUTPUT 65279
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        let v6: &[u8] = &[
            0x00, 0x04, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, // APPLY_ACTIONS, 64 bytes
            0x00, 0x19, 0x00, 0x10, 0x80, 0x00, 0x4c, 0x08, // SET_FIELD tun_id
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc8, //
            0x00, 0x19, 0x00, 0x18, 0x00, 0x01, 0xdc, 0x10, // SET_FIELD tun_ipv6_dst
            0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
            0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0xfe, 0xff, // OUTPUT 65279
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        for (bytes, key, dst) in [(v4, 0x64, "10.100.0.2"), (v6, 0xc8, "2001:db8::2")] {
            let actions = parse_instructions(&mut Reader::new(bytes)).unwrap();
            let want = vec![
                Action::SetTunnelKey(key),
                Action::SetTunnelDst(dst.parse().unwrap()),
                Action::Output(0xfeff),
            ];
            assert_eq!(actions, want);
            let mut out = Vec::new();
            emit_instructions(&actions, &mut out);
            assert_eq!(out, bytes, "written back as ovs-ofctl wrote it");
        }
        // A tun_ipv6_dst of 4 bytes, a tun_dst of 16: the lengths are the fields'.
        let mut short = v6[..24].to_vec();
        short.extend_from_slice(&[0x00, 0x19, 0x00, 0x10, 0x00, 0x01, 0xdc, 0x04]);
        short.extend_from_slice(&[10, 0, 0, 1, 0, 0, 0, 0]);
        short[3] = short.len() as u8;
        assert_eq!(
            parse_instructions(&mut Reader::new(&short)),
            Err(OfError::ACTION_BAD_SET_LEN)
        );
    }

    #[test]
    fn every_action_round_trips() {
        let all = vec![
            Action::Meter(3),
            Action::SetEthSrc([2, 0, 0, 0, 0, 1]),
            Action::SetEthDst([2, 0, 0, 0, 0, 2]),
            Action::PushVlan(0x88a8),
            Action::SetVlanVid(20),
            Action::SetVlanPcp(5),
            Action::PopVlan,
            Action::SetDscp(46),
            Action::SetTtl(9),
            Action::DecTtl,
            Action::SetTunnelKey(0xc8),
            Action::SetTunnelDst("192.0.2.1".parse().unwrap()),
            Action::SetTunnelDst("2001:db8::1".parse().unwrap()),
            Action::Output(0xfeff),
            Action::InPort,
            Action::Output(3),
            Action::Normal,
        ];
        let mut out = Vec::new();
        emit_instructions(&all, &mut out);
        assert_eq!(out.len() % 8, 0);
        assert_eq!(parse_instructions(&mut Reader::new(&out)).unwrap(), all);
        let mut none = Vec::new();
        emit_instructions(&[], &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn unsupported_instructions_and_actions_are_refused() {
        let parse = |b: &[u8]| parse_instructions(&mut Reader::new(b));
        // WRITE_ACTIONS, GOTO_TABLE.
        assert_eq!(
            parse(&[0, 3, 0, 8, 0, 0, 0, 0]),
            Err(OfError::INSTRUCTION_UNSUPPORTED)
        );
        assert_eq!(
            parse(&[0, 1, 0, 8, 1, 0, 0, 0]),
            Err(OfError::INSTRUCTION_UNSUPPORTED)
        );
        assert_eq!(
            parse(&[0, 9, 0, 8, 0, 0, 0, 0]),
            Err(OfError::INSTRUCTION_UNKNOWN)
        );
        assert_eq!(
            parse(&[0, 4, 0, 7, 0, 0, 0]),
            Err(OfError::INSTRUCTION_BAD_LEN)
        );
        let apply = |action: &[u8]| {
            let mut b = vec![0, 4, 0, (8 + action.len()) as u8, 0, 0, 0, 0];
            b.extend_from_slice(action);
            parse_instructions(&mut Reader::new(&b))
        };
        // OUTPUT to FLOOD and CONTROLLER, a GROUP action, a bad length.
        let out = |p: u32| {
            let mut a = vec![0, 0, 0, 16];
            a.extend_from_slice(&p.to_be_bytes());
            a.extend_from_slice(&[0; 8]);
            a
        };
        assert_eq!(apply(&out(port::FLOOD)), Err(OfError::ACTION_BAD_OUT_PORT));
        assert_eq!(
            apply(&out(port::CONTROLLER)),
            Err(OfError::ACTION_BAD_OUT_PORT)
        );
        assert_eq!(
            apply(&[0, 22, 0, 8, 0, 0, 0, 1]),
            Err(OfError::ACTION_BAD_TYPE)
        );
        // An OUTPUT of 12 bytes, padded so that the instruction's own length is right.
        assert_eq!(
            apply(&[0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
            Err(OfError::ACTION_BAD_LEN)
        );
        // SET_FIELD of IPV4_DST (not settable in nvo).
        assert_eq!(
            apply(&[0, 25, 0, 16, 0x80, 0, 24, 4, 10, 0, 0, 1, 0, 0, 0, 0]),
            Err(OfError::ACTION_BAD_SET_TYPE)
        );
        // 65 actions.
        let many: Vec<u8> = (0..65).flat_map(|_| [0u8, 18, 0, 8, 0, 0, 0, 0]).collect();
        assert_eq!(
            parse_actions(&mut Reader::new(&many)),
            Err(OfError::ACTION_TOO_MANY)
        );
    }
}
