//! The constants of the BGP message header (RFC 4271 §4.1), which every message module needs
//! and `message` re-exports.

/// Length of the message header.
pub const HEADER_LEN: usize = 19;
/// Largest message (RFC 4271 §4.1).
pub const MAX_MESSAGE_LEN: usize = 4096;
/// The marker: sixteen bytes of ones.
pub const MARKER: [u8; 16] = [0xff; 16];

/// Message type codes.
pub mod msg_type {
    /// OPEN.
    pub const OPEN: u8 = 1;
    /// UPDATE.
    pub const UPDATE: u8 = 2;
    /// NOTIFICATION.
    pub const NOTIFICATION: u8 = 3;
    /// KEEPALIVE.
    pub const KEEPALIVE: u8 = 4;
    /// ROUTE-REFRESH (RFC 2918).
    pub const ROUTE_REFRESH: u8 = 5;
}
