//! `SqliteStore`: one SQLite file (`switchboard.db` in `--data-dir`), the
//! embedded default. WAL journal, `synchronous = NORMAL`: a transaction
//! that has committed survives the process being killed; the last ones
//! before a power cut or an operating-system crash may be lost (SQLite's
//! own account of WAL mode). Its schema is brought up to date at open by
//! the migrations embedded from `migrations/sqlite`.
//!
//! Writes go through one connection, so that they are serial within the
//! process and a read-then-write transaction is never refused halfway for
//! another's lock; reads go through a small pool beside it, which WAL lets
//! read while the writer writes.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous};
use sqlx::{Row, Sqlite, Transaction};

use crate::{Account, AccountStore, Contact, Created, Error, OfflineStore, Origin, Result, RoomStore, RosterStore, ScramKeys, Store, Subscription, Updated};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// How long a statement waits for another process's lock on the file (the
/// `switchboard account` command beside a running server) before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections that read at once.
const READERS: u32 = 4;

#[derive(Debug, Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    reader: SqlitePool,
    path: PathBuf,
}

impl SqliteStore {
    /// The store's file in the folder `dir`.
    pub fn file_in(dir: &Path) -> PathBuf {
        dir.join("switchboard.db")
    }

    /// Opens (or makes) the store in the file `path`, making its folder if
    /// needed, and brings its schema up to date.
    pub async fn open(path: &Path) -> Result<SqliteStore> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::new(format!("cannot make {}: {e}", dir.display())))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT);
        let opened = |e: sqlx::Error| Error::new(format!("cannot open {}: {e}", path.display()));
        let writer = SqlitePoolOptions::new().max_connections(1).connect_with(options.clone()).await.map_err(opened)?;
        MIGRATOR.run(&writer).await.map_err(|e| Error::new(format!("{}: {e}", path.display())))?;
        let reader = SqlitePoolOptions::new().max_connections(READERS).connect_with(options.read_only(true)).await.map_err(opened)?;
        Ok(SqliteStore { writer, reader, path: path.to_owned() })
    }

    /// The file it keeps its data in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction that holds the file's write lock from its start
    /// (`BEGIN IMMEDIATE`), so that what it reads cannot change before it writes.
    async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }
}

impl Store for SqliteStore {
    fn persistent(&self) -> bool {
        true
    }
}

type Query<'q> = sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments<'q>>;

/// `query` with an account's salt, iteration count and keys bound next, in
/// the columns' order.
fn keys<'q>(query: Query<'q>, account: &'q Account) -> Query<'q> {
    query
        .bind(&account.salt)
        .bind(i64::from(account.iterations))
        .bind(&account.sha1.stored)
        .bind(&account.sha1.server)
        .bind(&account.sha256.stored)
        .bind(&account.sha256.server)
}

fn account_of(row: &SqliteRow) -> Result<Account> {
    let iterations: i64 = row.try_get("iterations")?;
    Ok(Account {
        salt: row.try_get("salt")?,
        iterations: u32::try_from(iterations).map_err(|_| Error::new(format!("an account's iteration count is {iterations}")))?,
        sha1: ScramKeys { stored: row.try_get("sha1_stored")?, server: row.try_get("sha1_server")? },
        sha256: ScramKeys { stored: row.try_get("sha256_stored")?, server: row.try_get("sha256_server")? },
    })
}

#[async_trait]
impl AccountStore for SqliteStore {
    async fn account(&self, name: &str) -> Result<Option<Account>> {
        let row = sqlx::query("SELECT * FROM account WHERE name = ?1").bind(name).fetch_optional(&self.reader).await?;
        row.as_ref().map(account_of).transpose()
    }

    async fn create(&self, name: &str, account: &Account, origin: Origin, limit: usize) -> Result<Created> {
        let mut tx = self.write().await?;
        if sqlx::query("SELECT 1 FROM account WHERE name = ?1").bind(name).fetch_optional(&mut *tx).await?.is_some() {
            return Ok(Created::Taken);
        }
        if origin.registered() {
            let registered: i64 = sqlx::query_scalar("SELECT count(*) FROM account WHERE registered = 1").fetch_one(&mut *tx).await?;
            if usize::try_from(registered).unwrap_or(usize::MAX) >= limit {
                return Ok(Created::Full);
            }
        }
        let insert = sqlx::query(
            "INSERT INTO account (name, salt, iterations, sha1_stored, sha1_server, sha256_stored, sha256_server, registered) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        );
        keys(insert.bind(name), account).bind(origin.registered()).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Created::Made)
    }

    async fn set_keys(&self, name: &str, account: &Account) -> Result<bool> {
        let update = sqlx::query(
            "UPDATE account SET salt = ?2, iterations = ?3, sha1_stored = ?4, sha1_server = ?5, sha256_stored = ?6, sha256_server = ?7 WHERE name = ?1",
        );
        let done = keys(update.bind(name), account).execute(&self.writer).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove(&self, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM account WHERE name = ?1").bind(name).execute(&self.writer).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn names(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT name FROM account ORDER BY name").fetch_all(&self.reader).await?)
    }
}

fn contact_of(row: &SqliteRow) -> Result<Contact> {
    let groups: String = row.try_get("groups")?;
    Ok(Contact {
        jid: row.try_get("jid")?,
        name: row.try_get("name")?,
        groups: serde_json::from_str(&groups).map_err(|e| Error::new(format!("a contact's groups: {e}")))?,
        subscription: Subscription { to: row.try_get("sub_to")?, from: row.try_get("sub_from")? },
        ask: row.try_get("ask")?,
    })
}

#[async_trait]
impl RosterStore for SqliteStore {
    async fn contacts(&self, user: &str) -> Result<Vec<Contact>> {
        let rows = sqlx::query("SELECT * FROM contact WHERE user = ?1 ORDER BY id").bind(user).fetch_all(&self.reader).await?;
        rows.iter().map(contact_of).collect()
    }

    async fn contact(&self, user: &str, jid: &str) -> Result<Option<Contact>> {
        let row = sqlx::query("SELECT * FROM contact WHERE user = ?1 AND jid = ?2").bind(user).bind(jid).fetch_optional(&self.reader).await?;
        row.as_ref().map(contact_of).transpose()
    }

    async fn update(&self, user: &str, jid: &str, add: bool, limit: usize, change: &mut (dyn for<'c> FnMut(&'c mut Contact) + Send)) -> Result<Updated> {
        let mut tx = self.write().await?;
        let row = sqlx::query("SELECT * FROM contact WHERE user = ?1 AND jid = ?2").bind(user).bind(jid).fetch_optional(&mut *tx).await?;
        let mut contact = match row {
            Some(row) => contact_of(&row)?,
            None if !add => return Ok(Updated::Absent),
            None => {
                let count: i64 = sqlx::query_scalar("SELECT count(*) FROM contact WHERE user = ?1").bind(user).fetch_one(&mut *tx).await?;
                if usize::try_from(count).unwrap_or(usize::MAX) >= limit {
                    return Ok(Updated::Full);
                }
                Contact { jid: jid.to_owned(), ..Contact::default() }
            }
        };
        change(&mut contact);
        let groups = serde_json::to_string(&contact.groups).map_err(Error::new)?;
        sqlx::query(
            "INSERT INTO contact (user, jid, name, groups, sub_to, sub_from, ask) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
             ON CONFLICT (user, jid) DO UPDATE SET name = excluded.name, groups = excluded.groups, \
             sub_to = excluded.sub_to, sub_from = excluded.sub_from, ask = excluded.ask",
        )
        .bind(user)
        .bind(jid)
        .bind(&contact.name)
        .bind(groups)
        .bind(contact.subscription.to)
        .bind(contact.subscription.from)
        .bind(contact.ask)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Updated::Changed(contact))
    }

    async fn remove_contact(&self, user: &str, jid: &str) -> Result<Option<Contact>> {
        let mut tx = self.write().await?;
        let row = sqlx::query("SELECT * FROM contact WHERE user = ?1 AND jid = ?2").bind(user).bind(jid).fetch_optional(&mut *tx).await?;
        let Some(row) = row else { return Ok(None) };
        let contact = contact_of(&row)?;
        sqlx::query("DELETE FROM contact WHERE user = ?1 AND jid = ?2").bind(user).bind(jid).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM subscription_request WHERE user = ?1 AND requester = ?2").bind(user).bind(jid).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(contact))
    }

    async fn hold(&self, user: &str, from: &str, request: &str, limit: usize) -> Result<()> {
        let mut tx = self.write().await?;
        sqlx::query("DELETE FROM subscription_request WHERE user = ?1 AND requester = ?2").bind(user).bind(from).execute(&mut *tx).await?;
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_request WHERE user = ?1").bind(user).fetch_one(&mut *tx).await?;
        if usize::try_from(count).unwrap_or(usize::MAX) < limit {
            sqlx::query("INSERT INTO subscription_request (user, requester, request) VALUES (?1, ?2, ?3)")
                .bind(user)
                .bind(from)
                .bind(request)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn answered(&self, user: &str, from: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM subscription_request WHERE user = ?1 AND requester = ?2").bind(user).bind(from).execute(&self.writer).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn pending(&self, user: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT request FROM subscription_request WHERE user = ?1 ORDER BY id").bind(user).fetch_all(&self.reader).await?)
    }

    async fn waiting(&self) -> Result<usize> {
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_request").fetch_one(&self.reader).await?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    async fn forget(&self, user: &str) -> Result<()> {
        let mut tx = self.write().await?;
        sqlx::query("DELETE FROM contact WHERE user = ?1").bind(user).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM subscription_request WHERE user = ?1").bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }
}

#[async_trait]
impl OfflineStore for SqliteStore {
    async fn keep(&self, user: &str, message: &str, limit: usize) -> Result<bool> {
        let mut tx = self.write().await?;
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM offline_message WHERE user = ?1").bind(user).fetch_one(&mut *tx).await?;
        if usize::try_from(count).unwrap_or(usize::MAX) >= limit {
            return Ok(false);
        }
        sqlx::query("INSERT INTO offline_message (user, message) VALUES (?1, ?2)").bind(user).bind(message).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn take(&self, user: &str) -> Result<Vec<String>> {
        let mut tx = self.write().await?;
        let messages = sqlx::query_scalar("SELECT message FROM offline_message WHERE user = ?1 ORDER BY id").bind(user).fetch_all(&mut *tx).await?;
        sqlx::query("DELETE FROM offline_message WHERE user = ?1").bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(messages)
    }
}

#[async_trait]
impl RoomStore for SqliteStore {
    async fn save_room(&self, name: &str, state: &str) -> Result<()> {
        sqlx::query("INSERT INTO room (name, state) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET state = excluded.state")
            .bind(name)
            .bind(state)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    async fn remove_room(&self, name: &str) -> Result<()> {
        sqlx::query("DELETE FROM room WHERE name = ?1").bind(name).execute(&self.writer).await?;
        Ok(())
    }

    async fn rooms(&self) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as("SELECT name, state FROM room ORDER BY name").fetch_all(&self.reader).await?)
    }
}
