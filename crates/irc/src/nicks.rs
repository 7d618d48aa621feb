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
    /// The user name and real name it gave (`USER`, `SETNAME`), in one
    /// allocation.
    pub names: Names,
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
    /// Its account and away message, boxed and made when it has either:
    /// with both inline, every client's `Public` would be a size class
    /// bigger (see [`Public`]).
    marks: Option<Box<Marks>>,
    /// The channels it is in: a boxed slice, 8 bytes less than a `Vec`
    /// in every client's `Public`, which sits at the top of an allocator's
    /// size class (128 bytes with its `Arc`'s counts); a join or a part
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

    /// The account it logged in as (SASL).
    pub fn account(&self) -> Option<&Arc<str>> {
        self.marks.as_ref().and_then(|m| m.account.as_ref())
    }

    /// Its away message, if it is away.
    pub fn away(&self) -> Option<&Arc<str>> {
        self.marks.as_ref().and_then(|m| m.away.as_ref())
    }

    pub fn set_account(&mut self, account: Option<Arc<str>>) {
        self.mark(|m| m.account = account);
    }

    pub fn set_away(&mut self, away: Option<Arc<str>>) {
        self.mark(|m| m.away = away);
    }

    fn mark(&mut self, change: impl FnOnce(&mut Marks)) {
        let mut marks = self.marks.take().unwrap_or_default();
        change(&mut marks);
        if marks.account.is_some() || marks.away.is_some() {
            self.marks = Some(marks);
        }
    }
}

/// What a client's [`Shown::marks`] hold.
#[derive(Debug, Clone, Default)]
struct Marks {
    account: Option<Arc<str>>,
    away: Option<Arc<str>>,
}

/// A client's user name (`~` first: no ident is asked) and real name, as
/// `WHO` and `WHOIS` show them: one string, the user name (a word) before
/// the first space, where two strings took two allocations in every client.
#[derive(Debug, Clone, Default)]
pub struct Names(Arc<str>);

impl Names {
    /// `user` must hold no space (a `USER` parameter or a nickname cannot).
    pub fn new(user: &str, realname: &str) -> Names {
        debug_assert!(!user.contains(' '), "{user:?}");
        Names(Arc::from(format!("{user} {realname}")))
    }

    pub fn user(&self) -> &str {
        self.0.split_once(' ').map_or(&self.0, |(user, _)| user)
    }

    pub fn realname(&self) -> &str {
        self.0.split_once(' ').map_or("", |(_, realname)| realname)
    }

    /// The same user name with another real name.
    pub fn renamed(&self, realname: &str) -> Names {
        Names::new(self.user(), realname)
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
    /// bytes of counts, 112 bytes fill jemalloc's 128-byte class; a byte
    /// more and every client costs 32 bytes more (the 160-byte class).
    #[test]
    fn a_clients_public_part_fits_its_size_class() {
        assert!(std::mem::size_of::<Public>() <= 112, "Public is {} bytes", std::mem::size_of::<Public>());
    }

    #[test]
    fn names_keep_a_user_name_and_a_real_name_apart() {
        let names = Names::new("~al", "Al  Smith ");
        assert_eq!((names.user(), names.realname()), ("~al", "Al  Smith "));
        assert_eq!(names.renamed("").realname(), "");
        assert_eq!(names.renamed(" x").user(), "~al");
        assert_eq!((Names::default().user(), Names::default().realname()), ("", ""));
    }

    #[test]
    fn marks_are_held_only_while_there_is_one() {
        let mut shown = Shown::default();
        shown.set_away(Some("lunch".into()));
        shown.set_account(Some("al".into()));
        shown.set_away(None);
        assert_eq!(shown.account().map(|a| &**a), Some("al"));
        shown.set_account(None);
        assert!(shown.marks.is_none() && shown.away().is_none());
    }
}
