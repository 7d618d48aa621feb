//! Multiline messages a client sends (IRCv3 `draft/multiline`): a batch
//! opened with `BATCH +ref draft/multiline target`, `PRIVMSG` lines
//! tagged `batch=ref` (with `draft/multiline-concat` on one that goes on
//! the line before), and `BATCH -ref`, which sends the whole message. A
//! client has at most one open; what it holds is bounded by [`MAX_BYTES`]
//! and [`MAX_LINES`]. What breaks a rule is answered with `FAIL BATCH …`
//! (IRCv3 standard replies), and the rest of that batch is dropped.

use wire::irc::Line;

/// The batch type, and the capability.
pub const BATCH_TYPE: &str = "draft/multiline";
/// The tag of a line that goes on the one before it, with no line break.
pub const CONCAT: &str = "draft/multiline-concat";
/// The most bytes a message's lines hold in all, a line break between
/// two of them counted as one.
pub const MAX_BYTES: usize = 4096;
/// The most lines in one batch.
pub const MAX_LINES: usize = 32;
/// The capability's value, as `CAP LS 302` gives it.
pub const LIMITS: &str = "max-bytes=4096,max-lines=32";

/// A batch a client is sending.
#[derive(Debug)]
pub struct Batch {
    pub reference: String,
    target: String,
    /// The client-only tags its `BATCH` gave: the message's.
    client_tags: Option<String>,
    text: String,
    /// Where a line went on the one before, in `text`.
    cuts: Vec<u32>,
    lines: usize,
    /// It broke a rule: what is left of it is dropped, unanswered.
    pub broken: bool,
}

/// A batch's whole message, once it ends.
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    pub target: String,
    pub text: String,
    pub client_tags: Option<String>,
    /// Where a line of it went on the one before, as byte offsets into
    /// `text`: how IRC clients are to be shown its lines.
    pub cuts: Vec<u32>,
}

/// Why a batch is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Fail {
    MaxBytes,
    MaxLines,
    /// A line to another target than the batch's (the batch's, the line's).
    InvalidTarget(String, String),
    /// Anything else, said.
    Invalid(&'static str),
}

impl Fail {
    /// Its `FAIL` line from `server`.
    pub fn line(&self, server: &str) -> String {
        let line = Line::new(Some(server), "FAIL").arg("BATCH");
        match self {
            Fail::MaxBytes => line.arg("MULTILINE_MAX_BYTES").arg(&MAX_BYTES.to_string()).trailing("Multiline batch max-bytes exceeded"),
            Fail::MaxLines => line.arg("MULTILINE_MAX_LINES").arg(&MAX_LINES.to_string()).trailing("Multiline batch max-lines exceeded"),
            Fail::InvalidTarget(batch, given) => line.arg("MULTILINE_INVALID_TARGET").arg(batch).arg(given).trailing("Invalid multiline target"),
            Fail::Invalid(why) => line.arg("MULTILINE_INVALID").trailing(why),
        }
    }
}

impl Batch {
    pub fn open(reference: &str, target: &str, client_tags: Option<String>) -> Batch {
        Batch { reference: reference.to_owned(), target: target.to_owned(), client_tags, text: String::new(), cuts: Vec::new(), lines: 0, broken: false }
    }

    /// One that is dropped to its end, unanswered.
    pub fn broken(reference: &str) -> Batch {
        Batch { broken: true, ..Batch::open(reference, "", None) }
    }

    /// Takes one of its lines: `command` to `target` of `text`, going on
    /// the line before if `concat`.
    pub fn take(&mut self, command: &str, target: &str, text: &str, concat: bool) -> Result<(), Fail> {
        if !command.eq_ignore_ascii_case("PRIVMSG") {
            return Err(Fail::Invalid("A multiline batch holds PRIVMSG lines only"));
        }
        if !target.eq_ignore_ascii_case(&self.target) {
            return Err(Fail::InvalidTarget(self.target.clone(), target.to_owned()));
        }
        if concat && text.is_empty() {
            return Err(Fail::Invalid("A blank line cannot go on the one before"));
        }
        self.lines += 1;
        if self.lines > MAX_LINES {
            return Err(Fail::MaxLines);
        }
        let line_break = usize::from(self.lines > 1 && !concat);
        if self.text.len() + line_break + text.len() > MAX_BYTES {
            return Err(Fail::MaxBytes);
        }
        if line_break == 1 {
            self.text.push('\n');
        } else if concat && self.lines > 1 {
            // Within MAX_BYTES, so it fits.
            self.cuts.push(self.text.len() as u32);
        }
        self.text.push_str(text);
        Ok(())
    }

    /// Its message, at its end.
    pub fn end(self) -> Result<Message, Fail> {
        if self.text.bytes().all(|b| b == b'\n') {
            return Err(Fail::Invalid("A multiline batch of blank lines only, or none"));
        }
        Ok(Message { target: self.target, text: self.text, client_tags: self.client_tags, cuts: self.cuts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_join_with_a_line_break_unless_one_goes_on_the_one_before() {
        let mut batch = Batch::open("1", "#t", Some("+x=y".to_owned()));
        batch.take("PRIVMSG", "#t", "hello", false).unwrap();
        batch.take("privmsg", "#T", "", false).unwrap();
        batch.take("PRIVMSG", "#t", "how is ", false).unwrap();
        batch.take("PRIVMSG", "#t", "everyone?", true).unwrap();
        let message = batch.end().unwrap();
        assert_eq!(message, Message { target: "#t".into(), text: "hello\n\nhow is everyone?".into(), client_tags: Some("+x=y".into()), cuts: vec![14] });
    }

    #[test]
    fn each_rule_broken_is_its_own_failure() {
        let mut batch = Batch::open("1", "#t", None);
        assert_eq!(batch.take("NOTICE", "#t", "x", false), Err(Fail::Invalid("A multiline batch holds PRIVMSG lines only")));
        assert_eq!(batch.take("PRIVMSG", "#u", "x", false), Err(Fail::InvalidTarget("#t".into(), "#u".into())));
        assert!(matches!(batch.take("PRIVMSG", "#t", "", true), Err(Fail::Invalid(_))));
        for _ in 0..MAX_LINES {
            batch.take("PRIVMSG", "#t", "x", false).unwrap();
        }
        assert_eq!(batch.take("PRIVMSG", "#t", "x", false), Err(Fail::MaxLines));

        // 4,096 bytes exactly, line breaks counted, and not one more.
        let mut batch = Batch::open("2", "#t", None);
        for _ in 0..9 {
            batch.take("PRIVMSG", "#t", &"x".repeat(400), false).unwrap();
        }
        // A line break and the rest, but one byte.
        let left = MAX_BYTES - (9 * 400 + 8) - 1 - 1;
        batch.take("PRIVMSG", "#t", &"x".repeat(left), false).unwrap();
        assert_eq!(batch.take("PRIVMSG", "#t", "x", true), Ok(()));
        assert_eq!(batch.take("PRIVMSG", "#t", "x", true), Err(Fail::MaxBytes));

        let mut blank = Batch::open("3", "#t", None);
        blank.take("PRIVMSG", "#t", "", false).unwrap();
        blank.take("PRIVMSG", "#t", "", false).unwrap();
        assert!(matches!(blank.end(), Err(Fail::Invalid(_))));
        assert!(matches!(Batch::open("4", "#t", None).end(), Err(Fail::Invalid(_))));
    }

    #[test]
    fn failures_are_standard_replies_to_the_byte() {
        assert_eq!(Fail::MaxBytes.line("irc.test"), ":irc.test FAIL BATCH MULTILINE_MAX_BYTES 4096 :Multiline batch max-bytes exceeded\r\n");
        assert_eq!(Fail::MaxLines.line("irc.test"), ":irc.test FAIL BATCH MULTILINE_MAX_LINES 32 :Multiline batch max-lines exceeded\r\n");
        assert_eq!(
            Fail::InvalidTarget("#foo".into(), "#bar".into()).line("irc.test"),
            ":irc.test FAIL BATCH MULTILINE_INVALID_TARGET #foo #bar :Invalid multiline target\r\n"
        );
        assert_eq!(Fail::Invalid("Why").line("irc.test"), ":irc.test FAIL BATCH MULTILINE_INVALID :Why\r\n");
    }
}
