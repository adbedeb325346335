//! OpenFlow 1.3's framing (OpenFlow Switch Specification 1.3.5, §7.1) and the numbers this
//! crate speaks: message types, error types and codes, reserved ports, a bounded reader.
//!
//! ```text
//!  0               1               2               3
//!  +---------------+---------------+-------------------------------+
//!  |    version    |     type      |            length             |
//!  +---------------+---------------+-------------------------------+
//!  |                              xid                              |
//!  +---------------------------------------------------------------+
//! ```

/// OpenFlow 1.3's wire version.
pub const VERSION: u8 = 0x04;

/// The header's length.
pub const HEADER: usize = 8;

/// Message types (§7.1, `ofp_type`).
#[allow(missing_docs)]
pub mod msg {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const EXPERIMENTER: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const MULTIPART_REQUEST: u8 = 18;
    pub const MULTIPART_REPLY: u8 = 19;
    pub const BARRIER_REQUEST: u8 = 20;
    pub const BARRIER_REPLY: u8 = 21;
    pub const METER_MOD: u8 = 29;
}

/// Multipart types (§7.3.5, `ofp_multipart_type`).
#[allow(missing_docs)]
pub mod multipart {
    pub const DESC: u16 = 0;
    pub const FLOW: u16 = 1;
    pub const AGGREGATE: u16 = 2;
    pub const TABLE: u16 = 3;
    pub const PORT_STATS: u16 = 4;
    pub const TABLE_FEATURES: u16 = 12;
    pub const PORT_DESC: u16 = 13;
    /// Reply flag: more replies follow.
    pub const REPLY_MORE: u16 = 1;
}

/// Reserved port numbers (§7.2.1, `ofp_port_no`).
#[allow(missing_docs)]
pub mod port {
    pub const MAX: u32 = 0xffff_ff00;
    pub const IN_PORT: u32 = 0xffff_fff8;
    pub const TABLE: u32 = 0xffff_fff9;
    pub const NORMAL: u32 = 0xffff_fffa;
    pub const FLOOD: u32 = 0xffff_fffb;
    pub const ALL: u32 = 0xffff_fffc;
    pub const CONTROLLER: u32 = 0xffff_fffd;
    pub const LOCAL: u32 = 0xffff_fffe;
    pub const ANY: u32 = 0xffff_ffff;
}

/// An `OFPT_ERROR`'s type and code (§7.4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfError {
    /// `ofp_error_type`.
    pub kind: u16,
    /// The code within it.
    pub code: u16,
}

#[allow(missing_docs)]
impl OfError {
    pub const HELLO_INCOMPATIBLE: OfError = OfError::new(0, 0);
    pub const BAD_VERSION: OfError = OfError::new(1, 0);
    pub const BAD_TYPE: OfError = OfError::new(1, 1);
    pub const BAD_MULTIPART: OfError = OfError::new(1, 2);
    pub const BAD_EXPERIMENTER: OfError = OfError::new(1, 3);
    pub const BAD_LEN: OfError = OfError::new(1, 6);
    pub const BUFFER_UNKNOWN: OfError = OfError::new(1, 8);
    pub const BAD_TABLE_ID: OfError = OfError::new(1, 9);
    pub const BAD_PORT: OfError = OfError::new(1, 11);
    pub const BAD_PACKET: OfError = OfError::new(1, 12);
    pub const ACTION_BAD_TYPE: OfError = OfError::new(2, 0);
    pub const ACTION_BAD_LEN: OfError = OfError::new(2, 1);
    pub const ACTION_BAD_EXPERIMENTER: OfError = OfError::new(2, 2);
    pub const ACTION_BAD_OUT_PORT: OfError = OfError::new(2, 4);
    pub const ACTION_BAD_ARGUMENT: OfError = OfError::new(2, 5);
    pub const ACTION_TOO_MANY: OfError = OfError::new(2, 7);
    pub const ACTION_BAD_SET_TYPE: OfError = OfError::new(2, 13);
    pub const ACTION_BAD_SET_LEN: OfError = OfError::new(2, 14);
    pub const ACTION_BAD_SET_ARGUMENT: OfError = OfError::new(2, 15);
    pub const INSTRUCTION_UNKNOWN: OfError = OfError::new(3, 0);
    pub const INSTRUCTION_UNSUPPORTED: OfError = OfError::new(3, 1);
    pub const INSTRUCTION_BAD_LEN: OfError = OfError::new(3, 6);
    pub const MATCH_BAD_TYPE: OfError = OfError::new(4, 0);
    pub const MATCH_BAD_LEN: OfError = OfError::new(4, 1);
    pub const MATCH_BAD_FIELD: OfError = OfError::new(4, 6);
    pub const MATCH_BAD_VALUE: OfError = OfError::new(4, 7);
    pub const MATCH_BAD_MASK: OfError = OfError::new(4, 8);
    pub const MATCH_BAD_PREREQ: OfError = OfError::new(4, 9);
    pub const MATCH_DUP_FIELD: OfError = OfError::new(4, 10);
    pub const FLOW_MOD_UNKNOWN: OfError = OfError::new(5, 0);
    pub const FLOW_MOD_TABLE_FULL: OfError = OfError::new(5, 1);
    pub const FLOW_MOD_BAD_TABLE_ID: OfError = OfError::new(5, 2);
    pub const FLOW_MOD_BAD_COMMAND: OfError = OfError::new(5, 6);
    pub const FLOW_MOD_BAD_FLAGS: OfError = OfError::new(5, 7);

    /// An error of `kind` and `code`.
    pub const fn new(kind: u16, code: u16) -> OfError {
        OfError { kind, code }
    }
}

/// A message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Wire version.
    pub version: u8,
    /// Message type.
    pub kind: u8,
    /// Whole length, header included.
    pub length: u16,
    /// Transaction ID.
    pub xid: u32,
}

impl Header {
    /// The header at the start of `b`, if there are eight bytes.
    pub fn parse(b: &[u8]) -> Option<Header> {
        Some(Header {
            version: *b.first()?,
            kind: *b.get(1)?,
            length: u16::from_be_bytes([*b.get(2)?, *b.get(3)?]),
            xid: u32::from_be_bytes([*b.get(4)?, *b.get(5)?, *b.get(6)?, *b.get(7)?]),
        })
    }
}

/// A bounded big-endian reader: every read past the end is `None`, never a panic.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    b: &'a [u8],
}

#[allow(missing_docs)]
impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b }
    }

    pub fn left(&self) -> usize {
        self.b.len()
    }

    pub fn rest(&self) -> &'a [u8] {
        self.b
    }

    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.b.len() {
            return None;
        }
        let (head, tail) = self.b.split_at(n);
        self.b = tail;
        Some(head)
    }

    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.bytes(n).map(|_| ())
    }

    pub fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    pub fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }

    pub fn u32(&mut self) -> Option<u32> {
        self.bytes(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn u64(&mut self) -> Option<u64> {
        self.bytes(8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_be_bytes(a)
        })
    }
}

/// The number of pad bytes that bring `len` to a multiple of 8.
pub fn pad8(len: usize) -> usize {
    (8 - len % 8) % 8
}

/// A message: the header (its length filled in by [`finish`]) then the body written after.
pub fn start(kind: u8, xid: u32) -> Vec<u8> {
    let mut m = Vec::with_capacity(64);
    m.extend_from_slice(&[VERSION, kind, 0, 0]);
    m.extend_from_slice(&xid.to_be_bytes());
    m
}

/// Writes the message's length into its header.
pub fn finish(mut m: Vec<u8>) -> Vec<u8> {
    let len = u16::try_from(m.len()).unwrap_or(u16::MAX);
    m[2..4].copy_from_slice(&len.to_be_bytes());
    m
}

/// An `OFPT_ERROR` answering `request` (its first 64 bytes, as §7.4.4 asks).
pub fn error(err: OfError, xid: u32, request: &[u8]) -> Vec<u8> {
    let mut m = start(msg::ERROR, xid);
    m.extend_from_slice(&err.kind.to_be_bytes());
    m.extend_from_slice(&err.code.to_be_bytes());
    m.extend_from_slice(&request[..request.len().min(64)]);
    finish(m)
}
