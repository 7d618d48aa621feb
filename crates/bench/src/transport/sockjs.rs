//! SockJS client transports (protocol 0.3), using the shared `wire::sockjs` codec for
//! quoting, frame parsing and splitting response bodies.
//!
//! Every session lives at `<target>/<server>/<session>/`. Receiving runs on its own task
//! and its own keep-alive connection (a streaming response, or one poll after another),
//! feeding an in-order channel; sending is `xhr_send` (or `jsonp_send`) on a second
//! connection, one request per message, as sockjs-client does. A session counts as
//! connected once the `o` frame has arrived.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use tokio::sync::{mpsc, oneshot};
use wire::sockjs::{Frame, Split, Splitter, Wrapping, parse_frame, quote_into};

use super::{Text, TransportKind};
use crate::{Error, Target};

/// Messages received ahead of the scenario before the receive task waits (per session).
const RECEIVE_QUEUE: usize = 4096;

/// The JSONP callback name, in sockjs-client's style.
const CALLBACK: &str = "_jp.bench";

/// A fresh `/<server>/<session>` path: the server id is 3 digits, the session id is
/// unique within this process and unlikely to collide with another bench's.
pub(super) fn session_path() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    format!("/{:03}/b{}x{}x{n}", n % 1000, std::process::id(), nanos)
}

/// The body `xhr_send` and the SockJS websocket take: a JSON array of one quoted string.
pub(super) fn encode_send(text: &str, out: &mut BytesMut) {
    out.extend_from_slice(b"[");
    quote_into(text, out);
    out.extend_from_slice(b"]");
}

/// Handles one frame: messages go to `out` (the receiver's own queue, so a frame costs
/// no batch of its own); `Open` and heartbeats are noted and dropped. A close frame ends
/// the session with the server's code and reason.
pub(super) fn on_frame(frame: &[u8], url: &str, opened: &mut bool, out: &mut impl Extend<Text>) -> Result<bool, Error> {
    match parse_frame(frame) {
        Ok(Frame::Open) => {
            *opened = true;
            Ok(true)
        }
        Ok(Frame::Heartbeat) => Ok(true),
        Ok(Frame::Messages(messages)) => {
            out.extend(messages.into_iter().map(Text::from));
            Ok(true)
        }
        Ok(Frame::Close { code, reason }) => {
            if *opened {
                Ok(false)
            } else {
                Err(Error::unexpected(format!("{url}: the server refused the session: {code} {reason}")))
            }
        }
        Err(e) => Err(Error::unexpected(format!("{url}: {e}"))),
    }
}

pub struct Sender {
    request: Option<http1::SendRequest<Full<Bytes>>>,
    target: Target,
    path: String,
    jsonp: bool,
    buf: BytesMut,
}

pub struct Receiver {
    messages: mpsc::Receiver<Result<Text, Error>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        // A long poll or stream would otherwise keep the session alive on the server.
        self.task.abort();
    }
}

pub(super) async fn connect(target: &Target, kind: TransportKind) -> Result<super::Connection, Error> {
    let session = target.path(&session_path());
    let (tx, rx) = mpsc::channel(RECEIVE_QUEUE);
    let (opened_tx, opened_rx) = oneshot::channel();
    let task = tokio::spawn(receive_loop(target.clone(), session.clone(), kind, tx, opened_tx));
    let receiver = Receiver { messages: rx, task };
    match opened_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err(Error::closed(format!("{}{session}: receive task ended before the open frame", target.as_str()))),
    }
    let jsonp = kind == TransportKind::JsonpPolling;
    let path = format!("{session}/{}", if jsonp { "jsonp_send" } else { "xhr_send" });
    let sender = Sender { request: None, target: target.clone(), path, jsonp, buf: BytesMut::new() };
    Ok(super::Connection { sender: super::Sender::Sockjs(sender), receiver: super::Receiver::Sockjs(receiver) })
}

impl Sender {
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        self.buf.clear();
        let body = if self.jsonp {
            let mut json = BytesMut::new();
            encode_send(text, &mut json);
            self.buf.extend_from_slice(b"d=");
            percent_encode(&json, &mut self.buf);
            self.buf.split().freeze()
        } else {
            encode_send(text, &mut self.buf);
            self.buf.split().freeze()
        };
        let content_type = if self.jsonp { "application/x-www-form-urlencoded" } else { "text/plain;charset=UTF-8" };
        let req = hyper::Request::post(&self.path)
            .header(hyper::header::HOST, self.target.authority())
            .header(hyper::header::CONTENT_TYPE, content_type)
            .body(Full::new(body))
            .map_err(|e| Error::usage(format!("bad request {}: {e}", self.path)))?;
        let (status, reply) = request(&mut self.request, &self.target, req).await?;
        match status.as_u16() {
            200 | 204 => Ok(()),
            404 => Err(Error::closed(format!("POST {}: the session is gone (404)", self.path))),
            _ => Err(Error::unexpected(format!(
                "POST {} answered HTTP {status}: {}",
                self.path,
                String::from_utf8_lossy(&reply[..reply.len().min(120)])
            ))),
        }
    }
}

impl Receiver {
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        match self.messages.recv().await {
            Some(Ok(text)) => Ok(Some(text)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}

/// Sends a request on a kept-alive connection, opening a new one when the server closed it.
async fn request(
    conn: &mut Option<http1::SendRequest<Full<Bytes>>>,
    target: &Target,
    req: hyper::Request<Full<Bytes>>,
) -> Result<(hyper::StatusCode, Bytes), Error> {
    let resp = send_on(conn, target, req).await?;
    let status = resp.status();
    let body = resp.into_body().collect().await.map_err(|e| Error::closed(format!("{}: {e}", target.as_str())))?;
    Ok((status, body.to_bytes()))
}

async fn send_on(
    conn: &mut Option<http1::SendRequest<Full<Bytes>>>,
    target: &Target,
    req: hyper::Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, Error> {
    if let Some(c) = conn.as_mut()
        && c.ready().await.is_err()
    {
        *conn = None;
    }
    let c = match conn {
        Some(c) => c,
        None => conn.insert(super::http::open(target).await?),
    };
    c.send_request(req).await.map_err(|e| Error::closed(format!("{}: {e}", target.as_str())))
}

/// Receives for one session until the server closes it or the receiver is dropped:
/// a streaming request reopened whenever its response ends, or one poll after another.
async fn receive_loop(
    target: Target,
    session: String,
    kind: TransportKind,
    tx: mpsc::Sender<Result<Text, Error>>,
    opened_tx: oneshot::Sender<Result<(), Error>>,
) {
    let mut opened_tx = Some(opened_tx);
    let report = |opened_tx: &mut Option<oneshot::Sender<Result<(), Error>>>, e: Error| {
        let tx = tx.clone();
        let first = opened_tx.take();
        async move {
            match first {
                Some(o) => {
                    let _ = o.send(Err(e));
                }
                None => {
                    let _ = tx.send(Err(e)).await;
                }
            }
        }
    };
    let (method, suffix, stream) = match kind {
        TransportKind::XhrStreaming => (hyper::Method::POST, "/xhr_streaming".to_string(), Wrapping::Xhr),
        TransportKind::XhrPolling => (hyper::Method::POST, "/xhr".to_string(), Wrapping::Xhr),
        TransportKind::Eventsource => (hyper::Method::GET, "/eventsource".to_string(), Wrapping::EventSource),
        TransportKind::JsonpPolling => (hyper::Method::GET, format!("/jsonp?c={CALLBACK}"), Wrapping::Jsonp),
        other => {
            report(&mut opened_tx, Error::usage(format!("{other} is not a SockJS HTTP transport"))).await;
            return;
        }
    };
    let path = format!("{session}{suffix}");
    let url = format!("http://{}{path}", target.authority());
    let mut conn: Option<http1::SendRequest<Full<Bytes>>> = None;
    let mut opened = false;
    let mut batch = Vec::new();
    loop {
        let req = hyper::Request::builder()
            .method(method.clone())
            .uri(&path)
            .header(hyper::header::HOST, target.authority())
            .body(Full::new(Bytes::new()));
        let Ok(req) = req else { return };
        let resp = match send_on(&mut conn, &target, req).await {
            Ok(r) => r,
            Err(e) => return report(&mut opened_tx, e).await,
        };
        let status = resp.status();
        if status == hyper::StatusCode::NOT_FOUND {
            let e = Error::not_found(format!("{url} answered 404 Not Found (no SockJS {kind} at {})", target.as_str()));
            return report(&mut opened_tx, e).await;
        }
        if !status.is_success() {
            return report(&mut opened_tx, Error::unexpected(format!("{url} answered HTTP {status}"))).await;
        }
        let mut body = resp.into_body();
        let mut splitter = Splitter::new(stream);
        loop {
            let chunk = match body.frame().await {
                None => break,
                Some(Err(e)) => return report(&mut opened_tx, Error::closed(format!("{url}: {e}"))).await,
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue,
                },
            };
            splitter.push(&chunk);
            loop {
                let frame = match splitter.next_frame() {
                    Ok(Split::Frame(f)) => f,
                    Ok(Split::NeedMore) => break,
                    Err(e) => return report(&mut opened_tx, Error::unexpected(format!("{url}: {e}"))).await,
                };
                let was_open = opened;
                let alive = match on_frame(&frame, &url, &mut opened, &mut batch) {
                    Ok(alive) => alive,
                    Err(e) => return report(&mut opened_tx, e).await,
                };
                if opened && !was_open
                    && let Some(o) = opened_tx.take()
                {
                    let _ = o.send(Ok(()));
                }
                for text in batch.drain(..) {
                    if tx.send(Ok(text)).await.is_err() {
                        return;
                    }
                }
                if !alive {
                    return;
                }
            }
        }
        // The response ended: a poll is answered, a stream hit the server's byte limit.
        // Either way the session goes on with the next request.
    }
}

/// `application/x-www-form-urlencoded` value encoding.
fn percent_encode(bytes: &[u8], out: &mut BytesMut) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'*') {
            out.extend_from_slice(&[b]);
        } else {
            out.extend_from_slice(&[b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_bodies() {
        let mut b = BytesMut::new();
        encode_send("hi \"there\"", &mut b);
        assert_eq!(&b[..], br#"["hi \"there\""]"#);
        let mut f = BytesMut::new();
        percent_encode(&b, &mut f);
        assert_eq!(&f[..], b"%5B%22hi%20%5C%22there%5C%22%22%5D");
    }

    #[test]
    fn frames() {
        let mut opened = false;
        let mut out = Vec::new();
        assert!(on_frame(b"o", "u", &mut opened, &mut out).expect("open"));
        assert!(opened);
        assert!(on_frame(br#"a["x","y"]"#, "u", &mut opened, &mut out).expect("messages"));
        assert_eq!(out.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["x", "y"]);
        assert!(!on_frame(br#"c[3000,"Go away!"]"#, "u", &mut opened, &mut out).expect("close"));
        assert!(on_frame(b"z", "u", &mut opened, &mut out).expect_err("garbage").is_unexpected_reply());
        let mut fresh = false;
        assert!(on_frame(br#"c[2010,"Another connection still open"]"#, "u", &mut fresh, &mut out).is_err());
        assert!(session_path().starts_with('/'));
    }
}
