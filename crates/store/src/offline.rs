//! Messages kept for a user who has no available resource (XEP-0160),
//! until it next comes online. Users are bare JIDs; a message is the text
//! the XMPP side gives, already stamped with when it arrived.

use async_trait::async_trait;

use crate::Result;

#[async_trait]
pub trait OfflineStore {
    /// Keeps `message` for `user`, unless `limit` are kept for it already;
    /// whether it was kept. Kept once this returns.
    async fn keep(&self, user: &str, message: &str, limit: usize) -> Result<bool>;

    /// The messages kept for `user`, oldest first, taken out of the store.
    async fn take(&self, user: &str) -> Result<Vec<String>>;
}
