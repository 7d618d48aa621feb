//! Transports: each adapts a wire format to an app client. A transport reads
//! requests and writes frames; it never knows what a room is.

pub mod bosh;
pub mod session;
pub mod sockjs;
pub mod utf8_watch;
pub mod websocket;
