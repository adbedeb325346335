//! What the engine refuses: a received header it cannot take, a relay it cannot make, a
//! profile, binding or parameter it will not hold.

use crate::keys::Target;
use crate::profile::{Payload, ProfileError, ProfileId, Transport};

/// Why a received packet was not decapsulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum DecapError {
    /// No profile uses this transport.
    #[error("no profile on this transport")]
    NoProfile,
    /// No profile's matches hold.
    #[error("no profile matches the header")]
    NoMatch,
    /// The packet ends inside the header.
    #[error("truncated tunnel header")]
    Truncated,
    /// The header names a payload the profile does not know.
    #[error("unknown payload type")]
    UnknownPayload,
    /// No network or next hop is bound to the key.
    #[error("unknown key (vni)")]
    UnknownKey,
}

/// Why a received packet cannot be relayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    /// Its hop count (NSH SI, overlay TTL) is used up.
    #[error("hop count expired")]
    HopExpired,
    /// The header ends before its hop field.
    #[error("header too short for its hop field")]
    Truncated,
    /// No such profile.
    #[error("unknown profile")]
    UnknownProfile,
}

/// Why a control-plane request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// A profile of that name exists.
    #[error("profile {0} already exists")]
    DuplicateName(String),
    /// No profile of that name.
    #[error("no profile named {0}")]
    UnknownProfile(String),
    /// No profile with that id.
    #[error("no profile with id {}", .0 .0)]
    UnknownId(ProfileId),
    /// Built-in profiles stay.
    #[error("profile {0} is built in and cannot be removed")]
    BuiltIn(String),
    /// The profile still has bound keys.
    #[error("profile {profile} is in use by {keys} bound keys; unbind them first")]
    InUse {
        /// Profile name.
        profile: String,
        /// Keys bound.
        keys: usize,
    },
    /// A table is at its limit.
    #[error("{table} table full ({limit} entries)")]
    TableFull {
        /// Which table.
        table: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// The profile breaks a rule.
    #[error(transparent)]
    Invalid(#[from] ProfileError),
    /// The transport belongs to a built-in that is not a plain profile.
    #[error("{transport} is reserved for {by}")]
    TransportTaken {
        /// The transport asked for.
        transport: Transport,
        /// Its owner.
        by: &'static str,
    },
    /// The transport carries no tunnel (ICMP, UDP itself, reserved numbers).
    #[error("{0} cannot carry a tunnel profile")]
    ReservedTransport(Transport),
    /// The VNI does not fit the profile's VNI field.
    #[error("vni {vni} does not fit profile {profile} (at most {max})")]
    VniTooWide {
        /// Profile name.
        profile: String,
        /// The VNI.
        vni: u32,
        /// The largest VNI.
        max: u64,
    },
    /// `bind_local` on a profile whose key is not its VNI.
    #[error("profile {0} is keyed by something other than the vni; use bind_key")]
    KeyNotVni(String),
    /// A raw key of the wrong length.
    #[error("profile {profile} keys are {expected} bytes, got {got}")]
    KeyLength {
        /// Profile name.
        profile: String,
        /// Its key length.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The key already leads somewhere else.
    #[error("key {key} of profile {profile} is already bound to {target:?}")]
    KeyTaken {
        /// Profile name.
        profile: String,
        /// The key, in hex.
        key: String,
        /// Its current target.
        target: Target,
    },
    /// The profile has no parameter of that name.
    #[error("profile {profile} has no parameter {name} (it has: {known})")]
    UnknownParam {
        /// Profile name.
        profile: String,
        /// The name given.
        name: String,
        /// The names it has, comma-separated.
        known: String,
    },
    /// A parameter value is wider than its field.
    #[error("parameter {name} of profile {profile}: {value} does not fit (at most {max})")]
    ParamTooWide {
        /// Profile name.
        profile: String,
        /// Parameter name.
        name: String,
        /// The value.
        value: u64,
        /// The largest value.
        max: u64,
    },
    /// A length patch does not fit its field: the inner packet is too long for the protocol.
    #[error("profile {profile}: length {value} does not fit its field (at most {max})")]
    LengthOverflow {
        /// Profile name.
        profile: String,
        /// The length computed.
        value: i64,
        /// The largest value.
        max: u64,
    },
    /// A network asked for a payload its profile cannot announce.
    #[error("profile {profile} cannot carry {payload:?} payloads")]
    PayloadNotCarried {
        /// The profile.
        profile: String,
        /// The payload.
        payload: Payload,
    },
}
