//! The few facts the pipeline reads from an Ethernet frame: addresses, an optional 802.1Q tag,
//! the ethertype and where the L3 header starts; and the flow key the entropy hash covers.
//!
//! Ethernet and IP go through smoltcp's checked constructors (`nvo_wire::std_wire`); smoltcp has
//! no 802.1Q type, so the one tag is read here (IEEE 802.1Q §9.6: TPID 0x8100, 2 bytes of TCI,
//! then the encapsulated ethertype). Stacked tags (QinQ) are not looked into: such a frame is
//! forwarded on its MACs with the outer tag's ethertype.

use nvo_wire::std_wire::{EthernetFrame, IpProtocol, Ipv4Packet, Ipv6Packet};
use nvo_wire::EtherType;

use crate::hash::FlowHasher;
use crate::Mac;

/// Ethernet header without a tag.
pub(crate) const ETH_HEADER_LEN: usize = 14;
/// An 802.1Q tag.
pub(crate) const VLAN_TAG_LEN: usize = 4;

/// The parsed Ethernet (and 802.1Q) header of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Eth {
    pub(crate) dst: Mac,
    pub(crate) src: Mac,
    /// The TCI of an 802.1Q tag, if the frame carries one.
    pub(crate) vlan_tci: Option<u16>,
    /// The ethertype after the tag, if any.
    pub(crate) ethertype: EtherType,
    /// Offset of the L3 header: 14, or 18 behind a tag.
    pub(crate) l3: usize,
}

impl Eth {
    /// Parses the header; `None` when the frame is shorter than its header.
    pub(crate) fn parse(frame: &[u8]) -> Option<Eth> {
        let eth = EthernetFrame::new_checked(frame).ok()?;
        let ethertype = EtherType::from(eth.ethertype());
        let (dst, src) = (Mac::from(eth.dst_addr()), Mac::from(eth.src_addr()));
        if ethertype != EtherType::Vlan {
            return Some(Eth {
                dst,
                src,
                vlan_tci: None,
                ethertype,
                l3: ETH_HEADER_LEN,
            });
        }
        let tag = frame.get(ETH_HEADER_LEN..ETH_HEADER_LEN + VLAN_TAG_LEN)?;
        Some(Eth {
            dst,
            src,
            vlan_tci: Some(u16::from_be_bytes([tag[0], tag[1]])),
            ethertype: EtherType::from(u16::from_be_bytes([tag[2], tag[3]])),
            l3: ETH_HEADER_LEN + VLAN_TAG_LEN,
        })
    }

    /// The length of the L2 header (14 or 18).
    pub(crate) fn header_len(&self) -> usize {
        self.l3
    }
}

/// Writes an Ethernet header from `src` to `dst` into `out` — behind the 802.1Q tag `vlan_tci`
/// if there is one — for a payload of `ethertype`. Returns the header's length, or None when
/// `out` is too short. The pipeline's replies go back behind the tag their request came with.
pub(crate) fn write_header(
    out: &mut [u8],
    dst: Mac,
    src: Mac,
    vlan_tci: Option<u16>,
    ethertype: EtherType,
) -> Option<usize> {
    let len = ETH_HEADER_LEN + vlan_tci.map_or(0, |_| VLAN_TAG_LEN);
    let mut frame = EthernetFrame::new_unchecked(out.get_mut(..len)?);
    frame.set_dst_addr(dst.into());
    frame.set_src_addr(src.into());
    match vlan_tci {
        None => frame.set_ethertype(ethertype.into()),
        Some(tci) => {
            frame.set_ethertype(EtherType::Vlan.into());
            let tag = frame.payload_mut();
            tag[..2].copy_from_slice(&tci.to_be_bytes());
            tag[2..4].copy_from_slice(&ethertype.value().to_be_bytes());
        }
    }
    Some(len)
}

/// The flow entropy of a frame: a hash of its MACs and ethertype and, for IPv4 and IPv6, of the
/// addresses and protocol and — for TCP and UDP that is not fragmented — the ports. Every frame
/// of a flow gets the same value. IPv6 extension headers are not walked: behind one, only the
/// addresses and the first next-header value count.
pub(crate) fn entropy(frame: &[u8], eth: &Eth) -> u16 {
    let mut h = FlowHasher::new();
    h.bytes(&eth.dst.0);
    h.bytes(&eth.src.0);
    h.word(u64::from(eth.ethertype.value()));
    let l3 = frame.get(eth.l3..).unwrap_or_default();
    match eth.ethertype {
        EtherType::Ipv4 => {
            if let Ok(ip) = Ipv4Packet::new_checked(l3) {
                h.bytes(&ip.src_addr().octets());
                h.bytes(&ip.dst_addr().octets());
                let proto = ip.next_header();
                h.word(u64::from(u8::from(proto)));
                // A fragment other than the first has no ports, and the first one must hash like
                // the rest so that one datagram's fragments take one path.
                if !ip.more_frags() && ip.frag_offset() == 0 {
                    ports(&mut h, proto, ip.payload());
                }
            }
        }
        EtherType::Ipv6 => {
            if let Ok(ip) = Ipv6Packet::new_checked(l3) {
                h.bytes(&ip.src_addr().octets());
                h.bytes(&ip.dst_addr().octets());
                let proto = ip.next_header();
                h.word(u64::from(u8::from(proto)));
                ports(&mut h, proto, ip.payload());
            }
        }
        _ => {}
    }
    h.finish16()
}

/// Adds the source and destination ports of TCP and UDP: the first four bytes of both headers.
fn ports(h: &mut FlowHasher, proto: IpProtocol, l4: &[u8]) {
    if matches!(proto, IpProtocol::Tcp | IpProtocol::Udp) {
        if let Some(p) = l4.get(..4) {
            h.bytes(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp4(src_port: u16, dst_port: u16) -> Vec<u8> {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(src_port, dst_port)
            .write(&mut v, b"payload")
            .unwrap();
        v
    }

    #[test]
    fn parses_plain_and_tagged() {
        let plain = udp4(1, 2);
        let eth = Eth::parse(&plain).unwrap();
        assert_eq!(
            (eth.ethertype, eth.l3, eth.vlan_tci),
            (EtherType::Ipv4, 14, None)
        );
        assert_eq!(eth.src, Mac([2, 0, 0, 0, 0, 1]));
        let mut tagged = plain[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x20, 0x0a]);
        tagged.extend_from_slice(&plain[12..]);
        let eth = Eth::parse(&tagged).unwrap();
        assert_eq!(
            (eth.ethertype, eth.l3, eth.vlan_tci),
            (EtherType::Ipv4, 18, Some(0x200a))
        );
        assert_eq!(Eth::parse(&tagged[..17]), None);
        assert_eq!(Eth::parse(&plain[..13]), None);
    }

    #[test]
    fn same_flow_same_entropy_other_ports_differ() {
        let a = udp4(40000, 53);
        let e = entropy(&a, &Eth::parse(&a).unwrap());
        assert_eq!(e, entropy(&a, &Eth::parse(&a).unwrap()));
        // 64 other source ports: at most a couple may collide with the first in 16 bits.
        let same = (40001..40065)
            .filter(|&p| {
                let b = udp4(p, 53);
                entropy(&b, &Eth::parse(&b).unwrap()) == e
            })
            .count();
        assert!(same <= 1, "{same} of 64 other flows hash like the first");
    }
}
