//! Fuzz target: see nvo_wire_check::gre for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_wire_check::gre::check(data));
