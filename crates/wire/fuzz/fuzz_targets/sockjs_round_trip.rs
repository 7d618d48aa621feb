//! libFuzzer entry for `wire::sockjs::fuzz::round_trip` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::sockjs::fuzz::round_trip(data));
