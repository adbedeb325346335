//! What `nvo bgp` refuses before sending anything: a bad value on the command line, or a
//! neighbor change that does not fit the configuration in force.

use std::fmt;
use std::net::IpAddr;

use super::{NEIGHBOR_SYNTAX, NOT_CONFIGURED, VNI_SYNTAX};

/// Which option list a syntax error is in, named with its syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// `--neighbor`.
    Neighbor,
    /// `--vni`.
    Vni,
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Neighbor => write!(f, "a neighbor is {NEIGHBOR_SYNTAX}"),
            Spec::Vni => write!(f, "a network's settings are {VNI_SYNTAX}"),
        }
    }
}

/// A BGP setting refused, with the offending text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BgpError {
    /// Not an AS number.
    #[error("AS number {0:?} is not 1 to 4294967295")]
    Asn(String),
    /// Not a TCP port.
    #[error("port {0:?} is not 1 to 65535")]
    Port(String),
    /// 0.0.0.0 as router id.
    #[error(
        "router id 0.0.0.0 is not a BGP identifier; use a nonzero IPv4 address \
         unique among the speakers"
    )]
    RouterIdZero,
    /// A router id that is not an IPv4 address.
    #[error("router id {0:?} is not an IPv4 address (a BGP identifier is written as one)")]
    RouterId(String),
    /// A hold time of 1, 2 or not a number.
    #[error("hold time {0:?} is not 0 (no keepalives) or 3 to 65535 seconds")]
    HoldTime(String),
    /// An RD or RT without a colon.
    #[error("{what} {text:?} is not ASN:N or IPv4:N")]
    AdminSyntax {
        /// "rd", "rt", "import-rt", "export-rt".
        what: String,
        /// The value.
        text: String,
    },
    /// An RD or RT whose number is not a number.
    #[error("{what} {text:?}: {number:?} is not a number 0 to 4294967295")]
    AdminNumber {
        /// "rd", "rt", ...
        what: String,
        /// The value.
        text: String,
        /// Its number part.
        number: String,
    },
    /// An RD or RT after an IPv4 address with a number over 65535.
    #[error("{what} {text:?}: after an IPv4 address the number is 0 to 65535")]
    AdminIpv4Number {
        /// "rd", "rt", ...
        what: String,
        /// The value.
        text: String,
    },
    /// An RD or RT whose administrator part is neither an AS number nor an IPv4 address.
    #[error("{what} {text:?}: {admin:?} is neither an AS number nor an IPv4 address")]
    AdminAs {
        /// "rd", "rt", ...
        what: String,
        /// The value.
        text: String,
        /// Its administrator part.
        admin: String,
    },
    /// An RD or RT with a 4-octet AS and a number over 65535.
    #[error("{what} {text:?}: after a 4-octet AS number (over 65535) the number is 0 to 65535")]
    AdminFourOctetNumber {
        /// "rd", "rt", ...
        what: String,
        /// The value.
        text: String,
    },
    /// `key` without `=value`.
    #[error("{0} needs a value, {0}=...")]
    NeedsValue(String),
    /// A flag given a value.
    #[error("{key} takes no value (got {key}={value})")]
    TakesNoValue {
        /// The flag.
        key: String,
        /// The value given.
        value: String,
    },
    /// An option given twice.
    #[error("{0} given twice")]
    Twice(String),
    /// A neighbor that is not an IP address.
    #[error("{0:?} is not an IP address; {spec}", spec = Spec::Neighbor)]
    NeighborAddress(String),
    /// Not a VNI.
    #[error("{0:?} is not a VNI (1 to 16777215); {spec}", spec = Spec::Vni)]
    Vni(String),
    /// Two commas in a row, or one at the end.
    #[error("empty option (a stray comma?); {0}")]
    EmptyOption(Spec),
    /// An option nvo does not know.
    #[error("unknown option {key:?}; {spec}")]
    UnknownOption {
        /// The option.
        key: String,
        /// Where.
        spec: Spec,
    },
    /// `--neighbor` twice with one address.
    #[error("neighbor {0} given twice")]
    NeighborTwice(IpAddr),
    /// `--vni` twice with one VNI.
    #[error("--vni {0} given twice")]
    VniTwice(u32),
    /// `neighbor add` of one there already.
    #[error("bgp already has neighbor {0}; to change it: nvo bgp neighbor del {0}, then add it")]
    NeighborExists(IpAddr),
    /// `neighbor del` of one not there.
    #[error("bgp has no neighbor {address}; its neighbors: {neighbors}")]
    NoNeighbor {
        /// The address given.
        address: IpAddr,
        /// The neighbors there, as a list.
        neighbors: String,
    },
    /// A password file that cannot be used.
    #[error("password file {path}: {reason}")]
    PasswordFile {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// `neighbor add/del` without a BGP configuration.
    #[error("{NOT_CONFIGURED}")]
    NotConfigured,
}
