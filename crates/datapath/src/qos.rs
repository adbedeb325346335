//! QoS profiles on the userspace path (nvo_pipeline::qos): the pipeline polices a port's frames
//! itself in `from_port`; here, a profile that marks DSCP rewrites each IP frame from the port
//! (a copy, in the `untagged` buffer) and sets its tunnel packets' outer TOS to the marked
//! value, and a profile that trusts DSCP sets the outer TOS to the inner packet's.
//!
//! A policer must see every frame of its port, so a policed port is read by nvod's worker 0
//! alone, on either datapath: the kernel path's program comes off a policed veth (frames to it
//! are punted to nvod, as for TAP ports), and with several workers the others stop reading it
//! (`Ports::set_policed`). A virtual port's or a VLAN circuit's reader is its shared port or
//! trunk.

use std::time::Instant;

use nvo_io::FrameMeta;
use nvo_pipeline::qos::{self, QosProfile};
use nvo_pipeline::PortId;

use super::forward::{Core, Seen};
use super::stt_meta::segment_len;

impl Core {
    /// The profile of `port` if it marks or trusts DSCP (its frames take [`Core::qos_frame`]).
    pub(super) fn tos_rule(&self, port: PortId) -> Option<QosProfile> {
        self.pipeline
            .qos(port)
            .filter(|q| q.dscp.is_some() || q.trust)
    }

    /// A frame from `port`, whose QoS profile `q` marks or trusts DSCP.
    pub(super) fn qos_frame(
        &mut self,
        port: PortId,
        q: QosProfile,
        frame: &[u8],
        meta: FrameMeta,
        now: Instant,
    ) {
        self.seen = Seen::Port(port);
        self.seen_vni = None;
        let mut buf = std::mem::take(&mut self.untagged);
        // Only a mark rewrites the frame (a copy); trust reads its TOS where it is.
        let f = match q.dscp {
            Some(dscp) => {
                buf.clear();
                buf.extend_from_slice(frame);
                qos::mark(&mut buf, dscp);
                &buf[..]
            }
            None => frame,
        };
        self.underlays.set_tos_override(ip_tos(f));
        let segment_len = segment_len(f, &meta);
        // Through the flow table (flows.rs), then normal forwarding.
        self.ingress(port, f, &meta, segment_len, now);
        self.underlays.set_tos_override(None);
        self.untagged = buf;
    }
}

/// The TOS (traffic class) of the IPv4 or IPv6 packet in an Ethernet frame (untagged, or with
/// one 802.1Q tag): the outer TOS of its tunnel packets once the frame is marked (or trusted).
pub(super) fn ip_tos(frame: &[u8]) -> Option<u8> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    if ethertype == nvo_pipeline::vlan::TPID_8021Q {
        at += 4;
        ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    }
    let ip = frame.get(at + 2..)?;
    match (ethertype, ip.first()? >> 4) {
        (0x0800, 4) => ip.get(1).copied(),
        (0x86dd, 6) => Some((ip.first()? << 4) | (ip.get(1)? >> 4)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tos_of_ipv4_ipv6_and_tagged_frames() {
        let mut v4 = vec![0u8; 34];
        v4[12..14].copy_from_slice(&[0x08, 0x00]);
        v4[14] = 0x45;
        v4[15] = 0xb8;
        assert_eq!(ip_tos(&v4), Some(0xb8));
        let mut tagged = vec![0u8; 38];
        tagged[12..16].copy_from_slice(&[0x81, 0x00, 0x00, 0x14]);
        tagged[16..18].copy_from_slice(&[0x86, 0xdd]);
        tagged[18] = 0x62;
        tagged[19] = 0x80;
        assert_eq!(ip_tos(&tagged), Some(0x28));
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(ip_tos(&arp), None);
        assert_eq!(ip_tos(&[0u8; 10]), None);
    }
}
