//! Fuzz target: see nvo_wire_check::overlay for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_wire_check::overlay::check(data));
