//! How STT frames leave: whole, through the kernel's TCP segmentation (`nvo_io::SttTso`, the
//! CVSW way), or cut by nvod's own segmenter into one raw-socket datagram per segment.
//!
//! ```text
//!  stt_offload = "auto" (default)
//!    first STT frame → SttTso::open (TUN nvostt%d, its sysctls)  ok → kernel, for good
//!                                                                 failed → one warning, software
//!    each frame: IPv4 remote, not multicast, ≤ MAX_TSO_FRAME, TTL < 255
//!                → Segmenter::offload_header + one write      (tx_frames_kernel)
//!                  a refused write → software, counted        (tx_kernel_errors)
//!                else → Segmenter::segment → raw socket       (tx_frames_software)
//!  stt_offload = "off": software always
//! ```
//!
//! The kernel's segments are the software segmenter's byte for byte but for the IPv4 ID
//! (crates/datapath/tests/stt_tso.rs); the wire TTL, TOS and DF are those the raw socket
//! would have used (config, inherited from the inner packet, or the kernel's defaults).

use std::net::IpAddr;

use nvo_encap::stt::Segmenter;
use nvo_io::{OuterValues, SttTso, TsoOuter, MAX_TSO_FRAME};

use super::settings::SttOffload;
use super::underlays::Outer;

/// The lengths of the segments (TCP-like header included) a frame of `frame_len` bytes is cut
/// into at `max_payload` bytes each: what a frame sent whole counts as, as the software path
/// counts each datagram.
pub fn segment_lens(frame_len: usize, max_payload: usize) -> impl Iterator<Item = usize> {
    let step = max_payload.max(1);
    (0..frame_len)
        .step_by(step)
        .map(move |at| 20 + step.min(frame_len - at))
}

/// How many segments and bytes ([`segment_lens`] summed) a frame sent whole counts as.
pub fn segment_totals(frame_len: usize, max_payload: usize) -> (u64, u64) {
    segment_lens(frame_len, max_payload).fold((0, 0), |(n, b), len| (n + 1, b + len as u64))
}

/// The STT transmit counters, for the API's `stt` counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SttTxCounters {
    /// Frames handed whole to the kernel's segmentation.
    pub frames_kernel: u64,
    /// Frames cut by nvod's segmenter.
    pub frames_software: u64,
    /// Frames the kernel's TUN refused, then cut by nvod (also in `frames_software`).
    pub kernel_errors: u64,
}

#[derive(Debug)]
enum State {
    /// `auto`, not tried yet: the TUN is made for the first STT frame.
    Untried,
    Open(SttTso),
    /// `off`, or the TUN could not be set up.
    Software,
}

/// The STT transmit path; see the module docs.
#[derive(Debug)]
pub struct SttTx {
    state: State,
    counters: SttTxCounters,
    /// Whether a refused write was logged (once per process).
    error_logged: bool,
}

/// One frame to send: the STT frame, the outer addresses and entropy port, the frame bytes
/// per segment, and the outer values (node config, inherited from the inner packet).
#[derive(Debug, Clone, Copy)]
pub struct SttFrame<'a> {
    /// The STT header and the inner frame, apart: the kernel path writes them with one
    /// writev, so the inner frame is never copied.
    pub frame: [&'a [u8]; 2],
    /// The locator.
    pub local: IpAddr,
    /// The remote VTEP.
    pub remote: IpAddr,
    /// The TCP-like source port (entropy).
    pub src_port: u16,
    /// Frame bytes per segment (underlay MTU less the IP and TCP-like headers).
    pub max_payload: usize,
    /// The node's outer header settings.
    pub config: Outer,
    /// TOS and TTL inherited from the inner packet.
    pub inherited: OuterValues,
}

impl SttTx {
    /// A transmit path for `stt_offload`.
    pub fn new(mode: SttOffload) -> SttTx {
        SttTx {
            state: match mode {
                SttOffload::Auto => State::Untried,
                SttOffload::Off => State::Software,
            },
            counters: SttTxCounters::default(),
            error_logged: false,
        }
    }

    /// The counters.
    pub fn counters(&self) -> SttTxCounters {
        self.counters
    }

    /// Whether a frame to `remote` may go whole to the kernel: not under `off` or after a
    /// failed setup, not to an IPv6 or multicast remote. (The caller flushes the raw socket's
    /// queue first only then, so that the software path keeps its batches.)
    pub fn may_take(&self, remote: IpAddr) -> bool {
        let ipv4 = matches!(remote, IpAddr::V4(v4) if !v4.is_multicast());
        ipv4 && !matches!(self.state, State::Software)
    }

    /// Counts a frame cut by nvod's segmenter.
    pub fn count_software(&mut self) {
        self.counters.frames_software += 1;
    }

    /// Hands `f` whole to the kernel if it can go that way; true when the kernel took it
    /// (then it is counted). False: the caller cuts it (and calls [`SttTx::count_software`]).
    pub fn send_whole(&mut self, segmenter: &mut Segmenter, f: &SttFrame<'_>) -> bool {
        let (IpAddr::V4(src), IpAddr::V4(dst)) = (f.local, f.remote) else {
            return false;
        };
        let Ok(mss) = u16::try_from(f.max_payload) else {
            return false;
        };
        let len = f.frame[0].len() + f.frame[1].len();
        if dst.is_multicast() || len > MAX_TSO_FRAME || mss == 0 {
            return false;
        }
        self.open_once();
        let State::Open(tso) = &self.state else {
            return false;
        };
        let outer = TsoOuter {
            src,
            dst,
            ttl: f
                .inherited
                .ttl
                .filter(|&t| t != 0)
                .or(f.config.ttl)
                .unwrap_or(tso.default_ttl()),
            tos: f.inherited.tos.or(f.config.tos).unwrap_or(0),
            df: f.config.df.unwrap_or(tso.default_df()),
        };
        if outer.ttl == u8::MAX {
            return false;
        }
        let Ok(header) = segmenter.offload_header(len, f.local, f.remote, f.src_port) else {
            return false;
        };
        match tso.send(&outer, &header, f.frame, mss) {
            Ok(()) => {
                self.counters.frames_kernel += 1;
                true
            }
            Err(e) => {
                self.counters.kernel_errors += 1;
                if !self.error_logged {
                    self.error_logged = true;
                    log::warn!(
                        "stt: tun {} refused a frame of {} bytes for {dst}: {e}; it and any \
                         other refused frame are segmented by nvod (not logged again)",
                        tso.name(),
                        len
                    );
                }
                false
            }
        }
    }

    /// Makes the TUN device on first use under `auto`.
    fn open_once(&mut self) {
        if matches!(self.state, State::Untried) {
            self.state = match SttTso::open() {
                Ok(tso) => {
                    log::info!(
                        "stt: frames go whole to the kernel's tcp segmentation through tun {} \
                         (stt_offload = \"auto\")",
                        tso.name()
                    );
                    State::Open(tso)
                }
                Err(e) => {
                    log::warn!(
                        "stt: cannot hand frames to the kernel's tcp segmentation: {e}; nvod \
                         segments them itself (stt_offload = \"off\" silences this)"
                    );
                    State::Software
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_lens_are_the_software_segments() {
        let lens: Vec<_> = segment_lens(3000, 1460).collect();
        assert_eq!(lens, [1480, 1480, 100]);
        assert_eq!(segment_lens(1460, 1460).collect::<Vec<_>>(), [1480]);
        assert_eq!(segment_lens(0, 1460).count(), 0);
        assert_eq!(segment_totals(3000, 1460), (3, 3060));
    }

    #[test]
    fn off_never_opens_a_tun_and_refuses_what_the_kernel_cannot_take() {
        let mut tx = SttTx::new(SttOffload::Off);
        let mut segmenter = Segmenter::new(1);
        let (stt, inner) = ([0u8; 18], [0u8; 82]);
        let f = SttFrame {
            frame: [&stt, &inner],
            local: "192.0.2.1".parse().unwrap(),
            remote: "192.0.2.2".parse().unwrap(),
            src_port: 0xc000,
            max_payload: 1460,
            config: Outer::default(),
            inherited: OuterValues::default(),
        };
        assert!(!tx.may_take(f.remote));
        assert!(!tx.send_whole(&mut segmenter, &f));
        assert!(matches!(tx.state, State::Software));
        // Auto, but IPv6 or multicast: not even tried.
        let mut tx = SttTx::new(SttOffload::Auto);
        let v6 = SttFrame {
            local: "2001:db8::1".parse().unwrap(),
            remote: "2001:db8::2".parse().unwrap(),
            ..f
        };
        assert!(!tx.send_whole(&mut segmenter, &v6));
        let group = SttFrame {
            remote: "239.1.1.1".parse().unwrap(),
            ..f
        };
        assert!(!tx.send_whole(&mut segmenter, &group));
        assert!(matches!(tx.state, State::Untried));
        assert!(!tx.may_take(v6.remote) && !tx.may_take(group.remote));
        assert!(tx.may_take(f.remote));
        assert_eq!(segmenter.next_frame_id(), 1, "no frame id spent");
    }
}
