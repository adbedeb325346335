//! The Ethernet vocabulary every nvo crate shares: MAC addresses, EtherTypes and IP protocol
//! numbers. One definition of each, here, so that a frame's fields mean the same thing in the
//! pipeline, the datapaths, the CLI and the eBPF mirror.

use core::fmt;
use core::str::FromStr;

/// An IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: Mac = Mac([0xff; 6]);
    /// 00:00:00:00:00:00, never a valid source.
    pub const ZERO: Mac = Mac([0; 6]);

    /// The I/G bit (IEEE 802 §8.2): set for group (multicast and broadcast) addresses.
    pub const fn is_multicast(self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// ff:ff:ff:ff:ff:ff.
    pub fn is_broadcast(self) -> bool {
        self == Mac::BROADCAST
    }

    /// 00:00:00:00:00:00.
    pub fn is_zero(self) -> bool {
        self == Mac::ZERO
    }

    /// An individual, non-zero address: the only kind a frame may come from and the only kind an
    /// FDB entry may hold.
    pub fn is_unicast(self) -> bool {
        !self.is_multicast() && !self.is_zero()
    }

    /// The canonical text form (lowercase, colon-separated) without allocating.
    fn write_text(self, out: &mut [u8; 17]) -> &str {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (i, byte) in self.0.iter().enumerate() {
            out[i * 3] = HEX[usize::from(byte >> 4)];
            out[i * 3 + 1] = HEX[usize::from(byte & 0x0f)];
            if i < 5 {
                out[i * 3 + 2] = b':';
            }
        }
        // Every byte written is an ASCII hex digit or a colon.
        core::str::from_utf8(out).unwrap_or_default()
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.write_text(&mut [0; 17]))
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl From<[u8; 6]> for Mac {
    fn from(bytes: [u8; 6]) -> Mac {
        Mac(bytes)
    }
}

impl From<Mac> for smoltcp::wire::EthernetAddress {
    fn from(mac: Mac) -> Self {
        smoltcp::wire::EthernetAddress(mac.0)
    }
}

impl From<smoltcp::wire::EthernetAddress> for Mac {
    fn from(addr: smoltcp::wire::EthernetAddress) -> Mac {
        Mac(addr.0)
    }
}

/// Text that is not a MAC address. It keeps (up to 40 bytes of) the text, so that its message
/// quotes what was given without the crate allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MacParseError {
    text: [u8; 40],
    len: u8,
    cut: bool,
}

impl MacParseError {
    fn new(text: &str) -> MacParseError {
        let mut len = text.len().min(40);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let mut kept = [0; 40];
        kept[..len].copy_from_slice(&text.as_bytes()[..len]);
        MacParseError {
            text: kept,
            // At most 40.
            len: len as u8,
            cut: len < text.len(),
        }
    }

    /// The text that did not parse (its first 40 bytes).
    pub fn text(&self) -> &str {
        core::str::from_utf8(&self.text[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl fmt::Display for MacParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = if self.cut { "…" } else { "" };
        write!(
            f,
            "invalid mac address {:?}{more}: expected six hex octets separated by colons, like 02:00:00:00:00:01",
            self.text()
        )
    }
}

impl fmt::Debug for MacParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MacParseError").field(&self.text()).finish()
    }
}

impl core::error::Error for MacParseError {}

impl FromStr for Mac {
    type Err = MacParseError;

    /// Six hex octets of one or two digits, any case, separated by colons (or by dashes, as
    /// Windows and some vendors write them): `02:00:00:00:00:0a`, `2:0:0:0:0:a`,
    /// `02-00-00-00-00-0A`.
    fn from_str(s: &str) -> Result<Mac, MacParseError> {
        let err = || MacParseError::new(s);
        let sep = if s.contains('-') { '-' } else { ':' };
        let mut out = [0u8; 6];
        let mut parts = s.split(sep);
        for byte in &mut out {
            let part = parts.next().ok_or_else(err)?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(Mac(out))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.write_text(&mut [0; 17]))
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Mac, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Mac;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mac address like 02:00:00:00:00:01")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Mac, E> {
                s.parse().map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// An EtherType (IEEE 802 numbers, as IANA lists them). The named ones are those nvo reads or
/// writes; any other value is `Unknown`. Build one with `From<u16>`, which never makes an
/// `Unknown` of a named value, so that comparing variants compares values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EtherType {
    /// 0x0800, IPv4.
    Ipv4,
    /// 0x0806, ARP.
    Arp,
    /// 0x8100, an IEEE 802.1Q tag (customer VLAN TPID).
    Vlan,
    /// 0x86dd, IPv6.
    Ipv6,
    /// 0x88a8, an IEEE 802.1ad service tag (QinQ outer TPID).
    QinQ,
    /// 0x6558, Transparent Ethernet Bridging: an Ethernet frame follows (GRE, Geneve).
    Teb,
    /// 0x894f, NSH (RFC 8300).
    Nsh,
    /// 0x8847, MPLS unicast.
    Mpls,
    /// Any other value.
    Unknown(u16),
}

impl EtherType {
    /// The number on the wire.
    pub const fn value(self) -> u16 {
        match self {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::Ipv6 => 0x86dd,
            EtherType::QinQ => 0x88a8,
            EtherType::Teb => 0x6558,
            EtherType::Nsh => 0x894f,
            EtherType::Mpls => 0x8847,
            EtherType::Unknown(v) => v,
        }
    }

    /// The type of a number on the wire.
    pub const fn from_value(v: u16) -> EtherType {
        match v {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x86dd => EtherType::Ipv6,
            0x88a8 => EtherType::QinQ,
            0x6558 => EtherType::Teb,
            0x894f => EtherType::Nsh,
            0x8847 => EtherType::Mpls,
            v => EtherType::Unknown(v),
        }
    }

    /// A VLAN tag's TPID (802.1Q or 802.1ad): another tag or the real type follows.
    pub const fn is_vlan_tag(self) -> bool {
        matches!(self, EtherType::Vlan | EtherType::QinQ)
    }
}

impl From<u16> for EtherType {
    fn from(v: u16) -> EtherType {
        EtherType::from_value(v)
    }
}

impl From<EtherType> for u16 {
    fn from(t: EtherType) -> u16 {
        t.value()
    }
}

impl From<EtherType> for smoltcp::wire::EthernetProtocol {
    fn from(t: EtherType) -> Self {
        smoltcp::wire::EthernetProtocol::from(t.value())
    }
}

impl From<smoltcp::wire::EthernetProtocol> for EtherType {
    fn from(p: smoltcp::wire::EthernetProtocol) -> EtherType {
        EtherType::from_value(u16::from(p))
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:04x}", self.value())
    }
}

impl fmt::Debug for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            EtherType::Ipv4 => "Ipv4",
            EtherType::Arp => "Arp",
            EtherType::Vlan => "Vlan",
            EtherType::Ipv6 => "Ipv6",
            EtherType::QinQ => "QinQ",
            EtherType::Teb => "Teb",
            EtherType::Nsh => "Nsh",
            EtherType::Mpls => "Mpls",
            EtherType::Unknown(v) => return write!(f, "Unknown(0x{v:04x})"),
        };
        f.write_str(name)
    }
}

/// IP protocol numbers (IPv4 Protocol, IPv6 Next Header; IANA "Assigned Internet Protocol
/// Numbers") that nvo reads or writes.
pub mod ip_proto {
    /// ICMP (RFC 792).
    pub const ICMP: u8 = 1;
    /// IPv4 in IP (RFC 2003).
    pub const IPIP: u8 = 4;
    /// TCP (RFC 9293).
    pub const TCP: u8 = 6;
    /// UDP (RFC 768).
    pub const UDP: u8 = 17;
    /// IPv6 in IP (RFC 2473).
    pub const IPV6: u8 = 41;
    /// GRE (RFC 2784), which NVGRE rides on.
    pub const GRE: u8 = 47;
    /// ICMPv6 (RFC 4443).
    pub const ICMPV6: u8 = 58;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn mac_text_round_trips_in_canonical_form() {
        for (text, canonical) in [
            ("02:00:00:00:00:0a", "02:00:00:00:00:0a"),
            ("2:0:0:0:0:A", "02:00:00:00:00:0a"),
            ("02-AB-00-00-00-0A", "02:ab:00:00:00:0a"),
        ] {
            let mac: Mac = text.parse().unwrap();
            assert_eq!(mac.to_string(), canonical);
            assert_eq!(canonical.parse::<Mac>().unwrap(), mac);
        }
    }

    #[test]
    fn bad_mac_text_is_refused_and_quoted() {
        for bad in [
            "",
            "02:00:00",
            "02:00:00:00:00:00:00",
            "02:00:00:00:00:zz",
            "002:0:0:0:0:1",
            "02:00:00:00:00:",
            "+2:00:00:00:00:01",
            "02:00-00:00:00:01",
        ] {
            let err = bad.parse::<Mac>().unwrap_err();
            assert_eq!(err.text(), bad);
            assert!(err.to_string().starts_with("invalid mac address"), "{err}");
        }
        let long = "x".repeat(100);
        let err = long.parse::<Mac>().unwrap_err();
        assert_eq!(err.text().len(), 40);
        assert!(err.to_string().contains("…"));
    }

    #[test]
    fn mac_classes() {
        assert!(Mac::BROADCAST.is_multicast() && Mac::BROADCAST.is_broadcast());
        assert!(!Mac::ZERO.is_unicast());
        assert!(Mac([2, 0, 0, 0, 0, 1]).is_unicast());
        assert!(!Mac([1, 0, 0x5e, 0, 0, 1]).is_unicast());
    }

    #[test]
    fn ethertype_values_round_trip_and_unknown_keeps_the_number() {
        for v in [
            0x0800, 0x0806, 0x8100, 0x86dd, 0x88a8, 0x6558, 0x894f, 0x8847, 0x88b5,
        ] {
            assert_eq!(EtherType::from(v).value(), v);
        }
        assert_eq!(EtherType::from(0x88b5), EtherType::Unknown(0x88b5));
        assert_eq!(EtherType::from(0x86dd), EtherType::Ipv6);
        assert!(EtherType::QinQ.is_vlan_tag() && !EtherType::Ipv4.is_vlan_tag());
        assert_eq!(EtherType::Teb.to_string(), "0x6558");
    }
}
