//! STT frames handed whole to the kernel's TCP segmentation, as CVSW lets the vNIC's TSO cut
//! them (the STT paper; draft-davie-stt-08 §3): one write per frame of up to 64 KiB instead of
//! one datagram per segment.
//!
//! nvod owns a TUN device (`nvostt%d`: `IFF_TUN | IFF_NO_PI | IFF_VNET_HDR`) in its network
//! namespace and writes each STT frame to it as one IPv4 packet — outer IP header, the
//! TCP-like header of the first segment with a partial checksum
//! (`nvo_encap::stt::Segmenter::offload_header`), the STT frame — behind a virtio-net header
//! that asks for TCP segmentation (`gso_type` TCPV4, `gso_size` = the segment payload,
//! `NEEDS_CSUM` at the TCP checksum). The kernel takes the packet as received on the TUN,
//! routes it to the remote VTEP (forwarding), and its GSO — or the underlay NIC's TSO — cuts it
//! into the STT segments, the STT header only in the first (see `offload_header` for why the
//! sequence numbers come out right).
//!
//! ```text
//!  nvod ── write(vnet hdr + IPv4 + TCP-like hdr + STT frame) ──► nvostt0 (TUN, no address)
//!            ip_rcv → ip_route_input (accept_local, rp_filter 0) → ip_forward (TTL − 1)
//!            → underlay device: GSO/TSO → MTU-sized STT segments on the wire
//! ```
//!
//! Why a TUN and not a PACKET socket with `PACKET_VNET_HDR` on the underlay device: the packet
//! socket takes a whole Ethernet frame, so nvod would have to route (which device, which next
//! hop) and resolve neighbours itself, and follow both as they change; through the TUN the
//! kernel's own routing, neighbour tables, netfilter and qdiscs apply, as for the raw socket.
//! The offload flags of the device (TUNSETOFFLOAD) only say what the kernel may hand *to*
//! nvod; writes with a GSO header are taken whatever they say, and nvod reads nothing, so none
//! is asked for.
//!
//! What the kernel requires, each set per device on the TUN (nothing host-wide changes):
//! - `net/ipv4/conf/<tun>/forwarding = 1`: `ip_route_input_slow` forwards only what arrives on
//!   a device with forwarding on (the input device's flag; `ip_forward` itself does not look
//!   at the global switch);
//! - `accept_local = 1`: the packets carry the locator, a local address, as source, which
//!   `fib_validate_source` refuses as martian otherwise;
//! - `rp_filter = 0`: a device without address fails any reverse-path check
//!   (`fib_validate_source`'s `last_resort`). The check uses the larger of the device's and
//!   `conf/all`'s value, so with `net.ipv4.conf.all.rp_filter` ≠ 0 [`SttTso::open`] refuses;
//! - `net/ipv6/conf/<tun>/disable_ipv6 = 1` (best effort): no link-local address and no
//!   router solicitations on a device nobody reads.
//!
//! `ip_forward` decrements the TTL, so packets are written with one more than the TTL wanted
//! on the wire (255 cannot be sent this way). Forwarded packets go through the netfilter
//! FORWARD hook, not OUTPUT: a host whose forward policy drops must accept them there. IPv4
//! only: an IPv6 locator keeps the software segmenter. The IPv4 ID is 0 in the written
//! packet and GSO numbers the segments from it (0, 1, 2, …); the raw socket's datagrams, with
//! DF, all carry ID 0 (`ip_select_ident_segs`) — the one byte-level difference on the wire
//! besides the IP header checksums that follow from it.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::vnet::{F_NEEDS_CSUM, GSO_NONE, GSO_TCPV4, VNET_HDR_LEN};
use crate::{sys, tun};

/// Length of the IPv4 header nvod writes (no options).
const IPV4_HEADER_LEN: usize = 20;
/// Length of STT's TCP-like header.
const TCP_HEADER_LEN: usize = 20;
/// The headers before the frame: virtio-net, IPv4, TCP-like.
const HEAD_LEN: usize = VNET_HDR_LEN + IPV4_HEADER_LEN + TCP_HEADER_LEN;
/// The longest STT frame one write carries: the IPv4 total length is 16 bits.
pub const MAX_TSO_FRAME: usize = u16::MAX as usize - IPV4_HEADER_LEN - TCP_HEADER_LEN;

/// The outer IPv4 header of one frame, as it should be on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsoOuter {
    /// The locator.
    pub src: Ipv4Addr,
    /// The remote VTEP.
    pub dst: Ipv4Addr,
    /// TTL on the wire (the packet is written with one more, for `ip_forward`).
    pub ttl: u8,
    /// TOS (DSCP and ECN).
    pub tos: u8,
    /// Don't Fragment.
    pub df: bool,
}

/// The TUN device STT frames are written to; see the module docs. It goes away with the value.
#[derive(Debug)]
pub struct SttTso {
    fd: OwnedFd,
    name: String,
    default_ttl: u8,
    default_df: bool,
}

impl SttTso {
    /// Creates the TUN device in the calling thread's network namespace, sets its sysctls and
    /// brings it up. Needs CAP_NET_ADMIN and a writable `/proc/sys/net`; refuses (with what to
    /// change) when `net.ipv4.conf.all.rp_filter` is on.
    pub fn open() -> io::Result<SttTso> {
        let all_rp = read_sysctl("net/ipv4/conf/all/rp_filter")?;
        if all_rp != 0 {
            return Err(io::Error::other(format!(
                "net.ipv4.conf.all.rp_filter is {all_rp}: the kernel would drop stt frames \
                 nvod routes through its tun device (local source, no address); set it to 0 \
                 or stt_offload = \"off\""
            )));
        }
        let (fd, features) = tun::open()?;
        if features & libc::IFF_VNET_HDR == 0 {
            return Err(io::Error::other(
                "the kernel's tun has no virtio-net header",
            ));
        }
        let mut ifr = sys::ifreq("nvostt%d")?;
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR) as _;
        sys::ioctl_ifreq(fd.as_fd(), libc::TUNSETIFF, &mut ifr)?;
        let name = sys::ifreq_name(&ifr);
        let with_name = |e: io::Error| io::Error::new(e.kind(), format!("tun {name}: {e}"));
        let mut len = VNET_HDR_LEN as libc::c_int;
        sys::ioctl_int_ptr(fd.as_fd(), libc::TUNSETVNETHDRSZ, &mut len).map_err(with_name)?;
        // Nothing is to come *from* the kernel: no offload for that direction.
        sys::ioctl_uint(fd.as_fd(), libc::TUNSETOFFLOAD, 0).map_err(with_name)?;
        let _ = write_sysctl(&format!("net/ipv6/conf/{name}/disable_ipv6"), "1");
        for (key, value) in [
            ("forwarding", "1"),
            ("accept_local", "1"),
            ("rp_filter", "0"),
        ] {
            write_sysctl(&format!("net/ipv4/conf/{name}/{key}"), value).map_err(with_name)?;
        }
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        tun::set_up(ctl.as_fd(), &name).map_err(with_name)?;
        let default_ttl = read_sysctl("net/ipv4/ip_default_ttl").unwrap_or(64);
        let no_pmtu_disc = read_sysctl("net/ipv4/ip_no_pmtu_disc").unwrap_or(0);
        Ok(SttTso {
            fd,
            name,
            default_ttl: u8::try_from(default_ttl).unwrap_or(64),
            default_df: no_pmtu_disc == 0,
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The TTL a raw socket without IP_TTL sends with (`net.ipv4.ip_default_ttl`).
    pub fn default_ttl(&self) -> u8 {
        self.default_ttl
    }

    /// Whether a raw socket without IP_MTU_DISCOVER sets DF (`net.ipv4.ip_no_pmtu_disc` = 0).
    pub fn default_df(&self) -> bool {
        self.default_df
    }

    /// Writes one STT frame: `tcp` is its TCP-like header with the partial checksum, `frame`
    /// the STT frame in two pieces, its STT header and the inner frame (written with one
    /// writev, never joined; at most [`MAX_TSO_FRAME`] bytes together), `mss` the frame bytes
    /// per segment.
    /// A frame of at most `mss` bytes goes as one packet whose checksum the kernel finishes.
    /// Fails with `InvalidInput` for a frame too long, an `mss` of 0 or a TTL of 255; the
    /// kernel's refusals (EAGAIN, EINVAL, EIO) come back as they are.
    pub fn send(
        &self,
        outer: &TsoOuter,
        tcp: &[u8; TCP_HEADER_LEN],
        frame: [&[u8]; 2],
        mss: u16,
    ) -> io::Result<()> {
        let [stt, inner] = frame;
        let len = stt.len() + inner.len();
        let head = head(outer, tcp, len, mss)?;
        let n = sys::writev(self.fd.as_fd(), &[&head, stt, inner])?;
        if n != head.len() + len {
            return Err(io::Error::other(format!(
                "tun {} took {n} of {} bytes",
                self.name,
                head.len() + len
            )));
        }
        Ok(())
    }
}

/// The virtio-net, IPv4 and TCP-like headers of one frame of `frame_len` bytes.
fn head(
    outer: &TsoOuter,
    tcp: &[u8; TCP_HEADER_LEN],
    frame_len: usize,
    mss: u16,
) -> io::Result<[u8; HEAD_LEN]> {
    let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    if frame_len > MAX_TSO_FRAME {
        return Err(invalid(format!(
            "stt frame of {frame_len} bytes exceeds the {MAX_TSO_FRAME} one ipv4 packet holds"
        )));
    }
    if mss == 0 {
        return Err(invalid("stt segment size 0".to_owned()));
    }
    let Some(ttl) = outer.ttl.checked_add(1) else {
        return Err(invalid("ttl 255 cannot survive ip_forward".to_owned()));
    };
    let mut h = [0u8; HEAD_LEN];
    let gso = frame_len > usize::from(mss);
    h[0] = F_NEEDS_CSUM;
    h[1] = if gso { GSO_TCPV4 } else { GSO_NONE };
    // The legacy header is in host byte order (no TUNSETVNETLE).
    let hdr_len = (IPV4_HEADER_LEN + TCP_HEADER_LEN) as u16;
    h[2..4].copy_from_slice(&hdr_len.to_ne_bytes());
    h[4..6].copy_from_slice(&(if gso { mss } else { 0 }).to_ne_bytes());
    h[6..8].copy_from_slice(&(IPV4_HEADER_LEN as u16).to_ne_bytes());
    h[8..10].copy_from_slice(&16u16.to_ne_bytes());
    let ip = &mut h[VNET_HDR_LEN..VNET_HDR_LEN + IPV4_HEADER_LEN];
    let total = (IPV4_HEADER_LEN + TCP_HEADER_LEN + frame_len) as u16;
    ip[0] = 0x45;
    ip[1] = outer.tos;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    // ID 0; GSO numbers the segments from it.
    ip[6] = if outer.df { 0x40 } else { 0 };
    ip[8] = ttl;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&outer.src.octets());
    ip[16..20].copy_from_slice(&outer.dst.octets());
    let sum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    h[VNET_HDR_LEN + IPV4_HEADER_LEN..].copy_from_slice(tcp);
    Ok(h)
}

/// The IPv4 header checksum (RFC 791 §3.1) of a header whose checksum field is zero.
fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub(crate) fn read_sysctl(key: &str) -> io::Result<i64> {
    let path = format!("/proc/sys/{key}");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("read {path}: {e}")))?;
    text.trim()
        .parse()
        .map_err(|_| io::Error::other(format!("{path}: not a number: {:?}", text.trim())))
}

pub(crate) fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    let path = format!("/proc/sys/{key}");
    std::fs::write(&path, value)
        .map_err(|e| io::Error::new(e.kind(), format!("write {value} to {path}: {e}")))
}

impl AsFd for SttTso {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTER: TsoOuter = TsoOuter {
        src: Ipv4Addr::new(192, 0, 2, 1),
        dst: Ipv4Addr::new(192, 0, 2, 2),
        ttl: 64,
        tos: 0x2e,
        df: true,
    };

    #[test]
    fn head_asks_for_tcp_segmentation_and_compensates_the_forwarding_hop() {
        let tcp = [7u8; TCP_HEADER_LEN];
        let h = head(&OUTER, &tcp, 3000, 1460).unwrap();
        let ne = |i: usize| u16::from_ne_bytes([h[i], h[i + 1]]);
        assert_eq!((h[0], h[1]), (F_NEEDS_CSUM, GSO_TCPV4));
        assert_eq!((ne(2), ne(4), ne(6), ne(8)), (40, 1460, 20, 16));
        let ip = &h[VNET_HDR_LEN..VNET_HDR_LEN + 20];
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 3040);
        assert_eq!((ip[1], ip[6], ip[8], ip[9]), (0x2e, 0x40, 65, 6));
        // A header with its checksum in place sums to 0xffff: its check is 0.
        assert_eq!(ipv4_checksum(ip), 0);
        assert_eq!(&h[30..], &tcp);
        // One segment's worth: no GSO, the checksum still left to the kernel.
        let small = head(&OUTER, &tcp, 1460, 1460).unwrap();
        assert_eq!(
            (small[0], small[1], small[4], small[5]),
            (F_NEEDS_CSUM, GSO_NONE, 0, 0)
        );
    }

    #[test]
    fn head_refuses_what_cannot_go() {
        let tcp = [0u8; TCP_HEADER_LEN];
        let kind = |r: io::Result<[u8; HEAD_LEN]>| r.err().map(|e| e.kind());
        let bad = Some(io::ErrorKind::InvalidInput);
        assert_eq!(kind(head(&OUTER, &tcp, MAX_TSO_FRAME + 1, 1460)), bad);
        assert!(head(&OUTER, &tcp, MAX_TSO_FRAME, 1460).is_ok());
        assert_eq!(kind(head(&OUTER, &tcp, 100, 0)), bad);
        let ttl255 = TsoOuter { ttl: 255, ..OUTER };
        assert_eq!(kind(head(&ttl255, &tcp, 100, 1460)), bad);
    }
}
