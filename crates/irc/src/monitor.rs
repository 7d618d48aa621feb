//! Who watches which nicknames (IRCv3 `MONITOR`): a client names the
//! nicknames it wants to know of, and is told when one comes online (its
//! client registers, or a client takes it) and goes offline (its client
//! leaves, or gives it up). At most [`LIMIT`] each, on this node: as
//! `WHOIS` and private messages, a nickname is this node's. A client that
//! watches nothing holds nothing here.

use std::collections::HashMap;
use std::sync::Arc;

use hub::MemberId;
use parking_lot::Mutex;

use crate::nicks::Public;

/// The most nicknames one client watches (`ISUPPORT` `MONITOR=`).
pub const LIMIT: usize = 100;

/// A nickname watched: its name's key, and the nickname as the watcher
/// gave it.
pub type Watched = (Arc<str>, Arc<str>);

/// See the module docs.
#[derive(Debug, Default)]
pub struct Monitors(Mutex<Watching>);

#[derive(Debug, Default)]
struct Watching {
    /// The clients watching each nickname, by its name's key.
    by_key: HashMap<Arc<str>, Vec<Arc<Public>>>,
    /// What each client watches, by its id: each nickname's key, and the
    /// nickname as it gave it.
    by_watcher: HashMap<MemberId, Vec<Watched>>,
}

impl Monitors {
    /// Adds `targets` (key, nickname) to what `watcher` watches, as far as
    /// [`LIMIT`] allows: the nicknames that did not fit.
    pub fn add(&self, watcher: &Arc<Public>, targets: Vec<Watched>) -> Vec<Arc<str>> {
        let mut watching = self.0.lock();
        let Watching { by_key, by_watcher } = &mut *watching;
        let list = by_watcher.entry(watcher.id).or_default();
        let mut full = Vec::new();
        for (key, nick) in targets {
            if list.iter().any(|(k, _)| *k == key) {
                continue;
            }
            if list.len() == LIMIT {
                full.push(nick);
                continue;
            }
            by_key.entry(key.clone()).or_default().push(watcher.clone());
            list.push((key, nick));
        }
        if list.is_empty() {
            by_watcher.remove(&watcher.id);
        }
        full
    }

    /// Takes the nicknames of `keys` off what `watcher` watches.
    pub fn remove(&self, watcher: MemberId, keys: &[Arc<str>]) {
        let mut watching = self.0.lock();
        let Watching { by_key, by_watcher } = &mut *watching;
        let Some(list) = by_watcher.get_mut(&watcher) else { return };
        list.retain(|(key, _)| !keys.contains(key));
        if list.is_empty() {
            by_watcher.remove(&watcher);
        }
        for key in keys {
            unwatch(by_key, key, watcher);
        }
    }

    /// Takes everything off what `watcher` watches.
    pub fn clear(&self, watcher: MemberId) {
        let mut watching = self.0.lock();
        let Watching { by_key, by_watcher } = &mut *watching;
        for (key, _) in by_watcher.remove(&watcher).unwrap_or_default() {
            unwatch(by_key, &key, watcher);
        }
    }

    /// What `watcher` watches: each nickname's key, and the nickname as it
    /// gave it.
    pub fn list(&self, watcher: MemberId) -> Vec<Watched> {
        self.0.lock().by_watcher.get(&watcher).cloned().unwrap_or_default()
    }

    /// The clients watching the nickname whose name's key is `key`.
    pub fn watchers(&self, key: &str) -> Vec<Arc<Public>> {
        self.0.lock().by_key.get(key).cloned().unwrap_or_default()
    }
}

fn unwatch(by_key: &mut HashMap<Arc<str>, Vec<Arc<Public>>>, key: &str, watcher: MemberId) {
    if let Some(watchers) = by_key.get_mut(key) {
        watchers.retain(|w| w.id != watcher);
        if watchers.is_empty() {
            by_key.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use hub::Outbox;

    use super::*;

    fn client(id: MemberId) -> Arc<Public> {
        Arc::new(Public::new(id, Arc::new(Outbox::new(1 << 16))))
    }

    fn target(nick: &str) -> Watched {
        (Arc::from(nick.to_ascii_lowercase()), Arc::from(nick))
    }

    #[test]
    fn each_client_watches_at_most_the_limit_and_leaves_nothing_behind() {
        let monitors = Monitors::default();
        let (a, b) = (client(1), client(2));
        let full = monitors.add(&a, vec![target("Qux"), target("qux"), target("Bar")]);
        assert_eq!((monitors.list(1).len(), full.len()), (2, 0), "one nickname once");
        monitors.add(&b, vec![target("qux")]);
        assert_eq!(monitors.watchers("qux").len(), 2);
        monitors.remove(2, &[Arc::from("qux")]);
        assert_eq!(monitors.watchers("qux").iter().map(|w| w.id).collect::<Vec<_>>(), [1]);

        let many: Vec<_> = (0..LIMIT + 5).map(|n| target(&format!("n{n}"))).collect();
        let full = monitors.add(&b, many);
        assert_eq!((monitors.list(2).len(), full.len()), (LIMIT, 5));
        assert_eq!(&*full[0], format!("n{LIMIT}"));

        monitors.clear(1);
        monitors.clear(2);
        let watching = monitors.0.lock();
        assert!(watching.by_key.is_empty() && watching.by_watcher.is_empty());
    }
}
