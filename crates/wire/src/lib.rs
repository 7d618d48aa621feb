//! Codecs shared by the server and the bench: the application message
//! formats (`app`), BOSH bodies (`bosh`), IRC lines (`irc`), the names people choose
//! (`nickname`), the SockJS framing and JSON escaping (`sockjs`), WebSocket
//! frame headers and permessage-deflate (`websocket`) and XMPP's XML stream
//! (`xmpp`), and wildcard masks (`mask`). Nothing here opens a socket: the one I/O type,
//! `websocket::deflate::Inflating`, wraps any `AsyncRead`, so tests and
//! fuzzers drive all of it with plain bytes.

pub mod app;
pub mod bosh;
pub mod irc;
pub mod mask;
pub mod nickname;
pub mod sockjs;
pub mod websocket;
pub mod xmpp;
