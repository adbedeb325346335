//! Fuzz target: see nvo_fuzz_check::profile_spec for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_fuzz_check::profile_spec::check(data));
