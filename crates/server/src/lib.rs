//! `switchboard serve`: the real-time messaging server.
//!
//! A request enters through [`server::serve`]'s accept loop, is routed by
//! path in `http`, and a transport (`transport::websocket`, …) adapts its
//! wire format to a client of the mount's protocol (`served`): an app
//! (the `apps` crate) or XMPP. Apps reach their rooms through a
//! `hub::Broker` (in memory, or across nodes with `cluster::NatsBroker`);
//! XMPP sessions (`xmpp`) share the chat app's rooms. Each connection's
//! writer drains its bounded outbox.

mod account;
mod activity;
mod copy;
mod config;
mod error;
mod http;
mod served;
mod server;
mod shed;
mod state;

pub use apps::AppKind;
pub use config::MountKind;
pub use error::Error;
pub use config::{
    ApiKeys, Args, BoshConfig, BrokerConfig, Config, FederationConfig, Listen, Mount, MountLimits, RoomConfig, ServerConfig, SockjsOptions, StoreConfig, StoreFlags, StoreKind,
    Route, Routes, TlsFiles, TokenKey, XmppConfig, markdown_table,
};
pub use account::{AccountArgs, run_account};
pub use copy::{StoreArgs, run_store};
pub use server::{Listeners, listen, serve, serve_with};
pub use xmpp::AccountEntry;
pub use xmpp::s2s::ZeroPeer;

/// Runs `switchboard serve` from its flags until SIGINT or SIGTERM.
pub async fn run_cli(args: Args) -> Result<(), Error> {
    let mut config = Config::resolve(&args)?;
    let files = raise_open_file_limit();
    // Each connection takes a descriptor; leave some for everything else.
    let room = usize::try_from(files.saturating_sub(OTHER_FILES)).unwrap_or(usize::MAX);
    if config.server.max_connections > room {
        tracing::warn!("max_connections {} lowered to {room}: the open-file limit is {files}", config.server.max_connections);
        config.server.max_connections = room.max(1);
    }
    // Before the server says it listens: a SIGTERM sent as soon as it does
    // must find the handlers, not the default action, which kills at once.
    let stop = signal();
    let listener = server::listen(config.server.listen, config.server.tcp_fast_open)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {}: {e}", config.server.listen)))?;
    let local = listener.local_addr().map_err(|e| Error::io(e.to_string()))?;
    let apps: Vec<String> = config
        .mounts
        .iter()
        .map(|m| if m.prefix.trim_start_matches('/') == m.app.name() { m.prefix.clone() } else { format!("{} ({})", m.prefix, m.app.name()) })
        .collect();
    let scheme = if config.tls.is_some() { "https" } else { "http" };
    let mut said = vec![format!("switchboard listening on {scheme}://{local}/ with apps {}", apps.join(", "))];
    let listeners = Listeners::bind(&config).await?;
    let at = |listener: &Option<tokio::net::TcpListener>| listener.as_ref().map(|l| l.local_addr().map_err(|e| Error::io(e.to_string()))).transpose();
    for (listener, how) in [(&listeners.xmpp, ""), (&listeners.xmpp_tls, " with direct TLS")] {
        if let Some(at) = at(listener)? {
            said.push(format!("switchboard serves XMPP for {} on {at}{how}", config.xmpp.domain));
        }
    }
    for (listener, how) in [(&listeners.s2s, ""), (&listeners.s2s_tls, " with direct TLS"), (&listeners.s2s_zero, " configured in advance, with no handshake")] {
        if let Some(at) = at(listener)? {
            said.push(format!("switchboard federates {} with other XMPP servers on {at}{how}", config.xmpp.domain));
        }
    }
    for (listener, how) in [(&listeners.irc, ""), (&listeners.irc_tls, " with TLS")] {
        if let Some(at) = at(listener)? {
            said.push(format!("switchboard serves IRC on {at}{how}"));
        }
    }
    if let Some(at) = at(&listeners.broker)? {
        said.push(format!("switchboard hosts its rooms for other nodes on {at}"));
    }
    // Said once the store is open: a server that ends before it can serve
    // never says it listens.
    server::serve_when_ready(listener, listeners, config, stop, move || {
        for line in said {
            println!("{line}");
        }
    })
    .await
}

/// `switchboard xmpp-account NAME`: reads a password from the first line of
/// standard input and prints the account's `[[xmpp_account]]` entry (salted
/// keys, never the password) for the configuration file.
pub fn xmpp_account_cli(name: &str) -> Result<String, Error> {
    let password = account::password("xmpp-account alice")?;
    let entry = AccountEntry::new(name, &password);
    xmpp::Accounts::new(std::slice::from_ref(&entry), std::sync::Arc::new(store::MemoryStore::default())).map_err(Error::config)?;
    Ok(entry.to_toml())
}

/// Descriptors kept for what is not a client connection: the listener,
/// logs, the reserve the accept loop sheds with, files read at start.
const OTHER_FILES: u64 = 64;

/// Raises the soft open-file limit to the hard limit and returns it.
fn raise_open_file_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(e) => {
            tracing::warn!("cannot raise the open-file limit: {e}");
            rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft).unwrap_or(1024)
        }
    }
}

/// Resolves on the first SIGINT or SIGTERM.
/// The handlers are in place when this returns, not when it is first polled.
fn signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            // Without signal handlers the server runs until killed.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutting down");
    }
}
