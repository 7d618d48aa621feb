//! XMPP over WebSocket (RFC 7395) at `/xmpp-websocket`: the `xmpp`
//! subprotocol, one element per text message, `<open/>` and `<close/>` for
//! the stream's header and end.

use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use hyper::header::{self, HeaderValue};
use hub::{Close, Drained, Outbox};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use wire::xmpp::{Limits, StreamParser};

use super::session::{FRAMING_CLOSE, Flow, Framing, Session, StreamEnd, stream_end_for};
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
    let xmpp = xmpp.clone();
    xmpp.context.tracker.clone().spawn(async move {
        let Ok(upgraded) = on_upgrade.await else { return };
        let config = transport::websocket::config(xmpp.context.bounds.max_message_size);
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
        run(ws, xmpp, connection.address).await;
        drop(connection);
    });
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

async fn run<S>(mut ws: WebSocketStream<S>, xmpp: Arc<Xmpp>, address: std::net::IpAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let context = xmpp.context.clone();
    let mut outbox = Arc::new(Outbox::new(context.bounds.queue_limit));
    let metrics = context.metrics.connection("xmpp", "websocket");
    let service = xmpp.clone();
    let mut session = Session::new(Framing::Messages, xmpp, outbox.clone(), address);
    let limits = Limits { max_stanza_bytes: context.bounds.max_message_size, ..Limits::default() };
    let mut parser = StreamParser::fragments(limits);
    let mut batch = Vec::new();
    // The close frame's code and reason, when not a normal closure.
    let mut closing: Option<Close> = None;
    let ending = loop {
        tokio::select! {
            message = ws.next() => {
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(_))) => break Some(StreamEnd("unsupported-stanza-type", "XMPP over WebSocket is text".into())),
                    Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => continue,
                    Some(Ok(Message::Close(_))) => break None,
                    // Gone without a close: the session may wait to be resumed.
                    None => return service.park(session),
                    Some(Err(e)) => {
                        let close = close_for(&e);
                        if close == Close::PEER_GONE {
                            return service.park(session);
                        }
                        // The client broke the framing (a message over the
                        // size limit, bad UTF-8): it is told, not kept.
                        let end = StreamEnd(condition_for(close.code), close.reason.to_string());
                        closing = Some(close);
                        break Some(end);
                    }
                };
                parser.feed(text.as_bytes());
                let before = session.stanzas_in;
                let flow = session.take_events(&mut parser).await;
                metrics.received_many(session.stanzas_in - before, text.len());
                match flow {
                    // STARTTLS is refused on WebSocket, so it is not asked for.
                    Ok(Flow::Continue | Flow::StartTls) => {}
                    Ok(Flow::Resume(parked, h)) => {
                        let resumed = match session.take_up(*parked, h) {
                            Ok(texts) => texts,
                            Err(end) => break Some(end),
                        };
                        outbox = session.outbox().clone();
                        for text in resumed {
                            if ws.feed(Message::text(text)).await.is_err() {
                                break;
                            }
                        }
                        if ws.flush().await.is_err() {
                            return service.park(session);
                        }
                    }
                    Ok(Flow::Closed) => break Some(StreamEnd::closed()),
                    Err(end) => break Some(end),
                }
            }
            drained = outbox.drain(&mut batch) => {
                let count = batch.len();
                let mut bytes = 0;
                for text in batch.drain(..).filter_map(|p| session.render(&p)) {
                    bytes += text.len();
                    if ws.feed(Message::text(text)).await.is_err() {
                        break;
                    }
                }
                if ws.flush().await.is_err() {
                    return service.park(session);
                }
                metrics.sent(count, bytes);
                if let Drained::Closed(close) = drained {
                    break Some(stream_end_for(&close));
                }
            }
            reply = session.taken_over() => {
                // Refused (the reply dropped) once it can no longer be resumed.
                if session.resumable().is_some() {
                    let error = session.stream_error("conflict", "the session was resumed on another connection");
                    // The session first: this connection is likely dead, and a
                    // write to it may wait long.
                    if let Err(mut session) = reply.send(session) {
                        session.leave_all();
                    }
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
                        let _ = ws.feed(Message::text(error)).await;
                        let _ = ws.feed(Message::text(FRAMING_CLOSE)).await;
                        let _ = ws.close(None).await;
                    })
                    .await;
                    return;
                }
            }
            () = context.shutdown.wait() => break Some(StreamEnd("system-shutdown", "the server is shutting down".into())),
        }
    };
    session.leave_all();
    if let Some(end) = ending {
        for text in session.last_words(end) {
            let _ = ws.feed(Message::text(text)).await;
        }
        let frame = closing.map(|c| CloseFrame { code: c.code.into(), reason: c.reason.as_ref().into() });
        let _ = ws.close(frame).await;
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
