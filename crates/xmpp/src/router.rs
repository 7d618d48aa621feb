//! Where a stanza addressed to a JID goes. The router's local arm holds the
//! resources this server's users have bound; a JID of another domain is
//! federation's, the remote arm (`s2s`), which the session asks first
//! (`Xmpp::is_remote`), so nothing here routes there.

use std::collections::HashMap;
use std::sync::Arc;

use hub::Outbox;
use parking_lot::Mutex;
use wire::xmpp::{Element, Jid};

use super::session::Framing;

/// Where one stanza goes: an outbox, and the framing its transport needs.
pub(crate) type Target = (Arc<Outbox>, Framing);

/// An available resource of a user: its full JID, its current presence,
/// and where its stanzas go.
pub(crate) struct Available {
    pub jid: String,
    pub presence: Element,
    pub target: Target,
}

/// A bound resource: its name, where its stanzas go and how they are
/// framed there, and its presence once it has sent available presence.
struct Resource {
    name: String,
    outbox: Arc<Outbox>,
    framing: Framing,
    presence: Option<Element>,
    /// Logged in anonymously: a user with no account.
    anonymous: bool,
}

impl Resource {
    fn target(&self) -> Target {
        (self.outbox.clone(), self.framing)
    }
}

/// What becomes of a message to one of this server's users (RFC 6121 §8.5).
#[derive(Debug)]
pub(crate) enum MessageRoute {
    /// Carried to these resources.
    To(Vec<Target>),
    /// Answered `service-unavailable`, or kept for an offline account.
    Refused,
    /// Answered `service-unavailable`, never kept: a full JID's resource
    /// that is not there (RFC 6121 §8.5.3.2.1).
    Bounced,
    /// Dropped without an answer.
    Dropped,
}

pub(crate) struct Router {
    /// The domain served: the local arm's.
    domain: String,
    /// Bound resources of this server's users, by bare JID.
    local: Mutex<HashMap<String, Vec<Resource>>>,
}

impl Router {
    pub fn new(domain: String) -> Router {
        Router { domain, local: Mutex::new(HashMap::new()) }
    }

    /// Registers a bound resource (of a user with no account when
    /// `anonymous`); `false` if that full JID is taken.
    pub fn bind(&self, jid: &Jid, outbox: Arc<Outbox>, framing: Framing, anonymous: bool) -> bool {
        let (bare, name) = (jid.bare().to_string(), jid.resource.clone().unwrap_or_default());
        let mut local = self.local.lock();
        // Most users have one resource: room for one (a Resource is about
        // 140 bytes, and a Vec's first growth makes room for four).
        let resources = local.entry(bare).or_insert_with(|| Vec::with_capacity(1));
        if resources.iter().any(|r| r.name == name) {
            return false;
        }
        resources.push(Resource { name, outbox, framing, presence: None, anonymous });
        true
    }

    pub fn unbind(&self, jid: &Jid) {
        let bare = jid.bare().to_string();
        let mut local = self.local.lock();
        if let Some(resources) = local.get_mut(&bare) {
            resources.retain(|r| Some(&r.name) != jid.resource.as_ref());
            if resources.is_empty() {
                local.remove(&bare);
            }
        }
    }

    /// Whether the user `bare` has a bound resource.
    pub fn is_bound(&self, bare: &Jid) -> bool {
        self.local.lock().contains_key(&bare.bare().to_string())
    }

    /// Whether the user `bare` is bound as one with no account (anonymous).
    pub fn is_anonymous(&self, bare: &str) -> bool {
        self.local.lock().get(bare).is_some_and(|resources| resources.iter().any(|r| r.anonymous))
    }

    /// Keeps the resource `jid`'s current presence (`None`: unavailable).
    pub fn set_presence(&self, jid: &Jid, presence: Option<Element>) {
        let mut local = self.local.lock();
        let Some(resources) = local.get_mut(&jid.bare().to_string()) else { return };
        if let Some(r) = resources.iter_mut().find(|r| Some(&r.name) == jid.resource.as_ref()) {
            r.presence = presence;
        }
    }

    /// What `pick` takes of each bound resource of the user `bare`.
    fn each<T>(&self, bare: &str, pick: impl FnMut(&Resource) -> Option<T>) -> Vec<T> {
        self.local.lock().get(bare).map_or_else(Vec::new, |resources| resources.iter().filter_map(pick).collect())
    }

    /// The available resources of the user `bare`.
    pub fn available(&self, bare: &str) -> Vec<Available> {
        self.each(bare, |r| Some(Available { jid: format!("{bare}/{}", r.name), presence: r.presence.clone()?, target: r.target() }))
    }

    /// Every bound resource of the user `bare`, with its full JID.
    pub fn resources(&self, bare: &str) -> Vec<(String, Target)> {
        self.each(bare, |r| Some((format!("{bare}/{}", r.name), r.target())))
    }

    /// Where a message of type `kind` to `to` goes (RFC 6121 §8.5): to the
    /// resource a full JID names, if bound. To a resource that is not
    /// there, only a `chat` message goes on as to the bare JID; a
    /// `headline` or `error` is dropped, and any other bounced. To a bare
    /// JID, a `chat` or `normal` message goes to the
    /// available resources of the highest non-negative priority, a
    /// `headline` to every available resource of non-negative priority, and
    /// a `groupchat` one is refused. An `error` goes nowhere but to the
    /// resource it names; with nobody to take it, a message is refused, a
    /// `headline` dropped.
    pub fn route_message(&self, to: &Jid, kind: &str) -> MessageRoute {
        if to.domain != self.domain {
            return MessageRoute::Refused;
        }
        let local = self.local.lock();
        let resources = local.get(&to.bare().to_string()).map_or(&[][..], Vec::as_slice);
        if let Some(want) = &to.resource
            && let Some(r) = resources.iter().find(|r| r.name == *want)
        {
            return MessageRoute::To(vec![r.target()]);
        }
        if to.resource.is_some() && kind != "chat" {
            return if matches!(kind, "headline" | "error") { MessageRoute::Dropped } else { MessageRoute::Bounced };
        }
        let available: Vec<(i8, &Resource)> = resources.iter().filter_map(|r| Some((priority(r.presence.as_ref()?), r))).filter(|(p, _)| *p >= 0).collect();
        let top = available.iter().map(|(p, _)| *p).max();
        let chosen: Vec<Target> = match kind {
            "error" => return MessageRoute::Dropped,
            "groupchat" => return MessageRoute::Refused,
            "headline" if available.is_empty() => return MessageRoute::Dropped,
            "headline" => available.iter().map(|(_, r)| r.target()).collect(),
            _ => available.iter().filter(|(p, _)| Some(*p) == top).map(|(_, r)| r.target()).collect(),
        };
        if chosen.is_empty() { MessageRoute::Refused } else { MessageRoute::To(chosen) }
    }

    /// Where a stanza to `to` goes: that resource, or every resource of a
    /// bare JID; nowhere for a JID of another domain.
    pub fn route(&self, to: &Jid) -> Vec<Target> {
        if to.domain != self.domain {
            return Vec::new();
        }
        self.each(&to.bare().to_string(), |r| to.resource.as_ref().is_none_or(|want| *want == r.name).then(|| r.target()))
    }
}

/// A presence's priority (RFC 6121 §4.7.2.3): from -128 to 127, 0 when it
/// says none or nothing that fits.
pub(crate) fn priority(presence: &Element) -> i8 {
    presence.find("priority", wire::xmpp::ns::CLIENT).and_then(|p| p.text_content().trim().parse().ok()).unwrap_or(0)
}
