//! libFuzzer entry for `wire::xmpp::fuzz::stream` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::xmpp::fuzz::stream(data));
