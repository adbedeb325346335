//! A port on an existing interface (the host end of a veth): an AF_PACKET socket bound to it.
//!
//! - `SOCK_RAW`, all ethertypes: the socket sees whole Ethernet frames, in and out of nvo.
//! - Created with protocol 0 and bound with `ETH_P_ALL` to one ifindex, so no frame of another
//!   interface is ever queued (a socket created with `ETH_P_ALL` receives from all interfaces
//!   until bound).
//! - `PACKET_IGNORE_OUTGOING` (Linux 4.20): frames nvo transmits on the interface are not
//!   looped back to it.
//! - `PACKET_ADD_MEMBERSHIP` promiscuous: frames to any MAC reach nvo (a veth delivers them all
//!   anyway; a physical NIC would filter).
//! - `PACKET_VNET_HDR` when the kernel accepts it: a container whose veth has checksum and
//!   segmentation offload on (the default) sends frames with partial checksums and TSO frames
//!   of up to 64 KiB; the virtio-net header says so, and [`crate::FrameBatch`] finishes or
//!   segments them. Without it, the container must turn those offloads off on its end
//!   (`ethtool -K eth0 tx off tso off gso off`), or nvo forwards broken frames.
//!   [`FramePort::send_meta`] writes a header that asks the kernel to segment or checksum: a
//!   GSO frame larger than the MTU is accepted that way (`packet_snd` checks the size only of
//!   frames without GSO).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Once;

use crate::batch::is_transient;
use crate::frame::{FrameBatch, FramePort};
use crate::meta::FrameMeta;
use crate::sys::{self, ControlBuf, RawAddr, RecvSlot, SendMsg, MAX_BATCH};
use crate::vnet::VNET_HDR_NONE;

/// Socket receive buffer asked for (best effort).
const SOCKET_BUFFER: libc::c_int = 4 << 20;

static VNET_MISSING: Once = Once::new();
static IGNORE_OUTGOING_MISSING: Once = Once::new();

/// An AF_PACKET port; see the module docs.
#[derive(Debug)]
pub struct PacketPort {
    fd: OwnedFd,
    name: String,
    ifindex: u32,
    vnet: bool,
    /// VLAN tags are put back into received frames ([`PacketPort::open_tagged`]).
    tags: bool,
}

impl PacketPort {
    /// Opens a port on interface `ifname` of the calling thread's network namespace, with the
    /// virtio-net header when the kernel offers it.
    pub fn open(ifname: &str) -> io::Result<Self> {
        Self::open_with(ifname, true)
    }

    /// A port that only sends: bound with protocol 0, so the kernel queues it no frame at
    /// all (an `ETH_P_ALL` socket is handed a clone of every frame on the interface, before tc
    /// sees it). For an interface whose frames the kernel datapath (eBPF) takes: nvod still
    /// delivers through it what its own pipeline forwards. With the virtio-net header when the
    /// kernel offers it, so GSO frames go whole.
    pub fn open_send_only(ifname: &str) -> io::Result<Self> {
        let with_name =
            |e: io::Error| io::Error::new(e.kind(), format!("packet port on {ifname}: {e}"));
        let (fd, ifindex) = unbound_socket(ifname).map_err(with_name)?;
        let vnet = enable_vnet(fd.as_fd(), ifname);
        sys::bind(fd.as_fd(), &RawAddr::link(ifindex, 0)).map_err(with_name)?;
        Ok(PacketPort {
            fd,
            name: ifname.to_owned(),
            ifindex,
            vnet,
            tags: false,
        })
    }

    /// As [`PacketPort::open`]; `vnet_hdr: false` never asks for the virtio-net header.
    pub fn open_with(ifname: &str, vnet_hdr: bool) -> io::Result<Self> {
        let with_name =
            |e: io::Error| io::Error::new(e.kind(), format!("packet port on {ifname}: {e}"));
        let (fd, ifindex) = unbound_socket(ifname).map_err(with_name)?;
        let vnet = vnet_hdr && enable_vnet(fd.as_fd(), ifname);
        if let Err(e) = sys::setsockopt(
            fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_IGNORE_OUTGOING,
            &1 as &libc::c_int,
        ) {
            IGNORE_OUTGOING_MISSING.call_once(|| {
                log::warn!("packet_ignore_outgoing unavailable on {ifname}: {e}; nvo will see its own frames");
            });
        }
        bind_all(fd.as_fd(), ifindex).map_err(with_name)?;
        let promisc = libc::packet_mreq {
            mr_ifindex: ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        sys::setsockopt(
            fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &promisc,
        )
        .map_err(with_name)?;
        Ok(PacketPort {
            fd,
            name: ifname.to_owned(),
            ifindex,
            vnet,
            tags: false,
        })
    }

    /// [`PacketPort::open`] for a port whose frames carry VLAN tags on the wire (a VLAN
    /// trunk). The kernel takes the outer 802.1Q or 802.1ad tag out of every frame it receives
    /// (`skb_vlan_untag`, in the core receive path whether or not the 8021q module is there)
    /// and a packet socket then reads the frame without it; with `PACKET_AUXDATA` the socket
    /// reports the tag, and each frame of a batch gets it back in place.
    pub fn open_tagged(ifname: &str) -> io::Result<Self> {
        let mut port = Self::open(ifname)?;
        sys::setsockopt(
            port.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_AUXDATA,
            &1 as &libc::c_int,
        )
        .map_err(|e| io::Error::new(e.kind(), format!("packet auxdata on {ifname}: {e}")))?;
        port.tags = true;
        Ok(port)
    }
}

/// The tag (TPID, TCI) the kernel took out of a received frame, from its `PACKET_AUXDATA`
/// (`struct tpacket_auxdata`: status, len, snaplen, mac, net, vlan_tci, vlan_tpid).
fn aux_tag(control: &[u8]) -> Option<[u8; 4]> {
    const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
    const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
    let aux = sys::cmsg_find(control, libc::SOL_PACKET, libc::PACKET_AUXDATA)?;
    let status = u32::from_ne_bytes(aux.get(..4)?.try_into().ok()?);
    if status & TP_STATUS_VLAN_VALID == 0 {
        return None;
    }
    let tci = u16::from_ne_bytes(aux.get(16..18)?.try_into().ok()?);
    let tpid = match status & TP_STATUS_VLAN_TPID_VALID {
        0 => 0x8100,
        _ => u16::from_ne_bytes(aux.get(18..20)?.try_into().ok()?),
    };
    let [t0, t1] = tpid.to_be_bytes();
    let [c0, c1] = tci.to_be_bytes();
    Some([t0, t1, c0, c1])
}

impl PacketPort {
    /// Joins fanout group `group` of `n` sockets (PACKET_FANOUT_CBPF): the interface's frames
    /// are spread over the group's sockets by a symmetric hash of their IP flow, one socket per
    /// datapath worker, in the order they join (see `spread` and `steer`).
    pub fn join_fanout(&self, group: u16, n: usize) -> io::Result<()> {
        crate::spread::join_fanout(self.fd.as_fd(), group, n).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("packet port on {}: fanout group {group}: {e}", self.name),
            )
        })
    }
}

/// An AF_PACKET socket for interface `ifname`, and its ifindex, to set options on before
/// [`bind_all`]: created with protocol 0, so the kernel queues it nothing until then (a socket
/// created with `ETH_P_ALL` receives from every interface until bound). Shared with the
/// capture taps ([`crate::CaptureSocket`]).
pub(crate) fn unbound_socket(ifname: &str) -> io::Result<(OwnedFd, u32)> {
    let ifindex = sys::if_nametoindex(ifname)?;
    let fd = sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0)?;
    Ok((fd, ifindex))
}

/// Raises the receive buffer (best effort: the forced size needs CAP_NET_ADMIN) and binds an
/// [`unbound_socket`] to `ifindex` with `ETH_P_ALL`: from here on it receives every frame of
/// that interface (that its filter, if any, passes) and no other's.
pub(crate) fn bind_all(fd: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    if sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &SOCKET_BUFFER).is_err() {
        let _ = sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &SOCKET_BUFFER);
    }
    sys::bind(fd, &RawAddr::link(ifindex, libc::ETH_P_ALL as u16))
}

fn enable_vnet(fd: BorrowedFd<'_>, ifname: &str) -> bool {
    match sys::setsockopt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_VNET_HDR,
        &1 as &libc::c_int,
    ) {
        Ok(()) => true,
        Err(e) => {
            VNET_MISSING.call_once(|| {
                log::warn!(
                    "packet_vnet_hdr unavailable on {ifname}: {e}; turn tx checksum and tso off inside containers"
                );
            });
            false
        }
    }
}

impl AsFd for PacketPort {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl FramePort for PacketPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn ifindex(&self) -> u32 {
        self.ifindex
    }

    fn mtu(&self) -> io::Result<u32> {
        // The ioctl runs in the socket's namespace, whatever the calling thread's is.
        mtu(self.fd.as_fd(), &self.name)
    }

    fn vnet_hdr(&self) -> bool {
        self.vnet
    }

    fn recv_batch(&self, batch: &mut FrameBatch) -> io::Result<usize> {
        batch.reset(self.vnet);
        let mut received = [sys::Received::default(); MAX_BATCH];
        let mut controls = [ControlBuf::EMPTY; MAX_BATCH];
        let cap = batch.capacity();
        let tags = self.tags;
        let slots = batch
            .slots()
            .zip(controls.iter_mut())
            .map(|(data, control)| RecvSlot {
                data,
                name: None,
                control: tags.then_some(control),
            });
        let got = match sys::recvmmsg(self.fd.as_fd(), slots, &mut received[..cap]) {
            Ok(got) => got,
            Err(e) if is_transient(&e) => return Ok(0),
            Err(e) => return Err(e),
        };
        for (r, control) in received[..got].iter().zip(&controls) {
            batch.push(r.len, r.flags & libc::MSG_TRUNC != 0);
            let written = control.0.get(..r.control_len).unwrap_or_default();
            if let Some(tag) = aux_tag(written).filter(|_| tags) {
                batch.restore_tag(tag);
            }
        }
        Ok(got)
    }

    fn send(&self, frame: &[u8]) -> io::Result<()> {
        let mut one = std::iter::once(frame);
        match self.send_batch(&mut one)? {
            0 => Err(io::ErrorKind::WouldBlock.into()),
            _ => Ok(()),
        }
    }

    fn send_meta(&self, frame: &[u8], meta: &FrameMeta) -> io::Result<()> {
        if !self.vnet {
            return meta.finish_here(frame, &mut |f| self.send(f)).map(drop);
        }
        let head = meta.vnet_header(frame)?;
        let msg = SendMsg {
            head: &head,
            data: frame,
            addr: None,
            control: None,
        };
        loop {
            match sys::sendmmsg(self.fd.as_fd(), std::iter::once(msg)) {
                Ok(0) => return Err(io::ErrorKind::WouldBlock.into()),
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn send_batch(&self, frames: &mut dyn Iterator<Item = &[u8]>) -> io::Result<usize> {
        let head: &[u8] = if self.vnet { &VNET_HDR_NONE } else { &[] };
        let mut chunk: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        let (mut sent, mut error) = (0, None);
        loop {
            let mut n = 0;
            for (slot, frame) in chunk.iter_mut().zip(&mut *frames) {
                *slot = frame;
                n += 1;
            }
            let mut pos = 0;
            while pos < n {
                let msgs = chunk[pos..n].iter().map(|data| SendMsg {
                    head,
                    data,
                    addr: None,
                    control: None,
                });
                match sys::sendmmsg(self.fd.as_fd(), msgs) {
                    Ok(m) if m > 0 => {
                        sent += m;
                        pos += m;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Ok(_) => return Ok(sent),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(sent),
                    Err(e) => {
                        pos += 1;
                        error = Some(e);
                    }
                }
            }
            if n < MAX_BATCH {
                break;
            }
        }
        match error {
            Some(e) if sent == 0 => Err(e),
            _ => Ok(sent),
        }
    }
}

/// SIOCGIFMTU on `fd`'s namespace.
pub(crate) fn mtu(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    let mut ifr = sys::ifreq(name)?;
    sys::ioctl_ifreq(fd, sys::SIOCGIFMTU, &mut ifr)?;
    u32::try_from(sys::ifreq_mtu(&ifr)).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("negative mtu on {name}"),
        )
    })
}
