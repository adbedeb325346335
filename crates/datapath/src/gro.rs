//! A GRO buffer from an underlay socket that is one tunnel packet around one large frame,
//! rather than datagrams of one size to split: delivered whole, as a GSO frame.

use std::net::IpAddr;
use std::time::Instant;

use nvo_encap::engine::Target;
use nvo_encap::profile::{Payload, Transport};
use nvo_wire::ports;

use super::forward::{decapsulated, seen_underlay, Forwarder, STT};

impl Forwarder {
    /// A GRO buffer of the socket at `at` that is one tunnel packet around one large frame (a
    /// GSO datagram another kernel tunnelled whole) rather than datagrams to split: its header
    /// decapsulates to a local network and the inner IP packet's length covers the rest of the
    /// buffer. Such a buffer is decapsulated once and its frame delivered whole with its segment
    /// size (`segment`, the inner MSS), so the port or its kernel cuts it; returns false, doing
    /// nothing, for any other buffer (the caller splits it).
    pub fn underlay_gso(
        &mut self,
        at: usize,
        src: IpAddr,
        buffer: &[u8],
        segment: usize,
        now: Instant,
    ) -> bool {
        let Some(transport) = self.core.underlays.at(at).map(|u| u.transport) else {
            return false;
        };
        if transport == STT || transport == Transport::Udp(ports::OVERLAY) {
            return false;
        }
        let core = &mut self.core;
        let Ok(decap) = core.engine.decap(transport, buffer) else {
            return false;
        };
        let (Target::Local { vni }, Payload::Ethernet) = (decap.target, decap.payload) else {
            return false;
        };
        let inner = buffer.get(decap.header_len..).unwrap_or_default();
        let ip_len = match inner.get(12..14) {
            Some([0x08, 0x00]) => inner
                .get(16..18)
                .map(|l| 14 + usize::from(u16::from_be_bytes([l[0], l[1]]))),
            Some([0x86, 0xdd]) => inner
                .get(18..20)
                .map(|l| 54 + usize::from(u16::from_be_bytes([l[0], l[1]]))),
            _ => None,
        };
        if ip_len != Some(inner.len()) {
            return false;
        }
        // A malformed Geneve option list: split, so that the datagram is counted as a drop.
        let Ok(tag) = super::identity::received(
            &core.pipeline,
            (decap.profile, vni, decap.header_len),
            buffer,
        ) else {
            return false;
        };
        core.seen = seen_underlay(src, transport);
        core.seen_vni = Some(vni);
        let d = decapsulated(&decap, src, vni, None);
        let meta = super::csum::punted_meta(inner, u16::try_from(segment).unwrap_or(u16::MAX));
        core.tunnel_ingress(d, tag, buffer.len(), inner, &meta, now);
        true
    }
}
