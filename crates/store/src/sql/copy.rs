//! Everything one database keeps, copied into another: from SQLite to
//! PostgreSQL when one node becomes several (`switchboard store copy`).
//! The target must keep nothing yet; the copy is one transaction there, so
//! a copy that fails leaves it empty. Row ids (rosters' order, offline
//! messages' order, the archive's) are the target's own, made in the
//! source's order.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Arg, Built, SqlStore};
use crate::{Choice, Error, Result};

/// What a column holds, as both databases' schemas have it.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    MaybeText,
    Int,
    Blob,
}

use Kind::{Blob, Int, MaybeText, Text};

/// A table: its name, the columns copied, and the columns its rows are
/// read in the order of (unique together, so that reading resumes after
/// the last row).
struct Table {
    name: &'static str,
    columns: &'static [(&'static str, Kind)],
    order: &'static [(&'static str, Kind)],
}

const TABLES: &[Table] = &[
    Table {
        name: "account",
        columns: &[
            ("name", Text),
            ("salt", Blob),
            ("iterations", Int),
            ("sha1_stored", Blob),
            ("sha1_server", Blob),
            ("sha256_stored", Blob),
            ("sha256_server", Blob),
            ("registered", Int),
        ],
        order: &[("name", Text)],
    },
    Table { name: "contact", columns: &[("owner", Text), ("jid", Text), ("name", MaybeText), ("groups", Text), ("sub_to", Int), ("sub_from", Int), ("ask", Int)], order: &[("id", Int)] },
    Table { name: "subscription_request", columns: &[("owner", Text), ("requester", Text), ("request", Text)], order: &[("id", Int)] },
    Table { name: "roster_version", columns: &[("owner", Text), ("ver", Int)], order: &[("owner", Text)] },
    Table { name: "offline_message", columns: &[("owner", Text), ("message", Text)], order: &[("id", Int)] },
    Table { name: "room", columns: &[("name", Text), ("state", Text), ("version", Text)], order: &[("name", Text)] },
    Table { name: "fast_token", columns: &[("account", Text), ("agent", Text), ("mechanism", Text), ("proof", Blob), ("answer", Blob), ("expires", Int), ("keys", Blob), ("early_count", Int)], order: &[("proof", Blob)] },
    Table { name: "archive_prefs", columns: &[("account", Text), ("by_default", Text), ("always", Text), ("never", Text)], order: &[("account", Text)] },
    Table { name: "archive", columns: &[("archive", Text), ("id", Text), ("at", Int), ("peer", Text), ("message", Text)], order: &[("seq", Int)] },
    Table { name: "room_archive", columns: &[("archive", Text), ("id", Text), ("at", Int), ("peer", Text), ("message", Text)], order: &[("archive", Text), ("id", Text)] },
];

/// Rows read, and written, at a time.
const CHUNK: usize = 500;

/// Rows one INSERT writes: within both databases' bounds on parameters.
const ROWS_PER_INSERT: usize = 50;

fn value(row: &AnyRow, column: &str, kind: Kind) -> Result<Arg> {
    Ok(match kind {
        Text => Arg::Text(row.try_get(column)?),
        MaybeText => Arg::MaybeText(row.try_get(column)?),
        Int => Arg::Int(row.try_get(column)?),
        Blob => Arg::Blob(row.try_get(column)?),
    })
}

/// Copies everything the store `from` names keeps into the store `to`
/// names, which must keep nothing yet; how many rows of each table.
pub async fn copy(from: &Choice, to: &Choice) -> Result<Vec<(&'static str, u64)>> {
    let open = |choice: &Choice| {
        let choice = choice.clone();
        async move {
            match choice {
                Choice::Memory => Err(Error::new("the memory store keeps nothing to copy, and nothing copied into it would last")),
                Choice::Sqlite(dir) => SqlStore::sqlite(&SqlStore::file_in(&dir)).await,
                Choice::Postgres(url) => SqlStore::postgres(&url).await,
            }
        }
    };
    let (source, target) = (open(from).await?, open(to).await?);
    for table in TABLES {
        let held: i64 = sqlx::query_scalar(&format!("SELECT count(*) FROM {}", table.name)).fetch_one(&target.reader).await?;
        if held > 0 {
            return Err(Error::new(format!("the target already keeps {held} rows of {}: copy into a new database", table.name)));
        }
    }
    let mut tx = target.writer.begin().await?;
    let mut copied = Vec::new();
    for table in TABLES {
        let columns: Vec<&str> = table.columns.iter().map(|(name, _)| *name).collect();
        let order = table.order.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ");
        let marks = (0..table.order.len()).map(|n| format!("{} AS copy_order_{n}", table.order[n].0)).collect::<Vec<_>>().join(", ");
        let mut last: Option<Vec<Arg>> = None;
        let mut count = 0u64;
        loop {
            let mut read = Built::default();
            let after = match last.take() {
                Some(args) => {
                    let places: Vec<String> = args.into_iter().map(|arg| read.arg(arg)).collect();
                    format!(" WHERE ({order}) > ({})", places.join(", "))
                }
                None => String::new(),
            };
            read.sql = format!("SELECT {}, {marks} FROM {}{after} ORDER BY {order} LIMIT {CHUNK}", columns.join(", "), table.name);
            let rows = read.query().fetch_all(&source.reader).await?;
            let Some(final_row) = rows.last() else { break };
            last = Some(table.order.iter().enumerate().map(|(n, &(_, kind))| value(final_row, &format!("copy_order_{n}"), kind)).collect::<Result<_>>()?);
            for chunk in rows.chunks(ROWS_PER_INSERT) {
                let mut write = Built::default();
                let mut tuples = Vec::with_capacity(chunk.len());
                for row in chunk {
                    let mut places = Vec::with_capacity(columns.len());
                    for &(column, kind) in table.columns {
                        places.push(write.arg(value(row, column, kind)?));
                    }
                    tuples.push(format!("({})", places.join(", ")));
                }
                write.sql = format!("INSERT INTO {} ({}) VALUES {}", table.name, columns.join(", "), tuples.join(", "));
                write.query().execute(&mut *tx).await?;
            }
            count += rows.len() as u64;
        }
        copied.push((table.name, count));
    }
    tx.commit().await?;
    Ok(copied)
}
