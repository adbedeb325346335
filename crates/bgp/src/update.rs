//! UPDATE (RFC 4271 §4.3): withdrawn IPv4 routes, path attributes and IPv4 NLRI.
//!
//! ```text
//! RFC 4271 §4.3, UPDATE (after the header):
//! +-----------------------------------------------------+
//! |   Withdrawn Routes Length (2 octets)                |
//! +-----------------------------------------------------+
//! |   Withdrawn Routes (variable)                       |
//! +-----------------------------------------------------+
//! |   Total Path Attribute Length (2 octets)            |
//! +-----------------------------------------------------+
//! |   Path Attributes (variable)                        |
//! +-----------------------------------------------------+
//! |   Network Layer Reachability Information (variable) |
//! +-----------------------------------------------------+
//! ```
//!
//! Framing errors (lengths that overrun the message, bad prefixes) reset the session
//! (RFC 7606 §5.3); errors inside one attribute carry their own [`Scope`](crate::Scope).
//! A repeated attribute is dropped after its first occurrence (RFC 7606 §3 g), except a
//! repeated MP_REACH_NLRI or MP_UNREACH_NLRI, which resets the session.
//!
//! [`UpdateRepr::parse`] is strict: the first error fails the whole UPDATE. A speaker applying
//! RFC 7606 uses [`UpdateRepr::parse_lenient`] instead, which walks every attribute, leaves the
//! malformed ones out, collects their errors and returns a [`Verdict`]. With
//! [`Verdict::TreatAsWithdraw`] every NLRI the UPDATE carries is still returned (IPv4 NLRI,
//! withdrawn routes, and the MP_REACH/MP_UNREACH attributes when they themselves parsed), so the
//! caller can withdraw all of it (RFC 7606 §2). Framing errors, after which the NLRI cannot be
//! located, stay `Err` (RFC 7606 §5.3, §3 j).

use std::net::Ipv4Addr;

use crate::attribute::{attr_flags, attr_type, AttributeValue, MpReach, MpUnreach, PathAttribute};
use crate::error::{update_subcode as sub, Scope};
use crate::reader::{self, Reader};
use crate::{Error, Result};

/// An IPv4 prefix as carried in UPDATE (RFC 4271 §4.3): bits beyond `len` are kept as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Prefix {
    /// Address.
    pub addr: Ipv4Addr,
    /// Prefix length, 0 to 32.
    pub len: u8,
}

fn parse_prefixes(bytes: &[u8], what: &'static str) -> Result<Vec<Ipv4Prefix>> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    let invalid = |value: u32| Error::Update {
        what,
        value,
        subcode: sub::INVALID_NETWORK,
    };
    while !r.is_empty() {
        let len = r.u8(what)?;
        if len > 32 {
            return Err(invalid(len.into()));
        }
        let bytes = r
            .take(usize::from(len).div_ceil(8), what)
            .map_err(|_| invalid(len.into()))?;
        let mut octets = [0u8; 4];
        octets[..bytes.len()].copy_from_slice(bytes);
        out.push(Ipv4Prefix {
            addr: Ipv4Addr::from(octets),
            len,
        });
    }
    Ok(out)
}

fn emit_prefixes(prefixes: &[Ipv4Prefix], out: &mut Vec<u8>) -> Result<()> {
    for p in prefixes {
        if p.len > 32 {
            return Err(Error::Emit {
                what: "ipv4 prefix length",
                value: p.len.into(),
            });
        }
        out.push(p.len);
        out.extend_from_slice(&p.addr.octets()[..usize::from(p.len).div_ceil(8)]);
    }
    Ok(())
}

/// An UPDATE message body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UpdateRepr {
    /// Withdrawn IPv4 unicast routes.
    pub withdrawn: Vec<Ipv4Prefix>,
    /// Path attributes, first occurrence of each type, in received order.
    pub attributes: Vec<PathAttribute>,
    /// IPv4 unicast NLRI.
    pub nlri: Vec<Ipv4Prefix>,
}

impl UpdateRepr {
    /// Parses an UPDATE body (after the header); the first error fails it.
    pub fn parse(body: &[u8]) -> Result<UpdateRepr> {
        let (withdrawn, attrs, nlri) = split_sections(body)?;
        let mut attributes: Vec<PathAttribute> = Vec::new();
        let mut a = Reader::new(attrs);
        while !a.is_empty() {
            let attr = PathAttribute::parse(&mut a)?;
            let code = attr.value.type_code();
            if attributes.iter().any(|seen| seen.value.type_code() == code) {
                if is_mp(code) {
                    return Err(repeated_mp(code));
                }
                continue;
            }
            attributes.push(attr);
        }
        Ok(UpdateRepr {
            withdrawn: parse_prefixes(withdrawn, "withdrawn routes")?,
            attributes,
            nlri: parse_prefixes(nlri, "nlri")?,
        })
    }

    /// Parses an UPDATE body for RFC 7606 error handling: malformed attributes are left out
    /// and reported in [`ParsedUpdate::errors`], and [`ParsedUpdate::verdict`] says what to do.
    ///
    /// `Err` when the framing is broken (section lengths, MP_REACH/MP_UNREACH overrunning the
    /// attributes section, a bad prefix in the withdrawn routes or NLRI); another attribute
    /// overrunning the section is treat-as-withdraw (RFC 7606 §4): the error is the one
    /// [`UpdateRepr::parse`] would name, always of [`Scope::Session`]. Besides the checks of
    /// `parse`, this applies the RFC 7606 §7 length checks to the attributes this crate keeps
    /// raw (MED, ATOMIC_AGGREGATE, AGGREGATOR, COMMUNITIES). When `parse` succeeds and none of
    /// those checks fails, the result is `parse`'s with no errors and [`Verdict::Accept`].
    pub fn parse_lenient(body: &[u8]) -> Result<ParsedUpdate> {
        let (withdrawn, attrs, nlri) = split_sections(body)?;
        let withdrawn = parse_prefixes(withdrawn, "withdrawn routes")?;
        let nlri = parse_prefixes(nlri, "nlri")?;
        let (attributes, errors) = parse_attributes_lenient(attrs)?;
        let verdict = errors
            .iter()
            .map(|e| Verdict::of(e.scope()))
            .max()
            .unwrap_or(Verdict::Accept);
        Ok(ParsedUpdate {
            update: UpdateRepr {
                withdrawn,
                attributes,
                nlri,
            },
            errors,
            verdict,
        })
    }

    /// Appends the UPDATE body.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        let withdrawn_at = out.len();
        out.extend_from_slice(&[0, 0]);
        emit_prefixes(&self.withdrawn, out)?;
        let len = reader::len_since(
            out,
            withdrawn_at + 2,
            usize::from(u16::MAX),
            "withdrawn length",
        )?;
        reader::patch_u16(out, withdrawn_at, len);
        let attrs_at = out.len();
        out.extend_from_slice(&[0, 0]);
        for attr in &self.attributes {
            attr.emit(out)?;
        }
        let len = reader::len_since(
            out,
            attrs_at + 2,
            usize::from(u16::MAX),
            "attributes length",
        )?;
        reader::patch_u16(out, attrs_at, len);
        emit_prefixes(&self.nlri, out)
    }

    /// The first attribute of a type.
    pub fn attribute(&self, type_code: u8) -> Option<&AttributeValue> {
        self.attributes
            .iter()
            .map(|a| &a.value)
            .find(|v| v.type_code() == type_code)
    }

    /// MP_REACH_NLRI, if present.
    pub fn mp_reach(&self) -> Option<&MpReach> {
        match self.attribute(attr_type::MP_REACH_NLRI) {
            Some(AttributeValue::MpReach(mp)) => Some(mp),
            _ => None,
        }
    }

    /// MP_UNREACH_NLRI, if present.
    pub fn mp_unreach(&self) -> Option<&MpUnreach> {
        match self.attribute(attr_type::MP_UNREACH_NLRI) {
            Some(AttributeValue::MpUnreach(mp)) => Some(mp),
            _ => None,
        }
    }

    /// The first well-known mandatory attribute missing from an UPDATE that announces routes
    /// (RFC 4271 §5: ORIGIN, AS_PATH, NEXT_HOP for IPv4 NLRI, LOCAL_PREF on iBGP). RFC 7606 §3 d
    /// says to treat such an UPDATE as a withdraw. `None` when nothing is announced.
    pub fn missing_mandatory(&self, ibgp: bool) -> Option<u8> {
        if self.nlri.is_empty() && self.mp_reach().is_none() {
            return None;
        }
        let next_hop = !self.nlri.is_empty();
        [
            (attr_type::ORIGIN, true),
            (attr_type::AS_PATH, true),
            (attr_type::NEXT_HOP, next_hop),
            (attr_type::LOCAL_PREF, ibgp),
        ]
        .into_iter()
        .find(|&(code, required)| required && self.attribute(code).is_none())
        .map(|(code, _)| code)
    }

    /// True for an End-of-RIB marker of IPv4 unicast (RFC 4724 §2: an empty UPDATE) or of another
    /// family (an UPDATE holding only an empty MP_UNREACH_NLRI).
    pub fn is_end_of_rib(&self) -> bool {
        if !self.withdrawn.is_empty() || !self.nlri.is_empty() {
            return false;
        }
        match self.attributes.as_slice() {
            [] => true,
            [only] => {
                matches!(&only.value, AttributeValue::MpUnreach(mp) if mp.withdrawn.is_empty())
            }
            _ => false,
        }
    }
}

/// What RFC 7606 §2 tells the receiver to do with an UPDATE; ordered from mildest to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Process the UPDATE; attributes with errors of [`Scope::AttributeDiscard`] were dropped.
    Accept,
    /// Withdraw every route the UPDATE carries: its IPv4 NLRI and withdrawn routes and the NLRI
    /// of its MP_REACH_NLRI and MP_UNREACH_NLRI.
    TreatAsWithdraw,
    /// Send the NOTIFICATION of the first [`Scope::Session`] error and reset the session.
    SessionReset,
}

impl Verdict {
    /// The verdict one error of `scope` calls for.
    pub fn of(scope: Scope) -> Verdict {
        match scope {
            Scope::AttributeDiscard => Verdict::Accept,
            Scope::TreatAsWithdraw => Verdict::TreatAsWithdraw,
            Scope::Session => Verdict::SessionReset,
        }
    }
}

/// An UPDATE parsed by [`UpdateRepr::parse_lenient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUpdate {
    /// The UPDATE without the attributes that had errors.
    pub update: UpdateRepr,
    /// The errors, in received order, each with its [`Scope`].
    pub errors: Vec<Error>,
    /// The worst verdict of the errors; [`Verdict::Accept`] when there are none.
    pub verdict: Verdict,
}

/// COMMUNITIES (RFC 1997), kept raw by this crate.
const COMMUNITIES: u8 = 8;

/// Splits a body into its withdrawn routes, path attributes and NLRI (RFC 4271 §6.3).
fn split_sections(body: &[u8]) -> Result<(&[u8], &[u8], &[u8])> {
    let mut r = Reader::new(body);
    let malformed = |what, value: usize| Error::Update {
        what,
        value: value as u32,
        subcode: sub::MALFORMED_ATTRIBUTE_LIST,
    };
    let withdrawn_len = usize::from(r.u16("withdrawn routes length")?);
    let withdrawn = r
        .take(withdrawn_len, "withdrawn routes")
        .map_err(|_| malformed("withdrawn routes length", withdrawn_len))?;
    let attrs_len = usize::from(r.u16("total path attribute length")?);
    let attrs = r
        .take(attrs_len, "path attributes")
        .map_err(|_| malformed("total path attribute length", attrs_len))?;
    Ok((withdrawn, attrs, r.rest()))
}

fn is_mp(code: u8) -> bool {
    code == attr_type::MP_REACH_NLRI || code == attr_type::MP_UNREACH_NLRI
}

fn repeated_mp(code: u8) -> Error {
    Error::Attribute {
        type_code: code,
        what: "repeated",
        value: 2,
        subcode: sub::MALFORMED_ATTRIBUTE_LIST,
        scope: Scope::Session,
    }
}

/// Walks the attributes section, keeping the good attributes and the errors of the bad ones.
/// Only an attribute whose length overruns the section stops the walk (`Err`).
fn parse_attributes_lenient(attrs: &[u8]) -> Result<(Vec<PathAttribute>, Vec<Error>)> {
    let mut attributes = Vec::new();
    let mut errors = Vec::new();
    let mut seen = [false; 256];
    let mut rest = attrs;
    while !rest.is_empty() {
        let Some((frame, tail)) = attribute_frame_len(rest).and_then(|n| rest.split_at_checked(n))
        else {
            // RFC 7606 §4: the last attribute overruns the attributes (or too few bytes are
            // left for one): treat-as-withdraw, the total attribute length still locates the
            // NLRI. Not when the overrunning attribute is MP_REACH/MP_UNREACH: its routes are
            // lost, so the session resets.
            let code = rest.get(1).copied();
            if code.is_none_or(is_mp) {
                return Err(framing_error(rest));
            }
            errors.push(Error::Attribute {
                type_code: code.unwrap_or_default(),
                what: "length overruns the attributes",
                value: rest.len() as u32,
                subcode: sub::ATTRIBUTE_LENGTH,
                scope: Scope::TreatAsWithdraw,
            });
            break;
        };
        rest = tail;
        let code = frame.get(1).copied().unwrap_or_default();
        let first = !seen[usize::from(code)];
        seen[usize::from(code)] = true;
        if !first {
            // RFC 7606 §3 g: later copies are discarded unchecked, but MP_* ones reset.
            if is_mp(code) {
                errors.push(repeated_mp(code));
            }
            continue;
        }
        match PathAttribute::parse(&mut Reader::new(frame)).and_then(check_raw_length) {
            Ok(attr) => attributes.push(attr),
            Err(e) => errors.push(e),
        }
    }
    Ok((attributes, errors))
}

/// The length of the attribute at the start of `bytes` with its header, if it fits.
fn attribute_frame_len(bytes: &[u8]) -> Option<usize> {
    let flags = *bytes.first()?;
    let (header, len) = if flags & attr_flags::EXTENDED_LENGTH != 0 {
        let len = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
        (4, usize::from(len))
    } else {
        (3, usize::from(*bytes.get(2)?))
    };
    Some(header + len).filter(|&total| total <= bytes.len())
}

/// The error the strict parser names for an attribute that does not fit in `rest`.
fn framing_error(rest: &[u8]) -> Error {
    match PathAttribute::parse(&mut Reader::new(rest)) {
        Err(e) => e,
        // Unreachable: the frame did not fit, so the strict parse cannot succeed either.
        Ok(_) => Error::Update {
            what: "total path attribute length",
            value: rest.len() as u32,
            subcode: sub::MALFORMED_ATTRIBUTE_LIST,
        },
    }
}

/// RFC 7606 §7 length checks of the attributes [`PathAttribute::parse`] keeps raw.
fn check_raw_length(attr: PathAttribute) -> Result<PathAttribute> {
    let AttributeValue::Raw { type_code, value } = &attr.value else {
        return Ok(attr);
    };
    let len = value.len();
    let bad = match *type_code {
        // §7.4: MED is 4 octets; a bad one is treat-as-withdraw.
        attr_type::MED => (len != 4).then_some(Scope::TreatAsWithdraw),
        // §7.6: ATOMIC_AGGREGATE is empty; a bad one is discarded.
        attr_type::ATOMIC_AGGREGATE => (len != 0).then_some(Scope::AttributeDiscard),
        // §7.7: AGGREGATOR is 8 octets with 4-octet AS numbers, which nvo always negotiates.
        attr_type::AGGREGATOR => (len != 8).then_some(Scope::AttributeDiscard),
        // §7.8: COMMUNITIES is a non-zero multiple of 4 octets.
        COMMUNITIES => (len == 0 || len % 4 != 0).then_some(Scope::TreatAsWithdraw),
        _ => None,
    };
    match bad {
        None => Ok(attr),
        Some(scope) => Err(Error::Attribute {
            type_code: *type_code,
            what: "length",
            value: len as u32,
            subcode: sub::ATTRIBUTE_LENGTH,
            scope,
        }),
    }
}
