//! A tunnel protocol as data: where its fields sit, what identifies it on receive, what it pushes.
//!
//! A [`Profile`] describes one encapsulation by offsets into its header: the template (the header
//! as sent, with the VNI, entropy and parameters zero), the VNI, receive key and entropy fields,
//! the [`Match`]es a received header must satisfy, how long a received header is
//! ([`HeaderLen`]), what follows it ([`Payload`], or a [`PayloadField`] that says), named
//! [`Param`]s set per network or per destination, and per-packet [`Patch`]es.
//!
//! [`Profile::validate`] is the contract every profile meets before the engine uses it, so that
//! neither encapsulation nor decapsulation has anything left to check but the packet's length:
//!
//! - the name is 1 to [`MAX_NAME_LEN`] characters of `a-z`, `0-9` and `-`;
//! - the template is at most [`MAX_TEMPLATE_LEN`] bytes and every field, match, parameter, patch
//!   and the payload field lies inside it (the template is the minimum header);
//! - fields are 1 to 8 bytes; a match's mask and value have the same length, and the value has
//!   no bit outside the mask (such a match could never hold);
//! - the fields written on encapsulation (VNI, entropy, parameters, patches, payload field) do
//!   not overlap one another, and parameter names are unique;
//! - the header length of the template itself is the template's length ([`HeaderLen::Fixed`]
//!   equals it; a [`HeaderLen::Field`] rule applied to the template gives its length, so the
//!   template's length bits say "minimum header"). `base` may be below the template length
//!   when the field counts the whole header (NSH's Length); received headers claiming less
//!   than the template length are refused as truncated;
//! - a payload field can encode the profile's default payload, and its values are distinct and
//!   fit the field;
//! - the template passes the profile's own matches (with the default payload's value in the
//!   payload field), else the profile would refuse what it sends;
//! - a UDP transport is not port 0.
//!
//! Which transports a *user-defined* profile may use is the engine's rule
//! ([`crate::engine::Engine::add_profile`]), since built-ins are exempt from it.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

/// Longest profile name.
pub const MAX_NAME_LEN: usize = 32;
/// Longest template (minimum header) a profile may have.
pub const MAX_TEMPLATE_LEN: usize = 128;
/// Longest field: values are read and written as `u64`.
pub const MAX_FIELD_LEN: u8 = 8;

/// A profile's index in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ProfileId(pub u16);

impl fmt::Display for ProfileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "profile#{}", self.0)
    }
}

/// How a tunnel's packets travel over the underlay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// UDP to this destination port.
    Udp(u16),
    /// Directly over IP with this protocol number.
    Ip(u8),
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Udp(port) => write!(f, "udp port {port}"),
            Transport::Ip(proto) => write!(f, "ip protocol {proto}"),
        }
    }
}

/// What follows the tunnel header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Payload {
    /// An Ethernet frame (an L2 network).
    Ethernet,
    /// An IPv4 packet.
    Ipv4,
    /// An IPv6 packet.
    Ipv6,
    /// A Network Service Header (RFC 8300).
    Nsh,
}

impl fmt::Display for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Payload::Ethernet => "ethernet",
            Payload::Ipv4 => "ipv4",
            Payload::Ipv6 => "ipv6",
            Payload::Nsh => "nsh",
        })
    }
}

/// A big-endian unsigned integer at bytes `[offset, offset + len)` of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ByteField {
    /// First byte.
    pub offset: u16,
    /// Length in bytes, 1 to 8.
    pub len: u8,
}

impl ByteField {
    /// The field of `len` bytes at `offset`.
    pub const fn new(offset: u16, len: u8) -> ByteField {
        ByteField { offset, len }
    }

    /// The bytes it covers.
    pub fn range(&self) -> Range<usize> {
        let start = usize::from(self.offset);
        start..start + usize::from(self.len)
    }

    /// The largest value it holds.
    pub fn max_value(&self) -> u64 {
        match self.len {
            0 => 0,
            1..=7 => (1u64 << (8 * u32::from(self.len))) - 1,
            _ => u64::MAX,
        }
    }

    /// Whether `value` fits without truncation.
    pub fn fits(&self, value: u64) -> bool {
        value <= self.max_value()
    }

    /// Reads the field; `None` when `bytes` is too short (or the field longer than 8 bytes).
    #[inline]
    pub fn read(&self, bytes: &[u8]) -> Option<u64> {
        if self.len > MAX_FIELD_LEN {
            return None;
        }
        let src = bytes.get(self.range())?;
        Some(src.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// Writes the low `len` bytes of `value`; does nothing when `bytes` is too short (validated
    /// profiles never are).
    #[inline]
    pub fn write(&self, bytes: &mut [u8], value: u64) {
        if self.len > MAX_FIELD_LEN {
            return;
        }
        if let Some(dst) = bytes.get_mut(self.range()) {
            let be = value.to_be_bytes();
            dst.copy_from_slice(&be[be.len() - dst.len()..]);
        }
    }
}

/// A condition on received bytes: `(bytes[offset..] & mask) == value`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Match {
    /// First byte tested.
    pub offset: u16,
    /// Bits tested, one byte per byte of the header.
    pub mask: Vec<u8>,
    /// What the tested bits must be (no bit outside `mask`).
    pub value: Vec<u8>,
}

/// The outcome of testing a [`Match`] against a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchResult {
    /// Every tested bit has its value.
    Holds,
    /// Some tested bit differs.
    Fails,
    /// The packet ends before the tested bytes do.
    Short,
}

impl Match {
    /// A match of `mask` and `value` at `offset`.
    pub fn new(offset: u16, mask: &[u8], value: &[u8]) -> Match {
        Match {
            offset,
            mask: mask.to_vec(),
            value: value.to_vec(),
        }
    }

    /// The bytes it tests.
    pub fn range(&self) -> Range<usize> {
        let start = usize::from(self.offset);
        start..start + self.mask.len()
    }

    /// Tests the match against a received header.
    #[inline]
    pub fn test(&self, bytes: &[u8]) -> MatchResult {
        let Some(src) = bytes.get(self.range()) else {
            return MatchResult::Short;
        };
        let holds = src
            .iter()
            .zip(&self.mask)
            .zip(&self.value)
            .all(|((b, m), v)| b & m == *v);
        if holds && self.mask.len() == self.value.len() {
            MatchResult::Holds
        } else {
            MatchResult::Fails
        }
    }

    /// Whether the match holds (false on a short packet).
    #[inline]
    pub fn holds(&self, bytes: &[u8]) -> bool {
        self.test(bytes) == MatchResult::Holds
    }
}

/// How long a received header is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderLen {
    /// Always this many bytes (the template's length).
    Fixed(u16),
    /// `base + (bytes[offset] & mask) * scale` bytes (Geneve: 8 + 4 × Opt Len).
    Field {
        /// The byte holding the length.
        offset: u16,
        /// Its length bits.
        mask: u8,
        /// Bytes per unit.
        scale: u8,
        /// Bytes counted when the length bits are zero.
        base: u16,
    },
}

impl HeaderLen {
    /// The length of the header at the start of `bytes`; `None` when the length byte is beyond
    /// the end of `bytes`.
    #[inline]
    pub fn of(&self, bytes: &[u8]) -> Option<usize> {
        match *self {
            HeaderLen::Fixed(len) => Some(usize::from(len)),
            HeaderLen::Field {
                offset,
                mask,
                scale,
                base,
            } => {
                let units = bytes.get(usize::from(offset))? & mask;
                Some(usize::from(base) + usize::from(units) * usize::from(scale))
            }
        }
    }
}

/// A header field that names the payload (VXLAN-GPE Next Protocol, Geneve Protocol Type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PayloadField {
    /// Where the value is.
    pub field: ByteField,
    /// The value meaning an Ethernet frame, if the protocol can carry one.
    pub ethernet: Option<u64>,
    /// The value meaning IPv4.
    pub ipv4: Option<u64>,
    /// The value meaning IPv6.
    pub ipv6: Option<u64>,
    /// The value meaning NSH.
    pub nsh: Option<u64>,
}

impl PayloadField {
    /// The value that announces `payload`, if the protocol has one.
    pub fn value(&self, payload: Payload) -> Option<u64> {
        match payload {
            Payload::Ethernet => self.ethernet,
            Payload::Ipv4 => self.ipv4,
            Payload::Ipv6 => self.ipv6,
            Payload::Nsh => self.nsh,
        }
    }

    /// The payload that `value` announces, if any.
    #[inline]
    pub fn payload(&self, value: u64) -> Option<Payload> {
        [
            Payload::Ethernet,
            Payload::Ipv4,
            Payload::Ipv6,
            Payload::Nsh,
        ]
        .into_iter()
        .find(|&p| self.value(p) == Some(value))
    }
}

/// A named header field whose value is set per network or per destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    /// The name used by the API and config (`group`, `dst_node`).
    pub name: String,
    /// Where it is written.
    pub field: ByteField,
}

/// A field rewritten for every packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Patch {
    /// `inner_len + header_len + adjust`, where `header_len` is the pushed header's length.
    Length {
        /// Where it is written.
        field: ByteField,
        /// Added to the length (negative to leave bytes out).
        adjust: i32,
    },
    /// A counter per template (per destination), starting at 0 and wrapping at the field's width.
    Sequence {
        /// Where it is written.
        field: ByteField,
    },
}

impl Patch {
    /// The field it writes.
    pub fn field(&self) -> ByteField {
        match *self {
            Patch::Length { field, .. } | Patch::Sequence { field } => field,
        }
    }
}

/// One encapsulation protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Unique name (`vxlan`, `mytun`).
    pub name: String,
    /// How its packets travel.
    pub transport: Transport,
    /// The header as sent with VNI, entropy and params zero; its length is the minimum header.
    pub template: Vec<u8>,
    /// Where the VNI (or context) goes on encapsulation; read on receive when `key` is `None`.
    pub vni: Option<ByteField>,
    /// The receive lookup key; `None` means the VNI field (and no key at all without one).
    pub key: Option<ByteField>,
    /// Where flow entropy goes (NVGRE FlowID, overlay flow hash).
    pub entropy: Option<ByteField>,
    /// What must hold on receive, else the next profile on the transport is tried.
    pub matches: Vec<Match>,
    /// Length of a received header.
    pub header_len: HeaderLen,
    /// The payload when there is no payload field, and what networks of this profile send.
    pub payload: Payload,
    /// The field naming the payload, if the protocol has one.
    pub payload_field: Option<PayloadField>,
    /// Fields set per network or per destination.
    pub params: Vec<Param>,
    /// Fields rewritten per packet.
    pub patches: Vec<Patch>,
    /// When this holds on receive, the receiver must not learn the inner source (GBP D bit).
    pub dont_learn: Option<Match>,
    /// A one-byte hop count a relay decrements (NSH's service index, the overlay TTL); a
    /// packet that would leave with 0 is dropped instead of relayed.
    pub hop: Option<ByteField>,
}

/// Why a profile is not acceptable. Each names the profile part and the offending values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// The name is empty, too long or has a character outside `a-z0-9-`.
    #[error("profile name {0:?}: use 1 to 32 characters of a-z, 0-9 and -")]
    Name(String),
    /// The template is longer than [`MAX_TEMPLATE_LEN`].
    #[error("profile {profile}: template of {len} bytes is longer than {MAX_TEMPLATE_LEN}")]
    TemplateTooLong {
        /// Profile name.
        profile: String,
        /// Template length.
        len: usize,
    },
    /// A hop field that is not one byte.
    #[error("profile {profile}: the hop field has length {len}; a hop count is 1 byte")]
    HopLen {
        /// Profile name.
        profile: String,
        /// The length given.
        len: u8,
    },
    /// A field's length is outside 1..=8.
    #[error("profile {profile}: {what} has length {len}; fields are 1 to 8 bytes")]
    FieldLen {
        /// Profile name.
        profile: String,
        /// Which part (`vni`, `params[0] (group)`).
        what: String,
        /// The length given.
        len: usize,
    },
    /// A field, match or length byte ends beyond the template.
    #[error("profile {profile}: {what} covers bytes {start}..{end}, beyond the {template_len}-byte template")]
    OutsideTemplate {
        /// Profile name.
        profile: String,
        /// Which part.
        what: String,
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
        /// Template length.
        template_len: usize,
    },
    /// A match's mask and value differ in length, or the value has bits outside the mask.
    #[error("profile {profile}: {what} can never hold (mask {mask}, value {value})")]
    BadMatch {
        /// Profile name.
        profile: String,
        /// Which match.
        what: String,
        /// The mask, in hex.
        mask: String,
        /// The value, in hex.
        value: String,
    },
    /// Two fields written on encapsulation share bytes.
    #[error("profile {profile}: {first} and {second} overlap")]
    Overlap {
        /// Profile name.
        profile: String,
        /// One field.
        first: String,
        /// The other.
        second: String,
    },
    /// Two parameters have the same name, or a name is not `a-z0-9_-`.
    #[error(
        "profile {profile}: parameter name {name:?} is repeated or not made of a-z, 0-9, _ and -"
    )]
    ParamName {
        /// Profile name.
        profile: String,
        /// The parameter name.
        name: String,
    },
    /// The header length rule disagrees with the template.
    #[error("profile {profile}: header length {computed} of the template itself differs from its {template_len} bytes")]
    HeaderLen {
        /// Profile name.
        profile: String,
        /// What the rule gives for the template.
        computed: usize,
        /// Template length.
        template_len: usize,
    },
    /// A [`HeaderLen::Field`] with a zero mask or zero scale (use [`HeaderLen::Fixed`]).
    #[error("profile {profile}: header length field needs a non-zero mask and scale (mask {mask:#04x}, scale {scale})")]
    HeaderLenRule {
        /// Profile name.
        profile: String,
        /// The mask.
        mask: u8,
        /// The scale.
        scale: u8,
    },
    /// The payload field has no value for the default payload, repeats a value or has one too
    /// wide for it.
    #[error("profile {profile}: payload field cannot announce {payload} (values must be distinct, fit {len} bytes, and include the default payload)")]
    PayloadField {
        /// Profile name.
        profile: String,
        /// The default payload.
        payload: Payload,
        /// Field length.
        len: u8,
    },
    /// The template does not pass one of the profile's matches.
    #[error("profile {profile}: the template {template} does not pass {what}; its own packets would be refused")]
    TemplateFailsMatch {
        /// Profile name.
        profile: String,
        /// Which match.
        what: String,
        /// The template, in hex.
        template: String,
    },
    /// UDP port 0.
    #[error("profile {profile}: udp port 0 cannot be listened on")]
    PortZero {
        /// Profile name.
        profile: String,
    },
}

impl Profile {
    /// Whether the profile can carry `payload`: its own, or one its payload field announces.
    pub fn carries(&self, payload: Payload) -> bool {
        self.payload == payload
            || self
                .payload_field
                .is_some_and(|pf| pf.value(payload).is_some())
    }

    /// The field read as the receive key: `key`, else `vni`, else none (an empty key).
    pub fn key_field(&self) -> Option<ByteField> {
        self.key.or(self.vni)
    }

    /// Whether the receive key is the VNI field, so that binding a VNI binds its key.
    pub fn key_is_vni(&self) -> bool {
        self.key.is_none() || self.key == self.vni
    }

    /// The index of the parameter called `name`.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// Checks every rule in the module documentation.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if !valid_name(&self.name, false) || self.name.len() > MAX_NAME_LEN {
            return Err(ProfileError::Name(self.name.clone()));
        }
        if self.template.len() > MAX_TEMPLATE_LEN {
            return Err(ProfileError::TemplateTooLong {
                profile: self.name.clone(),
                len: self.template.len(),
            });
        }
        if self.transport == Transport::Udp(0) {
            return Err(ProfileError::PortZero {
                profile: self.name.clone(),
            });
        }
        let written = self.written_fields();
        let read = [("key", self.key)];
        for (what, field) in written
            .iter()
            .map(|(w, f)| (w.as_str(), Some(*f)))
            .chain(read)
        {
            if let Some(field) = field {
                self.check_field(what, field)?;
            }
        }
        self.check_overlaps(&written)?;
        self.check_params()?;
        for (i, m) in self.matches.iter().enumerate() {
            self.check_match(&format!("matches[{i}]"), m)?;
        }
        self.check_tested_bits_unwritten(&written)?;
        if let Some(m) = &self.dont_learn {
            self.check_match("dont_learn", m)?;
        }
        if let Some(hop) = self.hop {
            self.check_field("hop", hop)?;
            if hop.len != 1 {
                return Err(ProfileError::HopLen {
                    profile: self.name.clone(),
                    len: hop.len,
                });
            }
        }
        self.check_header_len()?;
        self.check_payload_field()?;
        self.check_template_matches()
    }

    /// Every field written on encapsulation, with the name used in errors.
    fn written_fields(&self) -> Vec<(String, ByteField)> {
        let mut fields = Vec::new();
        fields.extend(self.vni.map(|f| ("vni".to_string(), f)));
        fields.extend(self.entropy.map(|f| ("entropy".to_string(), f)));
        fields.extend(
            self.payload_field
                .map(|p| ("payload_field".to_string(), p.field)),
        );
        for (i, p) in self.params.iter().enumerate() {
            fields.push((format!("params[{i}] ({})", p.name), p.field));
        }
        for (i, p) in self.patches.iter().enumerate() {
            fields.push((format!("patches[{i}]"), p.field()));
        }
        fields
    }

    fn check_field(&self, what: &str, field: ByteField) -> Result<(), ProfileError> {
        if field.len == 0 || field.len > MAX_FIELD_LEN {
            return Err(ProfileError::FieldLen {
                profile: self.name.clone(),
                what: what.to_string(),
                len: field.len.into(),
            });
        }
        self.check_inside(what, field.range())
    }

    fn check_inside(&self, what: &str, range: Range<usize>) -> Result<(), ProfileError> {
        if range.end > self.template.len() {
            return Err(ProfileError::OutsideTemplate {
                profile: self.name.clone(),
                what: what.to_string(),
                start: range.start,
                end: range.end,
                template_len: self.template.len(),
            });
        }
        Ok(())
    }

    fn check_overlaps(&self, written: &[(String, ByteField)]) -> Result<(), ProfileError> {
        for (i, (first, a)) in written.iter().enumerate() {
            for (second, b) in &written[i + 1..] {
                let (a, b) = (a.range(), b.range());
                if a.start < b.end && b.start < a.end {
                    return Err(ProfileError::Overlap {
                        profile: self.name.clone(),
                        first: first.clone(),
                        second: second.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    fn check_params(&self) -> Result<(), ProfileError> {
        for (i, p) in self.params.iter().enumerate() {
            let repeated = self.params[..i].iter().any(|q| q.name == p.name);
            if repeated || !valid_name(&p.name, true) || p.name.len() > MAX_NAME_LEN {
                return Err(ProfileError::ParamName {
                    profile: self.name.clone(),
                    name: p.name.clone(),
                });
            }
        }
        Ok(())
    }

    fn check_match(&self, what: &str, m: &Match) -> Result<(), ProfileError> {
        let outside_mask = m.value.iter().zip(&m.mask).any(|(v, k)| v & !k != 0);
        if m.mask.is_empty() || m.mask.len() != m.value.len() || outside_mask {
            return Err(ProfileError::BadMatch {
                profile: self.name.clone(),
                what: what.to_string(),
                mask: hex(&m.mask),
                value: hex(&m.value),
            });
        }
        self.check_inside(what, m.range())
    }

    /// No field written per network or per packet may cover bits the receiver tests: the
    /// template passes the matches and gives the header length (`check_template_matches`,
    /// `check_header_len`), but a VNI, entropy, parameter or patch written over tested bits would
    /// make receivers refuse, or cut at another length, some of what senders send. The payload
    /// field may cover matched bits (its default value is written before the template is
    /// matched), not the header length byte.
    fn check_tested_bits_unwritten(
        &self,
        written: &[(String, ByteField)],
    ) -> Result<(), ProfileError> {
        let overlap = |first: &str, second: String| ProfileError::Overlap {
            profile: self.name.clone(),
            first: first.to_string(),
            second,
        };
        let payload_field = self.payload_field.map(|p| p.field);
        for (what, field) in written {
            if let HeaderLen::Field { offset, .. } = self.header_len {
                if field.range().contains(&usize::from(offset)) {
                    return Err(overlap(what, "header_len".to_string()));
                }
            }
            if Some(*field) == payload_field {
                continue;
            }
            for (i, m) in self.matches.iter().enumerate() {
                let tested = |at: usize| {
                    at.checked_sub(usize::from(m.offset))
                        .and_then(|k| m.mask.get(k))
                        .is_some_and(|&mask| mask != 0)
                };
                if field.range().any(tested) {
                    return Err(overlap(what, format!("matches[{i}]")));
                }
            }
        }
        Ok(())
    }

    fn check_header_len(&self) -> Result<(), ProfileError> {
        if let HeaderLen::Field {
            offset,
            mask,
            scale,
            ..
        } = self.header_len
        {
            if mask == 0 || scale == 0 {
                return Err(ProfileError::HeaderLenRule {
                    profile: self.name.clone(),
                    mask,
                    scale,
                });
            }
            let start = usize::from(offset);
            self.check_inside("header_len", start..start + 1)?;
        }
        let computed = self.header_len.of(&self.template).unwrap_or(usize::MAX);
        if computed != self.template.len() {
            return Err(ProfileError::HeaderLen {
                profile: self.name.clone(),
                computed,
                template_len: self.template.len(),
            });
        }
        Ok(())
    }

    /// The template, with the default payload's value in the payload field, must pass the
    /// profile's own matches: otherwise its receivers would refuse what its senders send.
    fn check_template_matches(&self) -> Result<(), ProfileError> {
        let mut sent = self.template.clone();
        if let Some(pf) = self.payload_field {
            pf.field
                .write(&mut sent, pf.value(self.payload).unwrap_or(0));
        }
        match self.matches.iter().position(|m| !m.holds(&sent)) {
            None => Ok(()),
            Some(i) => Err(ProfileError::TemplateFailsMatch {
                profile: self.name.clone(),
                what: format!("matches[{i}]"),
                template: hex(&self.template),
            }),
        }
    }

    fn check_payload_field(&self) -> Result<(), ProfileError> {
        let Some(pf) = self.payload_field else {
            return Ok(());
        };
        let values: Vec<u64> = [pf.ethernet, pf.ipv4, pf.ipv6, pf.nsh]
            .into_iter()
            .flatten()
            .collect();
        let distinct = values
            .iter()
            .enumerate()
            .all(|(i, v)| !values[..i].contains(v));
        let fit = values.iter().all(|&v| pf.field.fits(v));
        if !distinct || !fit || pf.value(self.payload).is_none() {
            return Err(ProfileError::PayloadField {
                profile: self.name.clone(),
                payload: self.payload,
                len: pf.field.len,
            });
        }
        Ok(())
    }
}

/// Names are lowercase ASCII letters, digits and `-` (and `_` for parameters), not empty.
fn valid_name(name: &str, underscore: bool) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || (underscore && b == b'_')
        })
}

/// Lowercase hex without separators, for error messages and specs.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
