//! The TUN device ILA packets cross the kernel through (`nvoila0`: `IFF_TUN | IFF_NO_PI |
//! IFF_MULTI_QUEUE | IFF_VNET_HDR`, one queue per datapath worker).
//!
//! ```text
//!  egress:  nvod ── writev(virtio-net header, IPv6 packet, destination = locator::identifier)
//!             ──► nvoila0: ip6_rcv → ip6_route_input → ip6_forward (hop limit − 1) → underlay
//!             device (a GSO packet stays one until the underlay device or its GSO cuts it)
//!  ingress: underlay ── IPv6 to this host's locator /64 ──► route LOCATOR/64 dev nvoila0
//!             → the device's queue (the kernel picks one by flow hash) → read by nvod, with
//!             a virtio-net header: a GRO'd or GSO packet comes over whole
//! ```
//!
//! [`IlaTun::open`] makes the device (or attaches a queue to it), turns off IPv6 address
//! generation on it (no link-local address: no DAD, router or MLD traffic to read), sets its
//! IPv6 forwarding, brings it up and routes the locator prefix to it (`ip -6 route replace`).
//! The kernel forwards what is written only with `net.ipv6.conf.all.forwarding = 1`; without
//! it `open` refuses, saying so.
//!
//! Offloads, probed at open and logged once per process: the virtio-net header
//! (`IFF_VNET_HDR`, `TUNSETVNETHDRSZ` 10) lets nvod write a TCP-over-IPv6 GSO packet of up to
//! 64 KiB in one `writev` (`gso_type` TCPV6, `gso_size` = MSS, `NEEDS_CSUM`: the kernel's
//! `virtio_net_hdr_to_skb` makes it a `CHECKSUM_PARTIAL` GSO skb); `TUNSETOFFLOAD` with
//! `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6` (then `TUN_F_CSUM`, then none) says what the kernel may
//! hand *to* nvod unsegmented and with a partial checksum. Without the header (a kernel that
//! does not offer it) every packet is read and written complete, one per system call, and
//! [`IlaTun::takes`] says no to anything but a complete packet.

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::Command;
use std::sync::Once;

use crate::meta::{FrameMeta, GsoKind};
use crate::stt_tso::{read_sysctl, write_sysctl};
use crate::vnet::{VnetHdr, VNET_HDR_LEN};
use crate::{sys, tun};

/// The device's name.
pub const ILA_TUN: &str = "nvoila0";

/// Where [`IlaTun::read_packet`] puts the packet in its buffer: after room for an Ethernet
/// header, so that the buffer's start is a frame the packet's [`FrameMeta`] applies to.
pub const ILA_PACKET_AT: usize = 14;

/// Where the destination address sits in an IPv6 header (RFC 8200 §3).
const DST: std::ops::Range<usize> = 24..40;

static OFFLOADS_LOGGED: Once = Once::new();

/// One queue of the ILA TUN device; the device goes away with its last queue.
#[derive(Debug)]
pub struct IlaTun {
    fd: OwnedFd,
    /// Packets both ways start with a virtio-net header.
    vnet: bool,
}

/// What [`IlaTun::write_packet`] wrote: one packet, or one GSO packet the kernel cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IlaWritten {
    /// The segments the packet stands for (1 unless it is a GSO packet).
    pub segments: usize,
    /// Bytes of IPv6 and TCP headers every segment carries (0 unless a GSO packet).
    pub headers: usize,
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
        let (fd, features) = tun::open().map_err(with_name)?;
        let vnet = features & libc::IFF_VNET_HDR != 0;
        let mut ifr = sys::ifreq(ILA_TUN)?;
        let mut flags = libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_MULTI_QUEUE;
        if vnet {
            flags |= libc::IFF_VNET_HDR;
        }
        ifr.ifr_ifru.ifru_flags = flags as _;
        sys::ioctl_ifreq(fd.as_fd(), libc::TUNSETIFF, &mut ifr).map_err(with_name)?;
        let offloads = if vnet {
            let mut len = VNET_HDR_LEN as libc::c_int;
            sys::ioctl_int_ptr(fd.as_fd(), libc::TUNSETVNETHDRSZ, &mut len).map_err(with_name)?;
            enable_offloads(fd.as_fd())
        } else {
            "none (the kernel's tun offers no virtio-net header: one packet per system call)"
        };
        OFFLOADS_LOGGED.call_once(|| log::info!("tun {ILA_TUN}: offloads {offloads}"));
        let conf = format!("net/ipv6/conf/{ILA_TUN}");
        write_sysctl(&format!("{conf}/addr_gen_mode"), "1").map_err(with_name)?;
        // IPv6 on (a host may make new devices without it) for the route; no address on it.
        write_sysctl(&format!("{conf}/disable_ipv6"), "0").map_err(with_name)?;
        write_sysctl(&format!("{conf}/forwarding"), "1").map_err(with_name)?;
        let ctl = sys::socket(libc::AF_INET, libc::SOCK_DGRAM, 0)?;
        tun::set_up(ctl.as_fd(), ILA_TUN).map_err(with_name)?;
        route(locator)?;
        Ok(IlaTun { fd, vnet })
    }

    /// Whether [`IlaTun::write_packet`] takes a packet with `meta` whole: a complete packet
    /// always; with the virtio-net header, a partial checksum and TCP-over-IPv6 GSO too (ILA
    /// is IPv6; UDP GSO is left to [`FrameMeta::finish`]).
    pub fn takes(&self, meta: &FrameMeta) -> bool {
        meta.is_complete() || (self.vnet && meta.gso.is_none_or(|g| g.kind == GsoKind::Tcp6))
    }

    /// Reads one packet into `buf` at [`ILA_PACKET_AT`], with a placeholder Ethernet header
    /// (zero addresses, IPv6) before it, and returns its length and the [`FrameMeta`] of the
    /// frame `buf[..ILA_PACKET_AT + len]` (offsets from the frame's start, as a port's).
    /// `WouldBlock` when there is none; `InvalidData` when the virtio-net header does not fit
    /// the packet (or asks for a segmentation nvo does not do). `buf` should hold
    /// [`crate::MAX_FRAME`] bytes.
    pub fn read_packet(&self, buf: &mut [u8]) -> io::Result<(usize, FrameMeta)> {
        let head = if self.vnet { VNET_HDR_LEN } else { 0 };
        let at = ILA_PACKET_AT - head;
        let n = sys::read(self.fd.as_fd(), buf.get_mut(at..).unwrap_or_default())?;
        received(buf, n, self.vnet)
    }

    /// Writes the IPv6 packet at `ip` in `frame`, its destination replaced by `dst`, in one
    /// system call. `meta` (offsets from `frame`'s start, as a port gave them) goes along in
    /// the virtio-net header: a GSO packet is written whole, for the kernel to segment.
    /// `Unsupported` for what [`IlaTun::takes`] refuses; `InvalidInput` when `meta` does not
    /// fit the frame or the packet has no whole IPv6 header.
    pub fn write_packet(
        &self,
        frame: &[u8],
        ip: usize,
        dst: &[u8; 16],
        meta: &FrameMeta,
    ) -> io::Result<IlaWritten> {
        if !self.takes(meta) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("tun {ILA_TUN} takes no frame with {meta:?} whole"),
            ));
        }
        let (hdr, written) = header_for(frame, ip, meta)?;
        let packet = frame.get(ip..).unwrap_or_default();
        let hdr = hdr.emit();
        let (before, after) = (&packet[..DST.start], &packet[DST.end..]);
        let pieces: [&[u8]; 4] = [&hdr, before, dst, after];
        let pieces = if self.vnet { &pieces[..] } else { &pieces[1..] };
        sys::writev(self.fd.as_fd(), pieces)?;
        Ok(written)
    }
}

/// What [`IlaTun::read_packet`] makes of the `n` bytes the kernel put at
/// `ILA_PACKET_AT - VNET_HDR_LEN` (with `vnet`) or at `ILA_PACKET_AT` in `buf`: the placeholder
/// Ethernet header written, the packet's length and the frame's metadata.
fn received(buf: &mut [u8], n: usize, vnet: bool) -> io::Result<(usize, FrameMeta)> {
    let head = if vnet { VNET_HDR_LEN } else { 0 };
    let len = n
        .checked_sub(head)
        .ok_or_else(|| invalid("shorter than its header"))?;
    let hdr = match buf.get(ILA_PACKET_AT - head..ILA_PACKET_AT) {
        Some(b) if vnet => <&[u8; VNET_HDR_LEN]>::try_from(b).ok().map(VnetHdr::parse),
        _ => None,
    };
    let frame = buf
        .get_mut(..ILA_PACKET_AT + len)
        .ok_or_else(|| invalid("buffer too short"))?;
    frame[..12].fill(0);
    frame[12..ILA_PACKET_AT].copy_from_slice(&0x86dd_u16.to_be_bytes());
    let Some(hdr) = hdr else {
        return Ok((len, FrameMeta::COMPLETE));
    };
    let meta = FrameMeta::from_vnet(&shift(hdr, ILA_PACKET_AT as u16), frame)
        .map_err(|e| invalid(&format!("virtio-net header {hdr:?}: {e:?}")))?;
    Ok((len, meta))
}

/// The virtio-net header for the IPv6 packet at `ip` in `frame` with `meta` (offsets from the
/// frame's start, moved to the packet's), and what the kernel will make of it.
fn header_for(frame: &[u8], ip: usize, meta: &FrameMeta) -> io::Result<(VnetHdr, IlaWritten)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
    let packet = frame
        .get(ip..)
        .filter(|p| p.len() >= DST.end)
        .ok_or_else(|| bad("no whole ipv6 header"))?;
    let mut written = IlaWritten {
        segments: 1,
        headers: 0,
    };
    if meta.is_complete() {
        return Ok((VnetHdr::default(), written));
    }
    let in_frame = VnetHdr::parse(&meta.vnet_header(frame)?);
    let down = u16::try_from(ip).unwrap_or(u16::MAX);
    let hdr = shift_down(in_frame, down).ok_or_else(|| bad("offsets before the ip header"))?;
    if let Some(gso) = meta.gso {
        written.headers = usize::from(hdr.hdr_len);
        let payload = packet.len().saturating_sub(written.headers);
        written.segments = payload.div_ceil(usize::from(gso.size).max(1)).max(1);
    }
    Ok((hdr, written))
}

/// Asks for the offloads towards nvod, most first (a refused TUNSETOFFLOAD changes nothing);
/// what is in effect, for the log line.
fn enable_offloads(fd: BorrowedFd<'_>) -> &'static str {
    const TRIES: [(libc::c_uint, &str); 2] = [
        (
            libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6,
            "virtio-net header, checksum, tso4, tso6 (gso packets both ways)",
        ),
        (
            libc::TUN_F_CSUM,
            "virtio-net header, checksum (tso refused: the kernel segments what it hands over)",
        ),
    ];
    for (flags, what) in TRIES {
        if sys::ioctl_uint(fd, libc::TUNSETOFFLOAD, flags).is_ok() {
            return what;
        }
    }
    "virtio-net header only (every offload refused: the kernel finishes what it hands over)"
}

/// Routes `locator`/64 to the device.
fn route(locator: Ipv6Addr) -> io::Result<()> {
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
    Ok(())
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("tun {ILA_TUN}: {what}"))
}

/// `hdr` with its offsets (`csum_start`, `hdr_len`, where they are meaningful) `by` bytes on.
fn shift(mut hdr: VnetHdr, by: u16) -> VnetHdr {
    if hdr.needs_checksum() {
        hdr.csum_start = hdr.csum_start.saturating_add(by);
    }
    if hdr.is_gso() {
        hdr.hdr_len = hdr.hdr_len.saturating_add(by);
    }
    hdr
}

/// `hdr` with its offsets `by` bytes back; None when one would fall before 0.
fn shift_down(mut hdr: VnetHdr, by: u16) -> Option<VnetHdr> {
    if hdr.needs_checksum() {
        hdr.csum_start = hdr.csum_start.checked_sub(by)?;
    }
    if hdr.is_gso() {
        hdr.hdr_len = hdr.hdr_len.checked_sub(by)?;
    }
    Some(hdr)
}

impl AsFd for IlaTun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::Gso;
    use crate::vnet::tests::ip_builder;
    use crate::vnet::{F_NEEDS_CSUM, GSO_TCPV6};

    /// An Ethernet + IPv6 + TCP frame (2001:db8::1 → 2001:db8::2) with `payload` bytes.
    fn tcp6_frame(payload: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..payload).map(|i| i as u8).collect();
        let mut frame = Vec::new();
        ip_builder(true)
            .tcp(40000, 5201, 7, 65535)
            .ack(1)
            .write(&mut frame, &data)
            .unwrap();
        frame
    }

    /// What a kernel with TSO6 on the device hands over (tun_put_user): a virtio-net header
    /// with offsets from the IPv6 header, then the packet.
    fn kernel_read(packet: &[u8], hdr: VnetHdr) -> (Vec<u8>, usize) {
        let mut buf = vec![0xee; crate::MAX_FRAME];
        let at = ILA_PACKET_AT - VNET_HDR_LEN;
        buf[at..ILA_PACKET_AT].copy_from_slice(&hdr.emit());
        buf[ILA_PACKET_AT..ILA_PACKET_AT + packet.len()].copy_from_slice(packet);
        (buf, VNET_HDR_LEN + packet.len())
    }

    const KERNEL_GSO: VnetHdr = VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV6,
        hdr_len: 60,
        gso_size: 1400,
        csum_start: 40,
        csum_offset: 16,
    };

    #[test]
    fn a_gso_packet_read_becomes_a_gso_frame_and_is_written_back_with_the_same_header() {
        let frame = tcp6_frame(3000);
        let (mut buf, n) = kernel_read(&frame[14..], KERNEL_GSO);
        let (len, meta) = received(&mut buf, n, true).unwrap();
        assert_eq!(len, frame.len() - 14);
        let gso = Gso {
            kind: GsoKind::Tcp6,
            size: 1400,
            ecn: false,
        };
        assert_eq!(meta.gso, Some(gso));
        assert_eq!(meta.csum, Some((54, 16)), "offsets from the frame's start");
        assert_eq!(
            &buf[..14],
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x86, 0xdd]
        );
        assert_eq!(&buf[14..14 + len], &frame[14..]);
        // Written back (the frame a port would give, IPv6 at 14): the header the kernel gave.
        let (hdr, written) = header_for(&buf[..14 + len], 14, &meta).unwrap();
        assert_eq!(hdr, KERNEL_GSO);
        assert_eq!(
            written,
            IlaWritten {
                segments: 3,
                headers: 60
            }
        );
        assert_eq!(VnetHdr::parse(&hdr.emit()), hdr);
    }

    #[test]
    fn complete_packets_and_plain_reads_carry_no_metadata() {
        let frame = tcp6_frame(100);
        let (mut buf, n) = kernel_read(&frame[14..], VnetHdr::default());
        assert_eq!(
            received(&mut buf, n, true).unwrap(),
            (frame.len() - 14, FrameMeta::COMPLETE)
        );
        let mut plain = vec![0; crate::MAX_FRAME];
        plain[14..frame.len()].copy_from_slice(&frame[14..]);
        let got = received(&mut plain, frame.len() - 14, false).unwrap();
        assert_eq!(got, (frame.len() - 14, FrameMeta::COMPLETE));
        let (hdr, written) = header_for(&frame, 14, &FrameMeta::COMPLETE).unwrap();
        assert_eq!(hdr.emit(), [0; VNET_HDR_LEN]);
        assert_eq!(written.segments, 1);
    }

    #[test]
    fn headers_that_do_not_fit_are_refused() {
        let frame = tcp6_frame(3000);
        for bad in [
            VnetHdr {
                csum_start: 9000,
                ..KERNEL_GSO
            },
            VnetHdr {
                gso_size: 0,
                ..KERNEL_GSO
            },
            VnetHdr {
                gso_type: 3, // UFO: nvo does not cut it
                ..KERNEL_GSO
            },
        ] {
            let (mut buf, n) = kernel_read(&frame[14..], bad);
            let e = received(&mut buf, n, true).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{bad:?}");
        }
        let (mut buf, _) = kernel_read(&frame[14..], KERNEL_GSO);
        assert!(received(&mut buf, VNET_HDR_LEN - 1, true).is_err());
        // Offsets before the IPv6 header, or a packet with no whole header.
        let (mut buf, n) = kernel_read(&frame[14..], KERNEL_GSO);
        let (len, meta) = received(&mut buf, n, true).unwrap();
        assert!(header_for(&buf[..14 + len], 60, &meta).is_err());
        assert!(header_for(&frame[..40], 14, &FrameMeta::COMPLETE).is_err());
        assert_eq!(shift_down(KERNEL_GSO, 41), None);
    }
}
