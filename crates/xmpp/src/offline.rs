//! Offline messages (XEP-0160): a `chat` or `normal` message with a body,
//! to an account with no available resource, is kept in the store with a
//! delay stamp (XEP-0203) saying when the server received it, and given to
//! the account's first resource to send available presence with a
//! non-negative priority. At most `limit` wait for one account; past it
//! the sender is answered `service-unavailable` (RFC 6121 §8.5.2.1.1).

use std::sync::Arc;
use std::time::SystemTime;

use store::Store;
use wire::xmpp::Element;

use super::ns;

/// XEP-0203's namespace.
pub const DELAY: &str = "urn:xmpp:delay";

#[derive(Debug)]
pub struct Offline {
    store: Arc<dyn Store>,
    /// Messages kept for one account at most (`--xmpp-offline-limit`); 0 keeps none.
    pub limit: usize,
}

/// What became of a message to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// In the store.
    Stored,
    /// The account has `limit` waiting already.
    Full,
    /// The store failed (logged).
    Failed,
}

impl Offline {
    pub fn new(store: Arc<dyn Store>, limit: usize) -> Offline {
        Offline { store, limit }
    }

    /// Whether `message` (of type `kind`) is one to keep for an account
    /// that is offline.
    pub fn keeps(&self, kind: &str, message: &Element) -> bool {
        self.limit > 0 && matches!(kind, "chat" | "normal") && message.find("body", ns::CLIENT).is_some()
    }

    /// Keeps `message` for the account `user` (a bare JID), from `from`,
    /// stamped by `domain` with the time now.
    pub async fn keep(&self, user: &str, from: &str, domain: &str, message: &Element) -> Kept {
        let mut kept = message.clone();
        kept.attrs.retain(|(n, _)| n != "from");
        kept.attrs.push(("from".into(), from.to_owned()));
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        kept = kept.child(Element::new("delay", DELAY).attr("from", domain).attr("stamp", &stamp));
        match self.store.keep(user, &kept.to_xml_standalone(), self.limit).await {
            Ok(true) => Kept::Stored,
            Ok(false) => Kept::Full,
            Err(e) => {
                tracing::warn!("xmpp: offline message for {user} not kept: {e}");
                Kept::Failed
            }
        }
    }

    /// The messages kept for `user`, oldest first, taken out of the store.
    pub async fn take(&self, user: &str) -> Result<Vec<Element>, store::Error> {
        let texts = self.store.take(user).await.inspect_err(|e| tracing::warn!("xmpp: offline messages for {user} not read: {e}"))?;
        Ok(texts.iter().filter_map(|text| wire::xmpp::standalone(text)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kept_message_comes_back_stamped_from_its_sender_once() {
        let offline = Offline::new(Arc::new(store::MemoryStore::default()), 2);
        let message = Element::new("message", ns::CLIENT).attr("to", "b@l").attr("type", "chat").child(Element::new("body", ns::CLIENT).text("hi & <bye>"));
        assert!(offline.keeps("chat", &message) && offline.keeps("normal", &message));
        assert!(!offline.keeps("headline", &message) && !offline.keeps("groupchat", &message));
        assert!(!offline.keeps("chat", &Element::new("message", ns::CLIENT)), "no body: a chat state, say");
        assert_eq!(offline.keep("b@l", "a@l/desk", "l", &message).await, Kept::Stored);
        assert_eq!(offline.keep("b@l", "a@l/desk", "l", &message).await, Kept::Stored);
        assert_eq!(offline.keep("b@l", "a@l/desk", "l", &message).await, Kept::Full);
        let back = offline.take("b@l").await.unwrap();
        assert_eq!(back.len(), 2);
        let xml = back[0].to_xml(ns::CLIENT);
        let stamp = back[0].find("delay", DELAY).unwrap().get("stamp").unwrap().to_owned();
        assert!(humantime::parse_rfc3339(&stamp).is_ok(), "{stamp}");
        assert_eq!(
            xml,
            format!("<message to=\"b@l\" type=\"chat\" from=\"a@l/desk\"><body>hi &amp; &lt;bye&gt;</body><delay xmlns=\"urn:xmpp:delay\" from=\"l\" stamp=\"{stamp}\"/></message>")
        );
        assert!(offline.take("b@l").await.unwrap().is_empty());
    }
}
