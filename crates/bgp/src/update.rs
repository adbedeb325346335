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

use std::net::Ipv4Addr;

use crate::attribute::{attr_type, AttributeValue, MpReach, MpUnreach, PathAttribute};
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
    /// Parses an UPDATE body (after the header).
    pub fn parse(body: &[u8]) -> Result<UpdateRepr> {
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
        let nlri = r.rest();

        let mut attributes: Vec<PathAttribute> = Vec::new();
        let mut a = Reader::new(attrs);
        while !a.is_empty() {
            let attr = PathAttribute::parse(&mut a)?;
            let code = attr.value.type_code();
            if attributes.iter().any(|seen| seen.value.type_code() == code) {
                if code == attr_type::MP_REACH_NLRI || code == attr_type::MP_UNREACH_NLRI {
                    return Err(Error::Attribute {
                        type_code: code,
                        what: "repeated",
                        value: 2,
                        subcode: sub::MALFORMED_ATTRIBUTE_LIST,
                        scope: Scope::Session,
                    });
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
