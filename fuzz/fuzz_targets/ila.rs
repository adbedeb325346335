//! Fuzz target: see nvo_wire_check::ila for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_wire_check::ila::check(data));
