//! BOSH (XEP-0124) bodies as XMPP uses them (XEP-0206), sans I/O: the
//! `<body/>` wrapper every request and response is, its attributes, the
//! stanzas it carries and the conditions that end a session.
//!
//! A body's stanzas are parsed by the XMPP stream parser's rules (no DTD,
//! comments or processing instructions; the same bounds), and a stanza that
//! declares no namespace of its own is in `jabber:client`, as it would be
//! on a stream.

use std::fmt::Write;

use crate::xmpp::{Document, Element, Limits, StreamError, escape_into, parse_document};

/// The namespace of `<body/>`.
pub const NS: &str = "http://jabber.org/protocol/httpbind";

/// The namespace of XEP-0206's attributes (`xmpp:version`,
/// `xmpp:restart`), written with the `xmpp:` prefix.
pub const XBOSH_NS: &str = "urn:xmpp:xbosh";

/// The namespace of the stanzas a body carries.
pub const CLIENT_NS: &str = crate::xmpp::ns::CLIENT;

/// The protocol version spoken: XEP-0124 1.11.
pub const VERSION: &str = "1.11";

/// One `<body/>`: its attributes (the XEP-0206 ones named `xmpp:…`,
/// whatever prefix the sender chose) and the stanzas in it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Body {
    pub attrs: Vec<(String, String)>,
    pub stanzas: Vec<Element>,
}

impl Body {
    /// A body with no attributes and no stanzas (builder style).
    pub fn new() -> Body {
        Body::default()
    }

    /// Adds an attribute (builder style).
    pub fn attr(mut self, name: &str, value: impl ToString) -> Body {
        self.attrs.push((name.to_owned(), value.to_string()));
        self
    }

    /// Adds a stanza (builder style).
    pub fn stanza(mut self, stanza: Element) -> Body {
        self.stanzas.push(stanza);
        self
    }

    /// The value of attribute `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The attribute `name` as a number, `Err` naming it when it is there
    /// but is not one.
    pub fn number(&self, name: &str) -> Result<Option<u64>, BodyError> {
        self.get(name)
            .map(|v| v.parse().map_err(|_| BodyError::BadAttribute(name.to_owned(), v.to_owned())))
            .transpose()
    }

    /// Whether `type='terminate'`.
    pub fn is_terminate(&self) -> bool {
        self.get("type") == Some("terminate")
    }

    /// Parses a body, holding each stanza to `limits`.
    pub fn parse(bytes: &[u8], limits: Limits) -> Result<Body, BodyError> {
        let Document { root, declared, stanzas } = parse_document(bytes, ("body", NS), CLIENT_NS, limits).map_err(BodyError::Xml)?;
        let xbosh = |prefix: &str| declared.iter().any(|(p, ns)| p == prefix && ns == XBOSH_NS);
        let attrs = root
            .attrs
            .into_iter()
            .map(|(name, value)| match name.split_once(':') {
                // XEP-0206's attributes, under whatever prefix the sender chose.
                Some((prefix, local)) if xbosh(prefix) => (format!("xmpp:{local}"), value),
                _ => (name, value),
            })
            .collect();
        Ok(Body { attrs, stanzas })
    }

    /// The body as XML, declaring `xmlns:xmpp` when an `xmpp:` attribute
    /// is there; each stanza declares its own namespace.
    pub fn to_xml(&self) -> String {
        let stanzas: Vec<String> = self.stanzas.iter().map(Element::to_xml_standalone).collect();
        let mut out = String::new();
        self.write_around(stanzas.iter().map(String::as_str), &mut out);
        out
    }

    /// Writes the body with `stanzas` already serialised (each standing
    /// alone, as RFC 7395 sends them) as its content.
    pub fn write_around<'a>(&self, stanzas: impl Iterator<Item = &'a str>, out: &mut String) {
        out.push_str("<body xmlns='");
        out.push_str(NS);
        out.push('\'');
        if self.attrs.iter().any(|(n, _)| n.starts_with("xmpp:")) {
            let _ = write!(out, " xmlns:xmpp='{XBOSH_NS}'");
        }
        for (name, value) in &self.attrs {
            let _ = write!(out, " {name}='");
            escape_into(value, out);
            out.push('\'');
        }
        let mut stanzas = stanzas.peekable();
        if stanzas.peek().is_none() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        for stanza in stanzas {
            out.push_str(stanza);
        }
        out.push_str("</body>");
    }
}

/// Why a body cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Not a well-formed `<body/>` in the BOSH namespace, or a stanza the
    /// stream rules refuse.
    #[error("{0}")]
    Xml(StreamError),
    /// An attribute whose value is not what the protocol allows.
    #[error("the attribute {0}='{1}' is not valid")]
    BadAttribute(String, String),
}

/// The conditions with which a session ends (XEP-0124 §17.2, XEP-0206
/// §4), sent as `<body type='terminate' condition='…'/>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    /// The request is not a valid body, or is missing what it must have.
    BadRequest,
    /// The `to` of a session creation names no domain served here.
    HostUnknown,
    /// The `sid` is unknown, or the `rid` is outside the window.
    ItemNotFound,
    /// The client broke a rule it was told: too many requests at once,
    /// polling too often, a body too large.
    PolicyViolation,
    /// The XMPP stream ended with a stream error, which is in the body.
    RemoteStreamError,
    /// The server is shutting down.
    SystemShutdown,
    /// Something went wrong that no other condition names.
    UndefinedCondition,
}

impl Condition {
    /// The condition as the `condition` attribute spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::BadRequest => "bad-request",
            Condition::HostUnknown => "host-unknown",
            Condition::ItemNotFound => "item-not-found",
            Condition::PolicyViolation => "policy-violation",
            Condition::RemoteStreamError => "remote-stream-error",
            Condition::SystemShutdown => "system-shutdown",
            Condition::UndefinedCondition => "undefined-condition",
        }
    }

    /// The terminating body that says so.
    pub fn body(self) -> Body {
        Body::new().attr("type", "terminate").attr("condition", self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_request_as_strophe_sends_it() {
        let request = br#"<body rid="3341523" xmlns="http://jabber.org/protocol/httpbind" to="localhost" xml:lang="en" wait="60" hold="1" content="text/xml; charset=utf-8" ver="1.6" xmpp:version="1.0" xmlns:xmpp="urn:xmpp:xbosh"/>"#;
        let body = Body::parse(request, Limits::default()).unwrap();
        assert_eq!(body.get("rid"), Some("3341523"));
        assert_eq!(body.number("wait").unwrap(), Some(60));
        assert_eq!(body.get("xmpp:version"), Some("1.0"));
        assert_eq!(body.get("xml:lang"), Some("en"));
        assert!(body.stanzas.is_empty());
    }

    #[test]
    fn stanzas_are_in_jabber_client_unless_they_say_otherwise() {
        let request = b"<body rid='2' sid='s' xmlns='http://jabber.org/protocol/httpbind'>\
            <auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='ANONYMOUS'/>\
            <message to='a@b'><body>hi &amp; bye</body></message>\n\
            <iq xmlns='jabber:client' type='get' id='1'><ping xmlns='urn:xmpp:ping'/></iq></body>";
        let body = Body::parse(request, Limits::default()).unwrap();
        let names: Vec<_> = body.stanzas.iter().map(|s| (s.name.as_str(), s.ns.as_str())).collect();
        assert_eq!(names, [("auth", "urn:ietf:params:xml:ns:xmpp-sasl"), ("message", CLIENT_NS), ("iq", CLIENT_NS)]);
        let message = &body.stanzas[1];
        assert_eq!(message.find("body", CLIENT_NS).unwrap().text_content(), "hi & bye");
    }

    #[test]
    fn a_restart_under_any_prefix() {
        let request = b"<body rid='4' sid='s' to='localhost' x:restart='true' xmlns:x='urn:xmpp:xbosh' xmlns='http://jabber.org/protocol/httpbind'/>";
        let body = Body::parse(request, Limits::default()).unwrap();
        assert_eq!(body.get("xmpp:restart"), Some("true"));
    }

    #[test]
    fn what_is_not_a_body_is_refused() {
        for bad in [
            &b""[..],
            b"<body xmlns='urn:other'/>",
            b"<body xmlns='http://jabber.org/protocol/httpbind'><message>",
            b"<body xmlns='http://jabber.org/protocol/httpbind'/><body/>",
            b"<!DOCTYPE x [<!ENTITY a 'b'>]><body xmlns='http://jabber.org/protocol/httpbind'/>",
            b"<body xmlns='http://jabber.org/protocol/httpbind'><!-- c --></body>",
            b"<body xmlns='http://jabber.org/protocol/httpbind'>text</body>",
        ] {
            assert!(Body::parse(bad, Limits::default()).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        let limits = Limits { max_stanza_bytes: 1024, max_depth: 2, max_attributes: 8 };
        let deep = b"<body xmlns='http://jabber.org/protocol/httpbind'><iq><a><b/></a></iq></body>";
        assert!(matches!(Body::parse(deep, limits), Err(BodyError::Xml(e)) if e.condition() == "policy-violation"));
        let body = Body::parse(b"<body xmlns='http://jabber.org/protocol/httpbind' wait='soon'/>", limits).unwrap();
        assert_eq!(body.number("wait").unwrap_err().to_string(), "the attribute wait='soon' is not valid");
    }

    #[test]
    fn responses_to_the_byte() {
        let empty = Body::new().attr("sid", "abc").attr("ack", 7);
        assert_eq!(empty.to_xml(), "<body xmlns='http://jabber.org/protocol/httpbind' sid='abc' ack='7'/>");
        let created = Body::new().attr("xmpp:version", "1.0").attr("from", "a'b").stanza(Element::new("features", crate::xmpp::STREAMS_NS));
        assert_eq!(
            created.to_xml(),
            "<body xmlns='http://jabber.org/protocol/httpbind' xmlns:xmpp='urn:xmpp:xbosh' xmpp:version='1.0' from='a&apos;b'>\
             <stream:features xmlns:stream=\"http://etherx.jabber.org/streams\"/></body>"
        );
        let mut out = String::new();
        Condition::ItemNotFound.body().write_around(["<message xmlns=\"jabber:client\"/>"].into_iter(), &mut out);
        assert_eq!(
            out,
            "<body xmlns='http://jabber.org/protocol/httpbind' type='terminate' condition='item-not-found'><message xmlns=\"jabber:client\"/></body>"
        );
    }

    #[test]
    fn a_body_survives_its_own_round_trip() {
        let body = Body::new()
            .attr("rid", 9)
            .attr("sid", "s<1>")
            .stanza(Element::new("iq", CLIENT_NS).attr("type", "get").child(Element::new("ping", "urn:xmpp:ping")));
        assert_eq!(Body::parse(body.to_xml().as_bytes(), Limits::default()).unwrap(), body);
    }
}
