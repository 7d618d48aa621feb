//! Native WebSocket adapter (tokio-tungstenite): one text frame per application message.

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::Text;
use crate::Error;

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct Sender {
    sink: SplitSink<Ws, Message>,
    url: String,
}

pub struct Receiver {
    stream: SplitStream<Ws>,
    url: String,
}

pub(super) async fn connect(url: &str) -> Result<super::Connection, Error> {
    // Nagle off: a latency benchmark must not wait 40 ms for a delayed ACK.
    let (ws, _response) = tokio_tungstenite::connect_async_with_config(url, None, true)
        .await
        .map_err(|e| handshake_error(url, e))?;
    let (sink, stream) = ws.split();
    Ok(super::Connection {
        sender: super::Sender::Websocket(Sender { sink, url: url.to_string() }),
        receiver: super::Receiver::Websocket(Receiver { stream, url: url.to_string() }),
    })
}

/// Maps handshake failures to what a person needs to know: down, wrong path, or not a WebSocket.
fn handshake_error(url: &str, e: tungstenite::Error) -> Error {
    match e {
        tungstenite::Error::Io(io) => Error::connect(format!("{url}: {io}")),
        tungstenite::Error::Http(resp) if resp.status() == http::StatusCode::NOT_FOUND => {
            Error::not_found(format!("{url} answered 404 Not Found (is the app mounted there?)"))
        }
        tungstenite::Error::Http(resp) => {
            Error::unexpected(format!("{url} refused the WebSocket upgrade with HTTP {}", resp.status()))
        }
        other => Error::unexpected(format!("{url}: WebSocket handshake failed: {other}")),
    }
}

impl Sender {
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        self.sink
            .send(Message::text(text))
            .await
            .map_err(|e| Error::closed(format!("{}: send failed: {e}", self.url)))
    }

    pub async fn close(&mut self) {
        let _ = self.sink.close().await;
    }
}

impl Receiver {
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
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
