//! Thin wrappers around the Linux system calls nvo-io needs, and nothing else.
//!
//! Every `unsafe` block of the crate lives here (system calls, the two `ifreq` union reads,
//! zero-initialised C structs), each with the reason it is sound. The wrappers take and return
//! owned or borrowed descriptors (`OwnedFd`, `BorrowedFd`) and safe slices; a batched call
//! (`recvmmsg`, `sendmmsg`) builds its `mmsghdr`/`iovec` arrays on the stack from slices
//! borrowed for the whole call, so no pointer outlives the memory it points into. Errors come
//! back as `io::Error` from `errno`.

use std::ffi::CString;
use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;

use libc::{c_int, c_short, c_uint, c_ulong, c_void, socklen_t};

/// Most messages one batched system call carries; the stack arrays below have this many slots.
pub const MAX_BATCH: usize = 128;

// Linux UAPI values that the libc crate does not export for linux-gnu.
/// `include/uapi/linux/udp.h`: set the GSO segment size (u16 cmsg or sockopt).
pub(crate) const UDP_SEGMENT: c_int = 103;
/// `include/uapi/linux/udp.h`: receive coalesced datagrams, segment size as an int cmsg.
pub(crate) const UDP_GRO: c_int = 104;
/// `include/uapi/linux/sockios.h`.
pub(crate) const SIOCGIFFLAGS: c_ulong = 0x8913;
pub(crate) const SIOCSIFFLAGS: c_ulong = 0x8914;
pub(crate) const SIOCGIFMTU: c_ulong = 0x8921;
pub(crate) const SIOCETHTOOL: c_ulong = 0x8946;

/// Turns a -1 return into the `errno` error.
fn cvt(ret: c_int) -> io::Result<c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: isize) -> io::Result<usize> {
    usize::try_from(ret).map_err(|_| io::Error::last_os_error())
}

/// Wraps a descriptor a system call just returned.
fn owned(fd: c_int) -> OwnedFd {
    // SAFETY: `fd` was returned by a successful socket/eventfd call just now; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `socket(2)`, always close-on-exec and non-blocking.
pub(crate) fn socket(domain: c_int, ty: c_int, protocol: c_int) -> io::Result<OwnedFd> {
    let ty = ty | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket() takes no pointers.
    let fd = cvt(unsafe { libc::socket(domain, ty, protocol) })?;
    Ok(owned(fd))
}

/// `eventfd(2)`, close-on-exec and non-blocking.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd() takes no pointers.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    Ok(owned(fd))
}

/// `setsockopt(2)` with a plain value (an int, a struct without pointers).
pub(crate) fn setsockopt<T: Copy>(
    fd: BorrowedFd<'_>,
    level: c_int,
    name: c_int,
    value: &T,
) -> io::Result<()> {
    let len = mem::size_of::<T>() as socklen_t;
    let value: *const T = value;
    // SAFETY: `value` points to a live `T` of `len` bytes that the kernel only reads.
    cvt(unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, value.cast(), len) })?;
    Ok(())
}

/// `getsockopt(2)` for an int option.
pub(crate) fn getsockopt_int(fd: BorrowedFd<'_>, level: c_int, name: c_int) -> io::Result<c_int> {
    let mut value: c_int = 0;
    let mut len = mem::size_of::<c_int>() as socklen_t;
    let out: *mut c_int = &mut value;
    // SAFETY: `out` and `len` point to live locals; the kernel writes at most `len` bytes.
    cvt(unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, out.cast(), &mut len) })?;
    Ok(value)
}

/// `getsockopt(2)` into a byte buffer; how many bytes the kernel wrote.
pub(crate) fn getsockopt_bytes(
    fd: BorrowedFd<'_>,
    level: c_int,
    name: c_int,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut len = buf.len() as socklen_t;
    // SAFETY: `buf` is a live slice of `len` bytes the kernel may write; `len` is a live local.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    Ok(len as usize)
}

/// A socket address in the kernel's layout, built from std types without unsafe.
#[derive(Clone, Copy)]
pub(crate) enum RawAddr {
    V4(libc::sockaddr_in),
    V6(libc::sockaddr_in6),
    Link(libc::sockaddr_ll),
}

impl RawAddr {
    /// A placeholder to fill stack arrays with.
    pub(crate) const EMPTY: RawAddr = RawAddr::V4(libc::sockaddr_in {
        sin_family: 0,
        sin_port: 0,
        sin_addr: libc::in_addr { s_addr: 0 },
        sin_zero: [0; 8],
    });

    pub(crate) fn from_socket_addr(addr: SocketAddr) -> Self {
        match addr {
            SocketAddr::V4(a) => RawAddr::V4(libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            }),
            SocketAddr::V6(a) => RawAddr::V6(libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            }),
        }
    }

    /// An AF_PACKET address: one interface, one ethertype (host order).
    pub(crate) fn link(ifindex: u32, protocol: u16) -> Self {
        RawAddr::Link(libc::sockaddr_ll {
            sll_family: libc::AF_PACKET as u16,
            sll_protocol: protocol.to_be(),
            sll_ifindex: ifindex as c_int,
            sll_hatype: 0,
            sll_pkttype: 0,
            sll_halen: 0,
            sll_addr: [0; 8],
        })
    }

    fn as_ptr(&self) -> *const libc::sockaddr {
        match self {
            RawAddr::V4(a) => ptr::from_ref(a).cast(),
            RawAddr::V6(a) => ptr::from_ref(a).cast(),
            RawAddr::Link(a) => ptr::from_ref(a).cast(),
        }
    }

    fn len(&self) -> socklen_t {
        let len = match self {
            RawAddr::V4(_) => mem::size_of::<libc::sockaddr_in>(),
            RawAddr::V6(_) => mem::size_of::<libc::sockaddr_in6>(),
            RawAddr::Link(_) => mem::size_of::<libc::sockaddr_ll>(),
        };
        len as socklen_t
    }
}

/// `bind(2)`.
pub(crate) fn bind(fd: BorrowedFd<'_>, addr: &RawAddr) -> io::Result<()> {
    // SAFETY: the address pointer and length describe `addr`, which lives across the call.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), addr.as_ptr(), addr.len()) })?;
    Ok(())
}

/// Room for any address the kernel hands back (`sockaddr_storage`).
#[derive(Clone)]
pub(crate) struct AddrBuf(libc::sockaddr_storage);

impl AddrBuf {
    pub(crate) fn new() -> Self {
        // SAFETY: sockaddr_storage is plain integers; all zeroes is a valid (AF_UNSPEC) value.
        AddrBuf(unsafe { mem::zeroed() })
    }

    /// The IP address and port the kernel wrote, if it is an IPv4 or IPv6 one.
    pub(crate) fn to_socket_addr(&self, len: socklen_t) -> Option<SocketAddr> {
        let len = len as usize;
        let storage: *const libc::sockaddr_storage = &self.0;
        match c_int::from(self.0.ss_family) {
            libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
                // SAFETY: the family says the kernel wrote a sockaddr_in; sockaddr_storage is
                // large and aligned enough for it.
                let a = unsafe { &*storage.cast::<libc::sockaddr_in>() };
                let ip = Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::V4(SocketAddrV4::new(
                    ip,
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
                // SAFETY: as above, for sockaddr_in6.
                let a = unsafe { &*storage.cast::<libc::sockaddr_in6>() };
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                let port = u16::from_be(a.sin6_port);
                let flow = u32::from_be(a.sin6_flowinfo);
                Some(SocketAddr::V6(SocketAddrV6::new(
                    ip,
                    port,
                    flow,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

/// `getsockname(2)` for an IP socket.
pub(crate) fn local_addr(fd: BorrowedFd<'_>) -> io::Result<SocketAddr> {
    let mut buf = AddrBuf::new();
    let mut len = mem::size_of::<libc::sockaddr_storage>() as socklen_t;
    let out: *mut libc::sockaddr_storage = &mut buf.0;
    // SAFETY: `out`/`len` describe a live sockaddr_storage the kernel may fill.
    cvt(unsafe { libc::getsockname(fd.as_raw_fd(), out.cast(), &mut len) })?;
    buf.to_socket_addr(len)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "socket has no ip address"))
}

/// Ancillary data space for a few small control messages, aligned like `cmsghdr`: room for
/// three carrying an int each (a send's `UDP_SEGMENT` plus an outer TOS and TTL; a receive's
/// `UDP_GRO`).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub(crate) struct ControlBuf(pub(crate) [u8; CONTROL_LEN]);

impl ControlBuf {
    pub(crate) const EMPTY: ControlBuf = ControlBuf([0; CONTROL_LEN]);
}

/// `CMSG_ALIGN`: control messages are padded to the size of a `size_t`.
const fn cmsg_align(len: usize) -> usize {
    let a = mem::size_of::<usize>();
    (len + a - 1) & !(a - 1)
}
const CMSG_HDR: usize = cmsg_align(mem::size_of::<libc::cmsghdr>());
/// Bytes of a [`ControlBuf`]: three `CMSG_SPACE(sizeof(int))`.
const CONTROL_LEN: usize = 3 * cmsg_align(CMSG_HDR + mem::size_of::<c_int>());

/// Writes one control message holding `value` (native-endian bytes) at byte `at` of `buf`,
/// which must be aligned (every return value of these functions is). Returns where the next
/// message goes (`at` + its `CMSG_SPACE`), or `at` when it does not fit: then nothing is
/// written. Writing bytes, not a `cmsghdr`, keeps this free of `unsafe`.
fn cmsg_put(buf: &mut ControlBuf, at: usize, level: c_int, ty: c_int, value: &[u8]) -> usize {
    let word = mem::size_of::<usize>();
    let len = CMSG_HDR + value.len();
    let space = cmsg_align(len);
    let Some(b) = buf.0.get_mut(at..at + space) else {
        return at;
    };
    b.fill(0);
    b[..word].copy_from_slice(&len.to_ne_bytes());
    b[word..word + 4].copy_from_slice(&level.to_ne_bytes());
    b[word + 4..word + 8].copy_from_slice(&ty.to_ne_bytes());
    b[CMSG_HDR..len].copy_from_slice(value);
    at + space
}

/// [`cmsg_put`] of a u16 (`UDP_SEGMENT`).
pub(crate) fn cmsg_put_u16(
    buf: &mut ControlBuf,
    at: usize,
    level: c_int,
    ty: c_int,
    value: u16,
) -> usize {
    cmsg_put(buf, at, level, ty, &value.to_ne_bytes())
}

/// [`cmsg_put`] of an int (`IP_TOS`, `IP_TTL`, `IPV6_TCLASS`, `IPV6_HOPLIMIT`).
pub(crate) fn cmsg_put_int(
    buf: &mut ControlBuf,
    at: usize,
    level: c_int,
    ty: c_int,
    value: c_int,
) -> usize {
    cmsg_put(buf, at, level, ty, &value.to_ne_bytes())
}

/// Finds the first control message of (level, type) and returns its data (at most what the
/// kernel wrote), e.g. `PACKET_AUXDATA`. Parses bytes, so it never reads past `control`.
pub(crate) fn cmsg_find(control: &[u8], level: c_int, ty: c_int) -> Option<&[u8]> {
    let word = mem::size_of::<usize>();
    let mut off = 0;
    while off + CMSG_HDR <= control.len() {
        let len = usize::from_ne_bytes(control[off..off + word].try_into().ok()?);
        let lvl = c_int::from_ne_bytes(control[off + word..off + word + 4].try_into().ok()?);
        let t = c_int::from_ne_bytes(control[off + word + 4..off + word + 8].try_into().ok()?);
        if len < CMSG_HDR || off + len > control.len() {
            return None;
        }
        if lvl == level && t == ty {
            return control.get(off + CMSG_HDR..off + len);
        }
        off += cmsg_align(len);
    }
    None
}

/// Finds the first control message of (level, type) carrying an int, e.g. `UDP_GRO`.
/// Parses bytes, so it never reads past `control`, whatever the kernel wrote.
pub(crate) fn cmsg_find_int(control: &[u8], level: c_int, ty: c_int) -> Option<c_int> {
    let data = cmsg_find(control, level, ty)?;
    Some(c_int::from_ne_bytes(data.get(..4)?.try_into().ok()?))
}

/// Where the kernel writes one received message.
pub(crate) struct RecvSlot<'a> {
    pub(crate) data: &'a mut [u8],
    pub(crate) name: Option<&'a mut AddrBuf>,
    pub(crate) control: Option<&'a mut ControlBuf>,
}

/// What the kernel reported for one received message.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Received {
    pub(crate) len: usize,
    pub(crate) name_len: socklen_t,
    pub(crate) control_len: usize,
    pub(crate) flags: c_int,
}

const EMPTY_IOVEC: libc::iovec = libc::iovec {
    iov_base: ptr::null_mut(),
    iov_len: 0,
};
// SAFETY: mmsghdr is integers and pointers; all zeroes (null pointers, zero lengths) is valid.
const EMPTY_MMSGHDR: libc::mmsghdr = unsafe { mem::zeroed() };

/// `recvmmsg(2)` with `MSG_DONTWAIT` into up to `out.len()` (at most [`MAX_BATCH`]) slots.
/// Returns how many messages arrived; `out[..n]` describes them.
pub(crate) fn recvmmsg<'a>(
    fd: BorrowedFd<'_>,
    slots: impl Iterator<Item = RecvSlot<'a>>,
    out: &mut [Received],
) -> io::Result<usize> {
    let mut iovs = [EMPTY_IOVEC; MAX_BATCH];
    let mut hdrs = [EMPTY_MMSGHDR; MAX_BATCH];
    let mut n = 0;
    for (slot, (iov, hdr)) in slots
        .zip(iovs.iter_mut().zip(hdrs.iter_mut()))
        .take(out.len())
    {
        *iov = libc::iovec {
            iov_base: slot.data.as_mut_ptr().cast(),
            iov_len: slot.data.len(),
        };
        if let Some(name) = slot.name {
            hdr.msg_hdr.msg_name = ptr::from_mut(&mut name.0).cast();
            hdr.msg_hdr.msg_namelen = mem::size_of::<libc::sockaddr_storage>() as socklen_t;
        }
        if let Some(control) = slot.control {
            hdr.msg_hdr.msg_control = control.0.as_mut_ptr().cast();
            hdr.msg_hdr.msg_controllen = control.0.len();
        }
        n += 1;
    }
    if n == 0 {
        return Ok(0);
    }
    let iov_base = iovs.as_mut_ptr();
    for (i, hdr) in hdrs[..n].iter_mut().enumerate() {
        hdr.msg_hdr.msg_iov = iov_base.wrapping_add(i);
        hdr.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: hdrs[..n] point into `iovs` (alive until we return) and into data, name and
    // control buffers borrowed for 'a, each with its true length; the kernel writes only there.
    let got = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as c_uint,
            libc::MSG_DONTWAIT,
            ptr::null_mut(),
        )
    };
    let got = cvt(got)? as usize;
    for (hdr, r) in hdrs[..got].iter().zip(out.iter_mut()) {
        *r = Received {
            len: hdr.msg_len as usize,
            name_len: hdr.msg_hdr.msg_namelen,
            control_len: hdr.msg_hdr.msg_controllen,
            flags: hdr.msg_hdr.msg_flags,
        };
    }
    Ok(got)
}

/// One message to send: `head` then `data` (two iovecs, no copy), optionally to `addr`, with
/// optional control messages (`control.1` bytes of `control.0`).
#[derive(Clone, Copy)]
pub(crate) struct SendMsg<'a> {
    pub(crate) head: &'a [u8],
    pub(crate) data: &'a [u8],
    pub(crate) addr: Option<RawAddr>,
    pub(crate) control: Option<(&'a ControlBuf, usize)>,
}

/// `sendmmsg(2)` with `MSG_DONTWAIT` of up to [`MAX_BATCH`] messages. Returns how many were
/// sent; fewer than given means the next one failed (send it again to learn why).
pub(crate) fn sendmmsg<'a>(
    fd: BorrowedFd<'_>,
    msgs: impl Iterator<Item = SendMsg<'a>>,
) -> io::Result<usize> {
    let mut iovs = [EMPTY_IOVEC; 2 * MAX_BATCH];
    let mut addrs = [RawAddr::EMPTY; MAX_BATCH];
    let mut hdrs = [EMPTY_MMSGHDR; MAX_BATCH];
    let mut iovcnt = [0usize; MAX_BATCH];
    let mut n = 0;
    for (msg, ((iov, addr), cnt)) in msgs.zip(
        iovs.chunks_exact_mut(2)
            .zip(addrs.iter_mut())
            .zip(iovcnt.iter_mut()),
    ) {
        // The kernel only reads iovecs of a send; the *mut is what the C type demands.
        let parts = [msg.head, msg.data];
        for part in parts.iter().filter(|p| !p.is_empty()) {
            iov[*cnt] = libc::iovec {
                iov_base: part.as_ptr().cast_mut().cast(),
                iov_len: part.len(),
            };
            *cnt += 1;
        }
        if let Some(a) = msg.addr {
            *addr = a;
            hdrs[n].msg_hdr.msg_namelen = a.len();
        }
        if let Some((control, len)) = msg.control {
            hdrs[n].msg_hdr.msg_control = control.0.as_ptr().cast_mut().cast();
            hdrs[n].msg_hdr.msg_controllen = len.min(control.0.len());
        }
        n += 1;
    }
    if n == 0 {
        return Ok(0);
    }
    let iov_base = iovs.as_mut_ptr();
    let addr_base = addrs.as_ptr();
    for (i, hdr) in hdrs[..n].iter_mut().enumerate() {
        hdr.msg_hdr.msg_iov = iov_base.wrapping_add(2 * i);
        hdr.msg_hdr.msg_iovlen = iovcnt[i];
        if hdr.msg_hdr.msg_namelen > 0 {
            // SAFETY: i < n <= MAX_BATCH, inside `addrs`, which outlives the call.
            let addr = unsafe { &*addr_base.add(i) };
            hdr.msg_hdr.msg_name = addr.as_ptr().cast_mut().cast::<c_void>();
        }
    }
    // SAFETY: hdrs[..n] point into `iovs` and `addrs` (locals alive until we return) and into
    // data and control slices borrowed for 'a, each with its true length; the kernel only
    // reads them, and writes msg_len into `hdrs`.
    let sent = unsafe {
        libc::sendmmsg(
            fd.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    Ok(cvt(sent)? as usize)
}

/// `read(2)`.
pub(crate) fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
    cvt_size(unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// `write(2)`.
pub(crate) fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: the kernel reads at most `buf.len()` bytes from `buf`.
    cvt_size(unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// `writev(2)` of `head` then `data`, in one call (one frame on a TAP device).
pub(crate) fn writev2(fd: BorrowedFd<'_>, head: &[u8], data: &[u8]) -> io::Result<usize> {
    writev(fd, &[head, data])
}

/// `writev(2)` of up to four pieces in one call (one frame on a TUN/TAP device); more pieces
/// are refused with `InvalidInput`.
pub(crate) fn writev(fd: BorrowedFd<'_>, pieces: &[&[u8]]) -> io::Result<usize> {
    const MAX: usize = 4;
    if pieces.len() > MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("writev of {} pieces (at most {MAX})", pieces.len()),
        ));
    }
    let mut iov = [libc::iovec {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    }; MAX];
    for (v, piece) in iov.iter_mut().zip(pieces) {
        v.iov_base = piece.as_ptr().cast_mut().cast();
        v.iov_len = piece.len();
    }
    // SAFETY: the first `pieces.len()` iovecs describe live slices that the kernel only reads.
    cvt_size(unsafe { libc::writev(fd.as_raw_fd(), iov.as_ptr(), pieces.len() as c_int) })
}

/// `poll(2)`; `timeout_ms` < 0 waits forever.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout_ms: c_int) -> io::Result<usize> {
    // SAFETY: the pointer and count describe `fds`, which the kernel updates in place.
    let n = cvt(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) })?;
    Ok(n as usize)
}

/// `setns(2)` for the calling thread.
pub(crate) fn setns(fd: BorrowedFd<'_>, nstype: c_int) -> io::Result<()> {
    // SAFETY: setns() takes no pointers; it affects only the calling thread for CLONE_NEWNET.
    cvt(unsafe { libc::setns(fd.as_raw_fd(), nstype) })?;
    Ok(())
}

/// `if_nametoindex(3)` in the calling thread's network namespace.
pub(crate) fn if_nametoindex(name: &str) -> io::Result<u32> {
    let cname = CString::new(name).map_err(|_| invalid_ifname(name))?;
    // SAFETY: `cname` is a NUL-terminated string alive across the call.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(index)
    }
}

fn invalid_ifname(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid interface name {name:?}: 1 to 15 bytes, no NUL"),
    )
}

/// An `ifreq` naming one interface, for the SIOC* and TUNSETIFF ioctls.
pub(crate) fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0) {
        return Err(invalid_ifname(name));
    }
    // SAFETY: ifreq is a name array and a union of plain values; all zeroes is valid.
    let mut ifr: libc::ifreq = unsafe { mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(ifr)
}

/// The interface name the kernel left in an `ifreq` (TUNSETIFF may pick one).
pub(crate) fn ifreq_name(ifr: &libc::ifreq) -> String {
    let bytes: Vec<u8> = ifr
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An ioctl taking a `struct ifreq *`.
pub(crate) fn ioctl_ifreq(
    fd: BorrowedFd<'_>,
    req: c_ulong,
    ifr: &mut libc::ifreq,
) -> io::Result<()> {
    let ifr: *mut libc::ifreq = ifr;
    // SAFETY: `ifr` points to a live ifreq; every request used here reads/writes one ifreq.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), req, ifr) })?;
    Ok(())
}

/// The flags field of an `ifreq` filled by SIOCGIFFLAGS.
pub(crate) fn ifreq_flags(ifr: &libc::ifreq) -> c_short {
    // SAFETY: every bit pattern is a valid c_short; SIOCGIFFLAGS wrote this member.
    unsafe { ifr.ifr_ifru.ifru_flags }
}

/// The MTU field of an `ifreq` filled by SIOCGIFMTU.
pub(crate) fn ifreq_mtu(ifr: &libc::ifreq) -> c_int {
    // SAFETY: every bit pattern is a valid c_int; SIOCGIFMTU wrote this member.
    unsafe { ifr.ifr_ifru.ifru_mtu }
}

/// `struct ethtool_value` (`include/uapi/linux/ethtool.h`): a command and one u32.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct EthtoolValue {
    pub(crate) cmd: u32,
    pub(crate) data: u32,
}

/// SIOCETHTOOL on interface `name` with an `ethtool_value` command; the kernel may write
/// `value.data` (the G* commands).
pub(crate) fn ethtool_value(
    fd: BorrowedFd<'_>,
    name: &str,
    value: &mut EthtoolValue,
) -> io::Result<()> {
    let mut ifr = ifreq(name)?;
    ifr.ifr_ifru.ifru_data = ptr::from_mut(value).cast();
    let ifr: *mut libc::ifreq = &mut ifr;
    // SAFETY: `ifr` points to a live ifreq whose data pointer points to `value`, a live
    // ethtool_value; the legacy ethtool_value commands read and write only that struct.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), SIOCETHTOOL, ifr) })?;
    Ok(())
}

/// `struct ethtool_drvinfo` (`include/uapi/linux/ethtool.h`), for ETHTOOL_GDRVINFO.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct EthtoolDrvinfo {
    pub(crate) cmd: u32,
    pub(crate) driver: [u8; 32],
    pub(crate) rest: [u8; 32 * 4 + 12 + 5 * 4],
}

/// SIOCETHTOOL ETHTOOL_GDRVINFO on interface `name`: its driver's name.
pub(crate) fn ethtool_driver(fd: BorrowedFd<'_>, name: &str) -> io::Result<String> {
    let mut info = EthtoolDrvinfo {
        cmd: 0x3,
        driver: [0; 32],
        rest: [0; 32 * 4 + 12 + 5 * 4],
    };
    let mut ifr = ifreq(name)?;
    ifr.ifr_ifru.ifru_data = ptr::from_mut(&mut info).cast();
    let ifr: *mut libc::ifreq = &mut ifr;
    // SAFETY: `ifr` points to a live ifreq whose data pointer points to `info`, a live
    // ethtool_drvinfo of the uapi size; ETHTOOL_GDRVINFO writes only that struct.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), SIOCETHTOOL, ifr) })?;
    let end = info.driver.iter().position(|&b| b == 0).unwrap_or(32);
    Ok(String::from_utf8_lossy(&info.driver[..end]).into_owned())
}

/// Gives the heap memory free() has kept back to the kernel (glibc's `malloc_trim(0)`), e.g.
/// after a burst of API connections, which glibc's arenas would otherwise keep as RSS. Not
/// for a hot path: it walks every arena. Does nothing with another C library.
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only walks and shrinks the allocator's own arenas; it takes no
    // pointer and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// An ioctl whose argument is a pointer to an int (TUNGETFEATURES, TUNSETVNETHDRSZ).
pub(crate) fn ioctl_int_ptr(fd: BorrowedFd<'_>, req: c_ulong, value: &mut c_int) -> io::Result<()> {
    let value: *mut c_int = value;
    // SAFETY: `value` points to a live int; these requests read or write one int there.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), req, value) })?;
    Ok(())
}

/// An ioctl whose argument is an unsigned integer passed by value (TUNSETOFFLOAD).
pub(crate) fn ioctl_uint(fd: BorrowedFd<'_>, req: c_ulong, value: c_uint) -> io::Result<()> {
    // SAFETY: the argument is a plain integer, not a pointer; the kernel reads nothing else.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), req, c_ulong::from(value)) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmsg_round_trip() {
        let mut buf = ControlBuf::EMPTY;
        let space = cmsg_put_u16(&mut buf, 0, libc::SOL_UDP, UDP_SEGMENT, 1400);
        assert_eq!(space, cmsg_align(CMSG_HDR + 2));
        // SAFETY: CMSG_LEN is pure arithmetic.
        let c_len = unsafe { libc::CMSG_LEN(2) } as usize;
        assert_eq!(usize::from_ne_bytes(buf.0[..8].try_into().unwrap()), c_len);
        // An int message written the way the kernel writes UDP_GRO is found again.
        let mut grobuf = ControlBuf::EMPTY;
        let len = CMSG_HDR + 4;
        grobuf.0[..8].copy_from_slice(&len.to_ne_bytes());
        grobuf.0[8..12].copy_from_slice(&libc::SOL_UDP.to_ne_bytes());
        grobuf.0[12..16].copy_from_slice(&UDP_GRO.to_ne_bytes());
        grobuf.0[16..20].copy_from_slice(&1448i32.to_ne_bytes());
        let space = cmsg_align(len);
        assert_eq!(
            cmsg_find_int(&grobuf.0[..space], libc::SOL_UDP, UDP_GRO),
            Some(1448)
        );
        assert_eq!(
            cmsg_find_int(&grobuf.0[..space], libc::SOL_UDP, UDP_SEGMENT),
            None
        );
        // A length that runs past the buffer is rejected, not followed.
        grobuf.0[..8].copy_from_slice(&999usize.to_ne_bytes());
        assert_eq!(
            cmsg_find_int(&grobuf.0[..space], libc::SOL_UDP, UDP_GRO),
            None
        );
    }

    #[test]
    fn a_segment_size_and_two_ints_fit_one_buffer() {
        let mut buf = ControlBuf::EMPTY;
        let at = cmsg_put_u16(&mut buf, 0, libc::SOL_UDP, UDP_SEGMENT, 1400);
        let at = cmsg_put_int(&mut buf, at, libc::IPPROTO_IP, libc::IP_TOS, 0xb8);
        let at = cmsg_put_int(&mut buf, at, libc::IPPROTO_IP, libc::IP_TTL, 9);
        // SAFETY: CMSG_SPACE is pure arithmetic.
        let (space2, space4) = unsafe { (libc::CMSG_SPACE(2), libc::CMSG_SPACE(4)) };
        assert_eq!(at, (space2 + 2 * space4) as usize);
        let control = &buf.0[..at];
        assert_eq!(
            cmsg_find_int(control, libc::IPPROTO_IP, libc::IP_TOS),
            Some(0xb8)
        );
        assert_eq!(
            cmsg_find_int(control, libc::IPPROTO_IP, libc::IP_TTL),
            Some(9)
        );
        // A fourth int message does not fit: nothing is written, the end stays where it was.
        let full = cmsg_put_int(&mut buf, at, libc::IPPROTO_IP, libc::IP_TTL, 1);
        assert_eq!(full, at);
    }

    #[test]
    fn socket_addresses_round_trip() {
        let v6: SocketAddr = "[2001:db8::1]:4789".parse().unwrap();
        let v4: SocketAddr = "192.0.2.1:4789".parse().unwrap();
        for addr in [v4, v6] {
            let raw = RawAddr::from_socket_addr(addr);
            let mut buf = AddrBuf::new();
            // Copy the raw bytes as the kernel would.
            let len = raw.len() as usize;
            let src: *const u8 = raw.as_ptr().cast();
            let dst: *mut u8 = ptr::from_mut(&mut buf.0).cast();
            // SAFETY: both regions hold at least `len` bytes and do not overlap.
            unsafe { ptr::copy_nonoverlapping(src, dst, len) };
            assert_eq!(buf.to_socket_addr(raw.len()), Some(addr));
        }
    }

    #[test]
    fn long_interface_names_are_refused() {
        assert!(ifreq("0123456789abcdef").is_err());
        assert!(ifreq("a\0b").is_err());
        assert_eq!(ifreq_name(&ifreq("veth0").unwrap()), "veth0");
    }
}
