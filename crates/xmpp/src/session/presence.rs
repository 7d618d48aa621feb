//! Stanzas between users (RFC 6121): the roster and presence
//! subscriptions, presence to the user's own other resources and to its
//! contacts, presence directed at other users, and messages and iqs carried
//! to other users' resources.

use store::Change;
use wire::xmpp::Element;

use super::super::roster::{self, Refused};
use super::super::offline::Kept;
use super::super::router::{MessageRoute, priority};
use super::super::{Jid, Target, ns};
use super::Session;

impl Session {
    /// Carries `stanza` to `to` (a user's resource, or every resource of a
    /// bare JID), from this session's full JID, each in its own framing;
    /// `service-unavailable` when nobody is there (RFC 6121 §8.5).
    pub(super) async fn route_to_user(&mut self, stanza: &Element, to: &Jid) {
        let targets = self.xmpp.router.route(to);
        if targets.is_empty() {
            let routed = self.stamped(stanza);
            // Boxed: rare, and its state would sit in every idle stream's task.
            if Box::pin(self.xmpp.ask_others(to, &routed)).await > 0 {
                return;
            }
            return self.refuse(stanza, "cancel", "service-unavailable");
        }
        self.carry(stanza, targets);
    }

    /// The disco#items of the user `user` (XEP-0030 §4.3): its available
    /// resources, to those who see its presence; none to others, nor for a
    /// user who does not exist.
    pub(super) async fn items_of(&self, user: &str) -> Element {
        let mut items = Element::new("query", ns::DISCO_ITEMS);
        if self.sees_presence_of(user).await {
            for resource in self.xmpp.router.available(user) {
                items = items.child(Element::new("item", ns::DISCO_ITEMS).attr("jid", &resource.jid));
            }
        }
        items
    }

    /// Whether this user is subscribed to the presence of `user` (a bare
    /// JID): what it may learn of `user` through service discovery.
    pub(super) async fn sees_presence_of(&self, user: &str) -> bool {
        match self.user() {
            Some(me) => self.xmpp.rosters.contact(user, &me).await.is_some_and(|c| c.subscription.from),
            None => false,
        }
    }

    /// Carries a message to one of this server's users, as the router's
    /// delivery rules say (RFC 6121 §8.5), or keeps it for an account that
    /// is offline (XEP-0160).
    pub(super) async fn message_to_user(&mut self, message: &Element, to: &Jid) {
        if self.xmpp.is_remote(to) {
            // Boxed: its state would sit in every idle stream's task.
            let sent = Box::pin(self.archive_sent_away(message, to)).await;
            return self.stamped_to_remote(sent, message);
        }
        let kind = message.get("type").unwrap_or("normal");
        // A resource another node holds is asked there first.
        if to.resource.is_some() && self.xmpp.has_other_nodes() && self.xmpp.router.route(to).is_empty() && Box::pin(self.message_elsewhere(message, to, to)).await {
            return;
        }
        // To the bare JID, or a chat message to a resource nobody holds,
        // which goes on as to the bare JID (RFC 6121 §8.5.3.2.1): the
        // user's resources on the other nodes get it too.
        let as_bare = self.xmpp.has_other_nodes() && (to.resource.is_none() || (kind == "chat" && self.xmpp.router.route(to).is_empty()));
        match self.xmpp.router.route_message(to, kind) {
            // Boxed, as the rest below: its state would sit in every idle stream's task.
            MessageRoute::To(targets) if self.archives(kind, message, to) => {
                let recipient = !self.xmpp.router.is_anonymous(&to.bare().to_string());
                let copy = Box::pin(self.carry_archived(message, to, targets, recipient)).await;
                if as_bare {
                    Box::pin(self.xmpp.tell_others(vec![to.bare().to_string().into()], &copy)).await;
                }
            }
            MessageRoute::To(targets) => {
                self.carry(message, targets);
                if as_bare {
                    let copy = self.stamped(message);
                    Box::pin(self.xmpp.tell_others(vec![to.bare().to_string().into()], &copy)).await;
                }
            }
            // Nobody here: another node may hold the user's resources (a
            // chat message to a resource none holds goes on as to the bare
            // JID, RFC 6121 §8.5.3.2.1).
            _ if (to.resource.is_none() || kind == "chat") && self.xmpp.has_other_nodes() && Box::pin(self.message_elsewhere(message, &to.bare(), to)).await => {}
            MessageRoute::Refused if self.xmpp.offline.keeps(kind, message) => Box::pin(self.keep_offline(message, to)).await,
            MessageRoute::Refused | MessageRoute::Bounced => self.refuse(message, "cancel", "service-unavailable"),
            MessageRoute::Dropped => {}
        }
    }

    /// Carries `message` to the resources of `to` that other nodes hold,
    /// archived as it would be here when it reached one (this user's
    /// archive keeping it as its preferences say of `sent_to`, the JID the
    /// message named; the recipient's only if it has an account, which a
    /// user logged in anonymously on another node has not): whether it did.
    async fn message_elsewhere(&mut self, message: &Element, to: &Jid, sent_to: &Jid) -> bool {
        let kind = message.get("type").unwrap_or("normal");
        let archived = if self.archives(kind, message, to) {
            let recipient = match to.local.as_deref() {
                Some(name) => self.xmpp.auth.accounts.exists(name).await.inspect_err(|_| self.xmpp.context.metrics.store_failed("accounts")).unwrap_or(false),
                None => false,
            };
            self.archived_copy(message, to, self.keepers(sent_to, recipient).await)
        } else {
            None
        };
        let (copy, entries) = archived.unwrap_or_else(|| (self.stamped(message), Vec::new()));
        if self.xmpp.ask_others(to, &copy).await == 0 {
            return false;
        }
        self.queue_archive(entries).await;
        true
    }

    /// `stanza` from this session's full JID.
    pub(super) fn stamped(&self, stanza: &Element) -> Element {
        let mut routed = stanza.clone();
        routed.attrs.retain(|(n, _)| n != "from");
        routed.attrs.push(("from".into(), self.full_jid()));
        routed
    }

    /// Keeps `message` for the account `to` if it has one; otherwise, or
    /// past the account's share, the sender is told `service-unavailable`.
    async fn keep_offline(&mut self, message: &Element, to: &Jid) {
        let account = to.local.as_deref().filter(|_| to.domain == self.xmpp.domain);
        let exists = match account {
            Some(name) => self.xmpp.auth.accounts.exists(name).await,
            None => Ok(false),
        };
        // Kept as the recipient would have got it live: with its archive id.
        let archived = if self.archives(message.get("type").unwrap_or("normal"), message, to) { self.archived_copy(message, to, self.keepers(to, true).await) } else { None };
        let (copy, entries) = archived.unwrap_or_else(|| (message.clone(), Vec::new()));
        let kept = match exists {
            Ok(true) => self.xmpp.offline.keep(&to.bare().to_string(), &self.full_jid(), &self.xmpp.domain, &copy).await,
            Ok(false) => return self.refuse(message, "cancel", "service-unavailable"),
            Err(_) => {
                self.xmpp.context.metrics.store_failed("accounts");
                return self.refuse(message, "wait", "internal-server-error");
            }
        };
        match kept {
            // Kept for the recipient, and archived as if carried to it.
            Kept::Stored => {
                self.queue_archive(entries).await;
                // The recipient may have come online while this was kept,
                // here or on another node, and taken what was kept before
                // it: it gets this now, not at its next login.
                let bare = to.bare();
                if !self.xmpp.deliver_kept(&bare).await && self.xmpp.has_other_nodes() {
                    Box::pin(self.xmpp.tell_others(vec![bare.to_string().into()], &crate::nodes::kept())).await;
                }
            }
            Kept::Full => {
                self.xmpp.context.metrics.refused("xmpp", "offline_full");
                self.refuse(message, "cancel", "service-unavailable");
            }
            Kept::Failed => {
                self.xmpp.context.metrics.store_failed("offline");
                self.refuse(message, "wait", "internal-server-error");
            }
        }
    }

    /// Sends `stanza` from `from` (this session's JID, full or bare) to
    /// another server; a message or iq that cannot go is answered with
    /// the reason (RFC 6120 §8.3.3), a presence is not (RFC 6121 §4.6.2).
    pub(super) fn to_remote(&self, stanza: &Element, from: &str) {
        let mut routed = stanza.clone();
        routed.attrs.retain(|(n, _)| n != "from");
        routed.attrs.push(("from".into(), from.to_owned()));
        self.stamped_to_remote(routed, stanza);
    }

    /// Sends `routed`, `stanza` already stamped with its `from`, to
    /// another server, as `to_remote` does.
    pub(super) fn stamped_to_remote(&self, routed: Element, stanza: &Element) {
        if let Err(why) = self.xmpp.send_remote(routed)
            && stanza.name != "presence"
        {
            let (kind, condition) = why.error();
            self.refuse(stanza, kind, condition);
        }
    }

    pub(super) fn carry(&self, stanza: &Element, targets: Vec<Target>) {
        carry_from(stanza, &self.full_jid(), targets);
    }

    pub(super) fn user(&self) -> Option<String> {
        self.jid.as_deref().map(|j| j.bare().to_string())
    }

    /// The roster (RFC 6121 §2): get, or set one item (add, change, remove).
    pub(super) async fn on_roster(&mut self, iq: &Element, query: &Element) {
        let Some(user) = self.user() else { return };
        if iq.get("type") == Some("get") {
            // RFC 6121 §2.6: a client that has the current version is told
            // so with an empty result; one with another gets the roster
            // whole, with its version; one that asks for none, no version.
            let asked = query.get("ver");
            let ver = match asked {
                Some(_) => self.xmpp.rosters.version(&user).await,
                None => None,
            };
            if let (Some(asked), Some(ver)) = (asked, ver)
                && asked == ver.to_string()
            {
                return self.reply(iq, None);
            }
            let Ok(contacts) = self.xmpp.rosters.contacts(&user).await else {
                return self.refuse(iq, "wait", "internal-server-error");
            };
            let mut result = versioned(Element::new("query", ns::ROSTER), ver);
            for contact in &contacts {
                result = result.child(roster::item(contact));
            }
            return self.reply(iq, Some(result));
        }
        let items: Vec<&Element> = query.elements().filter(|e| e.name == "item" && e.ns == ns::ROSTER).collect();
        let [item] = items.as_slice() else {
            return self.refuse(iq, "modify", "bad-request");
        };
        let Some(jid) = item.get("jid").and_then(Jid::parse) else {
            return self.refuse(iq, "modify", "bad-request");
        };
        let contact = jid.bare().to_string();
        if item.get("subscription") == Some("remove") {
            let removed = match self.xmpp.rosters.remove(&user, &contact).await {
                Ok(Some(Change { contact: removed, ver })) => {
                    push(&self.xmpp, &user, roster::removed(&contact), ver).await;
                    removed
                }
                Ok(None) => return self.refuse(iq, "cancel", "item-not-found"),
                Err(_) => return self.refuse(iq, "wait", "internal-server-error"),
            };
            self.reply(iq, None);
            // RFC 6121 §2.5.2: removing a contact ends the subscriptions
            // there are, both ways. A request not yet answered is not one: it
            // is withdrawn where it waits, and the contact is sent nothing.
            let bare = |kind| Element::new("presence", ns::CLIENT).attr("type", kind).attr("to", &contact);
            if removed.subscription.to {
                self.subscription(&bare("unsubscribe"), "unsubscribe", &jid).await;
            } else if removed.ask {
                self.xmpp.rosters.answered(&contact, &user).await;
            }
            if removed.subscription.from {
                self.subscription(&bare("unsubscribed"), "unsubscribed", &jid).await;
            }
            return;
        }
        let name = item.get("name").map(str::to_owned);
        let groups: Vec<String> = item.elements().filter(|e| e.name == "group").map(Element::text_content).collect();
        // RFC 6121 §2.3.3: a group named twice is a bad request, an empty
        // name is not acceptable.
        if groups.iter().any(String::is_empty) {
            return self.refuse(iq, "modify", "not-acceptable");
        }
        if groups.iter().enumerate().any(|(i, g)| groups[..i].contains(g)) {
            return self.refuse(iq, "modify", "bad-request");
        }
        match self.xmpp.rosters.update(&user, &contact, true, |c| {
            c.name.clone_from(&name);
            c.groups.clone_from(&groups);
        })
        .await
        {
            Ok(Some(changed)) => {
                push(&self.xmpp, &user, roster::item(&changed.contact), changed.ver).await;
                self.reply(iq, None);
            }
            Ok(None) => {}
            Err(Refused::Full) => self.refuse(iq, "wait", "resource-constraint"),
            Err(Refused::Store) => self.refuse(iq, "wait", "internal-server-error"),
        }
    }

    /// Presence with no `to` (RFC 6121 §4.2, §4.4, §4.5): to the user's
    /// other resources and to the contacts who see its presence. The first
    /// available presence also brings it the current presence of its other
    /// resources and of the contacts it sees, and the subscription requests
    /// waiting for it.
    pub(super) async fn broadcast_presence(&mut self, presence: &Element) {
        let (Some(me), Some(user)) = (self.jid.as_deref().cloned(), self.user()) else { return };
        let available = match presence.get("type") {
            None => true,
            Some("unavailable") => false,
            Some(_) => return,
        };
        let first = available && !self.available;
        self.available = available;
        // Unavailable again: what is kept meanwhile is its when it comes back.
        self.offline_taken &= available;
        self.xmpp.router.set_presence(&me, available.then(|| presence.clone()));
        let me_full = me.to_string();
        let mut targets: Vec<Target> =
            self.xmpp.router.available(&user).into_iter().filter(|r| r.jid != me_full).map(|r| r.target).collect();
        let contacts = self.xmpp.rosters.contacts(&user).await.unwrap_or_default();
        // The user's other resources and its local contacts on the other nodes.
        let mut elsewhere: Vec<std::sync::Arc<str>> = vec![user.as_str().into()];
        for jid in contacts.iter().filter(|c| c.subscription.from).filter_map(|c| Jid::parse(&c.jid)) {
            if self.xmpp.is_remote(&jid) {
                let mut to_contact = presence.clone();
                to_contact.attrs.retain(|(n, _)| n != "to");
                self.to_remote(&to_contact.attr("to", &jid.to_string()), &me_full);
            } else {
                targets.extend(self.xmpp.router.route(&jid));
                elsewhere.push(jid.to_string().into());
            }
        }
        self.carry(presence, targets);
        if self.xmpp.has_other_nodes() {
            Box::pin(self.xmpp.tell_others(elsewhere, &self.stamped(presence))).await;
        }
        if first {
            let mut theirs = self.xmpp.router.available(&user);
            theirs.retain(|r| r.jid != me_full);
            let mut probed: Vec<std::sync::Arc<str>> = vec![user.as_str().into()];
            for contact in contacts.iter().filter(|c| c.subscription.to) {
                match Jid::parse(&contact.jid) {
                    // Another server's user: its server is asked (RFC 6121 §4.3).
                    Some(jid) if self.xmpp.is_remote(&jid) => {
                        let probe = Element::new("presence", ns::CLIENT).attr("type", "probe").attr("to", &contact.jid);
                        self.to_remote(&probe, &user);
                    }
                    _ => {
                        theirs.extend(self.xmpp.router.available(&contact.jid));
                        probed.push(contact.jid.as_str().into());
                    }
                }
            }
            // The other nodes answer for the resources they hold.
            if self.xmpp.has_other_nodes() {
                Box::pin(self.xmpp.tell_others(probed, &crate::nodes::probe(&me_full))).await;
            }
            for r in theirs {
                let mut current = r.presence;
                current.attrs.retain(|(n, _)| n != "to");
                current.attrs.push(("to".into(), me_full.clone()));
                carry_from(&current, &r.jid, vec![(self.outbox.clone(), self.framing)]);
            }
            for request in self.xmpp.rosters.pending(&user).await {
                self.send(&request);
            }
        }
        // Messages kept while it was offline, to the first presence of this
        // session that takes messages to its bare JID (XEP-0160 §3: priority
        // 0 or more, which a first presence of -1 is not); an anonymous
        // user has no account, so none are kept for it.
        if available && !self.offline_taken && priority(presence) >= 0 && !self.anonymous {
            match self.xmpp.offline.take(&user).await {
                Ok(messages) => {
                    self.offline_taken = true;
                    messages.iter().for_each(|message| self.send(message));
                }
                // Still kept: given at the next available presence.
                Err(_) => self.xmpp.context.metrics.store_failed("offline"),
            }
        }
        if !available {
            Box::pin(self.end_directed()).await;
        }
    }

    /// Presence to a user's JID: a subscription request or answer, or
    /// presence directed at it (RFC 6121 §4.6), which goes to its
    /// resources that are online and is remembered, so that it is told
    /// when this one goes.
    pub(super) async fn direct_presence(&mut self, presence: &Element, to: &Jid) {
        match presence.get("type") {
            Some(kind @ ("subscribe" | "subscribed" | "unsubscribe" | "unsubscribed")) => {
                return self.subscription(presence, kind, to).await;
            }
            None => {
                let directed = self.directed.get_or_insert_default();
                if !directed.contains(to) && directed.len() < self.xmpp.list_limit {
                    directed.push(to.clone());
                }
            }
            Some("unavailable") => {
                if let Some(directed) = &mut self.directed {
                    directed.retain(|j| j != to);
                }
            }
            _ => {}
        }
        if self.xmpp.is_remote(to) {
            return self.to_remote(presence, &self.full_jid());
        }
        // Presence is not answered with errors (RFC 6121 §4.6.2): with
        // nobody there it is dropped.
        let targets = self.xmpp.router.route(to);
        self.carry(presence, targets);
        // A client's probe is not handed on: only nodes probe each other,
        // for contacts whose subscription they checked.
        if self.xmpp.has_other_nodes() && matches!(presence.get("type"), None | Some("unavailable")) {
            Box::pin(self.xmpp.tell_others(vec![to.to_string().into()], &self.stamped(presence))).await;
        }
    }

    /// A subscription request or answer from this user to the user `to`
    /// (RFC 6121 §3), stamped with this user's bare JID and sent to the
    /// other's bare JID; both rosters change and are pushed.
    async fn subscription(&mut self, presence: &Element, kind: &str, to: &Jid) {
        let Some(user) = self.user() else { return };
        let other = to.bare();
        let contact = other.to_string();
        if contact == user {
            return;
        }
        // Another server's user is sent the stamped stanza; its server
        // keeps its side (`s2s::inbound`).
        let local = to.domain == self.xmpp.domain && to.local.is_some();
        let remote = self.xmpp.is_remote(to) && to.local.is_some();
        let mut stamped = presence.clone();
        stamped.attrs.retain(|(n, _)| n != "from" && n != "to");
        stamped.attrs.push(("from".into(), user.clone()));
        stamped.attrs.push(("to".into(), contact.clone()));
        let rosters = &self.xmpp.rosters;
        match kind {
            "subscribe" => {
                match rosters.update(&user, &contact, true, |c| c.ask = !c.subscription.to).await {
                    Ok(Some(mine)) => push(&self.xmpp, &user, roster::item(&mine.contact), mine.ver).await,
                    Ok(None) => {}
                    Err(Refused::Full) => return self.refuse(presence, "wait", "resource-constraint"),
                    Err(Refused::Store) => return self.refuse(presence, "wait", "internal-server-error"),
                }
                if remote {
                    return self.to_remote(&stamped, &user);
                }
                if !local {
                    return;
                }
                if !self.xmpp.exists(&other).await {
                    // No such user: the request is ignored (RFC 6121 §8.5.1)
                    // and nothing kept; the user's roster stops waiting.
                    if let Ok(Some(mine)) = rosters.update(&user, &contact, false, |c| c.ask = false).await {
                        push(&self.xmpp, &user, roster::item(&mine.contact), mine.ver).await;
                    }
                    return;
                }
                if rosters.contact(&contact, &user).await.is_some_and(|c| c.subscription.from) {
                    // Approved before: the contact's server answers for it (§3.1.3).
                    let mut answer = Element::new("presence", ns::CLIENT).attr("type", "subscribed");
                    answer.attrs.push(("from".into(), contact.clone()));
                    answer.attrs.push(("to".into(), user.clone()));
                    subscribed(&self.xmpp, &user, &contact, &answer).await;
                    return;
                }
                rosters.hold(&contact, &user, stamped.clone()).await;
                deliver(&self.xmpp, &contact, &stamped).await;
            }
            "subscribed" => {
                // An approval with no request to answer is dropped (§3.1.5).
                let asked = rosters.answered(&user, &contact).await || (local && rosters.contact(&contact, &user).await.is_some_and(|c| c.ask));
                if !asked || !(local || remote) {
                    return;
                }
                match rosters.update(&user, &contact, true, |c| c.subscription.from = true).await {
                    Ok(Some(mine)) => push(&self.xmpp, &user, roster::item(&mine.contact), mine.ver).await,
                    Ok(None) => {}
                    Err(Refused::Full) => return self.refuse(presence, "wait", "resource-constraint"),
                    Err(Refused::Store) => return self.refuse(presence, "wait", "internal-server-error"),
                }
                if remote {
                    self.to_remote(&stamped, &user);
                    // Then this user's current presence, from each of its available resources.
                    for r in self.xmpp.router.available(&user) {
                        let mut current = r.presence;
                        current.attrs.retain(|(n, _)| n != "to");
                        self.to_remote(&current.attr("to", &contact), &r.jid);
                    }
                    // The other nodes send their resources' as they answer
                    // the contact's probe, over their own streams.
                    if self.xmpp.has_other_nodes() {
                        Box::pin(self.xmpp.tell_others(vec![user.as_str().into()], &crate::nodes::probe(&contact))).await;
                    }
                    return;
                }
                subscribed(&self.xmpp, &contact, &user, &stamped).await;
                // Then this user's current presence, from each of its available resources.
                let targets = self.xmpp.router.route(&other);
                for r in self.xmpp.router.available(&user) {
                    carry_from(&r.presence, &r.jid, targets.clone());
                    let mut current = r.presence;
                    current.attrs.retain(|(n, _)| n != "from");
                    current.attrs.push(("from".into(), r.jid));
                    self.xmpp.tell_others(vec![contact.as_str().into()], &current).await;
                }
            }
            "unsubscribe" => {
                if let Ok(Some(mine)) = rosters
                    .update(&user, &contact, false, |c| {
                        c.subscription.to = false;
                        c.ask = false;
                    })
                    .await
                {
                    push(&self.xmpp, &user, roster::item(&mine.contact), mine.ver).await;
                }
                if remote {
                    return self.to_remote(&stamped, &user);
                }
                if !local {
                    return;
                }
                rosters.answered(&contact, &user).await;
                let had_from = rosters.contact(&contact, &user).await.is_some_and(|c| c.subscription.from);
                if let Ok(Some(theirs)) = rosters.update(&contact, &user, false, |c| c.subscription.from = false).await {
                    push(&self.xmpp, &contact, roster::item(&theirs.contact), theirs.ver).await;
                }
                deliver(&self.xmpp, &contact, &stamped).await;
                // The contact's presence is no longer this user's to see, if it was.
                if had_from {
                    let mine = self.jid.as_deref().map(|j| self.xmpp.router.route(&j.bare())).unwrap_or_default();
                    for r in self.xmpp.router.available(&contact) {
                        let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable");
                        carry_from(&gone, &r.jid, mine.clone());
                        self.xmpp.tell_others(vec![user.as_str().into()], &gone.attr("from", &r.jid).attr("to", &user)).await;
                    }
                }
            }
            _ => {
                // "unsubscribed": this user ends (or refuses) the other's subscription to it.
                rosters.answered(&user, &contact).await;
                if let Ok(Some(mine)) = rosters.update(&user, &contact, false, |c| c.subscription.from = false).await {
                    push(&self.xmpp, &user, roster::item(&mine.contact), mine.ver).await;
                }
                if remote {
                    return self.to_remote(&stamped, &user);
                }
                if !local {
                    return;
                }
                if let Ok(Some(theirs)) = rosters
                    .update(&contact, &user, false, |c| {
                        c.subscription.to = false;
                        c.ask = false;
                    })
                    .await
                {
                    push(&self.xmpp, &contact, roster::item(&theirs.contact), theirs.ver).await;
                }
                deliver(&self.xmpp, &contact, &stamped).await;
                let targets = self.xmpp.router.route(&other);
                for r in self.xmpp.router.available(&user) {
                    let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable");
                    carry_from(&gone, &r.jid, targets.clone());
                    self.xmpp.tell_others(vec![contact.as_str().into()], &gone.attr("from", &r.jid).attr("to", &contact)).await;
                }
            }
        }
    }

    /// Tells those this session directed presence at that it is gone.
    pub(super) async fn end_directed(&mut self) {
        for to in self.directed.take().map(|directed| *directed).unwrap_or_default() {
            let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable").attr("to", &to.to_string());
            if self.xmpp.is_remote(&to) {
                self.to_remote(&gone, &self.full_jid());
            } else {
                self.carry(&gone, self.xmpp.router.route(&to));
                self.xmpp.tell_others(vec![to.to_string().into()], &self.stamped(&gone)).await;
            }
        }
    }

    /// The session ends: its user's other resources, its contacts and
    /// those it directed presence at see it go unavailable; an anonymous
    /// user's roster goes with its last resource.
    pub(super) async fn end_presence(&mut self) {
        if self.available {
            let gone = Element::new("presence", ns::CLIENT).attr("type", "unavailable");
            self.broadcast_presence(&gone).await;
        }
        Box::pin(self.end_directed()).await;
        if self.anonymous
            && let Some(user) = self.user()
            && self.xmpp.router.resources(&user).len() <= 1
        {
            self.xmpp.rosters.forget(&user).await;
        }
    }
}

/// `stanza` from `from` to each target, in its own framing.
fn carry_from(stanza: &Element, from: &str, targets: Vec<Target>) {
    let mut routed = stanza.clone();
    routed.attrs.retain(|(n, _)| n != "from");
    routed.attrs.push(("from".into(), from.to_owned()));
    for (outbox, framing) in targets {
        let _ = outbox.push(framing.payload(&routed));
    }
}

/// A stanza already stamped, to every resource of the user `bare`, here
/// and on the other nodes.
pub(crate) async fn deliver(xmpp: &super::super::Xmpp, bare: &str, stanza: &Element) {
    for (_, (outbox, framing)) in xmpp.router.resources(bare) {
        let _ = outbox.push(framing.payload(stanza));
    }
    xmpp.tell_others(vec![bare.into()], stanza).await;
}

/// A roster push (RFC 6121 §2.1.6) of `item` to every resource of `user`,
/// with `ver`, the roster's version the change made (§2.6.3).
pub(crate) async fn push(xmpp: &super::super::Xmpp, user: &str, item: Element, ver: u64) {
    for (jid, (outbox, framing)) in xmpp.router.resources(user) {
        let id = format!("push-{:08x}", rand::random::<u32>());
        let iq = Element::new("iq", ns::CLIENT)
            .attr("type", "set")
            .attr("id", &id)
            .attr("to", &jid)
            .child(versioned(Element::new("query", ns::ROSTER), Some(ver)).child(item.clone()));
        let _ = outbox.push(framing.payload(&iq));
    }
    // Each node gives the push to each of its resources as its own.
    if xmpp.has_other_nodes() {
        let id = format!("push-{:08x}", rand::random::<u32>());
        let iq = Element::new("iq", ns::CLIENT).attr("type", "set").attr("id", &id).attr("to", user).child(versioned(Element::new("query", ns::ROSTER), Some(ver)).child(item));
        xmpp.tell_others(vec![user.into()], &iq).await;
    }
}

/// `query` with the roster version `ver`, if there is one.
fn versioned(query: Element, ver: Option<u64>) -> Element {
    match ver {
        Some(ver) => query.attr("ver", &ver.to_string()),
        None => query,
    }
}

/// `contact` approved `user`'s request: the user's roster sees it (`to`),
/// and its resources get the approval `answer`.
async fn subscribed(xmpp: &super::super::Xmpp, user: &str, contact: &str, answer: &Element) {
    if let Ok(Some(theirs)) = xmpp
        .rosters
        .update(user, contact, true, |c| {
            c.subscription.to = true;
            c.ask = false;
        })
        .await
    {
        push(xmpp, user, roster::item(&theirs.contact), theirs.ver).await;
    }
    deliver(xmpp, user, answer).await;
}
