//! The BGP message header and the message framing (RFC 4271 §4.1), KEEPALIVE (§4.4),
//! NOTIFICATION (§4.5) and ROUTE-REFRESH (RFC 2918 §3).
//!
//! ```text
//! RFC 4271 §4.1, Message Header Format:
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                                                               +
//! |                           Marker                              |
//! +                                                               +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Length               |      Type     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! A message is at most 4096 bytes (extended messages, RFC 8654, are not supported), so every
//! parse here is bounded by that. [`frame_len`] finds message boundaries in a TCP byte stream;
//! [`Message::parse`] takes exactly one whole message.

use crate::open::OpenRepr;
use crate::reader::{self, Reader};
use crate::update::UpdateRepr;
use crate::{Error, Result};

pub use crate::header::{msg_type, HEADER_LEN, MARKER, MAX_MESSAGE_LEN};

/// The smallest length of each message type (RFC 4271 §4.2–§4.5, RFC 2918 §3).
fn min_len(msg_type: u8) -> Option<usize> {
    match msg_type {
        msg_type::OPEN => Some(29),
        msg_type::UPDATE => Some(23),
        msg_type::NOTIFICATION => Some(21),
        msg_type::KEEPALIVE => Some(19),
        msg_type::ROUTE_REFRESH => Some(23),
        _ => None,
    }
}

/// A read-only view of a message header over a buffer of at least [`HEADER_LEN`] bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HeaderPacket<T> {
    /// Wraps a buffer after checking that it holds a whole header.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let have = buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::truncated("bgp header", HEADER_LEN, have));
        }
        Ok(HeaderPacket { buffer })
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// True when the marker is all ones.
    pub fn marker_valid(&self) -> bool {
        self.bytes().get(..16) == Some(&MARKER[..])
    }

    /// The length field: the whole message, header included.
    pub fn length(&self) -> u16 {
        match self.bytes().get(16..18) {
            Some(&[hi, lo]) => u16::from_be_bytes([hi, lo]),
            _ => 0,
        }
    }

    /// The type field.
    pub fn msg_type(&self) -> u8 {
        self.bytes().get(18).copied().unwrap_or(0)
    }

    /// Checks marker, length range and type (RFC 4271 §6.1) and returns the message length.
    pub fn check(&self) -> Result<usize> {
        if !self.marker_valid() {
            return Err(Error::Marker);
        }
        let (length, msg_type) = (self.length(), self.msg_type());
        let min = min_len(msg_type).ok_or(Error::MessageType(msg_type))?;
        let len = usize::from(length);
        let exact_keepalive = msg_type != msg_type::KEEPALIVE || len == HEADER_LEN;
        if len < min || len > MAX_MESSAGE_LEN || !exact_keepalive {
            return Err(Error::Length { length, msg_type });
        }
        Ok(len)
    }
}

/// The length of the message at the start of a TCP stream buffer, once its header has arrived.
///
/// `Ok(None)` means fewer than [`HEADER_LEN`] bytes are buffered; an error means the stream is
/// unusable and the session must be closed with the NOTIFICATION the error names.
pub fn frame_len(stream: &[u8]) -> Result<Option<usize>> {
    match HeaderPacket::new_checked(stream) {
        Ok(header) => header.check().map(Some),
        Err(_) => Ok(None),
    }
}

/// A NOTIFICATION (RFC 4271 §4.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationRepr {
    /// Error code ([`crate::code`]).
    pub code: u8,
    /// Error subcode.
    pub subcode: u8,
    /// Data, whose meaning depends on code and subcode.
    pub data: Vec<u8>,
}

/// A ROUTE-REFRESH request (RFC 2918 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRefreshRepr {
    /// Address family.
    pub afi: u16,
    /// Reserved byte (the "demarcation" subtype of RFC 7313), kept as received.
    pub subtype: u8,
    /// Subsequent address family.
    pub safi: u8,
}

/// One BGP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// OPEN.
    Open(OpenRepr),
    /// UPDATE.
    Update(UpdateRepr),
    /// NOTIFICATION.
    Notification(NotificationRepr),
    /// KEEPALIVE.
    Keepalive,
    /// ROUTE-REFRESH.
    RouteRefresh(RouteRefreshRepr),
}

impl Message {
    /// Parses exactly one whole message, header included; trailing bytes are an error.
    ///
    /// AS numbers in AS_PATH are read as four octets: nvo always advertises the 4-octet AS
    /// capability (RFC 6793) and does not peer with speakers that lack it.
    pub fn parse(bytes: &[u8]) -> Result<Message> {
        let header = HeaderPacket::new_checked(bytes)?;
        let len = header.check()?;
        if len != bytes.len() {
            return Err(Error::Length {
                length: header.length(),
                msg_type: header.msg_type(),
            });
        }
        let body = bytes.get(HEADER_LEN..).unwrap_or_default();
        match header.msg_type() {
            msg_type::OPEN => OpenRepr::parse(body).map(Message::Open),
            msg_type::UPDATE => UpdateRepr::parse(body).map(Message::Update),
            msg_type::NOTIFICATION => {
                let mut r = Reader::new(body);
                Ok(Message::Notification(NotificationRepr {
                    code: r.u8("notification code")?,
                    subcode: r.u8("notification subcode")?,
                    data: r.rest().to_vec(),
                }))
            }
            msg_type::KEEPALIVE => Ok(Message::Keepalive),
            msg_type::ROUTE_REFRESH => {
                let mut r = Reader::new(body);
                let repr = RouteRefreshRepr {
                    afi: r.u16("route refresh afi")?,
                    subtype: r.u8("route refresh subtype")?,
                    safi: r.u8("route refresh safi")?,
                };
                Ok(Message::RouteRefresh(repr))
            }
            other => Err(Error::MessageType(other)),
        }
    }

    /// The type code of this message.
    pub fn msg_type(&self) -> u8 {
        match self {
            Message::Open(_) => msg_type::OPEN,
            Message::Update(_) => msg_type::UPDATE,
            Message::Notification(_) => msg_type::NOTIFICATION,
            Message::Keepalive => msg_type::KEEPALIVE,
            Message::RouteRefresh(_) => msg_type::ROUTE_REFRESH,
        }
    }

    /// Appends the whole message, header included, to `out`.
    ///
    /// On error (a message over 4096 bytes, a field out of range) `out` is left as it was.
    pub fn emit(&self, out: &mut Vec<u8>) -> Result<()> {
        let start = out.len();
        let result = self.emit_inner(out, start);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn emit_inner(&self, out: &mut Vec<u8>, start: usize) -> Result<()> {
        out.extend_from_slice(&MARKER);
        out.extend_from_slice(&[0, 0, self.msg_type()]);
        match self {
            Message::Open(open) => open.emit(out)?,
            Message::Update(update) => update.emit(out)?,
            Message::Notification(n) => {
                out.extend_from_slice(&[n.code, n.subcode]);
                out.extend_from_slice(&n.data);
            }
            Message::Keepalive => {}
            Message::RouteRefresh(rr) => {
                out.extend_from_slice(&rr.afi.to_be_bytes());
                out.extend_from_slice(&[rr.subtype, rr.safi]);
            }
        }
        let len = reader::len_since(out, start, MAX_MESSAGE_LEN, "bgp message length")?;
        reader::patch_u16(out, start + 16, len);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keepalive() -> Vec<u8> {
        let mut b = vec![0xff; 16];
        b.extend_from_slice(&[0, 19, 4]);
        b
    }

    #[test]
    fn keepalive_round_trip() {
        let mut out = Vec::new();
        Message::Keepalive.emit(&mut out).unwrap();
        assert_eq!(out, keepalive());
        assert_eq!(Message::parse(&out).unwrap(), Message::Keepalive);
        assert_eq!(frame_len(&out[..18]).unwrap(), None);
        assert_eq!(frame_len(&out).unwrap(), Some(19));
    }

    #[test]
    fn header_errors_map_to_rfc4271_notifications() {
        let mut b = keepalive();
        b[3] = 0;
        assert_eq!(Message::parse(&b).unwrap_err().notification(), (1, 1));
        let mut b = keepalive();
        b[17] = 20;
        b.push(0);
        let err = Message::parse(&b).unwrap_err();
        assert_eq!(
            err,
            Error::Length {
                length: 20,
                msg_type: 4
            }
        );
        assert_eq!(err.notification(), (1, 2));
        let mut b = keepalive();
        b[18] = 9;
        assert_eq!(Message::parse(&b).unwrap_err(), Error::MessageType(9));
        let mut b = keepalive();
        b[16] = 0x10; // 4096 + 19
        assert!(matches!(frame_len(&b), Err(Error::Length { .. })));
    }

    #[test]
    fn notification_and_route_refresh_round_trip() {
        for msg in [
            Message::Notification(NotificationRepr {
                code: 6,
                subcode: 2,
                data: vec![1, 2, 3],
            }),
            Message::RouteRefresh(RouteRefreshRepr {
                afi: 25,
                subtype: 0,
                safi: 70,
            }),
        ] {
            let mut out = Vec::new();
            msg.emit(&mut out).unwrap();
            assert_eq!(
                usize::from(u16::from_be_bytes([out[16], out[17]])),
                out.len()
            );
            assert_eq!(Message::parse(&out).unwrap(), msg);
        }
    }

    #[test]
    fn oversized_emit_fails_cleanly() {
        let msg = Message::Notification(NotificationRepr {
            code: 6,
            subcode: 0,
            data: vec![0; 4096],
        });
        let mut out = vec![7];
        assert!(matches!(msg.emit(&mut out), Err(Error::Emit { .. })));
        assert_eq!(out, vec![7]);
    }
}
