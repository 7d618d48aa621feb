//! `MemoryStore`: everything in maps, lost when the process ends
//! (`--store memory`: tests, and labs that want nothing kept).

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::{Account, AccountStore, ArchiveStore, Change, Contact, Created, Cursor, Entry, FastToken, FastTokenStore, Filter, OfflineStore, Origin, Page, Prefs, Result, RoomStore, RosterStore, Store, Updated};

/// Entries the memory store's archives keep at most, all archives together;
/// past it the oldest are dropped.
pub const MEMORY_ARCHIVE: usize = 100_000;

#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Each account, and whether registration made it.
    accounts: Mutex<BTreeMap<String, (Account, bool)>>,
    rosters: Mutex<HashMap<String, Roster>>,
    offline: Mutex<HashMap<String, Vec<String>>>,
    /// Each room's state and its version.
    rooms: Mutex<BTreeMap<String, (String, String)>>,
    /// Every archive's entries, in the order of their ids.
    archive: Mutex<Vec<Entry>>,
    /// Each account's FAST tokens.
    fast: Mutex<HashMap<String, Vec<FastToken>>>,
    /// Each account's archiving preferences, once it set them.
    prefs: Mutex<HashMap<String, Prefs>>,
}

#[derive(Debug, Default)]
struct Roster {
    contacts: Vec<Contact>,
    version: u64,
    /// Requests waiting for the user: the requester's bare JID and its request.
    pending: Vec<(String, String)>,
}

impl Store for MemoryStore {
    fn persistent(&self) -> bool {
        false
    }
}

#[async_trait]
impl AccountStore for MemoryStore {
    async fn account(&self, name: &str) -> Result<Option<Account>> {
        Ok(self.accounts.lock().get(name).map(|(a, _)| a.clone()))
    }

    async fn create(&self, name: &str, account: &Account, origin: Origin, limit: usize) -> Result<Created> {
        let mut accounts = self.accounts.lock();
        if accounts.contains_key(name) {
            return Ok(Created::Taken);
        }
        if origin.registered() && accounts.values().filter(|(_, registered)| *registered).count() >= limit {
            return Ok(Created::Full);
        }
        accounts.insert(name.to_owned(), (account.clone(), origin.registered()));
        Ok(Created::Made)
    }

    async fn set_keys(&self, name: &str, account: &Account) -> Result<bool> {
        // A new password ends the logins the old one gave.
        self.fast.lock().remove(name);
        Ok(self.accounts.lock().get_mut(name).map(|(kept, _)| *kept = account.clone()).is_some())
    }

    async fn remove(&self, name: &str) -> Result<bool> {
        self.fast.lock().remove(name);
        Ok(self.accounts.lock().remove(name).is_some())
    }

    async fn names(&self) -> Result<Vec<String>> {
        Ok(self.accounts.lock().keys().cloned().collect())
    }
}

#[async_trait]
impl RosterStore for MemoryStore {
    async fn contacts(&self, user: &str) -> Result<Vec<Contact>> {
        Ok(self.rosters.lock().get(user).map(|r| r.contacts.clone()).unwrap_or_default())
    }

    async fn contact(&self, user: &str, jid: &str) -> Result<Option<Contact>> {
        Ok(self.rosters.lock().get(user).and_then(|r| r.contacts.iter().find(|c| c.jid == jid).cloned()))
    }

    async fn update(&self, user: &str, jid: &str, add: bool, limit: usize, change: &mut (dyn for<'c> FnMut(&'c mut Contact) + Send)) -> Result<Updated> {
        let mut rosters = self.rosters.lock();
        // Only an addition may make a roster: a change to one that is not
        // there must not leave an empty one behind.
        let roster = match rosters.get_mut(user) {
            Some(roster) => roster,
            None if !add => return Ok(Updated::Absent),
            None => rosters.entry(user.to_owned()).or_default(),
        };
        let at = match roster.contacts.iter().position(|c| c.jid == jid) {
            Some(at) => at,
            None if !add => return Ok(Updated::Absent),
            None if roster.contacts.len() >= limit => return Ok(Updated::Full),
            None => {
                roster.contacts.push(Contact { jid: jid.to_owned(), ..Contact::default() });
                roster.contacts.len() - 1
            }
        };
        change(&mut roster.contacts[at]);
        roster.version += 1;
        Ok(Updated::Changed(Change { contact: roster.contacts[at].clone(), ver: roster.version }))
    }

    async fn remove_contact(&self, user: &str, jid: &str) -> Result<Option<Change>> {
        let mut rosters = self.rosters.lock();
        let Some(roster) = rosters.get_mut(user) else { return Ok(None) };
        let Some(at) = roster.contacts.iter().position(|c| c.jid == jid) else { return Ok(None) };
        roster.pending.retain(|(from, _)| from != jid);
        roster.version += 1;
        Ok(Some(Change { contact: roster.contacts.remove(at), ver: roster.version }))
    }

    async fn hold(&self, user: &str, from: &str, request: &str, limit: usize) -> Result<()> {
        let mut rosters = self.rosters.lock();
        let roster = rosters.entry(user.to_owned()).or_default();
        roster.pending.retain(|(f, _)| f != from);
        if roster.pending.len() < limit {
            roster.pending.push((from.to_owned(), request.to_owned()));
        }
        Ok(())
    }

    async fn answered(&self, user: &str, from: &str) -> Result<bool> {
        let mut rosters = self.rosters.lock();
        let Some(roster) = rosters.get_mut(user) else { return Ok(false) };
        let before = roster.pending.len();
        roster.pending.retain(|(f, _)| f != from);
        Ok(roster.pending.len() != before)
    }

    async fn pending(&self, user: &str) -> Result<Vec<String>> {
        Ok(self.rosters.lock().get(user).map(|r| r.pending.iter().map(|(_, request)| request.clone()).collect()).unwrap_or_default())
    }

    async fn waiting(&self) -> Result<usize> {
        Ok(self.rosters.lock().values().map(|r| r.pending.len()).sum())
    }

    async fn forget(&self, user: &str) -> Result<()> {
        self.rosters.lock().remove(user);
        Ok(())
    }

    async fn version(&self, user: &str) -> Result<u64> {
        Ok(self.rosters.lock().get(user).map_or(0, |r| r.version))
    }
}

#[async_trait]
impl OfflineStore for MemoryStore {
    async fn keep(&self, user: &str, message: &str, limit: usize) -> Result<bool> {
        let mut offline = self.offline.lock();
        let kept = offline.entry(user.to_owned()).or_default();
        if kept.len() >= limit {
            return Ok(false);
        }
        kept.push(message.to_owned());
        Ok(true)
    }

    async fn take(&self, user: &str) -> Result<Vec<String>> {
        Ok(self.offline.lock().remove(user).unwrap_or_default())
    }
}

#[async_trait]
impl FastTokenStore for MemoryStore {
    async fn keep_token(&self, account: &str, token: &FastToken, now: i64, limit: usize) -> Result<()> {
        let mut fast = self.fast.lock();
        let kept = fast.entry(account.to_owned()).or_default();
        kept.retain(|t| t.proof != token.proof);
        kept.push(token.clone());
        let gone = crate::fast::to_forget(kept, &token.agent, now, limit);
        kept.retain(|t| !gone.contains(&t.proof));
        Ok(())
    }

    async fn tokens(&self, account: &str) -> Result<Vec<FastToken>> {
        Ok(self.fast.lock().get(account).cloned().unwrap_or_default())
    }

    async fn forget_tokens(&self, account: &str, agent: &str, before: i64) -> Result<()> {
        if let Some(kept) = self.fast.lock().get_mut(account) {
            kept.retain(|t| t.agent != agent || t.expires >= before);
        }
        Ok(())
    }

    async fn raise_early_count(&self, account: &str, proof: &[u8], count: i64) -> Result<bool> {
        let mut fast = self.fast.lock();
        let token = fast.get_mut(account).and_then(|kept| kept.iter_mut().find(|t| t.proof == proof));
        Ok(match token {
            Some(token) if token.early_count < count => {
                token.early_count = count;
                true
            }
            _ => false,
        })
    }
}

#[async_trait]
impl RoomStore for MemoryStore {
    async fn save_room(&self, name: &str, state: &str, version: &str) -> Result<()> {
        let mut rooms = self.rooms.lock();
        if rooms.get(name).is_none_or(|(_, kept)| kept.as_str() <= version) {
            rooms.insert(name.to_owned(), (state.to_owned(), version.to_owned()));
        }
        Ok(())
    }

    async fn remove_room(&self, name: &str) -> Result<()> {
        self.rooms.lock().remove(name);
        Ok(())
    }

    async fn rooms(&self) -> Result<Vec<(String, String)>> {
        Ok(self.rooms.lock().iter().map(|(name, (state, _))| (name.clone(), state.clone())).collect())
    }

    async fn room(&self, name: &str) -> Result<Option<String>> {
        Ok(self.rooms.lock().get(name).map(|(state, _)| state.clone()))
    }
}

#[async_trait]
impl ArchiveStore for MemoryStore {
    async fn append(&self, entries: &[Entry]) -> Result<()> {
        let mut all = self.archive.lock();
        // Kept in the order of ids, as the SQL store reads them: almost
        // always at the end.
        for entry in entries {
            let at = all.partition_point(|e| e.id <= entry.id);
            all.insert(at, entry.clone());
        }
        // Nothing outlives the process here: the oldest go first past the bound.
        let over = all.len().saturating_sub(MEMORY_ARCHIVE);
        all.drain(..over);
        Ok(())
    }

    async fn page(&self, archive: &str, filter: &Filter, from: &Cursor, max: usize) -> Result<Option<Page>> {
        let all = self.archive.lock();
        let mine: Vec<(usize, &Entry)> = all.iter().enumerate().filter(|(_, e)| e.archive == archive).collect();
        let at = |id: &str| mine.iter().find(|(_, e)| e.id == id).map(|(seq, _)| *seq);
        let mut bounds = (0, usize::MAX);
        for (id, after) in [(&filter.after_id, true), (&filter.before_id, false)] {
            let Some(id) = id else { continue };
            let Some(seq) = at(id) else { return Ok(None) };
            if after { bounds.0 = bounds.0.max(seq + 1) } else { bounds.1 = bounds.1.min(seq) }
        }
        let kept: Vec<&(usize, &Entry)> = mine
            .iter()
            .filter(|(seq, e)| {
                (bounds.0..bounds.1).contains(seq)
                    && filter.with.as_ref().is_none_or(|w| *w == e.with)
                    && filter.start.is_none_or(|s| e.at >= s)
                    && filter.end.is_none_or(|end| e.at <= end)
                    && (filter.ids.is_empty() || filter.ids.contains(&e.id))
            })
            .collect();
        let (taken, complete): (Vec<&(usize, &Entry)>, bool) = match from {
            Cursor::Oldest => (kept.iter().take(max).copied().collect(), kept.len() <= max),
            Cursor::After(id) => {
                let Some(after) = at(id) else { return Ok(None) };
                let rest: Vec<_> = kept.iter().filter(|(seq, _)| *seq > after).copied().collect();
                (rest.iter().take(max).copied().collect(), rest.len() <= max)
            }
            Cursor::Before(id) => {
                let before = match id {
                    Some(id) => match at(id) {
                        Some(seq) => seq,
                        None => return Ok(None),
                    },
                    None => usize::MAX,
                };
                let rest: Vec<_> = kept.iter().filter(|(seq, _)| *seq < before).copied().collect();
                let skip = rest.len().saturating_sub(max);
                (rest[skip..].to_vec(), skip == 0)
            }
        };
        Ok(Some(Page { entries: taken.into_iter().map(|(_, e)| (*e).clone()).collect(), complete }))
    }

    async fn trim(&self, before: i64) -> Result<u64> {
        let mut all = self.archive.lock();
        let was = all.len();
        all.retain(|e| e.at >= before);
        Ok((was - all.len()) as u64)
    }

    async fn cap(&self, keep: u64) -> Result<u64> {
        let mut all = self.archive.lock();
        let mut left: HashMap<String, u64> = HashMap::new();
        let was = all.len();
        // Newest first: each archive keeps its first `keep`.
        let mut kept: Vec<Entry> = all.drain(..).rev().filter(|e| {
            let n = left.entry(e.archive.clone()).or_insert(0);
            *n += 1;
            *n <= keep
        }).collect();
        kept.reverse();
        *all = kept;
        Ok((was - all.len()) as u64)
    }

    async fn forget_archive(&self, archive: &str) -> Result<()> {
        self.archive.lock().retain(|e| e.archive != archive);
        self.prefs.lock().remove(archive);
        Ok(())
    }

    async fn prefs(&self, user: &str) -> Result<Option<Prefs>> {
        Ok(self.prefs.lock().get(user).cloned())
    }

    async fn set_prefs(&self, user: &str, prefs: &Prefs) -> Result<()> {
        self.prefs.lock().insert(user.to_owned(), prefs.clone());
        Ok(())
    }
}
