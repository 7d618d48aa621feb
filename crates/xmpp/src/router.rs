//! Where a stanza addressed to a JID goes. The router's local arm holds the
//! resources this server's users have bound; a JID of another domain has no
//! arm yet (federation adds the remote one), so nothing routes there.

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

    /// Registers a bound resource; `false` if that full JID is taken.
    pub fn bind(&self, jid: &Jid, outbox: Arc<Outbox>, framing: Framing) -> bool {
        let (bare, name) = (jid.bare().to_string(), jid.resource.clone().unwrap_or_default());
        let mut local = self.local.lock();
        let resources = local.entry(bare).or_default();
        if resources.iter().any(|r| r.name == name) {
            return false;
        }
        resources.push(Resource { name, outbox, framing, presence: None });
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

    /// Keeps the resource `jid`'s current presence (`None`: unavailable).
    pub fn set_presence(&self, jid: &Jid, presence: Option<Element>) {
        let mut local = self.local.lock();
        let Some(resources) = local.get_mut(&jid.bare().to_string()) else { return };
        if let Some(r) = resources.iter_mut().find(|r| Some(&r.name) == jid.resource.as_ref()) {
            r.presence = presence;
        }
    }

    /// The available resources of the user `bare`.
    pub fn available(&self, bare: &str) -> Vec<Available> {
        let local = self.local.lock();
        let Some(resources) = local.get(bare) else { return Vec::new() };
        resources
            .iter()
            .filter_map(|r| {
                let presence = r.presence.clone()?;
                Some(Available { jid: format!("{bare}/{}", r.name), presence, target: (r.outbox.clone(), r.framing) })
            })
            .collect()
    }

    /// Every bound resource of the user `bare`, with its full JID.
    pub fn resources(&self, bare: &str) -> Vec<(String, Target)> {
        let local = self.local.lock();
        let Some(resources) = local.get(bare) else { return Vec::new() };
        resources.iter().map(|r| (format!("{bare}/{}", r.name), (r.outbox.clone(), r.framing))).collect()
    }

    /// Where a stanza to `to` goes: that resource, or every resource of a
    /// bare JID; nowhere for a JID of another domain.
    pub fn route(&self, to: &Jid) -> Vec<Target> {
        if to.domain != self.domain {
            return Vec::new();
        }
        let local = self.local.lock();
        let Some(resources) = local.get(&to.bare().to_string()) else { return Vec::new() };
        resources.iter().filter(|r| to.resource.as_ref().is_none_or(|want| *want == r.name)).map(|r| (r.outbox.clone(), r.framing)).collect()
    }
}
