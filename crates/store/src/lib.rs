//! What the server keeps beyond one connection, behind one trait per kind
//! of thing kept: accounts (`AccountStore`), rosters with their waiting
//! subscription requests (`RosterStore`), messages kept for users who are
//! offline (`OfflineStore`), persistent rooms (`RoomStore`), message
//! archives (`ArchiveStore`) and FAST tokens (`FastTokenStore`). A [`Store`] is all of them.
//!
//! Two implementations, named by where they keep it: [`MemoryStore`] (lost
//! when the server stops, for tests and labs) and [`SqlStore`], in a
//! database: SQLite (a file, the default) or PostgreSQL (shared by several
//! nodes). The traits are asynchronous because a database is; what
//! calls them (SASL, registration, rosters, presence) awaits, and never
//! holds a lock across the call.
//!
//! The store knows nothing of XMPP's wire format: a waiting subscription
//! request is kept as the text the XMPP side gives it, and read back as such.

mod account;
mod archive;
mod fast;
mod memory;
mod offline;
mod postgres_server;
mod room;
mod roster;
mod sql;

use std::fmt::Debug;
use std::sync::Arc;

pub use account::{Account, AccountStore, Created, Origin, ScramKeys};
pub use archive::{ArchiveStore, Cursor, Entry, Filter, IdClock, Keep, Page, Prefs, id_bounds, id_of, id_time, is_room};
pub use fast::{FastToken, FastTokenStore, PER_CLIENT};
pub use memory::MemoryStore;
pub use offline::OfflineStore;
pub use postgres_server::PostgresServer;
pub use room::RoomStore;
pub use roster::{Change, Contact, RosterStore, Subscription, Updated};
pub use sql::{SqlStore, copy};

/// Everything the server keeps.
pub trait Store: AccountStore + RosterStore + OfflineStore + RoomStore + ArchiveStore + FastTokenStore + Debug + Send + Sync {
    /// Whether what is kept outlives the process: a client may log in to
    /// an account nobody made since the server started.
    fn persistent(&self) -> bool;
}

/// Why the store could not do what was asked: the database failed (it is
/// missing, locked, corrupt or full), holds what this version cannot read,
/// or refused what was written ([`Error::refused`]).
#[derive(Debug, thiserror::Error)]
#[error("store: {what}")]
pub struct Error {
    what: String,
    refused: bool,
}

impl Error {
    fn new(what: impl std::fmt::Display) -> Error {
        Error { what: what.to_string(), refused: false }
    }

    /// Whether the database refused the rows written for what they hold
    /// (a key it holds already, a constraint), working otherwise: the
    /// same write would be refused again, and others may be taken.
    pub fn refused(&self) -> bool {
        self.refused
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Error {
        let refused = e.as_database_error().is_some_and(|d| d.kind() != sqlx::error::ErrorKind::Other);
        Error { refused, ..Error::new(e) }
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Error {
        Error::new(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Which store to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Nothing outlives the process.
    Memory,
    /// `switchboard.db` in this folder, made if it is not there.
    Sqlite(std::path::PathBuf),
    /// The PostgreSQL database at this URL (`postgres://…`).
    Postgres(String),
}

/// When a SQLite commit is durable: SQLite's `synchronous` setting, in
/// its WAL mode (docs/storage.md, *What "kept" promises*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// A commit outlives the process being killed; the last ones before a
    /// power cut or a crash of the operating system may be lost. The log is
    /// synced at checkpoints only.
    #[default]
    Normal,
    /// A commit outlives a power cut too: the log is synced at every commit.
    Full,
}

impl Synchronous {
    /// The value of SQLite's `PRAGMA synchronous`.
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

impl std::str::FromStr for Synchronous {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Synchronous, String> {
        match text {
            "normal" => Ok(Synchronous::Normal),
            "full" => Ok(Synchronous::Full),
            _ => Err(format!("{text:?} is not a SQLite synchronous setting: normal or full")),
        }
    }
}

/// Opens the store `choice` names, ready for use (its schema brought up to date).
pub async fn open(choice: &Choice) -> Result<Arc<dyn Store>> {
    open_with(choice, Synchronous::default()).await
}

/// As [`open`], a SQLite store committing as `synchronous` says.
pub async fn open_with(choice: &Choice, synchronous: Synchronous) -> Result<Arc<dyn Store>> {
    Ok(match choice {
        Choice::Memory => Arc::new(MemoryStore::default()),
        Choice::Sqlite(dir) => Arc::new(SqlStore::sqlite_with(&SqlStore::file_in(dir), synchronous).await?),
        Choice::Postgres(url) => Arc::new(SqlStore::postgres(url).await?),
    })
}

#[cfg(test)]
mod tests;
