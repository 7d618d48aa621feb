//! Room events as IRC lines. A room event's lines are the same bytes for
//! every IRC member with the same tags, so each form ([`hub::Form`]'s
//! `Irc*`) is made once per event and shared, as the WebSocket frames are.
//! Every member is shown as `nick!nick@<server name>`: a room event names
//! its member, not the connection it came from.

use std::time::SystemTime;

use bytes::Bytes;
use hub::{Form, Payload, RoomEvent};
use wire::irc::{Line, MAX_LINE, channel_of, escape_tag_value, nick_of, split_text};

use crate::cap::{Cap, Caps};

/// How a member named `nick` is shown as a line's source.
pub fn source(nick: &str, server: &str) -> String {
    format!("{nick}!{nick}@{server}")
}

/// The tags a client gets on what happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tags {
    None,
    /// `time`.
    Time,
    /// `time` and `msgid`.
    All,
}

impl Tags {
    pub fn of(caps: Caps) -> Tags {
        match (caps.has(Cap::ServerTime), caps.has(Cap::MessageTags)) {
            (true, true) => Tags::All,
            (true, false) => Tags::Time,
            _ => Tags::None,
        }
    }

    fn form(self) -> Form {
        match self {
            Tags::None => Form::IrcLines,
            Tags::Time => Form::IrcTimed,
            Tags::All => Form::IrcTagged,
        }
    }

    /// The tags of something that happened at `at` under `id`, with
    /// `batch` first if it is part of one.
    pub fn text(self, at: SystemTime, id: Option<&str>, batch: Option<&str>) -> String {
        let mut tags = String::new();
        if let Some(batch) = batch {
            tags.push_str("batch=");
            tags.push_str(batch);
        }
        if self != Tags::None {
            if !tags.is_empty() {
                tags.push(';');
            }
            tags.push_str("time=");
            tags.push_str(&humantime::format_rfc3339_millis(at).to_string());
        }
        if let (Tags::All, Some(id)) = (self, id) {
            tags.push_str(";msgid=");
            tags.push_str(&escape_tag_value(id));
        }
        tags
    }
}

/// A payload's lines for a client with `tags`: a room event's, made once
/// for every client with the same tags; any other payload is already lines.
pub fn lines(payload: &Payload, server: &str, tags: Tags) -> Option<Bytes> {
    if payload.as_event().is_none() {
        return Some(Bytes::copy_from_slice(payload.data()));
    }
    payload.form(tags.form(), |p| event_lines(p, server, &tags.text(p.at(), p.id(), None)).map(Bytes::from)).cloned()
}

/// A room event as lines with `tags` (already written), or `None` if it
/// has none for IRC.
pub fn event_lines(payload: &Payload, server: &str, tags: &str) -> Option<String> {
    let (room, event) = payload.as_event()?;
    let channel = channel_of(room);
    Some(match event {
        RoomEvent::Join { name } => Line::tagged(tags, Some(&source(&nick_of(name), server)), "JOIN").arg(&channel).end(),
        RoomEvent::Leave { name, reason, quit } => {
            let from = source(&nick_of(name), server);
            // A quit names no channel: the member left them all.
            let line = if *quit { Line::tagged(tags, Some(&from), "QUIT") } else { Line::tagged(tags, Some(&from), "PART").arg(&channel) };
            match reason {
                Some(reason) => line.trailing(reason),
                None => line.end(),
            }
        }
        RoomEvent::Message { name, text } | RoomEvent::Notice { name, text } => {
            let from = source(&nick_of(name), server);
            let notice = matches!(event, RoomEvent::Notice { .. });
            let command = if notice { "NOTICE" } else { "PRIVMSG" };
            let (text, action) = match text.strip_prefix("/me ").filter(|_| !notice) {
                Some(action) => (action, true),
                None => (&**text, false),
            };
            // What a line holds besides the text: ":from PRIVMSG #room :" (a
            // NOTICE is no longer) and CR LF, and an action's wrapping. The
            // longest names and rooms, all escaped, leave no room: then
            // `split_text` still cuts the text, and the line is longer
            // than IRC's 512 bytes rather than lost.
            let room_for = MAX_LINE.saturating_sub(from.len() + channel.len() + 14 + if action { 9 } else { 0 });
            let mut out = String::new();
            for piece in split_text(text, room_for) {
                let body = if action { format!("\u{1}ACTION {piece}\u{1}") } else { piece.to_owned() };
                out.push_str(&Line::tagged(tags, Some(&from), command).arg(&channel).trailing(&body));
            }
            out
        }
    })
}

/// What an IRC client sent to a room, as the text other protocols get:
/// a CTCP ACTION is `/me …`, as XMPP and chat clients write one.
pub fn text_from_irc(text: &str) -> std::borrow::Cow<'_, str> {
    match text.strip_prefix("\u{1}ACTION ") {
        Some(action) => format!("/me {}", action.strip_suffix('\u{1}').unwrap_or(action)).into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn message(name: &str, text: &str) -> Payload {
        let event = RoomEvent::Message { name: Arc::from(name), text: Arc::from(text) };
        Payload::archived("lobby", event, UNIX_EPOCH + Duration::from_millis(1_800_000_000_123), Some(Arc::from("m1")))
    }

    #[test]
    fn room_events_are_lines_to_the_byte() {
        let join = Payload::event("two words", RoomEvent::Join { name: Arc::from("Alice Smith") });
        assert_eq!(&lines(&join, "irc.test", Tags::None).unwrap()[..], b":Alice\\20Smith!Alice\\20Smith@irc.test JOIN #two\\20words\r\n");
        let said = message("bob", "hi\r\nQUIT :bye");
        assert_eq!(&lines(&said, "irc.test", Tags::None).unwrap()[..], b":bob!bob@irc.test PRIVMSG #lobby :hi\r\n:bob!bob@irc.test PRIVMSG #lobby :QUIT :bye\r\n");
        assert_eq!(
            &lines(&message("bob", "hi"), "irc.test", Tags::All).unwrap()[..],
            b"@time=2027-01-15T08:00:00.123Z;msgid=m1 :bob!bob@irc.test PRIVMSG #lobby :hi\r\n"
        );
        let action = message("bob", "/me waves");
        assert_eq!(&lines(&action, "irc.test", Tags::None).unwrap()[..], b":bob!bob@irc.test PRIVMSG #lobby :\x01ACTION waves\x01\r\n");
    }

    #[test]
    fn each_form_is_made_once_for_every_recipient() {
        let said = message("bob", "hi");
        let first = lines(&said, "irc.test", Tags::Time).unwrap();
        let again = lines(&said, "irc.test", Tags::Time).unwrap();
        assert_eq!(first.as_ptr(), again.as_ptr());
    }

    #[test]
    fn a_long_message_is_cut_into_lines_that_fit() {
        let long = message("bob", &"word ".repeat(300));
        let text = String::from_utf8(lines(&long, "irc.test", Tags::None).unwrap().to_vec()).unwrap();
        let lines: Vec<&str> = text.split_inclusive("\r\n").collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| l.len() <= MAX_LINE && l.starts_with(":bob!bob@irc.test PRIVMSG #lobby :word")));
        assert_eq!(text.matches("word").count(), 300);
    }

    #[test]
    fn the_longest_names_and_rooms_do_not_break_rendering() {
        let name = ".".repeat(64);
        let room = ",".repeat(64);
        let event = RoomEvent::Message { name: Arc::from(name.as_str()), text: Arc::from("x ".repeat(300).as_str()) };
        let lines = event_lines(&Payload::event(room.as_str(), event), "irc.test", "").unwrap();
        assert_eq!(lines.matches('x').count(), 300);
        assert!(lines.starts_with(":\\2e"));
    }

    #[test]
    fn actions_cross_as_slash_me() {
        assert_eq!(text_from_irc("\u{1}ACTION waves\u{1}"), "/me waves");
        assert_eq!(text_from_irc("plain"), "plain");
    }
}
