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

use crate::field::{self, Field, Rest};
use crate::{Error, Result};

mod fields {
    use super::{Field, Rest};
    pub const VERSION: usize = 0;
    pub const APP: usize = 1;
    pub const TTL: usize = 2;
    pub const FLAGS: usize = 3;
    pub const VNI: Field = 4..7;
    pub const RESERVED: usize = 7;
    pub const FLOW_HASH: Field = 8..12;
    pub const DST_NODE: Field = 12..16;
    pub const SRC_NODE: Field = 16..20;
    pub const PAYLOAD: Rest = 20..;
}

/// Length of the overlay header.
pub const HEADER_LEN: usize = fields::PAYLOAD.start;
/// The header version this module reads and writes.
pub const VERSION: u8 = 1;

/// What the payload is (the Application byte, numbered as in ovstack).
#[derive(Debug, PartialEq, Eq, Clone, Copy, Hash)]
pub enum Application {
    /// An Ethernet frame without FCS (7).
    Ethernet,
    /// An IPv4 packet (4).
    Ipv4,
    /// An IPv6 packet (6).
    Ipv6,
    /// Any other number.
    Unknown(u8),
}

impl From<u8> for Application {
    fn from(value: u8) -> Self {
        match value {
            7 => Application::Ethernet,
            4 => Application::Ipv4,
            6 => Application::Ipv6,
            other => Application::Unknown(other),
        }
    }
}

impl From<Application> for u8 {
    fn from(value: Application) -> Self {
        match value {
            Application::Ethernet => 7,
            Application::Ipv4 => 4,
            Application::Ipv6 => 6,
            Application::Unknown(other) => other,
        }
    }
}

impl core::fmt::Display for Application {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Application::Ethernet => f.write_str("ethernet"),
            Application::Ipv4 => f.write_str("ipv4"),
            Application::Ipv6 => f.write_str("ipv6"),
            Application::Unknown(n) => write!(f, "unknown({n})"),
        }
    }
}

/// A read/write wrapper around an overlay header and its payload.
#[derive(Debug, PartialEq, Eq, Clone)]
pub struct OverlayPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> OverlayPacket<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        OverlayPacket { buffer }
    }

    /// Wraps a buffer after checking that it holds a whole header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Ensures that no accessor will panic.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::truncated("overlay header", HEADER_LEN, len));
        }
        Ok(())
    }

    /// Consumes the packet, returning the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The version (1).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[fields::VERSION]
    }

    /// What the payload is.
    pub fn app(&self) -> Application {
        self.buffer.as_ref()[fields::APP].into()
    }

    /// Hops left before a relay must drop the packet.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[fields::TTL]
    }

    /// The flags byte (none defined yet).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[fields::FLAGS]
    }

    /// The 24-bit virtual network identifier.
    pub fn vni(&self) -> u32 {
        field::read_u24(&self.buffer.as_ref()[fields::VNI])
    }

    /// The reserved byte after the VNI.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[fields::RESERVED]
    }

    /// The hash of the inner flow, for path selection at every hop.
    pub fn flow_hash(&self) -> u32 {
        field::read_u32(&self.buffer.as_ref()[fields::FLOW_HASH])
    }

    /// The overlay node the packet is going to.
    pub fn dst_node(&self) -> u32 {
        field::read_u32(&self.buffer.as_ref()[fields::DST_NODE])
    }

    /// The overlay node the packet came from.
    pub fn src_node(&self) -> u32 {
        field::read_u32(&self.buffer.as_ref()[fields::SRC_NODE])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> OverlayPacket<&'a T> {
    /// The carried frame or packet.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[fields::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> OverlayPacket<T> {
    /// Sets the version.
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[fields::VERSION] = value;
    }

    /// Sets the application.
    pub fn set_app(&mut self, value: Application) {
        self.buffer.as_mut()[fields::APP] = value.into();
    }

    /// Sets the TTL.
    pub fn set_ttl(&mut self, value: u8) {
        self.buffer.as_mut()[fields::TTL] = value;
    }

    /// Sets the flags byte.
    pub fn set_flags(&mut self, value: u8) {
        self.buffer.as_mut()[fields::FLAGS] = value;
    }

    /// Sets the VNI (low 24 bits of `value`).
    pub fn set_vni(&mut self, value: u32) {
        field::write_u24(&mut self.buffer.as_mut()[fields::VNI], value);
    }

    /// Sets the reserved byte.
    pub fn set_reserved(&mut self, value: u8) {
        self.buffer.as_mut()[fields::RESERVED] = value;
    }

    /// Sets the flow hash.
    pub fn set_flow_hash(&mut self, value: u32) {
        field::write_u32(&mut self.buffer.as_mut()[fields::FLOW_HASH], value);
    }

    /// Sets the destination node.
    pub fn set_dst_node(&mut self, value: u32) {
        field::write_u32(&mut self.buffer.as_mut()[fields::DST_NODE], value);
    }

    /// Sets the source node.
    pub fn set_src_node(&mut self, value: u32) {
        field::write_u32(&mut self.buffer.as_mut()[fields::SRC_NODE], value);
    }

    /// Takes one hop off the TTL in place, as a relay does before forwarding, and returns the
    /// new value; `None` (and the packet unchanged) when it was already 0 and must be dropped.
    pub fn decrement_ttl(&mut self) -> Option<u8> {
        let ttl = self.ttl().checked_sub(1)?;
        self.set_ttl(ttl);
        Some(ttl)
    }

    /// The carried frame or packet, mutable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[fields::PAYLOAD]
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
        if self.vni > field::U24_MAX {
            return Err(Error::invalid("overlay vni", self.vni.into()));
        }
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
