//! One TCP connection carrying BGP messages: framing with [`frame_len`] over a fixed read
//! buffer, parsing (UPDATEs leniently, for RFC 7606), and writes bounded by a timeout.
//!
//! The read buffer holds two maximum-size messages: a message is taken out as soon as it is
//! whole, so a partial one (at most 4096 bytes, the header having been checked) always leaves
//! room to read. [`Conn::recv`] is cancel-safe: bytes read stay in the buffer, so the session
//! can wait on it in `select!` beside its timers.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::message::{msg_type, HEADER_LEN, MAX_MESSAGE_LEN};
use crate::{frame_len, Error, Message, NotificationRepr, ParsedUpdate, UpdateRepr};

const READ_BUF: usize = 2 * MAX_MESSAGE_LEN;

/// A received message.
#[derive(Debug)]
pub(super) enum Incoming {
    /// Anything but an UPDATE.
    Message(Message),
    /// An UPDATE, parsed for RFC 7606.
    Update(ParsedUpdate),
}

impl Incoming {
    pub(super) fn msg_type(&self) -> u8 {
        match self {
            Incoming::Message(m) => m.msg_type(),
            Incoming::Update(_) => msg_type::UPDATE,
        }
    }
}

/// Why a receive ended the connection.
#[derive(Debug)]
pub(super) enum RecvError {
    /// The peer closed the connection.
    Closed,
    /// A socket error.
    Io(io::Error),
    /// A message we cannot accept: answer with the NOTIFICATION it names.
    Decode(Error),
}

impl std::fmt::Display for RecvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecvError::Closed => write!(f, "connection closed by peer"),
            RecvError::Io(e) => write!(f, "connection error: {e}"),
            RecvError::Decode(e) => write!(f, "bad message: {e}"),
        }
    }
}

/// One connection's socket and buffers.
#[derive(Debug)]
pub(super) struct Conn {
    stream: TcpStream,
    buf: Box<[u8]>,
    len: usize,
    out: Vec<u8>,
}

impl Conn {
    pub(super) fn new(stream: TcpStream) -> Self {
        // BGP messages are small and latency matters more than segment count.
        let _ = stream.set_nodelay(true);
        Conn {
            stream,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            len: 0,
            out: Vec::with_capacity(MAX_MESSAGE_LEN),
        }
    }

    /// The next whole message. Cancel-safe.
    pub(super) async fn recv(&mut self) -> Result<Incoming, RecvError> {
        loop {
            if let Some(incoming) = self.take_message().map_err(RecvError::Decode)? {
                return Ok(incoming);
            }
            let Some(free) = self.buf.get_mut(self.len..).filter(|b| !b.is_empty()) else {
                // Unreachable while messages are at most half the buffer; fail safe anyway.
                return Err(RecvError::Decode(Error::Length {
                    length: u16::MAX,
                    msg_type: 0,
                }));
            };
            let n = self.stream.read(free).await.map_err(RecvError::Io)?;
            if n == 0 {
                return Err(RecvError::Closed);
            }
            self.len += n;
        }
    }

    fn take_message(&mut self) -> Result<Option<Incoming>, Error> {
        let filled = self.buf.get(..self.len).unwrap_or_default();
        let Some(n) = frame_len(filled)? else {
            return Ok(None);
        };
        let Some(frame) = filled.get(..n) else {
            return Ok(None);
        };
        let parsed = if frame.get(18) == Some(&msg_type::UPDATE) {
            UpdateRepr::parse_lenient(frame.get(HEADER_LEN..).unwrap_or_default())
                .map(Incoming::Update)
        } else {
            Message::parse(frame).map(Incoming::Message)
        };
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
        parsed.map(Some)
    }

    /// Writes one message, failing after `timeout` (a peer that stops reading).
    pub(super) async fn send(&mut self, message: &Message, timeout: Duration) -> io::Result<()> {
        self.out.clear();
        message
            .emit(&mut self.out)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        match tokio::time::timeout(timeout, self.stream.write_all(&self.out)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("write blocked for {}s", timeout.as_secs()),
            )),
        }
    }

    /// Sends a NOTIFICATION (best effort: the connection is being closed anyway) and closes.
    pub(super) async fn notify_and_close(&mut self, code: u8, subcode: u8, data: Vec<u8>) {
        let notification = Message::Notification(NotificationRepr {
            code,
            subcode,
            data,
        });
        let _ = self.send(&notification, Duration::from_secs(1)).await;
        let _ = self.stream.shutdown().await;
    }
}

/// The data field RFC 4271 §6.1 asks for with a header error.
pub(super) fn notification_data(error: &Error) -> Vec<u8> {
    match error {
        Error::Length { length, .. } => length.to_be_bytes().to_vec(),
        Error::MessageType(t) => vec![*t],
        // §6.2: Unsupported Version Number carries the largest version we support.
        Error::Open { subcode: 1, .. } => vec![0, crate::open::VERSION],
        _ => Vec::new(),
    }
}
