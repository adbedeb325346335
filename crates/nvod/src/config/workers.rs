//! The datapath's thread count (`workers`): how many userspace datapath workers forward, each
//! with its own copy of the tables and its own sockets, flows spread over them by the kernel's
//! hash (nvo-datapath's `workers` module says how).
//!
//! The default is one per CPU nvod may run on (its affinity mask, so a container limited to
//! two CPUs gets two); 1 is the single datapath thread of before. More workers than CPUs only
//! adds wake-ups. With the kernel (eBPF) path running, one worker handles what reaches
//! userspace whatever this says: the kernel path already runs on every CPU.

use super::{bad, ConfigError};

/// The most workers: past this, per-worker tables cost more memory than the threads gain.
pub const MAX_WORKERS: usize = nvo_datapath::workers::MAX_WORKERS;

/// The resolved `workers`: the value, bounded, or one per CPU.
pub fn workers(value: Option<u64>) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default_workers()),
        Some(n) if (1..=MAX_WORKERS as u64).contains(&n) => Ok(n as usize),
        Some(n) => Err(bad("workers", n, "must be 1 to 64 datapath threads")),
    }
}

/// One worker per CPU nvod may run on, at most [`MAX_WORKERS`].
fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_WORKERS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_default_to_the_cpus_and_are_bounded() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(workers(None).unwrap(), cpus.min(MAX_WORKERS));
        assert_eq!(workers(Some(1)).unwrap(), 1);
        assert_eq!(workers(Some(64)).unwrap(), 64);
        for n in [0, 65, 1000] {
            let err = workers(Some(n)).unwrap_err().to_string();
            assert!(
                err.contains("workers") && err.contains(&n.to_string()),
                "{err}"
            );
        }
    }
}
