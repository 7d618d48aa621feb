//! WebSocket adapter (tokio-tungstenite). Native framing: one text frame per application
//! message, optionally compressed with permessage-deflate (RFC 7692). SockJS framing
//! (its raw WebSocket endpoint): the server sends `o`, `h`, `a[...]` and `c[...]`
//! frames, the client sends JSON arrays of strings.
//!
//! tungstenite has no permessage-deflate, so with it the connection reads through
//! [`Inflating`], which hands tungstenite the server's compressed messages inflated,
//! and the sender builds its compressed frames itself (RSV1 set); tungstenite masks
//! and writes them.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use wire::websocket::deflate::{self, Inflate, Inflating, Role};

use super::Text;
use crate::{Error, Target};

pub(super) type Ws = WebSocketStream<Stream>;

/// How application messages travel over the WebSocket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// One text frame per message.
    Native,
    /// One text frame per message, permessage-deflate agreed.
    Deflate,
    /// SockJS's frames.
    Sockjs,
}

/// The offer: each message compressed on its own on both sides, so neither
/// keeps a compressor's window between messages.
const OFFER: &str = "permessage-deflate; client_no_context_takeover; server_no_context_takeover";

/// Largest compressed frame the inflating reader takes from a server.
const MAX_COMPRESSED_FRAME: u64 = 64 << 20;

pub struct Sender {
    sink: SplitSink<Ws, Message>,
    url: String,
    framing: Framing,
    /// SockJS: the `["…"]` body is built here, so a send allocates nothing of its own.
    buf: bytes::BytesMut,
}

pub struct Receiver {
    stream: SplitStream<Ws>,
    url: String,
    sockjs: bool,
    /// SockJS: messages of an `a[...]` frame not yet handed out.
    pending: VecDeque<Text>,
    opened: bool,
}

/// Connects; with SockJS framing, the connection counts as open once the `o` frame
/// arrived. `protocol` is the subprotocol to ask for (and that the server must choose).
pub(super) async fn connect(target: &Target, url: &str, framing: Framing, protocol: Option<&str>) -> Result<super::Connection, Error> {
    let ws = if framing == Framing::Deflate { open_deflate(target, url).await? } else { open(target, url, protocol).await? };
    let sockjs = framing == Framing::Sockjs;
    let (sink, stream) = ws.split();
    let mut receiver = Receiver { stream, url: url.to_string(), sockjs, pending: VecDeque::new(), opened: false };
    if sockjs {
        while !receiver.opened {
            let Some(frame) = receiver.next_frame().await? else {
                return Err(Error::closed(format!("{url}: closed before the SockJS open frame")));
            };
            super::sockjs::on_frame(frame.as_bytes(), url, &mut receiver.opened, &mut receiver.pending)?;
        }
    }
    Ok(super::Connection {
        sender: super::Sender::Websocket(Sender { sink, url: url.to_string(), framing, buf: bytes::BytesMut::new() }),
        receiver: super::Receiver::Websocket(receiver),
    })
}

/// Bytes read per read call. tungstenite zeroes its whole read buffer before every
/// read, and its default 128 KiB cost a quarter of the bench's CPU at a million
/// messages a second; 8 KiB still takes a server's batch of ~150 frames in one read.
const READ_BUFFER: usize = 8 * 1024;

fn client_config() -> tungstenite::protocol::WebSocketConfig {
    tungstenite::protocol::WebSocketConfig::default().read_buffer_size(READ_BUFFER)
}

/// The WebSocket handshake for `url` over a TCP connection from `target.dial()`, so a
/// `--link` in front of the target carries it while the URL and Host stay the target's.
/// With a `protocol`, the handshake fails unless the server chooses it.
pub(super) async fn open(target: &Target, url: &str, protocol: Option<&str>) -> Result<Ws, Error> {
    let mut headers = Vec::new();
    if let Some(protocol) = protocol {
        headers.push((http::header::SEC_WEBSOCKET_PROTOCOL, protocol));
    }
    let (ws, _) = handshake(target, url, &headers, false).await?;
    Ok(ws)
}

/// [`open`] offering permessage-deflate; fails unless the server agrees.
async fn open_deflate(target: &Target, url: &str) -> Result<Ws, Error> {
    let (ws, response) = handshake(target, url, &[(http::header::SEC_WEBSOCKET_EXTENSIONS, OFFER)], true).await?;
    let agreed = response.headers().get_all(http::header::SEC_WEBSOCKET_EXTENSIONS).iter().map(|v| v.to_str().unwrap_or("?")).collect::<Vec<_>>();
    match agreed.as_slice() {
        [one] if accepts(one) => Ok(ws),
        [] => Err(Error::unexpected(format!("{url}: the server declined permessage-deflate"))),
        _ => Err(Error::unexpected(format!("{url}: the server answered permessage-deflate with {:?}", agreed.join(", ")))),
    }
}

/// Whether a server's `Sec-WebSocket-Extensions` answer to [`OFFER`] is
/// permessage-deflate with nothing the bench did not offer (RFC 7692 §5:
/// `client_max_window_bits` only if offered, and no other extension).
fn accepts(answer: &str) -> bool {
    let mut parts = answer.split(';').map(str::trim);
    parts.next().is_some_and(|name| name.eq_ignore_ascii_case("permessage-deflate"))
        && parts.all(|p| {
            let name = p.split_once('=').map_or(p, |(n, _)| n.trim());
            ["server_no_context_takeover", "client_no_context_takeover", "server_max_window_bits"]
                .iter()
                .any(|known| name.eq_ignore_ascii_case(known))
        })
}

/// The upgrade request for `url` with `headers`, over a TCP connection from
/// `target.dial()`; with `inflating`, the connection reads through [`Inflating`].
async fn handshake(
    target: &Target,
    url: &str,
    headers: &[(http::HeaderName, &str)],
    inflating: bool,
) -> Result<(Ws, tungstenite::handshake::client::Response), Error> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url.into_client_request().map_err(|e| Error::usage(format!("{url}: {e}")))?;
    for (name, value) in headers {
        let value = http::HeaderValue::from_str(value).map_err(|e| Error::usage(format!("{name} {value:?}: {e}")))?;
        request.headers_mut().insert(name, value);
    }
    let tcp = MaybeTlsStream::Plain(target.dial().await.map_err(|e| Error::connect(format!("{url}: {e}")))?);
    let stream = if inflating {
        // The server's frames after the handshake inflate with one window kept
        // throughout: right whether or not the server resets its own.
        let config = Inflate { role: Role::Client, peer_no_context_takeover: false, max_frame: MAX_COMPRESSED_FRAME };
        Stream::Deflate(Inflating::new(tcp, config))
    } else {
        Stream::Plain(tcp)
    };
    tokio_tungstenite::client_async_with_config(request, stream, Some(client_config()))
        .await
        .map_err(|e| handshake_error(url, e))
}

/// The connection under tungstenite: as it is, or reading through [`Inflating`].
pub(super) enum Stream {
    Plain(MaybeTlsStream<TcpStream>),
    Deflate(Inflating<MaybeTlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Deflate(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, data),
            Stream::Deflate(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Deflate(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Deflate(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Maps handshake failures to what a person needs to know: down, wrong path, or not a WebSocket.
pub(super) fn handshake_error(url: &str, e: tungstenite::Error) -> Error {
    match e {
        tungstenite::Error::Io(io) => Error::connect(format!("{url}: {io}")),
        tungstenite::Error::Http(resp) if resp.status() == http::StatusCode::NOT_FOUND => {
            Error::not_found(format!("{url} answered 404 Not Found (is the app mounted there?)"))
        }
        tungstenite::Error::Http(resp) => {
            Error::unexpected(format!("{url} refused the WebSocket upgrade with HTTP {}", resp.status()))
        }
        tungstenite::Error::Protocol(tungstenite::error::ProtocolError::SecWebSocketSubProtocolError(e)) => {
            Error::unexpected(format!("{url}: the server did not take the subprotocol asked for: {e}"))
        }
        other => Error::unexpected(format!("{url}: WebSocket handshake failed: {other}")),
    }
}

impl Sender {
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        let message = match self.framing {
            Framing::Sockjs => {
                super::sockjs::encode_send(text, &mut self.buf);
                // Quoting yields valid UTF-8 from valid UTF-8, so this never fails.
                let body = Text::try_from(self.buf.split().freeze())
                    .map_err(|e| Error::unexpected(format!("{}: {e}", self.url)))?;
                Message::Text(body)
            }
            Framing::Deflate => compressed(text).unwrap_or_else(|| Message::text(text)),
            Framing::Native => Message::text(text),
        };
        self.sink
            .send(message)
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }

    pub async fn close(&mut self) {
        let _ = self.sink.close().await;
    }
}

/// `text` as a compressed text frame (RSV1 set), as the server compresses: when
/// it is [`deflate::COMPRESS_FROM`] bytes or more, each message on its own.
fn compressed(text: &str) -> Option<Message> {
    if text.len() < deflate::COMPRESS_FROM {
        return None;
    }
    let payload = deflate::compress(text.as_bytes(), deflate::FULL_WINDOW)?;
    let mut frame = Frame::message(payload, OpCode::Data(Data::Text), true);
    frame.header_mut().rsv1 = true;
    Some(Message::Frame(frame))
}

impl Receiver {
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        if !self.sockjs {
            return self.next_frame().await;
        }
        loop {
            if let Some(text) = self.pending.pop_front() {
                return Ok(Some(text));
            }
            let Some(frame) = self.next_frame().await? else { return Ok(None) };
            if !super::sockjs::on_frame(frame.as_bytes(), &self.url, &mut self.opened, &mut self.pending)? {
                return Ok(None);
            }
        }
    }

    /// The next text frame as it came off the wire.
    async fn next_frame(&mut self) -> Result<Option<Text>, Error> {
        loop {
            match self.stream.next().await {
                None | Some(Ok(Message::Close(_))) => return Ok(None),
                Some(Ok(Message::Text(text))) => return Ok(Some(text)),
                Some(Ok(Message::Binary(_))) => {
                    return Err(Error::unexpected(format!("{}: binary frame where text was expected", self.url)));
                }
                // Pings are answered by tungstenite itself.
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(Error::closed(format!("{}: {e}", self.url))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_taken_only_with_what_was_offered() {
        assert!(accepts("permessage-deflate; server_no_context_takeover"));
        assert!(accepts("permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10"));
        assert!(accepts("Permessage-Deflate"));
        // client_max_window_bits was not offered, so a server may not set it (RFC 7692 §7.1.2.2).
        assert!(!accepts("permessage-deflate; client_max_window_bits=10"));
        assert!(!accepts("x-webkit-deflate-frame"));
        assert!(!accepts("permessage-deflate; mystery"));
    }

    #[test]
    fn a_long_message_goes_compressed_and_a_short_one_does_not() {
        let Some(Message::Frame(frame)) = compressed(&"every client in the same room ".repeat(4)) else { panic!("compressed") };
        assert!(frame.header().rsv1 && frame.header().is_final);
        assert!(compressed("short").is_none(), "under {} bytes", deflate::COMPRESS_FROM);
    }
}
