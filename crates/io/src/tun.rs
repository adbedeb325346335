//! What the TAP ports ([`crate::tap`]) and the STT transmit device ([`crate::stt_tso`]) share:
//! opening `/dev/net/tun` and asking what it offers, and bringing the made device up.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::sys;

/// `/dev/net/tun` opened non-blocking (no device attached yet: TUNSETIFF makes one) and the
/// `IFF_*` flags the kernel's tun offers (TUNGETFEATURES).
pub(crate) fn open() -> io::Result<(OwnedFd, libc::c_int)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")))?;
    let fd = OwnedFd::from(file);
    let mut features: libc::c_int = 0;
    sys::ioctl_int_ptr(fd.as_fd(), libc::TUNGETFEATURES, &mut features)?;
    Ok((fd, features))
}

/// Brings interface `name` up (SIOCGIFFLAGS, then SIOCSIFFLAGS with `IFF_UP`) through `ctl`,
/// any AF_INET datagram socket.
pub(crate) fn set_up(ctl: BorrowedFd<'_>, name: &str) -> io::Result<()> {
    let mut ifr = sys::ifreq(name)?;
    sys::ioctl_ifreq(ctl, sys::SIOCGIFFLAGS, &mut ifr)?;
    ifr.ifr_ifru.ifru_flags = sys::ifreq_flags(&ifr) | libc::IFF_UP as libc::c_short;
    sys::ioctl_ifreq(ctl, sys::SIOCSIFFLAGS, &mut ifr)
}
