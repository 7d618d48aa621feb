//! Message archives (XEP-0313): each account's 1:1 messages, and each
//! room's. An entry is a message as the protocol renders it, with the id
//! the archive gave it (XEP-0359's stanza-id), when the server took it, and
//! the other party; archives are read a page at a time, oldest first
//! (XEP-0313 §3.1), forwards or backwards from an entry. An entry's id
//! says when it was taken ([`IdClock`]), so an archive's order is its ids'.

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::Result;

/// One archived message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Whose archive: an account's bare JID, or a room's path (see
    /// [`is_room`]).
    pub archive: String,
    /// Its id in the archive, unique there, made with `at` by an [`IdClock`]:
    /// an archive is in the order of its ids, and the SQL store finds a
    /// time range by the ids it spans ([`id_bounds`]).
    pub id: String,
    /// When the server took it, in microseconds since 1970 (UTC).
    pub at: i64,
    /// The other party's bare JID (for a room, the sender's nick's JID).
    pub with: String,
    /// The message, as the protocol keeps it.
    pub message: String,
}

/// Times an id can carry: 13 hexadecimal digits of microseconds, until
/// the year 2112.
const LATEST_ID_TIME: i64 = (1 << 52) - 1;

/// How far ahead of this node's clock an id another node made may be and
/// still lift this node's ids ([`IdClock::observe`]): more is a clock set
/// wrong, which would otherwise hold every later id here in its future.
pub const OBSERVED_AHEAD: i64 = 60_000_000;

/// Where new entries' ids come from: the last one's time and tail, so that
/// each is above every one before. A process has one
/// (`base::archive::next_id`).
#[derive(Debug)]
pub struct IdClock(Mutex<(i64, u32)>);

impl IdClock {
    pub const fn new() -> IdClock {
        IdClock(Mutex::new((i64::MIN, 0)))
    }

    /// A new entry's time and id, for an entry taken `now` (microseconds):
    /// the id is [`id_of`] that time and a tail, and is above every id made
    /// here before and every one [`IdClock::observe`]d. Past the last
    /// one's time, the tail is random below 2^31 (two nodes writing one
    /// database do not collide); at or before it (a second entry in one
    /// microsecond, or a clock set back), the time stays the last one's and
    /// the tail counts up. So an archive's order (its ids') is the order
    /// entries were taken in, and an entry's time is the one its id carries.
    pub fn next(&self, now: i64) -> (i64, String) {
        let now = now.clamp(0, LATEST_ID_TIME);
        let (at, tail) = {
            let mut last = self.0.lock();
            *last = match *last {
                (at, _) if now > at => (now, rand::random::<u32>() >> 1),
                (at, tail) if tail < u32::MAX => (at, tail + 1),
                // 2^31 entries in a microsecond: the next one.
                (at, _) => ((at + 1).min(LATEST_ID_TIME), rand::random::<u32>() >> 1),
            };
            *last
        };
        (at, id_of(at, tail))
    }

    /// Takes note of `id`, an entry's id another node made (a room's
    /// message through the broker), at `now` here: later ids are above it,
    /// so a node whose clock is behind another's does not write entries
    /// under ids below one its clients were already given, which a client
    /// catching up `after` that id would never read. Ids here then go on
    /// from the microsecond after that id's, at a random tail: the other
    /// node may still be counting in its microsecond (a second entry in
    /// it), and counting on from its tail here would make the very ids it
    /// makes next, which one database refuses as the same. An id not in
    /// [`id_of`]'s form, or more than [`OBSERVED_AHEAD`] ahead, changes
    /// nothing.
    pub fn observe(&self, id: &str, now: i64) {
        let Some(at) = id_time(id) else { return };
        if at > now.saturating_add(OBSERVED_AHEAD) {
            return;
        }
        // The whole microsecond is taken: `next` leaves it.
        let mut last = self.0.lock();
        *last = (*last).max((at, u32::MAX));
    }
}

/// The time (microseconds) an id in [`id_of`]'s form carries.
pub fn id_time(id: &str) -> Option<i64> {
    if id.len() != 21 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    i64::from_str_radix(&id[..13], 16).ok()
}

impl Default for IdClock {
    fn default() -> IdClock {
        IdClock::new()
    }
}

/// The id of an entry taken at `at` (microseconds since 1970): that time in
/// 13 hexadecimal digits, then `tail` in 8.
pub fn id_of(at: i64, tail: u32) -> String {
    use std::fmt::Write;
    // Sized at once: `format!` grew its string twice for each message
    // archived (a profile of the chat study's 4 × 20).
    let mut id = String::with_capacity(21);
    let _ = write!(id, "{:013x}{tail:08x}", at.clamp(0, LATEST_ID_TIME));
    id
}

/// The ids of the entries from `start` to `end` (microseconds, both
/// included) lie at or above the first string and below the second, where
/// the entries' ids were made by an [`IdClock`]; `None` where a bound says
/// nothing (a time before 1970, or past what an id can carry).
pub fn id_bounds(start: Option<i64>, end: Option<i64>) -> (Option<String>, Option<String>) {
    let prefix = |at: i64| format!("{at:013x}");
    let from = start.filter(|&s| s > 0 && s <= LATEST_ID_TIME).map(prefix);
    let below = end.filter(|&e| (0..LATEST_ID_TIME).contains(&e)).map(|e| prefix(e + 1));
    (from, below)
}

/// Whether `archive` is a room's: a room's archive is named by a path,
/// `<mount>#<room>` (`/chat#lobby`), and an account's by its bare JID,
/// which cannot start with `/`. A room's archive is not indexed by sender
/// (`with`): its members speak in turns, and an index that kept each
/// one's messages together would change a page per member at each of the
/// writer's commits (docs/storage.md); a query with `with` reads the room's
/// archive in order instead.
pub fn is_room(archive: &str) -> bool {
    archive.starts_with('/')
}

/// Which entries a query is about (XEP-0313 §4.1.2 and its `#extended`
/// fields); every field given narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub with: Option<String>,
    /// At or after this time (microseconds).
    pub start: Option<i64>,
    /// At or before this time (microseconds).
    pub end: Option<i64>,
    /// After the entry with this id.
    pub after_id: Option<String>,
    /// Before the entry with this id.
    pub before_id: Option<String>,
    /// Only these entries (at most a page's worth are looked at).
    pub ids: Vec<String>,
}

/// Where a page starts (XEP-0059): from the oldest, after an entry, or
/// before one (`None`: the newest page).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    Oldest,
    After(String),
    Before(Option<String>),
}

/// One page of an archive, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub entries: Vec<Entry>,
    /// Nothing more in the direction read: the last page forwards, the
    /// first one backwards.
    pub complete: bool,
}

/// What an account's archive keeps by default (XEP-0441): every message,
/// none, or those with contacts on the account's roster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Keep {
    #[default]
    Always,
    Never,
    Roster,
}

impl Keep {
    /// As XEP-0441's `default` attribute says it.
    pub fn name(self) -> &'static str {
        match self {
            Keep::Always => "always",
            Keep::Never => "never",
            Keep::Roster => "roster",
        }
    }

    pub fn parse(name: &str) -> Option<Keep> {
        [Keep::Always, Keep::Never, Keep::Roster].into_iter().find(|k| k.name() == name)
    }
}

/// An account's archiving preferences (XEP-0441): what is kept by
/// default, and the JIDs (bare or full, in canonical form) whose messages
/// are always kept and never kept whatever the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefs {
    pub default: Keep,
    pub always: Vec<String>,
    pub never: Vec<String>,
}

#[async_trait]
pub trait ArchiveStore {
    /// Appends `entries`, all or none; each archive is read in the order
    /// of its ids, whatever order they were appended in. Kept once this
    /// returns.
    async fn append(&self, entries: &[Entry]) -> Result<()>;

    /// At most `max` entries of `archive` that `filter` keeps, from `from`;
    /// `None` when an id it names is not in the archive.
    async fn page(&self, archive: &str, filter: &Filter, from: &Cursor, max: usize) -> Result<Option<Page>>;

    /// Forgets the entries taken before `before` (microseconds), in every
    /// archive; how many.
    async fn trim(&self, before: i64) -> Result<u64>;

    /// Forgets all but the newest `keep` entries of every archive; how
    /// many it forgot.
    async fn cap(&self, keep: u64) -> Result<u64>;

    /// Forgets `archive` whole, and for an account's, its preferences.
    async fn forget_archive(&self, archive: &str) -> Result<()>;

    /// The archiving preferences of the account `user` (a bare JID);
    /// `None` if it never set any.
    async fn prefs(&self, user: &str) -> Result<Option<Prefs>>;

    /// Sets `user`'s archiving preferences. Kept once this returns.
    async fn set_prefs(&self, user: &str, prefs: &Prefs) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ids_time_bounds_the_ids_of_a_time_range() {
        let at = 0x1234_5678_9abc;
        let id = id_of(at, 7);
        assert_eq!((id.len(), &id[..13]), (21, "0123456789abc"));
        let (from, below) = id_bounds(Some(at), Some(at));
        let (from, below) = (from.unwrap(), below.unwrap());
        assert!(from.as_str() <= id.as_str() && id.as_str() < below.as_str());
        assert_eq!(below, "0123456789abd");
        let (after, _) = id_bounds(Some(at + 1), None);
        assert!(id < after.unwrap(), "a microsecond later");
        // Times an id cannot carry bound nothing.
        assert_eq!(id_bounds(Some(-5), Some(LATEST_ID_TIME)), (None, None));
        assert_eq!(id_bounds(Some(0), Some(-1)), (None, None));
        assert_eq!(id_bounds(Some(LATEST_ID_TIME + 1), None), (None, None));
        assert_eq!(id_of(i64::MAX, 0)[..13], id_of(LATEST_ID_TIME, 0)[..13]);
    }

    #[test]
    fn ids_rise_in_the_order_they_are_taken_and_carry_their_time() {
        let clock = IdClock::new();
        let mut made = vec![clock.next(1_800_000_000_000_000)];
        // The same microsecond, a clock set back, then a later time.
        made.push(clock.next(1_800_000_000_000_000));
        made.push(clock.next(1_700_000_000_000_000));
        made.push(clock.next(1_800_000_000_000_005));
        for pair in made.windows(2) {
            assert!(pair[0].1 < pair[1].1, "{pair:?}");
        }
        let times: Vec<i64> = made.iter().map(|(at, _)| *at).collect();
        assert_eq!(times, [1_800_000_000_000_000, 1_800_000_000_000_000, 1_800_000_000_000_000, 1_800_000_000_000_005], "a clock set back does not take the time back");
        for (at, id) in &made {
            assert_eq!(id[..13], format!("{at:013x}"));
        }
        let tail = |n: usize| u32::from_str_radix(&made[n].1[13..], 16).unwrap();
        assert_eq!((tail(1), tail(2)), (tail(0) + 1, tail(0) + 2), "within a microsecond the tail counts");
        assert!(tail(0) < 1 << 31 && tail(3) < 1 << 31, "a new time's tail leaves room to count");
    }

    #[test]
    fn ids_rise_above_ones_other_nodes_made_unless_those_are_far_ahead() {
        let clock = IdClock::new();
        let now = 1_800_000_000_000_000;
        // Another node's clock is 2 s ahead: an id of its, then one here.
        let theirs = id_of(now + 2_000_000, 77);
        clock.observe(&theirs, now);
        let (at, ours) = clock.next(now);
        assert!(ours > theirs, "{ours} after {theirs}");
        assert_eq!(at, now + 2_000_001, "the next microsecond: {ours}");
        assert!(u32::from_str_radix(&ours[13..], 16).unwrap() < 1 << 31, "a random tail: {ours}");
        // An older id moves nothing back.
        clock.observe(&id_of(now - 1, 5), now);
        assert!(clock.next(now).1 > ours);
        // Far ahead, or not an id made so: ignored.
        let (_, before) = clock.next(now + 2_000_001);
        for odd in [id_of(now + OBSERVED_AHEAD + 1, 0), "01".into(), "+00000000000000000001".into(), format!("{before}0"), String::new()] {
            clock.observe(&odd, now);
        }
        let (at, after) = clock.next(now + 2_000_002);
        assert_eq!(at, now + 2_000_002, "{before} then {after}");
    }

    #[test]
    fn a_node_behind_does_not_make_the_ids_another_node_counts_to() {
        let (ahead, behind) = (IdClock::new(), IdClock::new());
        let now = 1_800_000_000_000_000;
        // Two entries in one microsecond on the node ahead; the node 5 ms
        // behind is given the first, then makes ids of its own before the
        // second reaches it.
        let first = ahead.next(now).1;
        let second = ahead.next(now).1;
        behind.observe(&first, now - 5_000);
        let ours: Vec<String> = (0..1000).map(|_| behind.next(now - 5_000).1).collect();
        assert!(!ours.contains(&second), "{second} made on both nodes");
        assert!(ours.iter().all(|id| *id > first && id[..13] > first[..13]), "{ours:?} after {first}");
    }
}
