//! Transports: each adapts a wire format to an app client. A transport reads
//! requests and writes frames; it never knows what a room is.

pub mod bosh;
pub mod deflate;
pub mod lazy_ws;
pub mod send_queue;
pub mod session;
pub mod shared_tcp;
pub mod sockjs;
pub mod utf8_watch;
pub mod websocket;
pub mod ws_task;

use wire::write_through;

/// A client's WebSocket frame for the read-side layers' tests.
#[cfg(test)]
pub(crate) use wire::websocket::frame_header::client_frame;
