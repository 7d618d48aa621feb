//! Transports: each adapts a wire format to an app client. A transport reads
//! requests and writes frames; it never knows what a room is.

pub mod deflate;
pub mod lazy_ws;
pub mod mount;
pub mod send_queue;
pub mod http_session;
pub mod shared_tcp;
pub mod shared_writer;
pub mod sockjs;
#[cfg(test)]
mod testing;
pub mod utf8_watch;
pub mod websocket;
pub mod ws_task;

use std::sync::Arc;

use bytes::Bytes;
use hub::{Close, Outbox};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::write_through;

pub use mount::{Mount, MountLimits, Protocol, SockjsOptions};

/// One client's end of the protocol it speaks (an app, or XMPP), as a
/// transport sees it: where the client's messages go, and the outbox the
/// transport's writer drains. Dropping it ends the client: it leaves its
/// rooms.
pub trait Client: Send + std::fmt::Debug + 'static {
    /// The client's outbox, which the transport's writer drains.
    fn outbox(&self) -> &Arc<Outbox>;
    /// When the client's token expires and it must be closed.
    fn expires(&self) -> Option<Instant>;
    /// Handles one text message from the client.
    fn on_message(&mut self, text: Utf8Bytes);
    /// Handles one binary message; `Err` is the close for a protocol that
    /// takes text only.
    fn on_binary(&mut self, data: Bytes) -> Result<(), Close>;
}

/// A client's WebSocket frame for the read-side layers' tests.
#[cfg(test)]
pub(crate) use wire::websocket::frame_header::client_frame;
