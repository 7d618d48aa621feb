//! Multi-User Chat (XEP-0045) on the chat app's rooms: the MUC room
//! `lobby@conference.<domain>` is the chat room `lobby`, its occupants are
//! the room's members whatever protocol they speak, and a room event
//! becomes the presence or groupchat message an occupant expects.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::SystemTime;

use hub::{RoomEvent, Roster};
use wire::xmpp::Element;

use super::ns;
use super::room::{Affiliation, Role};

/// Where a session is in one room: the room's JID and its own nick there.
#[derive(Debug, Clone)]
pub struct Occupancy {
    pub room_jid: String,
    pub nick: Arc<str>,
    /// The nick it had, from a change until the room's events of the
    /// change reach it.
    pub renamed_from: Option<Arc<str>>,
    /// Its groupchat messages not yet reflected to it, oldest first, at
    /// most [`AWAITED`]: what their reflection carries back. Shared by the
    /// copies the session takes to read the rest.
    pub awaited: Arc<Mutex<VecDeque<Sent>>>,
}

/// A groupchat message an occupant sent, as its reflection carries it back
/// to it (XEP-0045 §7.4: the client knows its own message by these): a
/// hash of its text (not the text, which may be long), its `id` and its
/// `<origin-id/>`'s (XEP-0359).
#[derive(Debug, Clone)]
pub struct Sent {
    text: u64,
    id: Option<String>,
    origin: Option<String>,
}

/// Messages of one occupant awaiting their reflection, at most: past it,
/// the oldest's reflection comes back without its id (a room's events
/// reach the occupant in its order, so this many only wait on a client
/// that sends faster than it reads).
pub const AWAITED: usize = 64;

/// A text's hash, the same in every process.
fn text_hash(text: &str) -> u64 {
    use std::hash::BuildHasher;
    std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().hash_one(text)
}

impl Occupancy {
    pub fn new(room_jid: String, nick: Arc<str>) -> Occupancy {
        Occupancy { room_jid, nick, renamed_from: None, awaited: Arc::default() }
    }

    /// Whether `name`, a member's name in the room's events, is this
    /// occupant's: its nick, or the one it had until a change reaches it.
    pub fn is_own(&self, name: &str) -> bool {
        *self.nick == *name || self.renamed_from.as_deref() == Some(name)
    }

    /// Takes note of `message`, with the text `text`, sent to the room.
    pub fn await_reflection(&self, message: &Element, text: &str) {
        let origin = message.elements().find(|e| e.name == "origin-id" && e.ns == super::archive::SID).and_then(|e| e.get("id")).map(str::to_owned);
        let mut awaited = self.awaited.lock();
        if awaited.len() == AWAITED {
            awaited.pop_front();
        }
        awaited.push_back(Sent { text: text_hash(text), id: message.get("id").map(str::to_owned), origin });
    }

    /// Forgets the message last taken note of: the room refused it.
    pub fn refused(&self) {
        self.awaited.lock().pop_back();
    }

    /// `message`, a groupchat message with `text` from this occupant, as
    /// its reflection to it: with the id and origin-id it was sent with,
    /// when one awaited has that text. Those awaited before it will not
    /// come back (the room lost them): they are forgotten.
    pub fn reflected(&self, message: Element, text: &str) -> Element {
        let hash = text_hash(text);
        let sent = {
            let mut awaited = self.awaited.lock();
            let Some(at) = awaited.iter().position(|sent| sent.text == hash) else { return message };
            awaited.drain(..=at).next_back()
        };
        let Some(sent) = sent else { return message };
        let message = match sent.id {
            Some(id) => message.attr("id", &id),
            None => message,
        };
        match sent.origin {
            Some(origin) => message.child(Element::new("origin-id", super::archive::SID).attr("id", &origin)),
            None => message,
        }
    }
}

/// What an occupant's presence says of it: its affiliation and role, and
/// its real JID where the recipient may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub affiliation: Affiliation,
    pub role: Role,
    pub jid: Option<String>,
    /// The occupant's new nick, in the presence that tells of a change (303).
    pub nick: Option<Arc<str>>,
    /// Its presence's own children (`<show/>`, `<status/>` …).
    pub shown: Vec<Element>,
}

impl Item {
    /// A chat-app member, or an occupant XMPP does not know: no
    /// affiliation, a participant.
    pub fn participant() -> Item {
        Item { affiliation: Affiliation::None, role: Role::Participant, jid: None, nick: None, shown: Vec::new() }
    }
}

/// An occupant's presence in `room_jid`, from `nick`, to `to`, with the
/// status `codes` (110 when it is the recipient's own).
pub fn presence(room_jid: &str, nick: &str, to: &str, item: &Item, available: bool, codes: &[&str]) -> Element {
    // An occupant leaving has no role; one changing its nick keeps its own
    // (XEP-0045 §7.6).
    let role = if available || item.nick.is_some() { item.role } else { Role::None };
    let mut child = Element::new("item", ns::MUC_USER).attr("affiliation", item.affiliation.name()).attr("role", role.name());
    if let Some(jid) = &item.jid {
        child = child.attr("jid", jid);
    }
    if let Some(nick) = &item.nick {
        child = child.attr("nick", nick);
    }
    let mut x = Element::new("x", ns::MUC_USER).child(child);
    for code in codes {
        x = x.child(Element::new("status", ns::MUC_USER).attr("code", code));
    }
    let mut presence = Element::new("presence", ns::CLIENT).attr("from", &format!("{room_jid}/{nick}")).attr("to", to);
    if !available {
        presence = presence.attr("type", "unavailable");
    }
    for child in item.shown.iter().filter(|_| available) {
        presence = presence.child(child.clone());
    }
    presence.child(x)
}

/// The room's subject, set by `by` (the room itself when `None`).
pub fn subject(room_jid: &str, to: &str, by: Option<&str>, text: &str) -> Element {
    let from = by.map_or_else(|| room_jid.to_owned(), |nick| format!("{room_jid}/{nick}"));
    let subject = if text.is_empty() { Element::new("subject", ns::CLIENT) } else { Element::new("subject", ns::CLIENT).text(text) };
    Element::new("message", ns::CLIENT).attr("from", &from).attr("to", to).attr("type", "groupchat").child(subject)
}

/// A typing notification (IRCv3's `+typing`: `active`, `paused`, `done`)
/// from occupant `nick` as XMPP says it, a chat state in a message with no
/// body (XEP-0085 §5.5: `composing`, `paused`, `active`).
pub fn typing(room_jid: &str, nick: &str, to: &str, state: &str) -> Element {
    let state = match state {
        "active" => "composing",
        "paused" => "paused",
        _ => "active",
    };
    Element::new("message", ns::CLIENT)
        .attr("from", &format!("{room_jid}/{nick}"))
        .attr("to", to)
        .attr("type", "groupchat")
        .child(Element::new(state, ns::CHATSTATES))
}

/// The state a typing notification says, if `tags` (a room event's, as
/// IRC writes them) hold one: IRCv3's `+typing`, `active`, `paused` or
/// `done`.
fn typing_in(tags: &str) -> Option<&'static str> {
    wire::irc::tags(tags).find(|(key, _)| *key == "+typing").and_then(|(_, state)| ["active", "paused", "done"].into_iter().find(|s| *s == state))
}

/// The typing notification (IRCv3's `+typing` value) a bodyless message's
/// chat state says, if it has one (XEP-0085): `composing` is typing,
/// `paused` stopped for now, the others not typing.
pub fn typing_of(message: &Element) -> Option<&'static str> {
    message.elements().filter(|e| e.ns == ns::CHATSTATES).find_map(|e| match e.name.as_str() {
        "composing" => Some("active"),
        "paused" => Some("paused"),
        "active" | "inactive" | "gone" => Some("done"),
        _ => None,
    })
}

/// A groupchat message of the room, as an occupant receives it.
pub fn groupchat(room_jid: &str, nick: Option<&str>, to: &str, text: &str) -> Element {
    // The room's own message comes from the room's bare JID (XEP-0045 §7.2.16).
    let from = match nick {
        Some(nick) => format!("{room_jid}/{nick}"),
        None => room_jid.to_owned(),
    };
    Element::new("message", ns::CLIENT)
        .attr("from", &from)
        .attr("to", to)
        .attr("type", "groupchat")
        .child(Element::new("body", ns::CLIENT).text(text))
}

/// `message` with the id its room's archive gave it (XEP-0359), if any.
pub fn with_stanza_id(message: Element, room_jid: &str, id: Option<&str>) -> Element {
    match id {
        Some(id) => message.child(Element::new("stanza-id", super::archive::SID).attr("id", id).attr("by", room_jid)),
        None => message,
    }
}

/// How much history a joining occupant asked for (XEP-0045 §7.2.14's
/// `<history/>`): at most `max_stanzas` messages and `max_chars`
/// characters of their XML, the newest kept, none older than `seconds` or
/// published before `since`; `None` for no bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HistoryRequest {
    pub max_stanzas: Option<usize>,
    pub max_chars: Option<usize>,
    pub seconds: Option<u64>,
    pub since: Option<SystemTime>,
}

impl HistoryRequest {
    /// The request in a join presence, if it has one.
    pub fn of(presence: &Element) -> HistoryRequest {
        let history = presence.find("x", ns::MUC).and_then(|x| x.find("history", ns::MUC));
        let number = |name: &str| history.and_then(|h| h.get(name)).and_then(|v| v.parse::<usize>().ok());
        // XEP-0082's DateTime; one this cannot read (an offset other than Z) bounds nothing.
        let since = history.and_then(|h| h.get("since")).and_then(|v| humantime::parse_rfc3339_weak(v.trim_end_matches('Z')).ok());
        HistoryRequest { max_stanzas: number("maxstanzas"), max_chars: number("maxchars"), seconds: number("seconds").map(|s| s as u64), since }
    }
}

/// Who a new occupant is, as its greeting tells it: its nick, its item,
/// its status codes (110, with 201 when it made the room and 100 when the
/// room shows real JIDs) and the room's subject.
#[derive(Debug, Clone)]
pub struct Newcomer<'a> {
    pub nick: &'a str,
    pub item: Item,
    pub codes: Vec<&'static str>,
    pub subject: Option<(Option<&'a str>, &'a str)>,
}

/// What a new occupant gets, in XEP-0045's order: every other occupant's
/// presence (with `item_of` each), its own, the room's history within
/// `asked` (each message with a delay stamped when it is sent, as the room
/// keeps no times), and the subject, which tells the client the join is
/// complete.
pub fn greeting(
    roster: &Roster,
    room_jid: &str,
    to: &str,
    now: SystemTime,
    asked: HistoryRequest,
    newcomer: &Newcomer,
    item_of: impl Fn(&str) -> Item,
) -> Vec<Element> {
    let nick = newcomer.nick;
    let mut out: Vec<Element> =
        roster.names.iter().filter(|name| &***name != nick).map(|name| presence(room_jid, name, to, &item_of(name), true, &[])).collect();
    out.push(presence(room_jid, nick, to, &newcomer.item, true, &newcomer.codes));
    let recent = |at: SystemTime| {
        asked.seconds.is_none_or(|s| now.duration_since(at).unwrap_or_default().as_secs() <= s) && asked.since.is_none_or(|since| at > since)
    };
    let mut history: Vec<Element> = roster
        .history
        .iter()
        .filter(|kept| recent(kept.at()))
        .filter_map(|kept| {
            let (nick, text) = match kept.as_event() {
                Some((_, RoomEvent::Message { name, text })) => (Some(&**name), text),
                Some((_, RoomEvent::Announcement { text })) => (None, text),
                _ => return None,
            };
            let stamp = humantime::format_rfc3339_seconds(kept.at()).to_string();
            let delay = Element::new("delay", ns::DELAY).attr("from", room_jid).attr("stamp", &stamp);
            Some(with_stanza_id(groupchat(room_jid, nick, to, text), room_jid, kept.id()).child(delay))
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
    let (by, text) = newcomer.subject.unwrap_or((None, ""));
    out.push(subject(room_jid, to, by, text));
    out
}

/// A room event as the stanza an occupant named `own_nick` receives, or
/// `None` for its own join (its greeting already said it); `shown` says
/// what the recipient may know of an occupant, and the status codes it is
/// shown with (an occupant who was kicked leaves with 307).
pub fn render(event: &RoomEvent, room_jid: &str, own_nick: &str, to: &str, shown: impl Fn(&str) -> (Item, Vec<&'static str>)) -> Option<Element> {
    match event {
        RoomEvent::Message { name, text } | RoomEvent::Notice { name, text } => Some(groupchat(room_jid, Some(name), to, text)),
        RoomEvent::Announcement { text } => Some(groupchat(room_jid, None, to, text)),
        // Tags and no text: a typing notification is a chat state; others have no form here.
        RoomEvent::Tags { name, tags } => typing_in(tags).map(|state| typing(room_jid, name, to, state)),
        // The room's topic, set in any protocol: its subject (XEP-0045 §8.1).
        RoomEvent::Topic { name, text } => Some(subject(room_jid, to, Some(name), text)),
        RoomEvent::Join { name, .. } if &**name == own_nick => None,
        RoomEvent::Join { name, .. } => Some(presence(room_jid, name, to, &shown(name).0, true, &[])),
        RoomEvent::Leave { name, reason, by, new_name, .. } => {
            let (mut item, mut codes) = shown(name);
            // A change of name, in this protocol or another (XEP-0045 §7.6):
            // the occupant stays, shown as it is under its new nick.
            if let Some(new) = new_name {
                if !codes.contains(&"303") {
                    codes.push("303");
                }
                item = Item { nick: Some(new.clone()), ..shown(new).0 };
            }
            if &**name == own_nick {
                codes.insert(0, "110");
            }
            // Taken out by a member of another protocol (IRC's KICK): a kick.
            if by.is_some() && !codes.contains(&"307") {
                codes.push("307");
            }
            let gone = presence(room_jid, name, to, &item, false, &codes);
            // The reason it gave, as an unavailable presence's status (RFC 6121 §4.7.2.2).
            Some(match reason {
                Some(reason) => gone.child(Element::new("status", ns::CLIENT).text(reason)),
                None => gone,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reflection_carries_back_the_ids_of_the_message_with_its_text() {
        let own = Occupancy::new("den@conference.l".into(), Arc::from("olga"));
        for (id, text) in [("a1", "lost"), ("a2", "kept"), ("a3", "later")] {
            let sent = wire::xmpp::standalone(&format!("<message xmlns='jabber:client' id='{id}'><body>{text}</body><origin-id xmlns='urn:xmpp:sid:0' id='o-{id}'/></message>")).unwrap();
            own.await_reflection(&sent, text);
        }
        let reflection = || Element::new("message", ns::CLIENT).attr("type", "groupchat");
        // A text it did not send (an event under its old nick, say): no ids.
        assert_eq!(own.reflected(reflection(), "theirs").get("id"), None);
        // The room lost the first: the second's reflection forgets it.
        let kept = own.reflected(reflection(), "kept");
        assert_eq!((kept.get("id"), kept.find("origin-id", crate::archive::SID).and_then(|o| o.get("id"))), (Some("a2"), Some("o-a2")));
        assert_eq!(own.awaited.lock().len(), 1);
        assert_eq!(own.reflected(reflection(), "later").get("id"), Some("a3"));
        assert_eq!(own.reflected(reflection(), "later").get("id"), None, "once");
        let plain = wire::xmpp::standalone("<message xmlns='jabber:client' id='x'><body>t</body></message>").unwrap();
        for _ in 0..AWAITED + 5 {
            own.await_reflection(&plain, "t");
        }
        assert_eq!(own.awaited.lock().len(), AWAITED);
    }

    fn newcomer(nick: &str) -> Newcomer<'_> {
        Newcomer { nick, item: Item::participant(), codes: vec!["110"], subject: None }
    }

    #[test]
    fn stanzas_to_the_byte() {
        let to = "bob@localhost/r";
        assert_eq!(
            presence("lobby@conference.localhost", "alice", to, &Item::participant(), true, &[]).to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/alice\" to=\"bob@localhost/r\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"participant\"/></x></presence>"
        );
        assert_eq!(
            presence("lobby@conference.localhost", "bob", to, &Item::participant(), false, &["110"]).to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/bob\" to=\"bob@localhost/r\" type=\"unavailable\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"none\"/><status code=\"110\"/></x></presence>"
        );
        let message = RoomEvent::Message { name: "alice".into(), text: "hi & <bye>".into() };
        assert_eq!(
            render(&message, "lobby@conference.localhost", "bob", to, |_| (Item::participant(), Vec::new())).unwrap().to_xml(ns::CLIENT),
            "<message from=\"lobby@conference.localhost/alice\" to=\"bob@localhost/r\" type=\"groupchat\"><body>hi &amp; &lt;bye&gt;</body></message>"
        );
        assert!(render(&RoomEvent::join("bob".into()), "lobby@conference.localhost", "bob", to, |_| (Item::participant(), Vec::new())).is_none());
        // A reason given on leaving (IRC's PART or QUIT message) is the presence's status.
        let gone = RoomEvent::Leave { name: "ann".into(), reason: Some("off <now>".into()), quit: true, by: None, new_name: None };
        assert_eq!(
            render(&gone, "lobby@conference.localhost", "bob", to, |_| (Item::participant(), Vec::new())).unwrap().to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/ann\" to=\"bob@localhost/r\" type=\"unavailable\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"none\"/></x><status>off &lt;now&gt;</status></presence>"
        );
        // Taken out by an IRC operator's KICK: a kick (307), with its reason.
        let kicked = RoomEvent::Leave { name: "ann".into(), reason: Some("spam".into()), quit: false, by: Some("olga".into()), new_name: None };
        assert_eq!(
            render(&kicked, "lobby@conference.localhost", "bob", to, |_| (Item::participant(), Vec::new())).unwrap().to_xml(ns::CLIENT),
            "<presence from=\"lobby@conference.localhost/ann\" to=\"bob@localhost/r\" type=\"unavailable\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"none\" role=\"none\"/><status code=\"307\"/></x><status>spam</status></presence>"
        );
        let notice = RoomEvent::Notice { name: "ann".into(), text: "fyi".into() };
        assert!(render(&notice, "lobby@conference.localhost", "bob", to, |_| (Item::participant(), Vec::new())).unwrap().to_xml(ns::CLIENT).contains("type=\"groupchat\"><body>fyi</body>"));
        let owner = Item { affiliation: Affiliation::Owner, role: Role::Moderator, jid: Some("a@localhost/x".into()), nick: None, shown: Vec::new() };
        assert_eq!(
            presence("r@conference.localhost", "a", to, &owner, true, &["110", "201"]).to_xml(ns::CLIENT),
            "<presence from=\"r@conference.localhost/a\" to=\"bob@localhost/r\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><item affiliation=\"owner\" role=\"moderator\" jid=\"a@localhost/x\"/><status code=\"110\"/><status code=\"201\"/></x></presence>"
        );
        assert_eq!(
            subject("r@c", to, Some("a"), "news").to_xml(ns::CLIENT),
            "<message from=\"r@c/a\" to=\"bob@localhost/r\" type=\"groupchat\"><subject>news</subject></message>"
        );
    }

    #[test]
    fn a_greeting_lists_the_others_then_itself_then_history_then_the_subject() {
        use hub::Payload;
        let roster = Roster {
            names: vec![Arc::from("alice"), Arc::from("bob")],
            total: 2,
            history: vec![Payload::event_at("lobby", RoomEvent::Message { name: "alice".into(), text: "earlier".into() }, humantime::parse_rfc3339("2026-11-23T12:00:00Z").unwrap())],
            epoch: "e".into(),
            last: 0,
            trimmed: 0,
            topic: None,
        };
        let out: Vec<String> = greeting(&roster, "lobby@conference.localhost", "bob@localhost/r", SystemTime::now(), HistoryRequest::default(), &newcomer("bob"), |_| Item::participant())
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
        let roster = Roster { names: vec![Arc::from("bob")], total: 1, history, epoch: "e".into(), last: 0, trimmed: 0, topic: None };
        let bodies = |asked| -> Vec<String> {
            greeting(&roster, "r@c", "b@l/x", SystemTime::now(), asked, &newcomer("bob"), |_| Item::participant())
                .iter()
                .filter_map(|e| e.find("body", ns::CLIENT).map(Element::text_content))
                .collect()
        };
        assert_eq!(bodies(HistoryRequest::default()), ["one", "two", "three"]);
        assert_eq!(bodies(HistoryRequest { max_stanzas: Some(2), ..HistoryRequest::default() }), ["two", "three"]);
        assert!(bodies(HistoryRequest { max_stanzas: Some(0), ..HistoryRequest::default() }).is_empty());
        let last = greeting(&roster, "r@c", "b@l/x", SystemTime::now(), HistoryRequest::default(), &newcomer("bob"), |_| Item::participant())[3].to_xml(ns::CLIENT).len();
        assert_eq!(bodies(HistoryRequest { max_chars: Some(last), ..HistoryRequest::default() }), ["three"], "room for the newest stanza only");
        assert!(bodies(HistoryRequest { max_chars: Some(last - 1), ..HistoryRequest::default() }).is_empty());
        let presence = Element::new("presence", ns::CLIENT).child(Element::new("x", ns::MUC).child(Element::new("history", ns::MUC).attr("maxstanzas", "5").attr("maxchars", "x")));
        assert_eq!(HistoryRequest::of(&presence), HistoryRequest { max_stanzas: Some(5), ..HistoryRequest::default() });
    }

    #[test]
    fn history_is_cut_by_age_and_each_message_is_stamped_with_its_time() {
        use hub::Payload;
        use std::time::Duration;
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let kept = |text: &str, ago: u64| Payload::event_at("lobby", RoomEvent::Message { name: "al".into(), text: text.into() }, now - Duration::from_secs(ago));
        let roster = Roster { names: vec![Arc::from("bob")], total: 1, epoch: "e".into(), last: 0, trimmed: 0, topic: None, history: vec![kept("old", 3600), kept("recent", 60), kept("new", 1)] };
        let out = |asked| greeting(&roster, "r@c", "b@l/x", now, asked, &newcomer("bob"), |_| Item::participant());
        let bodies = |asked| -> Vec<String> { out(asked).iter().filter_map(|e| e.find("body", ns::CLIENT).map(Element::text_content)).collect() };
        assert_eq!(bodies(HistoryRequest { seconds: Some(120), ..HistoryRequest::default() }), ["recent", "new"]);
        assert_eq!(bodies(HistoryRequest { seconds: Some(0), ..HistoryRequest::default() }), Vec::<String>::new());
        let since = |text: &str| {
            let presence = Element::new("presence", ns::CLIENT).child(Element::new("x", ns::MUC).child(Element::new("history", ns::MUC).attr("since", text)));
            HistoryRequest::of(&presence)
        };
        // 1_800_000_000 s is 2027-01-15T08:00:00Z.
        assert_eq!(bodies(since("2027-01-15T07:58:00Z")), ["recent", "new"]);
        assert_eq!(bodies(since("2027-01-15T07:00:00.5Z")), ["recent", "new"], "fractions of a second");
        assert_eq!(bodies(since("2027-01-15T07:58:00+02:00")), ["old", "recent", "new"], "an offset it cannot read bounds nothing");
        let first = out(HistoryRequest::default()).into_iter().find(|e| e.find("body", ns::CLIENT).is_some()).unwrap();
        assert_eq!(first.find("delay", ns::DELAY).unwrap().get("stamp"), Some("2027-01-15T07:00:00Z"));
    }
}
