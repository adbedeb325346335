//! Fuzz target: see nvo_wire_check::siit for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_wire_check::siit::check(data));
