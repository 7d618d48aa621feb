//! Rosters and presence subscriptions (RFC 6121 §2, §3): a user's
//! contacts and the subscription state with each, and the subscription
//! requests waiting for an answer, kept in the store (`store::RosterStore`)
//! within XMPP's bounds. This is XMPP's side of them: the bounds, and the
//! XML of an item and of a waiting request.

use std::sync::Arc;

use store::{Change, Store, Updated};
use wire::xmpp::Element;

pub use store::Contact;

use super::ns;

/// The `<item/>` of a roster result or push.
pub fn item(contact: &Contact) -> Element {
    let mut item = Element::new("item", ns::ROSTER).attr("jid", &contact.jid).attr("subscription", contact.subscription.name());
    if let Some(name) = &contact.name {
        item = item.attr("name", name);
    }
    if contact.ask {
        item = item.attr("ask", "subscribe");
    }
    for group in &contact.groups {
        item = item.child(Element::new("group", ns::ROSTER).text(group));
    }
    item
}

/// The `<item subscription='remove'/>` of a push for a removed contact.
pub fn removed(jid: &str) -> Element {
    Element::new("item", ns::ROSTER).attr("jid", jid).attr("subscription", "remove")
}

/// Every user's roster, by the user's bare JID.
#[derive(Debug)]
pub struct Rosters {
    store: Arc<dyn Store>,
    /// Where a failure of the store is counted.
    context: Arc<base::Context>,
    /// Contacts at most in one roster, and subscription requests at most
    /// waiting for one user (`--xmpp-list-limit`).
    limit: usize,
}

/// The most of a subscription request kept while it waits (its `<status/>`
/// and other children count; its attributes are JIDs, bounded anyway).
pub const REQUEST_BYTES: usize = 1024;

/// Why a roster was not changed.
#[derive(Debug)]
pub enum Refused {
    /// The roster is full.
    Full,
    /// The store failed (logged where it did).
    Store,
}

impl Rosters {
    pub fn new(store: Arc<dyn Store>, context: Arc<base::Context>, limit: usize) -> Rosters {
        Rosters { store, context, limit }
    }

    /// `user`'s contacts (a failure of the store is logged here too).
    pub async fn contacts(&self, user: &str) -> Result<Vec<Contact>, store::Error> {
        self.store.contacts(user).await.inspect_err(|e| self.failed(e))
    }

    /// `user`'s contact `jid`; none when the store cannot be read.
    pub async fn contact(&self, user: &str, jid: &str) -> Option<Contact> {
        self.store.contact(user, jid).await.inspect_err(|e| self.failed(e)).ok().flatten()
    }

    /// Changes (or adds, when `add`) the contact `jid` of `user`; the
    /// contact as it is after, if it is there. Kept once this returns.
    pub async fn update(&self, user: &str, jid: &str, add: bool, mut change: impl FnMut(&mut Contact) + Send) -> Result<Option<Change>, Refused> {
        let updated = self.store.update(user, jid, add, self.limit, &mut change).await.map_err(|e| {
            self.failed(&e);
            Refused::Store
        })?;
        match updated {
            Updated::Changed(change) => Ok(Some(change)),
            Updated::Absent => Ok(None),
            Updated::Full => Err(Refused::Full),
        }
    }

    /// Takes the contact `jid` off `user`'s roster.
    pub async fn remove(&self, user: &str, jid: &str) -> Result<Option<Change>, store::Error> {
        self.store.remove_contact(user, jid).await.inspect_err(|e| self.failed(e))
    }

    /// Keeps `request` from `from` until `user` answers it (one per
    /// requester, at most the limit), as at most [`REQUEST_BYTES`]: past
    /// that, only its attributes are kept, so what a requester can make the
    /// server hold for a user is bounded whatever it sends.
    pub async fn hold(&self, user: &str, from: &str, mut request: Element) {
        if request.to_xml(ns::CLIENT).len() > REQUEST_BYTES {
            request.children.clear();
        }
        let _ = self.store.hold(user, from, &request.to_xml_standalone(), self.limit).await.inspect_err(|e| self.failed(e));
    }

    /// Subscription requests waiting for their users, in all.
    pub async fn waiting(&self) -> usize {
        self.store.waiting().await.inspect_err(|e| self.failed(e)).unwrap_or(0)
    }

    /// Forgets `from`'s request to `user`; whether there was one.
    pub async fn answered(&self, user: &str, from: &str) -> bool {
        self.store.answered(user, from).await.inspect_err(|e| self.failed(e)).unwrap_or(false)
    }

    /// The requests waiting for `user`.
    pub async fn pending(&self, user: &str) -> Vec<Element> {
        let kept = self.store.pending(user).await.inspect_err(|e| self.failed(e)).unwrap_or_default();
        kept.iter().filter_map(|text| wire::xmpp::standalone(text)).collect()
    }

    /// `user`'s roster version (RFC 6121 §2.6); none when the store cannot say.
    pub async fn version(&self, user: &str) -> Option<u64> {
        self.store.version(user).await.inspect_err(|e| self.failed(e)).ok()
    }

    /// Forgets `user`'s roster (an anonymous user's when it goes, or a
    /// removed account's).
    pub async fn forget(&self, user: &str) {
        let _ = self.store.forget(user).await.inspect_err(|e| self.failed(e));
    }

    /// Logs and counts a failure of the store.
    fn failed(&self, e: &store::Error) {
        tracing::warn!("xmpp: roster: {e}");
        self.context.metrics.store_failed("rosters");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::Subscription;

    fn rosters(limit: usize) -> Rosters {
        let bounds = base::Bounds {
            queue_limit: 1024,
            max_message_size: 1024,
            header_timeout: std::time::Duration::from_secs(1),
            idle_timeout: std::time::Duration::from_secs(1),
            ping_interval: std::time::Duration::from_secs(1),
        };
        Rosters::new(Arc::new(store::MemoryStore::default()), Arc::new(base::Context::new(bounds)), limit)
    }

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
            item(&contact).to_xml(ns::CLIENT),
            "<item xmlns=\"jabber:iq:roster\" jid=\"bob@localhost\" subscription=\"to\" name=\"Bob\"><group>Friends</group></item>"
        );
        let asking = Contact { jid: "cy@localhost".into(), ask: true, ..Contact::default() };
        assert_eq!(item(&asking).to_xml(ns::ROSTER), "<item jid=\"cy@localhost\" subscription=\"none\" ask=\"subscribe\"/>");
    }

    #[tokio::test]
    async fn a_roster_is_bounded_and_pending_requests_are_one_per_requester() {
        let rosters = rosters(100);
        for i in 0..100 {
            rosters.update("a@l", &format!("c{i}@l"), true, |_| {}).await.unwrap();
        }
        assert!(matches!(rosters.update("a@l", "more@l", true, |_| {}).await, Err(Refused::Full)));
        assert!(rosters.update("a@l", "c1@l", true, |c| c.ask = true).await.unwrap().unwrap().contact.ask, "changing one that is there");
        assert!(rosters.update("a@l", "absent@l", false, |_| {}).await.unwrap().is_none());
        let request = Element::new("presence", ns::CLIENT).attr("type", "subscribe");
        rosters.hold("b@l", "a@l", request.clone()).await;
        rosters.hold("b@l", "a@l", request).await;
        assert_eq!(rosters.pending("b@l").await.len(), 1);
        assert!(rosters.answered("b@l", "a@l").await);
        assert!(!rosters.answered("b@l", "a@l").await);
        assert!(rosters.update("nobody@l", "a@l", false, |_| {}).await.unwrap().is_none());
        assert!(rosters.contacts("nobody@l").await.unwrap().is_empty(), "a change to no roster makes none");
    }

    #[tokio::test]
    async fn a_waiting_request_is_kept_within_its_byte_bound_and_read_back_whole() {
        let rosters = rosters(10);
        let short = Element::new("presence", ns::CLIENT)
            .attr("type", "subscribe")
            .attr("from", "a@l")
            .child(Element::new("status", ns::CLIENT).text("hi <there> & \"you\""));
        rosters.hold("b@l", "a@l", short.clone()).await;
        assert_eq!(rosters.pending("b@l").await, [short]);
        let long = Element::new("presence", ns::CLIENT).attr("type", "subscribe").child(Element::new("status", ns::CLIENT).text(&"x".repeat(REQUEST_BYTES)));
        rosters.hold("b@l", "c@l", long).await;
        assert_eq!(rosters.pending("b@l").await[1], Element::new("presence", ns::CLIENT).attr("type", "subscribe"));
        assert_eq!(rosters.waiting().await, 2);
    }
}
