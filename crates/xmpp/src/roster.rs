//! Rosters and presence subscriptions (RFC 6121 §2, §3), in memory: a
//! user's contacts and the subscription state with each, kept while the
//! server runs (lost at restart), and the subscription requests waiting
//! for an answer.

use std::collections::HashMap;

use parking_lot::Mutex;
use wire::xmpp::Element;

use super::ns;

/// Whose presence goes where (RFC 6121 §2.1.2.5): `to` the user sees the
/// contact's, `from` the contact sees the user's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subscription {
    pub to: bool,
    pub from: bool,
}

impl Subscription {
    pub fn name(self) -> &'static str {
        match (self.to, self.from) {
            (false, false) => "none",
            (true, false) => "to",
            (false, true) => "from",
            (true, true) => "both",
        }
    }
}

/// One roster item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contact {
    /// The contact's bare JID.
    pub jid: String,
    pub name: Option<String>,
    pub groups: Vec<String>,
    pub subscription: Subscription,
    /// The user asked to see the contact's presence and has no answer yet.
    pub ask: bool,
}

impl Contact {
    /// The `<item/>` of a roster result or push.
    pub fn item(&self) -> Element {
        let mut item = Element::new("item", ns::ROSTER).attr("jid", &self.jid).attr("subscription", self.subscription.name());
        if let Some(name) = &self.name {
            item = item.attr("name", name);
        }
        if self.ask {
            item = item.attr("ask", "subscribe");
        }
        for group in &self.groups {
            item = item.child(Element::new("group", ns::ROSTER).text(group));
        }
        item
    }

    /// The `<item subscription='remove'/>` of a push for a removed contact.
    pub fn removed(jid: &str) -> Element {
        Element::new("item", ns::ROSTER).attr("jid", jid).attr("subscription", "remove")
    }
}

/// Every user's roster, by the user's bare JID.
#[derive(Debug)]
pub struct Rosters {
    users: Mutex<HashMap<String, User>>,
    /// Contacts at most in one roster, and subscription requests at most
    /// waiting for one user (`--xmpp-list-limit`).
    limit: usize,
}

#[derive(Debug, Default)]
struct User {
    contacts: Vec<Contact>,
    /// Subscription requests not yet answered: the requester's bare JID
    /// and its request.
    pending: Vec<(String, Element)>,
}

/// The most of a subscription request kept while it waits (its `<status/>`
/// and other children count; its attributes are JIDs, bounded anyway).
pub const REQUEST_BYTES: usize = 1024;

/// The roster is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

impl Rosters {
    pub fn new(limit: usize) -> Rosters {
        Rosters { users: Mutex::new(HashMap::new()), limit }
    }

    pub fn contacts(&self, user: &str) -> Vec<Contact> {
        self.users.lock().get(user).map(|u| u.contacts.clone()).unwrap_or_default()
    }

    pub fn contact(&self, user: &str, jid: &str) -> Option<Contact> {
        self.users.lock().get(user)?.contacts.iter().find(|c| c.jid == jid).cloned()
    }

    /// Changes (or adds, when `add`) the contact `jid` of `user`; the
    /// contact as it is after, if it is there.
    pub fn update(&self, user: &str, jid: &str, add: bool, change: impl FnOnce(&mut Contact)) -> Result<Option<Contact>, Full> {
        let mut users = self.users.lock();
        // Only an addition may make a roster: a change to one that is not
        // there must not leave an empty one behind.
        let entry = match users.get_mut(user) {
            Some(entry) => entry,
            None if !add => return Ok(None),
            None => users.entry(user.to_owned()).or_default(),
        };
        let at = match entry.contacts.iter().position(|c| c.jid == jid) {
            Some(at) => at,
            None if !add => return Ok(None),
            None if entry.contacts.len() >= self.limit => return Err(Full),
            None => {
                entry.contacts.push(Contact { jid: jid.to_owned(), ..Contact::default() });
                entry.contacts.len() - 1
            }
        };
        change(&mut entry.contacts[at]);
        Ok(Some(entry.contacts[at].clone()))
    }

    /// Takes the contact `jid` off `user`'s roster.
    pub fn remove(&self, user: &str, jid: &str) -> Option<Contact> {
        let mut users = self.users.lock();
        let entry = users.get_mut(user)?;
        let at = entry.contacts.iter().position(|c| c.jid == jid)?;
        entry.pending.retain(|(from, _)| from != jid);
        Some(entry.contacts.remove(at))
    }

    /// Keeps `request` from `from` until `user` answers it (one per
    /// requester, at most the limit), as at most [`REQUEST_BYTES`]: past
    /// that, only its attributes are kept, so what a requester can make the
    /// server hold for a user is bounded whatever it sends.
    pub fn hold(&self, user: &str, from: &str, mut request: Element) {
        if request.to_xml(ns::CLIENT).len() > REQUEST_BYTES {
            request.children.clear();
        }
        let mut users = self.users.lock();
        let entry = users.entry(user.to_owned()).or_default();
        entry.pending.retain(|(f, _)| f != from);
        if entry.pending.len() < self.limit {
            entry.pending.push((from.to_owned(), request));
        }
    }

    /// Subscription requests waiting for their users, in all.
    pub fn waiting(&self) -> usize {
        self.users.lock().values().map(|u| u.pending.len()).sum()
    }

    /// Forgets `from`'s request to `user`; whether there was one.
    pub fn answered(&self, user: &str, from: &str) -> bool {
        let mut users = self.users.lock();
        let Some(entry) = users.get_mut(user) else { return false };
        let before = entry.pending.len();
        entry.pending.retain(|(f, _)| f != from);
        entry.pending.len() != before
    }

    /// The requests waiting for `user`.
    pub fn pending(&self, user: &str) -> Vec<Element> {
        self.users.lock().get(user).map(|u| u.pending.iter().map(|(_, e)| e.clone()).collect()).unwrap_or_default()
    }

    /// Forgets `user`'s roster (an anonymous user's, when it goes).
    pub fn forget(&self, user: &str) {
        self.users.lock().remove(user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_to_the_byte() {
        let contact = Contact {
            jid: "bob@localhost".into(),
            name: Some("Bob".into()),
            groups: vec!["Friends".into()],
            subscription: Subscription { to: true, from: false },
            ask: false,
        };
        assert_eq!(
            contact.item().to_xml(ns::CLIENT),
            "<item xmlns=\"jabber:iq:roster\" jid=\"bob@localhost\" subscription=\"to\" name=\"Bob\"><group>Friends</group></item>"
        );
        let asking = Contact { jid: "cy@localhost".into(), ask: true, ..Contact::default() };
        assert_eq!(asking.item().to_xml(ns::ROSTER), "<item jid=\"cy@localhost\" subscription=\"none\" ask=\"subscribe\"/>");
    }

    #[test]
    fn a_roster_is_bounded_and_pending_requests_are_one_per_requester() {
        let rosters = Rosters::new(100);
        for i in 0..100 {
            rosters.update("a@l", &format!("c{i}@l"), true, |_| {}).unwrap();
        }
        assert_eq!(rosters.update("a@l", "more@l", true, |_| {}), Err(Full));
        assert!(rosters.update("a@l", "c1@l", true, |c| c.ask = true).unwrap().unwrap().ask, "changing one that is there");
        assert_eq!(rosters.update("a@l", "absent@l", false, |_| {}), Ok(None));
        let request = Element::new("presence", ns::CLIENT).attr("type", "subscribe");
        rosters.hold("b@l", "a@l", request.clone());
        rosters.hold("b@l", "a@l", request);
        assert_eq!(rosters.pending("b@l").len(), 1);
        assert!(rosters.answered("b@l", "a@l"));
        assert!(!rosters.answered("b@l", "a@l"));
        assert_eq!(rosters.update("nobody@l", "a@l", false, |_| {}), Ok(None));
        assert!(!rosters.users.lock().contains_key("nobody@l"), "a change to no roster makes none");
    }

    #[test]
    fn a_waiting_request_is_kept_within_its_byte_bound() {
        let rosters = Rosters::new(10);
        let short = Element::new("presence", ns::CLIENT).attr("type", "subscribe").child(Element::new("status", ns::CLIENT).text("hi"));
        rosters.hold("b@l", "a@l", short.clone());
        assert_eq!(rosters.pending("b@l"), [short]);
        let long = Element::new("presence", ns::CLIENT).attr("type", "subscribe").child(Element::new("status", ns::CLIENT).text(&"x".repeat(REQUEST_BYTES)));
        rosters.hold("b@l", "c@l", long);
        assert_eq!(rosters.pending("b@l")[1], Element::new("presence", ns::CLIENT).attr("type", "subscribe"));
        assert_eq!(rosters.waiting(), 2);
    }
}
