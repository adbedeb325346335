//! QoS profiles on ports: a token-bucket policer (the hardware VTEP paper's QoS profile, issue
//! 17 item 4) with optional DSCP marking.
//!
//! A profile is a rate (bit/s) and a burst (bytes). Each port (or virtual port) a profile is
//! attached to gets its own bucket, which fills at the rate up to the burst; a frame from the
//! port takes its length in tokens. The bucket may go into debt by one frame: a frame conforms
//! when the bucket holds at least `min(len, burst)` tokens, so a TSO/GSO frame larger than the
//! burst (64 KiB with a 64k burst) is not refused for ever, and the debt is paid back at the
//! rate, which keeps the long-run average at the rate (RFC 2697's single-rate meter, with the
//! committed burst as the only bucket and a colour-blind "exceed → drop" action). A frame that
//! does not conform is dropped as `qos_policed`, counted against the port and the profile.
//!
//! ```text
//!   tokens(now) = min(burst, tokens(last) + (now − last) · rate / 8)
//!   conform ⇔ tokens ≥ min(len, burst);   conform → tokens −= len
//! ```
//!
//! Time comes in as `now`; tokens are kept in byte·nanoseconds so that no rounding loses
//! tokens between frames at high rates.

use std::time::Instant;

use serde::Serialize;

/// The lowest rate a profile may have: 8 kbit/s.
pub const MIN_RATE: u64 = 8_000;
/// The highest: 1 Tbit/s.
pub const MAX_RATE: u64 = 1_000_000_000_000;
/// The smallest burst: one full-size Ethernet frame.
pub const MIN_BURST: u64 = 1_518;
/// The largest burst: 64 MiB.
pub const MAX_BURST: u64 = 64 << 20;
/// The most ports that may carry a policer.
pub const MAX_POLICED: usize = 16384;

const NANOS: i128 = 1_000_000_000;

/// A QoS profile as the pipeline applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QosProfile {
    /// The committed rate in bit/s.
    pub rate: u64,
    /// The burst in bytes.
    pub burst: u64,
    /// The DSCP (0..=63) IP frames from the port are marked with, if any; their tunnel
    /// packets' outer TOS follows (the ECN bits kept).
    pub dscp: Option<u8>,
    /// Without a mark: whether the tunnel packets of the port's IP frames take their outer TOS
    /// from the inner packet (trusted), whatever the node's `inherit_tos`.
    pub trust: bool,
}

/// Why a profile cannot be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum QosError {
    /// A rate out of range.
    #[error("rate {0} bit/s is out of range; use 8kbit to 1tbit")]
    Rate(u64),
    /// A burst out of range.
    #[error("burst {0} bytes is out of range; use 1518 bytes to 64 MiB")]
    Burst(u64),
    /// A DSCP out of range.
    #[error("dscp {0} is out of range; a dscp is 0..=63")]
    Dscp(u8),
}

impl QosProfile {
    /// Checks the profile's values.
    pub fn check(&self) -> Result<(), QosError> {
        if !(MIN_RATE..=MAX_RATE).contains(&self.rate) {
            return Err(QosError::Rate(self.rate));
        }
        if !(MIN_BURST..=MAX_BURST).contains(&self.burst) {
            return Err(QosError::Burst(self.burst));
        }
        match self.dscp {
            Some(d) if d > 63 => Err(QosError::Dscp(d)),
            _ => Ok(()),
        }
    }
}

/// What a policer counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PolicerCounters {
    /// Frames that conformed.
    pub conformed_frames: u64,
    /// Their bytes.
    pub conformed_bytes: u64,
    /// Frames dropped (`qos_policed`).
    pub policed_frames: u64,
    /// Their bytes.
    pub policed_bytes: u64,
}

/// One port's bucket.
#[derive(Debug, Clone)]
pub struct Policer {
    profile: QosProfile,
    /// Tokens in byte·nanoseconds; below zero while in debt.
    tokens: i128,
    last: Option<Instant>,
    counters: PolicerCounters,
}

impl Policer {
    /// A full bucket of `profile`.
    pub fn new(profile: QosProfile) -> Policer {
        Policer {
            profile,
            tokens: i128::from(profile.burst) * NANOS,
            last: None,
            counters: PolicerCounters::default(),
        }
    }

    /// Its profile.
    pub fn profile(&self) -> QosProfile {
        self.profile
    }

    /// What it counted.
    pub fn counters(&self) -> PolicerCounters {
        self.counters
    }

    /// Whether a frame of `len` bytes at `now` conforms; takes its tokens if it does, and
    /// counts it either way.
    pub fn admit(&mut self, len: usize, now: Instant) -> bool {
        let burst = i128::from(self.profile.burst) * NANOS;
        if let Some(last) = self.last {
            let elapsed = i128::try_from(now.saturating_duration_since(last).as_nanos())
                .unwrap_or(i128::MAX / 4);
            // bytes·ns gained = elapsed_ns · rate / 8 · (1 ns⁻¹ · 1e9 ns/s)/1e9 ⇒ elapsed · rate / 8.
            let gained = elapsed.saturating_mul(i128::from(self.profile.rate)) / 8;
            self.tokens = self.tokens.saturating_add(gained).min(burst);
        }
        self.last = Some(now);
        let len128 = i128::try_from(len).unwrap_or(i128::MAX / 4);
        let need = len128.min(i128::from(self.profile.burst)) * NANOS;
        if self.tokens >= need {
            self.tokens -= len128 * NANOS;
            self.counters.conformed_frames += 1;
            self.counters.conformed_bytes += len as u64;
            true
        } else {
            self.counters.policed_frames += 1;
            self.counters.policed_bytes += len as u64;
            false
        }
    }
}

/// Rewrites the DSCP of an IPv4 or IPv6 packet in Ethernet frame `frame` (untagged, or with
/// one 802.1Q tag), keeping the ECN bits and fixing the IPv4 header checksum (RFC 1624's
/// incremental update). Returns whether it did: not an IP frame, or too short, is left alone.
pub fn mark(frame: &mut [u8], dscp: u8) -> bool {
    let mut at = 12;
    let mut ethertype = match frame.get(at..at + 2) {
        Some(t) => u16::from_be_bytes([t[0], t[1]]),
        None => return false,
    };
    if ethertype == crate::vlan::TPID_8021Q {
        at += 4;
        ethertype = match frame.get(at..at + 2) {
            Some(t) => u16::from_be_bytes([t[0], t[1]]),
            None => return false,
        };
    }
    let ip = at + 2;
    match ethertype {
        0x0800 => {
            let Some(h) = frame.get_mut(ip..ip + 20) else {
                return false;
            };
            if h[0] >> 4 != 4 {
                return false;
            }
            let old = u16::from_be_bytes([h[0], h[1]]);
            h[1] = (dscp << 2) | (h[1] & 0x03);
            let new = u16::from_be_bytes([h[0], h[1]]);
            // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
            let hc = u16::from_be_bytes([h[10], h[11]]);
            let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            let [c0, c1] = (!(sum as u16)).to_be_bytes();
            h[10] = c0;
            h[11] = c1;
            true
        }
        0x86dd => {
            let Some(h) = frame.get_mut(ip..ip + 40) else {
                return false;
            };
            if h[0] >> 4 != 6 {
                return false;
            }
            // Traffic class: the low nibble of byte 0 and the high nibble of byte 1.
            let tc = (dscp << 2) | ((h[1] >> 4) & 0x03);
            h[0] = (h[0] & 0xf0) | (tc >> 4);
            h[1] = (h[1] & 0x0f) | (tc << 4);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn profile(rate: u64, burst: u64) -> QosProfile {
        QosProfile {
            rate,
            burst,
            dscp: None,
            trust: false,
        }
    }

    #[test]
    fn a_bucket_lets_its_burst_through_then_the_rate() {
        let t0 = Instant::now();
        // 8 Mbit/s = 1 MB/s, burst 10 000 bytes.
        let mut p = Policer::new(profile(8_000_000, 10_000));
        assert!((0..10).all(|_| p.admit(1000, t0)));
        assert!(!p.admit(1000, t0), "the burst is spent");
        // 1 ms later: 1000 bytes of tokens.
        assert!(p.admit(1000, t0 + Duration::from_millis(1)));
        assert!(!p.admit(1, t0 + Duration::from_millis(1)));
        // Over one second of steady offered load at twice the rate, what passes is the rate
        // (plus the burst), to a frame.
        let mut p = Policer::new(profile(8_000_000, 10_000));
        let mut passed = 0u64;
        for i in 0..2000u64 {
            if p.admit(1000, t0 + Duration::from_micros(i * 500)) {
                passed += 1000;
            }
        }
        assert!((1_000_000..=1_011_000).contains(&passed), "{passed}");
        let c = p.counters();
        assert_eq!(c.conformed_bytes, passed);
        assert_eq!(c.conformed_frames + c.policed_frames, 2000);
    }

    #[test]
    fn a_frame_larger_than_the_burst_passes_on_a_full_bucket_and_is_paid_back() {
        let t0 = Instant::now();
        let mut p = Policer::new(profile(8_000_000, 2_000));
        assert!(p.admit(64_000, t0));
        // 64 ms of debt at 1 MB/s: nothing before ~62 ms.
        assert!(!p.admit(100, t0 + Duration::from_millis(60)));
        assert!(p.admit(100, t0 + Duration::from_millis(63)));
    }

    #[test]
    fn profiles_are_checked() {
        assert_eq!(profile(100_000_000, 65_536).check(), Ok(()));
        assert_eq!(profile(10, 65_536).check(), Err(QosError::Rate(10)));
        assert_eq!(profile(100_000_000, 100).check(), Err(QosError::Burst(100)));
        let bad = QosProfile {
            dscp: Some(64),
            ..profile(100_000_000, 65_536)
        };
        assert_eq!(bad.check(), Err(QosError::Dscp(64)));
    }

    #[test]
    fn marking_rewrites_the_dscp_keeps_ecn_and_the_checksum_right() {
        // An IPv4 header (RFC 791 example values), TOS 0x01 (ECN ECT(1)), checksum computed.
        let mut frame = vec![0u8; 14 + 20];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip: [u8; 20] = [
            0x45, 0x01, 0x00, 0x54, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0, 0, 10, 0, 0, 1, 10, 0,
            0, 2,
        ];
        frame[14..].copy_from_slice(&ip);
        let sum = |h: &[u8]| {
            let mut s: u32 = h
                .chunks(2)
                .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
                .sum();
            while s > 0xffff {
                s = (s & 0xffff) + (s >> 16);
            }
            !(s as u16)
        };
        let c = sum(&frame[14..]);
        frame[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(mark(&mut frame, 46));
        assert_eq!(frame[15], (46 << 2) | 0x01);
        assert_eq!(sum(&frame[14..]), 0, "the header checksum still verifies");
        // IPv6: traffic class across bytes 0 and 1.
        let mut v6 = vec![0u8; 14 + 40];
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60;
        v6[15] = 0x1a; // tc low nibble 1 (ECN 01), flow label bits kept
        assert!(mark(&mut v6, 10));
        let tc = ((v6[14] & 0x0f) << 4) | (v6[15] >> 4);
        assert_eq!(tc, (10 << 2) | 0x01);
        assert_eq!(v6[15] & 0x0f, 0x0a);
        // ARP, runts: untouched.
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(!mark(&mut arp, 10));
        assert!(!mark(&mut [0u8; 20], 10));
    }
}
