//! WebSocket adapter (tokio-tungstenite). Native framing: one text frame per application
//! message. SockJS framing (its raw WebSocket endpoint): the server sends `o`, `h`,
//! `a[...]` and `c[...]` frames, the client sends JSON arrays of strings.

use std::collections::VecDeque;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::Text;
use crate::{Error, Target};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct Sender {
    sink: SplitSink<Ws, Message>,
    url: String,
    sockjs: bool,
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

/// Connects; with `sockjs`, the connection counts as open once the `o` frame arrived.
/// `protocol` is the subprotocol to ask for (and that the server must choose).
pub(super) async fn connect(target: &Target, url: &str, sockjs: bool, protocol: Option<&str>) -> Result<super::Connection, Error> {
    let ws = open(target, url, protocol).await?;
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
        sender: super::Sender::Websocket(Sender { sink, url: url.to_string(), sockjs, buf: bytes::BytesMut::new() }),
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
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url.into_client_request().map_err(|e| Error::usage(format!("{url}: {e}")))?;
    if let Some(protocol) = protocol {
        let value = http::HeaderValue::from_str(protocol).map_err(|e| Error::usage(format!("subprotocol {protocol:?}: {e}")))?;
        request.headers_mut().insert(http::header::SEC_WEBSOCKET_PROTOCOL, value);
    }
    let stream = target.dial().await.map_err(|e| Error::connect(format!("{url}: {e}")))?;
    let (ws, _response) = tokio_tungstenite::client_async_with_config(request, MaybeTlsStream::Plain(stream), Some(client_config()))
        .await
        .map_err(|e| handshake_error(url, e))?;
    Ok(ws)
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
        let message = if self.sockjs {
            super::sockjs::encode_send(text, &mut self.buf);
            // Quoting yields valid UTF-8 from valid UTF-8, so this never fails.
            let body = Text::try_from(self.buf.split().freeze())
                .map_err(|e| Error::unexpected(format!("{}: {e}", self.url)))?;
            Message::Text(body)
        } else {
            Message::text(text)
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
