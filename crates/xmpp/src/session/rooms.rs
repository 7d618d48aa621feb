//! What a session does in MUC rooms (XEP-0045): entering and leaving, the
//! room's messages and subject, private messages and iqs between
//! occupants, and the owner's configuration and destruction of a room.

use std::sync::Arc;

use hub::{Greeting, JoinError, Member, Payload, RenameError, RoomEvent, Speaks};
use wire::nickname::Nickname;
use wire::xmpp::Element;

use super::super::archive;
use super::super::muc::{self, Item, Newcomer, Occupancy};
use super::super::room::{Affiliation, Config, Departure, MucRoom, MucRooms, Occupant, Role};
use super::super::{Jid, ns};
use super::Session;
use super::moderation::{Effect, Refusal, change};

impl Session {
    /// `event` of `room` as this session publishes it: with the account
    /// it logged in to (IRC's `account-tag` shows it).
    fn room_event(&self, room: &Arc<str>, event: RoomEvent) -> Payload {
        Payload::event(room.clone(), event).with_account(self.account())
    }

    /// The session's place in `room`, if it is still there: an owner who
    /// destroys a room takes every occupant out of it.
    pub(super) fn occupancy(&mut self, room: &str) -> Option<Occupancy> {
        if self.rooms.contains_key(room) && !self.xmpp.muc.is_occupant(room, self.id) {
            self.rooms.remove(room);
        }
        self.rooms.get(room).cloned()
    }

    /// What this session may know of occupant `nick` of `room`, and the
    /// status codes its leave is shown with.
    pub(super) fn shown(&self, room: &str, nick: &str) -> (Item, Vec<&'static str>) {
        shown_to(&self.xmpp.muc, room, nick, self.id)
    }

    /// Presence to a room JID: entering (or a presence update while in),
    /// or leaving.
    pub(super) async fn on_room_presence(&mut self, presence: &Element, to: &Jid, room: Arc<str>) {
        match presence.get("type") {
            None if self.occupancy(&room).is_some() => self.change_nick(presence, to, &room).await,
            None => self.join(presence, to, room).await,
            Some("unavailable") => self.leave(&room, true),
            Some(_) => {}
        }
    }

    /// XEP-0045 §7.6: presence to a new nick in a room it is in. The room
    /// sees it leave under the old nick (303, with the new one) and come
    /// in under the new; a nick someone has is refused with `conflict`.
    async fn change_nick(&mut self, presence: &Element, to: &Jid, room: &Arc<str>) {
        let (Some(rooms), Some(occupancy)) = (self.xmpp.rooms.clone(), self.rooms.get(room).cloned()) else { return };
        let Some(Ok(nickname)) = to.resource.as_deref().map(Nickname::parse) else {
            return self.refuse(presence, "modify", "jid-malformed");
        };
        let new = nickname.shown.clone();
        if new == occupancy.nick {
            // XEP-0045 §7.7: a presence update, to every XMPP occupant.
            let id = self.id;
            self.xmpp.muc.with(room, |r| {
                if let Some(o) = r.occupants.iter_mut().find(|o| o.member == id) {
                    o.shown = shown_of(presence);
                }
            });
            return announce(&self.xmpp.muc, room, &occupancy.room_jid, &new);
        }
        if occupancy.renamed_from.is_some() {
            // A change while one is under way is not carried.
            return self.refuse(presence, "wait", "resource-constraint");
        }
        if Nickname::parse(&occupancy.nick).is_ok_and(|old| old.key == nickname.key) {
            // The same nick but for its case is not a change the room can tell.
            return self.refuse(presence, "cancel", "not-acceptable");
        }
        match rooms.rename(room, self.id, nickname).await {
            Ok(()) => {}
            Err(RenameError::NameTaken) => return self.refuse(presence, "cancel", "conflict"),
            Err(RenameError::NotMember) => return self.refuse(presence, "modify", "not-acceptable"),
            Err(RenameError::Broker(_)) => return self.refuse(presence, "wait", "remote-server-timeout"),
        }
        let id = self.id;
        let old = occupancy.nick.clone();
        // The occupant keeps its place, under the new nick: the leave event
        // shows it so (303).
        self.xmpp.muc.with(room, |r| {
            if let Some(o) = r.occupants.iter_mut().find(|o| o.member == id) {
                o.nick = new.clone();
            }
        });
        if let Some(occupancy) = self.rooms.get_mut(room) {
            occupancy.nick = new.clone();
            occupancy.renamed_from = Some(old.clone());
        }
        for event in RoomEvent::rename(old, new) {
            let _ = rooms.publish(room, self.room_event(room, event));
        }
    }

    async fn join(&mut self, presence: &Element, to: &Jid, room: Arc<str>) {
        let Some(rooms) = self.xmpp.rooms.clone() else {
            return self.refuse(presence, "cancel", "service-unavailable");
        };
        let Some(nick) = to.resource.as_deref() else {
            return self.refuse(presence, "modify", "jid-malformed");
        };
        let Ok(nickname) = Nickname::parse(nick) else {
            return self.refuse(presence, "modify", "jid-malformed");
        };
        let Some(me) = self.jid.as_deref().cloned() else { return };
        if self.rooms.len() >= self.xmpp.max_rooms {
            // Rooms it was taken out of by others (destroyed, kicked, banned)
            // are still listed here until looked up: they are not its own.
            let (muc, id) = (&self.xmpp.muc, self.id);
            self.rooms.retain(|room, _| muc.is_occupant(room, id));
        }
        if self.rooms.len() >= self.xmpp.max_rooms {
            self.xmpp.context.metrics.refused("xmpp", "max_rooms");
            return self.refuse(presence, "wait", "resource-constraint");
        }
        // A room another node made or changed since this one started.
        self.xmpp.take_up_room(&room).await;
        let password = presence.find("x", ns::MUC).and_then(|x| x.find("password", ns::MUC)).map(Element::text_content);
        if let Some((kind, condition)) = self.xmpp.muc.refusal(&room, &me, password.as_deref()) {
            // What was taken up for it is not kept for nobody.
            self.xmpp.muc.drop_if_empty(&room);
            return self.refuse(presence, kind, condition);
        }
        let shown = nickname.shown.clone();
        let room_jid = to.bare().to_string();
        let member = Member { id: self.id, name: Some(nickname), outbox: self.outbox.clone(), speaks: Speaks::Xmpp };
        let occupant = Occupant { nick: shown.clone(), member: self.id, jid: me.clone(), role: Role::None, outbox: self.outbox.clone(), framing: self.framing, shown: shown_of(presence) };
        let asked = muc::HistoryRequest::of(presence);
        let own_shown = shown_of(presence);
        let (xmpp, framing, id, name, greet_room, greet_nick) = (self.xmpp.clone(), self.framing, self.id, room.clone(), room_jid.clone(), shown.clone());
        // Kept out as it enters after all (see `MucRooms::enter`): why.
        let kept_out: Arc<parking_lot::Mutex<Option<(&'static str, &'static str)>>> = Arc::default();
        let kept_out_there = kept_out.clone();
        // Under the room's lock: whether it is new is decided once.
        let greeting: Greeting = Box::new(move |roster| {
            let alone = roster.names.iter().all(|n| *n == greet_nick);
            let entered = xmpp.muc.enter(&name, occupant, alone);
            if let Some(refused) = entered.refused {
                *kept_out_there.lock() = Some(refused);
                return Vec::new();
            }
            let mut codes = vec!["110"];
            if entered.non_anonymous {
                codes.push("100");
            }
            if entered.created {
                codes.push("201");
            }
            let item = Item { affiliation: entered.affiliation, role: entered.role, jid: entered.shows_jids.then(|| me.to_string()), nick: None, shown: own_shown };
            // The room's topic, set (or cleared) in any protocol, or else
            // what XMPP kept (a persistent room's subject, from the store).
            let subject = match &roster.topic {
                Some(topic) if topic.text.is_empty() => None,
                Some(topic) => Some((Some(&*topic.by), &*topic.text)),
                None => entered.subject.as_ref().map(|(by, text)| (Some(&**by), text.as_str())),
            };
            let newcomer = Newcomer { nick: &greet_nick, item, codes, subject };
            let to = me.to_string();
            muc::greeting(roster, &greet_room, &to, std::time::SystemTime::now(), asked, &newcomer, |nick| item_of(&xmpp.muc, &name, nick, id))
                .iter()
                .map(|e| framing.payload(e))
                .collect()
        });
        match rooms.join(&room, member, usize::MAX, greeting).await {
            // In the chat room, not in the MUC room: out again, unseen (its
            // join was never told).
            Ok(_) if let Some((kind, condition)) = kept_out.lock().take() => {
                rooms.leave(&room, self.id);
                self.xmpp.muc.drop_if_empty(&room);
                self.refuse(presence, kind, condition);
            }
            Ok(_) => {
                self.rooms.insert(room.clone(), Occupancy::new(room_jid, shown.clone()));
                // A persistent room's subject from the store is the room's
                // topic, for every protocol, until one is set.
                if rooms.topic(&room).is_none()
                    && let Some((by, text)) = self.xmpp.muc.with(&room, |r| r.subject.clone()).flatten()
                {
                    rooms.seed_topic(&room, &Payload::event(room.clone(), RoomEvent::Topic { name: by, text: Arc::from(text) }));
                }
                let _ = rooms.publish(&room, self.room_event(&room, RoomEvent::join(shown)));
            }
            Err(e) => {
                self.xmpp.muc.drop_if_empty(&room);
                match e {
                    JoinError::NameTaken => self.refuse(presence, "cancel", "conflict"),
                    JoinError::RoomFull => self.refuse(presence, "wait", "service-unavailable"),
                    JoinError::TooManyJoins => self.refuse(presence, "wait", "resource-constraint"),
                    JoinError::Broker(_) => self.refuse(presence, "wait", "remote-server-timeout"),
                }
            }
        }
    }

    /// Leaves the rooms it made and has not configured yet (still locked).
    pub(crate) fn leave_locked_rooms(&mut self) {
        let locked: Vec<Arc<str>> = self.rooms.keys().filter(|room| self.xmpp.muc.with(room, |r| r.locked).unwrap_or(false)).cloned().collect();
        for room in locked {
            self.leave(&room, false);
        }
    }

    /// Leaves `room`; `tell` sends the occupant its own unavailable
    /// presence (not when its session is ending).
    pub(super) fn leave(&mut self, room: &Arc<str>, tell: bool) {
        let (Some(occupancy), Some(rooms)) = (self.rooms.remove(room), &self.xmpp.rooms) else { return };
        // Not an occupant any more when an owner destroyed the room.
        if self.xmpp.muc.is_occupant(room, self.id) {
            self.xmpp.muc.exit(room, self.id);
            if rooms.leave(room, self.id).is_some() {
                let _ = rooms.publish(room, self.room_event(room, RoomEvent::leave(occupancy.nick.clone())));
            }
        }
        if tell {
            self.send(&muc::presence(&occupancy.room_jid, &occupancy.nick, &self.full_jid(), &Item::participant(), false, &["110"]));
        }
    }

    /// A message to a room (groupchat, or a subject) or to an occupant.
    pub(super) async fn on_room_message(&mut self, message: &Element, to: &Jid) {
        let room: Arc<str> = Arc::from(to.local.as_deref().unwrap_or_default());
        let (Some(occupancy), Some(rooms)) = (self.occupancy(&room), self.xmpp.rooms.clone()) else {
            return self.refuse(message, "modify", "not-acceptable");
        };
        if let Some(nick) = &to.resource {
            // XEP-0045 §7.5: a private message is not of type groupchat.
            if message.get("type") == Some("groupchat") {
                return self.refuse(message, "modify", "bad-request");
            }
            return Box::pin(self.carry_to_occupant(message, &room, &occupancy, nick)).await;
        }
        if let Some(invite) = message.find("x", ns::MUC_USER).and_then(|x| x.find("invite", ns::MUC_USER)) {
            return self.invite(message, &room, &occupancy, invite).await;
        }
        if message.get("type") != Some("groupchat") {
            return self.refuse(message, "modify", "bad-request");
        }
        if let Some(subject) = message.find("subject", ns::CLIENT) {
            return self.set_subject(message, &room, &occupancy, subject.text_content()).await;
        }
        let name = occupancy.nick.clone();
        let event = match message.find("body", ns::CLIENT) {
            Some(body) => RoomEvent::Message { name, text: Arc::from(body.text_content()) },
            // A chat state alone (XEP-0085): the room's typing notification
            // (IRC's TAGMSG with +typing).
            None => match muc::typing_of(message) {
                Some(state) => RoomEvent::Tags { name, tags: Arc::from(format!("+typing={state}")) },
                None => return,
            },
        };
        let role = self.xmpp.muc.with(&room, |r| r.occupant_by_member(self.id).map(|o| o.role)).flatten();
        if role == Some(Role::Visitor) {
            // XEP-0045 §7.4: a visitor in a moderated room has no voice.
            return self.refuse(message, "auth", "forbidden");
        }
        if matches!(event, RoomEvent::Tags { .. }) {
            // Neither kept nor answered.
            let _ = rooms.publish(&room, self.room_event(&room, event));
            return;
        }
        // Its reflection to this session carries back its id (XEP-0045 §7.4).
        if let RoomEvent::Message { text, .. } = &event {
            occupancy.await_reflection(message, text);
        }
        if rooms.publish_and_keep(&room, self.room_event(&room, event)).await.is_err() {
            occupancy.refused();
            return self.refuse(message, "wait", "resource-constraint");
        }
        // Queued for the room's archive, if it has one.
        self.unflushed |= self.xmpp.room_archive.is_some();
    }

    /// A mediated invitation (XEP-0045 §7.8.2): the room tells the invitee
    /// who invites it, why, and the room's password if it has one. In a
    /// members-only room only admins and owners invite, and the invitee
    /// becomes a member.
    async fn invite(&mut self, message: &Element, room: &str, occupancy: &Occupancy, invite: &Element) {
        let (Some(me), Some(invitee)) = (self.jid.as_deref().cloned(), invite.get("to").and_then(Jid::parse)) else {
            return self.refuse(message, "modify", "bad-request");
        };
        let limit = self.xmpp.list_limit;
        let allowed = self.xmpp.muc.with(room, |r| {
            if !r.config.members_only {
                return Ok(r.config.password.clone());
            }
            if r.affiliation(&me) < Affiliation::Admin {
                return Err(("auth", "forbidden"));
            }
            let key = invitee.bare().to_string();
            if r.affiliation(&invitee) < Affiliation::Member {
                if r.affiliations.len() >= limit {
                    return Err(("wait", "resource-constraint"));
                }
                r.affiliations.insert(key, Affiliation::Member);
            }
            Ok(r.config.password.clone())
        });
        let password = match allowed {
            Some(Ok(password)) => password,
            Some(Err((kind, condition))) => return self.refuse(message, kind, condition),
            None => return self.refuse(message, "cancel", "item-not-found"),
        };
        let mut told = Element::new("invite", ns::MUC_USER).attr("from", &me.to_string());
        if let Some(reason) = invite.find("reason", ns::MUC_USER) {
            told = told.child(Element::new("reason", ns::MUC_USER).text(&reason.text_content()));
        }
        let mut x = Element::new("x", ns::MUC_USER).child(told);
        if let Some(password) = password {
            x = x.child(Element::new("password", ns::MUC_USER).text(&password));
        }
        let invitation = Element::new("message", ns::CLIENT).attr("from", &occupancy.room_jid).attr("to", &invitee.to_string()).child(x);
        for (outbox, framing) in self.xmpp.router.route(&invitee) {
            let _ = outbox.push(framing.payload(&invitation));
        }
        Box::pin(self.xmpp.tell_others(vec![invitee.to_string().into()], &invitation)).await;
        // A persistent room keeps its new member (a failure is logged and counted).
        Box::pin(self.xmpp.share_room(room)).await;
        let _ = self.xmpp.keep_room(room, false).await;
    }

    /// XEP-0045 §8.1: a new subject, from an occupant allowed to set it,
    /// to every XMPP occupant (the chat app has no subjects).
    async fn set_subject(&mut self, message: &Element, room: &str, occupancy: &Occupancy, text: String) {
        let allowed = self.xmpp.muc.with(room, |r| {
            let role = r.occupant_by_member(self.id).map_or(Role::None, |o| o.role);
            let allowed = role == Role::Moderator || (r.config.change_subject && role >= Role::Participant);
            if allowed {
                r.subject = (!text.is_empty()).then(|| (occupancy.nick.clone(), text.clone()));
            }
            allowed
        });
        if allowed != Some(true) {
            return self.refuse(message, "auth", "forbidden");
        }
        // Every member, of every protocol and node, is told by the room,
        // in its order: an occupant as the subject (`muc::render`, which
        // also keeps it as the room's subject on each node).
        if let Some(rooms) = &self.xmpp.rooms
            && rooms.publish(room, self.room_event(&Arc::from(room), RoomEvent::Topic { name: occupancy.nick.clone(), text: Arc::from(text) })).is_err()
        {
            return self.refuse(message, "wait", "remote-server-timeout");
        }
        // Then a persistent room's subject is kept (a failure is logged:
        // the subject has no answer to carry an error).
        let _ = self.xmpp.keep_room(room, false).await;
    }

    /// A stanza from this occupant to occupant `nick` (a private message,
    /// or an iq): to that occupant's real JID, from this one's room JID;
    /// an occupant another node holds gets it from there.
    async fn carry_to_occupant(&mut self, stanza: &Element, room: &str, occupancy: &Occupancy, nick: &str) {
        let target = self.xmpp.muc.with(room, |r| r.occupant(nick).cloned()).flatten();
        let mut routed = stanza.clone();
        routed.attrs.retain(|(n, _)| n != "from" && n != "to");
        routed.attrs.push(("from".into(), format!("{}/{}", occupancy.room_jid, occupancy.nick)));
        if stanza.name == "message" {
            routed.children.push(wire::xmpp::Node::Element(Element::new("x", ns::MUC_USER)));
        }
        let Some(target) = target else {
            // Addressed to the occupant's room JID; the node that holds it
            // puts its real JID in.
            let to = self.xmpp.room_address(room, Some(nick));
            if self.xmpp.has_other_nodes() && self.xmpp.ask_others(&to, &routed.clone().attr("to", &to.to_string())).await > 0 {
                return;
            }
            // A chat-app member has no JID to carry it to.
            return self.refuse(stanza, "cancel", "item-not-found");
        };
        routed.attrs.push(("to".into(), target.jid.to_string()));
        let _ = target.outbox.push(target.framing.payload(&routed));
    }

    /// An iq to a room or to one of its occupants.
    pub(super) async fn on_room_iq(&mut self, iq: &Element, to: &Jid, payload: &Element) {
        let room: Arc<str> = Arc::from(to.local.as_deref().unwrap_or_default());
        let kind = iq.get("type").unwrap_or_default();
        if to.resource.is_none() && (kind == "result" || kind == "error") {
            return;
        }
        if let Some(nick) = &to.resource {
            return match self.occupancy(&room) {
                Some(occupancy) => Box::pin(self.carry_to_occupant(iq, &room, &occupancy, nick)).await,
                // XEP-0045 §6.6: no disco (nor anything) of an occupant for a non-occupant.
                None => self.refuse(iq, "modify", "bad-request"),
            };
        }
        match (payload.ns.as_str(), payload.name.as_str(), kind) {
            (ns::DISCO_INFO, "query", "get") => {
                // A chat room XMPP has no state for has the defaults.
                let archived = self.xmpp.room_archive.is_some();
                let info = self.xmpp.muc.with(&room, |r| room_info(&r.config, &room, archived)).unwrap_or_else(|| room_info(self.xmpp.muc.defaults(), &room, archived));
                self.reply(iq, Some(info));
            }
            (ns::DISCO_ITEMS, "query", "get") => {
                let room_jid = to.bare().to_string();
                let nicks = self.xmpp.muc.with(&room, |r| r.occupants.iter().map(|o| o.nick.clone()).collect::<Vec<_>>()).unwrap_or_default();
                let mut items = Element::new("query", ns::DISCO_ITEMS);
                for nick in nicks {
                    items = items.child(Element::new("item", ns::DISCO_ITEMS).attr("jid", &format!("{room_jid}/{nick}")));
                }
                self.reply(iq, Some(items));
            }
            (archive::MAM, "query", "set") => Box::pin(self.on_room_mam_query(iq, &room, &to.bare().to_string(), payload)).await,
            (archive::MAM, "query", "get") if self.xmpp.room_archive.is_some() => self.reply(iq, Some(archive::form())),
            (ns::MUC_OWNER, "query", "get" | "set") => self.on_owner(iq, &room, to, payload).await,
            (ns::MUC_ADMIN, "query", "get" | "set") => self.on_admin(iq, &room, to, payload).await,
            _ => self.refuse(iq, "cancel", "service-unavailable"),
        }
    }

    /// The owner's requests (XEP-0045 §10): the configuration form, its
    /// submission (which unlocks a new room, and makes it persistent or
    /// not), and destroying the room. A persistent room's change is
    /// answered once the store has it.
    async fn on_owner(&mut self, iq: &Element, room: &Arc<str>, to: &Jid, query: &Element) {
        let Some(me) = self.jid.as_deref().cloned() else { return };
        let owner = self.xmpp.muc.with(room, |r| r.affiliation(&me) == Affiliation::Owner);
        match owner {
            None => return self.refuse(iq, "cancel", "item-not-found"),
            Some(false) => return self.refuse(iq, "auth", "forbidden"),
            Some(true) => {}
        }
        if iq.get("type") == Some("get") {
            let form = self
                .xmpp
                .muc
                .with(room, |r| {
                    let owners: Vec<&str> = r.affiliations.iter().filter(|(_, a)| **a == Affiliation::Owner).map(|(jid, _)| jid.as_str()).collect();
                    config_form(&r.config, &owners)
                })
                .unwrap_or_else(|| Element::new("x", ns::DATA));
            return self.reply(iq, Some(Element::new("query", ns::MUC_OWNER).child(form)));
        }
        if let Some(destroy) = query.find("destroy", ns::MUC_OWNER) {
            let was = self.xmpp.muc.with(room, |r| r.config.persistent).unwrap_or(false);
            self.destroy(room, &to.bare().to_string(), destroy);
            // Its history goes with it.
            if let Some((archive, prefix)) = &self.xmpp.room_archive {
                archive.forget(&base::rooms::ArchivedRooms::archive_of(prefix, room), &self.xmpp.context).await;
            }
            let kept = self.xmpp.keep_room(room, was).await;
            Box::pin(self.xmpp.share_destroyed(room, destroy)).await;
            return match kept {
                Ok(()) => self.reply(iq, None),
                Err(_) => self.refuse(iq, "wait", "internal-server-error"),
            };
        }
        let Some(form) = query.find("x", ns::DATA) else {
            return self.refuse(iq, "modify", "bad-request");
        };
        let room_jid = to.bare().to_string();
        if form.get("type") == Some("cancel") {
            // XEP-0045 §10.1.3: cancelling a new room's first configuration
            // destroys it; cancelling a later one changes nothing.
            if self.xmpp.muc.with(room, |r| r.locked).unwrap_or(false) {
                let destroy = Element::new("destroy", ns::MUC_OWNER);
                self.destroy(room, &room_jid, &destroy);
                Box::pin(self.xmpp.share_destroyed(room, &destroy)).await;
            }
            return self.reply(iq, None);
        }
        let owners = match owners_of(form) {
            Ok(owners) => owners,
            Err(refusal) => return self.refuse(iq, refusal.0, refusal.1),
        };
        let (id, limit) = (self.id, self.xmpp.list_limit);
        let applied = self.xmpp.muc.with(room, |r| {
            let before = r.config.clone();
            if form.get("type") == Some("submit") {
                apply_form(&mut r.config, form).map_err(|_| ("modify", "not-acceptable"))?;
            }
            let mut effects = Vec::new();
            if let Some(owners) = &owners {
                effects.extend(set_owners(r, &me, id, owners, limit)?);
            }
            let first = std::mem::replace(&mut r.locked, false);
            // XEP-0045 §10.2: a room made members-only takes out those who are not members (322).
            if r.config.members_only && !before.members_only {
                let out: Vec<Occupant> = r.occupants.iter().filter(|o| r.affiliation(&o.jid) < Affiliation::Member).cloned().collect();
                for o in out {
                    let affiliation = r.affiliation(&o.jid);
                    r.occupants.retain(|x| x.member != o.member);
                    r.departed.insert(o.nick.clone(), Departure { affiliation, codes: vec!["322"] });
                    effects.push(Effect::Removed(o, affiliation, vec!["322"]));
                }
            }
            Ok::<_, Refusal>((before, r.config.clone(), first, effects))
        });
        let (before, after, first, effects) = match applied {
            Some(Ok(applied)) => applied,
            Some(Err((kind, condition))) => return self.refuse(iq, kind, condition),
            None => return self.refuse(iq, "cancel", "item-not-found"),
        };
        self.tell(room, &room_jid, effects);
        if !first && before != after {
            self.xmpp.announce_config(room, &room_jid, &before, &after);
        }
        // Handed on first: the version the store keeps is the one shared.
        Box::pin(self.xmpp.share_room(room)).await;
        match self.xmpp.keep_room(room, before.persistent).await {
            Ok(()) => self.reply(iq, None),
            Err(_) => self.refuse(iq, "wait", "internal-server-error"),
        }
    }

    /// Takes every XMPP occupant out of `room` (XEP-0045 §10.9), each told
    /// with a `<destroy/>`; the others in the chat room see them leave.
    fn destroy(&mut self, room: &Arc<str>, room_jid: &str, destroy: &Element) {
        let occupants = self.xmpp.muc.destroy(room);
        self.xmpp.tell_destroyed(room, room_jid, occupants, destroy);
    }
}

impl crate::Xmpp {
    /// Tells every XMPP occupant on this node that the room's configuration
    /// changed (XEP-0045 §10.2.1): 172 when real JIDs are now shown to
    /// all, 173 when no longer, 104 for any other change.
    pub(crate) fn announce_config(&self, room: &str, room_jid: &str, before: &Config, after: &Config) {
        let mut codes = Vec::new();
        match (before.whois_anyone, after.whois_anyone) {
            (false, true) => codes.push("172"),
            (true, false) => codes.push("173"),
            _ => {}
        }
        let others = Config { whois_anyone: before.whois_anyone, ..after.clone() };
        if others != *before {
            codes.push("104");
        }
        let occupants = self.muc.with(room, |r| r.occupants.clone()).unwrap_or_default();
        for o in occupants {
            let x = codes.iter().fold(Element::new("x", ns::MUC_USER), |x, code| x.child(Element::new("status", ns::MUC_USER).attr("code", code)));
            let message = Element::new("message", ns::CLIENT).attr("type", "groupchat").attr("from", room_jid).attr("to", &o.jid.to_string()).child(x);
            let _ = o.outbox.push(o.framing.payload(&message));
        }
    }

    /// Tells `occupants`, taken out of `room` as it was destroyed
    /// (`destroy`, the owner's request), with a `<destroy/>`; the others
    /// in the chat room see them leave.
    pub(crate) fn tell_destroyed(&self, room: &Arc<str>, room_jid: &str, occupants: Vec<Occupant>, destroy: &Element) {
        let Some(rooms) = self.rooms.clone() else { return };
        for o in &occupants {
            rooms.leave(room, o.member);
        }
        let mut told = Element::new("destroy", ns::MUC_USER);
        if let Some(jid) = destroy.get("jid") {
            told = told.attr("jid", jid);
        }
        // The alternate venue's password, and why (XEP-0045 §10.9).
        for name in ["password", "reason"] {
            if let Some(given) = destroy.find(name, ns::MUC_OWNER) {
                told = told.child(Element::new(name, ns::MUC_USER).text(&given.text_content()));
            }
        }
        for o in &occupants {
            // Its own presence, so with 110: a client then knows it is out
            // before it hears why.
            let mut presence = muc::presence(room_jid, &o.nick, &o.jid.to_string(), &Item::participant(), false, &["110"]);
            if let Some(wire::xmpp::Node::Element(x)) = presence.children.last_mut() {
                x.children.push(wire::xmpp::Node::Element(told.clone()));
            }
            let _ = o.outbox.push(o.framing.payload(&presence));
            let _ = rooms.publish(room, Payload::event(room.clone(), RoomEvent::leave(o.nick.clone())));
        }
    }
}

/// A presence's own children, those that are not MUC's.
fn shown_of(presence: &Element) -> Vec<Element> {
    presence.elements().filter(|e| e.ns != ns::MUC && e.ns != ns::MUC_USER).cloned().collect()
}

/// Occupant `nick`'s presence as it is now, to every XMPP occupant of
/// `room` on this node (with 110 to itself).
pub(super) fn announce(muc: &MucRooms, room: &str, room_jid: &str, nick: &str) {
    let occupants = muc.with(room, |r| r.occupants.clone()).unwrap_or_default();
    for viewer in occupants {
        let (item, _) = shown_to(muc, room, nick, viewer.member);
        let codes: &[&str] = if &*viewer.nick == nick { &["110"] } else { &[] };
        let stanza = muc::presence(room_jid, nick, &viewer.jid.to_string(), &item, true, codes);
        let _ = viewer.outbox.push(viewer.framing.payload(&stanza));
    }
}

/// What occupant `viewer` of `room` may know of occupant `nick`, and the
/// status codes of its leave when it was taken out of the room.
pub(super) fn shown_to(muc: &MucRooms, room: &str, nick: &str, viewer: hub::MemberId) -> (Item, Vec<&'static str>) {
    let departed = muc.with(room, |r| r.departed.get(nick).cloned()).flatten();
    match departed {
        Some(gone) => (Item { affiliation: gone.affiliation, role: Role::None, jid: None, nick: None, shown: Vec::new() }, gone.codes),
        None => (item_of(muc, room, nick, viewer), Vec::new()),
    }
}

/// What occupant `viewer` of `room` may know of occupant `nick`: its
/// affiliation and role, and its real JID if the room shows it.
fn item_of(muc: &MucRooms, room: &str, nick: &str, viewer: hub::MemberId) -> Item {
    muc.with(room, |r| {
        let sees = r.shows_jids_to(r.occupant_by_member(viewer).map_or(Role::None, |o| o.role));
        r.occupant(nick).map(|o| Item { affiliation: r.affiliation(&o.jid), role: o.role, jid: sees.then(|| o.jid.to_string()), nick: None, shown: o.shown.clone() })
    })
    .flatten()
    .unwrap_or_else(Item::participant)
}

/// A room's disco#info (XEP-0045 §6.4): its identity and its features,
/// with XEP-0313's and XEP-0359's when its messages are `archived`.
fn room_info(config: &Config, room: &str, archived: bool) -> Element {
    let name = if config.name.is_empty() { room } else { &config.name };
    let mut info = Element::new("query", ns::DISCO_INFO)
        .child(Element::new("identity", ns::DISCO_INFO).attr("category", "conference").attr("type", "text").attr("name", name));
    let features = [
        ns::MUC,
        if config.public { "muc_public" } else { "muc_hidden" },
        if config.password.is_some() { "muc_passwordprotected" } else { "muc_unsecured" },
        if config.whois_anyone { "muc_nonanonymous" } else { "muc_semianonymous" },
        if config.members_only { "muc_membersonly" } else { "muc_open" },
        if config.moderated { "muc_moderated" } else { "muc_unmoderated" },
        if config.persistent { "muc_persistent" } else { "muc_temporary" },
    ];
    let archive: &[&str] = if archived { &[archive::MAM, archive::MAM_EXTENDED, archive::SID] } else { &[] };
    for var in features.iter().chain(archive) {
        info = info.child(Element::new("feature", ns::DISCO_INFO).attr("var", var));
    }
    info
}

fn field(var: &str, kind: &str, label: &str, values: &[&str]) -> Element {
    let mut field = Element::new("field", ns::DATA).attr("var", var).attr("type", kind).attr("label", label);
    for value in values {
        field = field.child(Element::new("value", ns::DATA).text(value));
    }
    field
}

fn flag(on: bool) -> &'static str {
    if on { "1" } else { "0" }
}

/// The owners a submitted configuration form names (XEP-0045 §10.2's
/// `muc#roomconfig_roomowners`), as bare JIDs; `None` if it names none.
/// A form that would leave the room without an owner is refused with
/// conflict, one with a JID that is not one with jid-malformed.
fn owners_of(form: &Element) -> Result<Option<Vec<Jid>>, Refusal> {
    let Some(field) = form.elements().find(|f| f.name == "field" && f.get("var") == Some("muc#roomconfig_roomowners")) else {
        return Ok(None);
    };
    let mut owners = Vec::new();
    for value in field.elements().filter(|e| e.name == "value").map(Element::text_content).filter(|v| !v.trim().is_empty()) {
        let jid = Jid::parse(value.trim()).ok_or(("modify", "jid-malformed"))?.bare();
        if !owners.contains(&jid) {
            owners.push(jid);
        }
    }
    if owners.is_empty() {
        return Err(("cancel", "conflict"));
    }
    Ok(Some(owners))
}

/// Makes `owners` the room's owners, as one owner's affiliation changes
/// would (XEP-0045 §10.3, §10.4): those added first, so that the room is
/// never left without one; the others become unaffiliated.
fn set_owners(room: &mut MucRoom, me: &Jid, id: hub::MemberId, owners: &[Jid], limit: usize) -> Result<Vec<Effect>, Refusal> {
    let item = |affiliation: &str, jid: &str| Element::new("item", ns::MUC_ADMIN).attr("affiliation", affiliation).attr("jid", jid);
    let current: Vec<String> = room.affiliations.iter().filter(|(_, a)| **a == Affiliation::Owner).map(|(jid, _)| jid.clone()).collect();
    let mut effects = Vec::new();
    for owner in owners.iter().map(Jid::to_string).filter(|o| !current.contains(o)) {
        effects.extend(change(room, me, id, &item("owner", &owner), limit)?);
    }
    for gone in current.iter().filter(|c| !owners.iter().any(|o| o.to_string() == **c)) {
        effects.extend(change(room, me, id, &item("none", gone), limit)?);
    }
    Ok(effects)
}

/// The configuration form (XEP-0045 §10.2) with the settings honoured,
/// and the room's `owners` (bare JIDs).
fn config_form(config: &Config, owners: &[&str]) -> Element {
    let max = config.max_users.map(|m| m.to_string()).unwrap_or_else(|| "none".into());
    let mut maxusers = field("muc#roomconfig_maxusers", "list-single", "Most occupants", &[&max]);
    for option in ["10", "20", "30", "50", "100", "none"] {
        maxusers = maxusers.child(Element::new("option", ns::DATA).child(Element::new("value", ns::DATA).text(option)));
    }
    let whois = field("muc#roomconfig_whois", "list-single", "Who sees real JIDs", &[if config.whois_anyone { "anyone" } else { "moderators" }])
        .child(Element::new("option", ns::DATA).attr("label", "Moderators").child(Element::new("value", ns::DATA).text("moderators")))
        .child(Element::new("option", ns::DATA).attr("label", "Anyone").child(Element::new("value", ns::DATA).text("anyone")));
    Element::new("x", ns::DATA)
        .attr("type", "form")
        .child(field("FORM_TYPE", "hidden", "", &["http://jabber.org/protocol/muc#roomconfig"]))
        .child(field("muc#roomconfig_roomname", "text-single", "Name", &[&config.name]))
        .child(field("muc#roomconfig_roomdesc", "text-single", "Description", &[&config.description]))
        .child(field("muc#roomconfig_changesubject", "boolean", "Occupants may change the subject", &[flag(config.change_subject)]))
        .child(field("muc#roomconfig_publicroom", "boolean", "Listed", &[flag(config.public)]))
        .child(field("muc#roomconfig_persistentroom", "boolean", "Persistent", &[flag(config.persistent)]))
        .child(field("muc#roomconfig_membersonly", "boolean", "Members only", &[flag(config.members_only)]))
        .child(field("muc#roomconfig_moderatedroom", "boolean", "Moderated", &[flag(config.moderated)]))
        .child(field("muc#roomconfig_passwordprotectedroom", "boolean", "Password needed", &[flag(config.password.is_some())]))
        .child(field("muc#roomconfig_roomsecret", "text-private", "Password", &[config.password.as_deref().unwrap_or_default()]))
        .child(maxusers)
        .child(whois)
        .child(field("muc#roomconfig_roomowners", "jid-multi", "Owners", owners))
}

/// The longest text a room's configuration keeps (its name, description,
/// password): what every `disco#items` answer repeats must stay small.
pub(crate) const CONFIG_TEXT_CHARS: usize = 256;

/// Applies a submitted configuration form; the fields it does not name
/// keep their values.
fn apply_form(config: &mut Config, form: &Element) -> Result<(), &'static str> {
    let mut protected = None;
    let mut secret = None;
    for field in form.elements().filter(|e| e.name == "field") {
        let values: Vec<String> = field.elements().filter(|e| e.name == "value").map(Element::text_content).collect();
        let value = values.first().map(String::as_str).unwrap_or_default();
        if value.chars().count() > CONFIG_TEXT_CHARS {
            return Err("a room's name, description and password are at most 256 characters");
        }
        let on = matches!(value, "1" | "true");
        match field.get("var").unwrap_or_default() {
            "muc#roomconfig_roomname" => config.name = value.to_owned(),
            "muc#roomconfig_roomdesc" => config.description = value.to_owned(),
            "muc#roomconfig_changesubject" => config.change_subject = on,
            "muc#roomconfig_publicroom" => config.public = on,
            "muc#roomconfig_persistentroom" => config.persistent = on,
            "muc#roomconfig_passwordprotectedroom" => protected = Some(on),
            "muc#roomconfig_roomsecret" => secret = Some(value.to_owned()),
            "muc#roomconfig_maxusers" => config.max_users = value.parse().ok(),
            "muc#roomconfig_whois" => config.whois_anyone = value == "anyone",
            "muc#roomconfig_membersonly" => config.members_only = on,
            "muc#roomconfig_moderatedroom" => config.moderated = on,
            _ => {}
        }
    }
    match (protected, secret) {
        (Some(false), _) => config.password = None,
        (Some(true), Some(secret)) | (None, Some(secret)) if !secret.is_empty() => config.password = Some(secret),
        (Some(true), _) if config.password.is_none() => return Err("a password-protected room needs a password"),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submitted(fields: &[(&str, &str)]) -> Element {
        let mut form = Element::new("x", ns::DATA).attr("type", "submit");
        for (var, value) in fields {
            form = form.child(field(var, "text-single", "", &[value]));
        }
        form
    }

    #[test]
    fn a_submitted_form_sets_what_it_names_and_keeps_the_rest() {
        let mut config = Config::default();
        apply_form(&mut config, &submitted(&[("muc#roomconfig_roomname", "Lobby"), ("muc#roomconfig_publicroom", "0")])).unwrap();
        let long = "n".repeat(CONFIG_TEXT_CHARS + 1);
        assert!(apply_form(&mut config, &submitted(&[("muc#roomconfig_roomname", &long)])).is_err());
        assert_eq!(config.name, "Lobby");
        assert_eq!((config.name.as_str(), config.public, config.change_subject), ("Lobby", false, true));
        apply_form(&mut config, &submitted(&[("muc#roomconfig_passwordprotectedroom", "1"), ("muc#roomconfig_roomsecret", "pw")])).unwrap();
        assert_eq!(config.password.as_deref(), Some("pw"));
        apply_form(&mut config, &submitted(&[("muc#roomconfig_maxusers", "10"), ("muc#roomconfig_whois", "anyone")])).unwrap();
        assert_eq!((config.max_users, config.whois_anyone), (Some(10), true));
        apply_form(&mut config, &submitted(&[("muc#roomconfig_maxusers", "none"), ("muc#roomconfig_passwordprotectedroom", "0")])).unwrap();
        assert_eq!((config.max_users, config.password.as_deref()), (None, None));
        apply_form(&mut config, &submitted(&[("muc#roomconfig_persistentroom", "1")])).unwrap();
        assert!(config.persistent);
        assert!(apply_form(&mut config, &submitted(&[("muc#roomconfig_passwordprotectedroom", "1")])).is_err());
    }

    #[test]
    fn the_form_to_the_byte() {
        let form = config_form(&Config::default(), &["ann@l"]).to_xml(ns::CLIENT);
        assert!(form.starts_with("<x xmlns=\"jabber:x:data\" type=\"form\"><field var=\"FORM_TYPE\" type=\"hidden\" label=\"\"><value>http://jabber.org/protocol/muc#roomconfig</value></field>"), "{form}");
        assert!(form.contains("<field var=\"muc#roomconfig_whois\" type=\"list-single\" label=\"Who sees real JIDs\"><value>moderators</value>"));
        assert!(form.ends_with("<field var=\"muc#roomconfig_roomowners\" type=\"jid-multi\" label=\"Owners\"><value>ann@l</value></field></x>"), "{form}");
    }
}
