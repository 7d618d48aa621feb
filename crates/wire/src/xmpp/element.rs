//! An XML element as XMPP uses it: a qualified name, attributes and
//! children, with its namespace resolved; and its serialisation.

use std::fmt::Write;

/// The namespace of the stream's own elements (`<stream:features/>`,
/// `<stream:error/>`), written with the `stream:` prefix the stream header
/// declares.
pub const STREAMS_NS: &str = "http://etherx.jabber.org/streams";

/// One element: its local name, its namespace, its attributes (names as
/// written, namespace declarations left out) and its children.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    pub name: String,
    pub ns: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

/// A child of an element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Element(Element),
    Text(String),
}

impl Element {
    /// An empty element `name` in `ns`.
    pub fn new(name: &str, ns: &str) -> Element {
        Element { name: name.to_owned(), ns: ns.to_owned(), ..Element::default() }
    }

    /// Adds an attribute (builder style).
    pub fn attr(mut self, name: &str, value: &str) -> Element {
        self.attrs.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds a child element (builder style).
    pub fn child(mut self, child: Element) -> Element {
        self.children.push(Node::Element(child));
        self
    }

    /// Adds text (builder style).
    pub fn text(mut self, text: &str) -> Element {
        self.children.push(Node::Text(text.to_owned()));
        self
    }

    /// The value of attribute `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The first child element named `name` in `ns`.
    pub fn find(&self, name: &str, ns: &str) -> Option<&Element> {
        self.elements().find(|e| e.name == name && e.ns == ns)
    }

    /// The child elements, in order.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The element's text, its children's text left out.
    pub fn text_content(&self) -> String {
        self.children
            .iter()
            .filter_map(|n| match n {
                Node::Text(t) => Some(t.as_str()),
                Node::Element(_) => None,
            })
            .collect()
    }

    /// The element as XML, inside a parent whose namespace is `parent_ns`
    /// (`jabber:client` for a stanza on a client stream): `xmlns` is written
    /// only where the namespace changes.
    pub fn to_xml(&self, parent_ns: &str) -> String {
        let mut out = String::new();
        self.write(parent_ns, &mut out);
        out
    }

    /// The element as XML that stands alone, every namespace declared in it
    /// (XMPP over WebSocket sends each element so, RFC 7395 §3.3.3).
    pub fn to_xml_standalone(&self) -> String {
        if self.ns != STREAMS_NS {
            return self.to_xml("");
        }
        let mut out = format!("<stream:{} xmlns:stream=\"{STREAMS_NS}\"", self.name);
        for (name, value) in &self.attrs {
            let _ = write!(out, " {name}=\"");
            escape_into(value, &mut out);
            out.push('"');
        }
        if self.children.is_empty() {
            out.push_str("/>");
            return out;
        }
        out.push('>');
        for child in &self.children {
            match child {
                Node::Element(e) => e.write("", &mut out),
                Node::Text(t) => escape_into(t, &mut out),
            }
        }
        let _ = write!(out, "</stream:{}>", self.name);
        out
    }

    /// Appends the element as XML to `out` (see [`Element::to_xml`]).
    pub fn write(&self, parent_ns: &str, out: &mut String) {
        let stream = self.ns == STREAMS_NS;
        out.push('<');
        if stream {
            out.push_str("stream:");
        }
        out.push_str(&self.name);
        if !stream && self.ns != parent_ns {
            out.push_str(" xmlns=\"");
            escape_into(&self.ns, out);
            out.push('"');
        }
        for (name, value) in &self.attrs {
            let _ = write!(out, " {name}=\"");
            escape_into(value, out);
            out.push('"');
        }
        if self.children.is_empty() {
            out.push_str("/>");
            return;
        }
        out.push('>');
        let ns = if stream { parent_ns } else { &self.ns };
        for child in &self.children {
            match child {
                Node::Element(e) => e.write(ns, out),
                Node::Text(t) => escape_into(t, out),
            }
        }
        out.push_str("</");
        if stream {
            out.push_str("stream:");
        }
        out.push_str(&self.name);
        out.push('>');
    }
}

/// Escapes text or an attribute value with quick-xml (`&`, `<`, `>`, `"`,
/// `'` and CR); a character XML 1.0 does not allow, which text from
/// another protocol may carry (a chat message's U+0001), becomes U+FFFD, so
/// that no stream is broken by it.
pub fn escape_into(text: &str, out: &mut String) {
    if first_forbidden(text).is_none() {
        out.push_str(&quick_xml::escape::escape(text));
    } else {
        let safe: String = text.chars().map(|c| if is_xml_char(c) { c } else { char::REPLACEMENT_CHARACTER }).collect();
        out.push_str(&quick_xml::escape::escape(safe.as_str()));
    }
}

/// The first character of `text` that XML 1.0 does not allow, if any. The
/// bytes are looked at first, which is fast: a control character is one
/// byte, and U+FFFE and U+FFFF both start with 0xEF; only text that has
/// one of those is looked at character by character.
pub fn first_forbidden(text: &str) -> Option<char> {
    let bytes = text.as_bytes();
    let control = bytes.iter().any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r'));
    if !control && memchr::memchr(0xEF, bytes).is_none() {
        return None;
    }
    text.chars().find(|&c| !is_xml_char(c))
}

/// Whether XML 1.0 allows `c` in a document (§2.2, `Char`): tab, line
/// feed, carriage return, and from U+0020 on except U+FFFE and U+FFFF
/// (a Rust `char` is never a surrogate).
pub fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='\u{FFFD}' | '\u{10000}'..)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_written_where_they_change_and_text_is_escaped() {
        let message = Element::new("message", "jabber:client")
            .attr("to", "lobby@conference.localhost")
            .attr("type", "groupchat")
            .child(Element::new("body", "jabber:client").text("<hi> & \"bye\""))
            .child(Element::new("x", "http://jabber.org/protocol/muc#user"));
        assert_eq!(
            message.to_xml("jabber:client"),
            r#"<message to="lobby@conference.localhost" type="groupchat"><body>&lt;hi&gt; &amp; &quot;bye&quot;</body><x xmlns="http://jabber.org/protocol/muc#user"/></message>"#
        );
        let error = Element::new("error", STREAMS_NS).child(Element::new("policy-violation", "urn:ietf:params:xml:ns:xmpp-streams"));
        assert_eq!(
            error.to_xml("jabber:client"),
            r#"<stream:error><policy-violation xmlns="urn:ietf:params:xml:ns:xmpp-streams"/></stream:error>"#
        );
        assert_eq!(message.find("body", "jabber:client").map(Element::text_content).as_deref(), Some("<hi> & \"bye\""));
        assert_eq!(
            Element::new("features", STREAMS_NS).child(Element::new("bind", "urn:ietf:params:xml:ns:xmpp-bind")).to_xml_standalone(),
            r#"<stream:features xmlns:stream="http://etherx.jabber.org/streams"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"/></stream:features>"#
        );
        assert_eq!(Element::new("presence", "jabber:client").to_xml_standalone(), r#"<presence xmlns="jabber:client"/>"#);
        assert_eq!(message.get("type"), Some("groupchat"));
    }

    #[test]
    fn what_xml_forbids_is_written_as_a_replacement_character() {
        let body = Element::new("body", "jabber:client").attr("a", "x\u{0}y").text("a\u{1}b\u{1b}\u{FFFE}\u{FFFF}c\td\re\u{10FFFF}");
        assert_eq!(body.to_xml("jabber:client"), "<body a=\"x\u{FFFD}y\">a\u{FFFD}b\u{FFFD}\u{FFFD}\u{FFFD}c\td&#13;e\u{10FFFF}</body>");
    }
}
