//! `CHATHISTORY` (IRCv3 `draft/chathistory`): a channel's messages read
//! back from its room's archive, which holds every message of the room
//! whichever protocol its sender speaks, under the ids IRC clients were
//! given as `msgid`.
//!
//! A message is named by `msgid=<id>` or by `timestamp=<RFC 3339 time>`.
//! Every bound is exclusive, as the specification has it; a timestamp is
//! to the millisecond, as `server-time` shows it, and stands for its whole
//! millisecond (the archive keeps microseconds): `AFTER timestamp=T` is
//! what came after every message shown at `T`.

use std::time::SystemTime;

use store::{Cursor, Entry, Filter};

/// Most messages one query returns (`ISUPPORT CHATHISTORY=`); a larger
/// limit, or `0`, asks for this many.
pub const MAX: usize = 100;

/// One message named in a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ref {
    Msgid(String),
    /// The first microsecond of the millisecond named.
    Time(i64),
}

/// What a query asks for, each with its references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// The newest messages, after the one named if any (`*`: none).
    Latest(Option<Ref>),
    Before(Ref),
    After(Ref),
    /// The messages between two, from the first's side.
    Between(Ref, Ref),
    /// The message named, with as many before it as after it.
    Around(Ref),
}

/// Why a query is refused: the `FAIL CHATHISTORY` code and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub code: &'static str,
    pub why: &'static str,
}

const fn refused(code: &'static str, why: &'static str) -> Refused {
    Refused { code, why }
}

/// A query's limit: at most [`MAX`], which `0` asks for too.
fn limit(given: Option<&str>) -> Result<usize, Refused> {
    match given.and_then(|l| l.parse::<usize>().ok()) {
        Some(0) => Ok(MAX),
        Some(limit) => Ok(limit.min(MAX)),
        None => Err(refused("INVALID_PARAMS", "Invalid limit")),
    }
}

impl Ref {
    /// `msgid=…`, `timestamp=…`, or `None` for anything else.
    pub fn parse(text: &str) -> Option<Ref> {
        if let Some(id) = text.strip_prefix("msgid=") {
            return (!id.is_empty()).then(|| Ref::Msgid(id.to_owned()));
        }
        let at = humantime::parse_rfc3339_weak(text.strip_prefix("timestamp=")?).ok()?;
        let millis = at.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_millis();
        i64::try_from(millis).ok().map(|ms| Ref::Time(ms * 1000))
    }

    /// The messages after this one.
    fn after(&self, filter: &mut Filter) {
        match self {
            Ref::Msgid(id) => filter.after_id = Some(id.clone()),
            Ref::Time(at) => filter.start = Some(at + 1000),
        }
    }

    /// The messages before this one.
    fn before(&self, filter: &mut Filter) {
        match self {
            Ref::Msgid(id) => filter.before_id = Some(id.clone()),
            Ref::Time(at) => filter.end = Some(at - 1),
        }
    }

    /// Whether this one is no later than `other`: ids are in the archive's
    /// order, and an id against a time by the time it carries
    /// (`store::id_time`; one that carries none is taken to come first).
    fn not_after(&self, other: &Ref) -> bool {
        match (self, other) {
            (Ref::Msgid(a), Ref::Msgid(b)) => a <= b,
            (Ref::Time(a), Ref::Time(b)) => a <= b,
            (Ref::Time(at), Ref::Msgid(id)) => store::id_time(id).is_none_or(|t| *at <= t),
            (Ref::Msgid(id), Ref::Time(at)) => store::id_time(id).is_none_or(|t| t < *at),
        }
    }
}

impl Query {
    /// The query of `CHATHISTORY <subcommand> <target> …` from its
    /// parameters after the target, and the limit it gives.
    pub fn parse(subcommand: &str, rest: &[&str]) -> Result<(Query, usize), Refused> {
        let bad_ref = refused("INVALID_PARAMS", "Invalid message reference");
        let reference = |n: usize| rest.get(n).and_then(|r| Ref::parse(r)).ok_or(bad_ref.clone());
        let limit = |n: usize| limit(rest.get(n).copied());
        match subcommand.to_ascii_uppercase().as_str() {
            "LATEST" => {
                let after = match rest.first() {
                    Some(&"*") => None,
                    _ => Some(reference(0)?),
                };
                Ok((Query::Latest(after), limit(1)?))
            }
            "BEFORE" => Ok((Query::Before(reference(0)?), limit(1)?)),
            "AFTER" => Ok((Query::After(reference(0)?), limit(1)?)),
            "AROUND" => Ok((Query::Around(reference(0)?), limit(1)?)),
            "BETWEEN" => Ok((Query::Between(reference(0)?, reference(1)?), limit(2)?)),
            _ => Err(refused("INVALID_PARAMS", "Unknown subcommand")),
        }
    }

    /// Its reads of an archive, each a filter, where to start and how
    /// many: one, or for `AROUND` three (before, the message, after; see
    /// [`around`]).
    pub fn reads(&self, limit: usize) -> Vec<(Filter, Cursor, usize)> {
        let mut filter = Filter::default();
        match self {
            Query::Latest(after) => {
                if let Some(after) = after {
                    after.after(&mut filter);
                }
                vec![(filter, Cursor::Before(None), limit)]
            }
            Query::Before(reference) => {
                reference.before(&mut filter);
                vec![(filter, Cursor::Before(None), limit)]
            }
            Query::After(reference) => {
                reference.after(&mut filter);
                vec![(filter, Cursor::Oldest, limit)]
            }
            Query::Between(from, to) => {
                let forwards = from.not_after(to);
                let (low, high) = if forwards { (from, to) } else { (to, from) };
                low.after(&mut filter);
                high.before(&mut filter);
                vec![(filter, if forwards { Cursor::Oldest } else { Cursor::Before(None) }, limit)]
            }
            Query::Around(reference) => {
                let before = (limit - 1) / 2;
                let mut earlier = Filter::default();
                reference.before(&mut earlier);
                let (itself, later) = match reference {
                    Ref::Msgid(id) => (Filter { ids: vec![id.clone()], ..Filter::default() }, Filter { after_id: Some(id.clone()), ..Filter::default() }),
                    // The millisecond named and after it.
                    Ref::Time(at) => (Filter { start: Some(*at), end: Some(at + 999), ..Filter::default() }, Filter { start: Some(at + 1000), ..Filter::default() }),
                };
                vec![(earlier, Cursor::Before(None), before), (itself, Cursor::Oldest, limit), (later, Cursor::Oldest, limit)]
            }
        }
    }
}

/// `TARGETS <timestamp> <timestamp> <limit>`'s read of each channel's
/// archive, between the two times (bounds exclusive): its newest message
/// there, if any; the limit; and whether the later time came first, so
/// that the limit counts from it, as `BETWEEN`'s does.
pub fn targets(rest: &[&str]) -> Result<(Filter, usize, bool), Refused> {
    let time = |n: usize| match rest.get(n).and_then(|r| Ref::parse(r)) {
        Some(Ref::Time(at)) => Ok(at),
        _ => Err(refused("INVALID_PARAMS", "TARGETS takes two timestamps")),
    };
    let (a, b) = (time(0)?, time(1)?);
    let limit = limit(rest.get(2).copied())?;
    let mut filter = Filter::default();
    Ref::Time(a.min(b)).after(&mut filter);
    Ref::Time(a.max(b)).before(&mut filter);
    Ok((filter, limit, a > b))
}

/// `AROUND`'s three pages (before, the message, after) as one, oldest
/// first, at most `limit`: those before first, then from the message on.
pub fn around(pages: Vec<Vec<Entry>>, limit: usize) -> Vec<Entry> {
    let mut pages = pages.into_iter();
    let mut all: Vec<Entry> = pages.next().unwrap_or_default();
    for page in pages {
        all.extend(page.into_iter().take(limit.saturating_sub(all.len())));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_ids_or_millisecond_times() {
        assert_eq!(Ref::parse("msgid=01ab"), Some(Ref::Msgid("01ab".into())));
        assert_eq!(Ref::parse("timestamp=2026-12-02T10:00:00.123Z"), Some(Ref::Time(1_796_205_600_123_000)));
        for bad in ["msgid=", "timestamp=yesterday", "01ab", "*"] {
            assert_eq!(Ref::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn each_subcommand_reads_what_it_names_and_limits_are_bounded() {
        let id = |s: &str| Ref::Msgid(s.into());
        assert_eq!(Query::parse("latest", &["*", "10"]), Ok((Query::Latest(None), 10)));
        assert_eq!(Query::parse("LATEST", &["msgid=a", "0"]), Ok((Query::Latest(Some(id("a"))), MAX)));
        assert_eq!(Query::parse("BEFORE", &["msgid=a", "1000"]), Ok((Query::Before(id("a")), MAX)));
        assert_eq!(Query::parse("BETWEEN", &["msgid=a", "msgid=b", "3"]), Ok((Query::Between(id("a"), id("b")), 3)));
        assert_eq!(Query::parse("AFTER", &["msgid=a"]).unwrap_err().code, "INVALID_PARAMS");
        assert_eq!(Query::parse("AFTER", &["a", "3"]).unwrap_err().code, "INVALID_PARAMS");
        assert_eq!(Query::parse("TARGETS", &["*", "*", "3"]).unwrap_err().why, "Unknown subcommand");

        let (between, cursor, _) = Query::Between(id("b"), id("a")).reads(3).remove(0);
        assert_eq!((between.after_id.as_deref(), between.before_id.as_deref(), cursor), (Some("a"), Some("b"), Cursor::Before(None)), "backwards: the newest");
        let (after, _, _) = Query::After(Ref::Time(5_000)).reads(3).remove(0);
        assert_eq!(after.start, Some(6_000), "past the whole millisecond named");
        let (before, _, _) = Query::Before(Ref::Time(5_000)).reads(3).remove(0);
        assert_eq!(before.end, Some(4_999));

        let (between, limit, backwards) = targets(&["timestamp=1970-01-01T00:00:00.009Z", "timestamp=1970-01-01T00:00:00.002Z", "5"]).unwrap();
        assert_eq!((between.start, between.end, limit, backwards), (Some(3_000), Some(8_999), 5, true), "either first, both exclusive");

        // An id against a time: by the time it carries.
        let id = store::id_of(5_000, 7);
        assert!(Ref::Time(4_000).not_after(&Ref::Msgid(id.clone())) && !Ref::Time(6_000).not_after(&Ref::Msgid(id.clone())));
        assert!(Ref::Msgid(id.clone()).not_after(&Ref::Time(6_000)) && !Ref::Msgid(id).not_after(&Ref::Time(5_000)));
        assert_eq!(targets(&["msgid=a", "timestamp=1970-01-01T00:00:00.009Z", "5"]).unwrap_err().code, "INVALID_PARAMS");
    }

    #[test]
    fn around_takes_as_many_before_as_after_with_the_message_between() {
        let entry = |id: &str| Entry { archive: "/chat#a".into(), id: id.into(), at: 0, with: "al".into(), message: "hi".into() };
        let reads = Query::Around(Ref::Msgid("m".into())).reads(3);
        assert_eq!(reads.iter().map(|(_, _, max)| *max).collect::<Vec<_>>(), [1, 3, 3]);
        let pages = vec![vec![entry("l")], vec![entry("m")], vec![entry("n"), entry("o")]];
        assert_eq!(around(pages, 3).iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["l", "m", "n"]);
        let alone = vec![vec![], vec![entry("m")], vec![entry("n")]];
        assert_eq!(around(alone, 1).iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["m"]);
    }
}
