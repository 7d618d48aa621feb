//! XMPP over WebSocket (RFC 7395) at `/xmpp-websocket`: the `xmpp`
//! subprotocol, one element per text message, `<open/>` and `<close/>` for
//! the stream's header and end.

use std::sync::Arc;
use std::task::{Context, Poll, ready};

use futures_util::{SinkExt, StreamExt};
use hyper::header::{self, HeaderValue};
use hub::Close;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use wire::xmpp::StreamParser;

use super::session::{Framing, StreamEnd};
use super::stream::{Carrier, StreamTask, Unread};
use base::http::{Body, text_response};
use base::Connection;

use super::Xmpp;
use transport::websocket::{check_handshake, close_for, switching_protocols};

/// Answers the handshake and serves the session once upgraded; a client
/// that does not offer the `xmpp` subprotocol is refused with 400.
pub fn upgrade(req: &mut Request<Incoming>, xmpp: &Arc<Xmpp>, connection: Arc<Connection>) -> Response<Body> {
    let accept = match check_handshake(req) {
        Ok(accept) => accept,
        Err(res) => return res,
    };
    let offers_xmpp = req.headers().get_all(header::SEC_WEBSOCKET_PROTOCOL).iter().any(|v| {
        v.to_str().is_ok_and(|v| v.split(',').any(|p| p.trim() == "xmpp"))
    });
    if !offers_xmpp {
        return text_response(StatusCode::BAD_REQUEST, "XMPP over WebSocket needs the subprotocol \"xmpp\" (RFC 7395).");
    }
    let on_upgrade = hyper::upgrade::on(req);
    xmpp.context.tracker.clone().spawn(serve(on_upgrade, xmpp.clone(), connection));
    let mut res = switching_protocols(accept);
    res.headers_mut().insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static("xmpp"));
    res
}

/// XEP-0156 discovery: where this server's XMPP over WebSocket endpoint is,
/// as `/.well-known/host-meta` (XRD) or `host-meta.json` (JRD), built from
/// the request's Host header; `tls` says whether the listener is TLS.
pub fn host_meta(req: &Request<Incoming>, tls: bool, json: bool) -> Response<Body> {
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).filter(|h| valid_host(h));
    let Some(host) = host else {
        return text_response(StatusCode::BAD_REQUEST, "A Host header naming this server is needed.");
    };
    let websocket = format!("{}://{host}/xmpp-websocket", if tls { "wss" } else { "ws" });
    let bosh = format!("{}://{host}{}", if tls { "https" } else { "http" }, super::bosh::PATH);
    let links = [("urn:xmpp:alt-connections:websocket", websocket), ("urn:xmpp:alt-connections:xbosh", bosh)];
    let mut res = if json {
        let links: Vec<_> = links.iter().map(|(rel, href)| serde_json::json!({"rel": rel, "href": href})).collect();
        base::http::bytes_response(StatusCode::OK, "application/json", serde_json::json!({ "links": links }).to_string())
    } else {
        let mut body = "<?xml version='1.0' encoding='utf-8'?>\n<XRD xmlns='http://docs.oasis-open.org/ns/xri/xrd-1.0'>\n".to_owned();
        for (rel, href) in &links {
            body.push_str(&format!("  <Link rel=\"{rel}\" href=\"{href}\"/>\n"));
        }
        body.push_str("</XRD>\n");
        base::http::bytes_response(StatusCode::OK, "application/xrd+xml", body)
    };
    // Browsers fetch it from pages on other origins.
    res.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    res
}

/// Whether a Host header is a plain `host[:port]` that can go into a URL.
fn valid_host(host: &str) -> bool {
    !host.is_empty() && host.len() <= 255 && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
}

/// Serves the stream once the connection is upgraded.
///
/// An idle session's memory is mostly this future's task, so it is kept
/// small: the arguments are held once (not an async fn, which keeps its
/// own), and the making of the WebSocket stream (368 bytes) is boxed, since
/// awaited inline it would have a place of its own beside the carrier and
/// the session for as long as the session lasts.
#[allow(clippy::manual_async_fn)]
fn serve(on_upgrade: hyper::upgrade::OnUpgrade, xmpp: Arc<Xmpp>, connection: Arc<Connection>) -> impl std::future::Future<Output = ()> + Send {
    async move {
        let mut carrier = {
            let Ok(upgraded) = on_upgrade.await else { return };
            let config = transport::websocket::config(xmpp.context.bounds.max_message_size);
            let ws = Box::pin(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))).await;
            Messages { ws, closing: None }
        };
        let mut task = StreamTask::new(xmpp, Framing::Messages, "websocket", connection.address);
        // The session refuses STARTTLS on WebSocket, so it never asks for it.
        let ending = task.drive(&mut carrier).await;
        // Boxed: see `tcp::run`.
        Box::pin(task.end(&mut carrier, ending)).await;
        drop(connection);
    }
}

/// The size of the future that serves a stream over WebSocket, for the
/// test that keeps it small.
pub fn stream_future_size(xmpp: Arc<Xmpp>) -> usize {
    let slot = Arc::new(tokio::sync::Semaphore::new(1)).try_acquire_owned().expect("a free slot");
    let connection = Arc::new(Connection::new(std::net::Ipv4Addr::LOCALHOST.into(), slot));
    std::mem::size_of_val(&serve(hyper::upgrade::on(Request::new(())), xmpp, connection))
}

/// A stream carried one element per WebSocket text message.
struct Messages<S> {
    ws: WebSocketStream<S>,
    /// The close frame's code and reason, when not a normal closure
    /// (boxed: rare, and every session's task holds the field).
    closing: Option<Box<Close>>,
}

impl<S> Carrier for Messages<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send,
{
    fn poll_read_into(&mut self, cx: &mut Context<'_>, parser: &mut StreamParser) -> Poll<Result<usize, Unread>> {
        loop {
            let text = match ready!(self.ws.poll_next_unpin(cx)) {
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Binary(_))) => return Poll::Ready(Err(Unread::Ended(Some(StreamEnd("unsupported-stanza-type", "XMPP over WebSocket is text".into()))))),
                Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                Some(Ok(Message::Close(_))) => return Poll::Ready(Err(Unread::Ended(None))),
                None => return Poll::Ready(Err(Unread::Gone)),
                Some(Err(e)) => {
                    let close = close_for(&e);
                    if close == Close::PEER_GONE {
                        return Poll::Ready(Err(Unread::Gone));
                    }
                    // The client broke the framing (a message over the size
                    // limit, bad UTF-8): it is told, not kept.
                    let end = StreamEnd(condition_for(close.code), close.reason.to_string());
                    self.closing = Some(Box::new(close));
                    return Poll::Ready(Err(Unread::Ended(Some(end))));
                }
            };
            parser.feed(text.as_bytes());
            return Poll::Ready(Ok(text.len()));
        }
    }

    async fn send(&mut self, texts: &[String]) -> std::io::Result<()> {
        for text in texts {
            self.ws.feed(Message::text(text.as_str())).await.map_err(std::io::Error::other)?;
        }
        self.ws.flush().await.map_err(std::io::Error::other)
    }

    async fn close(&mut self, last_words: &[String]) {
        if self.send(last_words).await.is_ok() {
            let frame = self.closing.take().map(|c| CloseFrame { code: c.code.into(), reason: c.reason.as_ref().into() });
            let _ = self.ws.close(frame).await;
        }
    }
}

/// The stream error that goes with a WebSocket close for a broken frame.
fn condition_for(code: u16) -> &'static str {
    match code {
        1009 => "policy-violation",
        1007 => "unsupported-encoding",
        _ => "not-well-formed",
    }
}
