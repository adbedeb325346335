//! Preallocated batches for the underlays ([`crate::UdpUnderlay`], [`crate::RawUnderlay`]):
//! [`RecvBatch`] (what `recvmmsg` filled) and [`SendBatch`] (what `sendmmsg` will send).
//!
//! Both are allocated once, bounded by their capacity, and reused: receiving into or pushing
//! onto a batch never allocates. A batch carries at most [`MAX_BATCH`] messages, the size of the
//! stack arrays one batched system call is built from.

use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::BorrowedFd;

use crate::outer::OuterValues;
use crate::sys::{self, AddrBuf, ControlBuf, Received, RecvSlot, MAX_BATCH};

/// Largest UDP payload of one IPv4 datagram (65535 − 20 − 8); also the GSO/GRO buffer size.
pub const MAX_DATAGRAM: usize = 65_507;

#[derive(Clone, Copy, Debug)]
struct Datagram {
    src: SocketAddr,
    /// Where the payload starts in the buffer: after the IPv4 header on a raw IPv4 socket.
    start: usize,
    len: usize,
    /// Segment size when the kernel coalesced several datagrams (UDP GRO); 0 when not.
    segment: usize,
}

const NO_DATAGRAM: Datagram = Datagram {
    src: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)),
    start: 0,
    len: 0,
    segment: 0,
};

/// What a receive removes from the front of each buffer before [`RecvBatch::iter`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strip {
    /// Nothing: a UDP socket and a raw IPv6 socket hand over the payload alone.
    Nothing,
    /// The IPv4 header, `IHL` × 4 bytes: a raw IPv4 socket hands over the whole datagram.
    Ipv4Header,
}

/// Buffers for one `recvmmsg` call: `capacity` buffers of `buf_len` bytes each.
///
/// With UDP GRO on, the kernel may coalesce many datagrams of one flow into one buffer (up to
/// 64 KiB), so buffers must then be [`MAX_DATAGRAM`] long; `iter()` splits them again.
pub struct RecvBatch {
    buf_len: usize,
    data: Box<[u8]>,
    names: Box<[AddrBuf]>,
    control: Box<[ControlBuf]>,
    received: Box<[Received]>,
    datagrams: Box<[Datagram]>,
    /// Buffers filled by the last receive, truncated ones included (they read as empty).
    len: usize,
    truncated: usize,
    /// Raw IPv4 datagrams dropped by the last receive for an IP header that does not parse.
    malformed: usize,
}

impl fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvBatch")
            .field("capacity", &self.capacity())
            .field("buf_len", &self.buf_len)
            .field("len", &self.len)
            .field("truncated", &self.truncated)
            .finish()
    }
}

impl RecvBatch {
    /// `capacity` buffers (clamped to 1..=[`MAX_BATCH`]) of `buf_len` bytes (at least 1).
    pub fn new(capacity: usize, buf_len: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_BATCH);
        let buf_len = buf_len.max(1);
        RecvBatch {
            buf_len,
            data: vec![0; capacity * buf_len].into_boxed_slice(),
            names: vec![AddrBuf::new(); capacity].into_boxed_slice(),
            control: vec![ControlBuf::EMPTY; capacity].into_boxed_slice(),
            received: vec![Received::default(); capacity].into_boxed_slice(),
            datagrams: vec![NO_DATAGRAM; capacity].into_boxed_slice(),
            len: 0,
            truncated: 0,
            malformed: 0,
        }
    }

    /// How many buffers one receive may fill.
    pub fn capacity(&self) -> usize {
        self.datagrams.len()
    }

    /// Bytes per buffer.
    pub fn buf_len(&self) -> usize {
        self.buf_len
    }

    /// Buffers the last receive filled: a GRO buffer counts once, a dropped (truncated) one too.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the last receive got nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Datagrams the last receive dropped because they did not fit a buffer (`MSG_TRUNC`).
    pub fn truncated(&self) -> usize {
        self.truncated
    }

    /// Datagrams the last receive dropped because their IPv4 header did not parse (raw
    /// sockets only; the kernel checked it already, so this stays 0 in practice).
    pub fn malformed(&self) -> usize {
        self.malformed
    }

    /// Forgets what was received.
    pub fn clear(&mut self) {
        self.len = 0;
        self.truncated = 0;
        self.malformed = 0;
    }

    /// Every datagram of the last receive as (source, payload), GRO buffers split into their
    /// original datagrams. The payload is what follows the UDP header for a
    /// [`crate::UdpUnderlay`], what follows the IP header (IPv4 or IPv6) for a
    /// [`crate::RawUnderlay`], whose sources have port 0. Empty datagrams are skipped.
    pub fn iter(&self) -> RecvIter<'_> {
        RecvIter {
            batch: self,
            index: 0,
            offset: 0,
        }
    }

    /// Every buffer of the last receive whole, as (source, bytes, GRO segment size; 0 for a
    /// plain datagram): for a caller that must look at a GRO buffer before splitting it. A
    /// veth hands on a tunnel packet a kernel built as one GSO datagram (a whole TSO frame
    /// behind one tunnel header); the socket reads it as one buffer whose "segment size" is
    /// the inner frame's MSS, and splitting it would make garbage of it.
    pub fn buffers(&self) -> impl Iterator<Item = (SocketAddr, &[u8], usize)> {
        self.datagrams[..self.len]
            .iter()
            .enumerate()
            .filter(|(_, d)| d.len > 0)
            .map(|(i, d)| {
                let start = i * self.buf_len + d.start;
                (d.src, &self.data[start..start + d.len], d.segment)
            })
    }

    /// Receives into the batch with one `recvmmsg(MSG_DONTWAIT)`; returns the number of
    /// datagrams (GRO segments counted one by one). Would-block is `Ok(0)`. `strip` says what
    /// precedes the payload in each buffer; it is skipped in place, not copied.
    pub(crate) fn receive(&mut self, fd: BorrowedFd<'_>, strip: Strip) -> io::Result<usize> {
        self.clear();
        let slots = self
            .data
            .chunks_exact_mut(self.buf_len)
            .zip(self.names.iter_mut())
            .zip(self.control.iter_mut())
            .map(|((data, name), control)| RecvSlot {
                data,
                name: Some(name),
                control: Some(control),
            });
        let got = match sys::recvmmsg(fd, slots, &mut self.received) {
            Ok(got) => got,
            Err(e) if is_transient(&e) => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut count = 0;
        for i in 0..got {
            let r = self.received[i];
            let src = self.names[i].to_socket_addr(r.name_len);
            // A truncated buffer (or one without an IP source) is dropped; `len: 0` makes
            // `iter()` pass over it.
            let (Some(src), false) = (src, r.flags & libc::MSG_TRUNC != 0) else {
                self.truncated += 1;
                self.datagrams[i] = NO_DATAGRAM;
                continue;
            };
            let control = &self.control[i].0[..r.control_len.min(self.control[i].0.len())];
            let segment = sys::cmsg_find_int(control, libc::SOL_UDP, sys::UDP_GRO)
                .and_then(|s| usize::try_from(s).ok())
                .unwrap_or(0);
            let len = r.len.min(self.buf_len);
            let start = match strip {
                Strip::Nothing => 0,
                Strip::Ipv4Header => {
                    let data = &self.data[i * self.buf_len..][..len];
                    let Some(header) = ipv4_header_len(data) else {
                        self.malformed += 1;
                        self.datagrams[i] = NO_DATAGRAM;
                        continue;
                    };
                    header
                }
            };
            let len = len - start;
            count += if segment > 0 {
                len.div_ceil(segment)
            } else {
                usize::from(len > 0)
            };
            self.datagrams[i] = Datagram {
                src,
                start,
                len,
                segment,
            };
        }
        self.len = got;
        Ok(count)
    }

    #[cfg(test)]
    pub(crate) fn fake(&mut self, src: SocketAddr, payload: &[u8], segment: usize) {
        let i = self.len;
        self.data[i * self.buf_len..][..payload.len()].copy_from_slice(payload);
        self.datagrams[i] = Datagram {
            src,
            start: 0,
            len: payload.len(),
            segment,
        };
        self.len += 1;
    }
}

/// The length of the IPv4 header at the start of `data` (`IHL` × 4), if it is one that fits.
fn ipv4_header_len(data: &[u8]) -> Option<usize> {
    let first = *data.first()?;
    let len = usize::from(first & 0x0f) * 4;
    (first >> 4 == 4 && len >= 20 && len <= data.len()).then_some(len)
}

/// Would-block and interrupted calls: nothing to do now, try after the next poll.
pub(crate) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// Iterator over the datagrams of a [`RecvBatch`]; see [`RecvBatch::iter`].
#[derive(Debug)]
pub struct RecvIter<'a> {
    batch: &'a RecvBatch,
    index: usize,
    offset: usize,
}

impl<'a> Iterator for RecvIter<'a> {
    type Item = (SocketAddr, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while self.index < self.batch.len {
            let d = self.batch.datagrams[self.index];
            if self.offset >= d.len {
                self.index += 1;
                self.offset = 0;
                continue;
            }
            let rest = d.len - self.offset;
            let take = if d.segment > 0 {
                d.segment.min(rest)
            } else {
                rest
            };
            let start = self.index * self.batch.buf_len + d.start + self.offset;
            self.offset += take;
            return Some((d.src, &self.batch.data[start..start + take]));
        }
        None
    }
}

/// One datagram queued in a [`SendBatch`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendEntry {
    pub(crate) dst: SocketAddr,
    pub(crate) entropy: u16,
    pub(crate) start: usize,
    pub(crate) len: usize,
    /// Outer TOS / TTL of this datagram alone; `ttl: Some(0)` already turned into `None`.
    pub(crate) outer: OuterValues,
}

/// Datagrams to send with one [`crate::UdpUnderlay::send_batch`] (or
/// [`crate::RawUnderlay::send_batch`]): each is a header and a payload copied into one
/// preallocated slab, with its destination, flow entropy and optional outer TOS / TTL.
#[derive(Debug)]
pub struct SendBatch {
    slab: Box<[u8]>,
    used: usize,
    entries: Vec<SendEntry>,
    capacity: usize,
}

impl Default for SendBatch {
    /// [`MAX_BATCH`] datagrams, 2 KiB of slab each on average.
    fn default() -> Self {
        SendBatch::new(MAX_BATCH, MAX_BATCH * 2048)
    }
}

impl SendBatch {
    /// Room for `capacity` datagrams (clamped to 1..=[`MAX_BATCH`]) and `slab_bytes` bytes.
    pub fn new(capacity: usize, slab_bytes: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_BATCH);
        SendBatch {
            slab: vec![0; slab_bytes].into_boxed_slice(),
            used: 0,
            entries: Vec::with_capacity(capacity),
            capacity,
        }
    }

    /// Queues `header` followed by `payload` as one UDP payload to `dst`; `entropy` picks the
    /// source socket (`entropy % sockets`) and so the outer source port. Returns false, queuing
    /// nothing, when the batch is full, the slab has no room, or the datagram would be larger
    /// than [`MAX_DATAGRAM`]. The outer TOS and TTL are the socket's.
    pub fn push(&mut self, dst: SocketAddr, entropy: u16, header: &[u8], payload: &[u8]) -> bool {
        self.push_outer(dst, entropy, OuterValues::default(), header, payload)
    }

    /// As [`SendBatch::push`], with outer TOS / TTL values for this datagram alone (inherited
    /// from its inner packet, say); a `None` field, or `ttl: Some(0)`, keeps the socket's
    /// setting. They travel as control messages of the datagram's `sendmsg` (see `outer.rs`);
    /// UDP GSO coalesces only neighbours with equal values.
    pub fn push_outer(
        &mut self,
        dst: SocketAddr,
        entropy: u16,
        outer: OuterValues,
        header: &[u8],
        payload: &[u8],
    ) -> bool {
        let len = header.len() + payload.len();
        if self.entries.len() >= self.capacity
            || len > MAX_DATAGRAM
            || self.slab.len() - self.used < len
        {
            return false;
        }
        let start = self.used;
        self.slab[start..start + header.len()].copy_from_slice(header);
        self.slab[start + header.len()..start + len].copy_from_slice(payload);
        self.used += len;
        self.entries.push(SendEntry {
            dst,
            entropy,
            start,
            len,
            outer: OuterValues {
                tos: outer.tos,
                ttl: outer.ttl.filter(|&t| t > 0),
            },
        });
        true
    }

    /// Datagrams queued.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Most datagrams the batch holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slab bytes in use.
    pub fn bytes_used(&self) -> usize {
        self.used
    }

    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.used = 0;
    }

    pub(crate) fn entries(&self) -> &[SendEntry] {
        &self.entries
    }

    pub(crate) fn slab(&self) -> &[u8] {
        &self.slab[..self.used]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gro_buffers_split_into_their_datagrams() {
        let src: SocketAddr = "192.0.2.1:49152".parse().unwrap();
        let mut batch = RecvBatch::new(4, 4096);
        let coalesced: Vec<u8> = (0..250u32).map(|i| (i / 100) as u8).collect();
        batch.fake(src, &coalesced, 100);
        batch.fake(src, b"single", 0);
        let got: Vec<(SocketAddr, Vec<u8>)> = batch.iter().map(|(s, d)| (s, d.to_vec())).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].1, vec![0; 100]);
        assert_eq!(got[1].1, vec![1; 100]);
        assert_eq!(got[2].1, vec![2; 50], "the last segment may be short");
        assert_eq!(got[3], (src, b"single".to_vec()));
    }

    #[test]
    fn ipv4_headers_are_measured_or_refused() {
        let mut header = [0u8; 24];
        header[0] = 0x45;
        assert_eq!(ipv4_header_len(&header), Some(20));
        header[0] = 0x46; // one word of options
        assert_eq!(ipv4_header_len(&header), Some(24));
        header[0] = 0x47; // longer than the data
        assert_eq!(ipv4_header_len(&header), None);
        header[0] = 0x44; // shorter than the fixed header
        assert_eq!(ipv4_header_len(&header), None);
        header[0] = 0x65; // not version 4
        assert_eq!(ipv4_header_len(&header), None);
        assert_eq!(ipv4_header_len(&[]), None);
    }

    #[test]
    fn send_batch_is_bounded() {
        let dst: SocketAddr = "192.0.2.2:4789".parse().unwrap();
        let mut batch = SendBatch::new(2, 100);
        assert!(batch.push(dst, 1, &[1; 8], &[2; 40]));
        assert!(!batch.push(dst, 2, &[1; 8], &[2; 60]), "slab full");
        assert!(batch.push(dst, 3, &[], &[3; 52]));
        assert!(!batch.push(dst, 4, &[], &[]), "entries full");
        assert_eq!((batch.len(), batch.bytes_used()), (2, 100));
        assert_eq!(&batch.slab()[..9], &[1, 1, 1, 1, 1, 1, 1, 1, 2]);
        batch.clear();
        assert!(batch.is_empty());
        let mut big = SendBatch::new(1, 2 * MAX_DATAGRAM);
        assert!(!big.push(dst, 0, &[], &vec![0; MAX_DATAGRAM + 1]));
    }
}
