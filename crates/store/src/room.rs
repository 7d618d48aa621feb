//! Persistent rooms: what a protocol keeps of a room beyond its members
//! (XMPP's MUC configuration, affiliations and subject), by room name. The
//! state is the protocol's text; the store keeps it as it is given.

use async_trait::async_trait;

use crate::Result;

#[async_trait]
pub trait RoomStore {
    /// Keeps `state`, of `version`, as room `name`'s, in place of what was
    /// kept, unless what was kept is of a later version: versions compare
    /// as text (two nodes on one database may write one room's states out
    /// of their order). Kept, or left for the later one, once this returns.
    async fn save_room(&self, name: &str, state: &str, version: &str) -> Result<()>;

    /// Forgets room `name`.
    async fn remove_room(&self, name: &str) -> Result<()>;

    /// Every room kept, by name, in order.
    async fn rooms(&self) -> Result<Vec<(String, String)>>;

    /// Room `name`'s state, if it is kept.
    async fn room(&self, name: &str) -> Result<Option<String>>;
}
