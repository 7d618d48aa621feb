//! `switchboard account add|remove|list|passwd`: the accounts of the store
//! the server keeps them in, changed from the command line. It opens the
//! store the server's settings name (flags, environment, `--config` file),
//! so it writes where a running server reads: SQLite lets both at once.

use std::path::PathBuf;

use store::Origin;

use crate::config::{Args, Config, StoreFlags};
use crate::error::Error;

/// The flags of `switchboard account`.
#[derive(Debug, clap::Args)]
pub struct AccountArgs {
    #[command(subcommand)]
    pub action: AccountAction,
    /// TOML file with settings, as `serve` takes it: its store settings are used
    #[arg(long, env = "SWITCHBOARD_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreFlags,
}

#[derive(Debug, clap::Subcommand)]
pub enum AccountAction {
    /// Make an account; its password is the first line of standard input.
    Add { name: String },
    /// Remove an account, its roster and its archive.
    Remove { name: String },
    /// List the accounts, one name a line.
    List,
    /// Give an account a new password, read from standard input.
    Passwd { name: String },
}

/// Runs one `switchboard account` command; what it prints.
pub async fn run_account(args: AccountArgs) -> Result<String, Error> {
    let serve = Args { config: args.config, store: args.store, ..Args::default() };
    let config = Config::resolve(&serve)?;
    let store = store::open_with(&config.store.choice(), config.store.sqlite_synchronous).await.map_err(Error::store)?;
    if !store.persistent() {
        return Err(Error::config("--store memory keeps nothing: an account made here would be gone at once"));
    }
    let name_of = |name: &str| xmpp::account_name(name).ok_or_else(|| Error::config(format!("{name:?} is not a JID localpart")));
    Ok(match args.action {
        AccountAction::Add { name } => {
            let name = name_of(&name)?;
            let account = xmpp::new_account(&password("account add alice")?);
            match store.create(&name, &account, Origin::Administrator, 0).await.map_err(Error::store)? {
                store::Created::Made => format!("added {name}\n"),
                _ => return Err(Error::config(format!("{name} has an account already"))),
            }
        }
        AccountAction::Remove { name } => {
            let name = name_of(&name)?;
            if !store.remove(&name).await.map_err(Error::store)? {
                return Err(Error::config(format!("{name} has no account")));
            }
            let bare = format!("{name}@{}", config.xmpp.domain);
            store.forget(&bare).await.map_err(Error::store)?;
            store.forget_archive(&bare).await.map_err(Error::store)?;
            // Messages waiting for it: whoever registers the name next must
            // not be given them.
            store.take(&bare).await.map_err(Error::store)?;
            format!("removed {name}\n")
        }
        AccountAction::List => store.names().await.map_err(Error::store)?.iter().map(|name| format!("{name}\n")).collect(),
        AccountAction::Passwd { name } => {
            let name = name_of(&name)?;
            let account = xmpp::new_account(&password("account passwd alice")?);
            if !store.set_keys(&name, &account).await.map_err(Error::store)? {
                return Err(Error::config(format!("{name} has no account")));
            }
            format!("changed the password of {name}\n")
        }
    })
}

/// A password from the first line of standard input; `example` is the
/// command to show if there is none.
pub(crate) fn password(example: &str) -> Result<String, Error> {
    let mut password = String::new();
    std::io::stdin().read_line(&mut password).map_err(|e| Error::io(format!("cannot read the password: {e}")))?;
    let password = password.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return Err(Error::config(format!("give the password on standard input, e.g. `echo secret | switchboard {example}`")));
    }
    Ok(password.to_owned())
}
