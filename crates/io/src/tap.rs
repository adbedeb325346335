//! A port on a TAP device nvo creates: `/dev/net/tun` with `IFF_TAP | IFF_NO_PI`, plus
//! `IFF_VNET_HDR` when asked for and the kernel offers it (TUNGETFEATURES).
//!
//! The device lives as long as the `TapPort`: it is not made persistent, so closing the
//! descriptor removes it. [`TapPort::create`] brings the link up (SIOCSIFFLAGS `IFF_UP`).
//!
//! Offloads (TUNSETOFFLOAD) stay off, so the kernel finishes checksums and segments before it
//! hands a frame over: frames read from a TAP device are always complete. With the virtio-net
//! header, nvo writes an all-zero header before each frame (no checksum or GSO request) and
//! reads one before each frame; the header is the hook for TSO on TAP later.
//!
//! A TAP device has no `recvmmsg`: a batch is one `read` per frame until the queue is empty.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Once;

use crate::batch::is_transient;
use crate::frame::{FrameBatch, FramePort};
use crate::sys::{self, MAX_BATCH};
use crate::vnet::{VNET_HDR_LEN, VNET_HDR_NONE};

static VNET_MISSING: Once = Once::new();

/// A TAP port; see the module docs.
#[derive(Debug)]
pub struct TapPort {
    fd: OwnedFd,
    /// A socket of the device's namespace, for the SIOC* ioctls.
    ctl: OwnedFd,
    name: String,
    ifindex: u32,
    vnet: bool,
}

impl TapPort {
    /// Creates TAP device `name` (empty: the kernel picks `tapN`) in the calling thread's
    /// network namespace and brings it up. `vnet_hdr` asks for the virtio-net header; without
    /// kernel support the port works without it, with one log line.
    pub fn create(name: &str, vnet_hdr: bool) -> io::Result<Self> {
        let with_name =
            |e: io::Error| io::Error::new(e.kind(), format!("tap device {name:?}: {e}"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/net/tun")
            .map_err(|e| io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")))?;
        let fd = OwnedFd::from(file);
        let mut features: libc::c_int = 0;
        sys::ioctl_int_ptr(fd.as_fd(), libc::TUNGETFEATURES, &mut features).map_err(with_name)?;
        let vnet = vnet_hdr && features & libc::IFF_VNET_HDR != 0;
        if vnet_hdr && !vnet {
            VNET_MISSING.call_once(|| {
                log::warn!("tap {name:?}: the kernel offers no vnet header; frames go without")
            });
        }
        let mut ifr = sys::ifreq(name)?;
        let mut flags = libc::IFF_TAP | libc::IFF_NO_PI;
        if vnet {
            flags |= libc::IFF_VNET_HDR;
        }
        ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
        sys::ioctl_ifreq(fd.as_fd(), libc::TUNSETIFF, &mut ifr).map_err(with_name)?;
        let name = sys::ifreq_name(&ifr);
        if vnet {
            let mut len = VNET_HDR_LEN as libc::c_int;
            sys::ioctl_int_ptr(fd.as_fd(), libc::TUNSETVNETHDRSZ, &mut len).map_err(with_name)?;
        }
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        let mut ifr = sys::ifreq(&name)?;
        sys::ioctl_ifreq(ctl.as_fd(), sys::SIOCGIFFLAGS, &mut ifr).map_err(with_name)?;
        ifr.ifr_ifru.ifru_flags = sys::ifreq_flags(&ifr) | libc::IFF_UP as libc::c_short;
        sys::ioctl_ifreq(ctl.as_fd(), sys::SIOCSIFFLAGS, &mut ifr).map_err(with_name)?;
        let ifindex = sys::if_nametoindex(&name).map_err(with_name)?;
        Ok(TapPort {
            fd,
            ctl,
            name,
            ifindex,
            vnet,
        })
    }
}

impl AsFd for TapPort {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl FramePort for TapPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn ifindex(&self) -> u32 {
        self.ifindex
    }

    fn mtu(&self) -> io::Result<u32> {
        crate::packet::mtu(self.ctl.as_fd(), &self.name)
    }

    fn vnet_hdr(&self) -> bool {
        self.vnet
    }

    fn recv_batch(&self, batch: &mut FrameBatch) -> io::Result<usize> {
        batch.reset(self.vnet);
        let mut lens = [0usize; MAX_BATCH];
        let mut got = 0;
        let mut error = None;
        for (slot, len) in batch.slots().zip(lens.iter_mut()) {
            match sys::read(self.fd.as_fd(), slot) {
                Ok(n) => *len = n,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
            got += 1;
        }
        for &len in &lens[..got] {
            batch.push(len, false);
        }
        match error {
            Some(e) if got == 0 && !is_transient(&e) => Err(e),
            _ => Ok(got),
        }
    }

    fn send(&self, frame: &[u8]) -> io::Result<()> {
        let head: &[u8] = if self.vnet { &VNET_HDR_NONE } else { &[] };
        sys::writev2(self.fd.as_fd(), head, frame).map(drop)
    }

    fn send_batch(&self, frames: &mut dyn Iterator<Item = &[u8]>) -> io::Result<usize> {
        let (mut sent, mut error) = (0, None);
        for frame in frames {
            match self.send(frame) {
                Ok(()) => sent += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(sent),
                Err(e) => error = Some(e),
            }
        }
        match error {
            Some(e) if sent == 0 => Err(e),
            _ => Ok(sent),
        }
    }
}
