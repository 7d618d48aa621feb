//! The SockJS 0.3 wire formats, as sockjs-client 1.x and sockjs-node speak
//! them, with no I/O: quoting messages into JSON strings browsers survive,
//! building and parsing frames (`o`, `h`, `a[...]`, `c[...]`), wrapping
//! frames for each HTTP transport, decoding what clients send, and
//! splitting streamed response bodies back into frames for the bench.
//!
//! The server's path for a published message: [`quote`] it once, join
//! cached quotes into a frame with [`encode_messages`], wrap the frame with
//! [`Framing::wrap`] (or [`jsonp_into`]). Incoming: [`decode_xhr_send`],
//! [`decode_jsonp_send`], [`decode_websocket`]. The bench's path: a
//! [`Splitter`] per response body, then [`parse_frame`].

mod frame;
mod json;
mod payload;
mod split;
mod transport;

#[doc(hidden)]
pub mod fuzz;

pub use frame::{
    ANOTHER_CONNECTION_STILL_OPEN, BROKEN_FRAMING, Frame, FrameError, HEARTBEAT, OPEN,
    encode_close, encode_messages, encode_strings, parse_frame,
};
pub use json::{quote, quote_into};
pub use payload::{PayloadError, decode_jsonp_send, decode_websocket, decode_xhr_send};
pub use split::{Split, SplitError, Splitter, Wrapping};
pub use transport::{
    Callback, CallbackError, EVENTSOURCE_PRELUDE, Framing, XHR_STREAMING_PRELUDE, eventsource_into,
    htmlfile_into, htmlfile_prelude_into, jsonp_into, xhr_into,
};
