//! Multi-User Chat (XEP-0045) on the chat app's rooms: the MUC room
//! `lobby@conference.<domain>` is the chat room `lobby`, its occupants are
//! the room's members whatever protocol they speak, and a room event
//! becomes the presence or groupchat message an occupant expects.

use std::sync::Arc;

use hub::{RoomEvent, Roster};
use wire::xmpp::Element;

use super::ns;

/// Where a session is in one room: the room's JID and its own nick there.
#[derive(Debug, Clone)]
pub struct Occupancy {
    pub room_jid: String,
    pub nick: Arc<str>,
}

/// An occupant's presence in `room_jid`, from `nick`, to `to`; with status
/// 110 when it is the recipient's own.
pub fn presence(room_jid: &str, nick: &str, to: &str, available: bool, own: bool) -> Element {
    let mut x = Element::new("x", ns::MUC_USER).child(Element::new("item", ns::MUC_USER).attr("affiliation", "none").attr("role", if available { "participant" } else { "none" }));
    if own {
        x = x.child(Element::new("status", ns::MUC_USER).attr("code", "110"));
    }
    let mut presence = Element::new("presence", ns::CLIENT).attr("from", &format!("{room_jid}/{nick}")).attr("to", to);
    if !available {
        presence = presence.attr("type", "unavailable");
    }
    presence.child(x)
}

/// A groupchat message of the room, as an occupant receives it.
pub fn groupchat(room_jid: &str, nick: &str, to: &str, text: &str) -> Element {
    Element::new("message", ns::CLIENT)
        .attr("from", &format!("{room_jid}/{nick}"))
        .attr("to", to)
        .attr("type", "groupchat")
        .child(Element::new("body", ns::CLIENT).text(text))
}

/// How much history a joining occupant asked for (XEP-0045 §7.2.14's
/// `<history/>`): at most `max_stanzas` messages and `max_chars`
/// characters of their XML, the newest kept; `None` for no bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryRequest {
    pub max_stanzas: Option<usize>,
    pub max_chars: Option<usize>,
}

impl HistoryRequest {
    /// The request in a join presence, if it has one.
    pub fn of(presence: &Element) -> HistoryRequest {
        let history = presence.find("x", ns::MUC).and_then(|x| x.find("history", ns::MUC));
        let number = |name: &str| history.and_then(|h| h.get(name)).and_then(|v| v.parse().ok());
        HistoryRequest { max_stanzas: number("maxstanzas"), max_chars: number("maxchars") }
    }
}

/// What a new occupant gets, in XEP-0045's order: every other occupant's
/// presence, its own (status 110), the room's history within `asked` (each
/// message with a delay stamped when it is sent, as the room keeps no
/// times), and the subject, which tells the client the join is complete.
pub fn greeting(roster: &Roster, room_jid: &str, nick: &str, to: &str, stamp: &str, asked: HistoryRequest) -> Vec<Element> {
    let mut out: Vec<Element> =
        roster.names.iter().filter(|name| &***name != nick).map(|name| presence(room_jid, name, to, true, false)).collect();
    out.push(presence(room_jid, nick, to, true, true));
    let mut history: Vec<Element> = roster
        .history
        .iter()
        .filter_map(|kept| match kept.as_event() {
            Some((_, RoomEvent::Message { name, text })) => {
                let delay = Element::new("delay", ns::DELAY).attr("from", room_jid).attr("stamp", stamp);
                Some(groupchat(room_jid, name, to, text).child(delay))
            }
            _ => None,
        })
        .collect();
    if let Some(max) = asked.max_stanzas {
        history.drain(..history.len().saturating_sub(max));
    }
    if let Some(max) = asked.max_chars {
        let mut chars = 0;
        let keep = history.iter().rev().take_while(|m| {
            chars += m.to_xml(ns::CLIENT).chars().count();
            chars <= max
        });
        let keep = keep.count();
        history.drain(..history.len() - keep);
    }
    out.extend(history);
    let subject = Element::new("message", ns::CLIENT)
        .attr("from", room_jid)
        .attr("to", to)
        .attr("type", "groupchat")
        .child(Element::new("subject", ns::CLIENT));
    out.push(subject);
    out
}

/// A room event as the stanza an occupant named `own_nick` receives, or
/// `None` for its own join (its greeting already said it).
pub fn render(event: &RoomEvent, room_jid: &str, own_nick: &str, to: &str) -> Option<Element> {
    match event {
        RoomEvent::Message { name, text } => Some(groupchat(room_jid, name, to, text)),
        RoomEvent::Join { name } if &**name == own_nick => None,
        RoomEvent::Join { name } => Some(presence(room_jid, name, to, true, false)),
        RoomEvent::Leave { name } => Some(presence(room_jid, name, to, false, &**name == own_nick)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stanzas_to_the_byte() {
        let to = "bob@localhost/r";
        assert_eq!(
            presence("lobby@conference.localhost", "alice", to, true, false).to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/alice\" to=\"bob@localhost/r\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"participant\"/></x></presence>"
        );
        assert_eq!(
            presence("lobby@conference.localhost", "bob", to, false, true).to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/bob\" to=\"bob@localhost/r\" type=\"unavailable\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"none\"/><status code=\"110\"/></x></presence>"
        );
        let message = RoomEvent::Message { name: "alice".into(), text: "hi & <bye>".into() };
        assert_eq!(
            render(&message, "lobby@conference.localhost", "bob", to).unwrap().to_xml(ns::CLIENT),
            "<message from=\"lobby@conference.localhost/alice\" to=\"bob@localhost/r\" type=\"groupchat\"><body>hi &amp; &lt;bye&gt;</body></message>"
        );
        assert!(render(&RoomEvent::Join { name: "bob".into() }, "lobby@conference.localhost", "bob", to).is_none());
    }

    #[test]
    fn a_greeting_lists_the_others_then_itself_then_history_then_the_subject() {
        use hub::Payload;
        let roster = Roster {
            names: vec![Arc::from("alice"), Arc::from("bob")],
            total: 2,
            history: vec![Payload::event("lobby", RoomEvent::Message { name: "alice".into(), text: "earlier".into() })],
        };
        let out: Vec<String> = greeting(&roster, "lobby@conference.localhost", "bob", "bob@localhost/r", "2026-11-23T12:00:00Z", HistoryRequest::default())
            .iter()
            .map(|e| e.to_xml(ns::CLIENT))
            .collect();
        assert_eq!(out.len(), 4);
        assert!(out[0].contains("/alice\"") && !out[0].contains("110"));
        assert!(out[1].contains("/bob\"") && out[1].contains("code=\"110\""));
        assert!(out[2].contains("<body>earlier</body><delay xmlns=\"urn:xmpp:delay\" from=\"lobby@conference.localhost\" stamp=\"2026-11-23T12:00:00Z\"/>"));
        assert_eq!(out[3], "<message from=\"lobby@conference.localhost\" to=\"bob@localhost/r\" type=\"groupchat\"><subject/></message>");
    }

    #[test]
    fn history_is_cut_to_what_the_occupant_asked_for() {
        use hub::Payload;
        let history = ["one", "two", "three"].map(|t| Payload::event("lobby", RoomEvent::Message { name: "al".into(), text: t.into() })).to_vec();
        let roster = Roster { names: vec![Arc::from("bob")], total: 1, history };
        let bodies = |asked| -> Vec<String> {
            greeting(&roster, "r@c", "bob", "b@l/x", "2026-11-23T12:00:00Z", asked)
                .iter()
                .filter_map(|e| e.find("body", ns::CLIENT).map(Element::text_content))
                .collect()
        };
        assert_eq!(bodies(HistoryRequest::default()), ["one", "two", "three"]);
        assert_eq!(bodies(HistoryRequest { max_stanzas: Some(2), max_chars: None }), ["two", "three"]);
        assert!(bodies(HistoryRequest { max_stanzas: Some(0), max_chars: None }).is_empty());
        let last = greeting(&roster, "r@c", "bob", "b@l/x", "2026-11-23T12:00:00Z", HistoryRequest::default())[3].to_xml(ns::CLIENT).len();
        assert_eq!(bodies(HistoryRequest { max_stanzas: None, max_chars: Some(last) }), ["three"], "room for the newest stanza only");
        assert!(bodies(HistoryRequest { max_stanzas: None, max_chars: Some(last - 1) }).is_empty());
        let presence = Element::new("presence", ns::CLIENT).child(Element::new("x", ns::MUC).child(Element::new("history", ns::MUC).attr("maxstanzas", "5").attr("maxchars", "x")));
        assert_eq!(HistoryRequest::of(&presence), HistoryRequest { max_stanzas: Some(5), max_chars: None });
    }
}
