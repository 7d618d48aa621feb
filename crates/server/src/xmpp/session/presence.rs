//! Stanzas between users (RFC 6121): presence to the user's own other
//! resources and presence directed at other users, and messages and iqs
//! carried to other users' resources. There is no roster store, so nobody
//! subscribes to anyone's presence.

use wire::xmpp::Element;

use super::super::{Jid, Target};
use super::Session;

impl Session {
    /// Carries `stanza` to `to` (a user's resource, or every resource of a
    /// bare JID), from this session's full JID, each in its own framing;
    /// `service-unavailable` when nobody is there (RFC 6121 §8.5).
    pub(super) fn route_to_user(&mut self, stanza: &Element, to: &Jid) {
        let targets = self.xmpp.route(to);
        if targets.is_empty() {
            return self.refuse(stanza, "cancel", "service-unavailable");
        }
        self.carry(stanza, targets);
    }

    fn carry(&self, stanza: &Element, targets: Vec<Target>) {
        let mut routed = stanza.clone();
        routed.attrs.retain(|(n, _)| n != "from");
        routed.attrs.push(("from".into(), self.full_jid()));
        for (outbox, framing) in targets {
            let _ = outbox.push(framing.payload(&routed));
        }
    }

    /// Presence with no `to` (RFC 6121 §4.2, §4.5): to the user's other
    /// available resources; the first available presence also brings it
    /// theirs.
    pub(super) fn broadcast_presence(&mut self, presence: &Element) {
        let Some(me) = self.jid.clone() else { return };
        let available = match presence.get("type") {
            None => true,
            Some("unavailable") => false,
            // Subscriptions and probes need a roster, which there is not.
            Some(_) => return,
        };
        let first = available && !self.available;
        self.available = available;
        let others = self.xmpp.set_available(&me, available);
        if first {
            // Their current presence is not kept: a bare available stands for it.
            for (name, _) in &others {
                let theirs = Element::new("presence", super::ns::CLIENT).attr("from", &me.bare().with_resource(name).to_string()).attr("to", &me.to_string());
                self.send(&theirs);
            }
        }
        self.carry(presence, others.into_iter().map(|(_, target)| target).collect());
        if !available {
            self.end_directed();
        }
    }

    /// Presence directed at another user (RFC 6121 §4.6): to its resources
    /// that are online; remembered, so that it is told when this one goes.
    pub(super) fn direct_presence(&mut self, presence: &Element, to: &Jid) {
        match presence.get("type") {
            None if !self.directed.contains(to) && self.directed.len() < super::MAX_DIRECTED => self.directed.push(to.clone()),
            Some("unavailable") => self.directed.retain(|j| j != to),
            _ => {}
        }
        // Presence is not answered with errors (RFC 6121 §4.6.2): with
        // nobody there it is dropped.
        let targets = self.xmpp.route(to);
        self.carry(presence, targets);
    }

    /// Tells those this session directed presence at that it is gone.
    pub(super) fn end_directed(&mut self) {
        for to in std::mem::take(&mut self.directed) {
            let gone = Element::new("presence", super::ns::CLIENT).attr("type", "unavailable").attr("to", &to.to_string());
            self.carry(&gone, self.xmpp.route(&to));
        }
    }

    /// The session ends: its user's other resources and those it directed
    /// presence at see it go unavailable.
    pub(super) fn end_presence(&mut self) {
        if self.available {
            let gone = Element::new("presence", super::ns::CLIENT).attr("type", "unavailable");
            self.broadcast_presence(&gone);
        }
        self.end_directed();
    }
}
