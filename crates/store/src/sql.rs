//! `SqlStore`: the store in a database, SQLite (one file, `switchboard.db`
//! in `--data-dir`, the embedded default) or PostgreSQL (shared by several
//! nodes). One set of statements serves both, through sqlx's `Any` driver:
//! they use `$N` parameters, which both databases read, and plain types
//! (text, bytes, 64-bit integers; flags are 0 or 1). Each database has its
//! own migrations (`migrations/sqlite`, `migrations/postgres`), embedded and
//! run at open.
//!
//! SQLite runs in WAL mode with `synchronous = NORMAL` by default: a
//! transaction that has committed survives the process being killed; the
//! last ones before a power cut or an operating-system crash may be lost
//! (SQLite's own account of WAL). `Synchronous::Full` syncs the log at
//! every commit, so that they are not. Its writes go through one connection, so that they are serial
//! within the process and a read-then-write transaction (`BEGIN
//! IMMEDIATE`) is never refused halfway for another's lock; reads go
//! through a small pool beside it, which WAL lets read while the writer
//! writes. PostgreSQL's writes may run at once on several connections and
//! nodes: a read-then-write transaction first takes a transaction-scoped
//! advisory lock on what it changes (one user's roster, the accounts).

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::AnyPool;
use sqlx::migrate::Migrator;
use sqlx::{Any, ConnectOptions, Connection, Executor, Row, Transaction};

mod copy;
mod threads;

pub use copy::copy;

use crate::{Account, AccountStore, ArchiveStore, Change, Contact, Created, Cursor, Entry, Error, FastToken, FastTokenStore, Filter, Keep, OfflineStore, Origin, Page, Prefs, Result, RoomStore, RosterStore, ScramKeys, Store, Subscription, Synchronous, Updated};

static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// How long a statement waits for another connection's lock on a SQLite
/// file (the `switchboard account` command beside a running server).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections that read SQLite at once.
const SQLITE_READERS: u32 = 4;

/// Connections to PostgreSQL.
const POSTGRES_CONNECTIONS: u32 = 8;

/// How long a statement waits for a connection to PostgreSQL, and the
/// server for its first one at start, before failing.
const POSTGRES_WAIT: Duration = Duration::from_secs(5);

/// Archive rows in one INSERT: five parameters each, within what both
/// databases take in one statement.
const ROWS_PER_INSERT: usize = 64;

/// The lock key of the accounts as a whole (registration's bound).
const ACCOUNTS: &str = "accounts";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone)]
pub struct SqlStore {
    backend: Backend,
    writer: AnyPool,
    reader: AnyPool,
}

fn install_drivers() {
    static DRIVERS: Once = Once::new();
    DRIVERS.call_once(sqlx::any::install_default_drivers);
}

impl SqlStore {
    /// The SQLite store's file in the folder `dir`.
    pub fn file_in(dir: &Path) -> PathBuf {
        dir.join("switchboard.db")
    }

    /// Opens (or makes) the SQLite store in the file `path`, making its
    /// folder if needed, and brings its schema up to date.
    pub async fn sqlite(path: &Path) -> Result<SqlStore> {
        SqlStore::sqlite_with(path, Synchronous::default()).await
    }

    /// As [`SqlStore::sqlite`], committing as `synchronous` says.
    pub async fn sqlite_with(path: &Path, synchronous: Synchronous) -> Result<SqlStore> {
        install_drivers();
        let place = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::new(format!("cannot make {}: {e}", dir.display())))?;
        }
        // sqlx takes no lock while it migrates a SQLite file: two processes
        // opening a new file at once (a server starting and `switchboard
        // account add`) would both apply its migrations and one would fail.
        // The one holding this lock file opens it; the other waits, then
        // finds the schema up to date. Released when this returns.
        let lock_path = PathBuf::from(format!("{}.lock", path.display()));
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::new(format!("cannot make {}: {e}", lock_path.display())))?;
        let _lock = tokio::task::spawn_blocking(move || lock.lock().map(|()| lock))
            .await
            .map_err(|e| Error::new(format!("{place}: {e}")))?
            .map_err(|e| Error::new(format!("cannot lock {}: {e}", lock_path.display())))?;
        let file = sqlx::sqlite::SqliteConnectOptions::new().filename(path).create_if_missing(true);
        let options = AnyConnectOptions::from_url(&file.to_url_lossy()).map_err(|e| Error::new(format!("{place}: {e}")))?;
        let opened = |e: sqlx::Error| Error::new(format!("cannot open {place}: {e}"));
        // One connection first, which fails at once on a file that is not a
        // database or a disk that cannot take its WAL index (a pool would
        // retry until its timeout, saying only that it timed out) and sets
        // WAL, a property of the file, kept once set.
        let mut first = sqlx::AnyConnection::connect_with(&options).await.map_err(opened)?;
        first.execute("PRAGMA journal_mode = WAL").await.map_err(opened)?;
        first.execute("SELECT count(*) FROM sqlite_master").await.map_err(opened)?;
        first.close().await.map_err(opened)?;
        // Its one connection opens before any reader's, and is kept for
        // the store's life: its thread is the newest as it opens (`threads`).
        let writer = AnyPoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .after_connect(move |conn, _| sqlite_pragmas(conn, false, synchronous))
            .connect_with(options.clone())
            .await
            .map_err(opened)?;
        SQLITE.run(&writer).await.map_err(|e| Error::new(format!("{place}: {e}")))?;
        let reader = AnyPoolOptions::new().max_connections(SQLITE_READERS).after_connect(move |conn, _| sqlite_pragmas(conn, true, synchronous)).connect_with(options).await.map_err(opened)?;
        Ok(SqlStore { backend: Backend::Sqlite, writer, reader })
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://…`) and
    /// brings its schema up to date.
    pub async fn postgres(url: &str) -> Result<SqlStore> {
        install_drivers();
        let options = AnyConnectOptions::from_url(&url.parse().map_err(|e| Error::new(format!("{url:?} is not a database URL: {e}")))?)
            .map_err(|e| Error::new(format!("{url:?}: {e}")))?;
        let place = without_password(url);
        let pool = AnyPoolOptions::new()
            .max_connections(POSTGRES_CONNECTIONS)
            .acquire_timeout(POSTGRES_WAIT)
            .connect_with(options)
            .await
            .map_err(|e| Error::new(format!("cannot connect to {place}: {e}")))?;
        POSTGRES.run(&pool).await.map_err(|e| Error::new(format!("{place}: {e}")))?;
        Ok(SqlStore { backend: Backend::Postgres, writer: pool.clone(), reader: pool })
    }

    /// A write transaction in which what it reads of `key` (a user's bare
    /// JID, or [`ACCOUNTS`]) cannot change before it writes.
    async fn write(&self, key: &str) -> Result<Transaction<'static, Any>> {
        match self.backend {
            Backend::Sqlite => Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?),
            Backend::Postgres => {
                let mut tx = self.writer.begin().await?;
                sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))").bind(key).execute(&mut *tx).await?;
                Ok(tx)
            }
        }
    }
}

/// What each SQLite connection is told as it opens: how long to wait for
/// another's lock, how often to sync, where its temporary files go, and,
/// for a reader, to write nothing. The writer's thread, new, is given a
/// lower priority than the server's (`threads`).
///
/// `temp_store = MEMORY` keeps the statement journal (the undo of one
/// statement within a transaction, which a statement that changes many
/// rows and may fail halfway needs) in memory: on a file, its writes were
/// a tenth of the archive writer's time (perf, the chat study's 4 rooms of
/// 10 on one core), before its insert became `OR FAIL`. A larger
/// `wal_autocheckpoint` (10,000 pages) measured no cheaper.
fn sqlite_pragmas(conn: &mut sqlx::AnyConnection, reading: bool, synchronous: Synchronous) -> futures_core::future::BoxFuture<'_, std::result::Result<(), sqlx::Error>> {
    let timeout = BUSY_TIMEOUT.as_millis();
    if !reading {
        threads::lower_newest();
    }
    let synchronous = synchronous.pragma();
    Box::pin(async move {
        conn.execute(format!("PRAGMA busy_timeout = {timeout}; PRAGMA synchronous = {synchronous}; PRAGMA temp_store = MEMORY; PRAGMA query_only = {reading}").as_str()).await?;
        Ok(())
    })
}

/// `url` with its password, if any, left out.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

impl Store for SqlStore {
    fn persistent(&self) -> bool {
        true
    }
}

/// A count as the databases give it.
fn count(n: i64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn flag(on: bool) -> i64 {
    i64::from(on)
}

type Query<'q> = sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>;

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

fn account_of(row: &AnyRow) -> Result<Account> {
    let iterations: i64 = row.try_get("iterations")?;
    Ok(Account {
        salt: row.try_get("salt")?,
        iterations: u32::try_from(iterations).map_err(|_| Error::new(format!("an account's iteration count is {iterations}")))?,
        sha1: ScramKeys { stored: row.try_get("sha1_stored")?, server: row.try_get("sha1_server")? },
        sha256: ScramKeys { stored: row.try_get("sha256_stored")?, server: row.try_get("sha256_server")? },
    })
}

#[async_trait]
impl AccountStore for SqlStore {
    async fn account(&self, name: &str) -> Result<Option<Account>> {
        let row = sqlx::query("SELECT * FROM account WHERE name = $1").bind(name).fetch_optional(&self.reader).await?;
        row.as_ref().map(account_of).transpose()
    }

    async fn create(&self, name: &str, account: &Account, origin: Origin, limit: usize) -> Result<Created> {
        let mut tx = self.write(ACCOUNTS).await?;
        if sqlx::query("SELECT 1 FROM account WHERE name = $1").bind(name).fetch_optional(&mut *tx).await?.is_some() {
            return Ok(Created::Taken);
        }
        if origin.registered() {
            let registered: i64 = sqlx::query_scalar("SELECT count(*) FROM account WHERE registered = 1").fetch_one(&mut *tx).await?;
            if count(registered) >= limit {
                return Ok(Created::Full);
            }
        }
        let insert = sqlx::query(
            "INSERT INTO account (name, salt, iterations, sha1_stored, sha1_server, sha256_stored, sha256_server, registered) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        );
        keys(insert.bind(name), account).bind(flag(origin.registered())).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Created::Made)
    }

    async fn set_keys(&self, name: &str, account: &Account) -> Result<bool> {
        let mut tx = self.write(name).await?;
        let update = sqlx::query(
            "UPDATE account SET salt = $2, iterations = $3, sha1_stored = $4, sha1_server = $5, sha256_stored = $6, sha256_server = $7 WHERE name = $1",
        );
        let done = keys(update.bind(name), account).execute(&mut *tx).await?;
        // A new password ends the logins the old one gave.
        sqlx::query("DELETE FROM fast_token WHERE account = $1").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn remove(&self, name: &str) -> Result<bool> {
        let mut tx = self.write(name).await?;
        let done = sqlx::query("DELETE FROM account WHERE name = $1").bind(name).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM fast_token WHERE account = $1").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn names(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT name FROM account ORDER BY name").fetch_all(&self.reader).await?)
    }
}

fn contact_of(row: &AnyRow) -> Result<Contact> {
    let groups: String = row.try_get("groups")?;
    let on = |column: &str| -> Result<bool> { Ok(row.try_get::<i64, _>(column)? != 0) };
    Ok(Contact {
        jid: row.try_get("jid")?,
        name: row.try_get("name")?,
        groups: serde_json::from_str(&groups).map_err(|e| Error::new(format!("a contact's groups: {e}")))?,
        subscription: Subscription { to: on("sub_to")?, from: on("sub_from")? },
        ask: on("ask")?,
    })
}

#[async_trait]
impl RosterStore for SqlStore {
    async fn contacts(&self, user: &str) -> Result<Vec<Contact>> {
        let rows = sqlx::query("SELECT * FROM contact WHERE owner = $1 ORDER BY id").bind(user).fetch_all(&self.reader).await?;
        rows.iter().map(contact_of).collect()
    }

    async fn contact(&self, user: &str, jid: &str) -> Result<Option<Contact>> {
        let row = sqlx::query("SELECT * FROM contact WHERE owner = $1 AND jid = $2").bind(user).bind(jid).fetch_optional(&self.reader).await?;
        row.as_ref().map(contact_of).transpose()
    }

    async fn update(&self, user: &str, jid: &str, add: bool, limit: usize, change: &mut (dyn for<'c> FnMut(&'c mut Contact) + Send)) -> Result<Updated> {
        let mut tx = self.write(user).await?;
        let row = sqlx::query("SELECT * FROM contact WHERE owner = $1 AND jid = $2").bind(user).bind(jid).fetch_optional(&mut *tx).await?;
        let mut contact = match row {
            Some(row) => contact_of(&row)?,
            None if !add => return Ok(Updated::Absent),
            None => {
                let held: i64 = sqlx::query_scalar("SELECT count(*) FROM contact WHERE owner = $1").bind(user).fetch_one(&mut *tx).await?;
                if count(held) >= limit {
                    return Ok(Updated::Full);
                }
                Contact { jid: jid.to_owned(), ..Contact::default() }
            }
        };
        change(&mut contact);
        let groups = serde_json::to_string(&contact.groups).map_err(Error::new)?;
        sqlx::query(
            "INSERT INTO contact (owner, jid, name, groups, sub_to, sub_from, ask) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (owner, jid) DO UPDATE SET name = excluded.name, groups = excluded.groups, \
             sub_to = excluded.sub_to, sub_from = excluded.sub_from, ask = excluded.ask",
        )
        .bind(user)
        .bind(jid)
        .bind(contact.name.clone())
        .bind(groups)
        .bind(flag(contact.subscription.to))
        .bind(flag(contact.subscription.from))
        .bind(flag(contact.ask))
        .execute(&mut *tx)
        .await?;
        let ver = bump(&mut tx, user).await?;
        tx.commit().await?;
        Ok(Updated::Changed(Change { contact, ver }))
    }

    async fn remove_contact(&self, user: &str, jid: &str) -> Result<Option<Change>> {
        let mut tx = self.write(user).await?;
        let row = sqlx::query("SELECT * FROM contact WHERE owner = $1 AND jid = $2").bind(user).bind(jid).fetch_optional(&mut *tx).await?;
        let Some(row) = row else { return Ok(None) };
        let contact = contact_of(&row)?;
        sqlx::query("DELETE FROM contact WHERE owner = $1 AND jid = $2").bind(user).bind(jid).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM subscription_request WHERE owner = $1 AND requester = $2").bind(user).bind(jid).execute(&mut *tx).await?;
        let ver = bump(&mut tx, user).await?;
        tx.commit().await?;
        Ok(Some(Change { contact, ver }))
    }

    async fn hold(&self, user: &str, from: &str, request: &str, limit: usize) -> Result<()> {
        let mut tx = self.write(user).await?;
        sqlx::query("DELETE FROM subscription_request WHERE owner = $1 AND requester = $2").bind(user).bind(from).execute(&mut *tx).await?;
        let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_request WHERE owner = $1").bind(user).fetch_one(&mut *tx).await?;
        if count(waiting) < limit {
            sqlx::query("INSERT INTO subscription_request (owner, requester, request) VALUES ($1, $2, $3)")
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
        let done = sqlx::query("DELETE FROM subscription_request WHERE owner = $1 AND requester = $2").bind(user).bind(from).execute(&self.writer).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn pending(&self, user: &str) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT request FROM subscription_request WHERE owner = $1 ORDER BY id").bind(user).fetch_all(&self.reader).await?)
    }

    async fn waiting(&self) -> Result<usize> {
        let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM subscription_request").fetch_one(&self.reader).await?;
        Ok(count(waiting))
    }

    async fn forget(&self, user: &str) -> Result<()> {
        let mut tx = self.write(user).await?;
        sqlx::query("DELETE FROM contact WHERE owner = $1").bind(user).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM subscription_request WHERE owner = $1").bind(user).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM roster_version WHERE owner = $1").bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn version(&self, user: &str) -> Result<u64> {
        let ver: Option<i64> = sqlx::query_scalar("SELECT ver FROM roster_version WHERE owner = $1").bind(user).fetch_optional(&self.reader).await?;
        Ok(ver.map_or(0, |v| u64::try_from(v).unwrap_or(0)))
    }
}

/// One more to `user`'s roster version, in the transaction that changes
/// it; the version it is now.
async fn bump(tx: &mut Transaction<'static, Any>, user: &str) -> Result<u64> {
    let ver: i64 = sqlx::query_scalar("INSERT INTO roster_version (owner, ver) VALUES ($1, 1) ON CONFLICT (owner) DO UPDATE SET ver = roster_version.ver + 1 RETURNING ver")
        .bind(user)
        .fetch_one(&mut **tx)
        .await?;
    Ok(u64::try_from(ver).unwrap_or(0))
}

#[async_trait]
impl OfflineStore for SqlStore {
    async fn keep(&self, user: &str, message: &str, limit: usize) -> Result<bool> {
        let mut tx = self.write(user).await?;
        let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM offline_message WHERE owner = $1").bind(user).fetch_one(&mut *tx).await?;
        if count(kept) >= limit {
            return Ok(false);
        }
        sqlx::query("INSERT INTO offline_message (owner, message) VALUES ($1, $2)").bind(user).bind(message).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn take(&self, user: &str) -> Result<Vec<String>> {
        let mut tx = self.write(user).await?;
        let messages = sqlx::query_scalar("SELECT message FROM offline_message WHERE owner = $1 ORDER BY id").bind(user).fetch_all(&mut *tx).await?;
        sqlx::query("DELETE FROM offline_message WHERE owner = $1").bind(user).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(messages)
    }
}

fn token_of(row: &AnyRow) -> Result<FastToken> {
    Ok(FastToken {
        agent: row.try_get("agent")?,
        mechanism: row.try_get("mechanism")?,
        proof: row.try_get("proof")?,
        answer: row.try_get("answer")?,
        expires: row.try_get("expires")?,
        keys: row.try_get("keys")?,
        early_count: row.try_get("early_count")?,
    })
}

#[async_trait]
impl FastTokenStore for SqlStore {
    async fn keep_token(&self, account: &str, token: &FastToken, now: i64, limit: usize) -> Result<()> {
        // Under the account's lock: two logins of one account at once
        // prune what both kept.
        let mut tx = self.write(account).await?;
        sqlx::query("INSERT INTO fast_token (account, agent, mechanism, proof, answer, expires, keys, early_count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
            .bind(account)
            .bind(&token.agent)
            .bind(&token.mechanism)
            .bind(&token.proof)
            .bind(&token.answer)
            .bind(token.expires)
            .bind(&token.keys)
            .bind(token.early_count)
            .execute(&mut *tx)
            .await?;
        let rows = sqlx::query("SELECT * FROM fast_token WHERE account = $1").bind(account).fetch_all(&mut *tx).await?;
        let kept = rows.iter().map(token_of).collect::<Result<Vec<_>>>()?;
        for proof in crate::fast::to_forget(&kept, &token.agent, now, limit) {
            sqlx::query("DELETE FROM fast_token WHERE proof = $1").bind(proof).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn tokens(&self, account: &str) -> Result<Vec<FastToken>> {
        let rows = sqlx::query("SELECT * FROM fast_token WHERE account = $1").bind(account).fetch_all(&self.reader).await?;
        rows.iter().map(token_of).collect()
    }

    async fn forget_tokens(&self, account: &str, agent: &str, before: i64) -> Result<()> {
        sqlx::query("DELETE FROM fast_token WHERE account = $1 AND agent = $2 AND expires < $3").bind(account).bind(agent).bind(before).execute(&self.writer).await?;
        Ok(())
    }

    async fn raise_early_count(&self, account: &str, proof: &[u8], count: i64) -> Result<bool> {
        // One statement: of two logins with one count, one raises it.
        let done = sqlx::query("UPDATE fast_token SET early_count = $3 WHERE account = $1 AND proof = $2 AND early_count < $3")
            .bind(account)
            .bind(proof)
            .bind(count)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected() == 1)
    }
}

#[async_trait]
impl RoomStore for SqlStore {
    async fn save_room(&self, name: &str, state: &str, version: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO room (name, state, version) VALUES ($1, $2, $3) \
             ON CONFLICT (name) DO UPDATE SET state = excluded.state, version = excluded.version WHERE room.version <= excluded.version",
        )
        .bind(name)
        .bind(state)
        .bind(version)
        .execute(&self.writer)
        .await?;
        Ok(())
    }

    async fn remove_room(&self, name: &str) -> Result<()> {
        sqlx::query("DELETE FROM room WHERE name = $1").bind(name).execute(&self.writer).await?;
        Ok(())
    }

    async fn rooms(&self) -> Result<Vec<(String, String)>> {
        Ok(sqlx::query_as("SELECT name, state FROM room ORDER BY name").fetch_all(&self.reader).await?)
    }

    async fn room(&self, name: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar("SELECT state FROM room WHERE name = $1").bind(name).fetch_optional(&self.reader).await?)
    }
}

/// A value bound to a statement built as it goes.
enum Arg {
    Text(String),
    Int(i64),
    MaybeText(Option<String>),
    Blob(Vec<u8>),
}

/// A statement's text and its arguments, `$N` numbered as they are added.
#[derive(Default)]
struct Built {
    sql: String,
    args: Vec<Arg>,
}

impl Built {
    /// `$N` for `arg`, added.
    fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    fn query(&self) -> Query<'_> {
        self.args.iter().fold(sqlx::query(&self.sql), |q, arg| match arg {
            Arg::Text(text) => q.bind(text.as_str()),
            Arg::Int(n) => q.bind(*n),
            Arg::MaybeText(text) => q.bind(text.as_deref()),
            Arg::Blob(bytes) => q.bind(bytes.as_slice()),
        })
    }
}

/// The table that keeps `archive`: a room's, or an account's (migration
/// 0011).
fn table_of(archive: &str) -> &'static str {
    if crate::is_room(archive) { "room_archive" } else { "archive" }
}

/// Both tables of archives.
const ARCHIVE_TABLES: [&str; 2] = ["archive", "room_archive"];

/// Binds `text` as an archive keeps it: PostgreSQL's text holds no NUL,
/// which a chat message may carry, and one would refuse its whole batch;
/// both databases keep U+FFFD in its place. Text without one is bound as
/// it is, not copied.
fn bind_text<'q>(query: Query<'q>, text: &'q str) -> Query<'q> {
    if text.contains('\0') { query.bind(text.replace('\0', "\u{fffd}")) } else { query.bind(text) }
}

fn entry_of(row: &AnyRow) -> Result<Entry> {
    Ok(Entry { archive: row.try_get("archive")?, id: row.try_get("id")?, at: row.try_get("at")?, with: row.try_get("peer")?, message: row.try_get("message")? })
}

impl SqlStore {
    /// Whether `archive` has an entry `id`.
    async fn has(&self, archive: &str, id: &str) -> Result<bool> {
        let sql = format!("SELECT 1 FROM {} WHERE archive = $1 AND id = $2", table_of(archive));
        let found: Option<i32> = sqlx::query_scalar(&sql).bind(archive).bind(id).fetch_optional(&self.reader).await?;
        Ok(found.is_some())
    }

    /// The condition of the index by sender (migration 0008), which keeps
    /// accounts' archives, as each database has it: on SQLite in
    /// operators, since a function there would make each insert keep a
    /// statement journal; on PostgreSQL a function, which does not depend
    /// on the database's collation.
    fn accounts_only(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "(archive < '/' OR archive >= '0')",
            Backend::Postgres => "substr(archive, 1, 1) <> '/'",
        }
    }

    /// The statement that reads a page (see [`ArchiveStore::page`]), and
    /// the order it reads in; `None` when an id it names is not there.
    async fn page_statement(&self, archive: &str, filter: &Filter, from: &Cursor, max: usize) -> Result<Option<(Built, &'static str)>> {
        let mut b = Built::default();
        let mut conditions = vec![format!("archive = {}", b.arg(Arg::Text(archive.to_owned())))];
        if let Some(with) = &filter.with {
            // An account's archive has an index by sender, kept only for
            // accounts' (migration 0008): this term, the index's own,
            // lets the database use it. A room's is read in order, from
            // its own table (migration 0011).
            if !crate::is_room(archive) {
                conditions.push(self.accounts_only().to_owned());
            }
            conditions.push(format!("peer = {}", b.arg(Arg::Text(with.clone()))));
        }
        if let Some(start) = filter.start {
            conditions.push(format!("at >= {}", b.arg(Arg::Int(start))));
        }
        if let Some(end) = filter.end {
            conditions.push(format!("at <= {}", b.arg(Arg::Int(end))));
        }
        // No index by time (migration 0009): an id starts with its time,
        // so the same range said of ids reads the index by id.
        let (lowest, below) = crate::id_bounds(filter.start, filter.end);
        if let Some(lowest) = lowest {
            conditions.push(format!("id >= {}", b.arg(Arg::Text(lowest))));
        }
        if let Some(below) = below {
            conditions.push(format!("id < {}", b.arg(Arg::Text(below))));
        }
        if !filter.ids.is_empty() {
            let listed: Vec<String> = filter.ids.iter().take(max.max(1)).map(|id| b.arg(Arg::Text(id.clone()))).collect();
            conditions.push(format!("id IN ({})", listed.join(", ")));
        }
        let (cursor, order) = match from {
            Cursor::Oldest => (None, "ASC"),
            Cursor::After(id) => (Some(id), "ASC"),
            Cursor::Before(Some(id)) => (Some(id), "DESC"),
            Cursor::Before(None) => (None, "DESC"),
        };
        let cursor = cursor.map(|id| (id, if order == "ASC" { ">" } else { "<" }));
        // An archive's order is its ids' (`IdClock`): an entry's place is
        // its id, once it is known to be there.
        for (id, op) in [filter.after_id.as_ref().map(|id| (id, ">")), filter.before_id.as_ref().map(|id| (id, "<")), cursor].into_iter().flatten() {
            if !self.has(archive, id).await? {
                return Ok(None);
            }
            conditions.push(format!("id {op} {}", b.arg(Arg::Text(id.clone()))));
        }
        // One more than a page: whether there is more says whether it is complete.
        let limit = b.arg(Arg::Int(i64::try_from(max).unwrap_or(i64::MAX).saturating_add(1)));
        b.sql = format!("SELECT archive, id, at, peer, message FROM {} WHERE {} ORDER BY id {order} LIMIT {limit}", table_of(archive), conditions.join(" AND "));
        Ok(Some((b, order)))
    }
}

#[async_trait]
impl ArchiveStore for SqlStore {
    async fn append(&self, entries: &[Entry]) -> Result<()> {
        let mut tx = self.writer.begin().await?;
        // Many rows a statement (benches/archive.rs, SQLite, one core,
        // 1,000,000 entries in batches of 1,024): one row a statement 53,600
        // entries/s; 32 rows 129,000; 64 rows 128,000; 128 rows 107,000; 512
        // rows 50,000. With `?` for `$N`, 64 rows 162,000 to 173,000
        // (120,000 with `$N` in the same sitting); 128 rows and 256 fewer.
        // On SQLite each parameter is an anonymous `?`: sqlx asks SQLite for
        // each parameter's name, a search of the statement's named ones, so
        // binding many `$N` costs their number squared (at 320 a statement,
        // a seventh of the archive writer's thread at the chat study's 2 ×
        // 30). And OR FAIL: a statement that may fail halfway (the id's
        // uniqueness) would otherwise keep a journal of each page it
        // changes to undo itself; the transaction is undone whole anyway.
        let sqlite = self.backend == Backend::Sqlite;
        let or_fail = if sqlite { " OR FAIL" } else { "" };
        // Rooms' entries into their table, accounts' into theirs; within
        // an archive the order of its ids is its order, whatever the rows'.
        let (rooms, accounts): (Vec<&Entry>, Vec<&Entry>) = entries.iter().partition(|e| crate::is_room(&e.archive));
        for chunk in rooms.chunks(ROWS_PER_INSERT).chain(accounts.chunks(ROWS_PER_INSERT)) {
            let rows: Vec<String> = (0..chunk.len())
                .map(|row| {
                    let n = row * 5;
                    if sqlite { "(?, ?, ?, ?, ?)".to_owned() } else { format!("(${}, ${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4, n + 5) }
                })
                .collect();
            let sql = format!("INSERT{or_fail} INTO {} (archive, id, at, peer, message) VALUES {}", table_of(&chunk[0].archive), rows.join(", "));
            // Bound from the entries, not copied into the statement first.
            let insert = chunk.iter().fold(sqlx::query(&sql), |q, e| {
                let q = bind_text(q, &e.archive).bind(e.id.as_str()).bind(e.at);
                bind_text(bind_text(q, &e.with), &e.message)
            });
            insert.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn page(&self, archive: &str, filter: &Filter, from: &Cursor, max: usize) -> Result<Option<Page>> {
        let Some((b, order)) = self.page_statement(archive, filter, from, max).await? else { return Ok(None) };
        let rows = b.query().fetch_all(&self.reader).await?;
        let complete = rows.len() <= max;
        let mut entries = rows.iter().take(max).map(entry_of).collect::<Result<Vec<_>>>()?;
        if order == "DESC" {
            entries.reverse();
        }
        Ok(Some(Page { entries, complete }))
    }

    // The hourly bounds find what to delete on a reader and delete it
    // archive by archive along the table's key: over one writer connection
    // (SQLite's only one) a whole-table statement held every append behind
    // it, 1.1 s a pass for `cap` over 1.1 million entries with nothing to
    // delete (`cargo bench -p switchboard-store --bench archive`).

    async fn trim(&self, before: i64) -> Result<u64> {
        // An entry's id starts with its time (`IdClock`): those taken before
        // `before` are those below this. Past any id's time, all are
        // ("g" sorts after every hexadecimal digit).
        let below = match crate::id_bounds(None, Some(before.saturating_sub(1))).1 {
            Some(below) => below,
            None if before > 0 => "g".to_owned(),
            None => return Ok(0),
        };
        let mut gone = 0;
        for table in ARCHIVE_TABLES {
            let archives: Vec<String> = sqlx::query_scalar(&format!("SELECT DISTINCT archive FROM {table} WHERE id < $1")).bind(&below).fetch_all(&self.reader).await?;
            for archive in archives {
                let delete = format!("DELETE FROM {table} WHERE archive = $1 AND id < $2");
                gone += sqlx::query(&delete).bind(&archive).bind(&below).execute(&self.writer).await?.rows_affected();
            }
        }
        Ok(gone)
    }

    async fn cap(&self, keep: u64) -> Result<u64> {
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let mut gone = 0;
        for table in ARCHIVE_TABLES {
            let over = format!("SELECT archive FROM {table} GROUP BY archive HAVING COUNT(*) > $1");
            let archives: Vec<String> = sqlx::query_scalar(&over).bind(keep).fetch_all(&self.reader).await?;
            for archive in archives {
                // Below the newest `keep`th: an archive that shrank since
                // it was counted has no such entry, and loses nothing.
                let newest = format!("SELECT id FROM {table} WHERE archive = $1 ORDER BY id DESC LIMIT 1 OFFSET $2");
                let sql = match keep {
                    0 => format!("DELETE FROM {table} WHERE archive = $1"),
                    _ => format!("DELETE FROM {table} WHERE archive = $1 AND id < ({newest})"),
                };
                let delete = sqlx::query(&sql).bind(archive);
                let delete = if keep == 0 { delete } else { delete.bind(keep - 1) };
                gone += delete.execute(&self.writer).await?.rows_affected();
            }
        }
        Ok(gone)
    }

    async fn forget_archive(&self, archive: &str) -> Result<()> {
        let mut tx = self.write(archive).await?;
        sqlx::query(&format!("DELETE FROM {} WHERE archive = $1", table_of(archive))).bind(archive).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM archive_prefs WHERE account = $1").bind(archive).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn prefs(&self, user: &str) -> Result<Option<Prefs>> {
        let row = sqlx::query("SELECT by_default, always, never FROM archive_prefs WHERE account = $1").bind(user).fetch_optional(&self.reader).await?;
        let Some(row) = row else { return Ok(None) };
        let default: String = row.try_get("by_default")?;
        // One JID a line: a JID in canonical form holds no control character.
        let list = |column: &str| -> Result<Vec<String>> { Ok(row.try_get::<String, _>(column)?.lines().map(str::to_owned).collect()) };
        let default = Keep::parse(&default).ok_or_else(|| Error::new(format!("{user}'s archiving default {default:?} is none of XEP-0441's")))?;
        Ok(Some(Prefs { default, always: list("always")?, never: list("never")? }))
    }

    async fn set_prefs(&self, user: &str, prefs: &Prefs) -> Result<()> {
        let mut tx = self.write(user).await?;
        sqlx::query(
            "INSERT INTO archive_prefs (account, by_default, always, never) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (account) DO UPDATE SET by_default = excluded.by_default, always = excluded.always, never = excluded.never",
        )
        .bind(user)
        .bind(prefs.default.name())
        .bind(prefs.always.join("\n"))
        .bind(prefs.never.join("\n"))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `with` query reads an account's archive through its index by sender,
    /// and a room's, which has none, in the order of its own table: the query's
    /// terms must match the partial index's own for SQLite to take it. A
    /// query by time reads the index by id, in order: no range is sorted.
    #[tokio::test]
    async fn each_sqlite_connection_syncs_as_it_was_told() {
        for (synchronous, expected) in [(Synchronous::Normal, 1), (Synchronous::Full, 2)] {
            let dir = tempfile::tempdir().unwrap();
            let store = SqlStore::sqlite_with(&SqlStore::file_in(dir.path()), synchronous).await.unwrap();
            for pool in [&store.writer, &store.reader] {
                let level: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(pool).await.unwrap();
                assert_eq!(level, expected, "{synchronous:?}");
            }
        }
    }

    #[tokio::test]
    async fn archive_queries_read_an_index_on_sqlite() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqlStore::sqlite(&SqlStore::file_in(dir.path())).await.unwrap();
        let plan = |archive: &'static str, filter: Filter| {
            let store = &store;
            async move {
                let (b, _) = store.page_statement(archive, &filter, &Cursor::Before(None), 50).await.unwrap().unwrap();
                let explain = Built { sql: format!("EXPLAIN QUERY PLAN {}", b.sql), ..b };
                let rows = explain.query().fetch_all(&store.reader).await.unwrap();
                rows.iter().map(|row| row.try_get::<String, _>("detail").unwrap()).collect::<Vec<_>>().join("; ")
            }
        };
        let with = || Filter { with: Some("b@l".into()), ..Filter::default() };
        let account = plan("a@l", with()).await;
        assert!(account.contains("INDEX archive_peer") && !account.contains("TEMP B-TREE"), "{account}");
        let room = plan("/chat#lobby", with()).await;
        assert!(room.contains("SEARCH room_archive USING PRIMARY KEY (archive=?)") && !room.contains("TEMP B-TREE"), "{room}");
        for (start, end) in [(Some(1_700_000_000_000_000), None), (None, Some(1_700_000_000_000_000)), (Some(1), Some(2))] {
            let timed = plan("a@l", Filter { start, end, ..Filter::default() }).await;
            assert!(timed.contains("INDEX sqlite_autoindex_archive_1 (archive=? AND id") && !timed.contains("TEMP B-TREE"), "{timed}");
        }
    }

    /// A database made before migration 0008 (rooms' archives indexed by
    /// sender) keeps what it had, and each archive narrows by sender as
    /// before, on both databases.
    #[tokio::test]
    async fn archives_kept_before_the_room_index_changed_read_alike_after() {
        let postgres = crate::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
        let dir = tempfile::tempdir().unwrap();
        let file = SqlStore::file_in(dir.path());
        let sqlite_url = format!("sqlite://{}?mode=rwc", file.display());
        for (backend, url) in [("sqlite", sqlite_url.as_str()), ("postgres", postgres.url.as_str())] {
            // The migrations up to 0007, as a database made then has them.
            let before = tempfile::tempdir().unwrap();
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(backend);
            for file in std::fs::read_dir(&source).unwrap().flatten() {
                if file.file_name().to_string_lossy().as_ref() < "0008" {
                    std::fs::copy(file.path(), before.path().join(file.file_name())).unwrap();
                }
            }
            install_drivers();
            let pool = AnyPool::connect(url).await.unwrap();
            Migrator::new(before.path()).await.unwrap().run(&pool).await.unwrap();
            for (n, archive, peer) in [(1, "a@l", "b@l"), (2, "a@l", "c@l"), (3, "/chat#lobby", "/chat#lobby/ann"), (4, "/chat#lobby", "/chat#lobby/bob"), (5, "a@l", "b@l"), (6, "/chat#lobby", "/chat#lobby/ann")] {
                sqlx::query("INSERT INTO archive (archive, id, at, peer, message) VALUES ($1, $2, $3, $4, $5)")
                    .bind(archive)
                    .bind(format!("id{n}"))
                    .bind(n)
                    .bind(peer)
                    .bind("m")
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            pool.close().await;
            let store = if backend == "sqlite" { SqlStore::sqlite(&file).await } else { SqlStore::postgres(url).await }.unwrap();
            let with = |archive: &'static str, peer: &str| {
                let (store, filter) = (&store, Filter { with: Some(peer.to_owned()), ..Filter::default() });
                async move {
                    let page = store.page(archive, &filter, &Cursor::Oldest, 10).await.unwrap().unwrap();
                    page.entries.into_iter().map(|e| e.id).collect::<Vec<_>>()
                }
            };
            assert_eq!(with("a@l", "b@l").await, ["id1", "id5"], "{backend}");
            assert_eq!(with("/chat#lobby", "/chat#lobby/ann").await, ["id3", "id6"], "{backend}");
            assert_eq!(with("/chat#lobby", "/chat#lobby/bob").await, ["id4"], "{backend}");
        }
    }
}
