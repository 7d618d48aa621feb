//! Labeled responses (IRCv3 `labeled-response`): a command a client tags
//! with `label=…` is answered with the same label in one logical message:
//! a line of its own, a batch (its start labeled), or `ACK` when the
//! command has no answer. A client must have asked for `batch` too.

use wire::irc::{Line, escape_tag_value};

/// The batch type of a labeled answer of several lines.
pub const BATCH_TYPE: &str = "labeled-response";
/// The longest label taken: a longer one is answered as if it were not there.
pub const MAX_LABEL: usize = 64;

/// `lines`, the whole answer to a command labeled `label`, as the client
/// is sent it: `ACK` from `server` for no lines; one logical message (a
/// line, or a batch that is all of it) with the label; otherwise the lines
/// in a `labeled-response` batch named by `reference`, each line not
/// already in a batch of its own tagged with it.
pub fn answer(lines: &str, label: &str, server: &str, reference: impl FnOnce() -> String) -> String {
    let tag = format!("label={}", escape_tag_value(label));
    if lines.is_empty() {
        return Line::tagged(&tag, Some(server), "ACK").end();
    }
    if one_message(lines) {
        let (first, rest) = lines.split_once("\r\n").unwrap_or((lines, ""));
        return with_tag(first, &tag) + "\r\n" + rest;
    }
    let reference = reference();
    start(label, server, &reference) + &inside(lines, &reference) + &end(server, &reference)
}

/// The start of the `labeled-response` batch `reference` that answers a
/// command labeled `label`.
pub fn start(label: &str, server: &str, reference: &str) -> String {
    let tag = format!("label={}", escape_tag_value(label));
    Line::tagged(&tag, Some(server), "BATCH").arg(&format!("+{reference}")).arg(BATCH_TYPE).end()
}

/// `lines` inside the batch `reference`: each line not already in a batch
/// of its own tagged with it.
pub fn inside(lines: &str, reference: &str) -> String {
    let tag = format!("batch={reference}");
    let mut out = String::with_capacity(lines.len() + 16);
    for line in lines.split_terminator("\r\n") {
        if tags_of(line).is_some_and(|tags| tags.split(';').any(|t| t.starts_with("batch="))) {
            out.push_str(line);
        } else {
            out.push_str(&with_tag(line, &tag));
        }
        out.push_str("\r\n");
    }
    out
}

/// The end of the batch `reference`.
pub fn end(server: &str, reference: &str) -> String {
    Line::new(Some(server), "BATCH").arg(&format!("-{reference}")).end()
}

/// Whether `lines` are one logical message: one line, or one batch from
/// its start to its end.
fn one_message(lines: &str) -> bool {
    let all: Vec<&str> = lines.split_terminator("\r\n").collect();
    match all[..] {
        [_] => true,
        [first, .., last] => batch_reference(first, '+').is_some_and(|r| batch_reference(last, '-') == Some(r)),
        [] => false,
    }
}

/// The reference of the batch `line` starts (`sign` `+`) or ends (`-`).
fn batch_reference(line: &str, sign: char) -> Option<&str> {
    let rest = without_tags(line);
    let rest = if rest.starts_with(':') { rest.split_once(' ')?.1 } else { rest };
    let mut words = rest.split(' ');
    (words.next()? == "BATCH").then_some(())?;
    words.next()?.strip_prefix(sign)
}

/// The tags of `line`, if it has any.
fn tags_of(line: &str) -> Option<&str> {
    line.strip_prefix('@').map(|rest| rest.split_once(' ').map_or(rest, |(tags, _)| tags))
}

/// `line` past its tags.
fn without_tags(line: &str) -> &str {
    match line.strip_prefix('@') {
        Some(rest) => rest.split_once(' ').map_or("", |(_, rest)| rest),
        None => line,
    }
}

/// `line` with `tag` first among its tags.
fn with_tag(line: &str, tag: &str) -> String {
    match line.strip_prefix('@') {
        Some(rest) => format!("@{tag};{rest}"),
        None => format!("@{tag} {line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_one_labeled_message() {
        assert_eq!(answer("", "a;b", "irc.test", || "L1".to_owned()), "@label=a\\:b :irc.test ACK\r\n");
        assert_eq!(answer(":irc.test PONG irc.test :x\r\n", "l", "irc.test", || "L1".to_owned()), "@label=l :irc.test PONG irc.test :x\r\n");
        assert_eq!(answer("@msgid=1 :n!n@h PRIVMSG #t :hi\r\n", "l", "irc.test", || "L1".to_owned()), "@label=l;msgid=1 :n!n@h PRIVMSG #t :hi\r\n");
        // A batch that is the whole answer is labeled at its start.
        let multiline = "@msgid=1 :n!n@h BATCH +m1 draft/multiline #t\r\n@batch=m1 :n!n@h PRIVMSG #t :a\r\n@batch=m1 :n!n@h PRIVMSG #t :b\r\n:n!n@h BATCH -m1\r\n";
        assert_eq!(answer(multiline, "l", "irc.test", || "L1".to_owned()), format!("@label=l;{}", &multiline[1..]));
        // Several: a batch, lines already in one of their own left in it.
        let lines = ":irc.test 311 me n ~u h * :R\r\n:irc.test BATCH +h1 chathistory #t\r\n@batch=h1 :n!n@h PRIVMSG #t :a\r\n:irc.test BATCH -h1\r\n";
        assert_eq!(
            answer(lines, "l", "irc.test", || "L1".to_owned()),
            "@label=l :irc.test BATCH +L1 labeled-response\r\n\
             @batch=L1 :irc.test 311 me n ~u h * :R\r\n\
             @batch=L1 :irc.test BATCH +h1 chathistory #t\r\n\
             @batch=h1 :n!n@h PRIVMSG #t :a\r\n\
             @batch=L1 :irc.test BATCH -h1\r\n\
             :irc.test BATCH -L1\r\n"
        );
    }
}
