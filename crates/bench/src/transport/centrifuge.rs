//! Centrifugo's client protocol (JSON), as the `centrifuge` library serves it
//! (peers/centrifuge): one WebSocket at `/connection/websocket`, the app's room as
//! a channel.
//!
//! A target `http://host:port/<app>` maps to `ws://host:port/connection/websocket`
//! and the channel `<app>`. The client connects with `{"id":1,"connect":{}}` and
//! subscribes with `{"id":2,"subscribe":{"channel":"<app>"}}`, each awaited; an app
//! message goes out as `{"id":N,"publish":{"channel":"<app>","data":"<text>"}}` (the
//! text as a JSON string) and comes in as `{"push":{"channel":"<app>","pub":{"data":
//! "<text>"}}}`. One WebSocket frame may hold several such objects, one per line. The
//! server pings with `{}` and closes a client that does not answer `{}`, so the
//! receiving half answers itself and shares the socket's sink with the sending half.

use std::collections::VecDeque;
use std::sync::Arc;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;

use super::Text;
use super::websocket::Ws;
use crate::{Error, Target};

type SharedSink = Arc<Mutex<SplitSink<Ws, Message>>>;

/// The WebSocket URL of a target, and the channel of its app.
pub(super) fn endpoint(target: &Target) -> (String, String) {
    let url = format!("ws://{}/connection/websocket", target.authority());
    let channel = target.path("").trim_matches('/').to_owned();
    (url, if channel.is_empty() { "default".to_owned() } else { channel })
}

pub struct Sender {
    sink: SharedSink,
    channel: String,
    /// The next command id; 1 and 2 went to connect and subscribe.
    next_id: u64,
    url: String,
}

pub struct Receiver {
    stream: SplitStream<Ws>,
    sink: SharedSink,
    /// Replies of a frame not yet handed out.
    pending: VecDeque<Reply>,
    url: String,
}

/// One line of a server frame: a reply to a command (`id` and its result or
/// error), a push, or, when empty, a ping.
#[derive(Debug, Default, Deserialize)]
struct Reply {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    push: Option<Push>,
    #[serde(default)]
    connect: Option<serde_json::Value>,
    #[serde(default)]
    subscribe: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Push {
    #[serde(rename = "pub")]
    publication: Option<Publication>,
}

#[derive(Debug, Deserialize)]
struct Publication {
    data: serde_json::Value,
}

impl Reply {
    fn is_ping(&self) -> bool {
        self.id.is_none() && self.push.is_none() && self.error.is_none()
    }
}

pub(super) async fn connect(target: &Target) -> Result<super::Connection, Error> {
    let (url, channel) = endpoint(target);
    let ws = super::websocket::open(target, &url, None).await?;
    let (sink, stream) = ws.split();
    let sink = Arc::new(Mutex::new(sink));
    let mut receiver = Receiver { stream, sink: sink.clone(), pending: VecDeque::new(), url: format!("{url} channel {channel}") };
    receiver.command(1, r#"{"id":1,"connect":{}}"#.to_owned(), |r| r.connect.is_some()).await?;
    let subscribe = serde_json::json!({"id": 2, "subscribe": {"channel": channel}}).to_string();
    receiver.command(2, subscribe, |r| r.subscribe.is_some()).await?;
    let sender = Sender { sink, channel, next_id: 3, url: receiver.url.clone() };
    Ok(super::Connection { sender: super::Sender::Centrifuge(sender), receiver: super::Receiver::Centrifuge(receiver) })
}

impl Sender {
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        let command = serde_json::json!({"id": self.next_id, "publish": {"channel": self.channel, "data": text}});
        self.next_id += 1;
        self.sink
            .lock()
            .await
            .send(Message::text(command.to_string()))
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }

    pub async fn close(&mut self) {
        let _ = self.sink.lock().await.close().await;
    }
}

impl Receiver {
    /// Sends a command and waits for its reply, which `ok` must accept.
    async fn command(&mut self, id: u64, command: String, ok: impl Fn(&Reply) -> bool) -> Result<(), Error> {
        self.write(&command).await?;
        loop {
            let Some(reply) = self.reply().await? else {
                return Err(Error::closed(format!("{}: closed before answering {command}", self.url)));
            };
            if reply.id != Some(id) {
                continue;
            }
            if let Some(error) = reply.error {
                return Err(Error::not_found(format!("{} refused {command}: {error}", self.url)));
            }
            if !ok(&reply) {
                return Err(Error::unexpected(format!("{}: unexpected answer to {command}", self.url)));
            }
            return Ok(());
        }
    }

    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        loop {
            let Some(reply) = self.reply().await? else { return Ok(None) };
            if let Some(error) = reply.error {
                return Err(Error::closed(format!("{}: {error}", self.url)));
            }
            let Some(publication) = reply.push.and_then(|p| p.publication) else { continue };
            return match publication.data {
                serde_json::Value::String(text) => Ok(Some(Text::from(text))),
                other => Err(Error::unexpected(format!("{}: a publication that is not text: {other}", self.url))),
            };
        }
    }

    /// The next line other than a ping, which is answered here.
    async fn reply(&mut self) -> Result<Option<Reply>, Error> {
        loop {
            if let Some(reply) = self.pending.pop_front() {
                if reply.is_ping() {
                    self.write("{}").await?;
                    continue;
                }
                return Ok(Some(reply));
            }
            let text = match self.stream.next().await {
                None | Some(Ok(Message::Close(_))) => return Ok(None),
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Binary(_))) => {
                    return Err(Error::unexpected(format!("{}: binary frame in the JSON protocol", self.url)));
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(Error::closed(format!("{}: {e}", self.url))),
            };
            for line in text.split('\n').filter(|l| !l.is_empty()) {
                let reply: Reply = serde_json::from_str(line)
                    .map_err(|e| Error::unexpected(format!("{}: {e} in {}", self.url, crate::scenario::excerpt(line))))?;
                self.pending.push_back(reply);
            }
        }
    }

    async fn write(&self, text: &str) -> Result<(), Error> {
        self.sink
            .lock()
            .await
            .send(Message::text(text))
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_channels() {
        let t = Target::parse("http://127.0.0.1:8000/broadcast").expect("valid");
        assert_eq!(endpoint(&t), ("ws://127.0.0.1:8000/connection/websocket".into(), "broadcast".into()));
    }

    #[test]
    fn lines_are_pings_replies_or_pushes() {
        let ping: Reply = serde_json::from_str("{}").unwrap();
        assert!(ping.is_ping());
        let push: Reply = serde_json::from_str(r#"{"push":{"channel":"b","pub":{"data":"sb:1;"}}}"#).unwrap();
        assert!(!push.is_ping());
        assert_eq!(push.push.unwrap().publication.unwrap().data, "sb:1;");
        let refused: Reply = serde_json::from_str(r#"{"id":8,"error":{"code":108,"message":"not available"}}"#).unwrap();
        assert_eq!((refused.id, refused.error.is_some()), (Some(8), true));
    }
}
