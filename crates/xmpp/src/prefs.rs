//! Archiving preferences (XEP-0441): which messages each user's archive
//! keeps, as the user said with `<prefs/>` (`session::mam`). Every
//! message archived between users asks for both parties', so they are
//! read from the store once and known here a while ([`KNOWN_FOR`]), as a
//! user that never set any is: another node's change reaches this one by
//! word from that node (`nodes`) or, were the word lost, at the latest
//! when what is known here runs out.

use std::collections::HashMap;
use std::sync::Arc;
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

/// Users whose preferences are known at once, at most: past it, what is
/// known is forgotten and read again as needed.
const MOST_KNOWN: usize = 65_536;

/// The namespace of a node's word that a user's preferences changed
/// (`<prefs/>`, to the user's bare JID).
pub const CHANGED: &str = "urn:switchboard:mam-prefs-changed";

/// Each user's preferences as last read or set here.
pub(crate) struct Preferences {
    store: Arc<dyn Store>,
    known: Mutex<HashMap<String, (Arc<Prefs>, Instant)>>,
}

/// Whether `prefs` keep a message with `peer`: the `to` of a message the
/// user sent, the `from` of one it was sent (XEP-0441 §2.3). A listed
/// full JID is that JID only; a listed bare JID, all of its resources. The
/// most precise listing decides; where one JID is listed both ways, never.
/// `None` when it is the roster's to say (a default of `roster`).
pub fn keeps(prefs: &Prefs, peer: &Jid) -> Option<bool> {
    let full = peer.to_string();
    let bare = peer.bare().to_string();
    for jid in [&full, &bare] {
        if prefs.never.contains(jid) {
            return Some(false);
        }
        if prefs.always.contains(jid) {
            return Some(true);
        }
    }
    match prefs.default {
        Keep::Always => Some(true),
        Keep::Never => Some(false),
        Keep::Roster => None,
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
        let mut jids: Vec<String> = Vec::new();
        for listed in prefs.find(name, MAM).into_iter().flat_map(|list| list.elements()).filter(|e| e.name == "jid" && e.ns == MAM) {
            let jid = Jid::parse(listed.text_content().trim()).ok_or("jid-malformed")?.to_string();
            if !jids.contains(&jid) {
                jids.push(jid);
            }
        }
        if jids.len() > limit {
            return Err("not-acceptable");
        }
        Ok(jids)
    };
    Ok(Prefs { default, always: list("always")?, never: list("never")? })
}

impl Preferences {
    pub fn new(store: Arc<dyn Store>) -> Preferences {
        Preferences { store, known: Mutex::new(HashMap::new()) }
    }

    /// `user`'s preferences (a bare JID): the defaults if it set none.
    pub async fn of(&self, user: &str) -> store::Result<Arc<Prefs>> {
        if let Some((prefs, at)) = self.known.lock().get(user)
            && at.elapsed() < KNOWN_FOR
        {
            return Ok(prefs.clone());
        }
        let prefs = Arc::new(self.store.prefs(user).await?.unwrap_or_default());
        self.know(user, prefs.clone());
        Ok(prefs)
    }

    /// Sets `user`'s preferences: kept in the store, then known here.
    pub async fn set(&self, user: &str, prefs: Prefs) -> store::Result<()> {
        self.store.set_prefs(user, &prefs).await?;
        self.know(user, Arc::new(prefs));
        Ok(())
    }

    /// Forgets what is known of `user`'s preferences: they changed
    /// elsewhere, or the account is gone.
    pub fn forget(&self, user: &str) {
        self.known.lock().remove(user);
    }

    fn know(&self, user: &str, prefs: Arc<Prefs>) {
        let mut known = self.known.lock();
        if known.len() >= MOST_KNOWN && !known.contains_key(user) {
            known.retain(|_, (_, at)| at.elapsed() < KNOWN_FOR);
            if known.len() >= MOST_KNOWN {
                known.clear();
            }
        }
        known.insert(user.to_owned(), (prefs, Instant::now()));
    }
}

impl std::fmt::Debug for Preferences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preferences").field("known", &self.known.lock().len()).finish()
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
        let prefs = Prefs {
            default: Keep::Roster,
            always: vec!["romeo@l".into(), "nurse@l/balcony".into(), "both@l".into()],
            never: vec!["romeo@l/phone".into(), "nurse@l".into(), "both@l".into()],
        };
        assert_eq!(keeps(&prefs, &jid("romeo@l/laptop")), Some(true), "a bare JID listed covers its resources");
        assert_eq!(keeps(&prefs, &jid("romeo@l/phone")), Some(false), "a full JID listed is more precise");
        assert_eq!(keeps(&prefs, &jid("nurse@l/balcony")), Some(true));
        assert_eq!(keeps(&prefs, &jid("nurse@l/kitchen")), Some(false));
        assert_eq!(keeps(&prefs, &jid("nurse@l")), Some(false));
        assert_eq!(keeps(&prefs, &jid("both@l/x")), Some(false), "listed both ways: never");
        assert_eq!(keeps(&prefs, &jid("tybalt@l")), None, "the roster says");
        for (default, kept) in [(Keep::Always, Some(true)), (Keep::Never, Some(false))] {
            assert_eq!(keeps(&Prefs { default, ..Prefs::default() }, &jid("tybalt@l/x")), kept);
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
        assert_eq!(preferences.of("a@l").await.unwrap().default, Keep::Never);
        assert_eq!(preferences.of("b@l").await.unwrap().default, Keep::Always, "none set: the defaults");
        // Changed behind its back (another node): known here until told.
        store.set_prefs("a@l", &Prefs::default()).await.unwrap();
        assert_eq!(preferences.of("a@l").await.unwrap().default, Keep::Never);
        preferences.forget("a@l");
        assert_eq!(preferences.of("a@l").await.unwrap().default, Keep::Always);
        preferences.set("b@l", Prefs { default: Keep::Roster, ..Prefs::default() }).await.unwrap();
        assert_eq!(store.prefs("b@l").await.unwrap().map(|p| p.default), Some(Keep::Roster));
        assert_eq!(preferences.of("b@l").await.unwrap().default, Keep::Roster);
    }
}
