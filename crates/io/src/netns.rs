//! Network namespaces for tests and labs: create named ones, and run code inside one from a
//! thread of this process.
//!
//! [`NamedNetns::create`] runs `ip netns add` (so the namespace is visible to `ip -n NAME` and
//! bound at `/var/run/netns/NAME`) and `ip netns del` when dropped, also when a test fails;
//! links inside it go away with it.
//!
//! [`enter`] moves the *calling thread* into a namespace with `setns(CLONE_NEWNET)` (other
//! threads are not affected) and moves it back when the guard drops. Sockets, TAP devices and
//! interface lookups made meanwhile belong to that namespace and stay there after the guard
//! drops, so one test thread can build sockets in several namespaces:
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use nvo_io::netns::{run_in, NamedNetns};
//! let a = NamedNetns::create(&nvo_io::netns::unique_name("a"))?;
//! a.ip(&["link", "set", "lo", "up"])?;
//! let underlay = run_in(a.name(), || nvo_io::UdpUnderlay::bind("127.0.0.1".parse().unwrap(), 4789, 4))??;
//! # Ok(()) }
//! ```
//!
//! Needs root (CAP_SYS_ADMIN) and iproute2.

use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use crate::sys;

/// A namespace name unique to this process and `tag`: `nvo-TAG-PID`.
pub fn unique_name(tag: &str) -> String {
    format!("nvo-{tag}-{}", std::process::id())
}

/// A named network namespace, deleted on drop.
#[derive(Debug)]
pub struct NamedNetns {
    name: String,
}

impl NamedNetns {
    /// `ip netns add NAME`; fails if it exists.
    pub fn create(name: &str) -> io::Result<Self> {
        run_ip(&["netns", "add", name])?;
        Ok(NamedNetns {
            name: name.to_owned(),
        })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `ip -n NAME ARGS...`; returns its standard output, or an error with its
    /// standard error.
    pub fn ip(&self, args: &[&str]) -> io::Result<String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run_ip(&all)
    }
}

impl Drop for NamedNetns {
    fn drop(&mut self) {
        if let Err(e) = run_ip(&["netns", "del", &self.name]) {
            log::error!("deleting network namespace {}: {e}", self.name);
        }
    }
}

fn run_ip(args: &[&str]) -> io::Result<String> {
    let out = Command::new("ip").args(args).output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "ip {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The calling thread is in another namespace until this drops; see [`enter`].
#[derive(Debug)]
pub struct NetnsGuard {
    original: OwnedFd,
    /// setns acted on this thread: the guard must drop on it.
    _not_send: PhantomData<*const ()>,
}

/// Moves the calling thread into the namespace bound at `/var/run/netns/NAME`.
pub fn enter(name: &str) -> io::Result<NetnsGuard> {
    enter_path(Path::new(&format!("/var/run/netns/{name}")))
}

/// Moves the calling thread into the namespace at `path`: a bind mount such as
/// `/var/run/netns/NAME` or a process's `/proc/PID/ns/net` (what a CNI runtime passes).
pub fn enter_path(path: &Path) -> io::Result<NetnsGuard> {
    let original = OwnedFd::from(File::open("/proc/thread-self/ns/net")?);
    let target = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", path.display())))?;
    sys::setns(target.as_fd(), libc::CLONE_NEWNET)?;
    Ok(NetnsGuard {
        original,
        _not_send: PhantomData,
    })
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        if let Err(e) = sys::setns(self.original.as_fd(), libc::CLONE_NEWNET) {
            log::error!("returning to the original network namespace: {e}");
        }
    }
}

/// Runs `f` on the calling thread inside namespace `name`, then moves the thread back.
pub fn run_in<T>(name: &str, f: impl FnOnce() -> T) -> io::Result<T> {
    let _guard = enter(name)?;
    Ok(f())
}
