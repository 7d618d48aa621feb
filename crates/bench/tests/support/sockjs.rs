//! A minimal SockJS echo endpoint built from the shared `wire::sockjs` codec: sessions,
//! the raw websocket transport, xhr/xhr_streaming/eventsource/jsonp receiving and
//! xhr_send/jsonp_send. Just enough protocol for the bench's client adapters.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;
use wire::sockjs as sj;

use super::Body;

#[derive(Default)]
pub struct Sessions {
    map: std::sync::Mutex<HashMap<String, Arc<Session>>>,
}

#[derive(Default)]
struct Session {
    queue: std::sync::Mutex<Vec<String>>,
    notify: Notify,
}

impl Session {
    fn push(&self, messages: Vec<String>) {
        self.queue.lock().expect("lock").extend(messages);
        self.notify.notify_one();
    }

    /// Messages waiting, or an empty batch after `wait` (then a heartbeat is due).
    async fn take(&self, wait: Duration) -> Vec<String> {
        loop {
            let batch = std::mem::take(&mut *self.queue.lock().expect("lock"));
            if !batch.is_empty() {
                return batch;
            }
            if tokio::time::timeout(wait, self.notify.notified()).await.is_err() {
                return Vec::new();
            }
        }
    }
}

fn frame_of(batch: &[String]) -> BytesMut {
    let mut frame = BytesMut::new();
    if batch.is_empty() {
        frame.extend_from_slice(sj::HEARTBEAT);
    } else {
        sj::encode_strings(batch, &mut frame);
    }
    frame
}

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r
}

fn streaming(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(hyper::body::Frame::data(b)), rx))
    });
    Response::new(BodyExt::boxed(StreamBody::new(stream)))
}

pub async fn handle(
    req: Request<Incoming>,
    sessions: &Sessions,
    id: String,
    transport: String,
    stop: CancellationToken,
) -> Response<Body> {
    let existing = sessions.map.lock().expect("lock").get(&id).cloned();
    match transport.as_str() {
        "websocket" => websocket(req, stop),
        "xhr_send" | "jsonp_send" => {
            let Some(session) = existing else { return full(StatusCode::NOT_FOUND, "") };
            let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string);
            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let decoded = if transport == "xhr_send" {
                sj::decode_xhr_send(&body)
            } else {
                sj::decode_jsonp_send(content_type.as_deref(), &body)
            };
            match decoded {
                Ok(messages) => {
                    session.push(messages);
                    if transport == "xhr_send" { full(StatusCode::NO_CONTENT, "") } else { full(StatusCode::OK, "ok") }
                }
                Err(e) => full(StatusCode::INTERNAL_SERVER_ERROR, e.reason()),
            }
        }
        "xhr" | "jsonp" => {
            let callback = req
                .uri()
                .query()
                .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("c=")))
                .map(str::to_string);
            let frame = match existing {
                None => {
                    sessions.map.lock().expect("lock").insert(id, Arc::default());
                    BytesMut::from(sj::OPEN)
                }
                Some(session) => frame_of(&session.take(Duration::from_secs(5)).await),
            };
            let mut out = BytesMut::new();
            if transport == "xhr" {
                sj::xhr_into(&frame, &mut out);
            } else {
                let Ok(cb) = sj::Callback::parse(callback.as_deref()) else {
                    return full(StatusCode::INTERNAL_SERVER_ERROR, "\"callback\" parameter required");
                };
                sj::jsonp_into(cb, &frame, &mut out);
            }
            full(StatusCode::OK, out.freeze())
        }
        "xhr_streaming" | "eventsource" => {
            let session = existing.unwrap_or_else(|| {
                let s: Arc<Session> = Arc::default();
                sessions.map.lock().expect("lock").insert(id, s.clone());
                s
            });
            let framing = if transport == "xhr_streaming" { sj::Framing::Xhr } else { sj::Framing::EventSource };
            let (tx, rx) = mpsc::channel(64);
            tokio::spawn(async move {
                let mut out = BytesMut::new();
                out.extend_from_slice(if transport == "xhr_streaming" {
                    &sj::XHR_STREAMING_PRELUDE[..]
                } else {
                    sj::EVENTSOURCE_PRELUDE
                });
                framing.wrap(sj::OPEN, &mut out);
                loop {
                    if tx.send(out.split().freeze()).await.is_err() {
                        return;
                    }
                    let batch = tokio::select! {
                        _ = stop.cancelled() => return,
                        b = session.take(Duration::from_secs(5)) => b,
                    };
                    framing.wrap(&frame_of(&batch), &mut out);
                }
            });
            streaming(rx)
        }
        _ => full(StatusCode::NOT_FOUND, ""),
    }
}

fn websocket(req: Request<Incoming>, stop: CancellationToken) -> Response<Body> {
    let Some(key) = req.headers().get("sec-websocket-key") else {
        return full(StatusCode::BAD_REQUEST, "websocket only");
    };
    let accept = derive_accept_key(key.as_bytes());
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else { return };
        let mut ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let echo = async {
            ws.send(Message::text("o")).await?;
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(t) = msg else { continue };
                let Ok(messages) = sj::decode_websocket(t.as_bytes()) else { break };
                let frame = frame_of(&messages);
                ws.send(Message::text(String::from_utf8_lossy(&frame).into_owned())).await?;
            }
            Ok::<_, tokio_tungstenite::tungstenite::Error>(())
        };
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = echo => {}
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("upgrade", "websocket")
        .header("connection", "Upgrade")
        .header("sec-websocket-accept", accept)
        .body(Full::new(Bytes::new()).boxed())
        .expect("static response")
}
