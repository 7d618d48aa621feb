//! What a stanza from another server does here, once its stream has
//! checked its addresses: a message or presence to one of this server's
//! users goes to that user's resources as RFC 6121 says (or, a message for
//! an account that is offline, into its offline store), archived in that
//! user's archive as a local one would be (XEP-0313); subscription
//! requests and answers change the user's roster as they would from a
//! user of this server; the server answers iqs addressed to it.
//! Everything that must be answered is answered over the stream to the
//! sender's domain. What goes to the MUC service goes to the sender's
//! guest session (`guests`).
//!
//! With several nodes, the node whose stream took a stanza for a user
//! hands it to the others as it would a stanza of its own users
//! (`nodes`): a message, directed presence or an iq reaches the user's
//! resources wherever they are, a message is kept offline only when no
//! node took it, and a probe is answered by every node that holds an
//! available resource of the user, each over its own stream to the
//! prober's domain.

use std::sync::Arc;

use wire::xmpp::Element;

use super::ns;
use crate::offline::Kept;
use crate::roster;
use crate::router::MessageRoute;
use crate::session::{deliver, push};
use crate::{Jid, Xmpp, stamped};

impl Xmpp {
    /// Delivers `stanza` (in `jabber:client`, with a `from` of another
    /// domain and a `to` of one served here).
    pub(crate) async fn take_remote(self: &Arc<Self>, stanza: Element) {
        let (Some(from), Some(to)) = (stanza.get("from").and_then(Jid::parse), stanza.get("to").and_then(Jid::parse)) else { return };
        if to.domain == self.muc_domain && self.rooms.is_some() {
            let limit = self.federation.as_ref().map_or(0, |f| f.settings.max_guests);
            if from.resource.is_none() {
                return self.answer_remote(&stanza, "modify", "jid-malformed");
            }
            if self.to_guest(from, stanza.clone(), limit).await.is_err() {
                self.context.metrics.refused("xmpp", "s2s_max_guests");
                self.answer_remote(&stanza, "wait", "resource-constraint");
            }
            return;
        }
        if to.domain != self.domain || (to.local.is_none() && stanza.name != "iq") {
            return self.answer_remote(&stanza, "cancel", "service-unavailable");
        }
        match stanza.name.as_str() {
            "message" => self.remote_message(&stanza, &to).await,
            "presence" => self.remote_presence(&stanza, &from, &to).await,
            _ => self.remote_iq(&stanza, &to).await,
        }
    }

    /// Answers `stanza` from another server with an error of `kind` and
    /// `condition`, from the JID it was sent to (RFC 6120 §8.3).
    fn answer_remote(self: &Arc<Self>, stanza: &Element, kind: &str, condition: &str) {
        if matches!(stanza.get("type"), Some("error" | "result")) {
            return;
        }
        let to = stanza.get("from").unwrap_or_default();
        let _ = self.send_remote(crate::session::error_for(stanza, to, kind, condition));
    }

    async fn remote_message(self: &Arc<Self>, message: &Element, to: &Jid) {
        let kind = message.get("type").unwrap_or("normal");
        // A resource another node holds is asked there first.
        if to.resource.is_some() && self.has_other_nodes() && self.router.route(to).is_empty() && self.remote_elsewhere(message, to).await {
            return;
        }
        match self.router.route_message(to, kind) {
            MessageRoute::To(targets) => {
                let user = to.bare().to_string();
                let kept = !self.router.is_anonymous(&user) && self.keeps_from_away(message, to).await;
                // Stamped and pushed in the recipient's archive's order.
                let (copy, entry) = base::archive::in_order(&user, || {
                    let (copy, entry) = self.archived_from_away(message, to, kept);
                    for (outbox, framing) in targets {
                        let _ = outbox.push(framing.payload(&copy));
                    }
                    (copy, entry)
                });
                // The user's resources on the other nodes get it too.
                if to.resource.is_none() && self.has_other_nodes() {
                    self.tell_others(vec![to.to_string().into()], &copy).await;
                }
                self.queue_archived(entry).await;
            }
            // Nobody here: another node may hold the user's resources (a
            // chat message to a resource none holds goes on as to the bare
            // JID, RFC 6121 §8.5.3.2.1).
            _ if (to.resource.is_none() || kind == "chat") && self.has_other_nodes() && self.remote_elsewhere(message, &to.bare()).await => {}
            MessageRoute::Refused if self.offline.keeps(kind, message) && self.has_account(&to.bare()).await => {
                let from = message.get("from").unwrap_or_default();
                let kept = self.keeps_from_away(message, to).await;
                let (copy, entry) = self.archived_from_away(message, to, kept);
                match self.offline.keep(&to.bare().to_string(), from, &self.domain, &copy).await {
                    Kept::Stored => {
                        self.queue_archived(entry).await;
                        // As a session's message kept meanwhile: the user
                        // may have come online, here or on another node.
                        let bare = to.bare();
                        if !self.deliver_kept(&bare).await && self.has_other_nodes() {
                            self.tell_others(vec![bare.to_string().into()], &crate::nodes::kept()).await;
                        }
                    }
                    Kept::Full => self.answer_remote(message, "cancel", "service-unavailable"),
                    Kept::Failed => self.answer_remote(message, "wait", "internal-server-error"),
                }
            }
            MessageRoute::Refused | MessageRoute::Bounced => self.answer_remote(message, "cancel", "service-unavailable"),
            MessageRoute::Dropped => {}
        }
    }

    /// Carries `message` from another server to the resources of `to`
    /// that the other nodes hold, archived as it would be here when one
    /// took it: whether one did.
    async fn remote_elsewhere(self: &Arc<Self>, message: &Element, to: &Jid) -> bool {
        let kept = self.keeps_from_away(message, to).await;
        let (copy, entry) = self.archived_from_away(message, to, kept);
        if self.ask_others(to, &copy).await == 0 {
            return false;
        }
        self.queue_archived(entry).await;
        true
    }

    /// Presence from a user of another server (RFC 6121 §3, §4): updates
    /// and directed presence go to the user's resources; subscription
    /// requests and answers change its roster first; a probe is answered
    /// with the user's presence if the prober may see it.
    async fn remote_presence(self: &Arc<Self>, presence: &Element, from: &Jid, to: &Jid) {
        let (user, contact) = (to.bare().to_string(), from.bare().to_string());
        let rosters = &self.rosters;
        match presence.get("type") {
            Some("probe") => {
                if !rosters.contact(&user, &contact).await.is_some_and(|c| c.subscription.from) {
                    return;
                }
                let available = self.router.available(&user);
                let here = available.into_iter().map(|r| self.send_remote(stamped(r.presence, &r.jid, from.to_string()))).filter(Result::is_ok).count();
                let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable").attr("from", &user).attr("to", &contact);
                if !self.has_other_nodes() {
                    if here == 0 {
                        let _ = self.send_remote(gone);
                    }
                    return;
                }
                // Each node that holds an available resource of the user
                // answers for it. Waited for apart: nothing orders a probe's
                // answer, and the stream's next stanzas need not wait for it.
                let (xmpp, bare, probe) = (self.clone(), to.bare(), crate::nodes::probe(&from.to_string()));
                tokio::spawn(async move {
                    if here + xmpp.ask_others(&bare, &probe).await == 0 {
                        let _ = xmpp.send_remote(gone);
                    }
                });
            }
            Some("subscribe") => {
                if !self.exists(&to.bare()).await {
                    let _ = self.send_remote(answer(&user, &contact, "unsubscribed"));
                } else if rosters.contact(&user, &contact).await.is_some_and(|c| c.subscription.from) {
                    let _ = self.send_remote(answer(&user, &contact, "subscribed"));
                } else {
                    let request = stamped(presence.clone(), &contact, user.clone());
                    rosters.hold(&user, &contact, request.clone()).await;
                    deliver(self, &user, &request).await;
                }
            }
            Some("subscribed") => {
                if !rosters.contact(&user, &contact).await.is_some_and(|c| c.ask) {
                    return;
                }
                let changed = rosters.update(&user, &contact, true, |c| {
                    c.subscription.to = true;
                    c.ask = false;
                });
                if let Ok(Some(mine)) = changed.await {
                    push(self, &user, roster::item(&mine.contact), mine.ver).await;
                }
                deliver(self, &user, &stamped(presence.clone(), &contact, user.clone())).await;
            }
            Some("unsubscribe") => {
                // A request still waiting is withdrawn; a subscription that
                // is not there ends nothing, and is not told of (RFC 6121
                // §3.3.3): the other nodes would answer it with the user's
                // resources' unavailable presence.
                rosters.answered(&user, &contact).await;
                if !rosters.contact(&user, &contact).await.is_some_and(|c| c.subscription.from) {
                    return;
                }
                if let Ok(Some(mine)) = rosters.update(&user, &contact, false, |c| c.subscription.from = false).await {
                    push(self, &user, roster::item(&mine.contact), mine.ver).await;
                }
                // The contact no longer sees this node's resources, as the
                // other nodes tell it of theirs.
                for r in self.router.available(&user) {
                    let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable");
                    let _ = self.send_remote(stamped(gone, &r.jid, contact.clone()));
                }
                deliver(self, &user, &stamped(presence.clone(), &contact, user.clone())).await;
            }
            Some("unsubscribed") => {
                let changed = rosters.update(&user, &contact, false, |c| {
                    c.subscription.to = false;
                    c.ask = false;
                });
                if let Ok(Some(mine)) = changed.await {
                    push(self, &user, roster::item(&mine.contact), mine.ver).await;
                }
                deliver(self, &user, &stamped(presence.clone(), &contact, user.clone())).await;
            }
            // Updates, unavailability, directed presence and errors.
            _ => {
                for (outbox, framing) in self.router.route(to) {
                    let _ = outbox.push(framing.payload(presence));
                }
                self.tell_others(vec![to.to_string().into()], presence).await;
            }
        }
    }

    /// An iq from another server: to a resource, carried there (on this
    /// node or another); to a user's bare JID or to the server, a ping is
    /// answered and anything else refused (RFC 6120 §10.5.3, RFC 6121 §8.5).
    async fn remote_iq(self: &Arc<Self>, iq: &Element, to: &Jid) {
        if to.resource.is_some() {
            let targets = self.router.route(to);
            if targets.is_empty() {
                if self.has_other_nodes() && self.ask_others(to, iq).await > 0 {
                    return;
                }
                return self.answer_remote(iq, "cancel", "service-unavailable");
            }
            for (outbox, framing) in targets {
                let _ = outbox.push(framing.payload(iq));
            }
            return;
        }
        let payload = iq.elements().next();
        match (iq.get("type"), payload.map(|p| (p.ns.as_str(), p.name.as_str()))) {
            (Some("get"), Some((ns::PING, "ping"))) => {
                let _ = self.send_remote(reply_to(iq, "result"));
            }
            (Some("get" | "set"), _) => self.answer_remote(iq, "cancel", "service-unavailable"),
            _ => {}
        }
    }
}

impl Xmpp {
    /// Whether the archive of `to`, a user here, keeps `message` from a
    /// user of another server: a `chat` or `normal` one with a body, with
    /// archiving on, as the user's preferences say of its sender.
    async fn keeps_from_away(&self, message: &Element, to: &Jid) -> bool {
        let kind = message.get("type").unwrap_or("normal");
        let Some(from) = message.get("from").and_then(Jid::parse) else { return false };
        self.archive.is_some() && matches!(kind, "chat" | "normal") && message.find("body", ns::CLIENT).is_some() && self.archive_keeps(&to.bare().to_string(), &from).await
    }

    /// `message` from a user of another server to the user `to` here, as
    /// that user gets it: with the id of its entry in the user's archive
    /// (XEP-0359) when its archive keeps it (`kept`, see
    /// `keeps_from_away`); and the entry.
    fn archived_from_away(&self, message: &Element, to: &Jid, kept: bool) -> (Element, Option<store::Entry>) {
        let mut copy = message.clone();
        // What only this server writes (ids, XEP-0359 §4): another's claims go.
        crate::archive::strip_claims(&mut copy);
        if !kept {
            return (copy, None);
        }
        let user = to.bare().to_string();
        let (at, id) = base::archive::next_id();
        copy = copy.child(Element::new("stanza-id", crate::archive::SID).attr("by", &user).attr("id", &id));
        let with = message.get("from").and_then(Jid::parse).map(|j| j.bare().to_string()).unwrap_or_default();
        let entry = store::Entry { archive: user, id, at, with, message: copy.to_xml_standalone() };
        (copy, Some(entry))
    }

    /// Queues `entry`, if any, for the archive's writer.
    async fn queue_archived(&self, entry: Option<store::Entry>) {
        if let (Some(archive), Some(entry)) = (&self.archive, entry) {
            archive.queue(vec![entry]).await;
        }
    }
}

/// An answer to `stanza` of type `kind`: the same name and id, from where it went, to where it came from.
fn reply_to(stanza: &Element, kind: &str) -> Element {
    let mut answer = Element::new(&stanza.name, ns::CLIENT).attr("type", kind);
    for (from, to) in [("to", "from"), ("from", "to"), ("id", "id")] {
        if let Some(value) = stanza.get(from) {
            answer = answer.attr(to, value);
        }
    }
    answer
}

/// A subscription answer of `kind` from `user` to `contact`, both bare.
fn answer(user: &str, contact: &str, kind: &str) -> Element {
    Element::new("presence", ns::CLIENT).attr("type", kind).attr("from", user).attr("to", contact)
}

