//! Checks of nvo's parsers of untrusted input other than the tunnel headers (those are
//! nvo-wire-check's): BGP messages from a peer, API request bodies, user-defined encapsulation
//! profiles and lab topology files. Each check runs the parser on arbitrary bytes; nothing may
//! panic on the way, and where the parser accepts the input a property must hold — mostly that
//! what was parsed re-encodes to something that parses to the same value. The checks themselves
//! panic to report a bug.
//!
//! One module per parser, each with `check(data)`. The fuzz targets in `fuzz/` call them under
//! libFuzzer (nightly, `scripts/fuzz.sh`), and `tests/corpus.rs` replays the committed corpora
//! through them on stable Rust in CI, so the two can never drift apart.
// An oracle's job is to panic when the code under test is wrong.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

pub mod api_request;
pub mod bgp_evpn;
pub mod bgp_message;
pub mod bgp_update;
pub mod lab_topology;
pub mod profile_spec;

/// A check: panics when the parser misbehaves on `data`.
pub type Check = fn(data: &[u8]);

/// Every check, by the name of its fuzz target and corpus directory.
pub const CHECKS: &[(&str, Check)] = &[
    ("api_request", api_request::check),
    ("bgp_evpn", bgp_evpn::check),
    ("bgp_message", bgp_message::check),
    ("bgp_update", bgp_update::check),
    ("lab_topology", lab_topology::check),
    ("profile_spec", profile_spec::check),
];
