//! A packet's flow key: the fields a rule can match, extracted once per packet into a fixed
//! array of words, so that a match is "key AND mask == value" word by word.
//!
//! ```text
//!  word  bits 63 ........................................................... 0
//!   0    in_port (32)                 | eth_type (16)      | vlan (16)
//!   1    0 (16)                       | eth_src (48)
//!   2    0 (16)                       | eth_dst (48)
//!   3    ip_src, high 64 bits (IPv6)  — 0 for IPv4
//!   4    ip_src, low 64 bits          — IPv4: the address in the low 32 bits
//!   5    ip_dst, high 64 bits
//!   6    ip_dst, low 64 bits
//!   7    ip_proto (8) | dscp (8) | tp_src (16) | tp_dst (16) | tcp_flags (16)
//!   8    tunnel key (the VNI a packet came in with or goes out with; 0: none)
//! ```
//!
//! `vlan` is the outermost tag's VLAN ID with bit 12 ([`VLAN_PRESENT`]) set when the frame is
//! tagged: a match on `vlan == 0` with the full mask is "untagged" (as OpenFlow's
//! OFPVID_NONE), on [`VLAN_PRESENT`] alone "any tag". `eth_type` is the EtherType after the
//! tags. As in Open vSwitch, ARP's opcode goes into `ip_proto` and its sender/target protocol
//! addresses into `ip_src`/`ip_dst`, and ICMP's type and code into `tp_src`/`tp_dst`. Fields a
//! packet does not have (the ports of a UDP fragment after the first, the IP fields of a
//! non-IP frame) are 0; the flow syntax's prerequisites (`tp_dst` needs `tcp` or `udp`, …)
//! keep a rule from matching those zeros by accident.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Words in a key.
pub const WORDS: usize = 9;

/// The bit of `vlan` that says the frame carries a tag.
pub const VLAN_PRESENT: u16 = 0x1000;

/// The EtherTypes extraction understands.
pub mod ethertype {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// 802.1Q customer tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag.
    pub const QINQ: u16 = 0x88a8;
}

/// IP protocol numbers extraction reads ports or types from.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// A packet's fields, as words (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Key(pub [u64; WORDS]);

/// One matchable field: where it sits in the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The port (or virtual port) the packet came in on.
    InPort,
    /// EtherType after any VLAN tags.
    EthType,
    /// Outermost VLAN: ID plus [`VLAN_PRESENT`].
    Vlan,
    /// Ethernet source.
    EthSrc,
    /// Ethernet destination.
    EthDst,
    /// IP (or ARP sender) source address, 128 bits (IPv4 in the low 32).
    IpSrc,
    /// IP (or ARP target) destination address.
    IpDst,
    /// IP protocol (ARP: the opcode's low byte).
    IpProto,
    /// DSCP (the TOS/traffic class byte's upper six bits, shifted down).
    Dscp,
    /// TCP/UDP/SCTP source port, ICMP type.
    TpSrc,
    /// TCP/UDP/SCTP destination port, ICMP code.
    TpDst,
    /// TCP flags (12 bits).
    TcpFlags,
    /// Tunnel key (VNI).
    TunKey,
}

impl Field {
    /// Every field, in key order.
    pub const ALL: [Field; 13] = [
        Field::InPort,
        Field::EthType,
        Field::Vlan,
        Field::EthSrc,
        Field::EthDst,
        Field::IpSrc,
        Field::IpDst,
        Field::IpProto,
        Field::Dscp,
        Field::TpSrc,
        Field::TpDst,
        Field::TcpFlags,
        Field::TunKey,
    ];

    /// Its width in bits.
    pub fn bits(self) -> u32 {
        match self {
            Field::InPort => 32,
            Field::EthType | Field::Vlan | Field::TpSrc | Field::TpDst | Field::TcpFlags => 16,
            Field::EthSrc | Field::EthDst => 48,
            Field::IpSrc | Field::IpDst => 128,
            Field::IpProto | Field::Dscp => 8,
            Field::TunKey => 64,
        }
    }

    /// The fields of 64 bits or less: (word, shift).
    fn place(self) -> Option<(usize, u32)> {
        Some(match self {
            Field::InPort => (0, 32),
            Field::EthType => (0, 16),
            Field::Vlan => (0, 0),
            Field::EthSrc => (1, 0),
            Field::EthDst => (2, 0),
            Field::IpProto => (7, 56),
            Field::Dscp => (7, 48),
            Field::TpSrc => (7, 32),
            Field::TpDst => (7, 16),
            Field::TcpFlags => (7, 0),
            Field::TunKey => (8, 0),
            Field::IpSrc | Field::IpDst => return None,
        })
    }

    fn all_ones(self) -> u128 {
        if self.bits() == 128 {
            u128::MAX
        } else {
            (1u128 << self.bits()) - 1
        }
    }
}

impl Key {
    /// The value of `field`.
    pub fn get(&self, field: Field) -> u128 {
        let w = &self.0;
        match field.place() {
            Some((word, shift)) => u128::from(w[word] >> shift) & field.all_ones(),
            None => {
                let hi = if field == Field::IpSrc { 3 } else { 5 };
                u128::from(w[hi]) << 64 | u128::from(w[hi + 1])
            }
        }
    }

    /// Sets `field` to `value` (bits above its width are ignored).
    pub fn set(&mut self, field: Field, value: u128) {
        let value = value & field.all_ones();
        let w = &mut self.0;
        match field.place() {
            Some((word, shift)) => {
                let ones = field.all_ones() as u64;
                w[word] = (w[word] & !(ones << shift)) | ((value as u64) << shift);
            }
            None => {
                let hi = if field == Field::IpSrc { 3 } else { 5 };
                w[hi] = (value >> 64) as u64;
                w[hi + 1] = value as u64;
            }
        }
    }

    /// This key with every bit outside `mask` cleared.
    pub fn masked(&self, mask: &Key) -> Key {
        let mut out = [0; WORDS];
        for (o, (k, m)) in out.iter_mut().zip(self.0.iter().zip(mask.0.iter())) {
            *o = k & m;
        }
        Key(out)
    }

    /// The key of an Ethernet frame that came in on `in_port` with tunnel key `tun_key`
    /// (0: none). A frame too short for a header it announces keeps the fields read so far.
    pub fn extract(in_port: u32, tun_key: u64, frame: &[u8]) -> Key {
        let mut k = Key::default();
        k.set(Field::InPort, in_port.into());
        k.set(Field::TunKey, tun_key.into());
        let Some(hdr) = frame.get(..14) else {
            return k;
        };
        k.set(Field::EthDst, u128::from(mac48(&hdr[0..6])));
        k.set(Field::EthSrc, u128::from(mac48(&hdr[6..12])));
        let mut at = 12;
        let mut ethertype = be16(frame, at).unwrap_or(0);
        // The outermost tag gives the VLAN; an inner one (QinQ) is skipped.
        let mut tags = 0;
        while (ethertype == ethertype::VLAN || ethertype == ethertype::QINQ) && tags < 2 {
            let Some(tci) = be16(frame, at + 2) else {
                return k;
            };
            if tags == 0 {
                k.set(Field::Vlan, u128::from(VLAN_PRESENT | (tci & 0x0fff)));
            }
            tags += 1;
            at += 4;
            ethertype = be16(frame, at).unwrap_or(0);
        }
        k.set(Field::EthType, ethertype.into());
        let l3 = &frame[(at + 2).min(frame.len())..];
        match ethertype {
            ethertype::IPV4 => ipv4(&mut k, l3),
            ethertype::IPV6 => ipv6(&mut k, l3),
            ethertype::ARP => arp(&mut k, l3),
            _ => {}
        }
        k
    }
}

fn ipv4(k: &mut Key, p: &[u8]) {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    k.set(Field::Dscp, u128::from(p[1] >> 2));
    k.set(Field::IpProto, u128::from(p[9]));
    k.set(Field::IpSrc, u128::from(be32(p, 12).unwrap_or(0)));
    k.set(Field::IpDst, u128::from(be32(p, 16).unwrap_or(0)));
    // Only the first fragment has the transport header.
    let offset = be16(p, 6).unwrap_or(0) & 0x1fff;
    if offset == 0 && ihl >= 20 {
        if let Some(l4) = p.get(ihl..) {
            transport(k, p[9], l4);
        }
    }
}

fn ipv6(k: &mut Key, p: &[u8]) {
    if p.len() < 40 || p[0] >> 4 != 6 {
        return;
    }
    let tc = (u16::from(p[0] & 0x0f) << 4) | u16::from(p[1] >> 4);
    k.set(Field::Dscp, u128::from(tc >> 2));
    k.set(Field::IpSrc, be128(&p[8..24]));
    k.set(Field::IpDst, be128(&p[24..40]));
    // Hop-by-hop, routing and destination options are walked (at most four of them); a
    // fragment header ends the walk with its own number as the protocol (its transport header
    // may not be here), as does anything else.
    let (mut next, mut at) = (p[6], 40);
    for _ in 0..4 {
        match next {
            0 | 43 | 60 => {
                let (Some(&n), Some(&len)) = (p.get(at), p.get(at + 1)) else {
                    return;
                };
                next = n;
                at += (usize::from(len) + 1) * 8;
            }
            _ => break,
        }
    }
    k.set(Field::IpProto, u128::from(next));
    if let Some(l4) = p.get(at..) {
        transport(k, next, l4);
    }
}

fn transport(k: &mut Key, proto: u8, l4: &[u8]) {
    match proto {
        proto::TCP => {
            ports(k, l4);
            if let Some(flags) = be16(l4, 12) {
                k.set(Field::TcpFlags, u128::from(flags & 0x0fff));
            }
        }
        proto::UDP | proto::SCTP => ports(k, l4),
        proto::ICMP | proto::ICMPV6 => {
            if let (Some(&t), Some(&c)) = (l4.first(), l4.get(1)) {
                k.set(Field::TpSrc, t.into());
                k.set(Field::TpDst, c.into());
            }
        }
        _ => {}
    }
}

fn ports(k: &mut Key, l4: &[u8]) {
    if let (Some(s), Some(d)) = (be16(l4, 0), be16(l4, 2)) {
        k.set(Field::TpSrc, s.into());
        k.set(Field::TpDst, d.into());
    }
}

fn arp(k: &mut Key, p: &[u8]) {
    // Ethernet/IPv4 ARP only (htype 1, ptype 0x0800, hlen 6, plen 4).
    if p.len() < 28 || be16(p, 0) != Some(1) || be16(p, 2) != Some(0x0800) {
        return;
    }
    k.set(Field::IpProto, u128::from(be16(p, 6).unwrap_or(0) & 0xff));
    k.set(Field::IpSrc, u128::from(be32(p, 14).unwrap_or(0)));
    k.set(Field::IpDst, u128::from(be32(p, 24).unwrap_or(0)));
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be128(b: &[u8]) -> u128 {
    b.iter().fold(0, |acc, &x| acc << 8 | u128::from(x))
}

fn mac48(b: &[u8]) -> u64 {
    b.iter().fold(0, |acc, &x| acc << 8 | u64::from(x))
}

/// An address as the key holds it: IPv4 in the low 32 bits.
pub fn ip_bits(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// A MAC as the key holds it.
pub fn mac_bits(mac: [u8; 6]) -> u128 {
    u128::from(mac48(&mac))
}

/// The address a key's IP field holds, read as `family` says (IPv4 when `v4`).
pub fn ip_from_bits(bits: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(bits as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp4(vlan: Option<u16>) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if let Some(v) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&(0x2000 | v).to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        // IPv4, TOS 0xb8 (DSCP 46), proto 6, 10.0.0.1 → 10.0.0.2.
        f.extend_from_slice(&[
            0x45, 0xb8, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        // TCP 40000 → 5432, SYN.
        f.extend_from_slice(&[0x9c, 0x40, 0x15, 0x38, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02]);
        f.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn a_tagged_tcp_frame_gives_every_field() {
        let k = Key::extract(7, 100, &tcp4(Some(10)));
        assert_eq!(k.get(Field::InPort), 7);
        assert_eq!(k.get(Field::TunKey), 100);
        assert_eq!(k.get(Field::EthDst), 0x0200_0000_0002);
        assert_eq!(k.get(Field::EthSrc), 0x0200_0000_0001);
        assert_eq!(k.get(Field::Vlan), u128::from(VLAN_PRESENT | 10));
        assert_eq!(k.get(Field::EthType), 0x0800);
        assert_eq!(k.get(Field::Dscp), 46);
        assert_eq!(k.get(Field::IpProto), 6);
        assert_eq!(k.get(Field::IpSrc), 0x0a00_0001);
        assert_eq!(k.get(Field::IpDst), 0x0a00_0002);
        assert_eq!(k.get(Field::TpSrc), 40000);
        assert_eq!(k.get(Field::TpDst), 5432);
        assert_eq!(k.get(Field::TcpFlags), 0x002);
        let untagged = Key::extract(7, 0, &tcp4(None));
        assert_eq!(untagged.get(Field::Vlan), 0);
        assert_eq!(untagged.get(Field::TpDst), 5432);
    }

    #[test]
    fn truncated_frames_keep_what_was_read() {
        let f = tcp4(None);
        for n in 0..f.len() {
            let k = Key::extract(1, 0, &f[..n]);
            if n >= 14 {
                assert_eq!(k.get(Field::EthType), 0x0800, "{n}");
            }
            if n < 14 + 20 {
                assert_eq!(k.get(Field::IpProto), 0, "{n}");
            }
        }
    }

    #[test]
    fn later_fragments_have_no_ports() {
        let mut f = tcp4(None);
        f[14 + 6] = 0x00;
        f[14 + 7] = 0x10; // offset 16 × 8 bytes
        let k = Key::extract(1, 0, &f);
        assert_eq!(k.get(Field::IpProto), 6);
        assert_eq!((k.get(Field::TpSrc), k.get(Field::TpDst)), (0, 0));
    }

    #[test]
    fn fields_do_not_overlap() {
        for f in Field::ALL {
            let mut k = Key::default();
            k.set(f, u128::MAX);
            for g in Field::ALL {
                let want = if g == f { f.all_ones() } else { 0 };
                assert_eq!(k.get(g), want, "{f:?} set, {g:?} read");
            }
        }
    }
}
