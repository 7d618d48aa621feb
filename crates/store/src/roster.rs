//! Rosters (RFC 6121 §2): each user's contacts with the subscription state
//! between them, and the subscription requests waiting for the user's
//! answer. Users and contacts are bare JIDs, as text in canonical form.

use async_trait::async_trait;

use crate::Result;

/// Whose presence goes where (RFC 6121 §2.1.2.5): `to` the user sees the
/// contact's, `from` the contact sees the user's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subscription {
    pub to: bool,
    pub from: bool,
}

impl Subscription {
    pub fn name(self) -> &'static str {
        match (self.to, self.from) {
            (false, false) => "none",
            (true, false) => "to",
            (false, true) => "from",
            (true, true) => "both",
        }
    }
}

/// One roster item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contact {
    /// The contact's bare JID.
    pub jid: String,
    pub name: Option<String>,
    pub groups: Vec<String>,
    pub subscription: Subscription,
    /// The user asked to see the contact's presence and has no answer yet.
    pub ask: bool,
}

/// A change to a roster: the contact as it is now (as it was, once
/// removed), and the roster's version the change made, read in the same
/// transaction (a version read after it might be another change's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub contact: Contact,
    pub ver: u64,
}

/// What [`RosterStore::update`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Updated {
    Changed(Change),
    /// There is no such contact, and none was to be added.
    Absent,
    /// The contact was to be added to a roster already at its limit.
    Full,
}

#[async_trait]
pub trait RosterStore {
    /// `user`'s contacts, in the order they were added.
    async fn contacts(&self, user: &str) -> Result<Vec<Contact>>;

    /// `user`'s contact `jid`.
    async fn contact(&self, user: &str, jid: &str) -> Result<Option<Contact>>;

    /// Applies `change` to `user`'s contact `jid`, first adding it, when
    /// `add`, if the roster has fewer than `limit` contacts. Kept once this
    /// returns.
    async fn update(&self, user: &str, jid: &str, add: bool, limit: usize, change: &mut (dyn for<'c> FnMut(&'c mut Contact) + Send)) -> Result<Updated>;

    /// Takes `jid` off `user`'s roster, with its request waiting for `user`.
    async fn remove_contact(&self, user: &str, jid: &str) -> Result<Option<Change>>;

    /// Keeps `request` from `from` until `user` answers it: one per
    /// requester (a new one replaces the old), and at most `limit` waiting
    /// for one user, past which a new requester's is not kept.
    async fn hold(&self, user: &str, from: &str, request: &str, limit: usize) -> Result<()>;

    /// Forgets `from`'s request to `user`; whether there was one.
    async fn answered(&self, user: &str, from: &str) -> Result<bool>;

    /// The requests waiting for `user`, oldest first.
    async fn pending(&self, user: &str) -> Result<Vec<String>>;

    /// Requests waiting, for every user.
    async fn waiting(&self) -> Result<usize>;

    /// Forgets `user`'s roster and the requests waiting for it.
    async fn forget(&self, user: &str) -> Result<()>;

    /// `user`'s roster version (RFC 6121 §2.6): one more after each change
    /// to its items (an update or a removal), 0 for a roster never changed
    /// or forgotten. Requests waiting do not count: they are not items.
    async fn version(&self, user: &str) -> Result<u64>;
}
