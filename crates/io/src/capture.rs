//! Capture sockets: AF_PACKET taps that `nvo capture` opens on an interface for as long as a
//! capture runs, and closes after. Nothing here exists while nobody captures.
//!
//! - Created with protocol 0 (the kernel queues nothing), the filter attached
//!   (`SO_ATTACH_FILTER`), then bound with `ETH_P_ALL` to one ifindex: no frame that the
//!   filter refuses, and no frame of another interface, is ever queued.
//! - Both directions: unlike a datapath port, `PACKET_IGNORE_OUTGOING` is not set, so frames
//!   the host sends on the interface come back with `PACKET_OUTGOING` ([`Captured::outgoing`]).
//!   The kernel hands a tap each received frame before tc ingress (so before nvod's eBPF
//!   programs), and each transmitted frame as it leaves, including frames a tc program
//!   redirected to the device's egress (`dev_queue_xmit_nit`). Frames an XDP program consumes
//!   or redirects never reach a tap.
//! - Not promiscuous: a capture must not change what the interface accepts.
//! - Frames longer than the buffer are cut (`MSG_TRUNC` gives their length on the wire).
//! - [`CaptureSocket::drops`]: `PACKET_STATISTICS`, the frames the kernel dropped because the
//!   socket's queue was full.

use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use crate::packet;
use crate::pcap_filter::Filter;
use crate::sys;

/// One frame read from a capture socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Captured {
    /// Bytes written to the buffer.
    pub len: usize,
    /// Length of the frame on the wire.
    pub wire_len: usize,
    /// Sent by this host (`PACKET_OUTGOING`), not received.
    pub outgoing: bool,
}

/// An AF_PACKET tap on one interface; see the module docs.
#[derive(Debug)]
pub struct CaptureSocket {
    fd: OwnedFd,
    name: String,
    drops: u64,
}

impl CaptureSocket {
    /// Opens a tap on `ifname` (in the calling thread's namespace) passing only what `filter`
    /// accepts (everything without one). A missing interface is `ErrorKind::NotFound`.
    pub fn open(ifname: &str, filter: Option<&Filter>) -> io::Result<CaptureSocket> {
        let with_name =
            |e: io::Error| io::Error::new(e.kind(), format!("capture on {ifname}: {e}"));
        let (fd, ifindex) = packet::unbound_socket(ifname).map_err(|e| {
            // if_nametoindex(3) says ENODEV for a missing interface.
            match e.raw_os_error() {
                Some(libc::ENODEV) => with_name(io::Error::new(io::ErrorKind::NotFound, e)),
                _ => with_name(e),
            }
        })?;
        if let Some(filter) = filter {
            let insns = filter.instructions();
            let program = libc::sock_fprog {
                len: u16::try_from(insns.len()).map_err(|_| {
                    with_name(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("filter of {} instructions is too long", insns.len()),
                    ))
                })?,
                filter: insns.as_ptr().cast_mut(),
            };
            // The kernel copies the program during the call; `filter` outlives it.
            sys::setsockopt(
                fd.as_fd(),
                libc::SOL_SOCKET,
                libc::SO_ATTACH_FILTER,
                &program,
            )
            .map_err(with_name)?;
        }
        packet::bind_all(fd.as_fd(), ifindex).map_err(with_name)?;
        Ok(CaptureSocket {
            fd,
            name: ifname.to_owned(),
            drops: 0,
        })
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one frame into `buf`; `None` when none is queued.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Captured>> {
        // SAFETY: sockaddr_ll is plain data; all zeroes is a valid value.
        let mut from: libc::sockaddr_ll = unsafe { mem::zeroed() };
        let mut from_len = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        let from_ptr: *mut libc::sockaddr_ll = &mut from;
        // SAFETY: `buf` is a live slice of `buf.len()` writable bytes, `from`/`from_len` live
        // locals of the sizes given; the kernel writes within them.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_TRUNC | libc::MSG_DONTWAIT,
                from_ptr.cast(),
                &mut from_len,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        let wire_len = n as usize;
        Ok(Some(Captured {
            len: wire_len.min(buf.len()),
            wire_len,
            outgoing: from.sll_pkttype == libc::PACKET_OUTGOING,
        }))
    }

    /// Frames the kernel dropped for a full queue since the socket opened.
    pub fn drops(&mut self) -> u64 {
        let mut stats = [0u8; mem::size_of::<libc::tpacket_stats>()];
        // Reading the statistics resets them: keep a running sum.
        if sys::getsockopt_bytes(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut stats,
        )
        .is_ok()
        {
            let dropped = u32::from_ne_bytes([stats[4], stats[5], stats[6], stats[7]]);
            self.drops += u64::from(dropped);
        }
        self.drops
    }
}

impl AsFd for CaptureSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap_filter::LINKTYPE_ETHERNET;

    #[test]
    fn a_missing_interface_is_named() {
        let e = CaptureSocket::open("capnone0", None).unwrap_err();
        assert!(e.to_string().contains("capture on capnone0"), "{e}");
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    /// On loopback (root only): a filtered tap sees the UDP datagram we send, both ways, and
    /// not the one the filter refuses.
    #[test]
    fn loopback_tap_sees_what_the_filter_passes() {
        let filter = Filter::compile("udp dst port 47999", LINKTYPE_ETHERNET, 65535).unwrap();
        let Ok(tap) = CaptureSocket::open("lo", Some(&filter)) else {
            eprintln!("skipped: AF_PACKET needs CAP_NET_RAW");
            return;
        };
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.send_to(b"refused", "127.0.0.1:47998").unwrap();
        sock.send_to(b"wanted", "127.0.0.1:47999").unwrap();
        let mut buf = [0u8; 2048];
        let mut seen = Vec::new();
        let mut poller = crate::Poller::default();
        poller.add(tap.as_fd());
        for _ in 0..20 {
            poller
                .wait(Some(std::time::Duration::from_millis(100)))
                .unwrap();
            if !poller.is_ready(0) {
                break;
            }
            while let Some(c) = tap.recv(&mut buf).unwrap() {
                seen.push((buf[..c.len].to_vec(), c.outgoing));
            }
        }
        // Loopback shows each datagram once outgoing and once incoming.
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen.iter().all(|(f, _)| f.ends_with(b"wanted")));
        assert!(seen.iter().any(|(_, out)| *out) && seen.iter().any(|(_, out)| !*out));
    }
}
