//! Addresses as operators type them: CIDR prefixes, parsed with errors that quote the text; MAC
//! addresses are `nvo_wire::Mac` (re-exported here), written back lowercase and colon-separated.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Why an address did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    /// Not ADDRESS/PREFIX.
    #[error("bad cidr {text:?}: {reason}")]
    Cidr {
        /// What was given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

pub use nvo_wire::Mac;

/// An address with a prefix length, `10.0.0.1/24` or `fd00::1/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr {
    /// The address as written (not masked).
    pub addr: IpAddr,
    /// Prefix length, at most 32 (IPv4) or 128 (IPv6).
    pub prefix: u8,
}

impl Cidr {
    /// Bits in an address of this family.
    fn bits(&self) -> u8 {
        if self.addr.is_ipv4() {
            32
        } else {
            128
        }
    }

    /// The address as a number and the prefix's host bits as a mask.
    fn split(&self) -> (u128, u128) {
        let value = match self.addr {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let host_bits = u32::from(self.bits() - self.prefix);
        let host_mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |v| v - 1);
        (value, host_mask)
    }

    fn make(&self, value: u128) -> IpAddr {
        match self.addr {
            // The value came from a 32-bit address with only host bits changed within the mask.
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(value as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(value)),
        }
    }

    /// The `n`th address of the prefix (0 is the network address), or `None` past the end or,
    /// in IPv4 prefixes shorter than /31, at the broadcast address.
    pub fn nth(&self, n: u128) -> Option<IpAddr> {
        let (value, host_mask) = self.split();
        let last = if self.addr.is_ipv4() && self.prefix < 31 {
            host_mask - 1
        } else {
            host_mask
        };
        (n <= last).then(|| self.make((value & !host_mask) | n))
    }

    /// The prefix's network address: the address with its host bits cleared.
    pub fn network(&self) -> IpAddr {
        let (value, host_mask) = self.split();
        self.make(value & !host_mask)
    }

    /// Whether the address is usable by a host: not the network or broadcast address of an
    /// IPv4 prefix shorter than /31.
    pub fn is_host_address(&self) -> bool {
        let (value, host_mask) = self.split();
        let host = value & host_mask;
        !(self.addr.is_ipv4() && self.prefix < 31 && (host == 0 || host == host_mask))
    }
}

impl FromStr for Cidr {
    type Err = AddrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason| AddrError::Cidr {
            text: s.to_owned(),
            reason,
        };
        let (addr, prefix) = s
            .split_once('/')
            .ok_or_else(|| bad("expected ADDRESS/PREFIX, like 10.0.0.1/24"))?;
        let addr: IpAddr = addr.parse().map_err(|_| bad("not an IP address"))?;
        let prefix: u8 = prefix
            .parse()
            .map_err(|_| bad("prefix length is not a number"))?;
        let cidr = Cidr { addr, prefix };
        if prefix > cidr.bits() {
            return Err(bad("prefix length is longer than the address"));
        }
        Ok(cidr)
    }
}

impl TryFrom<String> for Cidr {
    type Error = AddrError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Cidr> for String {
    fn from(c: Cidr) -> String {
        c.to_string()
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_parse_and_reject_what_is_not_one() {
        let c: Cidr = "10.100.0.0/24".parse().unwrap();
        assert_eq!(c.to_string(), "10.100.0.0/24");
        assert_eq!("fd00:100::/64".parse::<Cidr>().unwrap().prefix, 64);
        for (bad, why) in [
            ("10.0.0.1", "ADDRESS/PREFIX"),
            ("10.0.0.300/24", "not an IP address"),
            ("10.0.0.1/33", "longer than the address"),
            ("fd00::1/129", "longer than the address"),
            ("10.0.0.1/x", "not a number"),
        ] {
            let err = bad.parse::<Cidr>().unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(bad), "{err}");
        }
    }

    #[test]
    fn nth_address_stays_inside_the_prefix() {
        let c: Cidr = "10.100.0.7/24".parse().unwrap();
        assert_eq!(c.nth(1), Some("10.100.0.1".parse().unwrap()));
        assert_eq!(c.nth(254), Some("10.100.0.254".parse().unwrap()));
        assert_eq!(c.nth(255), None, "broadcast");
        let c: Cidr = "10.0.0.0/31".parse().unwrap();
        assert_eq!(c.nth(1), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(c.nth(2), None);
        let c: Cidr = "fd00:100::/64".parse().unwrap();
        assert_eq!(c.nth(3), Some("fd00:100::3".parse().unwrap()));
        let c: Cidr = "fd00::5/128".parse().unwrap();
        assert_eq!(c.nth(0), Some("fd00::5".parse().unwrap()));
        assert_eq!(c.nth(1), None);
        let c: Cidr = "::/0".parse().unwrap();
        assert!(c.nth(u128::MAX).is_some());
    }

    #[test]
    fn network_addresses_clear_the_host_bits() {
        let net = |s: &str| s.parse::<Cidr>().unwrap().network().to_string();
        assert_eq!(net("10.1.2.3/24"), "10.1.2.0");
        assert_eq!(net("10.1.2.3/32"), "10.1.2.3");
        assert_eq!(net("10.1.2.3/0"), "0.0.0.0");
        assert_eq!(net("fd00::1:5/112"), "fd00::1:0");
    }

    #[test]
    fn host_addresses() {
        let ok = |s: &str| s.parse::<Cidr>().unwrap().is_host_address();
        assert!(ok("10.0.0.1/24"));
        assert!(!ok("10.0.0.0/24"));
        assert!(!ok("10.0.0.255/24"));
        assert!(ok("10.0.0.0/31"));
        assert!(ok("10.0.0.5/32"));
        assert!(ok("fd00::/64"));
    }
}
