//! libFuzzer entry for `wire::sockjs::fuzz::client_payload` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::sockjs::fuzz::client_payload(data));
