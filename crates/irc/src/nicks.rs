//! The IRC clients of this node by nickname, so that one nickname is one
//! client (IRC's nicknames are unique on a network; in a room, a name is
//! unique across every protocol through the hub). A client is here from
//! its first accepted `NICK` until it goes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use hub::{MemberId, Outbox, Payload};
use parking_lot::Mutex;

use crate::cap::{Cap, Caps};

/// What other clients may see or use of a client: where to send to it, and
/// what `WHOIS` and `WHO` say of it.
#[derive(Debug)]
pub struct Public {
    pub id: MemberId,
    pub outbox: Arc<Outbox>,
    /// Its capabilities, as lines sent to it are built for them.
    caps: AtomicU32,
    pub state: Mutex<Shown>,
}

/// What changes of a client while it is connected.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    /// Its nickname, as IRC shows it.
    pub nick: Arc<str>,
    /// The user name it gave in `USER`, as `WHO` and `WHOIS` show it
    /// (`~` first: no ident is asked).
    pub user: Arc<str>,
    pub realname: Arc<str>,
    /// User mode `+i`: `WHO` with a mask does not list it to strangers.
    pub invisible: bool,
    /// User mode `+o`: an IRC operator (`OPER`).
    pub oper: bool,
    /// User mode `+w`: it gets `WALLOPS`.
    pub wallops: bool,
    /// User mode `+B` (IRCv3 bot mode, `BOT=B`): it says it is a bot.
    pub bot: bool,
    /// Registered: before, it is no user `WHO` and `LUSERS` count.
    pub registered: bool,
    /// The account it logged in as (SASL).
    pub account: Option<Arc<str>>,
    /// Its away message, if it is away.
    pub away: Option<Arc<str>>,
    /// The channels it is in: a boxed slice, 8 bytes less than a `Vec`
    /// in every client's `Public`, which sits at the top of an allocator's
    /// size class (160 bytes with its `Arc`'s counts); a join or a part
    /// makes it again.
    pub channels: Box<[String]>,
    /// When it registered and when it last sent a message, in seconds
    /// of the service's clock (`Irc::clock`): `WHOIS` and `WHO`'s idle time.
    pub signon: u32,
    pub spoke: u32,
}

impl Shown {
    /// It is in `channel` too.
    pub fn enter(&mut self, channel: String) {
        push(&mut self.channels, channel);
    }

    /// It is no longer in `channel`.
    pub fn exit(&mut self, channel: &str) {
        retain(&mut self.channels, |c| c != channel);
    }
}

/// Adds `item` to the end of a boxed slice, a list kept 8 bytes smaller
/// than a `Vec` where it sits in every client (made again each time).
pub fn push<T>(list: &mut Box<[T]>, item: T) {
    let mut items = std::mem::take(list).into_vec();
    items.push(item);
    *list = items.into_boxed_slice();
}

/// Keeps in a boxed slice (see [`push`]) only what `keep` keeps.
pub fn retain<T>(list: &mut Box<[T]>, keep: impl FnMut(&T) -> bool) {
    let mut items = std::mem::take(list).into_vec();
    items.retain(keep);
    *list = items.into_boxed_slice();
}

impl Public {
    pub fn new(id: MemberId, outbox: Arc<Outbox>) -> Public {
        Public { id, outbox, caps: AtomicU32::new(0), state: Mutex::new(Shown::default()) }
    }

    pub fn caps(&self) -> Caps {
        Caps(self.caps.load(Ordering::Relaxed))
    }

    pub fn set_caps(&self, caps: Caps) {
        self.caps.store(caps.0, Ordering::Relaxed);
    }

    pub fn has(&self, cap: Cap) -> bool {
        self.caps().has(cap)
    }

    pub fn nick(&self) -> Arc<str> {
        self.state.lock().nick.clone()
    }

    /// Queues `line` for it; a full outbox closes it (its writer says why).
    pub fn send(&self, line: String) {
        let _ = self.outbox.push(Payload::new(line));
    }
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct Nicks {
    /// By the comparison form of the name the nickname stands for.
    by_key: Mutex<HashMap<Arc<str>, Arc<Public>>>,
}

impl Nicks {
    /// Gives `client` the nickname whose name's key is `key`, freeing
    /// `old` if it had one; `false` if another client has it.
    pub fn claim(&self, key: &Arc<str>, old: Option<&Arc<str>>, client: &Arc<Public>) -> bool {
        let mut nicks = self.by_key.lock();
        match nicks.get(key) {
            Some(holder) if holder.id != client.id => false,
            _ => {
                if let Some(old) = old.filter(|old| *old != key) {
                    nicks.remove(old);
                }
                nicks.insert(key.clone(), client.clone());
                true
            }
        }
    }

    /// Frees `key` if `id` holds it.
    pub fn release(&self, key: &str, id: MemberId) {
        let mut nicks = self.by_key.lock();
        if nicks.get(key).is_some_and(|holder| holder.id == id) {
            nicks.remove(key);
        }
    }

    /// The client whose name's key is `key`.
    pub fn find(&self, key: &str) -> Option<Arc<Public>> {
        self.by_key.lock().get(key).cloned()
    }

    /// Every client with a nickname.
    pub fn all(&self) -> Vec<Arc<Public>> {
        self.by_key.lock().values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every client holds one `Public` in an `Arc`: with the `Arc`'s 16
    /// bytes of counts, 144 bytes fill jemalloc's 160-byte class; a byte
    /// more and every client costs 32 bytes more (the 192-byte class).
    #[test]
    fn a_clients_public_part_fits_its_size_class() {
        assert!(std::mem::size_of::<Public>() <= 144, "Public is {} bytes", std::mem::size_of::<Public>());
    }
}
