//! One stream between servers as its two ends see it while they negotiate:
//! the socket (plain or TLS) and the parser of what the other side sends.
//! Both directions use it, and then keep reading through it.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use wire::xmpp::{Element, Limits, STREAMS_NS, StreamEvent, StreamParser};

use super::ns;

/// Bytes read at a time.
const READ_CHUNK: usize = 4 * 1024;

/// Why a stream between servers ended.
#[derive(Debug)]
pub(crate) enum Failed {
    /// The socket closed or failed.
    Io(std::io::Error),
    /// The other side broke the protocol, or refused us: the stream error
    /// condition that says so, and a text for people.
    Protocol(&'static str, String),
    /// The other side ended its stream, with a stream error if it sent one.
    Closed(Option<String>),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Io(e) => write!(f, "{e}"),
            Failed::Protocol(condition, text) => write!(f, "{condition}: {text}"),
            Failed::Closed(Some(error)) => write!(f, "closed with the stream error {error}"),
            Failed::Closed(None) => write!(f, "closed"),
        }
    }
}

impl From<std::io::Error> for Failed {
    fn from(e: std::io::Error) -> Failed {
        Failed::Io(e)
    }
}

/// A socket and the parser of what comes from it.
pub(crate) struct WireStream<S> {
    pub io: S,
    pub parser: StreamParser,
    /// Bytes read, for the metrics.
    pub read: usize,
    /// How long a write may go without the other side taking a byte before
    /// the stream is given up on; none while negotiating, which has its own
    /// deadline.
    pub stall: Option<std::time::Duration>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> WireStream<S> {
    pub fn new(io: S, limits: Limits) -> WireStream<S> {
        WireStream { io, parser: StreamParser::new(limits), read: 0, stall: None }
    }

    /// A stream with no header on the wire (XEP-0361): what comes is read
    /// as inside a `jabber:server` stream already open.
    pub fn zero(io: S, limits: Limits) -> WireStream<S> {
        let mut parser = StreamParser::new(limits);
        parser.feed(wire::xmpp::Header::default().server_stream().as_bytes());
        // The header just fed is the one event it holds.
        let _ = parser.next_event();
        WireStream { io, parser, read: 0, stall: None }
    }

    /// The next event the other side sends; a stream error it sends, or
    /// the end of its stream or socket, is `Err`.
    pub async fn event(&mut self) -> Result<StreamEvent, Failed> {
        loop {
            match self.parser.next_event() {
                Ok(Some(StreamEvent::Stanza(e))) if e.ns == STREAMS_NS && e.name == "error" => {
                    let condition = e.elements().find(|c| c.ns == ns::STREAM_ERRORS && c.name != "text").map(|c| c.name.clone());
                    return Err(Failed::Closed(Some(condition.unwrap_or_default())));
                }
                Ok(Some(StreamEvent::Close)) => return Err(Failed::Closed(None)),
                Ok(Some(event)) => return Ok(event),
                Ok(None) => {}
                Err(e) => return Err(Failed::Protocol(e.condition(), e.to_string())),
            }
            let mut chunk = [0u8; READ_CHUNK];
            let n = self.io.read(&mut chunk).await?;
            if n == 0 {
                return Err(Failed::Io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            self.read += n;
            self.parser.feed(&chunk[..n]);
        }
    }

    /// The next element (not a stream header).
    pub async fn element(&mut self) -> Result<Element, Failed> {
        match self.event().await? {
            StreamEvent::Stanza(element) => Ok(element),
            _ => Err(Failed::Protocol("bad-format", "a stream header where an element was expected".into())),
        }
    }

    /// The other side's stream header: its attributes, once checked to be
    /// a server stream of XMPP 1.0.
    pub async fn header(&mut self) -> Result<Vec<(String, String)>, Failed> {
        match self.event().await? {
            StreamEvent::Open { attrs, ns: stanzas } => {
                if stanzas != ns::SERVER {
                    return Err(Failed::Protocol("invalid-namespace", format!("stanzas between servers are in {}", ns::SERVER)));
                }
                if !attrs.iter().any(|(n, v)| n == "version" && v == "1.0") {
                    return Err(Failed::Protocol("unsupported-version", "version='1.0' is required".into()));
                }
                Ok(attrs)
            }
            _ => Err(Failed::Protocol("bad-format", "the stream must start with its header".into())),
        }
    }

    /// Writes `text` and flushes it. With a `stall` set, each step must
    /// make progress within it: a peer that stops reading cannot hold the
    /// stream (and what it holds) past it.
    pub async fn send(&mut self, text: &str) -> Result<(), Failed> {
        let Some(stall) = self.stall else {
            self.io.write_all(text.as_bytes()).await?;
            // Out now: a layer between (TLS, compression) may hold bytes until flushed.
            self.io.flush().await?;
            return Ok(());
        };
        let stalled = || Failed::Io(std::io::Error::new(std::io::ErrorKind::TimedOut, format!("the other side took nothing written for {stall:?}")));
        let mut rest = text.as_bytes();
        while !rest.is_empty() {
            match tokio::time::timeout(stall, self.io.write(rest)).await {
                Err(_) => return Err(stalled()),
                Ok(Ok(0)) => return Err(Failed::Io(std::io::ErrorKind::WriteZero.into())),
                Ok(Ok(n)) => rest = &rest[n..],
                Ok(Err(e)) => return Err(e.into()),
            }
        }
        tokio::time::timeout(stall, self.io.flush()).await.map_err(|_| stalled())??;
        Ok(())
    }

    /// Sends an element of the stream.
    pub async fn send_element(&mut self, element: &Element) -> Result<(), Failed> {
        self.send(&element.to_xml(ns::SERVER)).await
    }

    /// Ends the stream with the error `condition`, then the socket.
    pub async fn fail(&mut self, condition: &str, text: &str) {
        let error = Element::new("error", STREAMS_NS)
            .child(Element::new(condition, ns::STREAM_ERRORS))
            .child(Element::new("text", ns::STREAM_ERRORS).text(text));
        let _ = self.send(&format!("{}{}", error.to_xml(ns::SERVER), wire::xmpp::STREAM_END)).await;
        let _ = self.io.shutdown().await;
    }

    /// The socket, with whatever the parser still holds.
    pub fn into_parts(self) -> (S, StreamParser) {
        (self.io, self.parser)
    }
}

/// The value of attribute `name` in a stream header's `attrs`.
pub(crate) fn attribute<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

/// `element` with every element of `jabber:server` (a stanza as another
/// server sent it) put in `jabber:client`, as this server's sessions
/// handle stanzas.
pub(crate) fn as_client(mut element: Element) -> Element {
    if element.ns == ns::SERVER {
        element.ns = ns::CLIENT.to_owned();
    }
    for child in &mut element.children {
        if let wire::xmpp::Node::Element(e) = child {
            *e = as_client(std::mem::take(e));
        }
    }
    element
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_the_other_side_never_takes_ends_after_the_stall() {
        // A pipe of 64 bytes whose other end is never read.
        let (near, _far) = tokio::io::duplex(64);
        let mut stream = WireStream::new(near, Limits::default());
        stream.stall = Some(std::time::Duration::from_millis(50));
        let error = stream.send(&"x".repeat(1000)).await.expect_err("stalled");
        assert!(matches!(&error, Failed::Io(e) if e.kind() == std::io::ErrorKind::TimedOut), "{error}");
        // What fits goes at once.
        let (near, _far) = tokio::io::duplex(64);
        let mut stream = WireStream::new(near, Limits::default());
        stream.stall = Some(std::time::Duration::from_millis(50));
        stream.send("<r/>").await.expect("taken");
    }
}
