//! One symmetric hash of a frame's inner IP flow, computed alike by the kernel (classic BPF, on
//! a port's packet fanout group and on each tunnel's UDP reuseport group) and here in Rust, so
//! that a flow and its reverse are read by the same datapath worker on both sides of a node:
//! a ping's request read from c1's port and its reply read from the underlay meet the worker
//! that already handled the flow, and no wake-up crosses to another CPU.
//!
//! ```text
//!  h     = src ^ dst                         IPv4 addresses; IPv6: the 8 address words
//!  h    ^= src_port ^ dst_port               TCP, UDP, SCTP; IPv4 not a fragment (MF or offset
//!                                            set: the later fragments carry no ports, RFC 791
//!                                            §3.1) and IPv6 with the transport right after the
//!                                            fixed header (RFC 8200 §3, no extension header)
//!  index = ((h * 0x9e3779b1) >> 16) % n      (wrapping u32; multiplied to mix every bit into
//!                                            the ones `% n` keeps)
//! ```
//!
//! Anything else (ARP, an unknown tunnel payload, a truncated header) gets index 0: only an IP
//! flow's two directions must agree, and a classic BPF load past the end of the packet ends the
//! program with 0 too.
//!
//! Where the inner IP header is:
//! - packet fanout (`PACKET_FANOUT_CBPF`): the program runs on the skb as the interface received
//!   it, `data` at the network header for a received frame (af_packet.c `packet_rcv_fanout` runs
//!   the program before `packet_rcv` pushes the MAC header back), so the program reads relative
//!   to `SKF_NET_OFF` and takes the EtherType from `SKF_AD_PROTOCOL` (after the kernel took an
//!   802.1Q tag out), which hold whatever `data` is;
//! - UDP reuseport (`SO_ATTACH_REUSEPORT_CBPF`): `data` at the UDP payload (sock_reuseport.c
//!   `run_bpf_filter` pulls the UDP header first), the tunnel header:
//!   VXLAN and VXLAN-GBP (RFC 7348 §5: 8 bytes, then Ethernet with at most one 802.1Q/802.1ad
//!   tag), VXLAN-GPE (draft-ietf-nvo3-vxlan-gpe-12 §3.2: Next Protocol byte 3, 1 IPv4, 2 IPv6,
//!   3 Ethernet; NSH, 4, gets 0), Geneve (RFC 8926 §3.4: 8 + 4 × Opt Len bytes, Protocol Type
//!   0x6558 Ethernet, or 0x0800 / 0x86dd).
//!
//! The tests in `crates/io/tests/steer.rs` run these programs in the kernel on crafted packets and check
//! them against [`frame_index`] and [`tunnel_index`].

/// Classic BPF opcodes (linux/filter.h, linux/bpf_common.h).
mod op {
    pub const LD_W_ABS: u16 = 0x20;
    pub const LD_W_IND: u16 = 0x40;
    pub const LD_H_ABS: u16 = 0x28;
    pub const LD_H_IND: u16 = 0x48;
    pub const LD_B_ABS: u16 = 0x30;
    pub const LD_B_IND: u16 = 0x50;
    pub const LD_IMM: u16 = 0x00;
    pub const LD_MEM: u16 = 0x60;
    pub const LDX_IMM: u16 = 0x01;
    pub const LDX_MEM: u16 = 0x61;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ADD_K: u16 = 0x04;
    pub const ADD_X: u16 = 0x0c;
    pub const MUL_K: u16 = 0x24;
    pub const AND_K: u16 = 0x54;
    pub const LSH_K: u16 = 0x64;
    pub const RSH_K: u16 = 0x74;
    pub const MOD_K: u16 = 0x94;
    pub const XOR_X: u16 = 0xac;
    pub const JA: u16 = 0x05;
    pub const JEQ_K: u16 = 0x15;
    pub const JSET_K: u16 = 0x45;
    pub const TAX: u16 = 0x07;
    pub const TXA: u16 = 0x87;
    pub const RET_K: u16 = 0x06;
    pub const RET_A: u16 = 0x16;
}

/// `SKF_NET_OFF`: loads at this base are relative to the network header.
const NET_OFF: u32 = (-0x0010_0000_i32) as u32;
/// `SKF_AD_OFF + SKF_AD_PROTOCOL`: a load here gives `skb->protocol` (host order).
const AD_PROTOCOL: u32 = (-0x1000_i32) as u32;

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;
const ETH_VLAN: u16 = 0x8100;
const ETH_QINQ: u16 = 0x88a8;
const ETH_BRIDGED: u16 = 0x6558;
const PORTED: [u8; 3] = [6, 17, 132];
const GOLDEN: u32 = 0x9e37_79b1;
/// Scratch memory: the hash so far, the ports' scratch, the saved ethertype, the L3 offset.
const M_HASH: u32 = 0;
const M_TMP: u32 = 1;
const M_TYPE: u32 = 14;
const M_L3: u32 = 15;

/// The tunnel header in front of the inner frame, for a UDP reuseport group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelShape {
    /// VXLAN or VXLAN-GBP: 8 bytes, then Ethernet.
    Vxlan,
    /// VXLAN-GPE: 8 bytes, Next Protocol in byte 3.
    Gpe,
    /// Geneve: 8 bytes and options, Protocol Type in bytes 2..4.
    Geneve,
}

/// The worker index of an inner IP packet (`l3` from the IP header on, `ethertype` its type)
/// among `n` (0 when `n` is 0).
pub fn ip_index(ethertype: u16, l3: &[u8], n: u32) -> u32 {
    let hash = match ethertype {
        ETH_IPV4 => ipv4_hash(l3),
        ETH_IPV6 => ipv6_hash(l3),
        _ => None,
    };
    match hash {
        Some(h) if n > 0 => (h.wrapping_mul(GOLDEN) >> 16) % n,
        _ => 0,
    }
}

/// The worker index of an Ethernet frame as a port's fanout program computes it (the kernel
/// takes a received frame's VLAN tag out before the program runs: the EtherType after one tag
/// counts, as here).
pub fn frame_index(frame: &[u8], n: u32) -> u32 {
    let Some((ethertype, l3)) = ethernet(frame) else {
        return 0;
    };
    ip_index(ethertype, l3, n)
}

/// The worker index of a tunnel payload (from the tunnel header on) as the reuseport program
/// for `shape` computes it.
pub fn tunnel_index(shape: TunnelShape, payload: &[u8], n: u32) -> u32 {
    let inner = match shape {
        TunnelShape::Vxlan => payload.get(8..).and_then(ethernet),
        TunnelShape::Gpe => match payload.get(3) {
            Some(1) => payload.get(8..).map(|l3| (ETH_IPV4, l3)),
            Some(2) => payload.get(8..).map(|l3| (ETH_IPV6, l3)),
            Some(3) => payload.get(8..).and_then(ethernet),
            _ => None,
        },
        TunnelShape::Geneve => {
            let start = payload
                .first()
                .map(|b| 8 + 4 * usize::from(b & 0x3f))
                .unwrap_or(usize::MAX);
            match be16(payload, 2) {
                Some(ETH_BRIDGED) => payload.get(start..).and_then(ethernet),
                Some(t @ (ETH_IPV4 | ETH_IPV6)) => payload.get(start..).map(|l3| (t, l3)),
                _ => None,
            }
        }
    };
    match inner {
        Some((ethertype, l3)) => ip_index(ethertype, l3, n),
        None => 0,
    }
}

/// EtherType and L3 of an Ethernet frame, past one VLAN tag.
fn ethernet(frame: &[u8]) -> Option<(u16, &[u8])> {
    match be16(frame, 12)? {
        ETH_VLAN | ETH_QINQ => Some((be16(frame, 16)?, frame.get(18..)?)),
        t => Some((t, frame.get(14..)?)),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn ipv4_hash(ip: &[u8]) -> Option<u32> {
    let mut h = be32(ip, 12)? ^ be32(ip, 16)?;
    let protocol = *ip.get(9)?;
    if PORTED.contains(&protocol) && be16(ip, 6)? & 0x3fff == 0 {
        let l4 = 4 * usize::from(ip.first()? & 0x0f);
        h ^= u32::from(be16(ip, l4)? ^ be16(ip, l4 + 2)?);
    }
    Some(h)
}

fn ipv6_hash(ip: &[u8]) -> Option<u32> {
    let mut h = 0;
    for word in 0..8 {
        h ^= be32(ip, 8 + 4 * word)?;
    }
    if PORTED.contains(ip.get(6)?) {
        h ^= u32::from(be16(ip, 40)? ^ be16(ip, 42)?);
    }
    Some(h)
}

/// A tiny classic-BPF assembler: instructions with jumps to named labels, resolved forward.
struct Asm {
    code: Vec<(u16, Target, Target, u32)>,
    labels: Vec<(&'static str, usize)>,
}

#[derive(Clone, Copy)]
enum Target {
    Next,
    To(&'static str),
}

impl Asm {
    fn new() -> Asm {
        Asm {
            code: Vec::new(),
            labels: Vec::new(),
        }
    }

    fn op(&mut self, code: u16, k: u32) -> &mut Asm {
        self.code.push((code, Target::Next, Target::Next, k));
        self
    }

    fn jeq(&mut self, k: u32, yes: &'static str) -> &mut Asm {
        self.code
            .push((op::JEQ_K, Target::To(yes), Target::Next, k));
        self
    }

    fn jset(&mut self, k: u32, yes: &'static str) -> &mut Asm {
        self.code
            .push((op::JSET_K, Target::To(yes), Target::Next, k));
        self
    }

    fn ja(&mut self, to: &'static str) -> &mut Asm {
        self.code.push((op::JA, Target::To(to), Target::Next, 0));
        self
    }

    fn label(&mut self, name: &'static str) -> &mut Asm {
        self.labels.push((name, self.code.len()));
        self
    }

    /// The program; a jump backwards, too far or to a missing label is a bug of this file.
    fn finish(&self) -> Vec<libc::sock_filter> {
        let at = |from: usize, t: Target| -> u32 {
            match t {
                Target::Next => 0,
                Target::To(name) => {
                    let to = self
                        .labels
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map_or(usize::MAX, |(_, at)| *at);
                    debug_assert!(to > from && to <= self.code.len(), "jump to {name}");
                    (to.saturating_sub(from + 1)) as u32
                }
            }
        };
        self.code
            .iter()
            .enumerate()
            .map(|(i, &(code, jt, jf, k))| {
                if code == op::JA {
                    libc::sock_filter {
                        code,
                        jt: 0,
                        jf: 0,
                        k: at(i, jt),
                    }
                } else {
                    libc::sock_filter {
                        code,
                        jt: at(i, jt) as u8,
                        jf: at(i, jf) as u8,
                        k,
                    }
                }
            })
            .collect()
    }
}

/// The fanout program of a port read by `n` sockets.
pub(crate) fn fanout_program(n: u32) -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    a.op(op::LD_W_ABS, AD_PROTOCOL).op(op::LDX_IMM, 0);
    common_tail(&mut a, NET_OFF, n);
    a.finish()
}

/// The reuseport program of a UDP tunnel group read by `n` sockets.
pub(crate) fn reuseport_program(shape: TunnelShape, n: u32) -> Vec<libc::sock_filter> {
    let mut a = Asm::new();
    match shape {
        TunnelShape::Vxlan => {
            a.op(op::LDX_IMM, 8);
            ethernet_at_x(&mut a);
        }
        TunnelShape::Gpe => {
            a.op(op::LD_B_ABS, 3)
                .jeq(1, "gpe4")
                .jeq(2, "gpe6")
                .jeq(3, "gpe_eth")
                .op(op::RET_K, 0);
            a.label("gpe4")
                .op(op::LD_IMM, u32::from(ETH_IPV4))
                .op(op::LDX_IMM, 8)
                .ja("ip");
            a.label("gpe6")
                .op(op::LD_IMM, u32::from(ETH_IPV6))
                .op(op::LDX_IMM, 8)
                .ja("ip");
            a.label("gpe_eth").op(op::LDX_IMM, 8);
            ethernet_at_x(&mut a);
        }
        TunnelShape::Geneve => {
            // X = 8 + 4 * Opt Len.
            a.op(op::LD_B_ABS, 0)
                .op(op::AND_K, 0x3f)
                .op(op::LSH_K, 2)
                .op(op::ADD_K, 8)
                .op(op::TAX, 0)
                .op(op::LD_H_ABS, 2)
                .jeq(u32::from(ETH_BRIDGED), "gen_eth")
                .jeq(u32::from(ETH_IPV4), "ip")
                .jeq(u32::from(ETH_IPV6), "ip")
                .op(op::RET_K, 0);
            a.label("gen_eth");
            ethernet_at_x(&mut a);
        }
    }
    common_tail(&mut a, 0, n);
    a.finish()
}

/// From an Ethernet header at X: A = its EtherType (past one tag), X = its L3, then "ip".
fn ethernet_at_x(a: &mut Asm) {
    a.op(op::LD_H_IND, 12)
        .jeq(u32::from(ETH_VLAN), "tagged")
        .jeq(u32::from(ETH_QINQ), "tagged")
        .op(op::ST, M_TYPE)
        .op(op::TXA, 0)
        .op(op::ADD_K, 14)
        .ja("l3");
    a.label("tagged")
        .op(op::LD_H_IND, 16)
        .op(op::ST, M_TYPE)
        .op(op::TXA, 0)
        .op(op::ADD_K, 18);
    a.label("l3").op(op::TAX, 0).op(op::LD_MEM, M_TYPE).ja("ip");
}

/// With A = EtherType and X = the IP header's offset from `base`: the hash, `% n`, returned.
/// With the IP protocol in A: to `ported` for a transport with ports ([`PORTED`], as the Rust
/// function reads them), else to the fold.
fn to_ported(a: &mut Asm, ported: &'static str) {
    for protocol in PORTED {
        a.jeq(u32::from(protocol), ported);
    }
    a.ja("fold");
}

fn common_tail(a: &mut Asm, base: u32, n: u32) {
    let at = |off: u32| base.wrapping_add(off);
    a.label("ip")
        .op(op::STX, M_L3)
        .jeq(u32::from(ETH_IPV4), "v4")
        .jeq(u32::from(ETH_IPV6), "v6")
        .op(op::RET_K, 0);
    // IPv4: addresses, then ports unless a fragment.
    a.label("v4")
        .op(op::LD_W_IND, at(12))
        .op(op::ST, M_HASH)
        .op(op::LD_W_IND, at(16))
        .op(op::LDX_MEM, M_HASH)
        .op(op::XOR_X, 0)
        .op(op::ST, M_HASH)
        .op(op::LDX_MEM, M_L3)
        .op(op::LD_B_IND, at(9));
    to_ported(a, "v4_ported");
    a.label("v4_ported")
        .op(op::LD_H_IND, at(6))
        .jset(0x3fff, "fold")
        .op(op::LD_B_IND, at(0))
        .op(op::AND_K, 0x0f)
        .op(op::LSH_K, 2)
        .op(op::ADD_X, 0)
        .op(op::TAX, 0)
        .ja("ports");
    // IPv6: the eight address words, then ports if the transport follows the fixed header.
    a.label("v6").op(op::LD_IMM, 0).op(op::ST, M_HASH);
    for word in 0..8 {
        a.op(op::LDX_MEM, M_L3)
            .op(op::LD_W_IND, at(8 + 4 * word))
            .op(op::LDX_MEM, M_HASH)
            .op(op::XOR_X, 0)
            .op(op::ST, M_HASH);
    }
    a.op(op::LDX_MEM, M_L3).op(op::LD_B_IND, at(6));
    to_ported(a, "v6_ported");
    a.label("v6_ported")
        .op(op::TXA, 0)
        .op(op::ADD_K, 40)
        .op(op::TAX, 0);
    // X = the transport header: hash ^= src_port ^ dst_port.
    a.label("ports")
        .op(op::LD_H_IND, at(0))
        .op(op::ST, M_TMP)
        .op(op::LD_H_IND, at(2))
        .op(op::LDX_MEM, M_TMP)
        .op(op::XOR_X, 0)
        .op(op::LDX_MEM, M_HASH)
        .op(op::XOR_X, 0)
        .op(op::ST, M_HASH);
    a.label("fold")
        .op(op::LD_MEM, M_HASH)
        .op(op::MUL_K, GOLDEN)
        .op(op::RSH_K, 16)
        .op(op::MOD_K, n.max(1))
        .op(op::RET_A, 0);
}
