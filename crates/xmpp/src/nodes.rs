//! This domain's users on the other nodes, when several nodes share rooms
//! and a store: a stanza for a user goes to the resources this node holds
//! and, handed through the cluster (`OtherNodes`), to those the other nodes
//! hold, each of which routes it with its own router as it would a stanza
//! of its own (`Xmpp::from_other_node`). Each node picks among its own
//! resources: a `chat` message to a bare JID reaches the most available
//! resources of each node that holds some (RFC 6121 §8.5.2.1.1 leaves
//! the choice to the server).
//!
//! What crosses: messages (asked, when this node holds no resource for
//! them: the answer says whether to keep one offline), iqs to a resource
//! elsewhere (asked: none there is `service-unavailable`), presence
//! broadcasts, directed presence and subscription stanzas (with the
//! presence each node's resources send when a subscription is approved or
//! ends), probes for a contact's current presence (answered by presence
//! from the node that holds it, over its own stream when the prober is
//! another server's user), roster pushes and room invitations; and
//! for MUC, a room's state (configuration, affiliations, subject) after
//! each change, or its destruction, which a node that holds the room takes
//! as its own (`MucRooms::take_shared`), telling its occupants what the
//! change means for them.

use std::sync::Arc;
use std::time::Duration;

use hub::BoxFuture;
use wire::xmpp::Element;

use crate::router::MessageRoute;
use crate::claims::Claim;
use crate::room::{Affiliation, Role, Taken};
use crate::session::{Effect, set_role};
use crate::{Jid, Xmpp, ns};

/// The namespace of a room's state handed between nodes: `<room
/// name='…'>` with the state as JSON, or with the owner's `<destroy/>`.
pub const SHARED_ROOM: &str = "urn:switchboard:muc-room";

/// The namespace of a node's word that it kept a message offline for a
/// user (`<kept/>`): a node where the user is online gives it what is kept.
pub const KEPT: &str = "urn:switchboard:offline-kept";

/// How long a stanza that waits to know whether another node took it
/// waits for their answers.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// The other nodes of this node's cluster, as XMPP reaches them.
pub trait OtherNodes: Send + Sync + std::fmt::Debug {
    /// Hands `stanza` (one stanza's XML, with its namespace) for `to`
    /// (JIDs of this domain, bare or full) to every other node, in the
    /// order of the calls. With `patience`, how many resources it reached
    /// there, of the nodes that answered within it; without, 0 at once.
    fn carry(&self, to: Vec<Arc<str>>, stanza: Arc<str>, patience: Option<Duration>) -> BoxFuture<'static, usize>;
}

impl Xmpp {
    /// The JID of room `room` of the MUC service, or with `nick`, of that
    /// occupant of it.
    pub(crate) fn room_address(&self, room: &str, nick: Option<&str>) -> Jid {
        Jid { local: Some(room.to_owned()), domain: self.muc_domain.clone(), resource: nick.map(str::to_owned) }
    }

    /// The JID of room `room` of the MUC service, as text.
    pub(crate) fn room_jid(&self, room: &str) -> String {
        self.room_address(room, None).to_string()
    }

    /// Whether other nodes may hold this domain's users.
    pub(crate) fn has_other_nodes(&self) -> bool {
        self.nodes.is_some()
    }

    /// Hands `stanza` for `to` to the other nodes, without waiting for
    /// them to take it.
    pub(crate) async fn tell_others(&self, to: Vec<Arc<str>>, stanza: &Element) {
        if let Some(nodes) = &self.nodes
            && !to.is_empty()
        {
            nodes.carry(to, Arc::from(stanza.to_xml_standalone()), None).await;
        }
    }

    /// Hands `stanza` for `to` to the other nodes: how many resources it
    /// reached there.
    pub(crate) async fn ask_others(&self, to: &Jid, stanza: &Element) -> usize {
        match &self.nodes {
            Some(nodes) => nodes.carry(vec![Arc::from(to.to_string())], Arc::from(stanza.to_xml_standalone()), Some(PATIENCE)).await,
            None => 0,
        }
    }

    /// Claims the full JID `full` for a session binding it here, unless
    /// a session here claims it or another node holds it or has a claim
    /// that goes first (`claims`: of two nodes binding one JID at once,
    /// at most one binds it). The claim lasts until it binds
    /// ([`Claim::bind`]) or is dropped.
    pub(crate) async fn claim(&self, full: &Jid) -> Option<Claim> {
        if !self.has_other_nodes() {
            return Some(Claim::unneeded());
        }
        let (claim, token) = self.claims.claim(&full.to_string())?;
        let question = Element::new("bound", BOUND).attr("token", &token.to_string());
        (self.ask_others(full, &question).await == 0).then_some(claim)
    }

    /// Takes another node's `stanza` (XML) for `to` as this node's router
    /// would take one of its own: how many resources here it reached.
    ///
    /// - A message to a bare JID goes as RFC 6121 §8.5 says, and is never
    ///   kept offline here (the sending node keeps it when no node took
    ///   it); to a full JID, only to that resource (the sending node falls
    ///   back to the bare JID when no node has it); a room's invitation to
    ///   every resource, as here.
    /// - A user's presence to its own bare JID (a broadcast) goes to its
    ///   available resources; other presence to every resource.
    /// - A probe (only nodes send them: a client's is not handed on) is
    ///   answered with the current presence of each available resource
    ///   here; the sending node checked the subscription.
    /// - A subscription ended or approved also sends what RFC 6121 §3 has
    ///   the resources here send: unavailable presence from the side that
    ///   no longer shows it, current presence from the approver's.
    /// - An iq to a bare JID (a roster push) goes to each resource as its own.
    pub fn from_other_node(self: &Arc<Self>, to: &[Arc<str>], stanza: &str) -> usize {
        let Some(stanza) = wire::xmpp::standalone(stanza) else {
            tracing::debug!("xmpp: another node's stanza does not parse");
            return 0;
        };
        if stanza.name == "room" && stanza.ns == SHARED_ROOM {
            if let Some(role) = stanza.find("role", SHARED_ROOM) {
                return self.take_role(stanza.get("name").unwrap_or_default(), role);
            }
            if stanza.find("want", SHARED_ROOM).is_some() {
                return self.give_room(stanza.get("name").unwrap_or_default());
            }
            self.take_room(&stanza);
            return 0;
        }
        if stanza.name == "kept" && stanza.ns == KEPT {
            for user in to.iter().filter_map(|to| Jid::parse(to)).filter(|to| to.domain == self.domain) {
                let xmpp = self.clone();
                tokio::spawn(async move { xmpp.deliver_kept(&user.bare()).await });
            }
            return 0;
        }
        if stanza.name == "bound" && stanza.ns == BOUND {
            let token = stanza.get("token").and_then(|t| t.parse().ok());
            let full = to.iter().filter_map(|to| Jid::parse(to)).filter(|to| to.resource.is_some());
            return full.map(|to| self.claims.answer(&to.to_string(), token, || self.router.route(&to).len())).sum();
        }
        if stanza.name == "prefs" && stanza.ns == crate::prefs::CHANGED {
            for user in to {
                self.prefs.forget(user);
            }
            return 0;
        }
        if let Some(to) = to.first().and_then(|to| Jid::parse(to)).filter(|to| to.domain == self.muc_domain) {
            return self.to_occupant(&stanza, &to);
        }
        let from = stanza.get("from").and_then(Jid::parse);
        let from_bare = from.as_ref().map(|f| f.bare().to_string()).unwrap_or_default();
        let mut reached = 0;
        for to in to.iter().filter_map(|to| Jid::parse(to)).filter(|to| to.domain == self.domain && to.local.is_some()) {
            let bare = to.bare().to_string();
            let unavailable = || Element::new("presence", ns::CLIENT).attr("type", "unavailable");
            reached += match (stanza.name.as_str(), stanza.get("type")) {
                ("message", _) if to.resource.is_some() || from.as_ref().is_some_and(|f| f.domain == self.muc_domain) => push(&stanza, self.router.route(&to)),
                ("message", kind) => match self.router.route_message(&to, kind.unwrap_or("normal")) {
                    MessageRoute::To(targets) => push(&stanza, targets),
                    _ => 0,
                },
                ("presence", Some("probe")) => self.from_here(&bare, stanza.get("from").unwrap_or_default(), |current| current),
                ("presence", Some("unsubscribe")) => {
                    self.from_here(&bare, &from_bare, |_| unavailable());
                    push(&stanza, self.router.route(&to))
                }
                ("presence", Some("unsubscribed")) => {
                    self.from_here(&from_bare, &bare, |_| unavailable());
                    push(&stanza, self.router.route(&to))
                }
                ("presence", Some("subscribed")) => {
                    let reached = push(&stanza, self.router.route(&to));
                    self.from_here(&from_bare, &bare, |current| current);
                    reached
                }
                ("presence", None | Some("unavailable")) if from_bare == bare => push(&stanza, self.router.available(&bare).into_iter().map(|r| r.target).collect()),
                ("iq", _) if to.resource.is_none() => {
                    let mut reached = 0;
                    for (jid, (outbox, framing)) in self.router.resources(&bare) {
                        let mut own = stanza.clone();
                        own.attrs.retain(|(n, _)| n != "to");
                        own.attrs.push(("to".into(), jid));
                        reached += usize::from(outbox.push(framing.payload(&own)).is_ok());
                    }
                    reached
                }
                _ => push(&stanza, self.router.route(&to)),
            };
        }
        reached
    }

    /// Another node's private message or iq for the occupant `to` (a room
    /// JID with a nick): to its real JID, if this node holds it.
    fn to_occupant(&self, stanza: &Element, to: &Jid) -> usize {
        let (Some(room), Some(nick)) = (to.local.as_deref(), to.resource.as_deref()) else { return 0 };
        let Some(target) = self.muc.with(room, |r| r.occupant(nick).cloned()).flatten() else { return 0 };
        let mut routed = stanza.clone();
        routed.attrs.retain(|(n, _)| n != "to");
        routed.attrs.push(("to".into(), target.jid.to_string()));
        usize::from(target.outbox.push(target.framing.payload(&routed)).is_ok())
    }

    /// Another node's moderator gives the occupant `asked` names here a
    /// role (`<role nick='…' role='…' by='the moderator's affiliation'/>`),
    /// under the rules of `moderation::set_role`: 1 if done here.
    fn take_role(&self, room: &str, asked: &Element) -> usize {
        let (Some(nick), Some(role), Some(by)) = (asked.get("nick"), asked.get("role").and_then(Role::parse), asked.get("by").and_then(Affiliation::parse)) else { return 0 };
        let limit = self.list_limit;
        let done = self
            .muc
            .with(room, |r| {
                let target = r.occupant(nick).cloned()?;
                // As a moderator's change here keeps them.
                if r.departed.len() >= limit {
                    r.departed.clear();
                }
                Some(set_role(r, target, role, by))
            })
            .flatten();
        match done {
            Some(Ok(effect)) => {
                self.tell_effects(&Arc::from(room), &self.room_jid(room), vec![effect]);
                1
            }
            _ => 0,
        }
    }

    /// Hands room `name`'s state to the other nodes, after a change.
    pub(crate) async fn share_room(&self, name: &str) {
        if !self.has_other_nodes() {
            return;
        }
        if let Some(state) = self.muc.shared(name) {
            let shared = Element::new("room", SHARED_ROOM).attr("name", name).text(&state);
            self.tell_others(vec![self.room_jid(name).into()], &shared).await;
        }
    }

    /// Tells the other nodes that room `name` was destroyed, as the owner's
    /// `destroy` says.
    pub(crate) async fn share_destroyed(&self, name: &str, destroy: &Element) {
        if self.has_other_nodes() {
            let shared = Element::new("room", SHARED_ROOM).attr("name", name).child(destroy.clone());
            self.tell_others(vec![self.room_jid(name).into()], &shared).await;
        }
    }

    /// Asks the other nodes for room `name`'s state, which one that holds
    /// it hands back ([`Xmpp::give_room`]), before a first occupant here
    /// enters it: so that an owner's configuration and bans made elsewhere
    /// hold here. Waits at most [`PATIENCE`] for it.
    pub(crate) async fn fetch_room(&self, name: &str) {
        if !self.has_other_nodes() || self.muc.with(name, |_| ()).is_some() {
            return;
        }
        // One wait per room, shared by the joins that wait for it.
        let arrived = self.fetching.lock().entry(Arc::from(name)).or_insert_with(|| Arc::new(tokio::sync::Notify::new())).clone();
        let notified = arrived.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let want = Element::new("room", SHARED_ROOM).attr("name", name).child(Element::new("want", SHARED_ROOM));
        if self.ask_others(&self.room_address(name, None), &want).await > 0 {
            let _ = tokio::time::timeout(PATIENCE, notified).await;
        }
        let mut fetching = self.fetching.lock();
        if fetching.get(name).is_some_and(|waiting| Arc::ptr_eq(waiting, &arrived)) {
            fetching.remove(name);
        }
    }

    /// Another node wants room `name`'s state: handed to the other nodes
    /// if this node holds it (1), which takes it where it is wanted.
    fn give_room(self: &Arc<Self>, name: &str) -> usize {
        let Some(state) = self.muc.current(name) else { return 0 };
        self.hand_on(name, state);
        1
    }

    /// Hands room `name`'s `state` to the other nodes, after what this
    /// node is taking now.
    fn hand_on(self: &Arc<Self>, name: &str, state: String) {
        let xmpp = self.clone();
        let given = Element::new("room", SHARED_ROOM).attr("name", name).text(&state);
        let room_jid: Arc<str> = Arc::from(self.room_jid(name));
        tokio::spawn(async move { xmpp.tell_others(vec![room_jid], &given).await });
    }

    /// Takes another node's state of a room (`share_room`,
    /// `share_destroyed`, `give_room`), if this node holds the room (or
    /// waits for it, `fetch_room`), and tells its occupants here what it
    /// changed for them.
    fn take_room(self: &Arc<Self>, shared: &Element) {
        let Some(name) = shared.get("name").map(Arc::<str>::from) else { return };
        let room_jid = self.room_jid(&name);
        if let Some(destroy) = shared.find("destroy", ns::MUC_OWNER) {
            let occupants = self.muc.destroy(&name);
            return self.tell_destroyed(&name, &room_jid, occupants, destroy);
        }
        let waiting = self.fetching.lock().get(&name).cloned();
        if let Some(arrived) = waiting {
            match self.muc.adopt(&name, &shared.text_content()) {
                Ok(true) => return arrived.notify_waiters(),
                Ok(false) => {}
                Err(e) => return tracing::debug!("xmpp: another node's state of room {name:?} does not read: {e}"),
            }
        }
        let taken = match self.muc.take_shared(&name, &shared.text_content(), self.list_limit) {
            Ok(Some(Taken::Newer(taken))) => taken,
            // A node that missed a change catches up.
            Ok(Some(Taken::Older(mine))) => return self.hand_on(&name, mine),
            // Theirs and this node's, each with changes the other lacks,
            // joined: a new version, which this node keeps (the store keeps
            // the newest version whichever node's write comes last).
            Ok(Some(Taken::Merged(taken, merged))) => {
                self.hand_on(&name, merged);
                let (xmpp, kept, was) = (self.clone(), name.clone(), taken.before.persistent);
                self.context.tracker.spawn(async move { xmpp.keep_room(&kept, was).await });
                taken
            }
            Ok(None) => return,
            Err(e) => return tracing::debug!("xmpp: another node's state of room {name:?} does not read: {e}"),
        };
        let mut effects: Vec<Effect> = taken.removed.into_iter().map(|(o, affiliation, code)| Effect::Removed(o, affiliation, vec![code])).collect();
        effects.extend(taken.changed.into_iter().map(Effect::Changed));
        self.tell_effects(&name, &room_jid, effects);
        if taken.before != taken.after {
            self.announce_config(&name, &room_jid, &taken.before, &taken.after);
        }
        // A new subject is told by the room's topic event, in its order.
    }

    /// Sends, from each available resource of the user `of` this node
    /// holds, what `make` makes of its current presence to `to` (a JID):
    /// to `to`'s resources here and on the other nodes, or to its server
    /// when it is another's (a probe that came through federation). How
    /// many resources of `of` are here.
    fn from_here(self: &Arc<Self>, of: &str, to: &str, make: impl Fn(Element) -> Element) -> usize {
        let available = self.router.available(of);
        let Some(target) = Jid::parse(to).filter(|_| !available.is_empty()) else { return 0 };
        if self.is_remote(&target) {
            return available.into_iter().map(|r| self.send_remote(crate::stamped(make(r.presence), &r.jid, to.to_owned()))).filter(Result::is_ok).count();
        }
        // Another server's user, and this node does not federate.
        if !self.serves(&target.domain) {
            return 0;
        }
        let count = available.len();
        let targets = self.router.route(&target);
        let mut sent = Vec::with_capacity(count);
        for r in available {
            let stanza = crate::stamped(make(r.presence), &r.jid, to.to_owned());
            push(&stanza, targets.clone());
            sent.push(stanza);
        }
        // Handed on after this delivery (the answer loop takes one at a
        // time, and does not wait on a send).
        let (xmpp, to): (Arc<Xmpp>, Arc<str>) = (self.clone(), Arc::from(to));
        tokio::spawn(async move {
            for stanza in &sent {
                xmpp.tell_others(vec![to.clone()], stanza).await;
            }
        });
        count
    }
}

/// `stanza` as it is, to each target: how many took it.
fn push(stanza: &Element, targets: Vec<crate::Target>) -> usize {
    targets.into_iter().filter(|(outbox, framing)| outbox.push(framing.payload(stanza)).is_ok()).count()
}

/// The namespace of a node's question whether it holds a full JID
/// (`<bound/>`, to that JID): answered with how many resources it holds
/// under it, delivering nothing.
pub const BOUND: &str = "urn:switchboard:bound";

/// A node's word that it kept a message offline for the user it goes to.
pub(crate) fn kept() -> Element {
    Element::new("kept", KEPT)
}

/// A probe from `from` (a full JID) for the presence of the users `to`.
pub(crate) fn probe(from: &str) -> Element {
    Element::new("presence", ns::CLIENT).attr("type", "probe").attr("from", from)
}
