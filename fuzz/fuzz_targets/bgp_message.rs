//! Fuzz target: see nvo_fuzz_check::bgp_message for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_fuzz_check::bgp_message::check(data));
