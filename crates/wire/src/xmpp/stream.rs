//! The XML stream of RFC 6120, sans I/O: bytes in (as they arrive, in any
//! pieces), the stream header, one stanza at a time and the stream's end out.
//!
//! Parsing is quick-xml's. What RFC 6120 §11.1 forbids in a stream is an
//! error here: a DOCTYPE (so no entity can expand: no XML bomb), processing
//! instructions, comments, and entity references other than the five XML
//! predefines and character references; so is any character XML 1.0 does
//! not allow (control characters, U+FFFE, U+FFFF), raw or as a reference.
//! A stanza is parsed once it is complete (`scan` finds its end as its bytes
//! arrive); until then its bytes wait, within [`Limits::max_stanza_bytes`].

use std::sync::{Arc, LazyLock};

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::element::{Element, Node, STREAMS_NS, first_forbidden};
use super::ns;
use super::scan::{Goal, Scanner};

/// Bounds on what a peer may make the parser hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest stanza (or stream header), in bytes.
    pub max_stanza_bytes: usize,
    /// Deepest nesting of elements in a stanza, the stanza itself being 1.
    pub max_depth: usize,
    /// Most attributes on one element, namespace declarations included.
    pub max_attributes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_stanza_bytes: 64 * 1024, max_depth: 32, max_attributes: 32 }
    }
}

/// Attributes a stream header may have whatever the stanzas' bound: `to`,
/// `from`, `id`, `version`, `xml:lang` and the namespace declarations.
const HEADER_ATTRIBUTES: usize = 16;

/// What the stream carried next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// `<stream:stream …>`: its attributes (`to`, `version`, `xml:lang` …)
    /// and the default namespace its stanzas are in (`jabber:client`).
    Open { attrs: Vec<(String, String)>, ns: String },
    /// One top-level element, with namespaces resolved.
    Stanza(Element),
    /// `</stream:stream>`.
    Close,
}

/// Why the stream must end, as the stream error condition of RFC 6120
/// §4.9.3 that says so.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The bytes are not well-formed XML (or not UTF-8).
    #[error("not-well-formed: {0}")]
    NotWellFormed(String),
    /// XML that a stream may not carry: a DTD, a comment, a processing
    /// instruction, an entity reference other than the predefined ones.
    #[error("restricted-xml: {0}")]
    RestrictedXml(String),
    /// A stanza over a bound of [`Limits`].
    #[error("policy-violation: {0}")]
    PolicyViolation(String),
    /// The stream header is not `stream` in the streams namespace.
    #[error("invalid-namespace: {0}")]
    InvalidNamespace(String),
    /// Something other than elements and whitespace between stanzas, or
    /// anything after the stream's end.
    #[error("bad-format: {0}")]
    BadFormat(String),
}

impl StreamError {
    /// The condition's element name, as sent in `<stream:error/>`.
    pub fn condition(&self) -> &'static str {
        match self {
            StreamError::NotWellFormed(_) => "not-well-formed",
            StreamError::RestrictedXml(_) => "restricted-xml",
            StreamError::PolicyViolation(_) => "policy-violation",
            StreamError::InvalidNamespace(_) => "invalid-namespace",
            StreamError::BadFormat(_) => "bad-format",
        }
    }
}

/// The stream parser: feed it bytes, take events.
#[derive(Debug)]
pub struct StreamParser {
    limits: Limits,
    buf: Vec<u8>,
    /// The namespace declarations of the stream header, in scope for every
    /// stanza: (prefix, namespace), the default one with an empty prefix.
    /// Shared by every stream whose header declares what nearly every
    /// header does ([`shared_scope`]).
    scope: Option<Scope>,
    closed: bool,
    /// Where the element at the buffer's start ends, as far as it has come.
    scan: Scanner,
}

/// Whether a parse ended for want of bytes.
enum Parsed<T> {
    Done(T, usize),
    Incomplete,
}

/// `text` as the one element standing alone it must be (RFC 7395's
/// framing; what the server keeps of a stanza), parsed within the default
/// limits; `None` if it is not one.
pub fn standalone(text: &str) -> Option<Element> {
    let mut parser = StreamParser::fragments(Limits::default());
    parser.feed(text.as_bytes());
    match parser.next_event() {
        Ok(Some(StreamEvent::Stanza(element))) => Some(element),
        _ => None,
    }
}

impl StreamParser {
    pub fn new(limits: Limits) -> StreamParser {
        StreamParser { limits, buf: Vec::new(), scope: None, closed: false, scan: Scanner::default() }
    }

    /// A parser of elements that each stand alone, with no stream header
    /// around them (XMPP over WebSocket, RFC 7395: one element per message,
    /// each declaring its own namespace).
    pub fn fragments(limits: Limits) -> StreamParser {
        StreamParser { limits, buf: Vec::new(), scope: Some(shared_scope(Vec::new())), closed: false, scan: Scanner::default() }
    }

    /// Starts a new stream on the same bytes, as after SASL success or
    /// STARTTLS (RFC 6120 §4.3.3): the next event is a stream header again.
    pub fn restart(&mut self) {
        self.scope = None;
        self.closed = false;
        self.scan.reset();
    }

    /// Takes bytes as they arrived.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes waiting for the rest of their stanza.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next event, `Ok(None)` until enough bytes have arrived.
    pub fn next_event(&mut self) -> Result<Option<StreamEvent>, StreamError> {
        if self.scan.is_fresh() {
            // Whitespace between stanzas is dropped; anything else must start one.
            let start = self.buf.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(self.buf.len());
            self.buf.drain(..start);
            let Some(&first) = self.buf.first() else {
                // Nothing is waiting: its room goes, and the scanner's, so
                // that an idle stream holds neither (the next bytes make
                // them again).
                self.buf = Vec::new();
                self.scan = Scanner::default();
                return Ok(None);
            };
            if self.closed {
                return Err(StreamError::BadFormat("data after the end of the stream".into()));
            }
            if first != b'<' {
                return Err(StreamError::BadFormat("text outside any stanza".into()));
            }
        }
        let goal = if self.scope.is_none() { Goal::Header } else { Goal::Stanza };
        let end = self.scan.scan(&self.buf, goal, self.limits.max_depth)?;
        // An unfinished stanza or header is bounded as it grows; a whole
        // stanza by its length (the header's bound is its attributes).
        let held = match end {
            None => self.buf.len(),
            Some(end) if goal == Goal::Stanza => end,
            Some(_) => 0,
        };
        if held > self.limits.max_stanza_bytes {
            return Err(StreamError::PolicyViolation(format!("a stanza of more than {} bytes", self.limits.max_stanza_bytes)));
        }
        let Some(end) = end else { return Ok(None) };
        self.scan.reset();
        let parsed = match &self.scope {
            None => self.parse_header(end)?,
            Some(scope) => parse_stanza(&self.buf[..end], scope, STREAM_ROOT, self.limits)?,
        };
        let Parsed::Done(event, used) = parsed else {
            return Err(StreamError::NotWellFormed("an element that does not end where its tags say".into()));
        };
        self.buf.drain(..used);
        if event == StreamEvent::Close {
            self.closed = true;
        }
        Ok(Some(event))
    }

    fn parse_header(&mut self, end: usize) -> Result<Parsed<StreamEvent>, StreamError> {
        let bytes = &self.buf[..end];
        let mut reader = Reader::from_reader(bytes);
        loop {
            let event = match reader.read_event() {
                Ok(event) => event,
                Err(e) => return Err(ill_formed(e)),
            };
            match event {
                Event::Decl(_) => {}
                Event::Start(head) => {
                    let mut scope = Vec::new();
                    // The header's attributes are the stream's, not a stanza's.
                    let limits = Limits { max_attributes: self.limits.max_attributes.max(HEADER_ATTRIBUTES), ..self.limits };
                    let attrs = attributes(&head, &mut scope, limits)?;
                    let (prefix, local) = split(&head)?;
                    let ns = lookup(&scope, &prefix).unwrap_or_default();
                    if local != "stream" || ns != STREAMS_NS {
                        return Err(StreamError::InvalidNamespace(format!("the stream header is {{{ns}}}{local}, not {{{STREAMS_NS}}}stream")));
                    }
                    let default = lookup(&scope, "").unwrap_or_default();
                    let used = reader.buffer_position() as usize;
                    self.scope = Some(shared_scope(scope));
                    return Ok(Parsed::Done(StreamEvent::Open { attrs, ns: default }, used));
                }
                Event::Eof => return Ok(Parsed::Incomplete),
                other => return Err(restricted_or_bad(&other)),
            }
        }
    }
}

/// Namespace declarations in scope: (prefix, namespace), the default one
/// with an empty prefix.
type Scope = Arc<[(String, String)]>;

/// `declared` as a stream holds it for its life: the one shared copy when
/// it is what nearly every header declares (a client's, a server's, a
/// server's with dialback, or nothing), in any order, so that an idle
/// stream holds none of its own.
fn shared_scope(declared: Vec<(String, String)>) -> Scope {
    static COMMON: LazyLock<[Scope; 4]> = LazyLock::new(|| {
        let scope = |pairs: &[(&str, &str)]| pairs.iter().map(|(p, ns)| ((*p).to_owned(), (*ns).to_owned())).collect();
        [
            scope(&[]),
            scope(&[("", ns::CLIENT), ("stream", STREAMS_NS)]),
            scope(&[("", ns::SERVER), ("stream", STREAMS_NS)]),
            scope(&[("", ns::SERVER), ("db", ns::DIALBACK), ("stream", STREAMS_NS)]),
        ]
    });
    // The common declarations are distinct: as many, all of them there, is the same set.
    let same = |common: &[(String, String)]| common.len() == declared.len() && common.iter().all(|d| declared.contains(d));
    match COMMON.iter().find(|common| same(common)) {
        Some(common) => common.clone(),
        None => Arc::from(declared),
    }
}

/// The element a stream's stanzas are the children of: `{STREAMS_NS}stream`.
const STREAM_ROOT: (&str, &str) = ("stream", STREAMS_NS);

/// One stanza, or the end of the element they are in (`root`, a local name
/// and namespace), from the start of `bytes`.
fn parse_stanza(bytes: &[u8], scope: &[(String, String)], root: (&str, &str), limits: Limits) -> Result<Parsed<StreamEvent>, StreamError> {
    let mut reader = Reader::from_reader(bytes);
    // The root's end tag closes what was opened before this parse began:
    // it is recognised below.
    reader.config_mut().allow_unmatched_ends = true;
    // Open elements: the element and the declarations it added to the scope.
    let mut open: Vec<(Element, usize)> = Vec::new();
    let mut scope = scope.to_vec();
    loop {
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(e) => return Err(ill_formed(e)),
        };
        let closed = match event {
            Event::Start(head) | Event::Empty(head) if open.len() >= limits.max_depth => {
                let _ = head;
                return Err(StreamError::PolicyViolation(format!("elements nested deeper than {}", limits.max_depth)));
            }
            Event::Start(head) => {
                let before = scope.len();
                let element = element(&head, &mut scope, limits)?;
                open.push((element, before));
                None
            }
            Event::Empty(head) => {
                let before = scope.len();
                let element = element(&head, &mut scope, limits)?;
                scope.truncate(before);
                Some(element)
            }
            Event::End(end) => match open.pop() {
                Some((element, before)) => {
                    scope.truncate(before);
                    Some(element)
                }
                None => {
                    let name = end.name().as_ref().to_owned();
                    let (prefix, local) = name.split_once(':').map_or(("", name.as_str()), |(p, l)| (p, l));
                    if local == root.0 && lookup(&scope, prefix).as_deref() == Some(root.1) {
                        return Ok(Parsed::Done(StreamEvent::Close, reader.buffer_position() as usize));
                    }
                    return Err(StreamError::NotWellFormed(format!("</{name}> closes nothing")));
                }
            },
            Event::Text(text) => {
                let text = text.xml10_content();
                allowed(&text)?;
                match open.last_mut() {
                    Some((parent, _)) => push_text(parent, &text),
                    None if text.trim().is_empty() => {}
                    None => return Err(StreamError::BadFormat("text between stanzas".into())),
                }
                None
            }
            Event::CData(data) => {
                let text = data.into_inner().into_owned();
                allowed(&text)?;
                match open.last_mut() {
                    Some((parent, _)) => push_text(parent, &text),
                    None => return Err(StreamError::BadFormat("text between stanzas".into())),
                }
                None
            }
            Event::GeneralRef(reference) => {
                let c = match reference.resolve_char_ref() {
                    Ok(Some(c)) => c,
                    Ok(None) => match reference.as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => return Err(StreamError::RestrictedXml(format!("the entity &{other};"))),
                    },
                    Err(e) => return Err(StreamError::NotWellFormed(e.to_string())),
                };
                allowed(c.encode_utf8(&mut [0; 4]))?;
                match open.last_mut() {
                    Some((parent, _)) => push_text(parent, c.encode_utf8(&mut [0; 4])),
                    None => return Err(StreamError::BadFormat("text between stanzas".into())),
                }
                None
            }
            Event::Eof => return Ok(Parsed::Incomplete),
            other => return Err(restricted_or_bad(&other)),
        };
        if let Some(element) = closed {
            match open.last_mut() {
                Some((parent, _)) => parent.children.push(Node::Element(element)),
                None => return Ok(Parsed::Done(StreamEvent::Stanza(element), reader.buffer_position() as usize)),
            }
        }
    }
}

/// A whole document whose root element wraps stanzas, as a BOSH `<body/>`
/// does: the root (its attributes, no children), the namespace prefixes it
/// declares (prefix, namespace) and the stanzas, each held to `limits`. The root must be `root` (local name, namespace); stanzas
/// that declare no namespace of their own are in `stanza_ns`, not the
/// root's.
pub(crate) fn parse_document(bytes: &[u8], root: (&str, &str), stanza_ns: &str, limits: Limits) -> Result<Document, StreamError> {
    let mut reader = Reader::from_reader(bytes);
    let (head, empty) = loop {
        match reader.read_event().map_err(ill_formed)? {
            Event::Decl(_) => {}
            Event::Text(text) if text.as_ref().trim_ascii().is_empty() => {}
            Event::Start(head) => break (head.into_owned(), false),
            Event::Empty(head) => break (head.into_owned(), true),
            Event::Eof => return Err(StreamError::NotWellFormed("an empty document".into())),
            other => return Err(restricted_or_bad(&other)),
        }
    };
    let mut scope = Vec::new();
    let limits_of_root = Limits { max_attributes: limits.max_attributes.max(HEADER_ATTRIBUTES), ..limits };
    let wrapper = element(&head, &mut scope, limits_of_root)?;
    if (wrapper.name.as_str(), wrapper.ns.as_str()) != root {
        return Err(StreamError::InvalidNamespace(format!("the document is {{{}}}{}, not {{{}}}{}", wrapper.ns, wrapper.name, root.1, root.0)));
    }
    let declared = scope.clone();
    let mut at = reader.buffer_position() as usize;
    let mut stanzas = Vec::new();
    if !empty {
        loop {
            match parse_stanza(&bytes[at..], &scope, root, limits)? {
                Parsed::Done(StreamEvent::Stanza(mut stanza), used) => {
                    rename_ns(&mut stanza, root.1, stanza_ns);
                    stanzas.push(stanza);
                    at += used;
                }
                Parsed::Done(_, used) => {
                    at += used;
                    break;
                }
                Parsed::Incomplete => return Err(StreamError::NotWellFormed(format!("the document ends before </{}>", root.0))),
            }
        }
    }
    if !bytes[at..].iter().all(u8::is_ascii_whitespace) {
        return Err(StreamError::BadFormat("data after the end of the document".into()));
    }
    Ok(Document { root: wrapper, declared, stanzas })
}

/// Puts `element` and its descendants that are in `from` (the root's
/// namespace, inherited) in `to`.
fn rename_ns(element: &mut Element, from: &str, to: &str) {
    if element.ns == from {
        to.clone_into(&mut element.ns);
    }
    for child in &mut element.children {
        if let Node::Element(child) = child {
            rename_ns(child, from, to);
        }
    }
}

/// What [`parse_document`] found.
pub(crate) struct Document {
    pub root: Element,
    pub declared: Vec<(String, String)>,
    pub stanzas: Vec<Element>,
}

fn push_text(parent: &mut Element, text: &str) {
    match parent.children.last_mut() {
        Some(Node::Text(last)) => last.push_str(text),
        _ => parent.children.push(Node::Text(text.to_owned())),
    }
}

/// An element's head: its name resolved in `scope`, which gains the
/// element's own declarations.
fn element(head: &BytesStart<'_>, scope: &mut Vec<(String, String)>, limits: Limits) -> Result<Element, StreamError> {
    let attrs = attributes(head, scope, limits)?;
    let (prefix, local) = split(head)?;
    let ns = lookup(scope, &prefix).ok_or_else(|| StreamError::NotWellFormed(format!("the prefix {prefix:?} is not declared")))?;
    Ok(Element { name: local, ns, attrs, children: Vec::new() })
}

/// The attributes of `head`, its namespace declarations added to `scope`
/// instead.
fn attributes(head: &BytesStart<'_>, scope: &mut Vec<(String, String)>, limits: Limits) -> Result<Vec<(String, String)>, StreamError> {
    let mut attrs = Vec::new();
    for (i, attr) in head.attributes().with_checks(true).enumerate() {
        if i >= limits.max_attributes {
            return Err(StreamError::PolicyViolation(format!("more than {} attributes on one element", limits.max_attributes)));
        }
        let attr = attr.map_err(|e| StreamError::NotWellFormed(e.to_string()))?;
        let name = attr.key.as_ref().to_owned();
        let value = attr.normalized_value(quick_xml::XmlVersion::Implicit1_0).map_err(|e| StreamError::RestrictedXml(e.to_string()))?.into_owned();
        allowed(&name)?;
        allowed(&value)?;
        if name == "xmlns" {
            scope.push((String::new(), value));
        } else if let Some(prefix) = name.strip_prefix("xmlns:") {
            scope.push((prefix.to_owned(), value));
        } else {
            attrs.push((name, value));
        }
    }
    Ok(attrs)
}

/// An element name's prefix and local part.
fn split(head: &BytesStart<'_>) -> Result<(String, String), StreamError> {
    let name = head.name().as_ref().to_owned();
    allowed(&name)?;
    Ok(match name.split_once(':') {
        Some((prefix, local)) => (prefix.to_owned(), local.to_owned()),
        None => (String::new(), name),
    })
}

/// The namespace `prefix` means in `scope` (the innermost declaration).
fn lookup(scope: &[(String, String)], prefix: &str) -> Option<String> {
    if prefix == "xml" {
        return Some("http://www.w3.org/XML/1998/namespace".to_owned());
    }
    scope.iter().rev().find(|(p, _)| p == prefix).map(|(_, ns)| ns.clone())
}

/// Refuses text with a character XML 1.0 does not allow (§2.2): it would
/// break every reader it was passed on to.
fn allowed(text: &str) -> Result<(), StreamError> {
    match first_forbidden(text) {
        None => Ok(()),
        Some(c) => Err(StreamError::NotWellFormed(format!("U+{:04X} is not a character XML allows", u32::from(c)))),
    }
}

fn ill_formed(error: quick_xml::Error) -> StreamError {
    StreamError::NotWellFormed(error.to_string())
}

fn restricted_or_bad(event: &Event<'_>) -> StreamError {
    match event {
        Event::DocType(_) => StreamError::RestrictedXml("a document type declaration".into()),
        Event::PI(_) => StreamError::RestrictedXml("a processing instruction".into()),
        Event::Comment(_) => StreamError::RestrictedXml("a comment".into()),
        Event::Decl(_) => StreamError::RestrictedXml("an XML declaration inside the stream".into()),
        other => StreamError::BadFormat(format!("unexpected {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "<?xml version='1.0'?><stream:stream to='localhost' version='1.0' xml:lang='en' xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>";

    fn opened() -> StreamParser {
        let mut p = StreamParser::new(Limits::default());
        p.feed(HEADER.as_bytes());
        assert!(matches!(p.next_event(), Ok(Some(StreamEvent::Open { .. }))));
        p
    }

    #[test]
    fn a_parser_with_nothing_waiting_holds_no_buffer() {
        let mut p = opened();
        p.feed(b"<presence/><message to='a@b'><body>hel");
        assert!(matches!(p.next_event(), Ok(Some(StreamEvent::Stanza(_)))));
        assert!(matches!(p.next_event(), Ok(None)));
        assert!(p.buf.capacity() > 0, "half a stanza is kept");
        p.feed(b"lo</body></message>");
        assert!(matches!(p.next_event(), Ok(Some(StreamEvent::Stanza(_)))));
        assert!(matches!(p.next_event(), Ok(None)));
        assert_eq!((p.buffered(), p.buf.capacity()), (0, 0));
        assert_eq!(p.scan.open.capacity(), 0, "nor the scanner's room for the elements it found open");
    }

    #[test]
    fn streams_whose_headers_declare_the_common_namespaces_share_them() {
        let (a, b) = (opened(), opened());
        let mut c = StreamParser::new(Limits::default());
        c.feed(b"<stream:stream xmlns:stream='http://etherx.jabber.org/streams' xmlns='jabber:client'>");
        c.next_event().unwrap();
        let scope = |p: &StreamParser| p.scope.clone().unwrap();
        assert!(Arc::ptr_eq(&scope(&a), &scope(&b)) && Arc::ptr_eq(&scope(&a), &scope(&c)), "the same declarations in any order");
        // A header that declares more has its own, and its prefixes mean what it said.
        let mut d = StreamParser::new(Limits::default());
        d.feed(b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' xmlns:x='urn:x'><x:y/>");
        d.next_event().unwrap();
        assert!(!Arc::ptr_eq(&scope(&a), &scope(&d)));
        let Ok(Some(StreamEvent::Stanza(y))) = d.next_event() else { panic!("a stanza") };
        assert_eq!((y.name.as_str(), y.ns.as_str()), ("y", "urn:x"));
    }

    #[test]
    fn the_header_then_stanzas_then_the_end_whatever_the_pieces() {
        let whole = format!(
            "{HEADER} <message to='a@b' type='chat'><body>x &amp; y &#x263A;</body><x xmlns='urn:x'><y/></x></message>\n<presence/></stream:stream>"
        );
        for piece in [1, 2, 3, 7, whole.len()] {
            let mut p = StreamParser::new(Limits::default());
            let mut events = Vec::new();
            for chunk in whole.as_bytes().chunks(piece) {
                p.feed(chunk);
                while let Some(event) = p.next_event().unwrap() {
                    events.push(event);
                }
            }
            assert_eq!(events.len(), 4, "in pieces of {piece}: {events:?}");
            let StreamEvent::Open { attrs, ns } = &events[0] else { panic!("{events:?}") };
            assert_eq!(ns, "jabber:client");
            assert!(attrs.contains(&("to".into(), "localhost".into())));
            assert!(attrs.contains(&("xml:lang".into(), "en".into())));
            let StreamEvent::Stanza(message) = &events[1] else { panic!("{events:?}") };
            assert_eq!((message.name.as_str(), message.ns.as_str(), message.get("type")), ("message", "jabber:client", Some("chat")));
            assert_eq!(message.find("body", "jabber:client").unwrap().text_content(), "x & y ☺");
            assert!(message.find("x", "urn:x").unwrap().find("y", "urn:x").is_some(), "children inherit the default namespace");
            assert_eq!(events[2], StreamEvent::Stanza(Element::new("presence", "jabber:client")));
            assert_eq!(events[3], StreamEvent::Close);
        }
    }

    #[test]
    fn what_a_stream_may_not_carry_names_its_condition() {
        let cases: [(&str, &str); 9] = [
            ("<message to='&lol;'/>", "restricted-xml"),
            ("<!DOCTYPE lol [<!ENTITY lol 'lol'>]><message/>", "restricted-xml"),
            ("<message><body>&lol;</body></message>", "restricted-xml"),
            ("<message><!-- hi --></message>", "restricted-xml"),
            ("<?pi data?>", "restricted-xml"),
            ("<message></presence>", "not-well-formed"),
            ("<foo:bar/>", "not-well-formed"),
            ("hello", "bad-format"),
            ("<message to='a' to='b'/>", "not-well-formed"),
        ];
        for (input, condition) in cases {
            let mut p = opened();
            p.feed(input.as_bytes());
            let error = p.next_event().expect_err(input);
            assert_eq!(error.condition(), condition, "{input}: {error}");
        }
        let mut p = StreamParser::new(Limits::default());
        p.feed(b"<stream xmlns='jabber:client'>");
        assert_eq!(p.next_event().unwrap_err().condition(), "invalid-namespace");
        let mut p = opened();
        p.feed(b"</stream:stream><presence/>");
        assert_eq!(p.next_event().unwrap(), Some(StreamEvent::Close));
        assert_eq!(p.next_event().unwrap_err().condition(), "bad-format");
    }

    #[test]
    fn stanzas_are_held_to_the_limits() {
        let limits = Limits { max_stanza_bytes: 100, max_depth: 3, max_attributes: 2 };
        let mut p = StreamParser::new(limits);
        p.feed(HEADER.as_bytes());
        p.next_event().unwrap();
        p.feed(b"<message><a><b><c/></b></a></message>");
        assert_eq!(p.next_event().unwrap_err().condition(), "policy-violation");
        let mut p = StreamParser::new(limits);
        p.feed(HEADER.as_bytes());
        p.next_event().unwrap();
        p.feed(b"<message a='1' b='2' c='3'/>");
        assert_eq!(p.next_event().unwrap_err().condition(), "policy-violation");
        let mut p = StreamParser::new(limits);
        p.feed(HEADER.as_bytes());
        p.next_event().unwrap();
        p.feed(format!("<message><body>{}", "x".repeat(100)).as_bytes());
        assert_eq!(p.next_event().unwrap_err().condition(), "policy-violation", "an unfinished stanza over the byte bound");
    }

    #[test]
    fn a_character_cut_by_a_read_waits_for_its_other_bytes() {
        let body = "Привет, мир! ☺ 𝄞 ".repeat(40);
        let stanza = format!("<message to='lobby@conference.localhost' type='groupchat'><body>{body}</body></message>");
        for cut in 1..stanza.len() {
            let mut p = opened();
            p.feed(&stanza.as_bytes()[..cut]);
            assert_eq!(p.next_event(), Ok(None), "cut at {cut}");
            p.feed(&stanza.as_bytes()[cut..]);
            let Ok(Some(StreamEvent::Stanza(message))) = p.next_event() else { panic!("cut at {cut}") };
            assert_eq!(message.find("body", "jabber:client").unwrap().text_content(), body);
        }
    }

    #[test]
    fn characters_xml_forbids_are_not_well_formed_raw_or_referenced() {
        for input in [
            "<message><body>a\u{1}b</body></message>",
            "<message><body>a\u{0}b</body></message>",
            "<message><body>a&#1;b</body></message>",
            "<message><body>a&#x1B;b</body></message>",
            "<message><body>a&#xFFFE;b</body></message>",
            "<message><body>\u{FFFF}</body></message>",
            "<message><body><![CDATA[\u{7}]]></body></message>",
            "<message to='a&#1;b'/>",
            "<message to='a\u{8}b'/>",
        ] {
            let mut p = opened();
            p.feed(input.as_bytes());
            let error = p.next_event().expect_err(input);
            assert_eq!(error.condition(), "not-well-formed", "{input}: {error}");
        }
        let mut p = opened();
        p.feed("<message><body>tab\tcr\rlf\n&#9;&#xD;&#10;\u{FFFD}\u{10000}</body></message>".as_bytes());
        let Ok(Some(StreamEvent::Stanza(message))) = p.next_event() else { panic!("the characters XML allows") };
        assert_eq!(message.find("body", "jabber:client").unwrap().text_content(), "tab\tcr\nlf\n\t\r\n\u{FFFD}\u{10000}");
    }

    #[test]
    fn a_stanza_whole_in_one_read_is_held_to_the_byte_bound_too() {
        let limits = Limits { max_stanza_bytes: 100, ..Limits::default() };
        let mut p = StreamParser::new(limits);
        p.feed(HEADER.as_bytes());
        p.next_event().unwrap();
        p.feed(format!("<message><body>{}</body></message>", "x".repeat(100)).as_bytes());
        assert_eq!(p.next_event().unwrap_err().condition(), "policy-violation");
    }

    #[test]
    fn invalid_utf8_is_not_well_formed() {
        let mut p = opened();
        p.feed(b"<message><body>\xff\xfe</body></message>");
        assert_eq!(p.next_event().unwrap_err().condition(), "not-well-formed");
    }
}
