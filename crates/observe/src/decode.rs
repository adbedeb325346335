//! One line of text for the first bytes of a packet, as `nvo monitor` shows a dropped or
//! flooded one: MACs, EtherType (through 802.1Q/802.1ad tags), ARP, IPv4/IPv6 addresses, the
//! protocol and its ports (TCP, UDP) or type (ICMP); a VXLAN packet's VNI and its inner frame
//! after a `|`. Whatever is cut short ends the line with `[truncated]`; nothing here panics on
//! any input (the bytes come from the network).

use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What [`frame`] and [`tunnel`] make of a packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decoded {
    /// The line.
    pub text: String,
    /// The VNI of the first VXLAN header found, if any.
    pub vni: Option<u32>,
}

/// The UDP port VXLAN is decoded on (RFC 7348 §5) besides the one nvod is configured with.
pub const VXLAN_PORT: u16 = 4789;

/// Decodes an Ethernet frame's first bytes; UDP to `vxlan_port` (or 4789) is taken as VXLAN.
pub fn frame(bytes: &[u8], vxlan_port: u16) -> Decoded {
    let mut d = Decoded::default();
    ethernet(bytes, vxlan_port, &mut d, 0);
    d
}

/// Decodes what a UDP or raw IP underlay socket received from `src` on `port` (the bytes after
/// the UDP header, or after the IP header for a raw socket): a tunnel header, VXLAN's read,
/// then its inner frame.
pub fn tunnel(src: IpAddr, port: u16, bytes: &[u8], vxlan_port: u16) -> Decoded {
    let mut d = Decoded::default();
    let _ = write!(d.text, "from {src} to port {port}");
    if port == vxlan_port || port == VXLAN_PORT {
        vxlan(bytes, vxlan_port, &mut d, 0);
    } else {
        let _ = write!(d.text, " {} bytes", bytes.len());
    }
    d
}

fn truncated(d: &mut Decoded) {
    d.text.push_str(" [truncated]");
}

fn mac(b: &[u8]) -> String {
    let mut text = String::with_capacity(3 * b.len());
    for (i, x) in b.iter().enumerate() {
        if i > 0 {
            text.push(':');
        }
        let _ = write!(text, "{x:02x}");
    }
    text
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn ethernet(b: &[u8], vxlan_port: u16, d: &mut Decoded, depth: u8) {
    if !d.text.is_empty() {
        d.text.push(' ');
    }
    let (Some(dst), Some(src)) = (b.get(0..6), b.get(6..12)) else {
        let _ = write!(d.text, "{} bytes", b.len());
        return truncated(d);
    };
    let _ = write!(d.text, "{} > {}", mac(src), mac(dst));
    let mut at = 12;
    let mut ethertype = match be16(b, at) {
        Some(t) => t,
        None => return truncated(d),
    };
    while ethertype == 0x8100 || ethertype == 0x88a8 {
        let Some(tci) = be16(b, at + 2) else {
            return truncated(d);
        };
        let _ = write!(d.text, " vlan {}", tci & 0x0fff);
        at += 4;
        ethertype = match be16(b, at) {
            Some(t) => t,
            None => return truncated(d),
        };
    }
    let rest = b.get(at + 2..).unwrap_or_default();
    match ethertype {
        0x0800 => ipv4(rest, vxlan_port, d, depth),
        0x86dd => ipv6(rest, vxlan_port, d, depth),
        0x0806 => arp(rest, d),
        t => {
            let _ = write!(d.text, " ethertype 0x{t:04x}");
        }
    }
}

fn arp(b: &[u8], d: &mut Decoded) {
    let (Some(op), Some(spa), Some(tpa)) = (be16(b, 6), b.get(14..18), b.get(24..28)) else {
        d.text.push_str(" arp");
        return truncated(d);
    };
    let ip = |x: &[u8]| Ipv4Addr::new(x[0], x[1], x[2], x[3]);
    let _ = match op {
        1 => write!(d.text, " arp who-has {} tell {}", ip(tpa), ip(spa)),
        2 => write!(d.text, " arp reply {} is-at {}", ip(spa), mac(&b[8..14])),
        op => write!(d.text, " arp op {op}"),
    };
}

fn ipv4(b: &[u8], vxlan_port: u16, d: &mut Decoded, depth: u8) {
    let Some(&vihl) = b.first() else {
        d.text.push_str(" ipv4");
        return truncated(d);
    };
    let ihl = usize::from(vihl & 0x0f) * 4;
    let (Some(&proto), Some(s), Some(t)) = (b.get(9), b.get(12..16), b.get(16..20)) else {
        d.text.push_str(" ipv4");
        return truncated(d);
    };
    let src = IpAddr::V4(Ipv4Addr::new(s[0], s[1], s[2], s[3]));
    let dst = IpAddr::V4(Ipv4Addr::new(t[0], t[1], t[2], t[3]));
    let fragment = be16(b, 6).is_some_and(|f| f & 0x1fff != 0);
    if ihl < 20 {
        let _ = write!(d.text, " ipv4 {src} > {dst} bad header length {ihl}");
        return;
    }
    if fragment {
        let _ = write!(d.text, " ipv4 {src} > {dst} fragment proto {proto}");
        return;
    }
    let payload = b.get(ihl..).unwrap_or_default();
    l4("ipv4", src, dst, proto, payload, vxlan_port, d, depth);
}

fn ipv6(b: &[u8], vxlan_port: u16, d: &mut Decoded, depth: u8) {
    let (Some(&next), Some(s), Some(t)) = (b.get(6), b.get(8..24), b.get(24..40)) else {
        d.text.push_str(" ipv6");
        return truncated(d);
    };
    let addr = |x: &[u8]| {
        let mut a = [0u8; 16];
        a.copy_from_slice(x);
        IpAddr::V6(Ipv6Addr::from(a))
    };
    let payload = b.get(40..).unwrap_or_default();
    l4(
        "ipv6",
        addr(s),
        addr(t),
        next,
        payload,
        vxlan_port,
        d,
        depth,
    );
}

#[allow(clippy::too_many_arguments)]
fn l4(
    family: &str,
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    b: &[u8],
    vxlan_port: u16,
    d: &mut Decoded,
    depth: u8,
) {
    let name = match proto {
        6 => "tcp",
        17 => "udp",
        1 | 58 => "icmp",
        _ => "",
    };
    match (name, be16(b, 0), be16(b, 2)) {
        ("tcp" | "udp", Some(sp), Some(dp)) => {
            let _ = write!(d.text, " {family} {src}:{sp} > {dst}:{dp} {name}");
            if name == "udp" && (dp == vxlan_port || dp == VXLAN_PORT) && depth == 0 {
                vxlan(b.get(8..).unwrap_or_default(), vxlan_port, d, depth);
            }
        }
        ("tcp" | "udp", _, _) => {
            let _ = write!(d.text, " {family} {src} > {dst} {name}");
            truncated(d);
        }
        ("icmp", _, _) => {
            let _ = write!(d.text, " {family} {src} > {dst} icmp");
            match (b.first(), b.get(1)) {
                (Some(t), Some(c)) => {
                    let _ = write!(d.text, " type {t} code {c}");
                }
                _ => truncated(d),
            }
        }
        _ => {
            let _ = write!(d.text, " {family} {src} > {dst} proto {proto}");
        }
    }
}

/// A VXLAN header (RFC 7348 §5): flags with the I bit, 24-bit VNI, then the inner frame.
fn vxlan(b: &[u8], vxlan_port: u16, d: &mut Decoded, depth: u8) {
    let (Some(&flags), Some(v)) = (b.first(), b.get(4..7)) else {
        d.text.push_str(" vxlan");
        return truncated(d);
    };
    let vni = u32::from_be_bytes([0, v[0], v[1], v[2]]);
    if flags & 0x08 == 0 {
        let _ = write!(d.text, " vxlan flags 0x{flags:02x} (I clear)");
        return;
    }
    if d.vni.is_none() {
        d.vni = Some(vni);
    }
    let _ = write!(d.text, " vxlan vni {vni} |");
    ethernet(b.get(8..).unwrap_or_default(), vxlan_port, d, depth + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ICMP echo request 10.0.0.1 → 10.0.0.2 from 02:00:00:00:00:01 to …:02, as scapy
    /// builds `Ether()/IP()/ICMP()` (checksums zero: not checked here).
    fn icmp_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[8, 0, 0, 0, 0, 0, 0, 0]);
        f
    }

    #[test]
    fn icmp_in_ethernet() {
        let d = frame(&icmp_frame(), 4789);
        assert_eq!(
            d.text,
            "02:00:00:00:00:01 > 02:00:00:00:00:02 ipv4 10.0.0.1 > 10.0.0.2 icmp type 8 code 0"
        );
        assert_eq!(d.vni, None);
    }

    #[test]
    fn vxlan_in_udp_in_ethernet_and_as_a_socket_payload() {
        let inner = icmp_frame();
        let mut vx = vec![0x08, 0, 0, 0, 0, 0x03, 0xe7, 0];
        vx.extend_from_slice(&inner);
        let d = tunnel("192.0.2.2".parse().unwrap(), 4789, &vx, 4789);
        assert_eq!(d.vni, Some(999));
        assert!(
            d.text
                .starts_with("from 192.0.2.2 to port 4789 vxlan vni 999 | 02:00"),
            "{}",
            d.text
        );
        let mut outer = vec![2, 0, 0, 0, 0, 0xa, 2, 0, 0, 0, 0, 0xb, 0x08, 0x00];
        outer.extend_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0]);
        outer.extend_from_slice(&[192, 0, 2, 2, 192, 0, 2, 1]);
        outer.extend_from_slice(&[0xc3, 0x50, 0x12, 0xb5, 0, 0, 0, 0]);
        outer.extend_from_slice(&vx);
        let d = frame(&outer, 4789);
        assert_eq!(d.vni, Some(999));
        assert!(
            d.text
                .contains("ipv4 192.0.2.2:50000 > 192.0.2.1:4789 udp vxlan vni 999 | "),
            "{}",
            d.text
        );
        assert!(
            d.text.ends_with("10.0.0.1 > 10.0.0.2 icmp type 8 code 0"),
            "{}",
            d.text
        );
    }

    #[test]
    fn arp_and_vlan() {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 0x0a, 0x08, 0x06]);
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 10, 0, 0, 1]);
        f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
        assert_eq!(
            frame(&f, 4789).text,
            "02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff vlan 10 arp who-has 10.0.0.2 tell 10.0.0.1"
        );
    }

    #[test]
    fn every_prefix_of_a_frame_decodes_without_panicking() {
        let inner = icmp_frame();
        let mut vx = vec![0x08, 0, 0, 0, 0, 0, 1, 0];
        vx.extend_from_slice(&inner);
        for n in 0..vx.len() {
            let d = tunnel("192.0.2.2".parse().unwrap(), 4789, &vx[..n], 4789);
            assert!(!d.text.is_empty());
            let d = frame(&inner[..n.min(inner.len())], 4789);
            if n < inner.len() {
                assert!(
                    d.text.ends_with("[truncated]") || d.text.contains("icmp"),
                    "{n}: {}",
                    d.text
                );
            }
        }
        assert!(frame(&[1, 2, 3], 4789).text.ends_with("[truncated]"));
    }
}
