//! The system calls std does not offer: `sendmmsg`, `recvmmsg` and forced socket buffer sizes.
//!
//! Every `unsafe` block of nvo-blast is here, each with the reason it is sound. Sockets
//! themselves are std's `UdpSocket` (bind, connect, timeouts); this module only borrows their
//! descriptors for one call. [`Mmsg`] owns the `mmsghdr` and `iovec` arrays of one batched call,
//! allocated once: its pointers are written afresh at every call from slices borrowed for that
//! call, so none outlives the memory it points into.

use std::fmt;
use std::io;
use std::mem;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::ptr;

use libc::{c_int, c_uint, socklen_t};

/// Most messages in one batched call: the kernel's `UIO_MAXIOV`, which bounds `vlen` too.
pub const MAX_BATCH: usize = 1024;

/// Which socket buffer to size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    /// `SO_SNDBUF`.
    Send,
    /// `SO_RCVBUF`.
    Recv,
}

/// Asks for a socket buffer of `bytes`: first with the `…FORCE` option, which lifts the
/// `net.core.[rw]mem_max` cap for root (a packet-rate receiver needs more than the default
/// 208 KiB or it measures its own buffer), then with the plain option, which the kernel
/// silently caps. Returns the size the kernel reports afterwards (it doubles the request for
/// its bookkeeping).
pub fn set_buffer(sock: &UdpSocket, which: Buffer, bytes: usize) -> io::Result<usize> {
    let (force, plain) = match which {
        Buffer::Send => (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        Buffer::Recv => (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
    };
    let value = c_int::try_from(bytes).unwrap_or(c_int::MAX);
    if setsockopt_int(sock, force, value).is_err() {
        setsockopt_int(sock, plain, value)?;
    }
    getsockopt_int(sock, plain).map(|v| usize::try_from(v).unwrap_or(0))
}

fn setsockopt_int(sock: &UdpSocket, name: c_int, value: c_int) -> io::Result<()> {
    // SAFETY: the option value is a live c_int on our stack and its exact size is passed; the
    // descriptor is borrowed from `sock` for the duration of the call.
    let ret = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            ptr::from_ref(&value).cast(),
            mem::size_of::<c_int>() as socklen_t,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn getsockopt_int(sock: &UdpSocket, name: c_int) -> io::Result<c_int> {
    let mut value: c_int = 0;
    let mut len = mem::size_of::<c_int>() as socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `value`, a live c_int on our stack,
    // and updates `len`, also ours.
    let ret = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            ptr::from_mut(&mut value).cast(),
            &mut len,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value)
}

/// The header arrays of one batched call, reused from call to call.
pub struct Mmsg {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
}

impl fmt::Debug for Mmsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mmsg")
            .field("capacity", &self.hdrs.len())
            .finish()
    }
}

/// What one received message was: its length and whether the kernel cut it (`MSG_TRUNC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    /// Bytes of UDP payload (the full datagram's length when truncated).
    pub len: usize,
    /// The buffer was too short for the datagram.
    pub truncated: bool,
}

impl Mmsg {
    /// Arrays for `capacity` messages (clamped to 1..=[`MAX_BATCH`]).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.clamp(1, MAX_BATCH);
        let empty_iov = libc::iovec {
            iov_base: ptr::null_mut(),
            iov_len: 0,
        };
        Mmsg {
            hdrs: (0..capacity).map(|_| empty_mmsghdr()).collect(),
            iovs: vec![empty_iov; capacity],
        }
    }

    /// Messages one call carries at most.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Sends `count` (at most the capacity) copies of `payload` on the connected `sock` with
    /// one `sendmmsg`; returns how many the kernel took (it stops at the first error, which it
    /// reports only when nothing was sent).
    pub fn send(&mut self, sock: &UdpSocket, payload: &[u8], count: usize) -> io::Result<usize> {
        let n = count.min(self.capacity());
        if n == 0 {
            return Ok(0);
        }
        for (hdr, iov) in self.hdrs[..n].iter_mut().zip(self.iovs[..n].iter_mut()) {
            // Every message points at the same payload: the kernel only reads a send's iovecs
            // (the *mut is what the C type demands).
            *iov = libc::iovec {
                iov_base: payload.as_ptr().cast_mut().cast(),
                iov_len: payload.len(),
            };
            *hdr = empty_mmsghdr();
            hdr.msg_hdr.msg_iov = ptr::from_mut(iov);
            hdr.msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: hdrs[..n] point into `self.iovs` (owned, not resized while borrowed here) and
        // each iovec into `payload`, borrowed for this call, with its true length; there is no
        // address (the socket is connected) and no control data. The kernel reads them and
        // writes only `msg_len` into `self.hdrs`.
        let sent =
            unsafe { libc::sendmmsg(sock.as_raw_fd(), self.hdrs.as_mut_ptr(), n as c_uint, 0) };
        usize::try_from(sent).map_err(|_| io::Error::last_os_error())
    }

    /// Receives up to the capacity of datagrams into `bufs`, cut in buffers of `buf_len`
    /// bytes, with one `recvmmsg(MSG_WAITFORONE)`: it waits (up to the socket's read timeout)
    /// for the first datagram, then takes what is queued. Fills `out` (at least as long as the
    /// capacity) and returns the number received.
    pub fn recv(
        &mut self,
        sock: &UdpSocket,
        bufs: &mut [u8],
        buf_len: usize,
        out: &mut [Received],
    ) -> io::Result<usize> {
        let buf_len = buf_len.max(1);
        let mut n = 0;
        for ((hdr, iov), buf) in self
            .hdrs
            .iter_mut()
            .zip(self.iovs.iter_mut())
            .zip(bufs.chunks_exact_mut(buf_len))
            .take(out.len())
        {
            *iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            *hdr = empty_mmsghdr();
            hdr.msg_hdr.msg_iov = ptr::from_mut(iov);
            hdr.msg_hdr.msg_iovlen = 1;
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: hdrs[..n] point into `self.iovs` and each iovec into its own chunk of `bufs`
        // (borrowed mutably for this call) with the chunk's true length; no name or control
        // buffers. The kernel writes only into those chunks and into `self.hdrs`.
        let got = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                n as c_uint,
                libc::MSG_WAITFORONE,
                ptr::null_mut(),
            )
        };
        let got = usize::try_from(got).map_err(|_| io::Error::last_os_error())?;
        for (hdr, r) in self.hdrs[..got].iter().zip(out.iter_mut()) {
            *r = Received {
                len: hdr.msg_len as usize,
                truncated: hdr.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            };
        }
        Ok(got)
    }
}

fn empty_mmsghdr() -> libc::mmsghdr {
    // SAFETY: mmsghdr is a plain C struct of integers and raw pointers, for which all-zero
    // bytes (null pointers, zero lengths) are a valid value.
    unsafe { mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_clamped_to_the_kernel_limit() {
        assert_eq!(Mmsg::new(0).capacity(), 1);
        assert_eq!(Mmsg::new(64).capacity(), 64);
        assert_eq!(Mmsg::new(5000).capacity(), MAX_BATCH);
    }

    #[test]
    fn a_receive_buffer_can_be_grown() {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let before = set_buffer(&sock, Buffer::Recv, 4096).unwrap();
        let after = set_buffer(&sock, Buffer::Recv, 1 << 20).unwrap();
        assert!(after > before, "{before} -> {after}");
    }

    #[test]
    fn sendmmsg_and_recvmmsg_carry_whole_batches() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut mmsg = Mmsg::new(8);
        assert_eq!(mmsg.send(&tx, b"hello", 8).unwrap(), 8);
        let mut bufs = vec![0u8; 8 * 16];
        let mut out = [Received {
            len: 0,
            truncated: false,
        }; 8];
        let mut got = 0;
        while got < 8 {
            got += mmsg.recv(&rx, &mut bufs, 16, &mut out).unwrap();
        }
        assert_eq!(out[0].len, 5);
        assert!(!out[7].truncated);
        assert_eq!(&bufs[16..21], b"hello");
    }

    #[test]
    fn a_short_buffer_is_reported_as_truncated() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let mut mmsg = Mmsg::new(1);
        mmsg.send(&tx, &[7u8; 100], 1).unwrap();
        let mut bufs = vec![0u8; 10];
        let mut out = [Received {
            len: 0,
            truncated: false,
        }];
        assert_eq!(mmsg.recv(&rx, &mut bufs, 10, &mut out).unwrap(), 1);
        assert!(out[0].truncated);
    }
}
