//! A port on a TAP device nvo creates: `/dev/net/tun` with `IFF_TAP | IFF_NO_PI`, plus
//! `IFF_VNET_HDR` when asked for and the kernel offers it (TUNGETFEATURES).
//!
//! The device lives as long as the `TapPort`: it is not made persistent, so closing the
//! descriptor removes it. [`TapPort::create`] brings the link up (SIOCSIFFLAGS `IFF_UP`).
//!
//! With the virtio-net header, the TAP offloads (TUNSETOFFLOAD) are probed at create: first
//! `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_USO4 | TUN_F_USO6`, then without USO (before
//! Linux 6.2 the kernel refuses flags it does not know, EINVAL), then checksum only, then none.
//! [`TapPort::offloads`] says which set is in effect; the first port logs it, once per process.
//! With offloads on, the kernel hands frames over as its stack built them: partial checksums
//! (`NEEDS_CSUM`) and TCP/UDP GSO frames of up to 64 KiB, which [`FrameBatch`] finishes and cuts
//! into MTU-sized segments while the batch is read, exactly as for a [`crate::PacketPort`]. That
//! saves the kernel's software segmentation and checksumming before each read, and one read
//! per segment. Without the header no offload is asked for (nothing would say a checksum is
//! partial), so the kernel finishes every frame before handing it over.
//!
//! Frames nvo writes carry an all-zero virtio-net header (checksums complete, no GSO): the
//! offloads change nothing on that side. [`FramePort::send_meta`] writes a header that asks
//! for segmentation or a checksum instead: the reader of the device (the kernel's stack) takes
//! one GSO frame, whatever TUNSETOFFLOAD says (that concerns frames towards nvo).
//!
//! A TAP device has no `recvmmsg`: a batch is one `read` per frame until the queue is empty.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Once;

use crate::batch::is_transient;
use crate::frame::{FrameBatch, FramePort};
use crate::meta::FrameMeta;
use crate::sys::{self, MAX_BATCH};
use crate::tun;
use crate::vnet::{VNET_HDR_LEN, VNET_HDR_NONE};

static VNET_MISSING: Once = Once::new();
static OFFLOADS_LOGGED: Once = Once::new();

/// The TAP offloads (TUNSETOFFLOAD) in effect on a port: what the kernel may hand over
/// unfinished, for [`FrameBatch`] to finish. All off without the virtio-net header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapOffloads {
    /// Frames may carry a partial checksum (`TUN_F_CSUM`).
    pub csum: bool,
    /// TCP frames over IPv4 and IPv6 may be GSO frames of up to 64 KiB (`TUN_F_TSO4|6`).
    pub tso: bool,
    /// UDP frames may be GSO frames of equal-size datagrams (`TUN_F_USO4|6`, Linux 6.2).
    pub uso: bool,
}

impl TapOffloads {
    /// The sets tried at create, most first; the kernel takes a set whole or refuses it.
    /// TSO and USO need the checksum offload (the kernel refuses them without it).
    const PROBE_ORDER: [TapOffloads; 4] = [
        TapOffloads {
            csum: true,
            tso: true,
            uso: true,
        },
        TapOffloads {
            csum: true,
            tso: true,
            uso: false,
        },
        TapOffloads {
            csum: true,
            tso: false,
            uso: false,
        },
        TapOffloads {
            csum: false,
            tso: false,
            uso: false,
        },
    ];

    /// The TUNSETOFFLOAD argument.
    fn flags(self) -> libc::c_uint {
        let mut flags = 0;
        if self.csum {
            flags |= libc::TUN_F_CSUM;
        }
        if self.tso {
            flags |= libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
        }
        if self.uso {
            flags |= libc::TUN_F_USO4 | libc::TUN_F_USO6;
        }
        flags
    }
}

/// A TAP port; see the module docs.
#[derive(Debug)]
pub struct TapPort {
    fd: OwnedFd,
    /// A socket of the device's namespace, for the SIOC* ioctls.
    ctl: OwnedFd,
    name: String,
    ifindex: u32,
    vnet: bool,
    offloads: TapOffloads,
}

impl TapPort {
    /// Creates TAP device `name` (empty: the kernel picks `tapN`) in the calling thread's
    /// network namespace and brings it up. `vnet_hdr` asks for the virtio-net header; without
    /// kernel support the port works without it, with one log line.
    pub fn create(name: &str, vnet_hdr: bool) -> io::Result<Self> {
        Self::create_queue(name, vnet_hdr, false)
    }

    /// [`TapPort::create`]; with `multi_queue`, the device is made with `IFF_MULTI_QUEUE` and a
    /// second call with the same name attaches another queue to it (one per datapath worker:
    /// the kernel picks the queue of a frame it sends to the device by flow hash). Every queue
    /// of a device must be opened with the same flags.
    pub fn create_queue(name: &str, vnet_hdr: bool, multi_queue: bool) -> io::Result<Self> {
        let with_name =
            |e: io::Error| io::Error::new(e.kind(), format!("tap device {name:?}: {e}"));
        let (fd, features) = tun::open().map_err(with_name)?;
        let vnet = vnet_hdr && features & libc::IFF_VNET_HDR != 0;
        if vnet_hdr && !vnet {
            VNET_MISSING.call_once(|| {
                log::warn!("tap {name:?}: the kernel offers no vnet header; frames go without")
            });
        }
        let mut ifr = sys::ifreq(name)?;
        let mut flags = libc::IFF_TAP | libc::IFF_NO_PI;
        if multi_queue {
            flags |= libc::IFF_MULTI_QUEUE;
        }
        if vnet {
            flags |= libc::IFF_VNET_HDR;
        }
        ifr.ifr_ifru.ifru_flags = flags as libc::c_short;
        sys::ioctl_ifreq(fd.as_fd(), libc::TUNSETIFF, &mut ifr).map_err(with_name)?;
        let name = sys::ifreq_name(&ifr);
        let mut offloads = TapOffloads::default();
        if vnet {
            let mut len = VNET_HDR_LEN as libc::c_int;
            sys::ioctl_int_ptr(fd.as_fd(), libc::TUNSETVNETHDRSZ, &mut len).map_err(with_name)?;
            offloads = enable_offloads(fd.as_fd(), &name);
        }
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        tun::set_up(ctl.as_fd(), &name).map_err(with_name)?;
        let ifindex = sys::if_nametoindex(&name).map_err(with_name)?;
        Ok(TapPort {
            fd,
            ctl,
            name,
            ifindex,
            vnet,
            offloads,
        })
    }

    /// The offloads the kernel accepted at create; see the module docs.
    pub fn offloads(&self) -> TapOffloads {
        self.offloads
    }
}

/// Asks for the largest set of [`TapOffloads::PROBE_ORDER`] the kernel accepts (a refused
/// TUNSETOFFLOAD changes nothing) and logs the outcome once per process.
fn enable_offloads(fd: BorrowedFd<'_>, name: &str) -> TapOffloads {
    let mut refused = None;
    for offloads in TapOffloads::PROBE_ORDER {
        match sys::ioctl_uint(fd, libc::TUNSETOFFLOAD, offloads.flags()) {
            Ok(()) => {
                OFFLOADS_LOGGED.call_once(|| log_offloads(name, offloads, refused.as_ref()));
                return offloads;
            }
            Err(e) => refused = Some(e),
        }
    }
    // Even "none" was refused: a new TAP device starts with no offload, so none is in effect.
    OFFLOADS_LOGGED.call_once(|| log_offloads(name, TapOffloads::default(), refused.as_ref()));
    TapOffloads::default()
}

fn log_offloads(name: &str, offloads: TapOffloads, refused: Option<&io::Error>) {
    let why = refused.map_or(String::new(), |e| {
        format!(" (a larger set was refused: {e})")
    });
    if offloads.csum {
        log::info!("tap {name}: kernel offloads {offloads:?}{why}; nvo finishes those frames");
    } else {
        log::warn!("tap {name}: no tap offload accepted{why}; the kernel finishes every frame");
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

    fn send_meta(&self, frame: &[u8], meta: &FrameMeta) -> io::Result<()> {
        if !self.vnet {
            return meta.finish_here(frame, &mut |f| self.send(f)).map(drop);
        }
        let head = meta.vnet_header(frame)?;
        sys::writev2(self.fd.as_fd(), &head, frame).map(drop)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_probe_asks_for_less() {
        let flags: Vec<_> = TapOffloads::PROBE_ORDER.iter().map(|o| o.flags()).collect();
        // TUN_F_CSUM 0x01, TSO4 0x02, TSO6 0x04, USO4 0x20, USO6 0x40.
        assert_eq!(flags, [0x67, 0x07, 0x01, 0]);
        assert_eq!(TapOffloads::PROBE_ORDER[3], TapOffloads::default());
    }
}
