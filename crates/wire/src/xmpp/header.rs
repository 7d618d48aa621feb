//! How a side opens and ends its half of a stream: the `<stream:stream>` header
//! over TCP (RFC 6120 §4.7), and the `<open/>` and `<close/>` elements that stand
//! for them where every message is one element (RFC 7395 §3.3.2).

use super::element::escape_into;
use super::ns;

/// What a side says in its stream header: a client names the domain it wants
/// (`to`); a server says which domain it is (`from`) and the stream's `id`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Header<'a> {
    pub id: Option<&'a str>,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
}

/// The end of a stream over TCP.
pub const STREAM_END: &str = "</stream:stream>";

/// The end of a stream of single-element messages.
pub const CLOSE: &str = "<close xmlns='urn:ietf:params:xml:ns:xmpp-framing'/>";

impl Header<'_> {
    /// The stream header over TCP, XML declaration first, stanzas in `jabber:client`.
    pub fn stream(&self) -> String {
        self.stream_of(ns::CLIENT)
    }

    /// The header of a stream between servers (RFC 6120 §4.7): stanzas in
    /// `jabber:server`, and the `db:` prefix of Server Dialback (XEP-0220
    /// §2.1), which some servers look for before they offer it.
    pub fn server_stream(&self) -> String {
        let mut out = format!("<?xml version='1.0'?><stream:stream xmlns='{}' xmlns:db='{}' xmlns:stream='{}'", ns::SERVER, ns::DIALBACK, ns::STREAMS);
        self.write_attributes(&mut out);
        out.push('>');
        out
    }

    fn stream_of(&self, stanzas: &str) -> String {
        let mut out = format!("<?xml version='1.0'?><stream:stream xmlns='{stanzas}' xmlns:stream='{}'", ns::STREAMS);
        self.write_attributes(&mut out);
        out.push('>');
        out
    }

    /// The `<open/>` element that opens a stream of single-element messages.
    pub fn open(&self) -> String {
        let mut out = format!("<open xmlns='{}'", ns::FRAMING);
        self.write_attributes(&mut out);
        out.push_str("/>");
        out
    }

    fn write_attributes(&self, out: &mut String) {
        for (name, value) in [("id", self.id), ("from", self.from), ("to", self.to)] {
            if let Some(value) = value {
                out.push(' ');
                out.push_str(name);
                out.push_str("='");
                escape_into(value, out);
                out.push('\'');
            }
        }
        out.push_str(" version='1.0' xml:lang='en'");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xmpp::{Limits, StreamEvent, StreamParser};

    #[test]
    fn a_client_and_a_server_header_to_the_byte() {
        let client = Header { to: Some("localhost"), ..Header::default() };
        assert_eq!(
            client.stream(),
            "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0' xml:lang='en'>"
        );
        assert_eq!(client.open(), "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' to='localhost' version='1.0' xml:lang='en'/>");
        let server = Header { id: Some("s1"), from: Some("it's.example"), to: None };
        assert_eq!(
            server.stream(),
            "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='s1' from='it&apos;s.example' version='1.0' xml:lang='en'>"
        );
        assert_eq!(server.open(), "<open xmlns='urn:ietf:params:xml:ns:xmpp-framing' id='s1' from='it&apos;s.example' version='1.0' xml:lang='en'/>");
        let federated = Header { id: None, from: Some("a.test"), to: Some("b.test") };
        assert_eq!(
            federated.server_stream(),
            "<?xml version='1.0'?><stream:stream xmlns='jabber:server' xmlns:db='jabber:server:dialback' xmlns:stream='http://etherx.jabber.org/streams' from='a.test' to='b.test' version='1.0' xml:lang='en'>"
        );
    }

    #[test]
    fn the_parser_reads_what_the_headers_write() {
        let header = Header { to: Some("localhost"), ..Header::default() };
        let mut stream = StreamParser::new(Limits::default());
        stream.feed(format!("{}{STREAM_END}", header.stream()).as_bytes());
        let Ok(Some(StreamEvent::Open { attrs, ns })) = stream.next_event() else { panic!("no header") };
        assert_eq!((ns.as_str(), attrs.iter().find(|(n, _)| n == "to").map(|(_, v)| v.as_str())), (ns::CLIENT, Some("localhost")));
        assert_eq!(stream.next_event(), Ok(Some(StreamEvent::Close)));
        let mut messages = StreamParser::fragments(Limits::default());
        messages.feed(format!("{}{CLOSE}", header.open()).as_bytes());
        for name in ["open", "close"] {
            let Ok(Some(StreamEvent::Stanza(element))) = messages.next_event() else { panic!("no {name}") };
            assert_eq!((element.name.as_str(), element.ns.as_str()), (name, ns::FRAMING));
        }
    }
}
