//! XMPP's XML stream (RFC 6120), sans I/O: the stream parser and the
//! elements it yields, shared by every XMPP transport.

mod element;
pub mod fuzz;
mod stream;

pub use element::{Element, Node, STREAMS_NS, escape_into};
pub use stream::{Limits, StreamError, StreamEvent, StreamParser};
pub(crate) use stream::{Document, parse_document};
