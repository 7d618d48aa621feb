//! Native WebSocket (RFC 6455) at `/<app>/websocket`: one text or binary
//! message is one application message. Framing, masking and control frames are
//! tokio-tungstenite's; this module maps its events to an app client and
//! runs the connection's writer. SockJS over WebSocket
//! (`transport::sockjs`) runs the same loop with its own [`Inbound`] and
//! [`Outbound`] framing.
//!
//! The writer takes everything waiting in the client's outbox at once and
//! queues one frame per message on the connection's [`SendQueue`], then
//! flushes once, so a burst of broadcasts costs one write call. A data frame
//! is built once per message, not per recipient, and cached on the
//! [`Payload`] ([`Form`]): every recipient's queue holds the same bytes. The
//! writer's pings are frames it builds too. tungstenite reads the client's
//! frames and writes the rest (pongs, the close handshake) through the same
//! queue; it is made only when first needed ([`LazyWs`]), and on plain TCP
//! the reader asks it to read only once the client has sent something
//! ([`SharedTcp`]).
//!
//! On plain TCP, with `--shared-writer`, a writer that has nothing in hand
//! leaves its client's messages to the shared writer
//! (`transport::shared_writer`), which writes many clients' in one task:
//! what the socket does not take goes through the client's writer as above.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use bytes::Bytes;
use hub::{Close, Form, Outbox, Payload};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::either::Either;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError, ProtocolError};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use crate::Client;
use base::http::{Body, method_not_allowed, text_response};
use base::metrics::ClientMetrics;
use base::{Connection, Context};

use crate::{Mount, Protocol};
use base::shutdown::Shutdown;
use crate::deflate::{self, Agreed, Inflating};
use wire::websocket::frame_header::{BINARY, TEXT, server_frame};
use crate::shared_tcp::{SharedTcp, Watch};
use crate::shared_writer::{Framing, SharedWriter};
use crate::utf8_watch::is_invalid_text;
use crate::ws_task::WsTask;
use base::token::Identity;

/// Why a handshake request cannot be upgraded, answered with an HTTP status.
/// The texts are those the SockJS protocol suite expects of this endpoint.
// The error is the response to send, built once per refused handshake; its
// size on the stack does not matter there.
#[allow(clippy::result_large_err)]
pub fn check_handshake(req: &Request<impl Sized>) -> Result<HeaderValue, Response<Body>> {
    if req.method() != Method::GET {
        return Err(method_not_allowed("GET"));
    }
    let headers = req.headers();
    if !header_has_token(headers, header::UPGRADE, "websocket") {
        return Err(text_response(StatusCode::BAD_REQUEST, "Can \"Upgrade\" only to \"WebSocket\"."));
    }
    if !header_has_token(headers, header::CONNECTION, "upgrade") {
        return Err(text_response(StatusCode::BAD_REQUEST, "\"Connection\" must be \"Upgrade\"."));
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).map(HeaderValue::as_bytes) != Some(b"13") {
        let mut res = text_response(StatusCode::UPGRADE_REQUIRED, "Unsupported WebSocket version; use 13.");
        res.headers_mut().insert(header::SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
        return Err(res);
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(text_response(StatusCode::BAD_REQUEST, "Missing Sec-WebSocket-Key."));
    };
    let accept = derive_accept_key(key.as_bytes());
    HeaderValue::from_str(&accept).map_err(|_| text_response(StatusCode::BAD_REQUEST, "Bad key."))
}

/// Answers a WebSocket handshake on `mount`: checks it, and once the
/// connection is upgraded runs it with the given framing, opening a new
/// client of the mount's protocol for `identity`; `label` names the
/// transport in metrics.
/// The client's connection slot is held until the connection ends.
// Each argument is a different piece of the connection; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn upgrade<P, I, O>(
    req: &mut Request<Incoming>,
    mount: &Arc<Mount<P>>,
    context: &Arc<Context>,
    connection: Arc<Connection>,
    identity: Option<Arc<Identity>>,
    label: &'static str,
    inbound: I,
    outbound: O,
) -> Response<Body>
where
    P: Protocol,
    I: Inbound + 'static,
    O: Outbound + 'static,
{
    let accept = match check_handshake(req) {
        Ok(accept) => accept,
        Err(res) => return res,
    };
    let mut outbound = outbound;
    let deflate = (mount.websocket_limits.permessage_deflate && outbound.compresses())
        .then(|| deflate::negotiate(req.headers()))
        .flatten();
    let agreed = deflate.as_ref().map(|(agreed, _)| *agreed);
    if let Some(agreed) = agreed {
        outbound.agree(agreed);
    }
    let on_upgrade = hyper::upgrade::on(req);
    let (mount, context2) = (mount.clone(), context.clone());
    // This task only waits for the upgrade; the connection then runs in a
    // task of its own, as small as its future (with or without deflate's
    // layer), since an idle connection's memory is mostly that task.
    context.tracker.spawn(async move {
        let Ok(upgraded) = on_upgrade.await else { return };
        let outbox = Arc::new(Outbox::new(context2.bounds.queue_limit));
        let client = mount.protocol.open(outbox, identity, connection.address);
        let metrics = context2.metrics.client(mount.name(), label);
        let (limits, shutdown) = (mount.websocket_limits.clone(), context2.shutdown.clone());
        let stream = Handover::of(upgraded);
        match agreed {
            Some(agreed) => {
                let stream = stream.map(|io| Inflating::new(io, agreed.inflate(limits.max_message_size)));
                let running = run(stream, client, inbound, outbound, limits, metrics, shutdown);
                spawn_connection(&context2, running, connection);
            }
            None => {
                let running = run(stream, client, inbound, outbound, limits, metrics, shutdown);
                spawn_connection(&context2, running, connection);
            }
        }
    });
    let mut res = switching_protocols(accept);
    if let Some((_, response)) = deflate {
        res.headers_mut().insert(header::SEC_WEBSOCKET_EXTENSIONS, response);
    }
    res
}

/// Runs a connection in a task of its own, which holds its slot until it ends.
fn spawn_connection(context: &Context, running: impl Future<Output = ()> + Send + 'static, connection: Arc<Connection>) {
    // `map`, not an async block: that would hold the future twice.
    context.tracker.spawn(running.map(move |()| drop(connection)));
}

/// An upgraded connection's stream as the WebSocket connection takes it over.
pub struct Handover<S> {
    /// The stream.
    pub io: S,
    /// For a plain TCP connection with nothing read ahead, the stream to
    /// watch for the client's first bytes (`transport::shared_tcp`).
    pub watch: Option<Watch>,
    /// For a plain TCP connection, its socket, which the shared writer may write to.
    pub socket: Option<Arc<TcpStream>>,
}

impl<S> Handover<S> {
    /// The same connection with a layer put over its stream.
    fn map<T>(self, layer: impl FnOnce(S) -> T) -> Handover<T> {
        Handover { io: layer(self.io), watch: self.watch, socket: self.socket }
    }
}

/// What hyper hands over: a plain TCP stream, or another (TLS) as it is
/// (boxed: it is larger, and every connection's future holds this).
type Handed = Either<SharedTcp, Box<TokioIo<hyper::upgrade::Upgraded>>>;

impl Handover<Handed> {
    fn of(upgraded: hyper::upgrade::Upgraded) -> Handover<Handed> {
        match upgraded.downcast::<TokioIo<TcpStream>>() {
            Ok(parts) => {
                let tcp = SharedTcp::new(parts.io.into_inner(), parts.read_buf);
                Handover { watch: tcp.watch(), socket: Some(tcp.socket()), io: Either::Left(tcp) }
            }
            Err(other) => Handover { io: Either::Right(Box::new(TokioIo::new(other))), watch: None, socket: None },
        }
    }
}

/// The 101 response that completes a handshake.
pub fn switching_protocols(accept: HeaderValue) -> Response<Body> {
    let mut res = text_response(StatusCode::SWITCHING_PROTOCOLS, "");
    let h = res.headers_mut();
    h.remove(header::CONTENT_TYPE);
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    res
}

fn header_has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// Limits of one WebSocket connection.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest message accepted from the client, in bytes.
    pub max_message_size: usize,
    /// How long to wait for the client to take our close frame and answer it.
    pub close_grace: Duration,
    /// How often a silent client is pinged.
    pub ping_interval: Duration,
    /// Messages a second the client may send before it is read more slowly.
    pub max_message_rate: u32,
    /// Message bytes a second the client may send before it is read more slowly.
    pub max_byte_rate: u32,
    /// Whether permessage-deflate is offered (`--permessage-deflate`).
    pub permessage_deflate: bool,
    /// How long the writer lets messages gather before it writes them
    /// (`--write-delay`); zero writes at once.
    pub write_delay: Duration,
    /// The server's shared writer, which writes to the client's socket
    /// while its writer has nothing in hand (`--shared-writer`; not with a
    /// write delay).
    pub shared_writer: Option<Arc<SharedWriter>>,
}

/// The close for a client that answered no ping for a whole interval.
pub(crate) fn ping_timeout() -> Close {
    Close::new(1008, "ping timeout: no answer to the server's ping")
}

/// How the client's messages reach the app. Native WebSocket hands each text
/// frame to the app as it is; SockJS over WebSocket decodes a JSON array first.
pub trait Inbound: Send {
    /// Handles one text message and says how many application messages it
    /// carried; `Err` closes the connection with that close.
    fn on_text<C: Client>(&mut self, client: &mut C, text: tokio_tungstenite::tungstenite::Utf8Bytes) -> Result<usize, Close>;
    /// Handles one binary message, likewise.
    fn on_binary<C: Client>(&mut self, client: &mut C, data: bytes::Bytes) -> Result<usize, Close>;
}

/// Native framing: the frame payload is the message, compressed when
/// permessage-deflate was agreed and the message is long enough.
#[derive(Debug, Default)]
pub struct Raw {
    deflate: Option<Agreed>,
}

impl Inbound for Raw {
    fn on_text<C: Client>(&mut self, client: &mut C, text: tokio_tungstenite::tungstenite::Utf8Bytes) -> Result<usize, Close> {
        client.on_message(text);
        Ok(1)
    }

    fn on_binary<C: Client>(&mut self, client: &mut C, data: bytes::Bytes) -> Result<usize, Close> {
        client.on_binary(data)?;
        Ok(1)
    }
}

/// How the app's messages are framed on the way out, as whole data frames
/// (built once per message and shared by every recipient where they can be).
/// Native WebSocket sends each message as it is; SockJS opens with `o`, sends
/// each message as `a[...]`, keeps proxies awake with `h` and says goodbye
/// with `c[code,"reason"]`.
pub trait Outbound: Send {
    /// The frames sent as soon as the connection is up, before any message.
    fn opening(&mut self, _frames: &mut Vec<Bytes>) {}
    /// Appends the frames for `batch` to `frames`.
    fn frame(&mut self, batch: &[Payload], frames: &mut Vec<Bytes>);
    /// How long the writer may stay silent before it sends [`Outbound::heartbeat`];
    /// `None` (native WebSocket) sends none.
    fn heartbeat_interval(&self) -> Option<Duration> {
        None
    }
    /// The frames that keep an idle connection alive.
    fn heartbeat(&mut self, _frames: &mut Vec<Bytes>) {}
    /// The final frames before the WebSocket close frame for `close`.
    fn closing(&mut self, _close: &Close, _frames: &mut Vec<Bytes>) {}
    /// Whether this framing can send permessage-deflate messages, and so
    /// whether the handshake offers it.
    fn compresses(&self) -> bool {
        false
    }
    /// Takes what the handshake agreed on permessage-deflate.
    fn agree(&mut self, _agreed: Agreed) {}
    /// How the shared writer frames each message for this client, if it
    /// may (each message a frame of its own, made without this framing's
    /// state).
    fn framing(&self) -> Option<Framing> {
        None
    }
}

impl Outbound for Raw {
    fn frame(&mut self, batch: &[Payload], frames: &mut Vec<Bytes>) {
        let bits = self.deflate.and_then(|a| a.server_window_bits);
        frames.extend(batch.iter().map(|p| native_frame(p, bits)));
    }

    fn compresses(&self) -> bool {
        true
    }

    fn agree(&mut self, agreed: Agreed) {
        self.deflate = Some(agreed);
    }

    fn framing(&self) -> Option<Framing> {
        Some((native_frame, self.deflate.and_then(|a| a.server_window_bits)))
    }
}

/// `payload`'s frame: text or binary as it is, or compressed (RSV1 set) for
/// a client that agreed permessage-deflate with a window of `deflate_bits`.
/// Short messages, and any the compressor declines, go as they are. Every
/// recipient shares the frame as it is and, with the full window, the
/// compressed one; a narrower window is compressed per recipient.
fn native_frame(payload: &Payload, deflate_bits: Option<u8>) -> Bytes {
    let opcode = if payload.is_binary() { BINARY } else { TEXT };
    let plain = || payload.form(Form::WsFrame, |p| Some(server_frame(opcode, false, p.data()))).cloned().unwrap_or_default();
    let Some(bits) = deflate_bits.filter(|_| payload.len() >= deflate::COMPRESS_FROM) else {
        return plain();
    };
    let deflated = |p: &Payload| deflate::compress(p.data(), bits).map(|c| server_frame(opcode, true, &c));
    let compressed = if bits == deflate::FULL_WINDOW {
        payload.form(Form::WsDeflatedFrame, deflated).cloned()
    } else {
        deflated(payload)
    };
    compressed.unwrap_or_else(plain)
}

/// Bytes tungstenite reads from a client per read call, and keeps for
/// every connection that has sent anything (a chat member, a SockJS or
/// XMPP client: every one of those logs in or speaks): 1 KiB rather than
/// 4 took an idle XMPP over SockJS session from 10.9 to 7.8 KiB at 10,000,
/// and a chat grid over WebSocket measured no different in CPU.
const READ_BUFFER: usize = 1024;

/// How a server's WebSocket connections are read: messages and frames of
/// at most `max_message_size` bytes, read [`READ_BUFFER`] bytes at a time.
/// tungstenite zeroes its read buffer up to its full size before every
/// read, so its default of 128 KiB would be 128 KiB resident per
/// connection, idle or not, and a 128 KiB memset per read. Client messages
/// are small; a larger one just takes several reads.
pub fn config(max_message_size: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .max_message_size(Some(max_message_size))
        .max_frame_size(Some(max_message_size))
}

/// A WebSocket connection over an upgraded stream, as the future that runs
/// it until it closes ([`WsTask`]).
pub fn run<S, C, I, O>(
    stream: Handover<S>,
    client: C,
    inbound: I,
    outbound: O,
    limits: Arc<Limits>,
    metrics: ClientMetrics,
    shutdown: Shutdown,
) -> WsTask<S, C, I, O>
where
    S: AsyncRead + AsyncWrite + Unpin,
    C: Client,
    I: Inbound,
    O: Outbound,
{
    let Handover { io, watch, socket } = stream;
    WsTask::new(io, watch, socket, client, inbound, outbound, limits, metrics, &shutdown)
}

/// The close that answers a read error.
pub fn close_for(error: &WsError) -> Close {
    match error {
        WsError::Capacity(CapacityError::MessageTooLong { .. }) => {
            Close::new(1009, "message too big")
        }
        WsError::Capacity(_) => Close::new(1009, "frame too big"),
        WsError::Utf8(_) => Close::new(1007, "invalid UTF-8 in text frame"),
        WsError::Io(e) if is_invalid_text(e) => Close::new(1007, "invalid UTF-8 in text frame"),
        WsError::Io(e) if deflate::is_corrupt(e) => Close::new(1007, "invalid compressed data"),
        WsError::Io(e) if deflate::is_too_big(e) => Close::new(1009, "frame too big"),
        // The connection ended without a close frame: there is nobody to tell.
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => Close::PEER_GONE,
        WsError::Protocol(_) => Close::new(1002, "protocol error"),
        _ => Close::PEER_GONE,
    }
}

/// The sizes of a WebSocket connection's future over plain TCP for a
/// client made by `client`, without and with permessage-deflate (which
/// browsers offer): native, then SockJS over WebSocket. An idle
/// connection's memory is mostly its task, so the server's tests hold these
/// under a bound with its real clients.
#[doc(hidden)]
pub async fn connection_future_sizes<C: Client>(mut client: impl FnMut() -> C) -> [usize; 4] {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback listener");
    let address = listener.local_addr().expect("its address");
    let limits = Arc::new(Limits {
        max_message_size: 1 << 20,
        close_grace: Duration::from_secs(1),
        ping_interval: Duration::from_secs(30),
        max_message_rate: 100,
        max_byte_rate: 1 << 20,
        permessage_deflate: true,
        write_delay: Duration::ZERO,
        shared_writer: Some(SharedWriter::new(1)),
    });
    let metrics = base::metrics::Metrics::default();
    let agreed = Agreed { server_window_bits: Some(deflate::FULL_WINDOW), client_no_context_takeover: false };
    let mut sizes = [0; 4];
    for (case, size) in sizes.iter_mut().enumerate() {
        let (deflate, sockjs) = (case % 2 == 1, case >= 2);
        let _client = TcpStream::connect(address).await.expect("a loopback connection");
        let tcp = SharedTcp::new(listener.accept().await.expect("the connection").0, Bytes::new());
        let stream: Handover<Handed> = Handover { watch: tcp.watch(), socket: Some(tcp.socket()), io: Either::Left(tcp) };
        let metrics = metrics.client("measure", "websocket");
        let framing = || crate::sockjs::websocket::Sockjs::new(Duration::from_secs(25));
        let (shutdown, limits) = (Shutdown::default(), limits.clone());
        *size = match (deflate, sockjs) {
            (false, false) => std::mem::size_of_val(&run(stream, client(), Raw::default(), Raw::default(), limits, metrics, shutdown)),
            (false, true) => std::mem::size_of_val(&run(stream, client(), framing(), framing(), limits, metrics, shutdown)),
            (true, _) => {
                let stream = stream.map(|io| Inflating::new(io, agreed.inflate(limits.max_message_size)));
                if sockjs {
                    std::mem::size_of_val(&run(stream, client(), framing(), framing(), limits, metrics, shutdown))
                } else {
                    let outbound = Raw { deflate: Some(agreed) };
                    std::mem::size_of_val(&run(stream, client(), Raw::default(), outbound, limits, metrics, shutdown))
                }
            }
        };
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::websocket::frame_header::FrameHeader;

    #[test]
    fn a_native_frame_is_built_once_and_shared_by_every_recipient() {
        let text = Payload::from("hi");
        let (a, b) = (native_frame(&text, None), native_frame(&text.clone(), None));
        assert_eq!(a.as_ref(), [0x81, 0x02, b'h', b'i']);
        assert_eq!(a.as_ptr(), b.as_ptr(), "the same bytes");
        assert_eq!(native_frame(&Payload::binary(vec![0u8, 0xff]), None).as_ref(), [0x82, 0x02, 0x00, 0xff]);
        // Too short to compress: the plain frame, shared with clients without deflate.
        assert_eq!(native_frame(&text, Some(deflate::FULL_WINDOW)).as_ptr(), a.as_ptr());

        let long = Payload::from("abc".repeat(100));
        let full = native_frame(&long, Some(deflate::FULL_WINDOW));
        assert_eq!(full.as_ptr(), native_frame(&long, Some(deflate::FULL_WINDOW)).as_ptr(), "compressed once");
        let narrow = native_frame(&long, Some(9));
        assert_ne!(narrow.as_ptr(), full.as_ptr(), "a narrower window is compressed per recipient");
        for frame in [&full, &narrow] {
            let h = FrameHeader::parse(frame).expect("a header");
            assert_eq!((h.fin, h.rsv1, h.opcode, h.mask), (true, true, TEXT, None));
            assert_eq!(h.len as u64 + h.payload, frame.len() as u64);
            assert!(h.payload < 300, "compressed: {} bytes", h.payload);
        }
    }
}
