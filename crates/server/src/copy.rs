//! `switchboard store copy`: everything the server's store keeps (the one
//! its settings name, as for `serve`), copied into a new database, to move
//! from SQLite to PostgreSQL (or back). Run it with the server stopped:
//! what the server writes meanwhile is not copied.

use std::path::PathBuf;

use crate::config::{Args, Config, StoreFlags};
use crate::error::Error;

/// The flags of `switchboard store`.
#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub action: StoreAction,
    /// TOML file with settings, as `serve` takes it: its store settings name the store copied from
    #[arg(long, env = "SWITCHBOARD_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreFlags,
}

#[derive(Debug, clap::Subcommand)]
pub enum StoreAction {
    /// Copy everything the store keeps (accounts, rosters, offline messages, rooms, archives) into a new database, which must keep nothing yet.
    Copy {
        /// The PostgreSQL database to copy into, e.g. postgres://switchboard:secret@127.0.0.1/switchboard
        #[arg(long, conflicts_with = "to_data_dir", required_unless_present = "to_data_dir")]
        to_database: Option<String>,
        /// The folder of a new SQLite store (switchboard.db) to copy into
        #[arg(long)]
        to_data_dir: Option<PathBuf>,
    },
}

/// Runs one `switchboard store` command; what it prints.
pub async fn run_store(args: StoreArgs) -> Result<String, Error> {
    let serve = Args { config: args.config, store: args.store, ..Args::default() };
    let from = Config::resolve(&serve)?.store.choice();
    let StoreAction::Copy { to_database, to_data_dir } = args.action;
    let to = match (to_database, to_data_dir) {
        (Some(url), _) if url.starts_with("postgres://") || url.starts_with("postgresql://") => store::Choice::Postgres(url),
        (Some(_), _) => return Err(Error::config("--to-database must be a postgres:// URL")),
        (None, Some(dir)) => store::Choice::Sqlite(dir),
        (None, None) => return Err(Error::config("say where to copy to: --to-database postgres://… or --to-data-dir DIR")),
    };
    if from == to {
        return Err(Error::config("the store copied from and the one copied into are the same"));
    }
    let copied = store::copy(&from, &to).await.map_err(Error::store)?;
    Ok(copied.iter().map(|(table, rows)| format!("{table}: {rows} copied\n")).collect())
}
