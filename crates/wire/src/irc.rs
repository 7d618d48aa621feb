//! IRC's line format (RFC 1459 §2.3, RFC 2812 §2.3, the "Modern IRC"
//! client protocol, IRCv3 message tags), the text-safety rules of an IRC
//! line, and how the names of other protocols' members and rooms are shown
//! as IRC nicknames and channels.
//!
//! Hand-written rather than `irc-proto`: a server must tell a command that
//! lacks parameters (answered with 461) from one it does not know (421),
//! which `irc-proto`'s typed commands fold into one `Raw` case, and it reads
//! each line's parameters where they lie instead of copying every one into
//! a `String`. The grammar is small: tags, source, command, parameters.
//!
//! **No line is ever broken by what it carries.** [`Line`] replaces CR, LF
//! and NUL in anything it is given with a space, so text from another
//! protocol cannot end a line and start a command (no command injection);
//! [`split_text`] cuts a message into lines that fit.
//!
//! **Names.** Chat and XMPP names follow RFC 8266 and may hold what IRC
//! nicknames may not (a space, `@`, `!`, a leading `#` …). A name is shown
//! on IRC with each such character written `\` and its two hexadecimal
//! digits (`Alice Smith` is `Alice\20Smith`, as XEP-0106 escapes JIDs), and
//! `\` itself as `\5c`, so the mapping is one to one: an IRC user may take
//! the nickname `Alice\20Smith` and is `Alice Smith` to everyone else, and
//! a nickname that is not the exact escaped form of its name is refused.
//! Channels are rooms with `#` before them, escaped the same way.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Longest line without its tags, CR LF included (RFC 1459 §2.3).
pub const MAX_LINE: usize = 512;

/// Longest tags section a line may start with, `@` and the space after it
/// included (IRCv3 message tags).
pub const MAX_TAGS: usize = 8191;

/// Longest tags a client may send, without the `@` and the space after
/// them (IRCv3 message tags: the rest of [`MAX_TAGS`] is the server's).
pub const MAX_CLIENT_TAGS: usize = 4094;

/// Why a line could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Nothing but spaces (clients send empty lines; they are ignored).
    #[error("empty line")]
    Empty,
    /// A source or tags with no command after them.
    #[error("no command")]
    NoCommand,
    /// A command with a character that is not visible ASCII. (One of
    /// visible ASCII that is neither letters nor three digits, which no
    /// command is, is read, to be answered as an unknown command.)
    #[error("malformed command")]
    BadCommand,
    /// Longer than [`MAX_LINE`] without its tags, or tags longer than
    /// [`MAX_TAGS`] (answered with 417).
    #[error("line too long")]
    TooLong,
    /// Not UTF-8 (IRC has no declared encoding; this server speaks UTF-8).
    #[error("not UTF-8")]
    NotUtf8,
    /// A NUL, which no IRC line may carry (CR and LF end a line).
    #[error("a NUL in the line")]
    Nul,
}

/// One line a client sent, read where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// The raw tags, without the `@`.
    pub tags: Option<&'a str>,
    /// The source, without the `:` (clients should not send one).
    pub source: Option<&'a str>,
    /// The command as sent; compare it with [`Message::is`].
    pub command: &'a str,
    /// The parameters, the last one possibly with spaces (the trailing one).
    pub params: Vec<&'a str>,
}

impl<'a> Message<'a> {
    /// Reads one line a client sent, without its CR LF.
    pub fn parse(line: &'a [u8]) -> Result<Message<'a>, LineError> {
        if line.contains(&0) {
            return Err(LineError::Nul);
        }
        let line = std::str::from_utf8(line).map_err(|_| LineError::NotUtf8)?;
        let mut rest = line.trim_start_matches(' ');
        let mut tags = None;
        if let Some(after) = rest.strip_prefix('@') {
            let (raw, after) = after.split_once(' ').unwrap_or((after, ""));
            if raw.len() > MAX_CLIENT_TAGS {
                return Err(LineError::TooLong);
            }
            tags = Some(raw);
            rest = after.trim_start_matches(' ');
        }
        if rest.len() + 2 > MAX_LINE {
            return Err(LineError::TooLong);
        }
        let mut source = None;
        if let Some(after) = rest.strip_prefix(':') {
            let (raw, after) = after.split_once(' ').unwrap_or((after, ""));
            source = Some(raw);
            rest = after.trim_start_matches(' ');
        }
        if rest.is_empty() {
            return Err(if tags.is_none() && source.is_none() { LineError::Empty } else { LineError::NoCommand });
        }
        let (command, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        if !command.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(LineError::BadCommand);
        }
        let mut params = Vec::new();
        loop {
            rest = rest.trim_start_matches(' ');
            if rest.is_empty() {
                break;
            }
            if let Some(trailing) = rest.strip_prefix(':') {
                params.push(trailing);
                break;
            }
            let (param, after) = rest.split_once(' ').unwrap_or((rest, ""));
            params.push(param);
            rest = after;
        }
        Ok(Message { tags, source, command, params })
    }

    /// Whether the command is `command` (commands are case-insensitive).
    pub fn is(&self, command: &str) -> bool {
        self.command.eq_ignore_ascii_case(command)
    }

    /// The parameter at `index`, if sent.
    pub fn param(&self, index: usize) -> Option<&'a str> {
        self.params.get(index).copied()
    }

    /// The value of tag `key` (unescaped), `Some("")` for a tag without
    /// one, `None` if absent.
    pub fn tag(&self, key: &str) -> Option<Cow<'a, str>> {
        tags(self.tags?).find_map(|(k, v)| (k == key).then_some(v))
    }
}

/// The tags of a line's tag part (`a=b;+c=d\se`, without its `@`), in
/// order: each key and its value unescaped, `""` for a tag without one.
pub fn tags(text: &str) -> impl Iterator<Item = (&str, Cow<'_, str>)> {
    text.split(';').filter(|tag| !tag.is_empty()).map(|tag| {
        let (key, value) = tag.split_once('=').unwrap_or((tag, ""));
        (key, unescape_tag_value(value))
    })
}

/// One line the server sends, built piece by piece. Every piece has CR,
/// LF and NUL replaced with a space: nothing it is given can end the line.
#[derive(Debug, Clone)]
pub struct Line {
    text: String,
    /// A trailing parameter was added: nothing more can follow it.
    closed: bool,
}

impl Line {
    /// A line from `source` (none for a line of the server's own with no
    /// prefix) of `command`.
    pub fn new(source: Option<&str>, command: &str) -> Line {
        Line::tagged("", source, command)
    }

    /// A line with `tags` (already escaped, `key=value;key2`), empty for none.
    pub fn tagged(tags: &str, source: Option<&str>, command: &str) -> Line {
        let mut line = Line { text: String::with_capacity(64), closed: false };
        if !tags.is_empty() {
            line.text.push('@');
            line.push(tags);
            line.text.push(' ');
        }
        if let Some(source) = source {
            line.text.push(':');
            line.push(source);
            line.text.push(' ');
        }
        line.push(command);
        line
    }

    /// Adds a middle parameter. An empty one, one with a space or one
    /// starting with `:` could not be read back as one, so it is added as
    /// the trailing parameter, after which nothing more is added.
    pub fn arg(mut self, param: &str) -> Line {
        if self.closed {
            return self;
        }
        if param.is_empty() || param.starts_with(':') || param.contains(' ') {
            self.text.push_str(" :");
            self.closed = true;
        } else {
            self.text.push(' ');
        }
        self.push(param);
        self
    }

    /// Adds the trailing parameter and ends the line.
    pub fn trailing(mut self, param: &str) -> String {
        if !self.closed {
            self.text.push_str(" :");
            self.push(param);
        }
        self.end()
    }

    /// Ends the line.
    pub fn end(mut self) -> String {
        self.text.push_str("\r\n");
        self.text
    }

    fn push(&mut self, piece: &str) {
        if piece.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            self.text.extend(piece.chars().map(|c| if matches!(c, '\r' | '\n' | '\0') { ' ' } else { c }));
        } else {
            self.text.push_str(piece);
        }
    }
}

/// `text` as lines of at most `budget` bytes each: cut at its line breaks
/// (and NULs), then each piece at the last space that fits, or at a
/// character's edge if none does. Empty pieces are dropped: IRC has no
/// empty messages.
pub fn split_text(text: &str, budget: usize) -> Vec<&str> {
    let budget = budget.max(4);
    let mut lines = Vec::new();
    for mut piece in text.split(['\r', '\n', '\0']) {
        while piece.len() > budget {
            let mut cut = budget;
            while !piece.is_char_boundary(cut) {
                cut -= 1;
            }
            let at = if piece.as_bytes()[cut] == b' ' { cut } else { piece[..cut].rfind(' ').filter(|&i| i > 0).unwrap_or(cut) };
            lines.push(&piece[..at]);
            piece = piece[at..].strip_prefix(' ').unwrap_or(&piece[at..]);
        }
        if !piece.is_empty() {
            lines.push(piece);
        }
    }
    lines
}

/// `text` as the lines of an IRCv3 multiline batch (`draft/multiline`),
/// each with whether it goes on the one before it (the
/// `draft/multiline-concat` tag): cut at its line breaks (CR LF, LF, CR)
/// and NULs, blank lines kept; then at `cuts`, where its sender cut a line
/// without a line break (byte offsets into `text`; one that is not inside
/// a line, at a character's edge, is passed over); then each piece into
/// pieces of at most `budget` bytes that join back into it, cut after the
/// last space that fits (the space stays at the end of its piece, as the
/// specification asks of a client that splits a line), or at a
/// character's edge if none does.
pub fn multiline_pieces<'t>(text: &'t str, cuts: &[u32], budget: usize) -> Vec<(&'t str, bool)> {
    let budget = budget.max(4);
    let mut pieces = Vec::new();
    let mut start = 0;
    loop {
        let end = text[start..].find(['\r', '\n', '\0']).map_or(text.len(), |at| start + at);
        if start == end {
            pieces.push(("", false));
        }
        let inside = cuts.iter().map(|&c| c as usize).filter(|&c| c > start && c < end && text.is_char_boundary(c));
        let mut from = start;
        for to in inside.chain(std::iter::once(end)) {
            if to <= from {
                continue;
            }
            let mut piece = &text[from..to];
            let mut goes_on = from > start;
            while !piece.is_empty() {
                let mut cut = piece.len().min(budget);
                while !piece.is_char_boundary(cut) {
                    cut -= 1;
                }
                if cut < piece.len() {
                    cut = piece[..cut].rfind(' ').filter(|&at| at > 0).map_or(cut, |at| at + 1);
                }
                pieces.push((&piece[..cut], goes_on));
                goes_on = true;
                piece = &piece[cut..];
            }
            from = to;
        }
        if end == text.len() {
            return pieces;
        }
        start = end + if text[end..].starts_with("\r\n") { 2 } else { 1 };
    }
}

/// A tag value escaped for a line (IRCv3 message tags).
pub fn escape_tag_value(value: &str) -> Cow<'_, str> {
    if !value.bytes().any(|b| matches!(b, b';' | b' ' | b'\\' | b'\r' | b'\n' | 0)) {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        match c {
            ';' => out.push_str("\\:"),
            ' ' => out.push_str("\\s"),
            '\\' => out.push_str("\\\\"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\0' => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A tag value as sent, unescaped (IRCv3 message tags: an unknown escape
/// stands for its character, a lone `\` at the end for nothing).
pub fn unescape_tag_value(value: &str) -> Cow<'_, str> {
    if !value.contains('\\') {
        return Cow::Borrowed(value);
    }
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(':') => out.push(';'),
            Some('s') => out.push(' '),
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    Cow::Owned(out)
}

/// Why a nickname or channel does not name a member or room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("holds a character IRC names may not, or a \\ that is not the escape of one")]
    Erroneous,
    #[error("a channel starts with #")]
    NotAChannel,
}

/// Whether a nickname may hold `c` (after its first character).
fn nick_keeps(c: char) -> bool {
    !(c.is_ascii_control() || matches!(c, ' ' | ',' | '*' | '?' | '!' | '@' | '.' | '\\'))
}

/// Whether a nickname may start with `c`: not a digit, `-`, or what
/// introduces a channel, a membership prefix or a parameter.
fn nick_starts_with(c: char) -> bool {
    nick_keeps(c) && !(c.is_ascii_digit() || matches!(c, '-' | '$' | ':' | '#' | '&' | '~' | '%' | '+'))
}

/// Whether a channel may hold `c` after its `#`.
fn channel_keeps(c: char) -> bool {
    !(c.is_ascii_control() || matches!(c, ' ' | ',' | '\\'))
}

fn escape(text: &str, first: fn(char) -> bool, rest: fn(char) -> bool, out: &mut String) {
    for (i, c) in text.chars().enumerate() {
        let keep = if i == 0 { first(c) } else { rest(c) };
        if keep {
            out.push(c);
        } else {
            // Only ASCII is ever escaped: every other character is kept.
            let _ = write!(out, "\\{:02x}", c as u32);
        }
    }
}

fn unescape(text: &str) -> Result<String, NameError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let hex = rest.get(at + 1..at + 3).ok_or(NameError::Erroneous)?;
        let byte = u8::from_str_radix(hex, 16).map_err(|_| NameError::Erroneous)?;
        // No name holds a control character: what a name holds reaches
        // every protocol, and the archive.
        if !byte.is_ascii() || byte.is_ascii_control() || hex.starts_with('+') {
            return Err(NameError::Erroneous);
        }
        out.push(char::from(byte));
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// How a member named `name` is shown to IRC users.
pub fn nick_of(name: &str) -> Cow<'_, str> {
    let mut chars = name.chars();
    if chars.next().is_some_and(nick_starts_with) && chars.all(nick_keeps) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    escape(name, nick_starts_with, nick_keeps, &mut out);
    Cow::Owned(out)
}

/// The name an IRC nickname stands for: its escapes read, and refused
/// unless the nickname is exactly how that name is shown.
pub fn name_of(nick: &str) -> Result<String, NameError> {
    let name = unescape(nick)?;
    if name.is_empty() || nick_of(&name) != nick {
        return Err(NameError::Erroneous);
    }
    Ok(name)
}

/// The channel that is room `room`.
pub fn channel_of(room: &str) -> String {
    let mut out = String::with_capacity(room.len() + 1);
    out.push('#');
    escape(room, channel_keeps, channel_keeps, &mut out);
    out
}

/// The room a channel is: what follows its `#`, escapes read, in lower
/// case (XMPP's rooms are lower case, so IRC's are too: `#Lobby` is
/// `lobby`).
pub fn room_of(channel: &str) -> Result<String, NameError> {
    let escaped = channel.strip_prefix('#').ok_or(NameError::NotAChannel)?;
    let room = unescape(escaped)?.to_lowercase();
    if !crate::app::is_room_name(&room) || channel_of(&room) != channel.to_lowercase() {
        return Err(NameError::Erroneous);
    }
    Ok(room)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Message<'_> {
        Message::parse(line.as_bytes()).unwrap()
    }

    #[test]
    fn a_line_is_read_into_its_parts() {
        let m = parse("@id=123;+draft/x=a\\sb :nick!u@h PRIVMSG #lobby :hello there");
        assert_eq!(m.tags, Some("id=123;+draft/x=a\\sb"));
        assert_eq!(m.source, Some("nick!u@h"));
        assert!(m.is("privmsg"));
        assert_eq!(m.params, ["#lobby", "hello there"]);
        assert_eq!(m.tag("+draft/x").as_deref(), Some("a b"));
        assert_eq!(m.tag("id").as_deref(), Some("123"));
        assert_eq!(m.tag("missing"), None);

        assert_eq!(parse("NICK  alice").params, ["alice"]);
        assert_eq!(parse("USER a 0 * :Real Name").params, ["a", "0", "*", "Real Name"]);
        assert_eq!(parse("PRIVMSG #a ::-)").params, ["#a", ":-)"]);
        assert_eq!(parse("PRIVMSG #a :").params, ["#a", ""]);
        assert_eq!(parse("QUIT").params, Vec::<&str>::new());
        assert_eq!(parse("001 me :Welcome").command, "001");
    }

    #[test]
    fn lines_that_are_not_commands_are_refused() {
        assert_eq!(Message::parse(b""), Err(LineError::Empty));
        assert_eq!(Message::parse(b"   "), Err(LineError::Empty));
        assert_eq!(Message::parse(b":source"), Err(LineError::NoCommand));
        assert_eq!(Message::parse(b"@a=b"), Err(LineError::NoCommand));
        assert_eq!(Message::parse(b"PRIV\x07MSG x"), Err(LineError::BadCommand));
        assert_eq!(Message::parse("PRIVMSG\u{e9} x".as_bytes()), Err(LineError::BadCommand));
        // Read, to be answered as an unknown command.
        assert_eq!(Message::parse(b"NO_SUCH-COMMAND x").map(|m| m.command), Ok("NO_SUCH-COMMAND"));
        assert_eq!(Message::parse(b"1234 x").map(|m| m.command), Ok("1234"));
        assert_eq!(Message::parse(b"NICK \xff"), Err(LineError::NotUtf8));
        let long = format!("PRIVMSG #a :{}", "x".repeat(MAX_LINE));
        assert_eq!(Message::parse(long.as_bytes()), Err(LineError::TooLong));
        let fits = format!("PRIVMSG #a :{}", "x".repeat(MAX_LINE - 14));
        assert_eq!(fits.len() + 2, MAX_LINE);
        assert!(Message::parse(fits.as_bytes()).is_ok());
        let tags = format!("@a={} PING x", "y".repeat(MAX_CLIENT_TAGS - 1));
        assert_eq!(Message::parse(tags.as_bytes()), Err(LineError::TooLong));
        let tags = format!("@a={} PING x", "y".repeat(MAX_CLIENT_TAGS - 2));
        assert!(Message::parse(tags.as_bytes()).is_ok());
    }

    #[test]
    fn lines_are_written_to_the_byte() {
        assert_eq!(Line::new(Some("irc.test"), "001").arg("alice").trailing("Welcome, alice"), ":irc.test 001 alice :Welcome, alice\r\n");
        assert_eq!(Line::new(None, "PING").arg("x").end(), "PING x\r\n");
        assert_eq!(Line::tagged("time=2026-01-01T00:00:00.000Z", Some("a!a@h"), "JOIN").arg("#lobby").end(), "@time=2026-01-01T00:00:00.000Z :a!a@h JOIN #lobby\r\n");
        // A parameter that could not be a middle one becomes the trailing one.
        assert_eq!(Line::new(None, "TOPIC").arg("#a").arg("two words").end(), "TOPIC #a :two words\r\n");
        assert_eq!(Line::new(None, "X").arg(":smile").arg("dropped").trailing("too"), "X ::smile\r\n");
        assert_eq!(Line::new(None, "X").arg("").end(), "X :\r\n");
    }

    #[test]
    fn nothing_given_to_a_line_can_end_it() {
        let line = Line::new(Some("evil\r\nQUIT"), "PRIVMSG").arg("#a\r\nJOIN").trailing("hi\r\nKICK #a bob\0");
        assert_eq!(line, ":evil  QUIT PRIVMSG #a  JOIN :hi  KICK #a bob \r\n");
        assert_eq!(line.matches("\r\n").count(), 1);
        assert!(!line.contains('\0'));
    }

    #[test]
    fn long_text_is_cut_into_lines_that_fit() {
        assert_eq!(split_text("one\ntwo\r\n\r\nthree\0four", 100), ["one", "two", "three", "four"]);
        assert_eq!(split_text("aaaa bbbb cccc", 9), ["aaaa bbbb", "cccc"]);
        assert_eq!(split_text("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        // Never inside a character.
        assert_eq!(split_text("ééé", 5), ["éé", "é"]);
        assert!(split_text("\n\n", 10).is_empty());
        let text = "word ".repeat(200);
        for line in split_text(&text, 400) {
            assert!(line.len() <= 400 && !line.is_empty());
        }
    }

    #[test]
    fn multiline_text_is_cut_into_pieces_that_join_back() {
        assert_eq!(multiline_pieces("one\r\n\ntwo\rthree\0four", &[], 100), [("one", false), ("", false), ("two", false), ("three", false), ("four", false)]);
        assert_eq!(multiline_pieces("hi", &[], 100), [("hi", false)]);
        assert_eq!(multiline_pieces("", &[], 100), [("", false)]);
        assert_eq!(multiline_pieces("x\n", &[], 100), [("x", false), ("", false)]);
        // The space stays at the end of its piece; the next goes on from it.
        assert_eq!(multiline_pieces("aaaa bbbb cccc", &[], 9), [("aaaa ", false), ("bbbb cccc", true)]);
        assert_eq!(multiline_pieces("aaaa bbbb cccc", &[], 8), [("aaaa ", false), ("bbbb ", true), ("cccc", true)]);
        assert_eq!(multiline_pieces("abcdefghij\nk", &[], 4), [("abcd", false), ("efgh", true), ("ij", true), ("k", false)]);
        assert_eq!(multiline_pieces("ééé", &[], 5), [("éé", false), ("é", true)]);
        // Where the sender cut its lines; a cut inside a character, at a
        // line's edge or past the text is passed over.
        assert_eq!(multiline_pieces("hello\nhow is everyone?", &[13], 100), [("hello", false), ("how is ", false), ("everyone?", true)]);
        assert_eq!(multiline_pieces("ab\ncdé", &[0, 2, 3, 5, 6, 99], 100), [("ab", false), ("cd", false), ("é", true)]);
        let text = "word ".repeat(200) + "\n" + &"é".repeat(300);
        let pieces = multiline_pieces(&text, &[], 400);
        assert!(pieces.iter().all(|(p, _)| p.len() <= 400 && !p.is_empty()));
        let mut joined = String::new();
        for (n, (piece, goes_on)) in pieces.iter().enumerate() {
            if n > 0 && !goes_on {
                joined.push('\n');
            }
            joined.push_str(piece);
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn tag_values_are_escaped_both_ways() {
        assert_eq!(escape_tag_value("a;b c\\d\r\n"), "a\\:b\\sc\\\\d\\r\\n");
        assert_eq!(unescape_tag_value("a\\:b\\sc\\\\d\\r\\n"), "a;b c\\d\r\n");
        assert_eq!(unescape_tag_value("x\\"), "x");
        assert_eq!(unescape_tag_value("\\b"), "b");
        assert!(matches!(escape_tag_value("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn names_map_to_nicknames_one_to_one() {
        for (name, nick) in [
            ("alice", "alice"),
            ("Alice Smith", "Alice\\20Smith"),
            ("Zoë", "Zoë"),
            ("a@b!c", "a\\40b\\21c"),
            ("#hash", "\\23hash"),
            ("1st", "\\31st"),
            ("back\\slash", "back\\5cslash"),
            ("dots.are.out", "dots\\2eare\\2eout"),
            ("[bot]|^_`{}", "[bot]|^_`{}"),
        ] {
            assert_eq!(nick_of(name), nick, "{name:?}");
            assert_eq!(name_of(nick).as_deref(), Ok(name), "{nick:?}");
        }
        // Only the exact escaped form of a name is a nickname.
        for bad in ["", "a b", "1st", "a\\41", "a\\", "a\\zz", "a\\+1", "x\\e9", "a,b", "-x", "#x", ":x"] {
            assert_eq!(name_of(bad), Err(NameError::Erroneous), "{bad:?}");
        }
    }

    #[test]
    fn rooms_map_to_channels() {
        assert_eq!(channel_of("lobby"), "#lobby");
        assert_eq!(channel_of("two words"), "#two\\20words");
        assert_eq!(room_of("#Lobby").as_deref(), Ok("lobby"));
        assert_eq!(room_of("#two\\20words").as_deref(), Ok("two words"));
        assert_eq!(room_of("lobby"), Err(NameError::NotAChannel));
        assert_eq!(room_of("#"), Err(NameError::Erroneous));
        assert_eq!(room_of("#a\\61"), Err(NameError::Erroneous));
        assert_eq!(room_of("#a,b"), Err(NameError::Erroneous));
        // No control character comes in through an escape.
        for control in ["#a\\00b", "#a\\0db", "#a\\0ab", "#a\\7fb"] {
            assert_eq!(room_of(control), Err(NameError::Erroneous), "{control:?}");
        }
        let longest = "r".repeat(crate::app::MAX_NAME_LEN);
        assert_eq!(room_of(&format!("#{longest}")).as_deref(), Ok(longest.as_str()));
        assert_eq!(room_of(&format!("#{longest}r")), Err(NameError::Erroneous), "longer than any room's name");
    }

    #[test]
    fn a_line_with_a_nul_is_refused() {
        assert_eq!(Message::parse(b"PRIVMSG #a :a\0b"), Err(LineError::Nul));
        assert_eq!(Message::parse(b"\0"), Err(LineError::Nul));
    }
}
