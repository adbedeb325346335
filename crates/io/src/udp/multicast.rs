//! Underlay multicast for [`UdpUnderlay`]: joining and leaving the groups that carry a network's
//! broadcast, unknown unicast and multicast frames (RFC 7348 §4.2), and the options that make
//! the send sockets use the locator's interface for them.
//!
//! ```text
//!   recv socket   (locator, port)   unicast only: the kernel matches a datagram's destination
//!                                    address against the bound one, so group traffic skips it
//!   group socket  (group, port)     one per joined group, at most MAX_GROUPS; its membership is
//!                                    on the locator's interface (IPv4: ip_mreqn with the
//!                                    locator's address; IPv6: the locator's ifindex), and with
//!                                    IP(V6)_MULTICAST_ALL off it gets only that group, only
//!                                    from that interface
//!   send sockets  IP(V6)_MULTICAST_IF = the locator's interface (no route to the group needed),
//!                 IP(V6)_MULTICAST_LOOP off (a host never hears its own floods),
//!                 TTL / hop limit DEFAULT_MULTICAST_TTL, see set_multicast_ttl
//! ```
//!
//! A wildcard socket on the VXLAN port would also take unicast datagrams, hence one socket
//! bound to each group address. SO_REUSEADDR on group sockets lets two underlays of one
//! namespace (two locators) join the same group. Leaving closes the group's socket, which drops
//! its membership (the kernel sends the IGMP/MLD leave when no socket of the host is left in
//! the group on that interface). Group sockets do not ask for UDP GRO: flooded traffic is sparse.

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Once;

use super::{raise_buffer, UdpUnderlay};
use crate::batch::RecvBatch;
use crate::sys::{self, RawAddr};

/// Most groups one underlay joins. Each costs a socket and a membership (IGMP/MLD state, a
/// filter entry on the NIC); networks share groups, so a node needs few.
pub const MAX_GROUPS: usize = 64;
/// The multicast TTL (IPv4) or hop limit (IPv6) of flooded datagrams until
/// [`UdpUnderlay::set_multicast_ttl`] says otherwise. The kernel's default of 1 keeps a group
/// on one link; 8 lets a routed multicast underlay carry it a few hops, while still bounded.
pub const DEFAULT_MULTICAST_TTL: u8 = 8;

/// `include/uapi/linux/in6.h`, for libc versions that do not export it.
const IPV6_MULTICAST_ALL: libc::c_int = 29;

/// One joined group and the socket that holds its membership and receives it.
#[derive(Debug)]
pub(super) struct Membership {
    group: IpAddr,
    fd: OwnedFd,
}

impl UdpUnderlay {
    /// Joins `group` on the locator's interface and starts receiving datagrams sent to
    /// (`group`, port): they come out of [`UdpUnderlay::recv_group_batch`] like unicast ones.
    ///
    /// Refused (`InvalidInput`) for a group that is not multicast, of the other address family,
    /// or when the underlay is bound to an unspecified address (no interface to join on);
    /// `AlreadyExists` when joined already; `Other` beyond [`MAX_GROUPS`]. The group's socket
    /// is made in the calling thread's network namespace: call this where the underlay was
    /// bound.
    pub fn join(&mut self, group: IpAddr) -> io::Result<()> {
        let local = self.local.ip();
        if !group.is_multicast() {
            return Err(invalid(format!(
                "{group} is not a multicast address; use e.g. 239.1.1.1 or ff0e::1"
            )));
        }
        if group.is_ipv4() != local.is_ipv4() {
            return Err(invalid(format!(
                "group {group} is not of the underlay's address family (locator {local})"
            )));
        }
        if local.is_unspecified() {
            return Err(invalid(format!(
                "cannot join {group} on an underlay bound to {local}: bind it to the locator"
            )));
        }
        if self.groups.iter().any(|m| m.group == group) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("group {group} is joined already"),
            ));
        }
        if self.groups.len() >= MAX_GROUPS {
            return Err(io::Error::other(format!(
                "cannot join {group}: {MAX_GROUPS} groups are joined already, the most one underlay holds"
            )));
        }
        let fd = self.group_socket(group)?;
        self.groups.push(Membership { group, fd });
        self.counters.multicast_joins.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Leaves `group`: its socket closes, and with it the membership. `NotFound` when not
    /// joined. Groups joined after it move down one place in [`UdpUnderlay::groups`].
    pub fn leave(&mut self, group: IpAddr) -> io::Result<()> {
        let at = self
            .groups
            .iter()
            .position(|m| m.group == group)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("group {group} is not joined"),
                )
            })?;
        self.groups.remove(at);
        self.counters.multicast_leaves.fetch_add(1, Relaxed);
        Ok(())
    }

    /// The joined groups, in join order; the index of a group is the one
    /// [`UdpUnderlay::recv_group_batch`] takes.
    pub fn groups(&self) -> impl ExactSizeIterator<Item = IpAddr> + '_ {
        self.groups.iter().map(|m| m.group)
    }

    /// The receive socket of each joined group, in the order of [`UdpUnderlay::groups`], to
    /// poll for readability. A join or leave changes the list: poll sets must be rebuilt.
    pub fn group_fds(&self) -> impl ExactSizeIterator<Item = BorrowedFd<'_>> + '_ {
        self.groups.iter().map(|m| m.fd.as_fd())
    }

    /// [`UdpUnderlay::recv_batch`] on the socket of the `index`th joined group
    /// (`InvalidInput` when there is no such group).
    pub fn recv_group_batch(&self, index: usize, batch: &mut RecvBatch) -> io::Result<usize> {
        let membership = self.groups.get(index).ok_or_else(|| {
            invalid(format!(
                "no group at index {index}: {} joined",
                self.groups.len()
            ))
        })?;
        self.receive(membership.fd.as_fd(), batch)
    }

    /// Sets the TTL (IPv4) or hop limit (IPv6) of datagrams sent to a group; 1 keeps them on
    /// the locator's link. Unicast datagrams keep the kernel's default.
    pub fn set_multicast_ttl(&self, ttl: u8) -> io::Result<()> {
        for fd in self.send_fds() {
            set_ttl(fd, self.local.ip(), ttl)?;
        }
        Ok(())
    }

    /// Every socket that may send: the pool, and the receive socket (it sends when the pool is
    /// empty; setting it too keeps the rule simple).
    pub(super) fn send_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        std::iter::once(self.recv.as_fd()).chain(self.senders.iter().map(|s| s.as_fd()))
    }

    /// At bind: multicast sends leave through the locator's interface, are not looped back to
    /// this host, and carry [`DEFAULT_MULTICAST_TTL`]. Nothing to do for an unspecified
    /// locator: the kernel then picks the interface by route.
    pub(super) fn configure_multicast_sends(&self) -> io::Result<()> {
        let local = self.local.ip();
        for fd in self.send_fds() {
            set_ttl(fd, local, DEFAULT_MULTICAST_TTL)?;
            let (level, loop_opt) = match local {
                IpAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP),
                IpAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP),
            };
            sys::setsockopt(fd, level, loop_opt, &0 as &libc::c_int)?;
            if local.is_unspecified() {
                continue;
            }
            match local {
                IpAddr::V4(_) => {
                    let mreq = mreqn(None, local);
                    sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &mreq)?;
                }
                IpAddr::V6(_) if self.ifindex != 0 => {
                    let index = self.ifindex as libc::c_int;
                    sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_IF, &index)?;
                }
                IpAddr::V6(_) => {}
            }
        }
        Ok(())
    }

    /// A socket bound to (`group`, port) holding the group's membership on the locator's
    /// interface, and receiving only that group from that interface.
    fn group_socket(&self, group: IpAddr) -> io::Result<OwnedFd> {
        let port = self.local.port();
        let (domain, addr) = match group {
            IpAddr::V4(_) => (libc::AF_INET, SocketAddr::new(group, port)),
            // The scope matters only for link-local-scope groups (ff02::/16), which need it.
            IpAddr::V6(g) => (
                libc::AF_INET6,
                SocketAddr::V6(SocketAddrV6::new(g, port, 0, self.ifindex)),
            ),
        };
        let socket = sys::socket(domain, libc::SOCK_DGRAM, libc::IPPROTO_UDP)?;
        let fd = socket.as_fd();
        sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1 as &libc::c_int)?;
        let context = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("joining {group} on {}: {e}", self.local.ip()),
            )
        };
        match group {
            IpAddr::V4(_) => {
                sys::setsockopt(
                    fd,
                    libc::IPPROTO_IP,
                    libc::IP_MULTICAST_ALL,
                    &0 as &libc::c_int,
                )?;
                let mreq = mreqn(Some(group), self.local.ip());
                sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, &mreq)
                    .map_err(context)?;
            }
            IpAddr::V6(g) => {
                sys::setsockopt(
                    fd,
                    libc::IPPROTO_IPV6,
                    libc::IPV6_V6ONLY,
                    &1 as &libc::c_int,
                )?;
                sys::setsockopt(
                    fd,
                    libc::IPPROTO_IPV6,
                    IPV6_MULTICAST_ALL,
                    &0 as &libc::c_int,
                )?;
                let mreq = libc::ipv6_mreq {
                    ipv6mr_multiaddr: libc::in6_addr {
                        s6_addr: g.octets(),
                    },
                    ipv6mr_interface: self.ifindex,
                };
                sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP, &mreq)
                    .map_err(context)?;
            }
        }
        sys::bind(fd, &RawAddr::from_socket_addr(addr)).map_err(context)?;
        raise_buffer(fd, libc::SO_RCVBUFFORCE, libc::SO_RCVBUF);
        Ok(socket)
    }
}

/// The TTL or hop limit of multicast sends from `fd`, a socket of `local`'s family.
fn set_ttl(fd: BorrowedFd<'_>, local: IpAddr, ttl: u8) -> io::Result<()> {
    let value = libc::c_int::from(ttl);
    match local {
        IpAddr::V4(_) => sys::setsockopt(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, &value),
        IpAddr::V6(_) => sys::setsockopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, &value),
    }
}

/// An `ip_mreqn` naming the interface by its address (the kernel finds the device that has
/// it); the group is left zero for IP_MULTICAST_IF.
fn mreqn(group: Option<IpAddr>, local: IpAddr) -> libc::ip_mreqn {
    let v4 = |ip: Option<IpAddr>| match ip {
        Some(IpAddr::V4(a)) => u32::from_ne_bytes(a.octets()),
        _ => 0,
    };
    libc::ip_mreqn {
        imr_multiaddr: libc::in_addr { s_addr: v4(group) },
        imr_address: libc::in_addr {
            s_addr: v4(Some(local)),
        },
        imr_ifindex: 0,
    }
}

/// The interface IPv6 multicast uses: the one with the locator, 0 (the kernel picks by route)
/// for IPv4 (whose options name the interface by address), an unspecified locator, or when it
/// cannot be found (logged once).
pub(super) fn interface_index(local: IpAddr) -> u32 {
    static MISSING: Once = Once::new();
    let IpAddr::V6(v6) = local else {
        return 0;
    };
    if v6.is_unspecified() {
        return 0;
    }
    ipv6_ifindex(v6).unwrap_or_else(|e| {
        MISSING.call_once(|| {
            log::warn!("cannot find the interface of {v6}: {e}; multicast follows the routes");
        });
        0
    })
}

/// The index of the interface that has `addr`, from `/proc/thread-self/net/if_inet6` (the
/// calling thread's namespace, which a test may have entered with `setns`). Its lines are
/// `ADDRESS(32 hex) IFINDEX(hex) PREFIXLEN SCOPE FLAGS NAME`.
fn ipv6_ifindex(addr: Ipv6Addr) -> io::Result<u32> {
    let table = std::fs::read_to_string("/proc/thread-self/net/if_inet6")?;
    let want = format!("{:032x}", u128::from(addr));
    table
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (a, index) = (fields.next()?, fields.next()?);
            (a == want).then(|| u32::from_str_radix(index, 16).ok())?
        })
        .next()
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface has address {addr}"),
            )
        })
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_an_ipv6_ifindex_or_none() {
        // ::1 is on lo (index 1) whenever IPv6 is on; elsewhere the lookup says NotFound.
        match ipv6_ifindex(Ipv6Addr::LOCALHOST) {
            Ok(index) => assert_eq!(index, 1),
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
        }
        assert!(ipv6_ifindex("2001:db8::dead".parse().unwrap()).is_err());
    }

    #[test]
    fn mreqn_names_group_and_interface_address() {
        let m = mreqn(
            Some("239.1.2.3".parse().unwrap()),
            "10.0.0.1".parse().unwrap(),
        );
        assert_eq!(m.imr_multiaddr.s_addr.to_ne_bytes(), [239, 1, 2, 3]);
        assert_eq!(m.imr_address.s_addr.to_ne_bytes(), [10, 0, 0, 1]);
        assert_eq!(
            mreqn(None, "10.0.0.1".parse().unwrap())
                .imr_multiaddr
                .s_addr,
            0
        );
    }
}
