//! The datapath's latency knob (`busy_poll_us`): how long the userspace datapath keeps polling
//! its sockets without sleeping after the last packet it handled.
//!
//! Sleeping in `poll` and being woken by the next packet costs a scheduler round trip on each
//! hop (tens of µs on a busy host, more after an idle CPU went to a deep C-state); a ping
//! through two nvods pays it four times. Polling on for a few tens of µs after a packet catches
//! the reply of a request-response exchange awake. The price is a core kept busy while traffic
//! flows (and for `busy_poll_us` after it stops), so it is off by default: an idle host never
//! spins.

use std::time::Duration;

use super::{bad, ConfigError};

/// The largest `busy_poll_us`, 100 ms. A window shorter than the gap between a flow's packets
/// closes before the next one and saves nothing (pings every 2 ms with a 1 ms window wake every
/// worker each time: docs/design/dataplane.md, "Polling through the gaps"); a window longer
/// than the gaps keeps the workers polling while traffic lasts, as a poll-mode datapath does on
/// cores given to it. Bounded so that a host that goes idle stops spinning within 0.1 s.
pub const MAX_BUSY_POLL_US: u64 = 100_000;

/// The resolved `busy_poll_us` (zero: off).
pub fn busy_poll(value: Option<u64>) -> Result<Duration, ConfigError> {
    match value {
        None => Ok(Duration::ZERO),
        Some(us) if us <= MAX_BUSY_POLL_US => Ok(Duration::from_micros(us)),
        Some(us) => Err(bad(
            "busy_poll_us",
            us,
            "must be 0 (off) to 100000 microseconds",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_poll_is_off_by_default_and_bounded() {
        assert_eq!(busy_poll(None).unwrap(), Duration::ZERO);
        assert_eq!(busy_poll(Some(0)).unwrap(), Duration::ZERO);
        assert_eq!(busy_poll(Some(50)).unwrap(), Duration::from_micros(50));
        assert_eq!(
            busy_poll(Some(100_000)).unwrap(),
            Duration::from_millis(100)
        );
        let err = busy_poll(Some(100_001)).unwrap_err().to_string();
        assert!(
            err.contains("busy_poll_us") && err.contains("100001"),
            "{err}"
        );
    }
}
