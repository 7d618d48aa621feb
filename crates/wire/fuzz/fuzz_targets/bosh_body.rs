//! libFuzzer entry for `wire::xmpp::fuzz::bosh_body` (see its docs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wire::xmpp::fuzz::bosh_body(data));
