//! Spreading one interface's or one port's packets over several datapath workers, each with a
//! socket of its own, so that no packet needs a lock to find its worker:
//!
//! ```text
//!  veth port      one AF_PACKET socket per worker, all in one PACKET_FANOUT group
//!                 (PACKET_FANOUT_CBPF: `steer`'s symmetric hash of the inner IP flow picks
//!                 the socket, so a flow stays on one worker and its frames in order)
//!  UDP underlay   one socket per worker on the same (address, port), SO_REUSEPORT, and a
//!                 reuseport program (VXLAN, VXLAN-GPE, Geneve ports) that picks the socket by
//!                 the same hash of the inner frame; other UDP ports: the kernel hashes the
//!                 outer 4-tuple (the sender's entropy source port included)
//!  TAP port       one queue per worker (IFF_MULTI_QUEUE): the kernel's own flow hash picks the
//!                 queue (steering it needs an eBPF program, TUNSETSTEERINGEBPF: not done)
//!  overlay UDP    the same, but a reuseport program sends every datagram to the first socket
//!                 (worker 0, which holds the probes in flight)
//!  raw IP         worker 0's socket receives; the other workers' sockets only send, with a
//!                 filter that keeps nothing (a raw socket is handed a copy of every packet of
//!                 its protocol: two receiving sockets would see everything twice)
//! ```
//!
//! Why one hash on both sides: a ping's request is read from the port and its reply from the
//! underlay. With the kernel's two hashes (the inner flow's on the port, the outer 4-tuple's on
//! the underlay) they reached different workers on different CPUs, and each hand-over woke a
//! thread across CPUs (docs/design/dataplane.md, "One worker against two"). With the same index
//! on both (the fanout group's and the reuseport group's sockets join in worker order: worker 0
//! first, the control thread applies a change to workers 0, 1, … one after the other), a flow
//! is one worker's, request and reply. A port or socket that a worker reopens on its own (a
//! port retried after it was down) may join at another position: its flows then still stay on
//! one worker each way, only not the same one for both directions.
//!
//! The other cBPF programs are one instruction each: `ret #0` (socket filter: keep 0 bytes, so
//! the packet is not queued; reuseport program: socket index 0).

use std::io;
use std::os::fd::BorrowedFd;

use crate::steer::{self, TunnelShape};
use crate::sys;

/// `BPF_RET | BPF_K`, returning the constant `k`.
const BPF_RET_K: u16 = 0x06;

/// The one-instruction program `ret #0`.
fn ret_zero() -> [libc::sock_filter; 1] {
    [libc::sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: 0,
    }]
}

/// Attaches `program` with socket option `name` (level SOL_SOCKET).
fn attach(fd: BorrowedFd<'_>, name: libc::c_int, program: &[libc::sock_filter]) -> io::Result<()> {
    attach_at(fd, libc::SOL_SOCKET, name, program)
}

/// Attaches `program` with socket option (`level`, `name`).
fn attach_at(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    program: &[libc::sock_filter],
) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr().cast_mut(),
    };
    // The kernel copies the program during the call; `program` outlives it.
    sys::setsockopt(fd, level, name, &fprog)
}

/// Makes a socket queue nothing it receives: a send-only socket of a protocol another socket
/// receives.
pub(crate) fn receive_nothing(fd: BorrowedFd<'_>) -> io::Result<()> {
    attach(fd, libc::SO_ATTACH_FILTER, &ret_zero())
}

/// Sends every datagram of the socket's reuseport group to its first socket.
pub(crate) fn steer_to_first(fd: BorrowedFd<'_>) -> io::Result<()> {
    attach(fd, libc::SO_ATTACH_REUSEPORT_CBPF, &ret_zero())
}

/// Spreads the socket's reuseport group over its first `n` sockets by the inner flow of the
/// tunnel `shape` (see `steer`). Every socket of the group may attach it: the program is the
/// group's, the last attached the one that runs.
pub(crate) fn steer_by_inner_flow(
    fd: BorrowedFd<'_>,
    shape: TunnelShape,
    n: usize,
) -> io::Result<()> {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    attach(
        fd,
        libc::SO_ATTACH_REUSEPORT_CBPF,
        &steer::reuseport_program(shape, n),
    )
}

/// Sets SO_REUSEPORT (before bind): every socket of the group must.
pub(crate) fn reuse_port(fd: BorrowedFd<'_>) -> io::Result<()> {
    sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, &1 as &libc::c_int)
}

/// Joins an AF_PACKET socket (bound to its interface) to fanout group `group` of `n` sockets,
/// spread by `steer`'s symmetric hash of the inner IP flow (PACKET_FANOUT_CBPF; the program is
/// the group's, set again by each socket that joins). Every socket of a group must be bound to
/// the same interface; a group ID taken by another interface's sockets in the namespace is
/// refused (EINVAL).
///
/// A socket in a fanout group receives through the group's hook, not its own, so its
/// `PACKET_IGNORE_OUTGOING` no longer applies: the group asks for the same with
/// `PACKET_FANOUT_FLAG_IGNORE_OUTGOING` (Linux 5.12), or frames the host itself sends on the
/// interface would come back to nvod as received. An older kernel refuses the flag; the group
/// is then joined without it, with one log line.
pub(crate) fn join_fanout(fd: BorrowedFd<'_>, group: u16, n: usize) -> io::Result<()> {
    let mode = libc::PACKET_FANOUT_CBPF | libc::PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
    let arg = libc::c_int::from(group) | ((mode as libc::c_int) << 16);
    match sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &arg) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let plain =
                libc::c_int::from(group) | ((libc::PACKET_FANOUT_CBPF as libc::c_int) << 16);
            sys::setsockopt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT, &plain)?;
            IGNORE_OUTGOING_MISSING.call_once(|| {
                log::warn!(
                    "packet_fanout_flag_ignore_outgoing unavailable: {e}; with several workers \
                     nvo sees the frames the host sends on its ports"
                )
            });
        }
        other => other?,
    }
    // Until the program is set the group sends everything to its first socket.
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    attach_at(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_FANOUT_DATA,
        &steer::fanout_program(n),
    )
}

static IGNORE_OUTGOING_MISSING: std::sync::Once = std::sync::Once::new();

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
    use std::os::fd::AsFd;

    use super::*;

    /// Two reuseport sockets on one port, the second steered to the first: every datagram to
    /// the port lands on the first socket, whatever its source port.
    #[test]
    fn steered_group_delivers_to_the_first_socket() {
        let first = crate::UdpUnderlay::bind_shared(Ipv4Addr::LOCALHOST.into(), 0, 0, true)
            .expect("bind first");
        let port = first.local_addr().port();
        let second = crate::UdpUnderlay::bind_shared(Ipv4Addr::LOCALHOST.into(), port, 0, true)
            .expect("bind second on the same port");
        second.steer_to_first().expect("attach reuseport program");
        for src in 0..16 {
            let sender = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
            sender
                .send_to(&[src], SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
                .unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = first.new_recv_batch(32);
        let got_first = first.recv_batch(&mut batch).unwrap();
        let got_second = second.recv_batch(&mut batch).unwrap();
        assert_eq!((got_first, got_second), (16, 0));
    }

    /// Without SO_REUSEPORT a second bind is refused as before (a second VTEP on the port).
    #[test]
    fn unshared_port_is_still_exclusive() {
        let first = crate::UdpUnderlay::bind(Ipv4Addr::LOCALHOST.into(), 0, 0).unwrap();
        let port = first.local_addr().port();
        let again = crate::UdpUnderlay::bind_shared(Ipv4Addr::LOCALHOST.into(), port, 0, true);
        assert_eq!(
            again.map(drop).unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
        let _ = first.as_fd();
    }

    /// A raw-socket filter that keeps nothing attaches (the kernel accepts `ret #0`).
    #[test]
    fn receive_nothing_attaches_to_a_udp_socket() {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        receive_nothing(s.as_fd()).unwrap();
        let port = s.local_addr().unwrap().port();
        UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .send_to(b"x", (Ipv4Addr::LOCALHOST, port))
            .unwrap();
        s.set_nonblocking(true).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut buf = [0u8; 4];
        assert_eq!(
            s.recv(&mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }
}
