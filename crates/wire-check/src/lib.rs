//! Round-trip checks of every wire format on arbitrary bytes: parse → emit → parse must give the
//! same value, and nothing may panic or read out of bounds on the way — except the checks
//! themselves, which panic to report a bug.
//!
//! One module per header, each with `check(data)`. The fuzz targets in `fuzz/` call them under
//! libFuzzer (nightly, `scripts/fuzz.sh`), and `tests/corpus.rs` replays the committed corpora and
//! the scapy vectors through them on stable Rust in CI, so the two can never drift apart.
// An oracle's job is to panic when the code under test is wrong.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub mod geneve;
pub mod gre;
pub mod ila;
pub mod nsh;
pub mod overlay;
pub mod siit;
pub mod stt;
pub mod vxlan;
pub mod vxlan_gpe;

/// A check: panics when the header code misbehaves on `data`.
pub type Check = fn(data: &[u8]);

/// Every check, by the name of its fuzz target and corpus directory.
pub const CHECKS: &[(&str, Check)] = &[
    ("geneve", geneve::check),
    ("gre", gre::check),
    ("ila", ila::check),
    ("nsh", nsh::check),
    ("overlay", overlay::check),
    ("siit", siit::check),
    ("stt", stt::check),
    ("vxlan", vxlan::check),
    ("vxlan_gpe", vxlan_gpe::check),
];
