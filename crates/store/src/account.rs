//! Accounts: a name and the SCRAM keys a login is checked against
//! (RFC 5802 §3). A password is never kept, only what is derived from it.

use async_trait::async_trait;

use crate::Result;

/// SCRAM's StoredKey and ServerKey for one hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramKeys {
    pub stored: Vec<u8>,
    pub server: Vec<u8>,
}

/// What an account keeps: the salt and iteration count its keys were
/// derived with, and the keys for SHA-1 and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub sha1: ScramKeys,
    pub sha256: ScramKeys,
}

/// Who made an account: its user, by in-band registration, or an
/// administrator (`switchboard account add`). Registration's bound counts
/// only the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Registration,
    Administrator,
}

impl Origin {
    pub(crate) fn registered(self) -> bool {
        self == Origin::Registration
    }
}

/// What [`AccountStore::create`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Made,
    /// The name has an account.
    Taken,
    /// Registration has made as many accounts as it may.
    Full,
}

#[async_trait]
pub trait AccountStore {
    /// The account `name`, if there is one.
    async fn account(&self, name: &str) -> Result<Option<Account>>;

    /// Makes the account `name`, unless it exists or, when `origin` is
    /// registration, registration already made `limit` accounts. Done
    /// once this returns: the account is kept.
    async fn create(&self, name: &str, account: &Account, origin: Origin, limit: usize) -> Result<Created>;

    /// Gives the account `name` new keys; whether there is such an account.
    async fn set_keys(&self, name: &str, account: &Account) -> Result<bool>;

    /// Removes the account `name`; whether there was one. Its roster is
    /// the roster store's, kept under its JID: whoever removes an account
    /// forgets that too.
    async fn remove(&self, name: &str) -> Result<bool>;

    /// The names of every account, in order.
    async fn names(&self) -> Result<Vec<String>>;
}
