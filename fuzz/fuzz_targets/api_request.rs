//! Fuzz target: see nvo_fuzz_check::api_request for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nvo_fuzz_check::api_request::check(data));
