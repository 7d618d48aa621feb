//! SockJS 0.3 — the protocol sockjs-client 1.x speaks — at every mount, so a
//! browser whose proxy blocks WebSocket still gets real-time messaging over
//! plain HTTP. The codec (escaping, frames, transport wrappers, client
//! payloads) is `wire::sockjs`; this module is the HTTP side.
//!
//! | path under the mount | methods | what |
//! |---|---|---|
//! | (none), `/` | GET | `Welcome to SockJS!` |
//! | `/info` | GET, OPTIONS | capabilities and entropy (`pages`) |
//! | `/iframe.html`, `/iframe-<version>.html` | GET | the iframe page (`pages`) |
//! | `/<server>/<session>/websocket` | GET | SockJS over WebSocket (`websocket`) |
//! | `/<server>/<session>/xhr`, `/jsonp` | POST, GET | polling receivers (`polling`) |
//! | `/<server>/<session>/xhr_streaming`, `/eventsource`, `/htmlfile` | POST, GET, GET | streaming receivers (`streaming`) |
//! | `/<server>/<session>/xhr_send`, `/jsonp_send` | POST | client messages (`send`) |
//!
//! The HTTP transports share one session per session id (`session`): a
//! receiving request opens it or attaches to it, a send request delivers
//! into it, and it expires after the mount's disconnect delay without a
//! receiving request. Each WebSocket connection is its own session.

mod headers;
mod pages;
mod polling;
mod send;
mod streaming;
pub(crate) mod websocket;

use std::net::IpAddr;
use std::sync::Arc;

use hub::Outbox;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use self::headers::Echo;
use super::http_session::{self, Attach, HttpSession, Receiver, Step};
use base::http::{Body, method_not_allowed, not_found, text_response};
use base::limits::Inflow;
use base::{Connection, Context};

use crate::{Mount, Protocol};
use base::token::Identity;

pub use self::headers::origin_allowed;
pub use self::pages::{CLIENT_SCRIPT_PATH, client_script};
/// The SockJS sessions of one mount.
pub type Registry = http_session::Registry;

/// The transports of a session URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    WebSocket,
    Xhr,
    XhrSend,
    XhrStreaming,
    EventSource,
    HtmlFile,
    Jsonp,
    JsonpSend,
}

impl Transport {
    fn parse(name: &str) -> Option<Transport> {
        Some(match name {
            "websocket" => Transport::WebSocket,
            "xhr" => Transport::Xhr,
            "xhr_send" => Transport::XhrSend,
            "xhr_streaming" => Transport::XhrStreaming,
            "eventsource" => Transport::EventSource,
            "htmlfile" => Transport::HtmlFile,
            "jsonp" => Transport::Jsonp,
            "jsonp_send" => Transport::JsonpSend,
            _ => return None,
        })
    }

    /// The transport's name in metrics, for the sessions it opens.
    fn label(self) -> &'static str {
        match self {
            Transport::WebSocket => "sockjs-websocket",
            Transport::Xhr | Transport::XhrSend => "xhr-polling",
            Transport::XhrStreaming => "xhr-streaming",
            Transport::EventSource => "eventsource",
            Transport::HtmlFile => "htmlfile",
            Transport::Jsonp | Transport::JsonpSend => "jsonp-polling",
        }
    }

    /// Whether a request of this transport receives frames (and so may open a session).
    fn receives(self) -> bool {
        matches!(self, Transport::Xhr | Transport::XhrStreaming | Transport::EventSource | Transport::HtmlFile | Transport::Jsonp)
    }

    /// The methods the URL takes, for `Allow` and CORS preflights.
    fn methods(self) -> &'static str {
        match self {
            Transport::Xhr | Transport::XhrSend | Transport::XhrStreaming => "OPTIONS, POST",
            Transport::JsonpSend => "POST",
            Transport::WebSocket | Transport::EventSource | Transport::HtmlFile | Transport::Jsonp => "GET",
        }
    }
}

/// Longest server or session id, in bytes. sockjs-client's are 3 and 8.
pub const MAX_ID_LEN: usize = 64;

/// Splits `/<server>/<session>/<transport>`. The server id only steers load
/// balancers and is ignored; neither id may be empty or hold a dot.
fn session_path(rest: &str) -> Option<(&str, Transport)> {
    let mut parts = rest.strip_prefix('/')?.split('/');
    let (server, session, transport) = (parts.next()?, parts.next()?, parts.next()?);
    let valid = |id: &str| !id.is_empty() && !id.contains('.');
    if parts.next().is_some() || !valid(server) || !valid(session) {
        return None;
    }
    Some((session, Transport::parse(transport)?))
}

/// Handles a request under a mount that no other route took: `rest` is the
/// path after the mount's prefix.
pub async fn route<P: Protocol>(
    mut req: Request<Incoming>,
    rest: &str,
    mount: &Arc<Mount<P>>,
    context: &Arc<Context>,
    connection: Arc<Connection>,
) -> Response<Body> {
    let options = &mount.sockjs;
    match rest {
        "" | "/" => return pages::greeting(&req),
        _ if pages::is_iframe(rest) => return pages::iframe(&req),
        _ => {}
    }
    if !headers::origin_allowed(req.headers(), &options.origins) {
        return text_response(StatusCode::FORBIDDEN, "Origin not allowed.\n");
    }
    if rest == "/info" {
        return pages::info(&req, options);
    }
    let Some((id, transport)) = session_path(rest) else { return not_found() };
    if rest.split('/').any(|part| part.len() > MAX_ID_LEN) {
        context.metrics.refused(mount.name(), "session_id_length");
        return text_response(StatusCode::BAD_REQUEST, format!("Session and server ids may be at most {MAX_ID_LEN} bytes.\n"));
    }
    let identity = match context.authenticate(&req, mount.name()) {
        Ok(identity) => identity,
        Err(res) => return res,
    };
    if transport == Transport::WebSocket {
        if !options.websocket {
            return not_found();
        }
        let framing = websocket::Sockjs::new(options.heartbeat);
        let label = transport.label();
        return crate::websocket::upgrade(&mut req, mount, context, connection, identity, label, framing.clone(), framing);
    }
    let echo = Echo::new(&req, options.cookie_needed);
    let receiving = Receiving { id, transport, mount, context, identity, address: connection.address };
    if transport.receives()
        && req.method() != Method::OPTIONS
        && mount.sessions.get(id).is_none()
        && let Err(res) = receiving.admit(&echo)
    {
        return res;
    }
    match (transport, req.method().clone()) {
        (Transport::Xhr | Transport::XhrSend | Transport::XhrStreaming, Method::OPTIONS) => {
            headers::preflight(&echo, transport.methods())
        }
        (Transport::Xhr, Method::POST) => polling::xhr(&echo, receiving).await,
        (Transport::Jsonp, Method::GET) => polling::jsonp(&req, &echo, receiving).await,
        (Transport::XhrStreaming, Method::POST) => streaming::xhr_streaming(&echo, receiving),
        (Transport::EventSource, Method::GET) => streaming::eventsource(&echo, receiving),
        (Transport::HtmlFile, Method::GET) => streaming::htmlfile(&req, &echo, receiving),
        (Transport::XhrSend, Method::POST) => send::xhr_send(req, &echo, id, mount, context).await,
        (Transport::JsonpSend, Method::POST) => send::jsonp_send(req, &echo, id, mount, context).await,
        _ => method_not_allowed(transport.methods()),
    }
}

/// A receiving request: which session it names, by which transport, from
/// whom.
struct Receiving<'a, P> {
    id: &'a str,
    transport: Transport,
    mount: &'a Arc<Mount<P>>,
    context: &'a Arc<Context>,
    identity: Option<Arc<Identity>>,
    address: IpAddr,
}

impl<P: Protocol> Receiving<'_, P> {
    /// Whether this request may open a new session: the mount has room for
    /// one more, and its address has not opened too many lately. A refusal
    /// is answered 503 or 429 with a `Retry-After`, and counted. The room
    /// checked here is a fast answer that charges no rate; the slot itself
    /// is reserved when the session opens ([`Receiving::attach`]).
    // The error is the response to send; its size on the stack does not matter.
    #[allow(clippy::result_large_err)]
    fn admit(&self, echo: &Echo) -> Result<(), Response<Body>> {
        if self.mount.sessions.is_full() {
            return Err(self.full(echo));
        }
        if !self.context.session_rates.admit(self.address) {
            let text = "Too many new sessions from your address; slow down.\n".to_owned();
            return Err(self.refuse(echo, StatusCode::TOO_MANY_REQUESTS, "session_rate", text, "1"));
        }
        Ok(())
    }

    /// The answer when the mount holds as many sessions as it may.
    fn full(&self, echo: &Echo) -> Response<Body> {
        let text = format!("Too many sessions on this server ({}); try again later.\n", self.mount.sessions.max());
        self.refuse(echo, StatusCode::SERVICE_UNAVAILABLE, "max_sessions", text, "5")
    }

    fn refuse(&self, echo: &Echo, status: StatusCode, reason: &'static str, text: String, retry: &'static str) -> Response<Body> {
        self.context.metrics.refused(self.mount.name(), reason);
        let mut res = echo.session_response(status, headers::TEXT, text);
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(retry));
        res
    }

    /// Opens the session (a new id starts one, with a fresh app client)
    /// or attaches to it; `Ok(None)` when another request is already
    /// receiving. When the mount filled up since [`Receiving::admit`] (other
    /// requests opened sessions in between), the error is the same 503.
    // The error is the response to send; its size on the stack does not matter.
    #[allow(clippy::result_large_err)]
    fn attach(self, echo: &Echo) -> Result<Option<Receiver>, Response<Body>> {
        let full = || self.full(echo);
        let Receiving { id, transport, mount, context, ref identity, address } = self;
        loop {
            let opened = mount.sessions.get_or_open(id, address, |id| {
                let outbox = Arc::new(Outbox::new(context.bounds.queue_limit));
                let metrics = context.metrics.client(mount.name(), transport.label());
                let limits = mount.limits;
                HttpSession::new(id, mount.protocol.open(outbox, identity.clone(), address), metrics, Inflow::new(limits.max_message_rate, limits.max_byte_rate), ())
            });
            let Ok((session, created)) = opened else { return Err(full()) };
            if created {
                context.tracker.spawn(http_session::reap(
                    mount.sessions.clone(),
                    session.clone(),
                    mount.sockjs.disconnect_delay,
                    context.shutdown.clone(),
                ));
            }
            match session.attach(false) {
                Attach::Receiver(receiver) => return Ok(Some(receiver)),
                Attach::Busy => return Ok(None),
                // It expired between the lookup and now: the next lookup
                // opens a new session.
                Attach::Expired => {}
            }
        }
    }

    fn heartbeat(&self) -> std::time::Duration {
        self.mount.sockjs.heartbeat
    }
}

/// The `c` (or `callback`) query parameter of `jsonp` and `htmlfile`,
/// percent-decoded.
fn callback_param<B>(req: &Request<B>) -> Option<String> {
    let query = req.uri().query()?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "c" || k == "callback")
        .map(|(_, v)| v.into_owned())
}

/// What a receiving request wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    /// An `a[...]` frame.
    Messages,
    /// An `h` frame: nothing happened for a heartbeat interval.
    Heartbeat,
    /// A `c[code,"reason"]` frame: the session is closed; end the response.
    Close,
}

/// Waits for the session's next frame and appends it, unwrapped, to `out`:
/// every message queued (one `a[...]`), else the close, else a heartbeat
/// once `heartbeat` has passed with nothing to send. Cancel-safe until it
/// returns.
async fn next_frame(receiver: &mut Receiver, heartbeat: std::time::Duration, out: &mut Vec<u8>) -> Wrote {
    match receiver.next(heartbeat).await {
        Step::Messages(batch) => {
            wire::sockjs::encode_messages(batch.iter().map(|p| p.sockjs_json(wire::sockjs::quote)), out);
            Wrote::Messages
        }
        Step::Idle => {
            out.extend_from_slice(wire::sockjs::HEARTBEAT);
            Wrote::Heartbeat
        }
        Step::Close(close) => {
            wire::sockjs::encode_close(close.code, &close.reason, out);
            Wrote::Close
        }
        // SockJS receivers never take over (a second one is told another
        // connection is open), so this is not reached.
        Step::Displaced => {
            another_connection_still_open(out);
            Wrote::Close
        }
    }
}

/// `c[2010,"Another connection still open"]`.
fn another_connection_still_open(out: &mut Vec<u8>) {
    let (code, reason) = wire::sockjs::ANOTHER_CONNECTION_STILL_OPEN;
    wire::sockjs::encode_close(code, reason, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_paths() {
        assert_eq!(session_path("/000/abc/xhr"), Some(("abc", Transport::Xhr)));
        assert_eq!(session_path("/a/abcdefgh_i-j%20/jsonp_send"), Some(("abcdefgh_i-j%20", Transport::JsonpSend)));
        for bad in ["//xhr", "/a./a/xhr", "/a/a./xhr", "/././xhr", "/xhr", "///xhr", "/a/a/xhr/", "/a/a/nope", "/a/a", ""] {
            assert_eq!(session_path(bad), None, "{bad}");
        }
    }
}
