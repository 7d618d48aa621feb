//! Integration tests: a real server on port 0, real WebSocket and HTTP clients.
//! One target, a module per area (issue 2: the server core; issue 3: SockJS).

// Test helpers unwrap: a panic there is a failing test, not a crashed server.
#![allow(clippy::unwrap_used)]

mod support;

mod api;
mod apps;
mod bad_input;
mod binary;
mod deflate;
mod fast_open;
mod federation;
mod hostile;
mod irc;
mod lifecycle;
mod security;
mod recovery;
mod room_archive;
mod storage;
mod sockjs_http;
mod shared_writer;
mod sockjs_ws;
mod write_delay;
mod xmpp;
mod xmpp_archive;
mod xmpp_bosh;
mod xmpp_hostile;
mod xmpp_sasl2;
mod xmpp_rooms;
mod xmpp_sockjs;
