//! Message archives (XEP-0313, `urn:xmpp:mam:2` with `#extended`) as
//! XMPP reads them: each account keeps the `chat` and `normal` messages
//! with a body that it sends and receives, and each room its messages,
//! each under an id of its archive's that the recipient's live copy also
//! carries (XEP-0359's `<stanza-id/>`).
//!
//! The writer is `base::archive`'s, shared with the rooms: a message is
//! delivered first, then archived. The session waits for the commit before
//! it reads the sender's next stanza, so what stream management
//! acknowledges (XEP-0198) is archived.

use store::{Cursor, Entry, Filter, Page};
use wire::xmpp::Element;

use super::ns;

/// XEP-0313's namespace, and its extension's.
pub const MAM: &str = "urn:xmpp:mam:2";
pub const MAM_EXTENDED: &str = "urn:xmpp:mam:2#extended";
/// XEP-0359's namespace.
pub const SID: &str = "urn:xmpp:sid:0";

/// Takes from `message` what only this server writes into an archived
/// message: stanza ids (XEP-0359 §4) and the nicknames of an IRC private
/// message (`ns::IRC`). A client's or another server's claims go.
pub(crate) fn strip_claims(message: &mut Element) {
    message.children.retain(|c| !matches!(c, wire::xmpp::Node::Element(e) if (e.ns == SID && e.name == "stanza-id") || e.ns == wire::xmpp::ns::IRC));
}
/// XEP-0297's namespace.
pub const FORWARD: &str = "urn:xmpp:forward:0";

/// A page of a query has at most this many messages, whatever is asked.
pub const PAGE_MAX: usize = 250;

/// A page's size when the query asks for none.
pub const PAGE_DEFAULT: usize = 50;

/// A time in microseconds as XEP-0082 writes it.
pub fn stamp(at: i64) -> String {
    humantime::format_rfc3339_micros(base::archive::time(at)).to_string()
}

/// A time as XEP-0082 writes it, in microseconds.
pub fn parse_stamp(text: &str) -> Option<i64> {
    let at = humantime::parse_rfc3339_weak(text.trim()).ok()?;
    (at >= std::time::SystemTime::UNIX_EPOCH).then(|| base::archive::micros(at))
}

/// What a MAM query asks: its filter, where its page starts, how many, and
/// whether the page comes newest first (`<flip-page/>`).
#[derive(Debug, PartialEq, Eq)]
pub struct Query {
    pub filter: Filter,
    pub cursor: Cursor,
    pub max: usize,
    pub flip: bool,
}

/// Reads a `<query xmlns='urn:xmpp:mam:2'/>`: `Err` is the stanza error's
/// condition for one it cannot take.
pub fn query(query: &Element) -> Result<Query, &'static str> {
    let mut filter = Filter::default();
    if let Some(form) = query.find("x", ns::DATA) {
        for field in form.elements().filter(|e| e.name == "field") {
            let values: Vec<String> = field.elements().filter(|e| e.name == "value").map(Element::text_content).collect();
            let value = values.first().cloned().unwrap_or_default();
            match field.get("var").unwrap_or_default() {
                "FORM_TYPE" if value != MAM => return Err("bad-request"),
                "with" => filter.with = Some(super::Jid::parse(&value).ok_or("jid-malformed")?.bare().to_string()),
                "start" => filter.start = Some(parse_stamp(&value).ok_or("bad-request")?),
                "end" => filter.end = Some(parse_stamp(&value).ok_or("bad-request")?),
                "after-id" => filter.after_id = Some(value),
                "before-id" => filter.before_id = Some(value),
                "ids" => filter.ids = values,
                _ => {}
            }
        }
    }
    let set = query.find("set", ns::RSM);
    let asked = |name: &str| set.and_then(|s| s.find(name, ns::RSM));
    let max = match asked("max") {
        Some(max) => max.text_content().trim().parse::<usize>().map_err(|_| "bad-request")?.min(PAGE_MAX),
        None => PAGE_DEFAULT,
    };
    let cursor = match (asked("after"), asked("before")) {
        (Some(after), _) => Cursor::After(after.text_content()),
        (None, Some(before)) => Cursor::Before(Some(before.text_content()).filter(|id| !id.is_empty())),
        (None, None) => Cursor::Oldest,
    };
    Ok(Query { filter, cursor, max, flip: query.find("flip-page", MAM).is_some() })
}

/// The form a client asks for (XEP-0313 §4.1.1): the fields a query takes.
pub fn form() -> Element {
    let field = |var: &str, kind: &str| Element::new("field", ns::DATA).attr("var", var).attr("type", kind);
    let mut x = Element::new("x", ns::DATA).attr("type", "form").child(field("FORM_TYPE", "hidden").child(Element::new("value", ns::DATA).text(MAM)));
    for (var, kind) in [("with", "jid-single"), ("start", "text-single"), ("end", "text-single"), ("after-id", "text-single"), ("before-id", "text-single"), ("ids", "list-multi")] {
        x = x.child(field(var, kind));
    }
    Element::new("query", MAM).child(x)
}

/// One result of query `queryid`: `entry`'s message, forwarded with its time.
pub fn result(queryid: Option<&str>, entry: &Entry, message: Element) -> Element {
    let mut result = Element::new("result", MAM).attr("id", &entry.id);
    if let Some(queryid) = queryid {
        result = result.attr("queryid", queryid);
    }
    let delay = Element::new("delay", super::offline::DELAY).attr("stamp", &stamp(entry.at));
    result.child(Element::new("forwarded", FORWARD).child(delay).child(message))
}

/// The `<fin/>` that ends a query's answer, with the page's bounds.
pub fn fin(page: &Page) -> Element {
    let mut set = Element::new("set", ns::RSM);
    if let (Some(first), Some(last)) = (page.entries.first(), page.entries.last()) {
        set = set.child(Element::new("first", ns::RSM).text(&first.id)).child(Element::new("last", ns::RSM).text(&last.id));
    }
    let mut fin = Element::new("fin", MAM).child(set);
    if page.complete {
        fin = fin.attr("complete", "true");
    }
    fin
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(var: &str, values: &[&str]) -> Element {
        values.iter().fold(Element::new("field", ns::DATA).attr("var", var), |f, v| f.child(Element::new("value", ns::DATA).text(v)))
    }

    #[test]
    fn a_query_reads_its_form_and_its_page() {
        let form = Element::new("x", ns::DATA)
            .attr("type", "submit")
            .child(field("FORM_TYPE", &[MAM]))
            .child(field("with", &["Juliet@Capulet.lit/balcony"]))
            .child(field("start", &["2010-06-07T00:00:00Z"]))
            .child(field("end", &["2010-07-07T13:23:54.5Z"]))
            .child(field("ids", &["a", "b"]));
        let set = Element::new("set", ns::RSM).child(Element::new("max", ns::RSM).text("1000")).child(Element::new("before", ns::RSM));
        let asked = query(&Element::new("query", MAM).child(form).child(set).child(Element::new("flip-page", MAM))).unwrap();
        assert_eq!(asked.filter.with.as_deref(), Some("juliet@capulet.lit"));
        assert_eq!(asked.filter.start, Some(1_275_868_800_000_000));
        assert_eq!(asked.filter.end, Some(1_278_509_034_500_000));
        assert_eq!(asked.filter.ids, ["a", "b"]);
        assert_eq!((asked.cursor, asked.max, asked.flip), (Cursor::Before(None), PAGE_MAX, true));
        assert_eq!(query(&Element::new("query", MAM)).unwrap(), Query { filter: Filter::default(), cursor: Cursor::Oldest, max: PAGE_DEFAULT, flip: false });
        let bad = Element::new("x", ns::DATA).child(field("start", &["yesterday"]));
        assert_eq!(query(&Element::new("query", MAM).child(bad)), Err("bad-request"));
    }

    #[test]
    fn results_and_fin_to_the_byte() {
        let entry = Entry { archive: "a@l".into(), id: "X1".into(), at: 1_275_868_800_000_001, with: "b@l".into(), message: String::new() };
        let message = Element::new("message", ns::CLIENT).attr("from", "b@l/r").child(Element::new("body", ns::CLIENT).text("hi"));
        assert_eq!(
            result(Some("q1"), &entry, message).to_xml(ns::CLIENT),
            "<result xmlns=\"urn:xmpp:mam:2\" id=\"X1\" queryid=\"q1\"><forwarded xmlns=\"urn:xmpp:forward:0\"><delay xmlns=\"urn:xmpp:delay\" stamp=\"2010-06-07T00:00:00.000001Z\"/><message xmlns=\"jabber:client\" from=\"b@l/r\"><body>hi</body></message></forwarded></result>"
        );
        let page = Page { entries: vec![entry.clone(), Entry { id: "X2".into(), ..entry }], complete: true };
        assert_eq!(
            fin(&page).to_xml(ns::CLIENT),
            "<fin xmlns=\"urn:xmpp:mam:2\" complete=\"true\"><set xmlns=\"http://jabber.org/protocol/rsm\"><first>X1</first><last>X2</last></set></fin>"
        );
        assert_eq!(parse_stamp(&stamp(1_275_868_800_123_456)), Some(1_275_868_800_123_456));
    }
}
