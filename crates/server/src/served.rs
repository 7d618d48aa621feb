//! What a mount serves: an app, or XMPP over SockJS (the `xmpp` mount),
//! whose clients are XMPP sessions. The server puts the two together here,
//! so that neither knows the other and every mount is one type,
//! `transport::Mount<Served>`.

use std::net::IpAddr;
use std::sync::Arc;

use apps::{App, AppClient};
use base::token::Identity;
use bytes::Bytes;
use hub::{Close, Outbox};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use transport::{Client, Protocol};
use xmpp::Xmpp;
use xmpp::bridge::Bridged;

use crate::config::MountKind;

/// See the module docs.
#[derive(Debug)]
pub enum Served {
    App(Arc<App>),
    Xmpp(Arc<Xmpp>),
    /// The `xmpp` mount of a server with XMPP off: its clients are told so.
    XmppOff,
}

impl Served {
    /// What the mount serves.
    pub fn kind(&self) -> MountKind {
        match self {
            Served::App(app) => MountKind::App(app.kind()),
            Served::Xmpp(_) | Served::XmppOff => MountKind::Xmpp,
        }
    }
}

/// A client of a mount, as [`Served`] opened it.
#[derive(Debug)]
pub enum ServedClient {
    App(AppClient),
    Xmpp(Bridged),
    Off(Arc<Outbox>),
}

impl Protocol for Served {
    type Client = ServedClient;

    fn open(self: &Arc<Self>, outbox: Arc<Outbox>, identity: Option<Arc<Identity>>, address: IpAddr) -> ServedClient {
        match &**self {
            Served::App(app) => ServedClient::App(app.open(outbox, identity, address)),
            Served::Xmpp(xmpp) => ServedClient::Xmpp(xmpp.open(outbox, identity, address)),
            Served::XmppOff => {
                outbox.close(Close::new(1011, "XMPP is off on this server (--xmpp-listen)"));
                ServedClient::Off(outbox)
            }
        }
    }
}

impl Client for ServedClient {
    fn outbox(&self) -> &Arc<Outbox> {
        match self {
            ServedClient::App(client) => client.outbox(),
            ServedClient::Xmpp(client) => client.outbox(),
            ServedClient::Off(outbox) => outbox,
        }
    }

    fn expires(&self) -> Option<Instant> {
        match self {
            ServedClient::App(client) => client.expires(),
            ServedClient::Xmpp(client) => client.expires(),
            ServedClient::Off(_) => None,
        }
    }

    fn on_message(&mut self, text: Utf8Bytes) {
        match self {
            ServedClient::App(client) => client.on_message(text),
            ServedClient::Xmpp(client) => client.on_message(text),
            ServedClient::Off(_) => {}
        }
    }

    fn on_binary(&mut self, data: Bytes) -> Result<(), Close> {
        match self {
            ServedClient::App(client) => client.on_binary(data),
            ServedClient::Xmpp(client) => client.on_binary(data),
            ServedClient::Off(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apps::{App, AppKind};

    /// An idle connection's memory is mostly its task (docs/shootout.md, "Idle
    /// memory, beside Bun"), so the future of a WebSocket connection to a mount over
    /// plain TCP, native and SockJS, with and without permessage-deflate (which
    /// browsers offer), is held under a bound: a field added to it, or to a mount's
    /// client (an app's or XMPP's), shows here rather than only in the
    /// shootout's RSS. At 392 bytes, tokio's task cell for it (the future,
    /// 24 bytes of `spawn_connection`'s, the task tracker's and tokio's
    /// stage, 96 of tokio's header and trailer, aligned to 128) is 512 bytes,
    /// one of jemalloc's size classes.
    #[tokio::test]
    async fn a_connections_future_stays_small() {
        let served = Arc::new(Served::App(Arc::new(App::in_memory(AppKind::Echo, hub::RoomLimits::NONE))));
        let open = || served.open(Arc::new(Outbox::new(1 << 20)), None, std::net::Ipv4Addr::LOCALHOST.into());
        let sizes = transport::websocket::connection_future_sizes(open).await;
        let cases = ["native", "native with deflate", "SockJS", "SockJS with deflate"];
        for (size, case) in sizes.into_iter().zip(cases) {
            assert!(size <= 392, "{case}: a connection's future is {size} bytes, more than fits a 512-byte task cell");
        }
    }
}
