//! nvo's routed overlay header, carried over UDP (destination port [`crate::ports::OVERLAY`]).
//!
//! Unlike VXLAN or Geneve, which go from one tunnel endpoint straight to another, this header
//! names the overlay nodes at both ends so that relays can forward it hop by hop: a relay
//! looks up `dst_node`, decrements the TTL ([`OverlayPacket::decrement_ttl`]) and sends the
//! packet on. The flow hash lets every hop choose the same path for a flow without parsing the
//! payload. It descends from the ovstack overlay, whose application numbers it keeps.
//!
//! ```text
//! nvo overlay header, version 1 (20 bytes):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Version (1)  |  Application  |      TTL      |     Flags     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |            VNI (24 bits)                      |   Reserved    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Flow hash                            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     Destination node ID                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Source node ID                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The payload is an Ethernet frame (application 7), an IPv4 packet (4) or an IPv6 packet (6);
//! other application numbers parse as [`Application::Unknown`]. A header whose version is not 1
//! does not parse. No flag is defined yet: the byte is carried as is. The reserved byte is sent
//! as zero and ignored on receipt. dissectors/nvo_overlay.lua shows the header in Wireshark.

use crate::field;
use crate::header::{header, numbered};
use crate::{Error, Result};

/// Length of the overlay header.
pub const HEADER_LEN: usize = 20;
/// The header version this module reads and writes.
pub const VERSION: u8 = 1;

numbered! {
    /// What the payload is (the Application byte, numbered as in ovstack).
    pub enum Application {
        /// An Ethernet frame without FCS (7).
        Ethernet = 7 => "ethernet",
        /// An IPv4 packet (4).
        Ipv4 = 4 => "ipv4",
        /// An IPv6 packet (6).
        Ipv6 = 6 => "ipv6",
    }
    /// Any other number.
    Unknown(u8) => "unknown({})";
}

header! {
    /// A read/write wrapper around an overlay header and its payload.
    pub struct OverlayPacket in layout {
        /// The version (1).
        VERSION @ 0..1 => version / set_version: u8;
        /// What the payload is.
        APP @ 1..2 => app / set_app: Application;
        /// Hops left before a relay must drop the packet.
        TTL @ 2..3 => ttl / set_ttl: u8;
        /// The flags byte (none defined yet).
        FLAGS @ 3..4 => flags / set_flags: u8;
        /// The 24-bit virtual network identifier.
        VNI @ 4..7 => vni / set_vni: u32;
        /// The reserved byte after the VNI.
        RESERVED @ 7..8 => reserved / set_reserved: u8;
        /// The hash of the inner flow, for path selection at every hop.
        FLOW_HASH @ 8..12 => flow_hash / set_flow_hash: u32;
        /// The overlay node the packet is going to.
        DST_NODE @ 12..16 => dst_node / set_dst_node: u32;
        /// The overlay node the packet came from.
        SRC_NODE @ 16..20 => src_node / set_src_node: u32;
    }
    /// Ensures that no accessor will panic.
    check_len("overlay header", HEADER_LEN);
    /// The carried frame or packet.
    payload(at HEADER_LEN);
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> OverlayPacket<T> {
    /// Takes one hop off the TTL in place, as a relay does before forwarding, and returns the
    /// new value; `None` (and the packet unchanged) when it was already 0 and must be dropped.
    pub fn decrement_ttl(&mut self) -> Option<u8> {
        let ttl = self.ttl().checked_sub(1)?;
        self.set_ttl(ttl);
        Some(ttl)
    }
}

/// A high-level representation of an overlay header.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct OverlayRepr {
    /// What the payload is.
    pub app: Application,
    /// Hops left.
    pub ttl: u8,
    /// The flags byte, carried as is.
    pub flags: u8,
    /// The 24-bit VNI.
    pub vni: u32,
    /// Hash of the inner flow.
    pub flow_hash: u32,
    /// Destination overlay node.
    pub dst_node: u32,
    /// Source overlay node.
    pub src_node: u32,
}

impl OverlayRepr {
    /// Parses a checked packet. The version must be 1; the reserved byte is ignored.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &OverlayPacket<&T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::invalid("overlay version", packet.version().into()));
        }
        Ok(OverlayRepr {
            app: packet.app(),
            ttl: packet.ttl(),
            flags: packet.flags(),
            vni: packet.vni(),
            flow_hash: packet.flow_hash(),
            dst_node: packet.dst_node(),
            src_node: packet.src_node(),
        })
    }

    /// Length of the header this representation emits.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into the first `buffer_len()` bytes of the packet.
    ///
    /// Fails (rather than truncating) when the VNI does not fit in 24 bits.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut OverlayPacket<T>) -> Result<()> {
        packet.check_len()?;
        field::check_u24("overlay vni", self.vni)?;
        packet.set_version(VERSION);
        packet.set_app(self.app);
        packet.set_ttl(self.ttl);
        packet.set_flags(self.flags);
        packet.set_vni(self.vni);
        packet.set_reserved(0);
        packet.set_flow_hash(self.flow_hash);
        packet.set_dst_node(self.dst_node);
        packet.set_src_node(self.src_node);
        Ok(())
    }
}

impl core::fmt::Display for OverlayRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "overlay app={} vni={} ttl={} {} <- {} hash={:#010x}",
            self.app, self.vni, self.ttl, self.dst_node, self.src_node, self.flow_hash
        )?;
        if self.flags != 0 {
            write!(f, " flags={:#04x}", self.flags)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    // The header of overlay_sample() in tests/vectors/gen_scapy.py, which packs
    // struct.pack("!BBBBIIII", 1, 7, 16, 0, 1000 << 8, 0xCAFEF00D, 3, 1) (the sample capture
    // samples/tunnels.pcap carries it). crates/wire/tests/overlay.rs checks that Wireshark,
    // with dissectors/nvo_overlay.lua, reads what this module writes.
    #[rustfmt::skip]
    static SAMPLE: [u8; 20] = [
        0x01, 0x07, 0x10, 0x00, // version 1, ethernet, ttl 16, flags 0
        0x00, 0x03, 0xe8, 0x00, // vni 1000, reserved
        0xca, 0xfe, 0xf0, 0x0d, // flow hash
        0x00, 0x00, 0x00, 0x03, // destination node 3
        0x00, 0x00, 0x00, 0x01, // source node 1
    ];

    fn sample_repr() -> OverlayRepr {
        OverlayRepr {
            app: Application::Ethernet,
            ttl: 16,
            flags: 0,
            vni: 1000,
            flow_hash: 0xcafe_f00d,
            dst_node: 3,
            src_node: 1,
        }
    }

    #[test]
    fn deconstruct_sample() {
        let p = OverlayPacket::new_checked(&SAMPLE[..]).unwrap();
        assert_eq!(p.version(), 1);
        assert_eq!(p.app(), Application::Ethernet);
        assert_eq!((p.ttl(), p.flags(), p.reserved()), (16, 0, 0));
        assert_eq!(p.vni(), 1000);
        assert_eq!(p.flow_hash(), 0xcafe_f00d);
        assert_eq!((p.dst_node(), p.src_node()), (3, 1));
        assert!(p.payload().is_empty());
        assert_eq!(OverlayRepr::parse(&p), Ok(sample_repr()));
    }

    #[test]
    fn construct_and_round_trip() {
        let mut buf = [0xffu8; 20];
        sample_repr()
            .emit(&mut OverlayPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(buf, SAMPLE);
        let repr = OverlayRepr {
            app: Application::Unknown(200),
            ttl: 0,
            flags: 0x81,
            vni: 0xff_ffff,
            flow_hash: 0,
            dst_node: u32::MAX,
            src_node: 0x0102_0304,
        };
        repr.emit(&mut OverlayPacket::new_unchecked(&mut buf[..]))
            .unwrap();
        assert_eq!(&buf[..8], &[0x01, 200, 0x00, 0x81, 0xff, 0xff, 0xff, 0x00]);
        let again = OverlayRepr::parse(&OverlayPacket::new_checked(&buf[..]).unwrap());
        assert_eq!(again, Ok(repr));
    }

    #[test]
    fn application_numbers() {
        for (n, app) in [
            (7, Application::Ethernet),
            (4, Application::Ipv4),
            (6, Application::Ipv6),
            (0, Application::Unknown(0)),
            (41, Application::Unknown(41)),
        ] {
            assert_eq!(Application::from(n), app);
            assert_eq!(u8::from(app), n);
        }
    }

    #[test]
    fn decrement_ttl_stops_at_zero() {
        let mut buf = SAMPLE;
        buf[2] = 2;
        let mut p = OverlayPacket::new_unchecked(&mut buf[..]);
        assert_eq!(p.decrement_ttl(), Some(1));
        assert_eq!(p.decrement_ttl(), Some(0));
        assert_eq!(p.decrement_ttl(), None);
        assert_eq!(p.ttl(), 0);
    }

    #[test]
    fn rejects_truncated_and_other_versions() {
        assert_eq!(
            OverlayPacket::new_checked(&SAMPLE[..19]),
            Err(Error::truncated("overlay header", 20, 19))
        );
        for version in [0, 2, 0xff] {
            let mut b = SAMPLE;
            b[0] = version;
            let p = OverlayPacket::new_checked(&b[..]).unwrap();
            assert_eq!(
                OverlayRepr::parse(&p),
                Err(Error::invalid("overlay version", version.into()))
            );
        }
    }

    #[test]
    fn reserved_ignored_on_receipt() {
        let mut b = SAMPLE;
        b[7] = 0xff;
        let repr = OverlayRepr::parse(&OverlayPacket::new_checked(&b[..]).unwrap());
        assert_eq!(repr, Ok(sample_repr()));
    }

    #[test]
    fn emit_rejects_wide_vni_and_short_buffer() {
        let mut buf = [0u8; 20];
        let wide = OverlayRepr {
            vni: 1 << 24,
            ..sample_repr()
        };
        assert!(wide
            .emit(&mut OverlayPacket::new_unchecked(&mut buf[..]))
            .is_err());
        assert!(sample_repr()
            .emit(&mut OverlayPacket::new_unchecked(&mut buf[..19]))
            .is_err());
    }

    #[test]
    fn display() {
        assert_eq!(
            sample_repr().to_string(),
            "overlay app=ethernet vni=1000 ttl=16 3 <- 1 hash=0xcafef00d"
        );
        let r = OverlayRepr {
            app: Application::Unknown(9),
            flags: 1,
            ..sample_repr()
        };
        assert_eq!(
            r.to_string(),
            "overlay app=unknown(9) vni=1000 ttl=16 3 <- 1 hash=0xcafef00d flags=0x01"
        );
    }
}
