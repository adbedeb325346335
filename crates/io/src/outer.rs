//! The outer IP header fields a sending socket controls: TTL / hop limit, TOS / traffic class
//! and whether the datagram may be fragmented on the way (DF). Shared by
//! [`crate::UdpUnderlay::set_outer`] and [`crate::RawUnderlay::set_outer`].
//!
//! ```text
//!             IPv4 socket                          IPv6 socket
//!   ttl       IP_TTL                               IPV6_UNICAST_HOPS
//!   tos       IP_TOS (DSCP and ECN bits)           IPV6_TCLASS
//!   df true   IP_MTU_DISCOVER = IP_PMTUDISC_DO     IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DO
//!             DF set; larger than the path MTU     larger than the path MTU → EMSGSIZE
//!             → EMSGSIZE
//!   df false  IP_MTU_DISCOVER = IP_PMTUDISC_DONT   IPV6_MTU_DISCOVER = IPV6_PMTUDISC_DONT
//!             DF clear; the kernel fragments       the kernel fragments at the interface MTU
//! ```
//!
//! The TTL of datagrams to a multicast group is a different option (`IP_MULTICAST_TTL`), see
//! [`crate::UdpUnderlay::set_multicast_ttl`].
//!
//! Those are per socket. A tunnel that inherits its outer TOS or TTL from the inner packet
//! (RFC 6040 §4.1 normal mode copies the ECN field; RFC 2983 the DSCP) needs a value per
//! datagram instead: [`OuterValues`], pushed with [`crate::SendBatch::push_outer`] and sent as
//! control messages of that datagram's `sendmsg`, which override the socket options for it alone
//! (`ip_cmsg_send` / `ip6_datagram_send_ctl`, UDP and raw sockets alike):
//!
//! ```text
//!             IPv4 socket                          IPv6 socket
//!   tos       IP_TOS cmsg (int)                    IPV6_TCLASS cmsg (int)
//!   ttl       IP_TTL cmsg (int, 1..=255)           IPV6_HOPLIMIT cmsg (int)
//! ```
//!
//! Unlike the socket options, a TTL control message also overrides the multicast TTL / hop
//! limit ([`crate::UdpUnderlay::set_multicast_ttl`]) for a datagram to a group.

use std::io;
use std::os::fd::BorrowedFd;

use crate::sys::{self, ControlBuf};

/// Outer IP header values for one datagram, taken for instance from its inner packet; `None`
/// keeps the socket's setting ([`crate::UdpUnderlay::set_outer`], else the kernel default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OuterValues {
    /// TOS / traffic class: DSCP in the upper six bits, ECN in the lower two.
    pub tos: Option<u8>,
    /// TTL / hop limit. `Some(0)` counts as `None`: such a datagram would never leave the host
    /// (and IPv4 refuses it).
    pub ttl: Option<u8>,
}

/// Appends the control messages for `values` to `buf` at byte `at` (for an IPv6 socket when
/// `ipv6`); returns the end of what is written. `buf` has room for them after a `UDP_SEGMENT`.
pub(crate) fn put_cmsgs(buf: &mut ControlBuf, at: usize, ipv6: bool, values: OuterValues) -> usize {
    let (level, tos_type, ttl_type) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS, libc::IPV6_HOPLIMIT)
    } else {
        (libc::IPPROTO_IP, libc::IP_TOS, libc::IP_TTL)
    };
    let mut end = at;
    if let Some(tos) = values.tos {
        end = sys::cmsg_put_int(buf, end, level, tos_type, libc::c_int::from(tos));
    }
    if let Some(ttl) = values.ttl.filter(|&t| t > 0) {
        end = sys::cmsg_put_int(buf, end, level, ttl_type, libc::c_int::from(ttl));
    }
    end
}

/// Applies the fields that are `Some` to `fd` (an IPv6 socket when `ipv6`); `None` leaves the
/// field as it is. A TTL of 0 is refused (`InvalidInput`): such a datagram never leaves the host.
pub(crate) fn set_outer(
    fd: BorrowedFd<'_>,
    ipv6: bool,
    ttl: Option<u8>,
    tos: Option<u8>,
    df: Option<bool>,
) -> io::Result<()> {
    if ttl == Some(0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "outer ttl 0: a datagram that may make no hop never leaves the host; use 1 to 255",
        ));
    }
    let (level, ttl_opt, tos_opt, mtu_opt, pmtu_do, pmtu_dont) = if ipv6 {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_UNICAST_HOPS,
            libc::IPV6_TCLASS,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
            libc::IPV6_PMTUDISC_DONT,
        )
    } else {
        (
            libc::IPPROTO_IP,
            libc::IP_TTL,
            libc::IP_TOS,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DO,
            libc::IP_PMTUDISC_DONT,
        )
    };
    fn context(what: &'static str, value: libc::c_int) -> impl Fn(io::Error) -> io::Error {
        move |e| io::Error::new(e.kind(), format!("setting outer {what} {value}: {e}"))
    }
    if let Some(ttl) = ttl {
        let ttl = libc::c_int::from(ttl);
        sys::setsockopt(fd, level, ttl_opt, &ttl).map_err(context("ttl", ttl))?;
    }
    if let Some(tos) = tos {
        let tos = libc::c_int::from(tos);
        sys::setsockopt(fd, level, tos_opt, &tos).map_err(context("tos", tos))?;
    }
    if let Some(df) = df {
        let mode = if df { pmtu_do } else { pmtu_dont };
        sys::setsockopt(fd, level, mtu_opt, &mode).map_err(context("df mode", mode))?;
    }
    Ok(())
}
