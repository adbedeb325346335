//! Errors of BGP parsing, shaped for the error handling of RFC 4271 §6 and RFC 7606.
//!
//! Every error names the NOTIFICATION it maps to ([`Error::notification`]) and how far it
//! reaches ([`Error::scope`]): a session reset, or — for a malformed path attribute — the
//! RFC 7606 "treat-as-withdraw" or "attribute discard" approaches, which keep the session up.

/// How far an error reaches (RFC 7606 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The message cannot be trusted: send the NOTIFICATION and reset the session.
    Session,
    /// The UPDATE is framed correctly but one attribute is malformed: withdraw its routes.
    TreatAsWithdraw,
    /// The attribute can be dropped and the UPDATE processed without it.
    AttributeDiscard,
}

/// A BGP wire-format error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Fewer bytes than a field needs.
    #[error("{what} truncated: need {need} bytes, have {have}")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes it needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// The 16-byte marker is not all ones (RFC 4271 §6.1).
    #[error("bgp header marker is not all ones")]
    Marker,
    /// The header length is outside 19..=4096 or the minimum of its type (RFC 4271 §6.1).
    #[error("bgp message length {length} invalid for type {msg_type}")]
    Length {
        /// The length field.
        length: u16,
        /// The type field.
        msg_type: u8,
    },
    /// An unknown message type (RFC 4271 §6.1).
    #[error("bgp message type {0} unknown")]
    MessageType(u8),
    /// An OPEN field with a value we refuse (RFC 4271 §6.2).
    #[error("open {what} {value} unacceptable")]
    Open {
        /// The field: "version", "my as", "hold time", "bgp identifier", "optional parameter".
        what: &'static str,
        /// The offending value.
        value: u32,
        /// The OPEN Message Error subcode.
        subcode: u8,
    },
    /// An UPDATE whose framing (withdrawn, attribute or NLRI lengths) is broken (RFC 4271 §6.3).
    #[error("update {what} malformed (value {value})")]
    Update {
        /// The part that is malformed.
        what: &'static str,
        /// The offending value.
        value: u32,
        /// The UPDATE Message Error subcode.
        subcode: u8,
    },
    /// A malformed path attribute (RFC 4271 §6.3, RFC 7606 §7).
    #[error("path attribute {type_code} malformed: {what} (value {value})")]
    Attribute {
        /// Attribute type code.
        type_code: u8,
        /// What is wrong.
        what: &'static str,
        /// The offending value.
        value: u32,
        /// The UPDATE Message Error subcode.
        subcode: u8,
        /// How far the error reaches.
        scope: Scope,
    },
    /// A message that does not fit in 4096 bytes or a field value too wide to emit.
    #[error("cannot emit {what}: value {value} out of range")]
    Emit {
        /// The field.
        what: &'static str,
        /// The offending value.
        value: usize,
    },
}

/// A result with a BGP [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// NOTIFICATION error codes (RFC 4271 §4.5).
pub mod code {
    /// Message Header Error.
    pub const HEADER: u8 = 1;
    /// OPEN Message Error.
    pub const OPEN: u8 = 2;
    /// UPDATE Message Error.
    pub const UPDATE: u8 = 3;
    /// Hold Timer Expired.
    pub const HOLD_TIMER_EXPIRED: u8 = 4;
    /// Finite State Machine Error.
    pub const FSM: u8 = 5;
    /// Cease.
    pub const CEASE: u8 = 6;

    /// The name of a NOTIFICATION error code, for logs and reports.
    pub fn name(code: u8) -> &'static str {
        match code {
            HEADER => "message header error",
            OPEN => "open message error",
            UPDATE => "update message error",
            HOLD_TIMER_EXPIRED => "hold timer expired",
            FSM => "finite state machine error",
            CEASE => "cease",
            _ => "unknown error code",
        }
    }
}

/// UPDATE Message Error subcodes (RFC 4271 §6.3).
pub mod update_subcode {
    /// Malformed Attribute List.
    pub const MALFORMED_ATTRIBUTE_LIST: u8 = 1;
    /// Unrecognized Well-known Attribute.
    pub const UNRECOGNIZED_WELL_KNOWN: u8 = 2;
    /// Attribute Flags Error.
    pub const ATTRIBUTE_FLAGS: u8 = 4;
    /// Attribute Length Error.
    pub const ATTRIBUTE_LENGTH: u8 = 5;
    /// Invalid ORIGIN Attribute.
    pub const INVALID_ORIGIN: u8 = 6;
    /// Invalid NEXT_HOP Attribute.
    pub const INVALID_NEXT_HOP: u8 = 8;
    /// Optional Attribute Error.
    pub const OPTIONAL_ATTRIBUTE: u8 = 9;
    /// Invalid Network Field.
    pub const INVALID_NETWORK: u8 = 10;
    /// Malformed AS_PATH.
    pub const MALFORMED_AS_PATH: u8 = 11;
}

impl Error {
    pub(crate) fn truncated(what: &'static str, need: usize, have: usize) -> Self {
        Error::Truncated { what, need, have }
    }

    pub(crate) fn attribute(type_code: u8, what: &'static str, value: u32, subcode: u8) -> Self {
        Error::Attribute {
            type_code,
            what,
            value,
            subcode,
            scope: Scope::TreatAsWithdraw,
        }
    }

    /// How far the error reaches (RFC 7606 §2); everything outside a path attribute resets.
    pub fn scope(&self) -> Scope {
        match self {
            Error::Attribute { scope, .. } => *scope,
            _ => Scope::Session,
        }
    }

    /// The attribute type code, for errors inside one path attribute.
    pub fn attribute_type(&self) -> Option<u8> {
        match self {
            Error::Attribute { type_code, .. } => Some(*type_code),
            _ => None,
        }
    }

    /// The (error code, subcode) of the NOTIFICATION this error calls for.
    ///
    /// A truncated field is reported where RFC 4271 §6 puts it for the message being parsed:
    /// callers that know the message type should prefer the specific variants, which the parsers
    /// in this crate produce; a bare `Truncated` maps to Bad Message Length.
    pub fn notification(&self) -> (u8, u8) {
        match self {
            Error::Truncated { .. } | Error::Length { .. } => (code::HEADER, 2),
            Error::Marker => (code::HEADER, 1),
            Error::MessageType(_) => (code::HEADER, 3),
            Error::Open { subcode, .. } => (code::OPEN, *subcode),
            Error::Update { subcode, .. } | Error::Attribute { subcode, .. } => {
                (code::UPDATE, *subcode)
            }
            Error::Emit { .. } => (code::CEASE, 0),
        }
    }
}
