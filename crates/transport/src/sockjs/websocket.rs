//! SockJS over WebSocket, `/<server>/<session>/websocket`: the connection
//! loop of native WebSocket (`transport::websocket::run`) with SockJS
//! framing. Each WebSocket connection is a session of its own (the protocol
//! lets clients reuse a session id here), so there is no registry entry and
//! no disconnect delay.
//!
//! Out: `o` first, each message as an `a[...]` message of its own (its
//! frame is built once and shared by every recipient, as native WebSocket's
//! are, and the shared writer may write it, as there: `--shared-writer`),
//! `h` after a heartbeat interval of the writer's silence (what the shared
//! writer writes does not count, so a busy session gets one too), and on close
//! `c[code,"reason"]` before the WebSocket close frame with the same code. In: each text
//! message is a JSON array of strings (or one string); an empty one is
//! ignored; anything else is broken framing and closes the connection at
//! once, with no `c[...]` frame, as sockjs-node does.

use std::time::Duration;

use bytes::Bytes;
use hub::{Close, Form, Payload};
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::sockjs::{BROKEN_FRAMING, decode_websocket, encode_close, encode_messages, quote};

use crate::Client;
use wire::websocket::frame_header::{TEXT, server_frame};
use crate::shared_writer::Framing;
use crate::websocket::{Inbound, Outbound};

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

/// A SockJS frame built by `wire` as a WebSocket text frame. The codec
/// writes only UTF-8 (it escapes, never splits, characters).
fn text(frame: &[u8]) -> Bytes {
    server_frame(TEXT, false, frame)
}

/// `payload` as `a["..."]` in a WebSocket text frame, made once per message.
fn message_frame(payload: &Payload) -> Bytes {
    let frame = payload.form(Form::SockjsWsFrame, |p| {
        let json = p.sockjs_json(quote);
        let mut frame = Vec::with_capacity(json.len() + 3);
        encode_messages(std::iter::once(json), &mut frame);
        Some(server_frame(TEXT, false, &frame))
    });
    frame.cloned().unwrap_or_default()
}

impl Inbound for Sockjs {
    fn on_text<C: Client>(&mut self, client: &mut C, text: Utf8Bytes) -> Result<usize, Close> {
        let messages = decode_websocket(text.as_bytes()).map_err(|_| broken_framing())?;
        let count = messages.len();
        for message in messages {
            client.on_message(Utf8Bytes::from(message));
        }
        Ok(count)
    }

    /// SockJS frames are JSON text; a binary frame is not one.
    fn on_binary<C: Client>(&mut self, _session: &mut C, _data: bytes::Bytes) -> Result<usize, Close> {
        Err(Close::new(1003, "SockJS frames are text; binary frames are not accepted"))
    }
}

impl Outbound for Sockjs {
    fn opening(&mut self, frames: &mut Vec<Bytes>) {
        frames.push(text(b"o"));
    }

    fn frame(&mut self, batch: &[Payload], frames: &mut Vec<Bytes>) {
        frames.extend(batch.iter().map(message_frame));
    }

    /// Each message is a frame of its own, the same for every recipient.
    fn framing(&self) -> Option<Framing> {
        Some((|payload, _| message_frame(payload), None))
    }

    fn heartbeat_interval(&self) -> Option<Duration> {
        Some(self.heartbeat)
    }

    fn heartbeat(&mut self, frames: &mut Vec<Bytes>) {
        frames.push(text(b"h"));
    }

    fn closing(&mut self, close: &Close, frames: &mut Vec<Bytes>) {
        if *close == broken_framing() {
            return;
        }
        let mut frame = Vec::with_capacity(close.reason.len() + 12);
        encode_close(close.code, &close.reason, &mut frame);
        frames.push(text(&frame));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each frame as tungstenite would read it: a final, unmasked text frame
    /// whose payload is the whole rest.
    fn texts(frames: &[Bytes]) -> Vec<String> {
        let texts = frames.iter().map(|bytes| {
            let header = wire::websocket::frame_header::FrameHeader::parse(bytes).expect("a header");
            assert_eq!((header.fin, header.rsv1, header.opcode, header.mask), (true, false, TEXT, None));
            assert_eq!(header.len as u64 + header.payload, bytes.len() as u64);
            String::from_utf8(bytes[header.len..].to_vec()).expect("UTF-8")
        });
        texts.collect()
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
        assert_eq!(texts(&frames), ["o", r#"a["a"]"#, r#"a["\u2028\""]"#, "h", r#"c[3000,"Go away!"]"#]);
    }

    #[test]
    fn a_message_frame_is_built_once_for_every_recipient() {
        let p = Payload::binary(vec![0u8, 0xff]);
        let (mut a, mut b) = (Sockjs::new(Duration::from_secs(25)), Sockjs::new(Duration::from_secs(5)));
        let (mut fa, mut fb) = (Vec::new(), Vec::new());
        a.frame(std::slice::from_ref(&p), &mut fa);
        let q = p.clone();
        b.frame(std::slice::from_ref(&q), &mut fb);
        assert_eq!(fa[0].as_ptr(), fb[0].as_ptr(), "the same bytes");
        assert_eq!(texts(&fa), [r#"a["AP8="]"#], "binary goes as base64 text");
    }
}
