//! IRC over WebSocket (the IRCv3 WebSocket specification) at
//! `/irc-websocket`: each WebSocket message is one IRC line without its
//! CR LF, in text frames (`text.ircv3.net`, also what a client that names
//! no subprotocol gets) or binary ones (`binary.ircv3.net`).
//!
//! The transport only adapts: a pipe turns messages into the byte stream
//! `connection` reads and its lines back into messages, so a WebSocket
//! client is served by the same task, with the same bounds, as a TCP one.

use std::net::IpAddr;
use std::sync::Arc;

use base::Connection;
use base::http::Body;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use transport::websocket::{check_handshake, switching_protocols};
use wire::irc::{MAX_LINE, MAX_TAGS};

use crate::Irc;

/// Bytes the pipe holds each way: a few whole lines.
const PIPE: usize = 4 * (MAX_TAGS + MAX_LINE);

/// Answers the handshake and serves the client once upgraded.
pub fn upgrade(req: &mut Request<Incoming>, irc: &Arc<Irc>, connection: Arc<Connection>) -> Response<Body> {
    let accept = match check_handshake(req) {
        Ok(accept) => accept,
        Err(res) => return res,
    };
    let offered = |name: &str| {
        req.headers().get_all(header::SEC_WEBSOCKET_PROTOCOL).iter().any(|v| v.to_str().is_ok_and(|v| v.split(',').any(|p| p.trim() == name)))
    };
    // Text unless the client asks for binary alone.
    let (binary, protocol) = match (offered("text.ircv3.net"), offered("binary.ircv3.net")) {
        (true, _) => (false, Some("text.ircv3.net")),
        (false, true) => (true, Some("binary.ircv3.net")),
        (false, false) => (false, None),
    };
    let on_upgrade = hyper::upgrade::on(req);
    let irc = irc.clone();
    irc.context.tracker.clone().spawn(async move {
        let Ok(upgraded) = on_upgrade.await else { return };
        let config = transport::websocket::config(irc.context.bounds.max_message_size);
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
        run(ws, irc, connection.address, binary).await;
        drop(connection);
    });
    let mut res = switching_protocols(accept);
    if let Some(protocol) = protocol {
        res.headers_mut().insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(protocol));
    }
    res
}

async fn run<S>(mut ws: WebSocketStream<S>, irc: Arc<Irc>, address: IpAddr, binary: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Ok(slot) = irc.slots.clone().try_acquire_owned() else {
        irc.context.metrics.shed("irc_max_connections");
        let close = CloseFrame { code: CloseCode::Again, reason: "too many connections; try again later".into() };
        let _ = ws.close(Some(close)).await;
        return;
    };
    let (server, client) = tokio::io::duplex(PIPE);
    let serve = crate::connection::drive(server, address, irc, "websocket", None);
    let pump = pump(ws, client, binary);
    tokio::pin!(serve, pump);
    tokio::select! {
        // The client's end: the pipe's end tells the connection.
        () = &mut pump => serve.await,
        // The connection's end. What it wrote last goes out if the client
        // takes it soon: a client that stops reading holds its pump, and its
        // slot, no longer.
        () = &mut serve => {
            let _ = tokio::time::timeout(crate::connection::LAST_WORDS, pump).await;
        }
    }
    drop(slot);
}

/// Carries the client's messages into the pipe as lines, and the lines
/// the server writes out as messages, until either side ends.
async fn pump<S>(ws: WebSocketStream<S>, pipe: DuplexStream, binary: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut ws_out, mut ws_in) = ws.split();
    let (mut from_server, mut to_server) = tokio::io::split(pipe);
    let mut out = Vec::new();
    loop {
        tokio::select! {
            message = ws_in.next() => {
                let line = match message {
                    Some(Ok(Message::Text(text))) => text.as_bytes().to_vec(),
                    Some(Ok(Message::Binary(data))) => data.to_vec(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                };
                let line = line.strip_suffix(b"\n").unwrap_or(&line);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if to_server.write_all(line).await.is_err() || to_server.write_all(b"\r\n").await.is_err() {
                    break;
                }
            }
            read = from_server.read_buf(&mut out) => {
                if !matches!(read, Ok(n) if n > 0) {
                    break;
                }
                let mut used = 0;
                while let Some(end) = out[used..].windows(2).position(|w| w == b"\r\n") {
                    let line = &out[used..used + end];
                    used += end + 2;
                    let message = if binary {
                        Message::Binary(line.to_vec().into())
                    } else {
                        // The server writes only UTF-8.
                        Message::Text(String::from_utf8_lossy(line).into_owned().into())
                    };
                    if ws_out.feed(message).await.is_err() {
                        return;
                    }
                }
                out.drain(..used);
                if ws_out.flush().await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = ws_out.close().await;
}
