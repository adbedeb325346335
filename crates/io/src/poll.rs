//! Waiting for the datapath's descriptors: [`Poller`], a reusable `poll(2)` set, and
//! [`EventFd`], how the control thread wakes the datapath thread.
//!
//! `poll` rather than epoll: the datapath thread waits on a few dozen descriptors (underlay
//! sockets, ports, the command eventfd) and rebuilds the set only when ports change, so the
//! set is an array filled once and passed as it is on every wait, with no allocation.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use crate::sys;

/// A set of descriptors to wait on for readability.
///
/// Register with [`Poller::add`] (it returns the index to ask [`Poller::is_ready`] about),
/// wait with [`Poller::wait`]. The poller keeps descriptor numbers, not borrows: clear and
/// re-add whenever a registered descriptor is closed (a closed one is reported ready, as
/// POLLNVAL, so the owner notices).
#[derive(Default)]
pub struct Poller {
    fds: Vec<libc::pollfd>,
}

impl fmt::Debug for Poller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fds: Vec<(i32, i16)> = self.fds.iter().map(|p| (p.fd, p.revents)).collect();
        f.debug_struct("Poller").field("fds", &fds).finish()
    }
}

impl Poller {
    /// An empty set with room for `capacity` descriptors before it grows.
    pub fn with_capacity(capacity: usize) -> Self {
        Poller {
            fds: Vec::with_capacity(capacity),
        }
    }

    /// Adds a descriptor; returns its index.
    pub fn add(&mut self, fd: BorrowedFd<'_>) -> usize {
        self.fds.push(libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        });
        self.fds.len() - 1
    }

    /// Removes every descriptor, keeping the memory.
    pub fn clear(&mut self) {
        self.fds.clear();
    }

    /// Descriptors registered.
    pub fn len(&self) -> usize {
        self.fds.len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.fds.is_empty()
    }

    /// Waits until a descriptor is readable (or in error), or the timeout passes (`None`:
    /// forever; sub-millisecond timeouts round up so they do not spin). Returns how many are
    /// ready; an interrupted wait returns 0.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        for p in &mut self.fds {
            p.revents = 0;
        }
        let ms = match timeout {
            None => -1,
            Some(t) => {
                let ms = t.as_millis() + u128::from(t.subsec_nanos() % 1_000_000 != 0);
                libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
            }
        };
        match sys::poll(&mut self.fds, ms) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            other => other,
        }
    }

    /// Whether descriptor `index` was readable, hung up or in error after the last wait.
    pub fn is_ready(&self, index: usize) -> bool {
        let ready = libc::POLLIN | libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
        self.fds.get(index).is_some_and(|p| p.revents & ready != 0)
    }
}

/// A non-blocking eventfd: any thread calls [`EventFd::notify`], the waiting thread polls it
/// and calls [`EventFd::drain`]. Notifications coalesce: many notifies, one wake-up.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new eventfd with count 0.
    pub fn new() -> io::Result<Self> {
        Ok(EventFd {
            fd: sys::eventfd()?,
        })
    }

    /// Makes the eventfd readable. Never blocks: at the (theoretical) count limit it is
    /// readable already.
    pub fn notify(&self) -> io::Result<()> {
        match sys::write(self.fd.as_fd(), &1u64.to_ne_bytes()) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(()),
        }
    }

    /// Resets the count; returns the notifications since the last drain (0 if none).
    pub fn drain(&self) -> io::Result<u64> {
        let mut buf = [0u8; 8];
        match sys::read(self.fd.as_fd(), &mut buf) {
            Ok(_) => Ok(u64::from_ne_bytes(buf)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
