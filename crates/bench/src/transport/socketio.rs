//! socket.io 4 client: engine.io protocol v4 straight over WebSocket (no HTTP
//! long-polling first), one connection per client joined to one namespace, the app
//! message carried as the event `message` with one string argument (peers/README.md).
//!
//! A target `http://host:port/<app>` maps to `ws://host:port/socket.io/?EIO=4&transport=websocket`
//! and the namespace `/<app>`. Each WebSocket text frame is one engine.io packet: the
//! server opens with `0{…}`, the client joins with `40/<app>,` and waits for the
//! acknowledgement `40/<app>,{…}`; then app messages travel as `42/<app>,["message","…"]`.
//! The server pings (`2`) every 25 s and drops a client that does not answer `3`, so the
//! receiving half answers pings itself and shares the socket's sink with the sending half.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

use super::Text;
use super::websocket::Ws;
use crate::{Error, Target};


/// Both halves write: the sender its messages, the receiver its pongs. An async lock
/// because a write may wait for the socket; it is uncontended except once per ping.
type SharedSink = Arc<Mutex<SplitSink<Ws, Message>>>;

/// The engine.io WebSocket URL of a target, and the socket.io namespace of its app.
pub(super) fn endpoint(target: &Target) -> (String, String) {
    let url = format!("ws://{}/socket.io/?EIO=4&transport=websocket", target.authority());
    let namespace = target.path("");
    (url, if namespace.is_empty() { "/".to_string() } else { namespace })
}

/// What comes between a packet's type digits and its data: `/<app>,`, or nothing
/// for the main namespace `/`.
fn namespace_prefix(namespace: &str) -> String {
    if namespace == "/" { String::new() } else { format!("{namespace},") }
}

pub struct Sender {
    sink: SharedSink,
    /// `42/<app>,["message",` — everything before the quoted text.
    head: String,
    url: String,
    buf: BytesMut,
}

pub struct Receiver {
    stream: SplitStream<Ws>,
    sink: SharedSink,
    /// `42/<app>,["message",` — an app message starts with exactly this.
    event_head: String,
    /// `41/<app>,` (the namespace was left) and `44/<app>,` (an error) .
    disconnect: String,
    error: String,
    url: String,
}

pub(super) async fn connect(target: &Target) -> Result<super::Connection, Error> {
    let (url, namespace) = endpoint(target);
    let ws = super::websocket::open(target, &url, None).await?;
    let (sink, stream) = ws.split();
    let sink = Arc::new(Mutex::new(sink));
    let ns = namespace_prefix(&namespace);
    let mut receiver = Receiver {
        stream,
        sink: sink.clone(),
        event_head: format!("42{ns}{MESSAGE_ARRAY}"),
        disconnect: format!("41{ns}"),
        error: format!("44{ns}"),
        url: format!("{url} namespace {namespace}"),
    };
    receiver.handshake(&format!("40{ns}")).await?;
    let sender = Sender { sink, head: receiver.event_head.clone(), url: receiver.url.clone(), buf: BytesMut::new() };
    Ok(super::Connection { sender: super::Sender::Socketio(sender), receiver: super::Receiver::Socketio(receiver) })
}

impl Sender {
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        self.buf.clear();
        self.buf.reserve(self.head.len() + text.len() + 8);
        self.buf.extend_from_slice(self.head.as_bytes());
        // SockJS's quoting escapes more than JSON needs, never less: valid JSON either way.
        wire::sockjs::quote_into(text, &mut self.buf);
        self.buf.extend_from_slice(b"]");
        let packet = Utf8Bytes::try_from(self.buf.split().freeze())
            .map_err(|e| Error::unexpected(format!("{}: {e}", self.url)))?;
        self.sink
            .lock()
            .await
            .send(Message::Text(packet))
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }

    pub async fn close(&mut self) {
        let _ = self.sink.lock().await.close().await;
    }
}

impl Receiver {
    /// Waits for the engine.io open packet, joins the namespace with `join` (`40/<app>,`)
    /// and waits for its acknowledgement, so a broadcast or chat client is a member
    /// before the scenario sends.
    async fn handshake(&mut self, join: &str) -> Result<(), Error> {
        let Some(open) = self.packet().await? else {
            return Err(Error::closed(format!("{}: closed before the engine.io open packet", self.url)));
        };
        if !open.starts_with('0') {
            return Err(Error::unexpected(format!(
                "{}: expected the engine.io open packet 0{{…}}, got {}",
                self.url,
                crate::scenario::excerpt(&open)
            )));
        }
        self.write(join).await?;
        loop {
            let Some(packet) = self.packet().await? else {
                return Err(Error::closed(format!("{}: closed before the namespace was joined", self.url)));
            };
            // The acknowledgement is the join packet followed by `{"sid":…}`.
            if packet.starts_with(join) {
                return Ok(());
            }
            if packet.starts_with(&self.error) {
                return Err(Error::not_found(format!(
                    "{} refused the namespace: {}",
                    self.url,
                    &packet[self.error.len()..]
                )));
            }
            // An event before the acknowledgement cannot be ours yet; anything else is noise.
        }
    }

    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        loop {
            let Some(packet) = self.packet().await? else { return Ok(None) };
            if packet.starts_with(&self.event_head) {
                return self.message(packet).map(Some);
            }
            if packet.starts_with(&self.disconnect) || packet.starts_with('1') {
                return Ok(None);
            }
            if packet.starts_with(&self.error) {
                return Err(Error::closed(format!("{}: {}", self.url, &packet[self.error.len()..])));
            }
            // Other events, other namespaces, noop (6): not ours.
        }
    }

    fn message(&self, packet: Utf8Bytes) -> Result<Text, Error> {
        event_text(&packet, self.event_head.len()).map_err(|why| Error::unexpected(format!("{}: {why}", self.url)))
    }

    /// The next engine.io packet other than a ping, which is answered here.
    async fn packet(&mut self) -> Result<Option<Utf8Bytes>, Error> {
        loop {
            let text = match self.stream.next().await {
                None | Some(Ok(Message::Close(_))) => return Ok(None),
                Some(Ok(Message::Text(text))) => text,
                Some(Ok(Message::Binary(_))) => {
                    return Err(Error::unexpected(format!("{}: binary frame where text was expected", self.url)));
                }
                // WebSocket pings are answered by tungstenite itself.
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(Error::closed(format!("{}: {e}", self.url))),
            };
            if text.as_str() == "2" {
                self.write("3").await?;
                continue;
            }
            return Ok(Some(text));
        }
    }

    async fn write(&self, packet: &str) -> Result<(), Error> {
        self.sink
            .lock()
            .await
            .send(Message::text(packet))
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }
}

/// `["message",` — the start of every app message's argument array.
const MESSAGE_ARRAY: &str = "[\"message\",";

/// The app message of one `42/<app>,["message",TEXT]` packet whose first `head_len`
/// bytes (up to and including `["message",`) are already matched. TEXT without escapes
/// (every stamp) is sliced out of the frame without a copy; anything else goes through
/// serde_json.
fn event_text(packet: &Utf8Bytes, head_len: usize) -> Result<Text, String> {
    let body = &packet[head_len..];
    if let Some(inner) = body.strip_prefix('"').and_then(|b| b.strip_suffix("\"]"))
        && !inner.contains(['\\', '"'])
    {
        let start = head_len + 1;
        let bytes: &Bytes = packet.as_ref();
        return Utf8Bytes::try_from(bytes.slice(start..start + inner.len())).map_err(|e| e.to_string());
    }
    let array = &packet[head_len - MESSAGE_ARRAY.len()..];
    let args: Vec<serde_json::Value> =
        serde_json::from_str(array).map_err(|e| format!("bad event {}: {e}", crate::scenario::excerpt(packet)))?;
    match args.get(1) {
        Some(serde_json::Value::String(text)) if args.len() == 2 => Ok(Text::from(text.as_str())),
        _ => Err(format!("expected [\"message\", string], got {}", crate::scenario::excerpt(packet))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_namespaces() {
        let t = Target::parse("http://127.0.0.1:3000/chat/").expect("valid");
        assert_eq!(endpoint(&t), ("ws://127.0.0.1:3000/socket.io/?EIO=4&transport=websocket".into(), "/chat".into()));
        assert_eq!(namespace_prefix("/chat"), "/chat,");
        let root = Target::parse("http://127.0.0.1:3000").expect("valid");
        assert_eq!(endpoint(&root).1, "/");
        assert_eq!(namespace_prefix("/"), "");
    }

    #[test]
    fn event_arguments() {
        let head = "42/echo,[\"message\",".len();
        let plain = Utf8Bytes::from("42/echo,[\"message\",\"sb:1:2:3:4:5;\"]");
        assert_eq!(event_text(&plain, head).expect("plain"), "sb:1:2:3:4:5;");
        let escaped = Utf8Bytes::from(r#"42/echo,["message","{\"count\":9} \u00e9"]"#);
        assert_eq!(event_text(&escaped, head).expect("escaped"), "{\"count\":9} é");
        let number = Utf8Bytes::from(r#"42/echo,["message",7]"#);
        assert!(event_text(&number, head).is_err());
        let extra = Utf8Bytes::from(r#"42/echo,["message","a","b"]"#);
        assert!(event_text(&extra, head).is_err());
    }
}
