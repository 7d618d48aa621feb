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
    /// Its configuration and affiliations at the last version handed to or
    /// taken from the other nodes, or read at start: what this node's next
    /// change is made on, and a change of nothing in it is not handed on.
    /// Held only when other nodes share the rooms.
    pub agreed: Option<Box<Agreed>>,
    /// Which change last set each of its settings ("c:" and the
    /// setting's name), affiliations ("a:" and the JID, also where the
    /// affiliation was taken away) and its lock: the version of that
    /// change. Nodes join their states setting by setting, the later
    /// change winning ([`Agreed::join`]), so that changes made at once on
    /// several nodes all stay. Held only when other nodes share the rooms.
    pub stamps: Stamps,
}

/// Which change last set each part of a room's state (`MucRoom::stamps`).
pub type Stamps = HashMap<String, (u64, u64)>;

/// How many affiliations taken away a room remembers the change of (the
/// oldest are forgotten past it): with more, a node that has not heard of
/// a change since could give back one taken away.
pub const FORGOTTEN_AFFILIATIONS: usize = 4096;

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

    /// A hash of it, which orders two different states at one version
    /// ([`Agreed::join`]).
    fn hash(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        serde_json::to_string(&self.config).unwrap_or_default().hash(&mut hasher);
        self.locked.hash(&mut hasher);
        let mut sorted: Vec<_> = self.affiliations.iter().collect();
        sorted.sort();
        for (jid, affiliation) in sorted {
            (jid, affiliation.name()).hash(&mut hasher);
        }
        hasher.finish()
    }

    /// Its settings by name.
    fn settings(&self) -> serde_json::Map<String, serde_json::Value> {
        match serde_json::to_value(&self.config) {
            Ok(serde_json::Value::Object(settings)) => settings,
            _ => serde_json::Map::new(),
        }
    }

    /// The parts of the state (as `MucRoom::stamps` names them) that
    /// differ in `now`.
    fn changed(&self, now: &Agreed) -> Vec<String> {
        let (was, is) = (self.settings(), now.settings());
        let mut changed: Vec<String> = was.keys().chain(is.keys()).filter(|k| was.get(*k) != is.get(*k)).map(|k| format!("c:{k}")).collect();
        let jids = self.affiliations.keys().chain(now.affiliations.keys());
        changed.extend(jids.filter(|j| self.affiliations.get(*j) != now.affiliations.get(*j)).map(|j| format!("a:{j}")));
        if self.locked != now.locked {
            changed.push("locked".into());
        }
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// Two nodes' states of a room joined part by part: each setting,
    /// affiliation and the lock as the later change set it (by its
    /// version in the stamps), and where neither node's stamp is the
    /// later, as the state with the greater version holds it (of two
    /// different states at one version, the one whose hash is greater).
    /// Either node makes the same join, so that nodes that have all taken
    /// each other's states hold one with every change made.
    fn join(mine: (&Agreed, &Stamps, (u64, u64)), theirs: (&Agreed, &Stamps, (u64, u64))) -> (Agreed, Stamps) {
        let ((m, m_stamps, m_version), (t, t_stamps, t_version)) = (mine, theirs);
        let newer = (t_version, t.hash()) > (m_version, m.hash());
        let theirs_wins = |part: &str| match (m_stamps.get(part), t_stamps.get(part)) {
            (a, b) if a != b => b > a,
            _ => newer,
        };
        let (m_settings, t_settings) = (m.settings(), t.settings());
        let mut settings = serde_json::Map::new();
        for key in m_settings.keys().chain(t_settings.keys()) {
            let from = if theirs_wins(&format!("c:{key}")) { &t_settings } else { &m_settings };
            if let Some(value) = from.get(key).or_else(|| m_settings.get(key)) {
                settings.insert(key.clone(), value.clone());
            }
        }
        let config = serde_json::from_value(serde_json::Value::Object(settings)).unwrap_or_else(|_| t.config.clone());
        let mut affiliations = HashMap::new();
        for jid in m.affiliations.keys().chain(t.affiliations.keys()) {
            let from = if theirs_wins(&format!("a:{jid}")) { &t.affiliations } else { &m.affiliations };
            if let Some(affiliation) = from.get(jid) {
                affiliations.insert(jid.clone(), *affiliation);
            }
        }
        let locked = if theirs_wins("locked") { t.locked } else { m.locked };
        let mut stamps = m_stamps.clone();
        for (part, version) in t_stamps {
            let kept = stamps.entry(part.clone()).or_insert(*version);
            *kept = (*kept).max(*version);
        }
        (Agreed { config, affiliations, locked }, stamps)
    }
}

/// Whether `room`'s configuration, affiliations or lock changed since it
/// was last handed on or taken (`MucRoom::agreed`).
fn unshared(room: &MucRoom) -> bool {
    room.agreed.as_ref().is_some_and(|was| **was != *Agreed::of(room))
}

/// Gives what changed in `room` since it was last handed on or taken a new
/// version, and stamps each part changed with it.
fn stamp_change(room: &mut MucRoom) {
    let version = (room.version.0.saturating_add(1), rand::random());
    room.version = version;
    let now = Agreed::of(room);
    for part in room.agreed.as_ref().map(|was| was.changed(&now)).unwrap_or_default() {
        room.stamps.insert(part, version);
    }
    forget_oldest(&mut room.stamps, &room.affiliations);
    room.agreed = Some(now);
}

/// Forgets the oldest changes of affiliations taken away past
/// [`FORGOTTEN_AFFILIATIONS`].
fn forget_oldest(stamps: &mut Stamps, affiliations: &HashMap<String, Affiliation>) {
    let gone: Vec<(&String, &(u64, u64))> = stamps.iter().filter(|(part, _)| part.strip_prefix("a:").is_some_and(|jid| !affiliations.contains_key(jid))).collect();
    if gone.len() <= FORGOTTEN_AFFILIATIONS {
        return;
    }
    let mut gone: Vec<((u64, u64), String)> = gone.into_iter().map(|(part, version)| (*version, part.clone())).collect();
    gone.sort_unstable();
    let over = gone.len() - FORGOTTEN_AFFILIATIONS;
    for (_, part) in gone.into_iter().take(over) {
        stamps.remove(&part);
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
            return self.kept_out(affiliation);
        }
        if self.locked && affiliation != Affiliation::Owner {
            return Some(("cancel", "item-not-found"));
        }
        if let Some(refused) = self.kept_out(affiliation) {
            return Some(refused);
        }
        if self.config.password.is_some() && affiliation < Affiliation::Admin && self.config.password.as_deref() != password {
            return Some(("auth", "not-authorized"));
        }
        if self.config.max_users.is_some_and(|max| self.occupants.len() >= max) && affiliation < Affiliation::Admin {
            return Some(("wait", "service-unavailable"));
        }
        None
    }

    /// Whether an occupant of `affiliation` is kept out by it alone: banned,
    /// or not a member of a members-only room.
    fn kept_out(&self, affiliation: Affiliation) -> Option<(&'static str, &'static str)> {
        match affiliation {
            Affiliation::Outcast => Some(("auth", "forbidden")),
            _ if self.config.members_only && affiliation < Affiliation::Member => Some(("auth", "registration-required")),
            _ => None,
        }
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
    /// Which change set each part (`MucRoom::stamps`).
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    stamps: Stamps,
}

impl Kept {
    fn of(room: &MucRoom) -> Kept {
        Kept {
            config: room.config.clone(),
            affiliations: room.affiliations.clone(),
            subject: room.subject.as_ref().map(|(by, text)| (by.to_string(), text.clone())),
            version: room.version,
            locked: room.locked,
            stamps: room.stamps.clone(),
        }
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
    /// It holds all this node's did and more: it replaced this node's, with
    /// these effects.
    Newer(Box<Shared>),
    /// It holds nothing new to this node: this node's state, for the
    /// other nodes (theirs missed a change).
    Older(String),
    /// Each holds something the other lacks: their join, with these
    /// effects, under a new version, for the other nodes (and the store).
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
    /// Kept out after all, by what the room came to say of it since the
    /// join was let in (another node's state: a ban, members only): the
    /// error's type and condition. It did not enter.
    pub refused: Option<(&'static str, &'static str)>,
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
        // Checked again under the lock it enters under: another node's
        // state may have come since the join was let in.
        let refused = room.kept_out(affiliation);
        if refused.is_some() {
            return Entered { created, affiliation, role: Role::None, subject: None, shows_jids: false, non_anonymous: false, refused };
        }
        occupant.role = room.role_for(affiliation);
        room.departed.remove(&occupant.nick);
        let role = occupant.role;
        room.occupants.retain(|o| o.member != occupant.member);
        room.occupants.push(occupant);
        Entered { created, affiliation, role, subject: room.subject.clone(), shows_jids: room.shows_jids_to(role), non_anonymous: room.config.whois_anyone, refused: None }
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
            if !room.known || !unshared(room) {
                return None;
            }
            stamp_change(room);
            Some(Kept::of(room).to_json())
        })
        .flatten()
    }

    /// Takes another node's state of room `name` (as [`MucRooms::shared`]
    /// writes it) if this node holds the room, joined with its own
    /// ([`Agreed::join`]) where it is not the same: the join's
    /// configuration and affiliations replace these (its subject stays:
    /// the room's topic events carry it). An occupant here
    /// who is now banned (301), or not a member of a members-only room
    /// (321, or 322 when the room became members-only), is taken out; one
    /// whose affiliation changed takes the role it gives. `None` when this
    /// node does not hold the room or holds the same state; `Older` with
    /// this node's state when theirs holds nothing new to it; `Err` when the text is
    /// not a room's. The status codes of departures are kept for at
    /// most `limit` nicks, as a moderator's change keeps them.
    pub fn take_shared(&self, name: &str, text: &str, limit: usize) -> Result<Option<Taken>, serde_json::Error> {
        let kept: Kept = serde_json::from_str(text)?;
        Ok(self
            .with(name, |room| {
                // A change made here and not yet handed on is stamped
                // first, so that the join keeps it.
                if room.known && unshared(room) {
                    stamp_change(room);
                }
                let mine = Agreed::of(room);
                let theirs = Agreed { config: kept.config, affiliations: kept.affiliations, locked: kept.locked };
                let (taken, mut stamps) = if room.known {
                    Agreed::join((&mine, &room.stamps, room.version), (&theirs, &kept.stamps, kept.version))
                } else {
                    (theirs.clone(), kept.stamps.clone())
                };
                forget_oldest(&mut stamps, &taken.affiliations);
                let as_theirs = taken == theirs && stamps == kept.stamps;
                if room.known && taken == *mine && stamps == room.stamps {
                    if as_theirs {
                        // The same state, joined on two nodes: its greater
                        // version on both.
                        room.version = room.version.max(kept.version);
                        return None;
                    }
                    // Nothing of theirs is new here: a node behind this one
                    // is told what this one holds.
                    return Some(Taken::Older(Kept::of(room).to_json()));
                }
                // Theirs, or a join of theirs and this node's, newer than both.
                let merged = !as_theirs;
                room.version = if merged { (room.version.0.max(kept.version.0).saturating_add(1), rand::random()) } else { kept.version };
                room.stamps = stamps;
                room.known = true;
                room.locked = taken.locked;
                room.agreed = self.nodes.then(|| Box::new(taken.clone()));
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
        let mut room = MucRoom {
            known: true,
            locked: kept.locked,
            version: kept.version,
            config: kept.config,
            subject: kept.subject.map(|(by, text)| (Arc::from(by), text)),
            affiliations: kept.affiliations,
            stamps: kept.stamps,
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
            stamps: kept.stamps,
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

    /// A ban or members-only that came (from another node's state) after
    /// a join was let in keeps the occupant out as it enters.
    #[test]
    fn an_occupant_banned_since_its_join_was_let_in_does_not_enter() {
        let rooms = MucRooms::default();
        let name: Arc<str> = "r".into();
        rooms.enter(&name, occupant("a", 1, "a@l/x"), true);
        rooms.with("r", |room| room.locked = false);
        let b = Jid::parse("b@l/y").unwrap();
        assert_eq!(rooms.refusal("r", &b, None), None, "let in");
        rooms.with("r", |room| room.affiliations.insert("b@l".into(), Affiliation::Outcast));
        let entered = rooms.enter(&name, occupant("b", 2, "b@l/y"), false);
        assert_eq!((entered.refused, entered.affiliation), (Some(("auth", "forbidden")), Affiliation::Outcast));
        assert!(!rooms.is_occupant("r", 2));
        rooms.with("r", |room| room.config.members_only = true);
        assert_eq!(rooms.enter(&name, occupant("c", 3, "c@l/z"), false).refused, Some(("auth", "registration-required")));
        assert!(!rooms.is_occupant("r", 3));
        assert_eq!(rooms.enter(&name, occupant("a", 4, "a@l/w"), false).refused, None, "its owner enters");
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
            let versions: Vec<Option<String>> = self.nodes.iter().map(|n| n.kept("r").map(|kept| kept.1)).collect();
            assert!(versions.iter().all(|v| *v == versions[0] && v.as_ref().is_none_or(|v| v.len() == 32)), "{versions:?}");
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
            assert!((1..=2).contains(&nodes.merges), "each node joins the other's state to its own, or takes the other's join");
            assert_eq!(count, 2, "the join of two changes made at once, a count above the state they started from");
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
    fn changes_on_three_nodes_between_deliveries_in_any_order_all_stay() {
        for _ in 0..200 {
            let mut nodes = Nodes::new(3);
            let jids: Vec<&'static str> = vec!["0@l", "1@l", "2@l", "3@l", "4@l", "5@l", "6@l", "7@l"];
            for jid in &jids {
                nodes.change(rand::random::<u32>() as usize % 3, ban(jid));
                for _ in 0..rand::random::<u32>() % 4 {
                    if !nodes.wire.is_empty() {
                        nodes.deliver();
                    }
                }
            }
            let (_, _, affiliations) = nodes.settle();
            for jid in &jids {
                assert_eq!(affiliations.get(*jid), Some(&Affiliation::Outcast), "{jid}: {affiliations:?}");
            }
        }
    }

    #[test]
    fn a_change_not_yet_handed_on_stays_when_another_nodes_state_comes_first() {
        for _ in 0..100 {
            let mut nodes = Nodes::new(2);
            // Node 0 bans x@l; node 1's change arrives before node 0 hands
            // its own on.
            nodes.nodes[0].with("r", ban("x@l"));
            nodes.change(1, |room| room.config.name = "Plans".into());
            nodes.deliver();
            if let Some(state) = nodes.nodes[0].shared("r") {
                nodes.hand_on(0, state);
            }
            let (_, config, affiliations) = nodes.settle();
            assert_eq!(affiliations.get("x@l"), Some(&Affiliation::Outcast), "{affiliations:?}");
            assert_eq!(config.name, "Plans");
        }
    }

    #[test]
    fn two_nodes_starting_one_room_apart_come_to_one_state() {
        for _ in 0..100 {
            // Each node starts room r for its own first occupant (no answer
            // from the other in time): two states at one version.
            let mut nodes = Nodes { nodes: (0..2).map(|_| MucRooms::shared_with_nodes(Config::default())).collect(), wire: Vec::new(), merges: 0 };
            for (node, jid) in ["a@l/x", "b@l/x"].into_iter().enumerate() {
                nodes.nodes[node].enter(&"r".into(), occupant(&jid[..1], node as u64, jid), true);
                let state = nodes.nodes[node].current("r").unwrap();
                nodes.hand_on(node, state);
            }
            let (_, _, affiliations) = nodes.settle();
            assert_eq!(affiliations.len(), 1, "one owner's room: {affiliations:?}");
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
    fn two_states_join_part_by_part_the_later_change_winning_in_either_order() {
        let affiliations = |pairs: &[(&str, Affiliation)]| pairs.iter().map(|(j, a)| ((*j).to_owned(), *a)).collect::<HashMap<_, _>>();
        let stamps = |parts: &[&str], version: (u64, u64)| parts.iter().map(|p| ((*p).to_owned(), version)).collect::<Stamps>();
        // From o@l's locked room with m@l a member: this node took m@l's
        // membership away, made the room members-only and unlocked it.
        let mine = Agreed { config: Config { members_only: true, ..Config::default() }, affiliations: affiliations(&[("o@l", Affiliation::Owner)]), locked: false };
        let mine_stamps = stamps(&["c:members_only", "a:m@l", "locked"], (2, 1));
        // The other, at once, made m@l an admin, named the room and banned
        // b@l; its change's tie-break is the higher.
        let theirs = Agreed {
            config: Config { name: "Plans".into(), ..Config::default() },
            affiliations: affiliations(&[("o@l", Affiliation::Owner), ("m@l", Affiliation::Admin), ("b@l", Affiliation::Outcast)]),
            locked: true,
        };
        let theirs_stamps = stamps(&["c:name", "a:m@l", "a:b@l"], (2, 5));
        let here = Agreed::join((&mine, &mine_stamps, (2, 1)), (&theirs, &theirs_stamps, (2, 5)));
        let there = Agreed::join((&theirs, &theirs_stamps, (2, 5)), (&mine, &mine_stamps, (2, 1)));
        assert_eq!(here, there, "the same on both nodes");
        let (joined, joined_stamps) = here;
        assert_eq!(joined.affiliations, affiliations(&[("o@l", Affiliation::Owner), ("m@l", Affiliation::Admin), ("b@l", Affiliation::Outcast)]), "m@l: the later change's");
        assert_eq!(joined.config, Config { members_only: true, name: "Plans".into(), ..Config::default() });
        assert!(!joined.locked, "this node's first configuration unlocked it");
        assert_eq!(joined_stamps.get("a:m@l"), Some(&(2, 5)));
        assert_eq!(joined_stamps.len(), 5);
    }

    #[test]
    fn affiliations_taken_away_are_remembered_up_to_a_bound_the_oldest_forgotten() {
        let mut stamps: Stamps = (0..FORGOTTEN_AFFILIATIONS as u64 + 10).map(|n| (format!("a:{n}@l"), (n, 0))).collect();
        stamps.insert("c:name".into(), (0, 0));
        stamps.insert("a:kept@l".into(), (0, 0));
        let affiliations = HashMap::from([("kept@l".to_owned(), Affiliation::Member)]);
        forget_oldest(&mut stamps, &affiliations);
        assert_eq!(stamps.len(), FORGOTTEN_AFFILIATIONS + 2);
        assert!(!stamps.contains_key("a:9@l") && stamps.contains_key("a:10@l"));
        assert!(stamps.contains_key("c:name") && stamps.contains_key("a:kept@l"), "only affiliations taken away");
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
