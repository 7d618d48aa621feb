//! What XMPP keeps of a chat room that the chat app has no word for: who
//! created it and owns it, its configuration, its subject, and the XMPP
//! occupants' real JIDs. The room itself (its members, its order, its
//! history) is the chat app's; a chat-app member is an occupant with no
//! affiliation, in the role of a participant.
//!
//! This state lives on the node whose XMPP occupants are in the room: with
//! `--broker`, each node keeps its own. A persistent room's (its owner's
//! choice) is also kept in the store, as JSON (`Kept`), and read back at
//! start; a temporary room is forgotten when its last XMPP occupant leaves.

use std::collections::HashMap;
use std::sync::Arc;

use hub::{MemberId, Outbox};
use parking_lot::Mutex;

use super::Jid;
use super::session::Framing;

/// An occupant's standing in a room (XEP-0045 §5.2), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Affiliation {
    Outcast,
    None,
    Member,
    Admin,
    Owner,
}

impl Affiliation {
    pub fn parse(name: &str) -> Option<Affiliation> {
        Some(match name {
            "outcast" => Affiliation::Outcast,
            "none" => Affiliation::None,
            "member" => Affiliation::Member,
            "admin" => Affiliation::Admin,
            "owner" => Affiliation::Owner,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Affiliation::Outcast => "outcast",
            Affiliation::None => "none",
            Affiliation::Member => "member",
            Affiliation::Admin => "admin",
            Affiliation::Owner => "owner",
        }
    }
}

/// An occupant's role while it is in the room (XEP-0045 §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    None,
    Visitor,
    Participant,
    Moderator,
}

impl Role {
    pub fn parse(name: &str) -> Option<Role> {
        Some(match name {
            "none" => Role::None,
            "visitor" => Role::Visitor,
            "participant" => Role::Participant,
            "moderator" => Role::Moderator,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::None => "none",
            Role::Visitor => "visitor",
            Role::Participant => "participant",
            Role::Moderator => "moderator",
        }
    }
}

/// The owner's settings (XEP-0045 §10.2), as far as they are honoured.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Config {
    /// A name for people; the room's localpart when empty.
    pub name: String,
    pub description: String,
    /// Listed in the MUC service's disco#items.
    pub public: bool,
    /// Occupants who are not moderators may change the subject.
    pub change_subject: bool,
    /// Real JIDs are shown to every occupant, not only to moderators.
    pub whois_anyone: bool,
    /// Needed to enter, when set.
    pub password: Option<String>,
    /// Occupants at most; owners and admins may enter past it.
    pub max_users: Option<usize>,
    /// Only members (and admins and owners) may enter.
    pub members_only: bool,
    /// Only participants and moderators may speak; others enter as visitors.
    pub moderated: bool,
    /// Kept in the store, across restarts and with no occupant.
    pub persistent: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            name: String::new(),
            description: String::new(),
            public: true,
            change_subject: true,
            whois_anyone: false,
            password: None,
            max_users: None,
            members_only: false,
            moderated: false,
            persistent: false,
        }
    }
}

/// An XMPP occupant: its nick, its session and where its stanzas go.
#[derive(Debug, Clone)]
pub struct Occupant {
    pub nick: Arc<str>,
    pub member: MemberId,
    pub jid: Jid,
    pub role: Role,
    pub outbox: Arc<Outbox>,
    pub framing: Framing,
    /// What its presence says besides MUC's own (`<show/>`, `<status/>` …).
    pub shown: Vec<wire::xmpp::Element>,
}

/// One room as XMPP sees it.
#[derive(Debug, Default)]
pub struct MucRoom {
    pub config: Config,
    /// Made by its first occupant and not yet configured (XEP-0045 §10.1):
    /// only its owner may enter.
    pub locked: bool,
    /// The subject and the nick that set it.
    pub subject: Option<(Arc<str>, String)>,
    /// Affiliations by bare JID.
    pub affiliations: HashMap<String, Affiliation>,
    pub occupants: Vec<Occupant>,
    /// How occupants who were taken out (kicked, banned) are shown as they
    /// leave: the item and status codes for their nick's leave event.
    pub departed: HashMap<Arc<str>, Departure>,
    /// Its state is the room's, not defaults this node started it with
    /// while the room was held elsewhere: made here by its first occupant,
    /// read from the store, or taken from another node. Only such a state
    /// is handed to the other nodes.
    pub known: bool,
    /// The version of its configuration and affiliations among the nodes:
    /// a count of changes, and a random tie-break, so that every node keeps
    /// the same one of two changes made at once.
    pub version: (u64, u64),
    /// What of it was last handed to or taken from the other nodes (a
    /// hash), so that a change of nothing they hold is not handed on.
    pub shared: u64,
    /// Its configuration and affiliations at the last version handed to or
    /// taken from the other nodes, or read at start: what this node's next
    /// change is made on. Held only when other nodes share the rooms.
    pub agreed: Option<Box<Agreed>>,
    /// The versions its state comes from, this one's last, at most
    /// [`SEEN`]: a state that comes from this node's change has that
    /// change's version here. Kept only when other nodes share the rooms.
    pub seen: Vec<(u64, u64)>,
    /// This node's changes no state taken since has come from: the newest
    /// one's version, and the state the first one was made on. Another
    /// node's newer state that does not come from them has them merged on
    /// it ([`MucRooms::take_shared`]).
    pub own: Option<Box<Own>>,
}

/// How many versions a room's state remembers it comes from
/// (`MucRoom::seen`): more changes than this made elsewhere before a
/// node's own state reaches the others could lose its change.
pub const SEEN: usize = 32;

/// This node's changes of a room that the other nodes may not have yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Own {
    pub version: (u64, u64),
    pub base: Agreed,
}

/// `ours` and `theirs` together, in order, with `then` last, the newest
/// [`SEEN`] of them.
fn seen_together(ours: &[(u64, u64)], theirs: &[(u64, u64)], then: (u64, u64)) -> Vec<(u64, u64)> {
    let mut seen: Vec<(u64, u64)> = ours.iter().chain(theirs).copied().filter(|v| *v < then).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.push(then);
    let over = seen.len().saturating_sub(SEEN);
    seen.drain(..over);
    seen
}

/// A room's configuration, affiliations and lock, as the nodes hold them
/// alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreed {
    pub config: Config,
    pub affiliations: HashMap<String, Affiliation>,
    pub locked: bool,
}

impl Agreed {
    fn of(room: &MucRoom) -> Box<Agreed> {
        Box::new(Agreed { config: room.config.clone(), affiliations: room.affiliations.clone(), locked: room.locked })
    }

    fn hash(&self) -> u64 {
        Kept::shared_hash(&self.config, &self.affiliations, self.locked)
    }

    /// `theirs`, with what `mine` changed from `self` (its base) on top: each
    /// setting and each affiliation this node changed is this node's, the
    /// rest theirs. So two owners' changes made at once on two nodes are
    /// both kept, and where both changed one thing, the node that merges
    /// (the one whose tie-break lost) keeps its own.
    fn merge(&self, mine: &Agreed, theirs: Agreed) -> Agreed {
        let mut affiliations = theirs.affiliations;
        for jid in self.affiliations.keys().chain(mine.affiliations.keys()) {
            match (self.affiliations.get(jid), mine.affiliations.get(jid)) {
                (was, now) if was == now => {}
                (_, Some(now)) => _ = affiliations.insert(jid.clone(), *now),
                (_, None) => _ = affiliations.remove(jid),
            }
        }
        let config = match (serde_json::to_value(&self.config), serde_json::to_value(&mine.config), serde_json::to_value(&theirs.config)) {
            (Ok(serde_json::Value::Object(base)), Ok(serde_json::Value::Object(mine)), Ok(serde_json::Value::Object(mut merged))) => {
                for (setting, value) in mine {
                    if base.get(&setting) != Some(&value) {
                        merged.insert(setting, value);
                    }
                }
                serde_json::from_value(serde_json::Value::Object(merged)).unwrap_or(theirs.config)
            }
            _ => theirs.config,
        };
        // The first configuration unlocks a room; nothing locks it again.
        Agreed { config, affiliations, locked: theirs.locked && mine.locked }
    }
}

/// How an occupant who was taken out of a room is shown as it leaves: its
/// affiliation and the status codes. (A change of nick is shown from the
/// room's leave event itself, with the occupant under its new nick.)
#[derive(Debug, Clone)]
pub struct Departure {
    pub affiliation: Affiliation,
    pub codes: Vec<&'static str>,
}

impl MucRoom {
    pub fn affiliation(&self, jid: &Jid) -> Affiliation {
        self.affiliations.get(&jid.bare().to_string()).copied().unwrap_or(Affiliation::None)
    }

    pub fn occupant(&self, nick: &str) -> Option<&Occupant> {
        self.occupants.iter().find(|o| &*o.nick == nick)
    }

    pub fn occupant_by_member(&self, member: MemberId) -> Option<&Occupant> {
        self.occupants.iter().find(|o| o.member == member)
    }

    /// Why `jid` may not enter with `password`, as a stanza error's type
    /// and condition (XEP-0045 §7.2).
    pub fn refusal(&self, jid: &Jid, password: Option<&str>) -> Option<(&'static str, &'static str)> {
        let affiliation = self.affiliation(jid);
        if affiliation == Affiliation::Outcast {
            return Some(("auth", "forbidden"));
        }
        if self.locked && affiliation != Affiliation::Owner {
            return Some(("cancel", "item-not-found"));
        }
        if self.config.members_only && affiliation < Affiliation::Member {
            return Some(("auth", "registration-required"));
        }
        if self.config.password.is_some() && affiliation < Affiliation::Admin && self.config.password.as_deref() != password {
            return Some(("auth", "not-authorized"));
        }
        if self.config.max_users.is_some_and(|max| self.occupants.len() >= max) && affiliation < Affiliation::Admin {
            return Some(("wait", "service-unavailable"));
        }
        None
    }

    /// The role an occupant of `affiliation` enters with (XEP-0045 §5.1.2).
    pub fn role_for(&self, affiliation: Affiliation) -> Role {
        match affiliation {
            Affiliation::Owner | Affiliation::Admin => Role::Moderator,
            Affiliation::Member => Role::Participant,
            _ if self.config.moderated => Role::Visitor,
            _ => Role::Participant,
        }
    }

    /// Whether an occupant of `role` sees the real JIDs of the others.
    pub fn shows_jids_to(&self, role: Role) -> bool {
        self.config.whois_anyone || role == Role::Moderator
    }
}

/// What the store keeps of a persistent room: its configuration, its
/// affiliations and its subject (XEP-0045 §10.2: the room outlives its
/// occupants); not its occupants, roles or history.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Kept {
    config: Config,
    affiliations: HashMap<String, Affiliation>,
    subject: Option<(String, String)>,
    #[serde(default)]
    version: (u64, u64),
    /// Still locked by its first occupant (XEP-0045 §10.1): so only to a
    /// node that asks for the room (a persistent room never is).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    locked: bool,
    /// The versions it comes from (`MucRoom::seen`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    seen: Vec<(u64, u64)>,
}

impl Kept {
    fn of(room: &MucRoom) -> Kept {
        Kept {
            config: room.config.clone(),
            affiliations: room.affiliations.clone(),
            subject: room.subject.as_ref().map(|(by, text)| (by.to_string(), text.clone())),
            version: room.version,
            locked: room.locked,
            seen: room.seen.clone(),
        }
    }

    /// A hash of what the nodes share of it: its configuration,
    /// affiliations and lock (the subject goes as the room's topic events).
    fn shared_hash(config: &Config, affiliations: &HashMap<String, Affiliation>, locked: bool) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_string(config).unwrap_or_default().hash(&mut hasher);
        locked.hash(&mut hasher);
        let mut sorted: Vec<_> = affiliations.iter().collect();
        sorted.sort();
        for (jid, affiliation) in sorted {
            (jid, affiliation.name()).hash(&mut hasher);
        }
        hasher.finish()
    }

    fn to_json(&self) -> String {
        // Plain strings, booleans and numbers: nothing here fails to serialise.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Every room XMPP knows of on this node, by room name.
#[derive(Debug, Default)]
pub struct MucRooms {
    rooms: Mutex<HashMap<Arc<str>, MucRoom>>,
    /// How a room is configured until its owner changes it.
    defaults: Config,
    /// Other nodes share the rooms: each keeps what it agreed with them
    /// (`MucRoom::agreed`).
    nodes: bool,
}

/// What became of another node's state of a room this node holds.
#[derive(Debug)]
pub enum Taken {
    /// It replaced this node's, with these effects.
    Newer(Box<Shared>),
    /// This node's is newer: its state, for the other nodes.
    Older(String),
    /// It was made at once with this node's newest change and won the
    /// tie-break: this node's change was merged on it, with these effects,
    /// into a newer state, for the other nodes (and the store).
    Merged(Box<Shared>, String),
}

/// What another node's state of a room changed here, for the caller to
/// tell the occupants.
#[derive(Debug)]
pub struct Shared {
    pub before: Config,
    pub after: Config,
    /// Occupants taken out, with their affiliation and status code.
    pub removed: Vec<(Occupant, Affiliation, &'static str)>,
    /// Occupants whose affiliation changed, by nick.
    pub changed: Vec<Arc<str>>,
}

/// What an XMPP occupant learns as it enters.
#[derive(Debug, Clone)]
pub struct Entered {
    /// It made the room (status 201): it owns it, and the room is locked
    /// until it configures it.
    pub created: bool,
    pub affiliation: Affiliation,
    pub role: Role,
    pub subject: Option<(Arc<str>, String)>,
    /// It may see the others' real JIDs.
    pub shows_jids: bool,
    /// Everyone may see real JIDs (status 100).
    pub non_anonymous: bool,
}

impl MucRooms {
    /// No rooms yet; each one made starts configured as `defaults`.
    pub fn new(defaults: Config) -> MucRooms {
        MucRooms { rooms: Mutex::default(), defaults, nodes: false }
    }

    /// As [`MucRooms::new`], for a node whose rooms other nodes share.
    pub fn shared_with_nodes(defaults: Config) -> MucRooms {
        MucRooms { nodes: true, ..MucRooms::new(defaults) }
    }

    /// Takes `room`'s state as the one agreed with the other nodes, if any.
    fn agree(&self, room: &mut MucRoom) {
        if self.nodes {
            room.agreed = Some(Agreed::of(room));
        }
    }

    /// How a room is configured until its owner changes it.
    pub fn defaults(&self) -> &Config {
        &self.defaults
    }

    /// Runs `f` on room `name`, if XMPP knows it.
    pub fn with<T>(&self, name: &str, f: impl FnOnce(&mut MucRoom) -> T) -> Option<T> {
        self.rooms.lock().get_mut(name).map(f)
    }

    /// Why `jid` may not enter room `name`, if it may not.
    pub fn refusal(&self, name: &str, jid: &Jid, password: Option<&str>) -> Option<(&'static str, &'static str)> {
        self.with(name, |room| room.refusal(jid, password)).flatten()
    }

    /// Records `occupant` in room `name`; `alone` says that nobody else is
    /// in the chat room, so that an unknown room is created by it.
    pub fn enter(&self, name: &Arc<str>, mut occupant: Occupant, alone: bool) -> Entered {
        let mut rooms = self.rooms.lock();
        let created = alone && !rooms.contains_key(name);
        let room = rooms.entry(name.clone()).or_insert_with(|| MucRoom { config: self.defaults.clone(), ..MucRoom::default() });
        if created {
            room.known = true;
            room.locked = true;
            room.affiliations.insert(occupant.jid.bare().to_string(), Affiliation::Owner);
            if self.nodes {
                room.agreed = Some(Agreed::of(room));
            }
        }
        let affiliation = room.affiliation(&occupant.jid);
        occupant.role = room.role_for(affiliation);
        room.departed.remove(&occupant.nick);
        let role = occupant.role;
        room.occupants.retain(|o| o.member != occupant.member);
        room.occupants.push(occupant);
        Entered { created, affiliation, role, subject: room.subject.clone(), shows_jids: room.shows_jids_to(role), non_anonymous: room.config.whois_anyone }
    }

    /// Forgets the XMPP occupant `member` of room `name`; a temporary
    /// room with no XMPP occupant left is forgotten.
    pub fn exit(&self, name: &str, member: MemberId) {
        let mut rooms = self.rooms.lock();
        if let Some(room) = rooms.get_mut(name) {
            room.occupants.retain(|o| o.member != member);
            if room.occupants.is_empty() && !room.config.persistent {
                rooms.remove(name);
            }
        }
    }

    /// What the store keeps of room `name`, if it is persistent, and its
    /// version as text that sorts as versions do (the store keeps the
    /// newest of two nodes' writes).
    pub fn kept(&self, name: &str) -> Option<(String, String)> {
        self.with(name, |room| room.config.persistent.then(|| (Kept::of(room).to_json(), format!("{:016x}{:016x}", room.version.0, room.version.1)))).flatten()
    }

    /// Room `name`'s state for the other nodes ([`MucRooms::take_shared`]):
    /// its configuration and affiliations, whether or not it is persistent,
    /// under a new version. `None` when this node does not hold the room,
    /// holds only defaults it started it with, or nothing shared changed
    /// since it was last handed on or taken.
    pub fn shared(&self, name: &str) -> Option<String> {
        self.with(name, |room| {
            let hash = Kept::shared_hash(&room.config, &room.affiliations, room.locked);
            if !room.known || hash == room.shared {
                return None;
            }
            room.shared = hash;
            let version = (room.version.0 + 1, rand::random());
            room.seen = seen_together(&room.seen, &[], version);
            room.version = version;
            // Merged on another node's state, if one comes that is not
            // from it, from the state the first of this node's changes
            // not taken since was made on.
            let base = room.own.take().map(|own| own.base).or_else(|| room.agreed.take().map(|a| *a));
            room.own = base.map(|base| Box::new(Own { version, base }));
            room.agreed = Some(Agreed::of(room));
            Some(Kept::of(room).to_json())
        })
        .flatten()
    }

    /// Takes another node's state of room `name` (as [`MucRooms::shared`]
    /// writes it) if this node holds the room and the state is newer than
    /// its own: its configuration and affiliations replace these (its
    /// subject stays: the room's topic events carry it). An occupant here
    /// who is now banned (301), or not a member of a members-only room
    /// (321, or 322 when the room became members-only), is taken out; one
    /// whose affiliation changed takes the role it gives. `None` when this
    /// node does not hold the room or holds the same state; `Older` with
    /// this node's state when it holds a newer one; `Err` when the text is
    /// not a room's. The status codes of departures are kept for at
    /// most `limit` nicks, as a moderator's change keeps them.
    pub fn take_shared(&self, name: &str, text: &str, limit: usize) -> Result<Option<Taken>, serde_json::Error> {
        let kept: Kept = serde_json::from_str(text)?;
        Ok(self
            .with(name, |room| {
                if room.known && kept.version <= room.version {
                    // A node behind this one is told what this one holds.
                    return (kept.version < room.version).then(|| Taken::Older(Kept::of(room).to_json()));
                }
                // This node's changes, if theirs does not come from them
                // (made at once, or before this node's reached theirs):
                // merged on theirs.
                let own = room.own.take().filter(|own| room.known && !kept.seen.contains(&own.version));
                let theirs = Agreed { config: kept.config, affiliations: kept.affiliations, locked: kept.locked };
                let taken = match &own {
                    Some(own) => own.base.merge(&Agreed::of(room), theirs.clone()),
                    None => theirs.clone(),
                };
                let merged = taken.hash() != theirs.hash();
                room.known = true;
                room.locked = taken.locked;
                room.shared = taken.hash();
                if merged {
                    let version = (kept.version.0 + 1, rand::random());
                    room.seen = seen_together(&room.seen, &kept.seen, version);
                    room.version = version;
                    // Still from the state this node's first change not
                    // taken since was made on: what it merged on comes from
                    // there too, and this state may yet meet one that does
                    // not come from theirs.
                    room.own = own.map(|own| Box::new(Own { version, base: own.base }));
                } else {
                    room.seen = kept.seen;
                    room.version = kept.version;
                }
                room.agreed = self.nodes.then(|| Box::new(if merged { taken.clone() } else { theirs }));
                let before = std::mem::replace(&mut room.config, taken.config);
                let was = std::mem::replace(&mut room.affiliations, taken.affiliations);
                let (mut removed, mut changed) = (Vec::new(), Vec::new());
                for o in room.occupants.clone() {
                    let affiliation = room.affiliation(&o.jid);
                    let code = match affiliation {
                        Affiliation::Outcast => Some("301"),
                        _ if room.config.members_only && affiliation < Affiliation::Member => Some(if before.members_only { "321" } else { "322" }),
                        _ => None,
                    };
                    if let Some(code) = code {
                        room.occupants.retain(|x| x.member != o.member);
                        if room.departed.len() >= limit {
                            room.departed.clear();
                        }
                        room.departed.insert(o.nick.clone(), Departure { affiliation, codes: vec![code] });
                        removed.push((o, affiliation, code));
                    } else if was.get(&o.jid.bare().to_string()).copied().unwrap_or(Affiliation::None) != affiliation {
                        let role = room.role_for(affiliation);
                        if let Some(occupant) = room.occupants.iter_mut().find(|x| x.member == o.member) {
                            occupant.role = role;
                        }
                        changed.push(o.nick.clone());
                    }
                }
                let shared = Box::new(Shared { before, after: room.config.clone(), removed, changed });
                Some(if merged { Taken::Merged(shared, Kept::of(room).to_json()) } else { Taken::Newer(shared) })
            })
            .flatten())
    }

    /// Takes back a persistent room as the store kept it; `Err` says why
    /// the text is not a room's.
    pub fn restore(&self, name: &str, text: &str) -> Result<(), serde_json::Error> {
        let mut room = MucRooms::kept_room(text)?;
        self.agree(&mut room);
        self.rooms.lock().insert(Arc::from(name), room);
        Ok(())
    }

    /// Takes back room `name` as [`MucRooms::restore`] does, unless a room
    /// of that name is here already (made while the store was read).
    pub fn restore_if_absent(&self, name: &str, text: &str) -> Result<(), serde_json::Error> {
        let mut room = MucRooms::kept_room(text)?;
        self.agree(&mut room);
        self.rooms.lock().entry(Arc::from(name)).or_insert(room);
        Ok(())
    }

    /// Room `name`'s state as it is, for a node that asks for it
    /// ([`MucRooms::adopt`]); `None` unless this node holds the room's own
    /// state (see `MucRoom::known`) for occupants here or as a persistent
    /// room.
    pub fn current(&self, name: &str) -> Option<String> {
        self.with(name, |room| (room.known && (room.config.persistent || !room.occupants.is_empty())).then(|| Kept::of(room).to_json())).flatten()
    }

    /// Forgets room `name` if it is temporary and has no occupant here
    /// (taken up for a join that did not happen).
    pub fn drop_if_empty(&self, name: &str) {
        let mut rooms = self.rooms.lock();
        if rooms.get(name).is_some_and(|r| r.occupants.is_empty() && !r.config.persistent) {
            rooms.remove(name);
        }
    }

    /// Takes room `name` as another node holds it (its configuration,
    /// affiliations and subject, as [`MucRooms::current`] writes it),
    /// unless this node holds the room already; whether it did.
    pub fn adopt(&self, name: &str, text: &str) -> Result<bool, serde_json::Error> {
        let kept: Kept = serde_json::from_str(text)?;
        let mut rooms = self.rooms.lock();
        if rooms.contains_key(name) {
            return Ok(false);
        }
        let shared = Kept::shared_hash(&kept.config, &kept.affiliations, kept.locked);
        let mut room = MucRoom {
            known: true,
            locked: kept.locked,
            version: kept.version,
            shared,
            config: kept.config,
            subject: kept.subject.map(|(by, text)| (Arc::from(by), text)),
            affiliations: kept.affiliations,
            seen: kept.seen,
            ..MucRoom::default()
        };
        self.agree(&mut room);
        rooms.insert(Arc::from(name), room);
        Ok(true)
    }

    fn kept_room(text: &str) -> Result<MucRoom, serde_json::Error> {
        let kept: Kept = serde_json::from_str(text)?;
        Ok(MucRoom {
            known: true,
            version: kept.version,
            config: Config { persistent: true, ..kept.config },
            subject: kept.subject.map(|(by, text)| (Arc::from(by), text)),
            affiliations: kept.affiliations,
            seen: kept.seen,
            ..MucRoom::default()
        })
    }

    /// Whether `member` is an XMPP occupant of room `name`.
    pub fn is_occupant(&self, name: &str, member: MemberId) -> bool {
        self.with(name, |room| room.occupant_by_member(member).is_some()).unwrap_or(false)
    }

    /// Takes room `name` away whole: its occupants, for the caller to tell.
    pub fn destroy(&self, name: &str) -> Vec<Occupant> {
        self.rooms.lock().remove(name).map(|room| room.occupants).unwrap_or_default()
    }

    /// The public rooms' names and their names for people.
    pub fn listed(&self) -> Vec<(Arc<str>, String)> {
        let rooms = self.rooms.lock();
        let mut out: Vec<_> = rooms.iter().filter(|(_, r)| r.config.public && !r.locked).map(|(n, r)| (n.clone(), r.config.name.clone())).collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occupant(nick: &str, member: MemberId, jid: &str) -> Occupant {
        Occupant { nick: nick.into(), member, jid: Jid::parse(jid).unwrap(), role: Role::None, outbox: Arc::new(Outbox::new(1024)), framing: Framing::Stream, shown: Vec::new() }
    }

    #[test]
    fn the_first_occupant_creates_a_locked_room_it_owns_and_the_last_one_out_forgets_it() {
        let rooms = MucRooms::default();
        let name: Arc<str> = "r".into();
        let first = rooms.enter(&name, occupant("a", 1, "a@l/x"), true);
        assert!(first.created);
        assert_eq!((first.affiliation, first.role), (Affiliation::Owner, Role::Moderator));
        let b = Jid::parse("b@l/y").unwrap();
        assert_eq!(rooms.refusal("r", &b, None), Some(("cancel", "item-not-found")), "locked until configured");
        rooms.with("r", |room| room.locked = false);
        assert_eq!(rooms.refusal("r", &b, None), None);
        let second = rooms.enter(&name, occupant("b", 2, "b@l/y"), false);
        assert!(!second.created);
        assert_eq!((second.affiliation, second.role), (Affiliation::None, Role::Participant));
        assert!(rooms.is_occupant("r", 2));
        rooms.exit("r", 1);
        rooms.exit("r", 2);
        assert!(rooms.with("r", |_| ()).is_none());
        assert!(!rooms.enter(&name, occupant("c", 3, "c@l/z"), false).created, "not alone: the chat room has members");
    }

    #[test]
    fn a_persistent_room_outlives_its_occupants_and_comes_back_from_what_is_kept() {
        let rooms = MucRooms::default();
        let name: Arc<str> = "r".into();
        rooms.enter(&name, occupant("a", 1, "a@l/x"), true);
        assert_eq!(rooms.kept("r"), None, "temporary: nothing to keep");
        rooms.with("r", |room| {
            room.locked = false;
            room.config.persistent = true;
            room.config.members_only = true;
            room.subject = Some(("a".into(), "Plans".into()));
        });
        let (kept, _) = rooms.kept("r").unwrap();
        rooms.exit("r", 1);
        assert!(rooms.with("r", |_| ()).is_some(), "persistent: kept with no occupant");
        let again = MucRooms::default();
        again.restore("r", &kept).unwrap();
        let entered = again.enter(&name, occupant("a", 2, "a@l/y"), true);
        assert!(!entered.created);
        assert_eq!(entered.affiliation, Affiliation::Owner);
        assert_eq!(entered.subject.map(|(by, text)| (by.to_string(), text)), Some(("a".into(), "Plans".into())));
        assert_eq!(again.refusal("r", &Jid::parse("b@l/z").unwrap(), None), Some(("auth", "registration-required")));
        assert!(again.restore("r", "not json").is_err());
    }

    /// Nodes holding one persistent room `r`, as each read it from the
    /// store, and the states they hand each other, taken in random order.
    struct Nodes {
        nodes: Vec<MucRooms>,
        wire: Vec<(usize, String)>,
        merges: usize,
    }

    impl Nodes {
        fn new(count: usize) -> Nodes {
            let kept = {
                let rooms = MucRooms::default();
                rooms.enter(&"r".into(), occupant("a", 1, "a@l/x"), true);
                rooms.with("r", |room| {
                    room.locked = false;
                    room.config.persistent = true;
                });
                rooms.kept("r").unwrap().0
            };
            let nodes: Vec<MucRooms> = (0..count).map(|_| MucRooms::shared_with_nodes(Config::default())).collect();
            for node in &nodes {
                node.restore("r", &kept).unwrap();
            }
            Nodes { nodes, wire: Vec::new(), merges: 0 }
        }

        /// An owner on `node` changes the room; the node hands it on.
        fn change(&mut self, node: usize, change: impl FnOnce(&mut MucRoom)) {
            self.nodes[node].with("r", change);
            let state = self.nodes[node].shared("r").unwrap();
            self.hand_on(node, state);
        }

        fn hand_on(&mut self, from: usize, state: String) {
            self.wire.extend((0..self.nodes.len()).filter(|&to| to != from).map(|to| (to, state.clone())));
        }

        /// Delivers one state on the wire, taken at random.
        fn deliver(&mut self) {
            let (to, state) = self.wire.swap_remove(rand::random::<u32>() as usize % self.wire.len());
            match self.nodes[to].take_shared("r", &state, 64).unwrap() {
                Some(Taken::Older(mine)) => self.hand_on(to, mine),
                Some(Taken::Merged(_, mine)) => {
                    self.merges += 1;
                    self.hand_on(to, mine);
                }
                Some(Taken::Newer(_)) | None => {}
            }
        }

        /// Delivers what is on the wire, in random order, until nothing is;
        /// what every node then holds.
        fn settle(&mut self) -> (u64, Config, HashMap<String, Affiliation>) {
            let mut turns = 0;
            while !self.wire.is_empty() {
                turns += 1;
                assert!(turns < 10_000, "the nodes do not settle");
                self.deliver();
            }
            let held: Vec<_> = self.nodes.iter().map(|n| n.with("r", |room| (room.version, room.config.clone(), room.affiliations.clone())).unwrap()).collect();
            assert!(held.iter().all(|h| *h == held[0]), "the nodes hold one state: {held:?}");
            let versions: Vec<String> = self.nodes.iter().map(|n| n.kept("r").unwrap().1).collect();
            assert!(versions.iter().all(|v| *v == versions[0] && v.len() == 32), "{versions:?}");
            let (version, config, affiliations) = held.into_iter().next().unwrap();
            (version.0, config, affiliations)
        }
    }

    fn ban(jid: &'static str) -> impl FnOnce(&mut MucRoom) {
        move |room| _ = room.affiliations.insert(jid.into(), Affiliation::Outcast)
    }

    #[test]
    fn two_nodes_changing_one_room_at_once_both_end_with_both_changes() {
        for _ in 0..100 {
            let mut nodes = Nodes::new(2);
            nodes.change(0, ban("x@l"));
            nodes.change(1, |room| {
                room.config.name = "Plans".into();
                room.affiliations.insert("y@l".into(), Affiliation::Member);
            });
            let (count, config, affiliations) = nodes.settle();
            assert_eq!(nodes.merges, 1, "the node whose tie-break lost merges its change on the other's");
            assert_eq!(count, 2, "one change on top of the two made at once");
            assert_eq!(config.name, "Plans");
            assert_eq!(affiliations.get("x@l"), Some(&Affiliation::Outcast));
            assert_eq!(affiliations.get("y@l"), Some(&Affiliation::Member));
            assert_eq!(affiliations.get("a@l"), Some(&Affiliation::Owner));
        }
    }

    #[test]
    fn a_node_changing_a_room_twice_before_the_others_change_arrives_keeps_all_three() {
        for _ in 0..100 {
            let mut nodes = Nodes::new(2);
            nodes.change(0, ban("x@l"));
            nodes.change(0, ban("z@l"));
            nodes.change(1, ban("y@l"));
            let (_, _, affiliations) = nodes.settle();
            for jid in ["x@l", "y@l", "z@l"] {
                assert_eq!(affiliations.get(jid), Some(&Affiliation::Outcast), "{jid}: {affiliations:?}");
            }
        }
    }

    #[test]
    fn three_nodes_changing_one_room_at_once_all_end_with_every_change() {
        for _ in 0..100 {
            let mut nodes = Nodes::new(3);
            for (node, jid) in [(0, "x@l"), (1, "y@l"), (2, "z@l")] {
                nodes.change(node, ban(jid));
            }
            let (_, _, affiliations) = nodes.settle();
            for jid in ["x@l", "y@l", "z@l"] {
                assert_eq!(affiliations.get(jid), Some(&Affiliation::Outcast), "{jid}: {affiliations:?}");
            }
        }
    }

    #[test]
    fn a_later_change_made_on_this_nodes_state_is_not_undone_by_it() {
        let mut nodes = Nodes::new(2);
        nodes.change(0, |room| room.config.name = "First".into());
        nodes.settle();
        // The other node, holding the first change, renames the room again.
        nodes.change(1, |room| room.config.name = "Second".into());
        let (count, config, _) = nodes.settle();
        assert_eq!((count, config.name.as_str()), (2, "Second"));
        assert_eq!(nodes.merges, 0);
    }

    #[test]
    fn a_change_merged_keeps_what_this_node_changed_and_the_rest_of_theirs() {
        let affiliations = |pairs: &[(&str, Affiliation)]| pairs.iter().map(|(j, a)| ((*j).to_owned(), *a)).collect::<HashMap<_, _>>();
        let base = Agreed { config: Config::default(), affiliations: affiliations(&[("o@l", Affiliation::Owner), ("m@l", Affiliation::Member)]), locked: true };
        // This node took m@l's membership away and made the room members-only.
        let mine = Agreed { config: Config { members_only: true, ..Config::default() }, affiliations: affiliations(&[("o@l", Affiliation::Owner)]), locked: false };
        // The other made m@l an admin, named the room and banned b@l.
        let theirs = Agreed {
            config: Config { name: "Plans".into(), ..Config::default() },
            affiliations: affiliations(&[("o@l", Affiliation::Owner), ("m@l", Affiliation::Admin), ("b@l", Affiliation::Outcast)]),
            locked: true,
        };
        let merged = base.merge(&mine, theirs);
        assert_eq!(merged.affiliations, affiliations(&[("o@l", Affiliation::Owner), ("b@l", Affiliation::Outcast)]), "m@l: this node's change");
        assert_eq!(merged.config, Config { members_only: true, name: "Plans".into(), ..Config::default() });
        assert!(!merged.locked, "this node's first configuration unlocked it");
    }

    #[test]
    fn entry_is_refused_to_outcasts_without_the_password_and_past_the_limit() {
        let rooms = MucRooms::default();
        let name: Arc<str> = "r".into();
        rooms.enter(&name, occupant("a", 1, "a@l/x"), true);
        rooms.with("r", |room| {
            room.locked = false;
            room.config.password = Some("pw".into());
            room.config.max_users = Some(1);
            room.affiliations.insert("out@l".into(), Affiliation::Outcast);
            room.affiliations.insert("adm@l".into(), Affiliation::Admin);
        });
        let jid = |s| Jid::parse(s).unwrap();
        assert_eq!(rooms.refusal("r", &jid("out@l/1"), Some("pw")), Some(("auth", "forbidden")));
        assert_eq!(rooms.refusal("r", &jid("b@l/1"), None), Some(("auth", "not-authorized")));
        assert_eq!(rooms.refusal("r", &jid("b@l/1"), Some("pw")), Some(("wait", "service-unavailable")));
        assert_eq!(rooms.refusal("r", &jid("adm@l/1"), None), None, "admins pass the password and the limit");
    }
}
