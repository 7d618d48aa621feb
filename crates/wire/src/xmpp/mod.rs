//! XMPP's XML stream (RFC 6120), sans I/O: the stream parser and the
//! elements it yields, how each side opens and ends a stream, JIDs, and the
//! namespaces; shared by every XMPP transport, server and bench client alike.

mod element;
pub mod fuzz;
mod header;
pub mod jid;
pub mod ns;
mod scan;
mod stream;

pub use element::{Element, Node, STREAMS_NS, escape_into};
pub use header::{CLOSE, Header, STREAM_END};
pub use jid::Jid;
pub use stream::{Limits, StreamError, StreamEvent, StreamParser, standalone};
pub(crate) use stream::{Document, parse_document};
