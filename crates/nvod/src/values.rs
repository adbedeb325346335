//! Checks of single values from the API and the state file (VNI, MAC, address, interface name,
//! MTU), with messages a user can act on. `convert` (the API's and the pipeline's types) and
//! `state` (the state file) both use them; neither needs the other for it.

use std::net::IpAddr;

use nvo_pipeline::{Mac, NetworkSpec, Vni};

/// Smallest tenant MTU nvod accepts: the IPv4 minimum datagram every host must take (RFC 791).
pub const MIN_MTU: u16 = 576;
/// Largest tenant MTU nvod accepts at all (the pipeline's own bound); the underlay usually
/// bounds it lower, see [`check_network_mtu`].
pub const MAX_MTU: u16 = NetworkSpec::MAX_MTU;
/// The profile of a network that names none.
pub const DEFAULT_ENCAP: &str = "vxlan";
/// Longest interface name: IFNAMSIZ (16) minus the terminating NUL.
pub const MAX_IFNAME: usize = 15;

/// A value from the API or the state file that nvod refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// A VNI out of range.
    #[error("vni {0} is out of range; a vni is 1..=16777215")]
    Vni(u32),
    /// A VNI in a path that is not a number.
    #[error("vni {0:?} is not a number; a vni is 1..=16777215")]
    VniText(String),
    /// Not a MAC address.
    #[error(transparent)]
    Mac(#[from] nvo_pipeline::MacParseError),
    /// An IP address in a path that does not parse.
    #[error("{0:?} is not an IP address")]
    Ip(String),
    /// An interface name Linux would refuse.
    #[error("interface name {name:?} is invalid: {why}")]
    Ifname {
        /// The name.
        name: String,
        /// What is wrong.
        why: &'static str,
    },
    /// An MTU out of the absolute range.
    #[error("mtu {0} is out of range; use {MIN_MTU}..={MAX_MTU}")]
    Mtu(u16),
}

/// Checks a VNI.
pub fn check_vni(vni: u32) -> Result<Vni, ValueError> {
    Vni::new(vni).map_err(|_| ValueError::Vni(vni))
}

/// Parses a VNI from a URL path segment.
pub fn parse_vni(text: &str) -> Result<Vni, ValueError> {
    let vni = text
        .parse::<u32>()
        .map_err(|_| ValueError::VniText(text.to_owned()))?;
    check_vni(vni)
}

/// Parses a MAC address (six colon-separated hex octets).
pub fn parse_mac(text: &str) -> Result<Mac, ValueError> {
    Ok(text.parse::<Mac>()?)
}

/// Parses an IP address from a URL path segment.
pub fn parse_ip(text: &str) -> Result<IpAddr, ValueError> {
    text.parse().map_err(|_| ValueError::Ip(text.to_owned()))
}

/// Checks an interface name the way the kernel's `dev_valid_name()` does.
pub fn check_ifname(name: &str) -> Result<(), ValueError> {
    let bad = |why| {
        Err(ValueError::Ifname {
            name: name.to_owned(),
            why,
        })
    };
    if name.is_empty() {
        return bad("it is empty");
    }
    if name.len() > MAX_IFNAME {
        return bad("it is longer than 15 bytes");
    }
    if name == "." || name == ".." {
        return bad("it is . or ..");
    }
    if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
    {
        return bad("it contains '/', ':', a space or a control character");
    }
    Ok(())
}

/// Checks an MTU against the absolute range.
pub fn check_mtu(mtu: u16) -> Result<(), ValueError> {
    if (MIN_MTU..=MAX_MTU).contains(&mtu) {
        Ok(())
    } else {
        Err(ValueError::Mtu(mtu))
    }
}
