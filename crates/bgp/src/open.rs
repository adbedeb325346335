//! OPEN (RFC 4271 §4.2) with capabilities (RFC 5492): multiprotocol (RFC 4760 §8), route
//! refresh (RFC 2918), graceful restart (RFC 4724 §3) and 4-octet AS (RFC 6793 §3).
//!
//! ```text
//! RFC 4271 §4.2, OPEN (after the header):
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+
//! |    Version    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     My Autonomous System      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Hold Time           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         BGP Identifier                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Opt Parm Len  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |             Optional Parameters (variable)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! RFC 4724 §3, Graceful Restart capability value:
//! +--------------------------------------------------+
//! | Restart Flags (4 bits)                           |
//! | Restart Time in seconds (12 bits)                |
//! +--------------------------------------------------+
//! | Address Family Identifier (16 bits)              |
//! | Subsequent Address Family Identifier (8 bits)    |
//! | Flags for Address Family (8 bits)                |
//! +--------------------------------------------------+
//! | ...                                              |
//! ```
//!
//! Only optional parameter type 2 (capabilities) is accepted; others get Unsupported Optional
//! Parameter (RFC 4271 §6.2), as do RFC 9072 extended parameters. Emit writes one capability
//! per optional parameter, as FRR and GoBGP do, so parse→emit is byte-exact for such OPENs.

use std::net::Ipv4Addr;

use crate::reader::{self, Reader};
use crate::{Error, Result};

/// The BGP version this crate speaks.
pub const VERSION: u8 = 4;
/// The AS placed in the 2-octet My AS field when the real AS needs 4 octets (RFC 6793 §9).
pub const AS_TRANS: u16 = 23456;

/// Capability codes (IANA "Capability Codes").
pub mod cap_code {
    /// Multiprotocol Extensions (RFC 4760).
    pub const MULTIPROTOCOL: u8 = 1;
    /// Route Refresh (RFC 2918).
    pub const ROUTE_REFRESH: u8 = 2;
    /// Graceful Restart (RFC 4724).
    pub const GRACEFUL_RESTART: u8 = 64;
    /// 4-octet AS number (RFC 6793).
    pub const FOUR_OCTET_AS: u8 = 65;
}

const PARAM_CAPABILITIES: u8 = 2;

/// OPEN Message Error subcodes (RFC 4271 §6.2, RFC 5492 §5).
pub mod open_subcode {
    /// Unsupported Version Number.
    pub const UNSUPPORTED_VERSION: u8 = 1;
    /// Bad Peer AS.
    pub const BAD_PEER_AS: u8 = 2;
    /// Bad BGP Identifier.
    pub const BAD_BGP_ID: u8 = 3;
    /// Unsupported Optional Parameter.
    pub const UNSUPPORTED_PARAMETER: u8 = 4;
    /// Unacceptable Hold Time.
    pub const UNACCEPTABLE_HOLD_TIME: u8 = 6;
}

/// One address family in a Graceful Restart capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GracefulRestartFamily {
    /// Address family.
    pub afi: u16,
    /// Subsequent address family.
    pub safi: u8,
    /// Flags; bit 0x80 (F) says forwarding state was preserved.
    pub flags: u8,
}

impl GracefulRestartFamily {
    /// The F bit: forwarding state for this family survived the restart.
    pub fn forwarding_preserved(&self) -> bool {
        self.flags & 0x80 != 0
    }
}

/// A capability advertised in OPEN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capability {
    /// Multiprotocol Extensions for one AFI/SAFI (RFC 4760 §8).
    Multiprotocol {
        /// Address family.
        afi: u16,
        /// Subsequent address family.
        safi: u8,
    },
    /// Route Refresh (RFC 2918).
    RouteRefresh,
    /// 4-octet AS support, carrying the speaker's real AS (RFC 6793).
    FourOctetAs(u32),
    /// Graceful Restart (RFC 4724 §3).
    GracefulRestart {
        /// Restart flags, the top 4 bits: 0x8 = R (restarting), 0x4 = N (RFC 8538).
        flags: u8,
        /// Restart time in seconds (12 bits).
        restart_time: u16,
        /// Families whose state is retained.
        families: Vec<GracefulRestartFamily>,
    },
    /// Any other capability, kept as received.
    Unknown {
        /// Capability code.
        code: u8,
        /// Capability value.
        value: Vec<u8>,
    },
}

impl Capability {
    fn parse(code: u8, value: &[u8]) -> Result<Capability> {
        let bad = |len: usize| Error::Open {
            what: "capability length",
            value: u32::from(code) << 16 | len as u32,
            subcode: open_subcode::UNSUPPORTED_PARAMETER,
        };
        let mut r = Reader::new(value);
        let cap = match code {
            cap_code::MULTIPROTOCOL if value.len() == 4 => {
                let afi = r.u16("mp afi")?;
                let _reserved = r.u8("mp reserved")?;
                Capability::Multiprotocol {
                    afi,
                    safi: r.u8("mp safi")?,
                }
            }
            cap_code::ROUTE_REFRESH if value.is_empty() => Capability::RouteRefresh,
            cap_code::FOUR_OCTET_AS if value.len() == 4 => Capability::FourOctetAs(r.u32("as4")?),
            cap_code::GRACEFUL_RESTART
                if value.len() >= 2 && (value.len() - 2).is_multiple_of(4) =>
            {
                let word = r.u16("gr flags")?;
                let mut families = Vec::with_capacity(r.remaining() / 4);
                while !r.is_empty() {
                    families.push(GracefulRestartFamily {
                        afi: r.u16("gr afi")?,
                        safi: r.u8("gr safi")?,
                        flags: r.u8("gr family flags")?,
                    });
                }
                Capability::GracefulRestart {
                    flags: (word >> 12) as u8,
                    restart_time: word & 0x0fff,
                    families,
                }
            }
            cap_code::MULTIPROTOCOL
            | cap_code::ROUTE_REFRESH
            | cap_code::FOUR_OCTET_AS
            | cap_code::GRACEFUL_RESTART => return Err(bad(value.len())),
            _ => Capability::Unknown {
                code,
                value: value.to_vec(),
            },
        };
        Ok(cap)
    }

    fn code(&self) -> u8 {
        match self {
            Capability::Multiprotocol { .. } => cap_code::MULTIPROTOCOL,
            Capability::RouteRefresh => cap_code::ROUTE_REFRESH,
            Capability::FourOctetAs(_) => cap_code::FOUR_OCTET_AS,
            Capability::GracefulRestart { .. } => cap_code::GRACEFUL_RESTART,
            Capability::Unknown { code, .. } => *code,
        }
    }

    fn emit_value(&self, out: &mut Vec<u8>) -> Result<()> {
        match self {
            Capability::Multiprotocol { afi, safi } => {
                out.extend_from_slice(&afi.to_be_bytes());
                out.extend_from_slice(&[0, *safi]);
            }
            Capability::RouteRefresh => {}
            Capability::FourOctetAs(asn) => out.extend_from_slice(&asn.to_be_bytes()),
            Capability::GracefulRestart {
                flags,
                restart_time,
                families,
            } => {
                if *flags > 0x0f || *restart_time > 0x0fff {
                    return Err(Error::Emit {
                        what: "graceful restart flags/time",
                        value: usize::from(*restart_time),
                    });
                }
                let word = u16::from(*flags) << 12 | restart_time;
                out.extend_from_slice(&word.to_be_bytes());
                for f in families {
                    out.extend_from_slice(&f.afi.to_be_bytes());
                    out.extend_from_slice(&[f.safi, f.flags]);
                }
            }
            Capability::Unknown { value, .. } => out.extend_from_slice(value),
        }
        Ok(())
    }
}

/// An OPEN message body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRepr {
    /// The 2-octet My AS field: the AS, or [`AS_TRANS`] when it needs 4 octets.
    pub my_as: u16,
    /// Hold time in seconds: 0 or at least 3.
    pub hold_time: u16,
    /// BGP Identifier.
    pub bgp_id: Ipv4Addr,
    /// Capabilities, in the order received.
    pub capabilities: Vec<Capability>,
}

impl OpenRepr {
    /// An OPEN for `asn`, putting AS_TRANS in My AS when needed and always adding the
    /// 4-octet AS capability (RFC 6793 §3) after `capabilities`.
    pub fn new(asn: u32, hold_time: u16, bgp_id: Ipv4Addr, capabilities: Vec<Capability>) -> Self {
        let mut capabilities = capabilities;
        capabilities.retain(|c| !matches!(c, Capability::FourOctetAs(_)));
        capabilities.push(Capability::FourOctetAs(asn));
        OpenRepr {
            my_as: u16::try_from(asn).unwrap_or(AS_TRANS),
            hold_time,
            bgp_id,
            capabilities,
        }
    }

    /// The speaker's AS: from the 4-octet AS capability when present, else My AS.
    pub fn asn(&self) -> u32 {
        self.capabilities
            .iter()
            .find_map(|c| match c {
                Capability::FourOctetAs(asn) => Some(*asn),
                _ => None,
            })
            .unwrap_or(u32::from(self.my_as))
    }

    /// The AFI/SAFI pairs of the multiprotocol capabilities.
    pub fn families(&self) -> impl Iterator<Item = (u16, u8)> + '_ {
        self.capabilities.iter().filter_map(|c| match c {
            Capability::Multiprotocol { afi, safi } => Some((*afi, *safi)),
            _ => None,
        })
    }

    /// Parses an OPEN body (after the header) and checks RFC 4271 §6.2.
    pub fn parse(body: &[u8]) -> Result<OpenRepr> {
        let mut r = Reader::new(body);
        let version = r.u8("open version")?;
        if version != VERSION {
            return Err(open_error(
                "version",
                version.into(),
                open_subcode::UNSUPPORTED_VERSION,
            ));
        }
        let my_as = r.u16("open my as")?;
        let hold_time = r.u16("open hold time")?;
        let bgp_id = Ipv4Addr::from(r.u32("open bgp identifier")?);
        let params_len = usize::from(r.u8("open optional parameters length")?);
        let mut params = Reader::new(r.take(params_len, "open optional parameters")?);
        if !r.is_empty() {
            // Parameters shorter than the message: RFC 4271 §6.1 Bad Message Length.
            let length = u16::try_from(body.len() + crate::header::HEADER_LEN).unwrap_or(u16::MAX);
            return Err(Error::Length {
                length,
                msg_type: crate::header::msg_type::OPEN,
            });
        }
        let repr = OpenRepr {
            my_as,
            hold_time,
            bgp_id,
            capabilities: parse_params(&mut params)?,
        };
        repr.check()?;
        Ok(repr)
    }

    fn check(&self) -> Result<()> {
        if self.hold_time == 1 || self.hold_time == 2 {
            let subcode = open_subcode::UNACCEPTABLE_HOLD_TIME;
            return Err(open_error("hold time", self.hold_time.into(), subcode));
        }
        // RFC 6286 §2.2: any non-zero identifier; RFC 7607: AS 0 is a Bad Peer AS.
        if self.bgp_id.is_unspecified() {
            return Err(open_error("bgp identifier", 0, open_subcode::BAD_BGP_ID));
        }
        if self.asn() == 0 || self.my_as == 0 {
            return Err(open_error("my as", 0, open_subcode::BAD_PEER_AS));
        }
        Ok(())
    }

    /// Appends the OPEN body. Fails on a hold time of 1 or 2, or a capability over 255 bytes.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        self.check().map_err(|e| match e {
            Error::Open { what, value, .. } => Error::Emit {
                what,
                value: value as usize,
            },
            other => other,
        })?;
        out.push(VERSION);
        out.extend_from_slice(&self.my_as.to_be_bytes());
        out.extend_from_slice(&self.hold_time.to_be_bytes());
        out.extend_from_slice(&self.bgp_id.octets());
        let params_at = out.len();
        out.push(0);
        for cap in &self.capabilities {
            out.extend_from_slice(&[PARAM_CAPABILITIES, 0, cap.code(), 0]);
            let value_at = out.len();
            cap.emit_value(out)?;
            let cap_len = reader::len_since(out, value_at, 253, "capability length")?;
            // Both lengths are at most 253 + 2 and fit in one byte.
            let (cap_len, param_len) = (cap_len as u8, cap_len as u8 + 2);
            if let Some(b) = out.get_mut(value_at - 1) {
                *b = cap_len;
            }
            if let Some(b) = out.get_mut(value_at - 3) {
                *b = param_len;
            }
        }
        let params_len = reader::len_since(out, params_at + 1, 255, "optional parameters length")?;
        if let Some(b) = out.get_mut(params_at) {
            *b = params_len as u8;
        }
        Ok(())
    }
}

fn open_error(what: &'static str, value: u32, subcode: u8) -> Error {
    Error::Open {
        what,
        value,
        subcode,
    }
}

fn parse_params(params: &mut Reader<'_>) -> Result<Vec<Capability>> {
    let mut capabilities = Vec::new();
    while !params.is_empty() {
        let param_type = params.u8("optional parameter type")?;
        let param_len = usize::from(params.u8("optional parameter length")?);
        let value = params.take(param_len, "optional parameter")?;
        if param_type != PARAM_CAPABILITIES {
            let subcode = open_subcode::UNSUPPORTED_PARAMETER;
            return Err(open_error(
                "optional parameter type",
                param_type.into(),
                subcode,
            ));
        }
        let mut caps = Reader::new(value);
        while !caps.is_empty() {
            let code = caps.u8("capability code")?;
            let len = usize::from(caps.u8("capability length")?);
            capabilities.push(Capability::parse(
                code,
                caps.take(len, "capability value")?,
            )?);
        }
    }
    Ok(capabilities)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    fn sample() -> OpenRepr {
        OpenRepr::new(
            4_200_000_001,
            90,
            Ipv4Addr::new(192, 0, 2, 1),
            vec![
                Capability::Multiprotocol { afi: 25, safi: 70 },
                Capability::RouteRefresh,
                Capability::GracefulRestart {
                    flags: 0x8,
                    restart_time: 120,
                    families: vec![GracefulRestartFamily {
                        afi: 25,
                        safi: 70,
                        flags: 0x80,
                    }],
                },
                Capability::Unknown {
                    code: 70,
                    value: vec![],
                },
            ],
        )
    }

    #[test]
    fn four_octet_as_uses_as_trans() {
        let open = sample();
        assert_eq!(open.my_as, AS_TRANS);
        assert_eq!(open.asn(), 4_200_000_001);
        assert_eq!(open.families().collect::<Vec<_>>(), vec![(25, 70)]);
    }

    #[test]
    fn open_round_trip() {
        let msg = Message::Open(sample());
        let mut out = Vec::new();
        msg.emit(&mut out).unwrap();
        let parsed = Message::parse(&out).unwrap();
        assert_eq!(parsed, msg);
        let mut again = Vec::new();
        parsed.emit(&mut again).unwrap();
        assert_eq!(again, out);
    }

    #[test]
    fn several_capabilities_in_one_parameter() {
        // One optional parameter holding route refresh and 4-octet AS 65001.
        let body = [
            4, 0xfd, 0xe9, 0, 90, 10, 0, 0, 1, 10, 2, 8, 2, 0, 65, 4, 0, 0, 0xfd, 0xe9,
        ];
        let open = OpenRepr::parse(&body).unwrap();
        assert_eq!(
            open.capabilities,
            vec![Capability::RouteRefresh, Capability::FourOctetAs(65001)]
        );
    }

    #[test]
    fn rejects_rfc4271_open_errors() {
        let good = [4, 0xfd, 0xe9, 0, 90, 10, 0, 0, 1, 0];
        assert!(OpenRepr::parse(&good).is_ok());
        let cases: [(usize, u8, u8); 4] = [(0, 3, 1), (4, 2, 6), (5, 0, 3), (9, 4, 0)];
        for (at, value, subcode) in cases {
            let mut b = good;
            b[at] = value;
            if at == 5 {
                b[6..9].fill(0);
            }
            let err = OpenRepr::parse(&b).unwrap_err();
            if subcode != 0 {
                assert_eq!(err.notification(), (2, subcode), "byte {at}");
            } else {
                assert!(matches!(err, Error::Truncated { .. }));
            }
        }
        let bad_param = [4, 0xfd, 0xe9, 0, 90, 10, 0, 0, 1, 2, 1, 0];
        assert_eq!(
            OpenRepr::parse(&bad_param).unwrap_err().notification(),
            (2, 4)
        );
    }
}
