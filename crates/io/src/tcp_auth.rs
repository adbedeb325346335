//! Protection of BGP's TCP connections: TCP-MD5 signatures (RFC 2385) and the Generalized TTL
//! Security Mechanism (GTSM, RFC 5082), set on a socket before `listen`/`connect` (or on an
//! accepted one).
//!
//! - [`set_md5_key`] installs (or, with an empty key, removes) the key for one peer address with
//!   `setsockopt(TCP_MD5SIG)`. On a listening socket the key applies to that peer's SYNs and is
//!   inherited by the connections accepted from it; a segment from a keyed peer without the
//!   right signature is dropped by the kernel (counted as `TCPMD5Failure`/`TCPMD5NotFound` in
//!   `nstat`), and a peer without a key is still accepted (the caller refuses non-neighbours).
//! - [`set_ttl_security`] sends with TTL / hop limit 255 and has the kernel drop every received
//!   segment whose TTL is below 255 (`IP_MINTTL`, `IPV6_MINHOPCOUNT`; counted as
//!   `TCPMinTTLDrop`), so only a directly connected peer can reach the socket.
//!
//! TCP-AO (RFC 5925, `TCP_AO_ADD_KEY`) is not here: the kernel this was built on (6.18) has
//! `CONFIG_TCP_AO` unset, and its setsockopt answers ENOPROTOOPT.

use std::io;
use std::net::IpAddr;
use std::os::fd::BorrowedFd;

use libc::c_int;

use crate::sys;

/// Longest key `TCP_MD5SIG` takes (`TCP_MD5SIG_MAXKEYLEN`).
pub const MD5_MAX_KEY: usize = 80;

/// `include/uapi/linux/tcp.h`: `struct tcp_md5sig`, with `tcpm_addr` (a
/// `__kernel_sockaddr_storage`, 128 bytes aligned to 8) spelled out as bytes so that it is
/// built without `unsafe`. Family and port sit where `sockaddr_in`/`sockaddr_in6` have them.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct TcpMd5Sig {
    family: u16,
    port: u16,
    /// The rest of the sockaddr: `sin_addr` at 0..4, or `sin6_flowinfo` at 0..4 and
    /// `sin6_addr` at 4..20.
    addr: [u8; 124],
    flags: u8,
    prefixlen: u8,
    keylen: u16,
    ifindex: c_int,
    key: [u8; MD5_MAX_KEY],
}

impl TcpMd5Sig {
    /// The command for `peer` on a socket of family v6 (`v6`) or v4.
    fn new(peer: IpAddr, v6: bool, key: &[u8]) -> io::Result<TcpMd5Sig> {
        if key.len() > MD5_MAX_KEY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a tcp-md5 key is at most {MD5_MAX_KEY} bytes"),
            ));
        }
        let mut sig = TcpMd5Sig {
            family: 0,
            port: 0,
            addr: [0; 124],
            flags: 0,
            prefixlen: 0,
            keylen: key.len() as u16,
            ifindex: 0,
            key: [0; MD5_MAX_KEY],
        };
        sig.key[..key.len()].copy_from_slice(key);
        // An IPv6 socket takes IPv4 peers as v4-mapped addresses, an IPv4 one IPv4 only.
        match (peer, v6) {
            (IpAddr::V4(a), false) => {
                sig.family = libc::AF_INET as u16;
                sig.addr[..4].copy_from_slice(&a.octets());
            }
            (peer, true) => {
                let a = match peer {
                    IpAddr::V4(a) => a.to_ipv6_mapped(),
                    IpAddr::V6(a) => a,
                };
                sig.family = libc::AF_INET6 as u16;
                sig.addr[4..20].copy_from_slice(&a.octets());
            }
            (IpAddr::V6(a), false) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("an ipv4 socket has no tcp-md5 key for ipv6 peer {a}"),
                ))
            }
        }
        Ok(sig)
    }
}

/// True when `fd` is an IPv6 socket.
fn is_v6(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(sys::local_addr(fd)?.is_ipv6())
}

/// Installs the TCP-MD5 key for segments to and from `peer` on the TCP socket `fd`; an empty
/// `key` removes it (ENOENT when there was none).
pub fn set_md5_key(fd: BorrowedFd<'_>, peer: IpAddr, key: &[u8]) -> io::Result<()> {
    let sig = TcpMd5Sig::new(peer, is_v6(fd)?, key)?;
    sys::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_MD5SIG, &sig)
}

/// GTSM on a TCP socket: `send` sends with TTL / hop limit 255 (else the kernel's default),
/// `require` drops every received segment whose TTL is below 255 (else no minimum). An IPv6
/// socket gets both the IPv6 options and (for v4-mapped peers) the IPv4 ones.
pub fn set_gtsm(fd: BorrowedFd<'_>, send: bool, require: bool) -> io::Result<()> {
    // IP_TTL -1 restores the default (net.ipv4.ip_default_ttl), as IPV6_UNICAST_HOPS -1 does.
    let ttl: c_int = if send { 255 } else { -1 };
    let min: c_int = if require { 255 } else { 0 };
    let v4 = || -> io::Result<()> {
        sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_TTL, &ttl)?;
        sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_MINTTL, &min)
    };
    if is_v6(fd)? {
        sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_UNICAST_HOPS, &ttl)?;
        sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT, &min)?;
        // A v6-only socket refuses nothing here; a dual-stack one needs them for v4 peers.
        let _ = v4();
        Ok(())
    } else {
        v4()
    }
}

/// `include/uapi/linux/tcp.h`.
const TCP_SAVE_SYN: c_int = 27;
const TCP_SAVED_SYN: c_int = 28;

/// Has a listening socket keep the IP and TCP headers of each connection's SYN, for
/// [`syn_ttl`] to read on the accepted socket.
pub fn save_syn(fd: BorrowedFd<'_>) -> io::Result<()> {
    sys::setsockopt(fd, libc::IPPROTO_TCP, TCP_SAVE_SYN, &1 as &c_int)
}

/// The TTL (hop limit) the SYN of an accepted connection arrived with, when its listener had
/// [`save_syn`]; None when the kernel kept no SYN. Reading frees the saved headers.
pub fn syn_ttl(fd: BorrowedFd<'_>) -> io::Result<Option<u8>> {
    let mut buf = [0u8; 512];
    let n = match sys::getsockopt_bytes(fd, libc::IPPROTO_TCP, TCP_SAVED_SYN, &mut buf) {
        Ok(n) => n,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(header_ttl(buf.get(..n).unwrap_or_default()))
}

/// The TTL of an IPv4 header (byte 8) or hop limit of an IPv6 one (byte 7).
fn header_ttl(header: &[u8]) -> Option<u8> {
    match header.first().map(|b| b >> 4) {
        Some(4) if header.len() >= 20 => header.get(8).copied(),
        Some(6) if header.len() >= 40 => header.get(7).copied(),
        _ => None,
    }
}

/// Whether this kernel has TCP-AO (RFC 5925): it answers `TCP_AO_ADD_KEY` with ENOPROTOOPT
/// when `CONFIG_TCP_AO` is off, and with EINVAL to an all-zero `struct tcp_ao_add` (no key,
/// no address family) when it is on. (A zero-length argument gets EINVAL either way.)
pub fn tcp_ao_supported() -> io::Result<bool> {
    /// `include/uapi/linux/tcp.h`.
    const TCP_AO_ADD_KEY: c_int = 38;
    let fd = sys::socket(libc::AF_INET, libc::SOCK_STREAM, 0)?;
    // Larger than struct tcp_ao_add (the kernel checks the length before the contents).
    let empty = [0u8; 256];
    match sys::setsockopt(
        std::os::fd::AsFd::as_fd(&fd),
        libc::IPPROTO_TCP,
        TCP_AO_ADD_KEY,
        &empty,
    ) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(false),
        Err(_) => Ok(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::os::fd::AsFd;

    #[test]
    fn the_command_has_the_kernel_layout() {
        // sizeof(struct tcp_md5sig) on x86_64 and aarch64.
        assert_eq!(std::mem::size_of::<TcpMd5Sig>(), 216);
        let sig = TcpMd5Sig::new("192.0.2.1".parse().unwrap(), false, b"secret").unwrap();
        assert_eq!(sig.family, libc::AF_INET as u16);
        assert_eq!(&sig.addr[..4], &[192, 0, 2, 1]);
        assert_eq!((sig.keylen, &sig.key[..6]), (6, &b"secret"[..]));
        let mapped = TcpMd5Sig::new("192.0.2.1".parse().unwrap(), true, b"k").unwrap();
        assert_eq!(mapped.family, libc::AF_INET6 as u16);
        assert_eq!(
            &mapped.addr[4..20],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]
        );
        assert!(TcpMd5Sig::new("2001:db8::1".parse().unwrap(), false, b"k").is_err());
        assert!(TcpMd5Sig::new("192.0.2.1".parse().unwrap(), false, &[0; 81]).is_err());
    }

    #[test]
    fn keys_and_ttl_security_are_taken_by_the_kernel() {
        assert!(!tcp_ao_supported().unwrap() || cfg!(not(target_os = "linux")));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let fd = listener.as_fd();
        set_md5_key(fd, "127.0.0.2".parse().unwrap(), b"secret").unwrap();
        // Removing it works once, then there is nothing to remove.
        set_md5_key(fd, "127.0.0.2".parse().unwrap(), b"").unwrap();
        assert!(set_md5_key(fd, "127.0.0.2".parse().unwrap(), b"").is_err());
        set_gtsm(fd, true, true).unwrap();
        let min = sys::getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MINTTL).unwrap();
        let ttl = sys::getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TTL).unwrap();
        assert_eq!((min, ttl), (255, 255));
        set_gtsm(fd, true, false).unwrap();
        assert_eq!(
            sys::getsockopt_int(fd, libc::IPPROTO_IP, libc::IP_MINTTL).unwrap(),
            0
        );
    }

    #[test]
    fn the_syn_ttl_is_read_from_the_saved_headers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        save_syn(listener.as_fd()).unwrap();
        let _client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        // Loopback SYNs arrive with the sender's TTL: the namespace's default.
        let default: u8 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_default_ttl")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(syn_ttl(accepted.as_fd()).unwrap(), Some(default));
        // Read once: the kernel frees it.
        assert_eq!(syn_ttl(accepted.as_fd()).unwrap(), None);
        // A listener that saves nothing gives nothing.
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = std::net::TcpStream::connect(plain.local_addr().unwrap()).unwrap();
        let (accepted, _) = plain.accept().unwrap();
        assert_eq!(syn_ttl(accepted.as_fd()).unwrap(), None);
    }

    #[test]
    fn ipv6_sockets_take_v6_and_v4_mapped_peers() {
        let Ok(listener) = TcpListener::bind("[::1]:0") else {
            return; // no IPv6 in this namespace
        };
        let fd = listener.as_fd();
        set_md5_key(fd, "::1".parse().unwrap(), b"secret").unwrap();
        set_md5_key(fd, "192.0.2.1".parse().unwrap(), b"secret").unwrap();
        set_gtsm(fd, true, true).unwrap();
        let hops = sys::getsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_MINHOPCOUNT).unwrap();
        assert_eq!(hops, 255);
        // An IPv4 socket has no key for an IPv6 peer.
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        assert!(set_md5_key(v4.as_fd(), "::1".parse().unwrap(), b"k").is_err());
    }

    #[test]
    fn header_ttls() {
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        v4[8] = 1;
        assert_eq!(header_ttl(&v4), Some(1));
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[7] = 255;
        assert_eq!(header_ttl(&v6), Some(255));
        assert_eq!(header_ttl(&v6[..39]), None);
        assert_eq!(header_ttl(&[]), None);
    }
}
