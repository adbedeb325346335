//! The user-facing form of a profile: what config files and the API read and write.
//!
//! ```toml
//! name = "mytun"
//! udp_port = 7777                      # or: ip_protocol = 99
//! template = "0800 0000 0000 0000"     # hex; spaces allowed
//! vni = { offset = 4, len = 3 }
//! entropy = { offset = 7, len = 1 }    # optional; so is key = { … }
//! matches = [{ offset = 0, mask = "08", value = "08" }]
//! header_len = 8                       # optional (default: the template's length), or
//!                                      # { offset = 0, mask = 63, scale = 4, base = 8 }
//! payload = "ethernet"                 # ethernet | ipv4 | ipv6 | nsh
//! payload_field = { offset = 3, len = 1, ethernet = 3, ipv4 = 1 }  # optional
//! params = [{ name = "group", offset = 2, len = 2 }]
//! patches = [{ kind = "length", offset = 2, len = 2, adjust = 0 }, { kind = "sequence", offset = 4, len = 4 }]
//! dont_learn = { offset = 1, mask = "40", value = "40" }
//! ```
//!
//! Unknown keys are refused (a misspelt key must not silently do nothing). [`ProfileSpec::to_profile`]
//! converts and validates ([`crate::profile::Profile::validate`]); errors name the key and the
//! value. `From<&Profile>` goes back, so the API can show every profile, built-ins included, in
//! the same form: `spec → profile → spec` is the identity up to hex spacing and defaults.

use serde::{Deserialize, Serialize};

use crate::profile::{
    hex, ByteField, HeaderLen, Match, Param, Patch, Payload, PayloadField, Profile, ProfileError,
    Transport,
};

/// A profile as configured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    /// Unique name.
    pub name: String,
    /// UDP destination port (exactly one of this and `ip_protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp_port: Option<u16>,
    /// IP protocol number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_protocol: Option<u8>,
    /// The header as sent, in hex (spaces allowed).
    #[serde(default)]
    pub template: String,
    /// Where the VNI goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vni: Option<FieldSpec>,
    /// The receive key, when it is not the VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<FieldSpec>,
    /// Where flow entropy goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entropy: Option<FieldSpec>,
    /// What must hold on receive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<MatchSpec>,
    /// Length of a received header (default: the template's length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_len: Option<HeaderLenSpec>,
    /// What follows the header (default ethernet).
    #[serde(default = "ethernet")]
    pub payload: Payload,
    /// The field naming the payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_field: Option<PayloadFieldSpec>,
    /// Fields set per network or destination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<ParamSpec>,
    /// Fields rewritten per packet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchSpec>,
    /// When this holds on receive, do not learn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dont_learn: Option<MatchSpec>,
    /// A one-byte hop count relays decrement (NSH service index, a TTL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop: Option<FieldSpec>,
}

fn ethernet() -> Payload {
    Payload::Ethernet
}

/// `{ offset, len }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// First byte.
    pub offset: u16,
    /// Bytes, 1 to 8.
    pub len: u8,
}

/// `{ offset, mask, value }`, mask and value in hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSpec {
    /// First byte.
    pub offset: u16,
    /// Bits tested, hex.
    pub mask: String,
    /// Their value, hex.
    pub value: String,
}

/// A fixed length, or `{ offset, mask, scale, base }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HeaderLenSpec {
    /// Always this many bytes.
    Fixed(u16),
    /// `base + (byte & mask) * scale`.
    Field(HeaderLenFieldSpec),
}

/// The variable header length rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderLenFieldSpec {
    /// The byte holding the length.
    pub offset: u16,
    /// Its length bits.
    pub mask: u8,
    /// Bytes per unit.
    pub scale: u8,
    /// Bytes when the length bits are zero.
    pub base: u16,
}

/// `{ offset, len, ethernet?, ipv4?, ipv6?, nsh? }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PayloadFieldSpec {
    /// First byte.
    pub offset: u16,
    /// Bytes.
    pub len: u8,
    /// Value meaning Ethernet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ethernet: Option<u64>,
    /// Value meaning IPv4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<u64>,
    /// Value meaning IPv6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6: Option<u64>,
    /// Value meaning NSH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsh: Option<u64>,
}

/// `{ name, offset, len }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    /// Name used by the API.
    pub name: String,
    /// First byte.
    pub offset: u16,
    /// Bytes.
    pub len: u8,
}

/// `{ kind = "length", offset, len, adjust }` or `{ kind = "sequence", offset, len }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum PatchSpec {
    /// Inner length + header length + adjust.
    Length {
        /// First byte.
        offset: u16,
        /// Bytes.
        len: u8,
        /// Added to the length.
        #[serde(default)]
        adjust: i32,
    },
    /// Per-destination counter.
    Sequence {
        /// First byte.
        offset: u16,
        /// Bytes.
        len: u8,
    },
}

/// Why a spec does not make a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not exactly one of `udp_port` and `ip_protocol`.
    #[error("profile {name}: give exactly one of udp_port and ip_protocol (got udp_port {udp_port:?}, ip_protocol {ip_protocol:?})")]
    Transport {
        /// Profile name.
        name: String,
        /// What was given.
        udp_port: Option<u16>,
        /// What was given.
        ip_protocol: Option<u8>,
    },
    /// A hex string is not hex.
    #[error(
        "profile {name}: {key} = {value:?} is not hex bytes (two digits per byte, spaces allowed)"
    )]
    Hex {
        /// Profile name.
        name: String,
        /// The key (`template`, `matches[0].mask`).
        key: String,
        /// The value given.
        value: String,
    },
    /// The profile it makes breaks a rule.
    #[error(transparent)]
    Invalid(#[from] ProfileError),
}

impl ProfileSpec {
    /// The profile this spec describes, validated.
    pub fn to_profile(&self) -> Result<Profile, SpecError> {
        let transport = match (self.udp_port, self.ip_protocol) {
            (Some(port), None) => Transport::Udp(port),
            (None, Some(proto)) => Transport::Ip(proto),
            (udp_port, ip_protocol) => {
                return Err(SpecError::Transport {
                    name: self.name.clone(),
                    udp_port,
                    ip_protocol,
                })
            }
        };
        let template = self.unhex("template", &self.template)?;
        let matches = self
            .matches
            .iter()
            .enumerate()
            .map(|(i, m)| self.to_match(&format!("matches[{i}]"), m))
            .collect::<Result<Vec<_>, _>>()?;
        let dont_learn = match &self.dont_learn {
            Some(m) => Some(self.to_match("dont_learn", m)?),
            None => None,
        };
        let header_len = match self.header_len {
            None => HeaderLen::Fixed(u16::try_from(template.len()).unwrap_or(u16::MAX)),
            Some(HeaderLenSpec::Fixed(len)) => HeaderLen::Fixed(len),
            Some(HeaderLenSpec::Field(f)) => HeaderLen::Field {
                offset: f.offset,
                mask: f.mask,
                scale: f.scale,
                base: f.base,
            },
        };
        let profile = Profile {
            name: self.name.clone(),
            transport,
            template,
            vni: self.vni.map(field),
            key: self.key.map(field),
            entropy: self.entropy.map(field),
            matches,
            header_len,
            payload: self.payload,
            payload_field: self.payload_field.map(|p| PayloadField {
                field: ByteField::new(p.offset, p.len),
                ethernet: p.ethernet,
                ipv4: p.ipv4,
                ipv6: p.ipv6,
                nsh: p.nsh,
            }),
            params: self
                .params
                .iter()
                .map(|p| Param {
                    name: p.name.clone(),
                    field: ByteField::new(p.offset, p.len),
                })
                .collect(),
            patches: self.patches.iter().map(|p| patch(*p)).collect(),
            dont_learn,
            hop: self.hop.map(field),
        };
        profile.validate()?;
        Ok(profile)
    }

    fn to_match(&self, key: &str, m: &MatchSpec) -> Result<Match, SpecError> {
        Ok(Match {
            offset: m.offset,
            mask: self.unhex(&format!("{key}.mask"), &m.mask)?,
            value: self.unhex(&format!("{key}.value"), &m.value)?,
        })
    }

    fn unhex(&self, key: &str, value: &str) -> Result<Vec<u8>, SpecError> {
        parse_hex(value).ok_or_else(|| SpecError::Hex {
            name: self.name.clone(),
            key: key.to_string(),
            value: value.to_string(),
        })
    }
}

fn field(f: FieldSpec) -> ByteField {
    ByteField::new(f.offset, f.len)
}

fn patch(p: PatchSpec) -> Patch {
    match p {
        PatchSpec::Length {
            offset,
            len,
            adjust,
        } => Patch::Length {
            field: ByteField::new(offset, len),
            adjust,
        },
        PatchSpec::Sequence { offset, len } => Patch::Sequence {
            field: ByteField::new(offset, len),
        },
    }
}

/// Hex digit pairs, whitespace between bytes allowed (not inside one).
fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for group in text.split_whitespace() {
        if group.len() % 2 != 0 {
            return None;
        }
        for pair in group.as_bytes().chunks(2) {
            let s = std::str::from_utf8(pair).ok()?;
            out.push(u8::from_str_radix(s, 16).ok()?);
        }
    }
    Some(out)
}

/// Hex in groups of two bytes, as a header diagram reads: `0800 0000 0000 0000`.
fn spaced_hex(bytes: &[u8]) -> String {
    bytes.chunks(2).map(hex).collect::<Vec<_>>().join(" ")
}

impl From<&Profile> for ProfileSpec {
    fn from(p: &Profile) -> ProfileSpec {
        let (udp_port, ip_protocol) = match p.transport {
            Transport::Udp(port) => (Some(port), None),
            Transport::Ip(proto) => (None, Some(proto)),
        };
        let fs = |f: ByteField| FieldSpec {
            offset: f.offset,
            len: f.len,
        };
        let ms = |m: &Match| MatchSpec {
            offset: m.offset,
            mask: hex(&m.mask),
            value: hex(&m.value),
        };
        let header_len = match p.header_len {
            HeaderLen::Fixed(len) if usize::from(len) == p.template.len() => None,
            HeaderLen::Fixed(len) => Some(HeaderLenSpec::Fixed(len)),
            HeaderLen::Field {
                offset,
                mask,
                scale,
                base,
            } => Some(HeaderLenSpec::Field(HeaderLenFieldSpec {
                offset,
                mask,
                scale,
                base,
            })),
        };
        ProfileSpec {
            name: p.name.clone(),
            udp_port,
            ip_protocol,
            template: spaced_hex(&p.template),
            vni: p.vni.map(fs),
            key: p.key.map(fs),
            entropy: p.entropy.map(fs),
            matches: p.matches.iter().map(ms).collect(),
            header_len,
            payload: p.payload,
            payload_field: p.payload_field.map(|pf| PayloadFieldSpec {
                offset: pf.field.offset,
                len: pf.field.len,
                ethernet: pf.ethernet,
                ipv4: pf.ipv4,
                ipv6: pf.ipv6,
                nsh: pf.nsh,
            }),
            params: p
                .params
                .iter()
                .map(|q| ParamSpec {
                    name: q.name.clone(),
                    offset: q.field.offset,
                    len: q.field.len,
                })
                .collect(),
            patches: p
                .patches
                .iter()
                .map(|q| match *q {
                    Patch::Length { field, adjust } => PatchSpec::Length {
                        offset: field.offset,
                        len: field.len,
                        adjust,
                    },
                    Patch::Sequence { field } => PatchSpec::Sequence {
                        offset: field.offset,
                        len: field.len,
                    },
                })
                .collect(),
            dont_learn: p.dont_learn.as_ref().map(ms),
            hop: p.hop.map(|f| FieldSpec {
                offset: f.offset,
                len: f.len,
            }),
        }
    }
}
