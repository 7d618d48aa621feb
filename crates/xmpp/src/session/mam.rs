//! The session's side of message archives (XEP-0313, XEP-0359): what it
//! archives of the messages it carries between users, and the queries of
//! its own archive and of rooms'. The archive's stanzas are
//! `crate::archive`; its writer and the rooms' archiving are `base`'s.

use base::archive::{Archive, next_id};
use base::rooms::ArchivedRooms;
use store::{Cursor, Entry, Filter};
use wire::xmpp::Element;

use super::super::archive::{self, SID};
use super::super::{Jid, Target, ns};
use super::Session;

/// Which archives keep a message between two users of this server: the
/// sender's, the recipient's.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Keepers {
    pub mine: bool,
    pub theirs: bool,
}

impl Session {
    /// Whether a message of type `kind` to `to` is archived: a `chat` or
    /// `normal` one with a body, between users of this server, when
    /// archiving is on.
    pub(super) fn archives(&self, kind: &str, message: &Element, to: &Jid) -> bool {
        self.xmpp.archive.is_some() && matches!(kind, "chat" | "normal") && message.find("body", ns::CLIENT).is_some() && to.domain == self.xmpp.domain && to.local.is_some()
    }

    /// `message` as this user sends it to another user: from this
    /// session's JID, without what only this server writes (ids,
    /// XEP-0359 §4; `archive::strip_claims`): a client's claims go.
    fn sent_as(&self, message: &Element) -> Element {
        let mut sent = self.stamped(message);
        archive::strip_claims(&mut sent);
        sent
    }

    /// Which archives keep a message from this user to `to`, each as its
    /// owner's preferences say (XEP-0441): this user's, unless it is
    /// anonymous, and the recipient's, when it has an account
    /// (`recipient`).
    pub(super) async fn keepers(&self, to: &Jid, recipient: bool) -> Keepers {
        let (Some(me), Some(from)) = (self.user().filter(|_| self.xmpp.archive.is_some()), self.jid.as_deref()) else { return Keepers::default() };
        let mine = !self.anonymous && self.xmpp.archive_keeps(&me, to).await;
        let theirs = recipient && self.xmpp.archive_keeps(&to.bare().to_string(), from).await;
        Keepers { mine, theirs }
    }

    /// `message` as its recipient gets it, and its archive entries: in
    /// this user's archive and the recipient's as `keepers` says (the copy
    /// then carries the recipient's entry's id, XEP-0359). `None` when
    /// this session archives nothing.
    pub(super) fn archived_copy(&self, message: &Element, to: &Jid, keepers: Keepers) -> Option<(Element, Vec<Entry>)> {
        let me = self.user().filter(|_| self.xmpp.archive.is_some())?;
        let them = to.bare().to_string();
        let sent = self.sent_as(message);
        let mut entries = Vec::with_capacity(2);
        if keepers.mine {
            let (at, id) = next_id();
            entries.push(Entry { archive: me.clone(), id, at, with: them.clone(), message: sent.to_xml_standalone() });
        }
        let mut copy = sent;
        if keepers.theirs {
            let (at, id) = next_id();
            copy = copy.child(Element::new("stanza-id", SID).attr("by", &them).attr("id", &id));
            entries.push(Entry { archive: them, id, at, with: me, message: copy.to_xml_standalone() });
        }
        Some((copy, entries))
    }

    /// Archives `message`, sent by this user to `to`, a user of another
    /// server, in this user's archive (that user's server keeps its own)
    /// if its preferences keep it; what it is sent as, stamped with this
    /// session's JID.
    pub(super) async fn archive_sent_away(&mut self, message: &Element, to: &Jid) -> Element {
        let kind = message.get("type").unwrap_or("normal");
        let archived = self.xmpp.archive.is_some() && !self.anonymous && matches!(kind, "chat" | "normal") && message.find("body", ns::CLIENT).is_some();
        let sent = self.sent_as(message);
        if let (true, Some(me)) = (archived, self.user())
            && self.xmpp.archive_keeps(&me, to).await
        {
            let (at, id) = next_id();
            let entry = Entry { archive: me, id, at, with: to.bare().to_string(), message: sent.to_xml_standalone() };
            self.queue_archive(vec![entry]).await;
        }
        sent
    }

    /// Carries `message` to `targets` and queues its archive entries (see
    /// `archived_copy`): the copy carried.
    pub(super) async fn carry_archived(&mut self, message: &Element, to: &Jid, targets: Vec<Target>, recipient: bool) -> Element {
        let keepers = self.keepers(to, recipient).await;
        // Stamped and pushed in the recipient's archive's order, so that
        // its resources see messages racing to it in the order of their ids.
        let carried = base::archive::in_order(&to.bare().to_string(), || {
            let Some((copy, entries)) = self.archived_copy(message, to, keepers) else { return Err(targets) };
            // Stamped already: pushed as it is, not stamped again by `carry`.
            for (outbox, framing) in targets {
                let _ = outbox.push(framing.payload(&copy));
            }
            Ok((copy, entries))
        });
        match carried {
            Ok((copy, entries)) => {
                self.queue_archive(entries).await;
                copy
            }
            Err(targets) => {
                self.carry(message, targets);
                self.stamped(message)
            }
        }
    }

    /// Queues `entries` for the archive's writer.
    pub(super) async fn queue_archive(&mut self, entries: Vec<Entry>) {
        if let Some(archive) = &self.xmpp.archive
            && !entries.is_empty()
        {
            archive.queue(entries).await;
            self.unflushed = true;
        }
    }

    /// Waits until what this session queued for the archive is kept:
    /// before it acknowledges stanzas (XEP-0198).
    pub(super) async fn archived(&mut self) {
        if !std::mem::take(&mut self.unflushed) {
            return;
        }
        if let Some(archive) = self.xmpp.archive.as_ref().or(self.xmpp.room_archive.as_ref().map(|(a, _)| a)) {
            archive.flush().await;
        }
    }

    /// A query of this user's archive (XEP-0313 §4): each message of the
    /// page, then the `<fin/>` that says where the page is.
    pub(super) async fn on_mam_query(&mut self, iq: &Element, query: &Element) {
        let (Some(archive), Some(me)) = (self.xmpp.archive.clone(), self.user()) else {
            return self.refuse(iq, "cancel", "service-unavailable");
        };
        self.answer_query(iq, query, &archive, &me, &me, |entry| wire::xmpp::standalone(&entry.message)).await;
    }

    /// A query of a room's archive (XEP-0313 §4, to the room's JID): by
    /// its occupants, and by those who could enter it without a password.
    pub(super) async fn on_room_mam_query(&mut self, iq: &Element, room: &str, room_jid: &str, query: &Element) {
        let Some((archive, prefix)) = self.xmpp.room_archive.clone() else {
            return self.refuse(iq, "cancel", "service-unavailable");
        };
        let Some(me) = self.jid.as_deref().cloned() else { return };
        let occupant = self.occupancy(room).is_some();
        let refusal = self.xmpp.muc.with(room, |r| r.refusal(&me, None)).flatten().filter(|(_, condition)| *condition != "service-unavailable");
        if let (false, Some((kind, condition))) = (occupant, refusal) {
            return self.refuse(iq, kind, condition);
        }
        let name = ArchivedRooms::archive_of(&prefix, room);
        let message = |entry: &Entry| {
            let body = Element::new("body", ns::CLIENT).text(&entry.message);
            // An entry with no sender is the room's own message, from its bare JID.
            let from = if entry.with.is_empty() { room_jid.to_owned() } else { format!("{room_jid}/{}", entry.with) };
            Some(Element::new("message", ns::CLIENT).attr("from", &from).attr("type", "groupchat").child(body))
        };
        self.answer_query(iq, query, &archive, &name, room_jid, message).await;
    }

    /// Answers `query` with a page of `archive`'s archive `name`, each
    /// entry's message made by `message`, forwarded from `from`.
    async fn answer_query(&mut self, iq: &Element, query: &Element, archive: &Archive, name: &str, from: &str, message: impl Fn(&Entry) -> Option<Element>) {
        // Everything queued before the query, by any session, is in it: a
        // message its client was given live is in its archive.
        archive.flush().await;
        self.unflushed = false;
        let asked = match archive::query(query) {
            Ok(asked) => asked,
            Err(condition) => return self.refuse(iq, "modify", condition),
        };
        let page = match archive.page(name, &asked.filter, &asked.cursor, asked.max).await {
            Ok(Some(page)) => page,
            Ok(None) => return self.refuse(iq, "cancel", "item-not-found"),
            Err(_) => {
                self.xmpp.context.metrics.store_failed("archive");
                return self.refuse(iq, "wait", "internal-server-error");
            }
        };
        let to = self.full_jid();
        let queryid = query.get("queryid");
        let mut entries: Vec<&Entry> = page.entries.iter().collect();
        if asked.flip {
            entries.reverse();
        }
        for entry in entries {
            let Some(message) = message(entry) else { continue };
            let result = Element::new("message", ns::CLIENT).attr("to", &to).attr("from", from).child(archive::result(queryid, entry, message));
            self.send(&result);
        }
        self.reply(iq, Some(archive::fin(&page)));
    }

    /// Archiving preferences (XEP-0441), read or set: a set is kept in
    /// the store before it is answered with what was set, and the other
    /// nodes are told. Each list holds at most `--xmpp-list-limit` JIDs.
    /// An anonymous user's archive keeps nothing: it reads `never`, and
    /// may not change it.
    pub(super) async fn on_mam_prefs(&mut self, iq: &Element, prefs: &Element) {
        let Some(me) = self.user() else { return };
        let set = iq.get("type") == Some("set");
        if self.anonymous {
            if set {
                return self.refuse(iq, "auth", "forbidden");
            }
            return self.reply(iq, Some(crate::prefs::element(&store::Prefs { default: store::Keep::Never, ..store::Prefs::default() })));
        }
        let current = if set {
            let asked = match crate::prefs::parse(prefs, self.xmpp.list_limit) {
                Ok(asked) => asked,
                Err(condition) => return self.refuse(iq, "modify", condition),
            };
            if let Err(e) = self.xmpp.prefs.set(&me, asked.clone()).await {
                tracing::warn!("xmpp: archiving preferences of {me} not kept: {e}");
                self.xmpp.context.metrics.store_failed("archive");
                return self.refuse(iq, "wait", "internal-server-error");
            }
            if self.xmpp.has_other_nodes() {
                Box::pin(self.xmpp.tell_others(vec![me.as_str().into()], &Element::new("prefs", crate::prefs::CHANGED))).await;
            }
            asked
        } else {
            match self.xmpp.prefs.of(&me).await {
                Ok(known) => known.prefs.clone(),
                Err(e) => {
                    tracing::warn!("xmpp: archiving preferences of {me} not read: {e}");
                    self.xmpp.context.metrics.store_failed("archive");
                    return self.refuse(iq, "wait", "internal-server-error");
                }
            }
        };
        self.reply(iq, Some(crate::prefs::element(&current)));
    }

    /// The archive's first and last entries (XEP-0313 §5.1).
    pub(super) async fn on_mam_metadata(&mut self, iq: &Element) {
        let (Some(archive), Some(me)) = (self.xmpp.archive.clone(), self.user()) else {
            return self.refuse(iq, "cancel", "service-unavailable");
        };
        archive.flush().await;
        self.unflushed = false;
        let mut metadata = Element::new("metadata", archive::MAM);
        for (name, cursor) in [("start", Cursor::Oldest), ("end", Cursor::Before(None))] {
            match archive.page(&me, &Filter::default(), &cursor, 1).await {
                Ok(Some(page)) => {
                    if let Some(entry) = page.entries.first() {
                        metadata = metadata.child(Element::new(name, archive::MAM).attr("id", &entry.id).attr("timestamp", &archive::stamp(entry.at)));
                    }
                }
                _ => {
                    self.xmpp.context.metrics.store_failed("archive");
                    return self.refuse(iq, "wait", "internal-server-error");
                }
            }
        }
        self.reply(iq, Some(metadata));
    }
}
