//! The facts identity policy (policy.rs) reads from a frame: its flow key (RFC 6146 §2's
//! 5-tuple, the ICMP echo identifier standing in for both ports) and whether it closes a TCP
//! connection, or nothing when the frame is exempt.

use std::net::IpAddr;

use nvo_policy::FlowKey;
use nvo_wire::std_wire::{IpProtocol, Ipv4Packet, Ipv6Packet};
use nvo_wire::EtherType;

use crate::frame::Eth;
use crate::Vni;

/// The facts policy reads from an IP packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    pub(crate) key: FlowKey,
    pub(crate) closing: bool,
}

/// `None`: not subject to policy (not IP, neighbour discovery, ICMP errors).
pub(crate) fn flow(vni: Vni, frame: &[u8], eth: &Eth) -> Option<Flow> {
    let l3 = frame.get(eth.l3..)?;
    let (src, dst, proto, l4, first) = match eth.ethertype {
        EtherType::Ipv4 => {
            let ip = Ipv4Packet::new_checked(l3).ok()?;
            let first = ip.frag_offset() == 0;
            let (s, d) = (ip.src_addr(), ip.dst_addr());
            let proto = u8::from(ip.next_header());
            let header = usize::from(ip.header_len());
            let total = usize::from(ip.total_len()).min(l3.len());
            let l4 = l3.get(header..total).unwrap_or_default();
            (IpAddr::V4(s), IpAddr::V4(d), proto, l4, first)
        }
        EtherType::Ipv6 => {
            let ip = Ipv6Packet::new_checked(l3).ok()?;
            let proto = u8::from(ip.next_header());
            let (s, d) = (ip.src_addr(), ip.dst_addr());
            (IpAddr::V6(s), IpAddr::V6(d), proto, ip.payload(), true)
        }
        _ => return None,
    };
    let word = |at: usize| {
        l4.get(at..at + 2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    let (mut sport, mut dport, mut closing) = (0, 0, false);
    match IpProtocol::from(proto) {
        IpProtocol::Tcp | IpProtocol::Udp | IpProtocol::Unknown(132) if first => {
            (sport, dport) = (word(0), word(2));
            if proto == 6 {
                // FIN or RST.
                closing = l4.get(13).is_some_and(|f| f & 0x05 != 0);
            }
        }
        IpProtocol::Icmp => match l4.first()? {
            // Echo request and reply: one flow, keyed by the identifier both ways.
            0 | 8 => (sport, dport) = (word(4), word(4)),
            // Errors (unreachable, source quench, redirect, time exceeded, parameter problem)
            // travel back to a sender: never held up.
            3 | 4 | 5 | 11 | 12 => return None,
            _ => {}
        },
        IpProtocol::Icmpv6 => match l4.first()? {
            128 | 129 => (sport, dport) = (word(4), word(4)),
            // Errors, and neighbour/router discovery (RFC 4861 types 133-137): always pass.
            1..=4 | 133..=137 => return None,
            _ => {}
        },
        _ => {}
    }
    Some(Flow {
        key: FlowKey {
            network: vni.0,
            proto,
            src,
            dst,
            sport,
            dport,
        },
        closing,
    })
}
