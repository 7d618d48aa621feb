//! Archiving preferences (XEP-0441): which messages each user's archive
//! keeps, as the user said with `<prefs/>` (`session::mam`). Every
//! message archived between users asks for both parties', so they are
//! read from the store once and known here a while ([`KNOWN_FOR`]), as a
//! user that never set any is: another node's change reaches this one by
//! word from that node (`nodes`) or, were the word lost, at the latest
//! when what is known here runs out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use store::{Keep, Prefs, Store};
use tokio::time::Instant;
use wire::xmpp::{Element, Jid};

use crate::archive::MAM;

/// How long a user's preferences read from the store are taken as they
/// were: a change made on another node whose word was lost holds here
/// after this at the latest.
pub const KNOWN_FOR: Duration = Duration::from_secs(60);

/// Users whose preferences are known at once, at most, and JIDs listed in
/// them all: past either, what ran out is forgotten, then everything, and
/// read again as needed.
const MOST_KNOWN: usize = 65_536;
const MOST_LISTED: usize = 1 << 20;

/// The namespace of a node's word that a user's preferences changed
/// (`<prefs/>`, to the user's bare JID).
pub const CHANGED: &str = "urn:switchboard:mam-prefs-changed";

/// A user's preferences as known here: the lists as sets, for the
/// lookups each archived message makes.
#[derive(Debug)]
pub struct Known {
    pub prefs: Prefs,
    always: HashSet<String>,
    never: HashSet<String>,
}

impl Known {
    pub fn new(prefs: Prefs) -> Known {
        let set = |jids: &[String]| jids.iter().cloned().collect();
        Known { always: set(&prefs.always), never: set(&prefs.never), prefs }
    }

    fn listed(&self) -> usize {
        self.prefs.always.len() + self.prefs.never.len()
    }

    /// Whether these preferences keep a message with `peer`: the `to` of
    /// a message the user sent, the `from` of one it was sent (XEP-0441
    /// §2.3). A listed full JID is that JID only; a listed bare JID, all
    /// of its resources. The most precise listing decides; where one JID
    /// is listed both ways, never. `None` when it is the roster's to say
    /// (a default of `roster`).
    pub fn keeps(&self, peer: &Jid) -> Option<bool> {
        let full = peer.to_string();
        let bare = peer.bare().to_string();
        for jid in [&full, &bare] {
            if self.never.contains(jid) {
                return Some(false);
            }
            if self.always.contains(jid) {
                return Some(true);
            }
        }
        match self.prefs.default {
            Keep::Always => Some(true),
            Keep::Never => Some(false),
            Keep::Roster => None,
        }
    }
}

/// `prefs` as XEP-0441's `<prefs/>` says them: both lists, even empty.
pub fn element(prefs: &Prefs) -> Element {
    let list = |name: &str, jids: &[String]| jids.iter().fold(Element::new(name, MAM), |list, jid| list.child(Element::new("jid", MAM).text(jid)));
    Element::new("prefs", MAM).attr("default", prefs.default.name()).child(list("always", &prefs.always)).child(list("never", &prefs.never))
}

/// The preferences a client's `<prefs/>` asks for, each JID in canonical
/// form, a JID listed twice in a list once; at most `limit` JIDs a list.
/// The condition of the error it gets otherwise: `bad-request` for a
/// missing or unknown default, `jid-malformed` for a JID that is not one,
/// `not-acceptable` for a list past the limit.
pub fn parse(prefs: &Element, limit: usize) -> Result<Prefs, &'static str> {
    let default = prefs.get("default").and_then(Keep::parse).ok_or("bad-request")?;
    let list = |name: &str| -> Result<Vec<String>, &'static str> {
        let (mut jids, mut seen) = (Vec::new(), HashSet::new());
        for listed in prefs.find(name, MAM).into_iter().flat_map(|list| list.elements()).filter(|e| e.name == "jid" && e.ns == MAM) {
            let jid = Jid::parse(listed.text_content().trim()).ok_or("jid-malformed")?.to_string();
            if seen.insert(jid.clone()) {
                if jids.len() == limit {
                    return Err("not-acceptable");
                }
                jids.push(jid);
            }
        }
        Ok(jids)
    };
    Ok(Prefs { default, always: list("always")?, never: list("never")? })
}

/// Each user's preferences as last read or set here.
pub(crate) struct Preferences {
    store: Arc<dyn Store>,
    known: Mutex<Memo>,
    /// Sets and forgets so far: a read from the store that one overtook
    /// is not taken as known.
    changes: AtomicU64,
}

#[derive(Default)]
struct Memo {
    users: HashMap<String, (Arc<Known>, Instant)>,
    listed: usize,
}

impl Preferences {
    pub fn new(store: Arc<dyn Store>) -> Preferences {
        Preferences { store, known: Mutex::new(Memo::default()), changes: AtomicU64::new(0) }
    }

    /// `user`'s preferences (a bare JID): the defaults if it set none.
    pub async fn of(&self, user: &str) -> store::Result<Arc<Known>> {
        if let Some((known, at)) = self.known.lock().users.get(user)
            && at.elapsed() < KNOWN_FOR
        {
            return Ok(known.clone());
        }
        let before = self.changes.load(Ordering::Acquire);
        let known = Arc::new(Known::new(self.store.prefs(user).await?.unwrap_or_default()));
        let mut memo = self.known.lock();
        // A set or forget while this read: what it read may be older.
        if self.changes.load(Ordering::Acquire) == before {
            memo.insert(user, known.clone());
        }
        Ok(known)
    }

    /// Sets `user`'s preferences: kept in the store, then known here.
    pub async fn set(&self, user: &str, prefs: Prefs) -> store::Result<()> {
        self.changes.fetch_add(1, Ordering::AcqRel);
        let stored = self.store.set_prefs(user, &prefs).await;
        let mut memo = self.known.lock();
        self.changes.fetch_add(1, Ordering::AcqRel);
        match stored {
            Ok(()) => memo.insert(user, Arc::new(Known::new(prefs))),
            Err(_) => memo.remove(user),
        }
        stored
    }

    /// Forgets what is known of `user`'s preferences: they changed
    /// elsewhere, or the account is gone.
    pub fn forget(&self, user: &str) {
        let mut memo = self.known.lock();
        self.changes.fetch_add(1, Ordering::AcqRel);
        memo.remove(user);
    }
}

impl Memo {
    fn insert(&mut self, user: &str, known: Arc<Known>) {
        self.remove(user);
        if self.users.len() >= MOST_KNOWN || self.listed + known.listed() > MOST_LISTED {
            self.users.retain(|_, (_, at)| at.elapsed() < KNOWN_FOR);
            self.listed = self.users.values().map(|(known, _)| known.listed()).sum();
            if self.users.len() >= MOST_KNOWN || self.listed + known.listed() > MOST_LISTED {
                self.users.clear();
                self.listed = 0;
            }
        }
        self.listed += known.listed();
        self.users.insert(user.to_owned(), (known, Instant::now()));
    }

    fn remove(&mut self, user: &str) {
        if let Some((known, _)) = self.users.remove(user) {
            self.listed -= known.listed();
        }
    }
}

impl std::fmt::Debug for Preferences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preferences").field("known", &self.known.lock().users.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jid(text: &str) -> Jid {
        Jid::parse(text).unwrap()
    }

    #[test]
    fn the_most_precise_listing_decides_then_never_then_the_default() {
        let prefs = Known::new(Prefs {
            default: Keep::Roster,
            always: vec!["romeo@l".into(), "nurse@l/balcony".into(), "both@l".into()],
            never: vec!["romeo@l/phone".into(), "nurse@l".into(), "both@l".into()],
        });
        assert_eq!(prefs.keeps(&jid("romeo@l/laptop")), Some(true), "a bare JID listed covers its resources");
        assert_eq!(prefs.keeps(&jid("romeo@l/phone")), Some(false), "a full JID listed is more precise");
        assert_eq!(prefs.keeps(&jid("nurse@l/balcony")), Some(true));
        assert_eq!(prefs.keeps(&jid("nurse@l/kitchen")), Some(false));
        assert_eq!(prefs.keeps(&jid("nurse@l")), Some(false));
        assert_eq!(prefs.keeps(&jid("both@l/x")), Some(false), "listed both ways: never");
        assert_eq!(prefs.keeps(&jid("tybalt@l")), None, "the roster says");
        for (default, kept) in [(Keep::Always, Some(true)), (Keep::Never, Some(false))] {
            assert_eq!(Known::new(Prefs { default, ..Prefs::default() }).keeps(&jid("tybalt@l/x")), kept);
        }
    }

    #[test]
    fn a_clients_prefs_are_taken_in_canonical_form_and_bounded() {
        let asked = wire::xmpp::standalone(
            "<prefs xmlns='urn:xmpp:mam:2' default='roster'><always><jid>Romeo@L</jid><jid>romeo@l</jid><jid> nurse@l/Balcony </jid></always><never/></prefs>",
        )
        .unwrap();
        let prefs = parse(&asked, 2).unwrap();
        assert_eq!(prefs, Prefs { default: Keep::Roster, always: vec!["romeo@l".into(), "nurse@l/Balcony".into()], never: Vec::new() });
        assert_eq!(parse(&asked, 1), Err("not-acceptable"));
        assert_eq!(
            element(&prefs).to_xml_standalone(),
            r#"<prefs xmlns="urn:xmpp:mam:2" default="roster"><always><jid>romeo@l</jid><jid>nurse@l/Balcony</jid></always><never/></prefs>"#
        );
        for (text, condition) in [
            ("<prefs xmlns='urn:xmpp:mam:2'/>", "bad-request"),
            ("<prefs xmlns='urn:xmpp:mam:2' default='sometimes'/>", "bad-request"),
            ("<prefs xmlns='urn:xmpp:mam:2' default='always'><never><jid>a@b@c</jid></never></prefs>", "jid-malformed"),
        ] {
            assert_eq!(parse(&wire::xmpp::standalone(text).unwrap(), 10), Err(condition), "{text}");
        }
    }

    #[tokio::test]
    async fn preferences_are_read_once_and_set_through_the_store() {
        let store: Arc<dyn Store> = Arc::new(store::MemoryStore::default());
        store.set_prefs("a@l", &Prefs { default: Keep::Never, ..Prefs::default() }).await.unwrap();
        let preferences = Preferences::new(store.clone());
        assert_eq!(preferences.of("a@l").await.unwrap().prefs.default, Keep::Never);
        assert_eq!(preferences.of("b@l").await.unwrap().prefs.default, Keep::Always, "none set: the defaults");
        // Changed behind its back (another node): known here until told.
        store.set_prefs("a@l", &Prefs::default()).await.unwrap();
        assert_eq!(preferences.of("a@l").await.unwrap().prefs.default, Keep::Never);
        preferences.forget("a@l");
        assert_eq!(preferences.of("a@l").await.unwrap().prefs.default, Keep::Always);
        preferences.set("b@l", Prefs { default: Keep::Roster, ..Prefs::default() }).await.unwrap();
        assert_eq!(store.prefs("b@l").await.unwrap().map(|p| p.default), Some(Keep::Roster));
        assert_eq!(preferences.of("b@l").await.unwrap().prefs.default, Keep::Roster);
    }
}
