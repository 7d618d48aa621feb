//! Client transports: one small adapter per wire protocol behind one `connect`, a
//! `Sender` and a `Receiver`, so each scenario is written once against this module.
//!
//! The halves are separate so open-loop scenarios can send on schedule from one task
//! while another task receives; a sender never waits for a reply.
//!
//! XMPP transports (`xmpp`, with `bosh` under it) log in as they connect; their
//! application messages are message bodies, and their halves also speak stanzas. The
//! IRC transport (`irc`) registers as it connects; its messages are `PRIVMSG`s.

mod bosh;
pub(crate) mod corked;
pub(crate) mod counted;
mod centrifuge;
pub(crate) mod http;
pub mod irc;
mod socketio;
mod sockjs;
mod websocket;
pub mod xmpp;

use websocket::Framing;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::flags::XmppSettings;
use crate::{Error, Target};

/// One application message as received (cheaply clonable, derefs to `&str`).
pub type Text = tokio_tungstenite::tungstenite::Utf8Bytes;

/// The client transports the bench speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    /// Native WebSocket at `<target>/websocket`, one text frame per message.
    Websocket,
    /// The same, offering permessage-deflate (RFC 7692) and refusing a server
    /// that declines it; messages of 64 bytes or more are sent compressed.
    /// Only when named: `all` never picks it.
    WebsocketDeflate,
    /// SockJS over its raw WebSocket endpoint (`a[...]` frames).
    SockjsWebsocket,
    /// SockJS xhr_streaming receive + xhr_send.
    XhrStreaming,
    /// SockJS xhr polling + xhr_send.
    XhrPolling,
    /// SockJS eventsource receive + xhr_send.
    Eventsource,
    /// SockJS jsonp polling + jsonp_send.
    JsonpPolling,
    /// socket.io 4 (engine.io v4 over WebSocket at `/socket.io/`), namespace `/<app>`,
    /// app messages as the `message` event. Only when named: `all` never picks it.
    Socketio,
    /// Centrifugo's JSON client protocol over WebSocket at `/connection/websocket`,
    /// the app as the channel (peers/centrifuge). Only when named: `all` never picks it.
    Centrifuge,
    /// Plain keep-alive HTTP requests: a message is the query string of
    /// `GET <target>/xhr?<message>`, the reply is the response body (count-down).
    Http,
    /// XMPP over TCP (RFC 6120) at the target's host, `--xmpp-port`.
    XmppTcp,
    /// XMPP over WebSocket (RFC 7395, subprotocol `xmpp`) at `--xmpp-websocket-path`.
    XmppWebsocket,
    /// XMPP over BOSH (XEP-0124/0206) at `--bosh-path`.
    Bosh,
    /// XMPP over SockJS at `--xmpp-sockjs-path`, each SockJS message one RFC 7395
    /// element: over SockJS's raw WebSocket endpoint …
    XmppSockjsWebsocket,
    /// … xhr_streaming receive + xhr_send …
    XmppXhrStreaming,
    /// … xhr polling + xhr_send …
    XmppXhrPolling,
    /// … eventsource receive + xhr_send …
    XmppEventsource,
    /// … and jsonp polling + jsonp_send.
    XmppJsonpPolling,
    /// IRC over TCP at an `irc://host:port` target; messages are `PRIVMSG`s to a
    /// channel. Only when named: `all` never picks it.
    Irc,
}

impl TransportKind {
    /// Every transport, in table order.
    pub const ALL: [TransportKind; 19] = [
        TransportKind::Websocket,
        TransportKind::WebsocketDeflate,
        TransportKind::SockjsWebsocket,
        TransportKind::XhrStreaming,
        TransportKind::XhrPolling,
        TransportKind::Eventsource,
        TransportKind::JsonpPolling,
        TransportKind::Socketio,
        TransportKind::Centrifuge,
        TransportKind::Http,
        TransportKind::XmppTcp,
        TransportKind::XmppWebsocket,
        TransportKind::Bosh,
        TransportKind::XmppSockjsWebsocket,
        TransportKind::XmppXhrStreaming,
        TransportKind::XmppXhrPolling,
        TransportKind::XmppEventsource,
        TransportKind::XmppJsonpPolling,
        TransportKind::Irc,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Websocket => "websocket",
            TransportKind::WebsocketDeflate => "websocket-deflate",
            TransportKind::SockjsWebsocket => "sockjs-websocket",
            TransportKind::XhrStreaming => "xhr-streaming",
            TransportKind::XhrPolling => "xhr-polling",
            TransportKind::Eventsource => "eventsource",
            TransportKind::JsonpPolling => "jsonp-polling",
            TransportKind::Socketio => "socketio",
            TransportKind::Centrifuge => "centrifuge",
            TransportKind::Http => "http",
            TransportKind::XmppTcp => "xmpp-tcp",
            TransportKind::XmppWebsocket => "xmpp-websocket",
            TransportKind::Bosh => "bosh",
            TransportKind::XmppSockjsWebsocket => "xmpp-sockjs-websocket",
            TransportKind::XmppXhrStreaming => "xmpp-xhr-streaming",
            TransportKind::XmppXhrPolling => "xmpp-xhr-polling",
            TransportKind::XmppEventsource => "xmpp-eventsource",
            TransportKind::XmppJsonpPolling => "xmpp-jsonp-polling",
            TransportKind::Irc => "irc",
        }
    }

    pub fn from_name(name: &str) -> Option<TransportKind> {
        TransportKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether it is native WebSocket, with or without permessage-deflate: the
    /// transports a `ws://` target takes.
    pub fn is_native_websocket(self) -> bool {
        matches!(self, TransportKind::Websocket | TransportKind::WebsocketDeflate)
    }

    /// Whether it is one of SockJS's own transports (carrying an app's messages).
    pub fn is_sockjs(self) -> bool {
        matches!(
            self,
            TransportKind::SockjsWebsocket
                | TransportKind::XhrStreaming
                | TransportKind::XhrPolling
                | TransportKind::Eventsource
                | TransportKind::JsonpPolling
        )
    }

    /// Whether it carries an XMPP session.
    pub fn is_xmpp(self) -> bool {
        matches!(self, TransportKind::XmppTcp | TransportKind::XmppWebsocket | TransportKind::Bosh) || self.sockjs_carrier().is_some()
    }

    /// Whether it is IRC, which takes `irc://` targets only.
    pub fn is_irc(self) -> bool {
        self == TransportKind::Irc
    }

    /// Whether a member receives its own messages back from the room: every transport
    /// but IRC (whose servers mostly lack IRCv3's `echo-message`, so the bench asks
    /// none of them for it).
    pub fn echoes(self) -> bool {
        !self.is_irc()
    }

    /// The SockJS transport an XMPP-over-SockJS transport rides on.
    pub fn sockjs_carrier(self) -> Option<TransportKind> {
        match self {
            TransportKind::XmppSockjsWebsocket => Some(TransportKind::SockjsWebsocket),
            TransportKind::XmppXhrStreaming => Some(TransportKind::XhrStreaming),
            TransportKind::XmppXhrPolling => Some(TransportKind::XhrPolling),
            TransportKind::XmppEventsource => Some(TransportKind::Eventsource),
            TransportKind::XmppJsonpPolling => Some(TransportKind::JsonpPolling),
            _ => None,
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Both halves of one client connection.
pub struct Connection {
    pub sender: Sender,
    pub receiver: Receiver,
}

impl Connection {
    /// How long each phase of an XMPP login took; `None` for other transports.
    pub fn login(&self) -> Option<xmpp::Login> {
        match &self.sender {
            Sender::Xmpp(s) => Some(s.login()),
            _ => None,
        }
    }
}

/// Which client opens a connection: its index (XMPP accounts are numbered by it) and, for
/// XMPP transports, who the clients are.
#[derive(Debug, Clone, Copy)]
pub struct Client<'a> {
    pub index: u32,
    pub xmpp: Option<&'a XmppSettings>,
}

/// Opens one client connection (session) of `kind` to `target`, within `timeout`.
pub async fn connect(target: &Target, kind: TransportKind, client: Client<'_>, timeout: Duration) -> Result<Connection, Error> {
    let open = async {
        match kind {
            TransportKind::Irc if target.is_irc() => irc::connect(target, client.index).await,
            TransportKind::Irc => Err(Error::usage("the irc transport needs an irc://host:port --target")),
            _ if target.is_irc() => Err(Error::usage(format!("an irc:// --target takes the irc transport only, not {kind}"))),
            TransportKind::Websocket => websocket::connect(target, &target.websocket_url(), Framing::Native, None).await,
            TransportKind::WebsocketDeflate => websocket::connect(target, &target.websocket_url(), Framing::Deflate, None).await,
            _ if target.is_exact_websocket() => {
                Err(Error::usage(format!("the {kind} transport needs an http:// --target, not a ws:// URL")))
            }
            TransportKind::Http => http::connect(target).await,
            TransportKind::Socketio => socketio::connect(target).await,
            TransportKind::Centrifuge => centrifuge::connect(target).await,
            TransportKind::SockjsWebsocket
            | TransportKind::XhrStreaming
            | TransportKind::XhrPolling
            | TransportKind::Eventsource
            | TransportKind::JsonpPolling => sockjs_connect(target, kind).await,
            TransportKind::XmppTcp
            | TransportKind::XmppWebsocket
            | TransportKind::Bosh
            | TransportKind::XmppSockjsWebsocket
            | TransportKind::XmppXhrStreaming
            | TransportKind::XmppXhrPolling
            | TransportKind::XmppEventsource
            | TransportKind::XmppJsonpPolling => {
                let who = client.xmpp.ok_or_else(|| Error::usage(format!("the {kind} transport needs a scenario with XMPP flags")))?;
                xmpp::connect(target, kind, who, client.index).await
            }
        }
    };
    match tokio::time::timeout(timeout, open).await {
        Ok(result) => result,
        Err(_) => Err(Error::timeout(format!("connecting {kind} to {} took over {timeout:?}", target.as_str()))),
    }
}

/// A SockJS session of `kind` on the app at `target`.
async fn sockjs_connect(target: &Target, kind: TransportKind) -> Result<Connection, Error> {
    if kind == TransportKind::SockjsWebsocket {
        websocket::connect(target, &target.ws_url(&format!("{}/websocket", sockjs::session_path())), Framing::Sockjs, None).await
    } else {
        sockjs::connect(target, kind).await
    }
}

/// The sending half of a connection.
pub enum Sender {
    Websocket(websocket::Sender),
    Http(http::Sender),
    Sockjs(sockjs::Sender),
    Socketio(socketio::Sender),
    Centrifuge(centrifuge::Sender),
    Xmpp(Box<xmpp::Sender>),
    Irc(irc::Sender),
}

impl Sender {
    /// Hands one application message to the transport.
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        match self {
            Sender::Websocket(s) => s.send(text).await,
            Sender::Http(s) => s.send(text).await,
            Sender::Sockjs(s) => s.send(text).await,
            Sender::Socketio(s) => s.send(text).await,
            Sender::Centrifuge(s) => s.send(text).await,
            Sender::Xmpp(s) => s.send(text).await,
            Sender::Irc(s) => s.send(text).await,
        }
    }

    /// The XMPP half, for stanzas.
    pub fn xmpp(&mut self) -> Option<&mut xmpp::Sender> {
        match self {
            Sender::Xmpp(s) => Some(s.as_mut()),
            _ => None,
        }
    }

    /// The IRC half, for channels.
    pub fn irc(&mut self) -> Option<&mut irc::Sender> {
        match self {
            Sender::Irc(s) => Some(s),
            _ => None,
        }
    }

    /// Closes the connection politely (best effort).
    pub async fn close(&mut self) {
        match self {
            Sender::Websocket(s) => s.close().await,
            Sender::Socketio(s) => s.close().await,
            Sender::Centrifuge(s) => s.close().await,
            Sender::Xmpp(s) => s.close().await,
            Sender::Irc(s) => s.close().await,
            Sender::Http(_) | Sender::Sockjs(_) => {}
        }
    }
}

/// The receiving half of a connection.
pub enum Receiver {
    Websocket(websocket::Receiver),
    Http(http::Receiver),
    Sockjs(sockjs::Receiver),
    Socketio(socketio::Receiver),
    Centrifuge(centrifuge::Receiver),
    Xmpp(Box<xmpp::Receiver>),
    Irc(irc::Receiver),
}

impl Receiver {
    /// The next application message; `None` once the server closed the session.
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        match self {
            Receiver::Websocket(r) => r.recv().await,
            Receiver::Http(r) => r.recv().await,
            Receiver::Sockjs(r) => r.recv().await,
            Receiver::Socketio(r) => r.recv().await,
            Receiver::Centrifuge(r) => r.recv().await,
            Receiver::Xmpp(r) => r.recv().await,
            Receiver::Irc(r) => r.recv().await,
        }
    }

    /// The XMPP half, for stanzas.
    pub fn xmpp(&mut self) -> Option<&mut xmpp::Receiver> {
        match self {
            Receiver::Xmpp(r) => Some(r.as_mut()),
            _ => None,
        }
    }

    /// The IRC half, for lines.
    pub fn irc(&mut self) -> Option<&mut irc::Receiver> {
        match self {
            Receiver::Irc(r) => Some(r),
            _ => None,
        }
    }
}

/// What a SockJS server says about itself at `<target>/info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SockjsInfo {
    /// Whether its raw WebSocket endpoint is enabled.
    pub websocket: bool,
}

/// Asks `<target>/info`; `None` when the target does not speak SockJS there.
/// Fails only when the target cannot be reached at all.
pub async fn probe_sockjs(target: &Target, timeout: Duration) -> Result<Option<SockjsInfo>, Error> {
    let path = target.path("/info");
    let get = http::get(target, &path);
    let (status, body) = match tokio::time::timeout(timeout, get).await {
        Ok(r) => r?,
        Err(_) => return Err(Error::timeout(format!("{}/info did not answer within {timeout:?}", target.as_str()))),
    };
    if !status.is_success() {
        return Ok(None);
    }
    let info: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    Ok(info.get("websocket").and_then(|w| w.as_bool()).map(|websocket| SockjsInfo { websocket }))
}
