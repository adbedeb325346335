//! ARP for Ethernet and IPv4 (RFC 826): reading the ARP packet of a frame, and writing the
//! requests and replies the pipeline answers with (an L3 network's gateway, ARP suppression).
//!
//! Parsing goes through smoltcp's checked `ArpPacket` (`nvo_wire::std_wire`); anything but
//! Ethernet/IPv4 ARP is None. Nothing here allocates: replies are written into the caller's
//! buffer (the pipeline's scratch).

use std::net::Ipv4Addr;

use nvo_wire::std_wire::{ArpOperation, ArpPacket, ArpRepr, EthernetAddress};

use crate::frame::{self, Eth};
use crate::Mac;
use nvo_wire::EtherType;

/// An Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Arp {
    pub(crate) op: ArpOperation,
    pub(crate) sender_mac: Mac,
    pub(crate) sender_ip: Ipv4Addr,
    pub(crate) target_mac: Mac,
    pub(crate) target_ip: Ipv4Addr,
}

impl Arp {
    /// The ARP packet of `frame`, when it carries an Ethernet/IPv4 one.
    pub(crate) fn parse(frame: &[u8], eth: &Eth) -> Option<Arp> {
        if eth.ethertype != EtherType::Arp {
            return None;
        }
        let packet = ArpPacket::new_checked(frame.get(eth.l3..)?).ok()?;
        match ArpRepr::parse(&packet).ok()? {
            ArpRepr::EthernetIpv4 {
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_hardware_addr,
                target_protocol_addr,
            } => Some(Arp {
                op: operation,
                sender_mac: Mac(source_hardware_addr.0),
                sender_ip: source_protocol_addr,
                target_mac: Mac(target_hardware_addr.0),
                target_ip: target_protocol_addr,
            }),
            #[allow(unreachable_patterns)] // `ArpRepr` is non-exhaustive.
            _ => None,
        }
    }

    /// A request from `mac`/`ip` for `target`. An `ip` of 0.0.0.0 makes it a probe
    /// (RFC 5227 §2.1.1), which every host answers.
    pub(crate) fn request(mac: Mac, ip: Ipv4Addr, target: Ipv4Addr) -> Arp {
        Arp {
            op: ArpOperation::Request,
            sender_mac: mac,
            sender_ip: ip,
            target_mac: Mac::ZERO,
            target_ip: target,
        }
    }

    /// The reply to this request: its target IP is at `mac`, told to its sender.
    pub(crate) fn reply(&self, mac: Mac) -> Arp {
        Arp {
            op: ArpOperation::Reply,
            sender_mac: mac,
            sender_ip: self.target_ip,
            target_mac: self.sender_mac,
            target_ip: self.sender_ip,
        }
    }

    /// A request that asks for a peer's address: not a gratuitous announcement (target IP =
    /// sender IP) and not a probe (sender IP 0.0.0.0, RFC 5227 §2.1.1), which nobody may answer
    /// in another host's place.
    pub(crate) fn asks_peer(&self) -> bool {
        self.op == ArpOperation::Request
            && self.target_ip != self.sender_ip
            && !self.sender_ip.is_unspecified()
            && !self.target_ip.is_unspecified()
    }

    /// Writes the packet into `out` in a frame to `eth_dst` from the sender MAC, behind the
    /// 802.1Q tag `vlan_tci` if any; returns the frame's length, or None when `out` is short.
    pub(crate) fn emit(
        &self,
        eth_dst: Mac,
        vlan_tci: Option<u16>,
        out: &mut [u8],
    ) -> Option<usize> {
        let l2 = frame::write_header(out, eth_dst, self.sender_mac, vlan_tci, EtherType::Arp)?;
        let repr = ArpRepr::EthernetIpv4 {
            operation: self.op,
            source_hardware_addr: EthernetAddress(self.sender_mac.0),
            source_protocol_addr: self.sender_ip,
            target_hardware_addr: EthernetAddress(self.target_mac.0),
            target_protocol_addr: self.target_ip,
        };
        let len = l2 + repr.buffer_len();
        repr.emit(&mut ArpPacket::new_unchecked(out.get_mut(l2..len)?));
        Some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Mac = Mac([2, 0, 0, 0, 0, 0xa]);
    const B: Mac = Mac([2, 0, 0, 0, 0, 0xb]);

    #[test]
    fn request_reply_round_trip_with_and_without_tag() {
        let (ip_a, ip_b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let request = Arp::request(A, ip_a, ip_b);
        for tci in [None, Some(0x0064)] {
            let mut buf = [0u8; 64];
            let len = request.emit(Mac::BROADCAST, tci, &mut buf).unwrap();
            assert_eq!(len, 42 + tci.map_or(0, |_| 4));
            let eth = Eth::parse(&buf[..len]).unwrap();
            assert_eq!((eth.dst, eth.src, eth.vlan_tci), (Mac::BROADCAST, A, tci));
            let parsed = Arp::parse(&buf[..len], &eth).unwrap();
            assert_eq!(parsed, request);
            assert!(parsed.asks_peer());
            let reply = parsed.reply(B);
            assert_eq!(
                (
                    reply.sender_mac,
                    reply.sender_ip,
                    reply.target_mac,
                    reply.target_ip
                ),
                (B, ip_b, A, ip_a)
            );
            assert!(!reply.asks_peer());
        }
        // Too short a buffer: nothing written past it, no panic.
        assert_eq!(request.emit(Mac::BROADCAST, None, &mut [0u8; 41]), None);
    }

    #[test]
    fn gratuitous_and_probe_ask_no_peer() {
        let ip = Ipv4Addr::new(10, 0, 0, 1);
        assert!(!Arp::request(A, ip, ip).asks_peer());
        assert!(!Arp::request(A, Ipv4Addr::UNSPECIFIED, ip).asks_peer());
    }
}
