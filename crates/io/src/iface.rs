//! Interfaces by name or by address, asked of the kernel in the calling thread's namespace: the
//! interface that holds the locator (where the kernel datapath's underlay program goes and its
//! tunnel packets leave), an interface's index and MAC; and the monotonic clock the kernel's
//! programs read.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A network interface of this namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its name.
    pub name: String,
    /// Its index.
    pub ifindex: u32,
    /// Its MAC address.
    pub mac: [u8; 6],
}

/// The interface's index and MAC, asked of the kernel (the calling thread's namespace: sysfs
/// may be another namespace's).
pub fn interface(name: &str) -> io::Result<Interface> {
    let cname = std::ffi::CString::new(name).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?}"),
        )
    })?;
    // SAFETY: if_nametoindex reads a NUL-terminated string.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {name}: {}", io::Error::last_os_error()),
        ));
    }
    // SAFETY: a plain socket call; the descriptor is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: ifreq is plain old data; all zeros is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr
        .ifr_name
        .iter_mut()
        .zip(name.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR fills the ifreq passed by pointer; `fd` is a valid socket.
    let rc = unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr) };
    let err = io::Error::last_os_error();
    // SAFETY: closes the socket opened above, once.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return Err(io::Error::new(
            err.kind(),
            format!("mac address of {name}: {err}"),
        ));
    }
    let mut mac = [0u8; 6];
    // SAFETY: after SIOCGIFHWADDR the union holds ifru_hwaddr.
    let hw = unsafe { ifr.ifr_ifru.ifru_hwaddr.sa_data };
    for (m, b) in mac.iter_mut().zip(hw.iter()) {
        *m = *b as u8;
    }
    Ok(Interface {
        name: name.to_string(),
        ifindex,
        mac,
    })
}

/// The interface that has `addr` as one of its IPv4 addresses.
pub fn holding(addr: Ipv4Addr) -> io::Result<Interface> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list it allocated, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = None;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr of the family it names.
        let family = unsafe { (*ifa.ifa_addr).sa_family };
        if i32::from(family) != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET sockaddr is a sockaddr_in.
        let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
        if Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == addr {
            // SAFETY: ifa_name is a NUL-terminated string owned by the list.
            let name = unsafe { CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    let name = found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface has the locator {addr}"),
        )
    })?;
    interface(&name)
}

/// Every IPv4 and IPv6 address of interface `name` (none when it has none or does not exist).
pub fn addresses(name: &str) -> io::Result<Vec<IpAddr>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list it allocated, freed below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = Vec::new();
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        if unsafe { CStr::from_ptr(ifa.ifa_name) }.to_bytes() != name.as_bytes() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr of the family it names.
        let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
        if family == libc::AF_INET {
            // SAFETY: an AF_INET sockaddr is a sockaddr_in.
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            found.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                sin.sin_addr.s_addr,
            ))));
        } else if family == libc::AF_INET6 {
            // SAFETY: an AF_INET6 sockaddr is a sockaddr_in6.
            let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
            found.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `bpf_ktime_get_ns` reads, so a time nvod writes into a
/// map compares with the programs' own.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_holds_127_0_0_1() {
        match holding(Ipv4Addr::LOCALHOST) {
            Ok(i) => assert_eq!(i.name, "lo"),
            // A namespace whose lo is down has no address on it.
            Err(e) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
        }
        assert!(holding(Ipv4Addr::new(192, 0, 2, 254)).is_err());
    }

    #[test]
    fn loopback_addresses_are_loopback() {
        // lo may be down (no address) in a fresh namespace; what it has is loopback.
        let found = addresses("lo").unwrap();
        assert!(found.iter().all(IpAddr::is_loopback), "{found:?}");
        assert!(addresses("nosuchif0").unwrap().is_empty());
    }
}
