//! The overlay probe runs in flight and what they measured (the table; `probe.rs` sends and
//! answers the probes). Kept apart so that the datapath's core can hold the table without
//! importing the module that extends it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The VNI probes travel on: no network uses it.
pub const PROBE_VNI: u32 = 0;
/// Most probe runs in flight.
pub const MAX_RUNS: usize = 64;
/// Most probes in one run.
pub const MAX_COUNT: u32 = 100;

/// One run of probes.
#[derive(Debug)]
pub struct Run {
    /// When each probe left (by sequence number), and its round trip once answered.
    pub(super) sent: Vec<(Instant, Option<Duration>)>,
    pub(super) started: Instant,
}

/// What a run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunResult {
    /// Probes sent.
    pub sent: u32,
    /// Replies received.
    pub received: u32,
    /// Shortest, mean and longest round trip of the replies.
    pub rtt: Option<(Duration, Duration, Duration)>,
}

/// The runs in flight.
#[derive(Debug, Default)]
pub struct Probes {
    pub(super) runs: HashMap<u32, Run>,
}

impl Probes {
    /// The run's measurements; the run is forgotten.
    pub fn take(&mut self, id: u32) -> Option<RunResult> {
        let run = self.runs.remove(&id)?;
        let rtts: Vec<Duration> = run.sent.iter().filter_map(|(_, r)| *r).collect();
        let rtt = (!rtts.is_empty()).then(|| {
            let min = rtts.iter().copied().min().unwrap_or_default();
            let max = rtts.iter().copied().max().unwrap_or_default();
            let mean = rtts.iter().sum::<Duration>() / rtts.len() as u32;
            (min, mean, max)
        });
        Some(RunResult {
            sent: run.sent.len() as u32,
            received: rtts.len() as u32,
            rtt,
        })
    }

    /// Forgets runs older than a minute (their reader went away).
    pub fn expire(&mut self, now: Instant) {
        self.runs
            .retain(|_, r| now.duration_since(r.started) < Duration::from_secs(60));
    }
}
