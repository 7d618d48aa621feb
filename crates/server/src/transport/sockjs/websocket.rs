//! SockJS over WebSocket, `/<server>/<session>/websocket`: the connection
//! loop of native WebSocket (`transport::websocket::run`) with SockJS
//! framing. Each WebSocket connection is a session of its own (the protocol
//! lets clients reuse a session id here), so there is no registry entry and
//! no disconnect delay.
//!
//! Out: `o` first, each batch of queued messages as one `a[...]` message,
//! `h` after a heartbeat interval of silence, and on close `c[code,"reason"]`
//! before the WebSocket close frame with the same code. In: each text
//! message is a JSON array of strings (or one string); an empty one is
//! ignored; anything else is broken framing and closes the connection at
//! once, with no `c[...]` frame, as sockjs-node does.

use std::time::Duration;

use hub::{Close, Payload};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use wire::sockjs::{BROKEN_FRAMING, decode_websocket, encode_close, encode_messages, quote};

use crate::apps::AppClient;
use crate::transport::websocket::{Inbound, Outbound};

/// The SockJS framing of one WebSocket connection, both ways.
#[derive(Debug, Clone)]
pub struct Sockjs {
    heartbeat: Duration,
}

impl Sockjs {
    /// Framing that sends `h` after `heartbeat` of silence.
    pub fn new(heartbeat: Duration) -> Sockjs {
        Sockjs { heartbeat }
    }
}

fn broken_framing() -> Close {
    let (code, reason) = BROKEN_FRAMING;
    Close::new(code, reason)
}

/// A frame built by `wire` as a text message. The codec writes only UTF-8
/// (it escapes, never splits, characters), so the check cannot fail.
fn text(frame: Vec<u8>) -> Option<Message> {
    String::from_utf8(frame).ok().map(|s| Message::Text(Utf8Bytes::from(s)))
}

impl Inbound for Sockjs {
    fn on_text(&mut self, client: &mut AppClient, text: Utf8Bytes) -> Result<usize, Close> {
        let messages = decode_websocket(text.as_bytes()).map_err(|_| broken_framing())?;
        let count = messages.len();
        for message in messages {
            client.on_message(Utf8Bytes::from(message));
        }
        Ok(count)
    }

    /// SockJS frames are JSON text; a binary frame is not one.
    fn on_binary(&mut self, _session: &mut AppClient, _data: bytes::Bytes) -> Result<usize, Close> {
        Err(Close::new(1003, "SockJS frames are text; binary frames are not accepted"))
    }
}

impl Outbound for Sockjs {
    fn opening(&mut self, frames: &mut Vec<Message>) {
        frames.push(Message::Text(Utf8Bytes::from_static("o")));
    }

    fn frame(&mut self, batch: &[Payload], frames: &mut Vec<Message>) {
        if batch.is_empty() {
            return;
        }
        let mut frame = Vec::with_capacity(batch.iter().map(|p| p.len() + 3).sum::<usize>() + 2);
        encode_messages(batch.iter().map(|p| p.sockjs_json(quote)), &mut frame);
        frames.extend(text(frame));
    }

    fn heartbeat_interval(&self) -> Option<Duration> {
        Some(self.heartbeat)
    }

    fn heartbeat(&mut self, frames: &mut Vec<Message>) {
        frames.push(Message::Text(Utf8Bytes::from_static("h")));
    }

    fn closing(&mut self, close: &Close, frames: &mut Vec<Message>) {
        if *close == broken_framing() {
            return;
        }
        let mut frame = Vec::with_capacity(close.reason.len() + 12);
        encode_close(close.code, &close.reason, &mut frame);
        frames.extend(text(frame));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(frames: &[Message]) -> Vec<String> {
        frames.iter().map(|m| m.to_text().unwrap().to_owned()).collect()
    }

    #[test]
    fn frames_out() {
        let mut f = Sockjs::new(Duration::from_secs(25));
        let mut frames = Vec::new();
        f.opening(&mut frames);
        f.frame(&[], &mut frames);
        f.frame(&[Payload::from("a"), Payload::from("\u{2028}\"")], &mut frames);
        f.heartbeat(&mut frames);
        f.closing(&Close::new(3000, "Go away!"), &mut frames);
        f.closing(&broken_framing(), &mut frames);
        assert_eq!(texts(&frames), ["o", r#"a["a","\u2028\""]"#, "h", r#"c[3000,"Go away!"]"#]);
    }
}
