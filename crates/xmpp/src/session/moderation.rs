//! Moderators' and admins' requests (XEP-0045 §8, §9): roles (voice,
//! moderator, kick) and affiliations (member, admin, owner, ban), the lists
//! of them, and the presence that tells the room.

use std::sync::Arc;

use hub::{Payload, RoomEvent};
use wire::xmpp::Element;

use super::super::muc::{self, Item};
use super::super::room::{Affiliation, Departure, MucRoom, Occupant, Role};
use super::super::{Jid, ns};
use super::Session;

/// What a change does to the room, for the caller to tell outside the
/// room's lock.
pub(crate) enum Effect {
    /// An occupant was taken out (kicked, banned, or no longer a member of
    /// a members-only room): the status codes of its leave.
    Removed(Occupant, Affiliation, Vec<&'static str>),
    /// An occupant's role or affiliation changed.
    Changed(Arc<str>),
}

/// A stanza error's type and condition.
pub(super) type Refusal = (&'static str, &'static str);

impl Session {
    /// The admin list requests (XEP-0045 §9, §10): a persistent room's
    /// affiliations are answered once the store has them.
    pub(super) async fn on_admin(&mut self, iq: &Element, room: &Arc<str>, to: &Jid, query: &Element) {
        let Some(me) = self.jid.as_deref().cloned() else { return };
        let room_jid = to.bare().to_string();
        let items: Vec<&Element> = query.elements().filter(|e| e.name == "item" && e.ns == ns::MUC_ADMIN).collect();
        if items.is_empty() {
            return self.refuse(iq, "modify", "bad-request");
        }
        if iq.get("type") == Some("get") {
            let listed = self.xmpp.muc.with(room, |r| list(r, &me, items[0]));
            return match listed {
                Some(Ok(list)) => self.reply(iq, Some(list)),
                Some(Err((kind, condition))) => self.refuse(iq, kind, condition),
                None => self.refuse(iq, "cancel", "item-not-found"),
            };
        }
        let (id, limit) = (self.id, self.xmpp.list_limit);
        let effects = self.xmpp.muc.with(room, |r| {
            let mut effects = Vec::new();
            for item in &items {
                effects.extend(change(r, &me, id, item, limit)?);
            }
            // The status codes of the latest departures are enough to tell them.
            if r.departed.len() > limit {
                r.departed.clear();
            }
            Ok::<_, Refusal>(effects)
        });
        match effects {
            Some(Ok(effects)) => {
                self.tell(room, &room_jid, effects);
                // Handed on first: the version the store keeps is the one shared.
                Box::pin(self.xmpp.share_room(room)).await;
                match self.xmpp.keep_room(room, false).await {
                    Ok(()) => self.reply(iq, None),
                    Err(_) => self.refuse(iq, "wait", "internal-server-error"),
                }
            }
            // One role for an occupant no XMPP occupant here has: the
            // node that holds it, if any, decides.
            Some(Err(("cancel", "item-not-found"))) if items.len() == 1 && self.xmpp.has_other_nodes() && items[0].get("role").and_then(Role::parse).is_some() => {
                Box::pin(self.role_elsewhere(iq, room, items[0], &me)).await;
            }
            Some(Err((kind, condition))) => self.refuse(iq, kind, condition),
            None => self.refuse(iq, "cancel", "item-not-found"),
        }
    }

    /// Asks the other nodes to give the occupant `item` names the role it
    /// says, for this moderator: done where one node did it, and
    /// `item-not-found` where none could.
    async fn role_elsewhere(&mut self, iq: &Element, room: &Arc<str>, item: &Element, me: &Jid) {
        let standing = self.xmpp.muc.with(room, |r| (r.affiliation(me), r.occupant_by_member(self.id).map_or(Role::None, |o| o.role)));
        let Some((mine, Role::Moderator)) = standing else {
            return self.refuse(iq, "auth", "forbidden");
        };
        let (Some(nick), Some(role)) = (item.get("nick"), item.get("role")) else { return };
        let asked = Element::new("room", crate::nodes::SHARED_ROOM).attr("name", room).child(Element::new("role", crate::nodes::SHARED_ROOM).attr("nick", nick).attr("role", role).attr("by", mine.name()));
        let occupant = self.xmpp.room_address(room, Some(nick));
        if self.xmpp.ask_others(&occupant, &asked).await > 0 {
            self.reply(iq, None);
        } else {
            self.refuse(iq, "cancel", "item-not-found");
        }
    }

    /// Tells the room what changed (see `Xmpp::tell_effects`).
    pub(super) fn tell(&self, room: &Arc<str>, room_jid: &str, effects: Vec<Effect>) {
        self.xmpp.tell_effects(room, room_jid, effects);
    }
}

impl crate::Xmpp {
    /// Tells the room what changed: a removed occupant gets its own
    /// unavailable presence and the others see it leave (with its status
    /// codes); a changed one's new presence goes to every XMPP occupant
    /// on this node.
    pub(crate) fn tell_effects(&self, room: &Arc<str>, room_jid: &str, effects: Vec<Effect>) {
        let Some(rooms) = self.rooms.clone() else { return };
        for effect in effects {
            match effect {
                Effect::Removed(o, affiliation, codes) => {
                    rooms.leave(room, o.member);
                    let item = Item { affiliation, role: Role::None, jid: Some(o.jid.to_string()), nick: None, shown: Vec::new() };
                    let own: Vec<&str> = std::iter::once("110").chain(codes.iter().copied()).collect();
                    let _ = o.outbox.push(o.framing.payload(&muc::presence(room_jid, &o.nick, &o.jid.to_string(), &item, false, &own)));
                    let _ = rooms.publish(room, Payload::event(room.clone(), RoomEvent::leave(o.nick.clone())));
                }
                Effect::Changed(nick) => super::rooms::announce(&self.muc, room, room_jid, &nick),
            }
        }
    }
}


/// Gives occupant `target` `role`, as a moderator of affiliation `mine`
/// asks (a kick, for `Role::None`): nobody changes the role of an admin or
/// owner but by their affiliation, and only admins and owners make or
/// unmake moderators.
pub(crate) fn set_role(room: &mut MucRoom, target: Occupant, role: Role, mine: Affiliation) -> Result<Effect, Refusal> {
    let theirs = room.affiliation(&target.jid);
    if (theirs >= Affiliation::Admin && role != target.role) || ((role == Role::Moderator || target.role == Role::Moderator) && mine < Affiliation::Admin) {
        return Err(("cancel", "not-allowed"));
    }
    if role == Role::None {
        room.occupants.retain(|o| o.member != target.member);
        room.departed.insert(target.nick.clone(), Departure { affiliation: theirs, codes: vec!["307"] });
        return Ok(Effect::Removed(target, theirs, vec!["307"]));
    }
    if let Some(o) = room.occupants.iter_mut().find(|o| o.member == target.member) {
        o.role = role;
    }
    Ok(Effect::Changed(target.nick))
}

/// One item of a change request, checked against the actor's standing and
/// applied to the room.
pub(super) fn change(room: &mut MucRoom, me: &Jid, id: hub::MemberId, item: &Element, limit: usize) -> Result<Vec<Effect>, Refusal> {
    let mine = room.affiliation(me);
    let my_role = room.occupant_by_member(id).map_or(Role::None, |o| o.role);
    if let Some(role) = item.get("role") {
        let role = Role::parse(role).ok_or(("modify", "bad-request"))?;
        let nick = item.get("nick").ok_or(("modify", "bad-request"))?;
        // A chat-app member has no role to change.
        let target = room.occupant(nick).cloned().ok_or(("cancel", "item-not-found"))?;
        if my_role != Role::Moderator {
            return Err(("auth", "forbidden"));
        }
        return set_role(room, target, role, mine).map(|effect| vec![effect]);
    }
    let affiliation = item.get("affiliation").and_then(Affiliation::parse).ok_or(("modify", "bad-request"))?;
    let bare = match (item.get("jid").and_then(Jid::parse), item.get("nick")) {
        (Some(jid), _) => jid.bare(),
        (None, Some(nick)) => room.occupant(nick).map(|o| o.jid.bare()).ok_or(("cancel", "item-not-found"))?,
        (None, None) => return Err(("modify", "bad-request")),
    };
    let theirs = room.affiliation(&bare);
    if mine < Affiliation::Admin {
        return Err(("auth", "forbidden"));
    }
    // XEP-0045 §9.1: an admin or owner who bans itself is told conflict,
    // an admin who bans one above it not-allowed.
    if affiliation == Affiliation::Outcast && bare == me.bare() {
        return Err(("cancel", "conflict"));
    }
    if affiliation == Affiliation::Outcast && theirs > mine {
        return Err(("cancel", "not-allowed"));
    }
    if (affiliation >= Affiliation::Admin || theirs >= Affiliation::Admin) && mine < Affiliation::Owner {
        return Err(("auth", "forbidden"));
    }
    if theirs == Affiliation::Owner && affiliation < Affiliation::Owner && room.affiliations.values().filter(|a| **a == Affiliation::Owner).count() == 1 {
        // XEP-0045 §10.6: the last owner stays one.
        return Err(("modify", "conflict"));
    }
    let key = bare.to_string();
    if affiliation != Affiliation::None && !room.affiliations.contains_key(&key) && room.affiliations.len() >= limit {
        return Err(("wait", "resource-constraint"));
    }
    if affiliation == Affiliation::None {
        room.affiliations.remove(&key);
    } else {
        room.affiliations.insert(key, affiliation);
    }
    let theirs: Vec<Occupant> = room.occupants.iter().filter(|o| o.jid.bare() == bare).cloned().collect();
    let out_codes = match affiliation {
        Affiliation::Outcast => Some(vec!["301"]),
        a if a < Affiliation::Member && room.config.members_only => Some(vec!["321"]),
        _ => None,
    };
    let mut effects = Vec::new();
    for o in theirs {
        match &out_codes {
            Some(codes) => {
                room.occupants.retain(|x| x.member != o.member);
                room.departed.insert(o.nick.clone(), Departure { affiliation, codes: codes.clone() });
                effects.push(Effect::Removed(o, affiliation, codes.clone()));
            }
            None => {
                let role = room.role_for(affiliation);
                if let Some(x) = room.occupants.iter_mut().find(|x| x.member == o.member) {
                    x.role = role;
                }
                effects.push(Effect::Changed(o.nick));
            }
        }
    }
    Ok(effects)
}

/// The affiliation list or the role list an item asks for: the member and
/// ban lists to admins and owners (XEP-0045 §9.5, §9.2), the admin and
/// owner lists to owners (§10.8, §10.5) and, in a non-anonymous room, to
/// every occupant, who sees their real JIDs anyway (so that whoever is in
/// the room can find who owns it); a role list to moderators (§8.5).
fn list(room: &MucRoom, me: &Jid, asked: &Element) -> Result<Element, Refusal> {
    let mut query = Element::new("query", ns::MUC_ADMIN);
    if let Some(affiliation) = asked.get("affiliation") {
        let affiliation = Affiliation::parse(affiliation).ok_or(("modify", "bad-request"))?;
        let allowed = if affiliation >= Affiliation::Admin {
            room.affiliation(me) == Affiliation::Owner || (room.config.whois_anyone && room.occupants.iter().any(|o| o.jid == *me))
        } else {
            room.affiliation(me) >= Affiliation::Admin
        };
        if !allowed {
            return Err(("auth", "forbidden"));
        }
        let mut jids: Vec<&String> = room.affiliations.iter().filter(|(_, a)| **a == affiliation).map(|(j, _)| j).collect();
        jids.sort();
        for jid in jids {
            query = query.child(Element::new("item", ns::MUC_ADMIN).attr("affiliation", affiliation.name()).attr("jid", jid));
        }
        return Ok(query);
    }
    let role = asked.get("role").and_then(Role::parse).ok_or(("modify", "bad-request"))?;
    let viewer = room.occupants.iter().find(|o| o.jid == *me).map_or(Role::None, |o| o.role);
    if viewer != Role::Moderator {
        return Err(("auth", "forbidden"));
    }
    for o in room.occupants.iter().filter(|o| o.role == role) {
        let item = Element::new("item", ns::MUC_ADMIN)
            .attr("affiliation", room.affiliation(&o.jid).name())
            .attr("role", role.name())
            .attr("nick", &o.nick)
            .attr("jid", &o.jid.to_string());
        query = query.child(item);
    }
    Ok(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: usize = 100;

    #[test]
    fn a_room_holds_a_bounded_number_of_affiliations_and_keeps_its_last_owner() {
        let mut room = MucRoom::default();
        let owner = Jid::parse("o@l/x").unwrap();
        room.affiliations.insert("o@l".into(), Affiliation::Owner);
        let member = |i: usize| Element::new("item", ns::MUC_ADMIN).attr("affiliation", "member").attr("jid", &format!("m{i}@l"));
        for i in 1..LIMIT {
            assert!(change(&mut room, &owner, 1, &member(i), LIMIT).is_ok());
        }
        assert_eq!(room.affiliations.len(), LIMIT);
        assert_eq!(change(&mut room, &owner, 1, &member(LIMIT), LIMIT).err(), Some(("wait", "resource-constraint")));
        assert!(change(&mut room, &owner, 1, &member(1), LIMIT).is_ok(), "changing one that is there is not a new one");
        let demote = Element::new("item", ns::MUC_ADMIN).attr("affiliation", "admin").attr("jid", "o@l");
        assert_eq!(change(&mut room, &owner, 1, &demote, LIMIT).err(), Some(("modify", "conflict")));
        let stranger = Jid::parse("s@l/x").unwrap();
        assert_eq!(change(&mut room, &stranger, 2, &member(5), LIMIT).err(), Some(("auth", "forbidden")));
    }

    /// XEP-0045 §9.1: an admin or owner banning itself is told conflict,
    /// an admin banning an owner not-allowed; an admin banning a member
    /// may.
    #[test]
    fn bans_of_oneself_and_of_those_above_are_refused_as_the_xep_says() {
        let mut room = MucRoom::default();
        room.affiliations.insert("o@l".into(), Affiliation::Owner);
        room.affiliations.insert("o2@l".into(), Affiliation::Owner);
        room.affiliations.insert("a@l".into(), Affiliation::Admin);
        room.affiliations.insert("m@l".into(), Affiliation::Member);
        let (owner, admin) = (Jid::parse("o@l/x").unwrap(), Jid::parse("a@l/x").unwrap());
        let ban = |jid: &str| Element::new("item", ns::MUC_ADMIN).attr("affiliation", "outcast").attr("jid", jid);
        assert_eq!(change(&mut room, &admin, 2, &ban("a@l"), LIMIT).err(), Some(("cancel", "conflict")));
        assert_eq!(change(&mut room, &owner, 1, &ban("o@l"), LIMIT).err(), Some(("cancel", "conflict")), "even with another owner");
        assert_eq!(change(&mut room, &admin, 2, &ban("o@l"), LIMIT).err(), Some(("cancel", "not-allowed")));
        assert!(change(&mut room, &admin, 2, &ban("m@l"), LIMIT).is_ok());
        assert_eq!(room.affiliation(&Jid::parse("m@l").unwrap()), Affiliation::Outcast);
    }

    /// XEP-0045 §10.5, §10.8: only owners see the owner and admin lists;
    /// admins see the member and ban lists.
    #[test]
    fn the_owner_and_admin_lists_are_the_owners_to_read() {
        let mut room = MucRoom::default();
        room.affiliations.insert("o@l".into(), Affiliation::Owner);
        room.affiliations.insert("a@l".into(), Affiliation::Admin);
        room.affiliations.insert("m@l".into(), Affiliation::Member);
        let (owner, admin, member) = (Jid::parse("o@l/x").unwrap(), Jid::parse("a@l/x").unwrap(), Jid::parse("m@l/x").unwrap());
        let asking = |affiliation: &str| Element::new("item", ns::MUC_ADMIN).attr("affiliation", affiliation);
        for wanted in ["owner", "admin"] {
            assert_eq!(list(&room, &admin, &asking(wanted)).err(), Some(("auth", "forbidden")), "{wanted}");
            assert!(list(&room, &owner, &asking(wanted)).is_ok(), "{wanted}");
        }
        assert_eq!(
            list(&room, &admin, &asking("member")).unwrap().to_xml(ns::MUC_ADMIN),
            "<query><item affiliation=\"member\" jid=\"m@l\"/></query>"
        );
        assert_eq!(list(&room, &member, &asking("member")).err(), Some(("auth", "forbidden")));
    }
}
