//! Room events as IRC lines. A room event's lines are the same bytes for
//! every IRC member with the same tags, so each form ([`hub::Form`]'s
//! `Irc*`) is made once per event and shared, as the WebSocket frames are.
//! Every member is shown as `nick!nick@<server name>`: a room event names
//! its member, not the connection it came from.
//!
//! A message that takes more than one line comes to a client that reads
//! multiline batches (`draft/multiline` with `batch`) as one batch, made
//! for that client alone: the shared forms are one per set of tags, and
//! such messages are few. Other clients get it cut into lines.
//!
//! `account-tag` names the account the member who did it is logged in
//! to, as its payload carries it (`hub::Payload::account`): an IRC client
//! that logged in with SASL, an XMPP user of this server's accounts, on
//! any node.

use std::time::SystemTime;

use bytes::Bytes;
use hub::{Form, Payload, RoomEvent};
use wire::irc::{Line, MAX_LINE, channel_of, escape_tag_value, multiline_pieces, nick_of, split_text};

use crate::cap::{Cap, Caps};
use crate::multiline;

/// How a member named `nick` is shown as a line's source.
pub fn source(nick: &str, server: &str) -> String {
    format!("{nick}!{nick}@{server}")
}

/// The tags a client gets on what happened, one bit each: `time`
/// (`server-time`), `msgid` (`message-tags`), `account` (`account-tag`);
/// and whether it reads multiline batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tags(u8);

impl Tags {
    const TIME: u8 = 1;
    const MSGID: u8 = 2;
    const ACCOUNT: u8 = 4;
    /// Not a tag: multiline batches, which need `batch` too.
    const MULTILINE: u8 = 8;

    pub fn of(caps: Caps) -> Tags {
        let bit = |cap, bit| if caps.has(cap) { bit } else { 0 };
        let multiline = if caps.has(Cap::Multiline) && caps.has(Cap::Batch) { Tags::MULTILINE } else { 0 };
        Tags(bit(Cap::ServerTime, Tags::TIME) | bit(Cap::MessageTags, Tags::MSGID) | bit(Cap::AccountTag, Tags::ACCOUNT) | multiline)
    }

    /// Its form: every set of tags has its own (`hub::IRC_FORMS` of them);
    /// a multiline batch has none (see the module docs).
    fn form(self) -> Form {
        Form::Irc(self.0 & !Tags::MULTILINE)
    }

    pub fn multiline(self) -> bool {
        self.has(Tags::MULTILINE)
    }

    fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// The tags of something that happened at `at` under `id`, done by
    /// `by`, with `batch` first if it is part of one; last, to a client
    /// that reads tags (`message-tags`), the client-only tags (`+…`,
    /// well-formed: see [`client_only`]) its sender gave it.
    pub fn text(self, at: SystemTime, id: Option<&str>, by: By<'_>, batch: Option<&str>, client: Option<&str>) -> String {
        let mut tags = String::new();
        let mut add = |key: &str, value: &str| {
            if !tags.is_empty() {
                tags.push(';');
            }
            tags.push_str(key);
            tags.push('=');
            tags.push_str(&escape_tag_value(value));
        };
        if let Some(batch) = batch {
            add("batch", batch);
        }
        if self.has(Tags::TIME) {
            add("time", &humantime::format_rfc3339_millis(at).to_string());
        }
        if let (true, Some(id)) = (self.has(Tags::MSGID), id) {
            add("msgid", id);
        }
        if let (true, Some(account)) = (self.has(Tags::ACCOUNT), by.account) {
            add("account", account);
        }
        // Written as they are: a tag with no value (the key alone), and the
        // client-only tags, already well-formed.
        let bot = by.bot.then_some("bot");
        for written in [bot, client].into_iter().flatten().filter(|_| self.has(Tags::MSGID)) {
            if !tags.is_empty() {
                tags.push(';');
            }
            tags.push_str(written);
        }
        tags
    }
}

/// Who did what a line tells, as its tags show it: the account it is
/// logged in to (`account-tag`) and whether it is a bot (IRCv3 bot mode's
/// `bot`, to a client that reads tags).
#[derive(Debug, Clone, Copy, Default)]
pub struct By<'a> {
    pub account: Option<&'a str>,
    pub bot: bool,
}

/// A payload's lines for a client with `tags`: a room event's, made once
/// for every client with the same tags; any other payload is already lines.
pub fn lines(payload: &Payload, server: &str, tags: Tags) -> Option<Bytes> {
    let Some((_, event)) = payload.as_event() else {
        return Some(Bytes::copy_from_slice(payload.data()));
    };
    // Tags and no text reach only a client that reads tags.
    if matches!(event, RoomEvent::Tags { .. }) && !tags.has(Tags::MSGID) {
        return None;
    }
    let make = |p: &Payload, multiline| event_lines(p, server, &payload_tags(tags, p, None), multiline).map(Bytes::from);
    let shared = payload.form(tags.form(), |p| make(p, false)).cloned();
    // A member's message that the shared form has in more than one line
    // is a batch to a client that reads them.
    let several = |lines: &Bytes| lines.len() > 1 && lines[..lines.len() - 1].contains(&b'\n');
    if tags.multiline() && matches!(event, RoomEvent::Message { .. }) && (!payload.cuts().is_empty() || shared.as_ref().is_some_and(several)) {
        return make(payload, true);
    }
    shared
}

/// The tags of `payload` for a client with `tags`, with `batch` first if it
/// is part of one: [`Tags::text`]'s, where a message's `msgid` is its
/// archive id or, for one the archive has none of, one made here once for
/// all its recipients on this node, and `account` the account its sender
/// is logged in to.
pub fn payload_tags(tags: Tags, payload: &Payload, batch: Option<&str>) -> String {
    let event = payload.as_event().map(|(_, e)| e);
    let said = event.is_some_and(|e| matches!(e, RoomEvent::Message { .. } | RoomEvent::Notice { .. } | RoomEvent::Announcement { .. } | RoomEvent::Tags { .. }));
    let id = match said && tags.has(Tags::MSGID) {
        true => Some(payload.msgid(new_msgid)),
        false => payload.id(),
    };
    // A message's client-only tags ride with it; tags and no text are the event.
    let client = match event {
        Some(RoomEvent::Tags { tags, .. }) => Some(&**tags).filter(|t| !t.is_empty()),
        _ => payload.client_tags(),
    };
    tags.text(payload.at(), id, By { account: payload.account(), bot: payload.bot() }, batch, client)
}

/// A new message's `msgid`, as the archive makes its ids: its time, then
/// a tail (`base::archive::next_id`).
pub fn new_msgid() -> String {
    base::archive::next_id().1
}

/// The client-only tags (`+…`) of the tags a client `sent`, if it sent any
/// that are well-formed (IRCv3 message tags): a key of letters, digits,
/// `-`, `.` and `/` (a vendor's host name before the slash), and a value
/// with none of NUL, CR, LF, `;` or a space. Others are dropped: relayed,
/// a NUL would become a space and end the tags early, and what followed
/// would be read as the line's source.
pub fn client_only(sent: &str) -> Option<String> {
    let well_formed = |tag: &&str| {
        let Some(tag) = tag.strip_prefix('+') else { return false };
        let (key, value) = tag.split_once('=').unwrap_or((tag, ""));
        !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'/'))
            && !value.bytes().any(|b| matches!(b, 0 | b'\r' | b'\n' | b';' | b' '))
    };
    let kept: Vec<&str> = sent.split(';').filter(well_formed).collect();
    (!kept.is_empty()).then(|| kept.join(";"))
}

/// A room event as lines with `tags` (already written), or `None` if it
/// has none for IRC; a message that takes more than one line as one
/// multiline batch if `multiline`.
pub fn event_lines(payload: &Payload, server: &str, tags: &str, multiline: bool) -> Option<String> {
    let (room, event) = payload.as_event()?;
    let channel = channel_of(room);
    Some(match event {
        // A change of name was told by its leave, as `NICK`.
        RoomEvent::Join { old_name: Some(_), .. } => return None,
        RoomEvent::Join { name, .. } => Line::tagged(tags, Some(&source(&nick_of(name), server)), "JOIN").arg(&channel).end(),
        RoomEvent::Leave { name, new_name: Some(new), .. } => Line::tagged(tags, Some(&source(&nick_of(name), server)), "NICK").arg(&nick_of(new)).end(),
        RoomEvent::Leave { name, reason, by: Some(by), .. } => {
            let line = Line::tagged(tags, Some(&source(&nick_of(by), server)), "KICK").arg(&channel).arg(&nick_of(name));
            line.trailing(reason.as_deref().unwrap_or(""))
        }
        RoomEvent::Leave { name, reason, quit, by: None, new_name: None } => {
            let from = source(&nick_of(name), server);
            // A quit names no channel: the member left them all.
            let line = if *quit { Line::tagged(tags, Some(&from), "QUIT") } else { Line::tagged(tags, Some(&from), "PART").arg(&channel) };
            match reason {
                Some(reason) => line.trailing(reason),
                None => line.end(),
            }
        }
        RoomEvent::Message { name, text } => {
            let batch = multiline.then(|| batch_reference(payload));
            said(tags, &source(&nick_of(name), server), &channel, "PRIVMSG", text, payload.cuts(), batch.as_deref())
        }
        RoomEvent::Notice { name, text } => said(tags, &source(&nick_of(name), server), &channel, "NOTICE", text, &[], None),
        // The room's own message comes from the server, as a notice no client answers.
        RoomEvent::Announcement { text } => said(tags, server, &channel, "NOTICE", text, &[], None),
        RoomEvent::Tags { name, .. } => Line::tagged(tags, Some(&source(&nick_of(name), server)), "TAGMSG").arg(&channel).end(),
        RoomEvent::Topic { name, text } => Line::tagged(tags, Some(&source(&nick_of(name), server)), "TOPIC").arg(&channel).trailing(crate::client::truncated(text)),
    })
}

/// The most text one `PRIVMSG` line from `from` to `target` holds within
/// IRC's 512 bytes, beside ":from PRIVMSG target :" and CR LF (a `NOTICE`
/// line is no longer).
pub fn room_for_text(from: &str, target: &str) -> usize {
    MAX_LINE.saturating_sub(from.len() + target.len() + 14)
}

/// A room's message as `command` (`PRIVMSG` or `NOTICE`) lines from
/// `from` to `channel` ([`message_lines`]); a `PRIVMSG` of `/me …` is an
/// action, cut into lines that are each one.
pub fn said(tags: &str, from: &str, channel: &str, command: &str, text: &str, cuts: &[u32], batch: Option<&str>) -> String {
    let Some(action) = text.strip_prefix("/me ").filter(|_| command == "PRIVMSG") else {
        return message_lines(tags, from, channel, command, text, cuts, batch);
    };
    // Beside the text, an action's wrapping.
    let room_for = room_for_text(from, channel).saturating_sub(9);
    let mut out = String::new();
    for (n, piece) in split_text(action, room_for).into_iter().enumerate() {
        let body = format!("\u{1}ACTION {piece}\u{1}");
        out.push_str(&Line::tagged(&piece_tags(tags, n), Some(from), command).arg(channel).trailing(&body));
    }
    out
}

/// A message as `command` lines from `from` to `target`, cut where its
/// sender cut it (`cuts`, see `hub::Payload::cuts`) and to fit IRC's lines
/// ([`multiline_pieces`]). One that takes more than one line is, given a
/// `batch` reference (to a client that reads multiline batches), one
/// `draft/multiline` batch: its tags on the batch's start, then its lines,
/// each tagged with the batch, and `draft/multiline-concat` on one that
/// goes on the one before; otherwise its lines go one by one, blank ones
/// dropped. The longest names and rooms, all escaped, leave no room for
/// text: then the text is still cut, and the line is longer than IRC's
/// 512 bytes rather than lost.
pub fn message_lines(tags: &str, from: &str, target: &str, command: &str, text: &str, cuts: &[u32], batch: Option<&str>) -> String {
    let pieces = multiline_pieces(text, cuts, room_for_text(from, target));
    if let (Some(batch), "PRIVMSG", true) = (batch, command, pieces.len() > 1)
        && pieces.iter().any(|(piece, _)| !piece.is_empty())
    {
        let mut out = Line::tagged(tags, Some(from), "BATCH").arg(&format!("+{batch}")).arg(multiline::BATCH_TYPE).arg(target).end();
        let (alone, goes_on) = (format!("batch={batch}"), format!("batch={batch};{}", multiline::CONCAT));
        for (piece, concat) in pieces {
            let tags = if concat { &goes_on } else { &alone };
            out.push_str(&Line::tagged(tags, Some(from), command).arg(target).trailing(piece));
        }
        out.push_str(&Line::new(Some(from), "BATCH").arg(&format!("-{batch}")).end());
        return out;
    }
    let mut out = String::new();
    for (n, (piece, _)) in pieces.into_iter().filter(|(piece, _)| !piece.is_empty()).enumerate() {
        out.push_str(&Line::tagged(&piece_tags(tags, n), Some(from), command).arg(target).trailing(piece));
    }
    out
}

/// The reference of the multiline batch `payload` comes in: made from its
/// `msgid`, which no other message has.
fn batch_reference(payload: &Payload) -> String {
    let id = payload.msgid(new_msgid);
    std::iter::once('m').chain(id.chars().filter(char::is_ascii_alphanumeric).take(64)).collect()
}

/// The tags of line `n` (from 0) of a message cut into several: the
/// message's on the first; on the others, the message's but its `msgid`
/// (IRCv3 multiline: a message's id is on its first line alone, so a
/// client that drops a line whose msgid it has seen keeps them all).
fn piece_tags(tags: &str, n: usize) -> std::borrow::Cow<'_, str> {
    if n == 0 || !tags.split(';').any(|t| t.starts_with("msgid=")) {
        return std::borrow::Cow::Borrowed(tags);
    }
    std::borrow::Cow::Owned(tags.split(';').filter(|t| !t.starts_with("msgid=")).collect::<Vec<_>>().join(";"))
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

    #[test]
    fn only_well_formed_client_only_tags_are_kept() {
        assert_eq!(client_only("+typing=active;fizz=buzz;+draft/reply=m1;+x").as_deref(), Some("+typing=active;+draft/reply=m1;+x"));
        // A NUL would become a space when relayed, and what follows a source.
        assert_eq!(client_only("+a=b\0:evil!e@h;+ok=1").as_deref(), Some("+ok=1"));
        assert_eq!(client_only("+=v;+bad key=v;+k\0=v;+;time=1"), None);
    }

    /// The tags of a client with these capabilities.
    fn tags(caps: &[Cap]) -> Tags {
        Tags::of(Caps(caps.iter().fold(0, |all, cap| all | *cap as u32)))
    }

    fn message(name: &str, text: &str) -> Payload {
        let event = RoomEvent::Message { name: Arc::from(name), text: Arc::from(text) };
        Payload::archived("lobby", event, UNIX_EPOCH + Duration::from_millis(1_800_000_000_123), Some(Arc::from("m1")))
    }

    #[test]
    fn room_events_are_lines_to_the_byte() {
        let join = Payload::event("two words", RoomEvent::join(Arc::from("Alice Smith")));
        assert_eq!(&lines(&join, "irc.test", tags(&[])).unwrap()[..], b":Alice\\20Smith!Alice\\20Smith@irc.test JOIN #two\\20words\r\n");
        let said = message("bob", "hi\r\nQUIT :bye");
        assert_eq!(&lines(&said, "irc.test", tags(&[])).unwrap()[..], b":bob!bob@irc.test PRIVMSG #lobby :hi\r\n:bob!bob@irc.test PRIVMSG #lobby :QUIT :bye\r\n");
        assert_eq!(
            &lines(&message("bob", "hi"), "irc.test", tags(&[Cap::ServerTime, Cap::MessageTags])).unwrap()[..],
            b"@time=2027-01-15T08:00:00.123Z;msgid=m1 :bob!bob@irc.test PRIVMSG #lobby :hi\r\n"
        );
        let logged_in = message("bob", "hi").with_account(Some(Arc::from("bob account")));
        assert_eq!(&lines(&logged_in, "irc.test", tags(&[Cap::AccountTag])).unwrap()[..], b"@account=bob\\saccount :bob!bob@irc.test PRIVMSG #lobby :hi\r\n");
        assert_eq!(&lines(&logged_in, "irc.test", tags(&[])).unwrap()[..], b":bob!bob@irc.test PRIVMSG #lobby :hi\r\n");
        assert_eq!(&lines(&message("carol", "hi"), "irc.test", tags(&[Cap::AccountTag])).unwrap()[..], b":carol!carol@irc.test PRIVMSG #lobby :hi\r\n");
        let bot = message("bot", "beep").with_bot(true).with_account(Some(Arc::from("bots")));
        assert_eq!(&lines(&bot, "irc.test", tags(&[Cap::MessageTags, Cap::AccountTag])).unwrap()[..], b"@msgid=m1;account=bots;bot :bot!bot@irc.test PRIVMSG #lobby :beep\r\n");
        assert_eq!(&lines(&bot, "irc.test", tags(&[Cap::AccountTag])).unwrap()[..], b"@account=bots :bot!bot@irc.test PRIVMSG #lobby :beep\r\n", "a tag only to a client that reads tags");
        let action = message("bob", "/me waves");
        assert_eq!(&lines(&action, "irc.test", tags(&[])).unwrap()[..], b":bob!bob@irc.test PRIVMSG #lobby :\x01ACTION waves\x01\r\n");
    }

    #[test]
    fn each_form_is_made_once_for_every_recipient() {
        let said = message("bob", "hi");
        let first = lines(&said, "irc.test", tags(&[Cap::ServerTime])).unwrap();
        let again = lines(&said, "irc.test", tags(&[Cap::ServerTime])).unwrap();
        assert_eq!(first.as_ptr(), again.as_ptr());
        let other = lines(&said, "irc.test", tags(&[Cap::ServerTime, Cap::MessageTags])).unwrap();
        assert_ne!(first, other);
    }

    #[test]
    fn a_long_message_is_cut_into_lines_that_fit() {
        let long = message("bob", &"word ".repeat(300));
        let text = String::from_utf8(lines(&long, "irc.test", tags(&[])).unwrap().to_vec()).unwrap();
        let lines: Vec<&str> = text.split_inclusive("\r\n").collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| l.len() <= MAX_LINE && l.starts_with(":bob!bob@irc.test PRIVMSG #lobby :word")));
        assert_eq!(text.matches("word").count(), 300);
        // The message's msgid on its first line alone.
        let tagged = event_lines(&long, "irc.test", "time=2026-11-29T00:00:00.000Z;msgid=01AB;account=b", false).unwrap();
        let tags: Vec<&str> = tagged.split("\r\n").filter(|l| !l.is_empty()).map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(tags, ["@time=2026-11-29T00:00:00.000Z;msgid=01AB;account=b", "@time=2026-11-29T00:00:00.000Z;account=b", "@time=2026-11-29T00:00:00.000Z;account=b", "@time=2026-11-29T00:00:00.000Z;account=b"]);
    }

    #[test]
    fn a_message_of_several_lines_is_one_multiline_batch_to_a_client_that_reads_them() {
        let said = message("bob", "hello\n\nhow is everyone? and you");
        let modern = tags(&[Cap::MessageTags, Cap::Batch, Cap::Multiline]);
        let text = String::from_utf8(lines(&said, "irc.test", modern).unwrap().to_vec()).unwrap();
        assert_eq!(
            text,
            "@msgid=m1 :bob!bob@irc.test BATCH +mm1 draft/multiline #lobby\r\n\
             @batch=mm1 :bob!bob@irc.test PRIVMSG #lobby :hello\r\n\
             @batch=mm1 :bob!bob@irc.test PRIVMSG #lobby :\r\n\
             @batch=mm1 :bob!bob@irc.test PRIVMSG #lobby :how is everyone? and you\r\n\
             :bob!bob@irc.test BATCH -mm1\r\n"
        );
        // Without `batch`, or without the capability: lines, the blank one dropped.
        for caps in [&[Cap::MessageTags, Cap::Multiline][..], &[Cap::MessageTags, Cap::Batch]] {
            let text = String::from_utf8(lines(&said, "irc.test", tags(caps)).unwrap().to_vec()).unwrap();
            assert_eq!(text, "@msgid=m1 :bob!bob@irc.test PRIVMSG #lobby :hello\r\n:bob!bob@irc.test PRIVMSG #lobby :how is everyone? and you\r\n");
        }
        // A line longer than one IRC line goes on in the next, its space kept.
        let long = format!("{} {}", "a".repeat(470), "b".repeat(10));
        let text = String::from_utf8(lines(&message("bob", &long), "irc.test", modern).unwrap().to_vec()).unwrap();
        let expected = format!(
            "@msgid=m1 :bob!bob@irc.test BATCH +mm1 draft/multiline #lobby\r\n\
             @batch=mm1 :bob!bob@irc.test PRIVMSG #lobby :{} \r\n\
             @batch=mm1;draft/multiline-concat :bob!bob@irc.test PRIVMSG #lobby :{}\r\n\
             :bob!bob@irc.test BATCH -mm1\r\n",
            "a".repeat(470),
            "b".repeat(10)
        );
        assert_eq!(text, expected);
        // One line is one line; an action is cut into actions.
        assert_eq!(&lines(&message("bob", "hi"), "irc.test", modern).unwrap()[..], b"@msgid=m1 :bob!bob@irc.test PRIVMSG #lobby :hi\r\n");
        let action = String::from_utf8(lines(&message("bob", "/me a\nb"), "irc.test", modern).unwrap().to_vec()).unwrap();
        assert_eq!(action, "@msgid=m1 :bob!bob@irc.test PRIVMSG #lobby :\x01ACTION a\x01\r\n:bob!bob@irc.test PRIVMSG #lobby :\x01ACTION b\x01\r\n");
    }

    #[test]
    fn the_longest_names_and_rooms_do_not_break_rendering() {
        let name = ".".repeat(64);
        let room = ",".repeat(64);
        let event = RoomEvent::Message { name: Arc::from(name.as_str()), text: Arc::from("x ".repeat(300).as_str()) };
        let lines = event_lines(&Payload::event(room.as_str(), event), "irc.test", "", false).unwrap();
        assert_eq!(lines.matches('x').count(), 300);
        assert!(lines.starts_with(":\\2e"));
    }

    #[test]
    fn actions_cross_as_slash_me() {
        assert_eq!(text_from_irc("\u{1}ACTION waves\u{1}"), "/me waves");
        assert_eq!(text_from_irc("plain"), "plain");
    }
}
