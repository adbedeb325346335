//! Inner frames of underlay packets: which tunnel packets carry a network's frames, and the
//! frame inside.
//!
//! A [`Decapsulator`] holds an encapsulation engine of its own ([`nvo_encap::engine::Engine`],
//! the built-in profiles plus the network's) in which only the captured network is bound, so
//! a packet is read exactly as nvod's datapaths read it: the profile's receive matches, header
//! length and payload field decide, and a packet of another network (another key) is not
//! this network's. The outer headers before the tunnel header are read here: Ethernet (with up
//! to two VLAN tags), IPv4 (first fragments only; later fragments carry no tunnel header) or
//! IPv6 (no extension headers), then UDP for UDP profiles. The payload becomes an Ethernet
//! frame: an Ethernet payload as it is; IPv4, IPv6 or NSH (L3 and service-chain networks) behind
//! a made-up Ethernet header with zero addresses and the payload's EtherType, so one link type
//! serves every network.

use nvo_encap::engine::{Engine, Limits, Target};
use nvo_encap::profile::{Payload, Profile, Transport};

/// Why a network's packets cannot be picked out of the underlay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InnerError {
    /// The engine refused the profile or the binding (a keyed profile, a VNI too wide).
    #[error("cannot read network {vni}'s packets with profile {profile:?}: {reason}")]
    Profile {
        /// The network.
        vni: u32,
        /// The profile's name.
        profile: String,
        /// What the engine said.
        reason: String,
    },
}

/// Picks one network's packets out of the underlay; see the module docs.
#[derive(Debug)]
pub struct Decapsulator {
    engine: Engine,
    /// The profile's transport, as the engine knows it.
    transport: Transport,
    /// How its packets travel on this host's wire (nvod's `vxlan_port` may move VXLAN's).
    wire: Transport,
    vni: u32,
}

/// EtherTypes of the made-up header.
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_NSH: u16 = 0x894f;

impl Decapsulator {
    /// Reads network `vni`'s packets, carried in `profile` with parameter values `params`,
    /// travelling as `wire` (the profile's transport, or the UDP port nvod uses instead).
    pub fn new(
        profile: &Profile,
        vni: u32,
        params: &[(String, u64)],
        wire: Transport,
    ) -> Result<Decapsulator, InnerError> {
        let refused = |reason: String| InnerError::Profile {
            vni,
            profile: profile.name.clone(),
            reason,
        };
        let mut engine = Engine::new(Limits::default());
        let id = match engine.id(&profile.name) {
            Some(id) if engine.profile(id) == Some(profile) => id,
            Some(_) => {
                // A built-in of that name differs (nvod was given another definition): take
                // nvod's.
                engine
                    .remove_profile(&profile.name)
                    .map_err(|e| refused(e.to_string()))?;
                engine
                    .add_profile(profile.clone())
                    .map_err(|e| refused(e.to_string()))?
            }
            None => engine
                .add_profile(profile.clone())
                .map_err(|e| refused(e.to_string()))?,
        };
        engine
            .bind_local(id, vni, params)
            .map_err(|e| refused(e.to_string()))?;
        Ok(Decapsulator {
            engine,
            transport: profile.transport,
            wire,
            vni,
        })
    }

    /// How the network's packets travel on the wire.
    pub fn wire(&self) -> Transport {
        self.wire
    }

    /// The inner frame of `frame` (an Ethernet frame from the underlay) when it is a tunnel
    /// packet of this network, written into `out` (cleared first); false otherwise.
    pub fn inner(&self, frame: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(tunnel) = tunnel_bytes(frame, self.wire) else {
            return false;
        };
        let Ok(decap) = self.engine.decap(self.transport, tunnel) else {
            return false;
        };
        if decap.target != (Target::Local { vni: self.vni }) {
            return false;
        }
        let Some(payload) = tunnel.get(decap.header_len..) else {
            return false;
        };
        out.clear();
        let ethertype = match decap.payload {
            Payload::Ethernet => {
                out.extend_from_slice(payload);
                return true;
            }
            Payload::Ipv4 => ETHERTYPE_IPV4,
            Payload::Ipv6 => ETHERTYPE_IPV6,
            Payload::Nsh => ETHERTYPE_NSH,
        };
        out.extend_from_slice(&[0; 12]);
        out.extend_from_slice(&ethertype.to_be_bytes());
        out.extend_from_slice(payload);
        true
    }
}

/// The bytes after the outer UDP header (or IP header, for IP transports) of an Ethernet
/// frame of `transport`; `None` for anything else.
pub fn tunnel_bytes(frame: &[u8], transport: Transport) -> Option<&[u8]> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    at += 2;
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        ethertype = u16::from_be_bytes([*frame.get(at + 2)?, *frame.get(at + 3)?]);
        at += 4;
    }
    let ip = frame.get(at..)?;
    let (protocol, l4) = match ethertype {
        ETHERTYPE_IPV4 => {
            let ihl = usize::from(ip.first()? & 0x0f) * 4;
            let fragment = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x1fff;
            if ip[0] >> 4 != 4 || ihl < 20 || fragment != 0 {
                return None;
            }
            (*ip.get(9)?, ip.get(ihl..)?)
        }
        ETHERTYPE_IPV6 => {
            if ip.first()? >> 4 != 6 {
                return None;
            }
            (*ip.get(6)?, ip.get(40..)?)
        }
        _ => return None,
    };
    match transport {
        Transport::Udp(port) => {
            let dst = u16::from_be_bytes([*l4.get(2)?, *l4.get(3)?]);
            (protocol == 17 && dst == port)
                .then(|| l4.get(8..))
                .flatten()
        }
        Transport::Ip(p) => (protocol == p).then_some(l4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvo_encap::builtin;

    /// An inner Ethernet frame: 02:..:01 -> 02:..:02, IPv4 ICMP 10.0.0.1 -> 10.0.0.2.
    fn inner_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0x66, 0xdd, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend_from_slice(&[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
        f
    }

    /// Outer Ethernet + IPv4 (192.0.2.1 -> 192.0.2.2) + UDP to `port` or IP protocol `proto`,
    /// around `tunnel` (checksums zero: nothing here reads them).
    fn outer(transport: Transport, tunnel: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        let (proto, l4) = match transport {
            Transport::Udp(port) => {
                let mut u = vec![0xc0, 0x00];
                u.extend_from_slice(&port.to_be_bytes());
                u.extend_from_slice(&((8 + tunnel.len()) as u16).to_be_bytes());
                u.extend_from_slice(&[0, 0]);
                u.extend_from_slice(tunnel);
                (17, u)
            }
            Transport::Ip(p) => (p, tunnel.to_vec()),
        };
        let total = (20 + l4.len()) as u16;
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0, 192, 0, 2, 1, 192, 0, 2, 2]);
        f.extend_from_slice(&l4);
        f
    }

    /// VXLAN header, RFC 7348 section 5: flags 0x08 (I), VNI in bytes 4-6.
    fn vxlan(vni: u32) -> Vec<u8> {
        let v = vni.to_be_bytes();
        vec![0x08, 0, 0, 0, v[1], v[2], v[3], 0]
    }

    fn profile(name: &str) -> Profile {
        builtin::all()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no built-in {name}"))
    }

    #[test]
    fn vxlan_frames_of_the_network_come_out_whole() {
        let d = Decapsulator::new(&profile("vxlan"), 100, &[], Transport::Udp(4789)).unwrap();
        let mut tunnel = vxlan(100);
        tunnel.extend(inner_frame());
        let packet = outer(Transport::Udp(4789), &tunnel);
        let mut out = Vec::new();
        assert!(d.inner(&packet, &mut out));
        assert_eq!(out, inner_frame());
    }

    #[test]
    fn vxlan_on_another_port_is_read_there() {
        // nvod with `vxlan_port = 8472` (the Linux kernel's old default).
        let d = Decapsulator::new(&profile("vxlan"), 100, &[], Transport::Udp(8472)).unwrap();
        let mut tunnel = vxlan(100);
        tunnel.extend(inner_frame());
        let mut out = Vec::new();
        assert!(d.inner(&outer(Transport::Udp(8472), &tunnel), &mut out));
        assert!(!d.inner(&outer(Transport::Udp(4789), &tunnel), &mut out));
    }

    #[test]
    fn other_vnis_ports_and_protocols_are_not_the_network() {
        let d = Decapsulator::new(&profile("vxlan"), 100, &[], Transport::Udp(4789)).unwrap();
        let mut out = Vec::new();
        let mut other = vxlan(200);
        other.extend(inner_frame());
        assert!(!d.inner(&outer(Transport::Udp(4789), &other), &mut out));
        let mut ours = vxlan(100);
        ours.extend(inner_frame());
        assert!(!d.inner(&outer(Transport::Udp(9999), &ours), &mut out));
        assert!(!d.inner(&outer(Transport::Ip(47), &ours), &mut out));
        // Truncated anywhere: never a panic, never a frame.
        let whole = outer(Transport::Udp(4789), &ours);
        for n in 0..whole.len() - inner_frame().len() {
            assert!(!d.inner(&whole[..n], &mut out), "cut at {n}");
        }
    }

    #[test]
    fn nvgre_frames_are_read_by_vsid() {
        // RFC 7637 section 3.2: GRE with K bit, protocol 0x6558, VSID (24 bits) + FlowID.
        let d = Decapsulator::new(&profile("nvgre"), 0x1234, &[], Transport::Ip(47)).unwrap();
        let mut tunnel = vec![0x20, 0x00, 0x65, 0x58, 0x00, 0x12, 0x34, 0x00];
        tunnel.extend(inner_frame());
        let mut out = Vec::new();
        assert!(d.inner(&outer(Transport::Ip(47), &tunnel), &mut out));
        assert_eq!(out, inner_frame());
    }

    #[test]
    fn ip_payloads_get_a_made_up_ethernet_header() {
        // IP-in-IP (protocol 4) carries an IPv4 packet; its network's frames are the packets.
        let d = Decapsulator::new(&profile("ipip"), 7, &[], Transport::Ip(4)).unwrap();
        let ip = &inner_frame()[14..];
        let mut out = Vec::new();
        assert!(d.inner(&outer(Transport::Ip(4), ip), &mut out));
        assert_eq!(
            &out[..14],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00]
        );
        assert_eq!(&out[14..], ip);
    }

    #[test]
    fn geneve_frames_come_out_whole() {
        // RFC 8926 section 3.4: version 0, no options, protocol 0x6558, VNI in bytes 4-6.
        let d = Decapsulator::new(&profile("geneve"), 5000, &[], Transport::Udp(6081)).unwrap();
        let v = 5000u32.to_be_bytes();
        let mut tunnel = vec![0x00, 0x00, 0x65, 0x58, v[1], v[2], v[3], 0];
        tunnel.extend(inner_frame());
        let mut out = Vec::new();
        assert!(d.inner(&outer(Transport::Udp(6081), &tunnel), &mut out));
        assert_eq!(out, inner_frame());
    }
}
