//! What IRC keeps of a room beyond the hub's members and messages: its
//! topic, its modes and which IRC members are operators or voiced. It
//! lives while IRC clients of this node are in the room. Modes hold IRC's
//! members to them; members of other protocols have their own rules.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use crate::nicks::Public;

/// One channel's IRC state. Its topic is the room's (`hub::Topic`).
#[derive(Debug)]
pub struct Channel {
    pub modes: Modes,
    pub members: Vec<Membership>,
    /// Clients invited (`INVITE`) who may join it under `+i`, each once;
    /// at most [`MAX_LIST`], the oldest going first.
    pub invited: Vec<hub::MemberId>,
    pub created: SystemTime,
}

/// The channel modes a chat needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modes {
    /// `+n`: only members may send to it.
    pub no_outside: bool,
    /// `+t`: only operators may set the topic.
    pub topic_ops: bool,
    /// `+m`: only operators and voiced members may speak.
    pub moderated: bool,
    /// `+C`: no CTCP to the channel but `ACTION` (`/me`).
    pub no_ctcp: bool,
    /// `+i`: only invited clients may join.
    pub invite_only: bool,
    /// `+s`: not listed, nor shown in `WHOIS`, to those outside.
    pub secret: bool,
    /// `+k`: the key a join must give.
    pub key: Option<String>,
    /// `+l`: most IRC members.
    pub limit: Option<usize>,
    /// `+b`: masks of the IRC clients who may not join.
    pub bans: Vec<Listed>,
    /// `+e`: masks of the IRC clients a ban does not keep out.
    pub excepts: Vec<Listed>,
    /// `+I`: masks of the IRC clients who may join under `+i` uninvited.
    pub invex: Vec<Listed>,
}

/// Most masks in each of a channel's lists (`MAXLIST`).
pub const MAX_LIST: usize = 100;

/// A mask on a channel's list, who put it there and when (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub mask: String,
    pub by: String,
    pub at: u64,
}

impl Default for Modes {
    fn default() -> Modes {
        Modes { no_outside: true, topic_ops: true, moderated: false, no_ctcp: false, invite_only: false, secret: false, key: None, limit: None, bans: Vec::new(), excepts: Vec::new(), invex: Vec::new() }
    }
}

impl Modes {
    /// Whether a ban keeps out the client whose lines come from `source`
    /// (`nick!user@host`), with no exception letting it in.
    pub fn banned(&self, source: &str) -> bool {
        let on = |list: &[Listed]| list.iter().any(|l| wire::mask::matches(&l.mask, source, wire::mask::Case::AsciiInsensitive));
        on(&self.bans) && !on(&self.excepts)
    }

    /// Whether `+i` keeps out the client whose lines come from `source`,
    /// uninvited: no invite exception (`+I`) lets it in.
    pub fn invite_only_for(&self, source: &str) -> bool {
        self.invite_only && !self.invex.iter().any(|l| wire::mask::matches(&l.mask, source, wire::mask::Case::AsciiInsensitive))
    }

    /// The list of masks of `flag` (`b`, `e`, `I`).
    pub fn list_mut(&mut self, flag: char) -> Option<&mut Vec<Listed>> {
        match flag {
            'b' => Some(&mut self.bans),
            'e' => Some(&mut self.excepts),
            'I' => Some(&mut self.invex),
            _ => None,
        }
    }

    /// As `324` gives them: `+ntk key`, the key and the limit after; the
    /// key itself only to a member (`*` to others).
    pub fn shown(&self, to_member: bool) -> Vec<String> {
        let mut flags = String::from("+");
        let mut params = Vec::new();
        for (on, flag) in [(self.no_ctcp, 'C'), (self.invite_only, 'i'), (self.moderated, 'm'), (self.no_outside, 'n'), (self.secret, 's'), (self.topic_ops, 't')] {
            if on {
                flags.push(flag);
            }
        }
        if let Some(key) = &self.key {
            flags.push('k');
            params.push(if to_member { key.clone() } else { "*".to_owned() });
        }
        if let Some(limit) = self.limit {
            flags.push('l');
            params.push(limit.to_string());
        }
        std::iter::once(flags).chain(params).collect()
    }
}

/// An IRC client in a channel.
#[derive(Debug, Clone)]
pub struct Membership {
    pub client: Arc<Public>,
    pub op: bool,
    pub voice: bool,
}

impl Membership {
    /// Its prefixes in `NAMES`: the highest, or all of them.
    pub fn prefix(&self, all: bool) -> &'static str {
        match (self.op, self.voice, all) {
            (true, true, true) => "@+",
            (true, _, _) => "@",
            (false, true, _) => "+",
            _ => "",
        }
    }
}

/// Every channel with IRC members on this node.
#[derive(Debug, Default)]
pub struct Channels {
    by_room: Mutex<HashMap<Arc<str>, Channel>>,
}

impl Channels {
    /// Runs `f` on `room`'s channel, if IRC clients are in it.
    pub fn with<T>(&self, room: &str, f: impl FnOnce(&mut Channel) -> T) -> Option<T> {
        self.by_room.lock().get_mut(room).map(f)
    }

    /// Runs `f` on `room`'s channel, opening it if nobody of IRC is in it.
    pub fn open<T>(&self, room: &str, f: impl FnOnce(&mut Channel) -> T) -> T {
        let mut rooms = self.by_room.lock();
        let channel = rooms.entry(Arc::from(room)).or_insert_with(|| Channel {
            modes: Modes::default(),
            members: Vec::new(),
            invited: Vec::new(),
            created: SystemTime::now(),
        });
        f(channel)
    }

    /// Adds `client` to `room`'s channel, an operator if it is the first
    /// IRC member.
    pub fn enter(&self, room: &str, client: &Arc<Public>) {
        self.open(room, |channel| {
            if !channel.members.iter().any(|m| m.client.id == client.id) {
                let op = channel.members.is_empty();
                channel.members.push(Membership { client: client.clone(), op, voice: false });
            }
        });
    }

    /// Takes member `id` out of `room`'s channel, which closes with its
    /// last IRC member.
    pub fn exit(&self, room: &str, id: hub::MemberId) {
        let mut rooms = self.by_room.lock();
        if let Some(channel) = rooms.get_mut(room) {
            channel.members.retain(|m| m.client.id != id);
            if channel.members.is_empty() {
                rooms.remove(room);
            }
        }
    }

    /// The IRC members of `room`'s channel.
    pub fn members(&self, room: &str) -> Vec<Membership> {
        self.with(room, |c| c.members.clone()).unwrap_or_default()
    }

    /// The rooms with IRC members, and whether each is secret (`LIST`).
    pub fn list(&self) -> Vec<(Arc<str>, bool)> {
        self.by_room.lock().iter().map(|(room, c)| (room.clone(), c.modes.secret)).collect()
    }

    /// How many channels have IRC members.
    pub fn len(&self) -> usize {
        self.by_room.lock().len()
    }
}
