//! The TUN device ILA packets cross the kernel through (`nvoila0`: `IFF_TUN | IFF_NO_PI |
//! IFF_MULTI_QUEUE`, one queue per datapath worker).
//!
//! ```text
//!  egress:  nvod ── write(IPv6 packet, destination = remote locator::identifier) ──► nvoila0
//!             ip6_rcv → ip6_route_input → ip6_forward (hop limit − 1) → underlay device
//!  ingress: underlay ── IPv6 to this host's locator /64 ──► route LOCATOR/64 dev nvoila0
//!             → the device's queue (the kernel picks one by flow hash) → read by nvod
//! ```
//!
//! [`IlaTun::open`] makes the device (or attaches a queue to it), turns off IPv6 address
//! generation on it (no link-local address: no DAD, router or MLD traffic to read), sets its
//! IPv6 forwarding, brings it up and routes the locator prefix to it (`ip -6 route replace`).
//! The kernel forwards what is written only with `net.ipv6.conf.all.forwarding = 1`; without
//! it `open` refuses, saying so. Packets are read and written one per system call, complete
//! (no virtio-net header, no offloads): the kernel segments before it hands a packet over.

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::Command;

use crate::stt_tso::{read_sysctl, write_sysctl};
use crate::{sys, tun};

/// The device's name.
pub const ILA_TUN: &str = "nvoila0";

/// One queue of the ILA TUN device; the device goes away with its last queue.
#[derive(Debug)]
pub struct IlaTun {
    fd: OwnedFd,
}

impl IlaTun {
    /// Opens a queue of [`ILA_TUN`] in the calling thread's network namespace (making the
    /// device at the first call) and routes `locator`/64 to it. Needs CAP_NET_ADMIN, a writable
    /// `/proc/sys/net` and `ip` (iproute2) on PATH.
    pub fn open(locator: Ipv6Addr) -> io::Result<IlaTun> {
        let forwarding = read_sysctl("net/ipv6/conf/all/forwarding")?;
        if forwarding == 0 {
            return Err(io::Error::other(
                "net.ipv6.conf.all.forwarding is 0: the kernel would not forward the ila packets \
                 nvod writes to its tun device; set it to 1",
            ));
        }
        let with_name = |e: io::Error| io::Error::new(e.kind(), format!("tun {ILA_TUN}: {e}"));
        let (fd, _) = tun::open().map_err(with_name)?;
        let mut ifr = sys::ifreq(ILA_TUN)?;
        ifr.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_MULTI_QUEUE) as _;
        sys::ioctl_ifreq(fd.as_fd(), libc::TUNSETIFF, &mut ifr).map_err(with_name)?;
        let conf = format!("net/ipv6/conf/{ILA_TUN}");
        write_sysctl(&format!("{conf}/addr_gen_mode"), "1").map_err(with_name)?;
        // IPv6 on (a host may make new devices without it) for the route; no address on it.
        write_sysctl(&format!("{conf}/disable_ipv6"), "0").map_err(with_name)?;
        write_sysctl(&format!("{conf}/forwarding"), "1").map_err(with_name)?;
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        tun::set_up(ctl.as_fd(), ILA_TUN).map_err(with_name)?;
        let prefix = Ipv6Addr::from(u128::from(locator) & !u128::from(u64::MAX));
        let out = Command::new("ip")
            .args([
                "-6",
                "route",
                "replace",
                &format!("{prefix}/64"),
                "dev",
                ILA_TUN,
            ])
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("run ip -6 route: {e}")))?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "ip -6 route replace {prefix}/64 dev {ILA_TUN}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(IlaTun { fd })
    }

    /// Reads one packet into `buf`; `WouldBlock` when there is none.
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        sys::read(self.fd.as_fd(), buf)
    }

    /// Writes one IPv6 packet for the kernel to route.
    pub fn write(&self, packet: &[u8]) -> io::Result<()> {
        sys::write(self.fd.as_fd(), packet).map(drop)
    }
}

impl AsFd for IlaTun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
