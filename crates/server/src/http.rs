//! HTTP routing: every request is dispatched by path to a page, a metrics
//! endpoint, a plain HTTP app endpoint or a transport of a mounted app.
//!
//! | path | what |
//! |---|---|
//! | `/` | the chat demo page |
//! | `/healthz`, `/metrics` | liveness, Prometheus text |
//! | `/sockjs.min.js` | the sockjs-client script, for the pages and the SockJS iframe |
//! | `/<app>/websocket` | native WebSocket |
//! | `/count/xhr?count=N` | plain HTTP count-down (`{"count":N-1}`) |
//! | `/http-bind` | XMPP over BOSH (`xmpp::bosh`) |
//! | `/xmpp-websocket`, `/.well-known/host-meta` | XMPP over WebSocket and its discovery (`xmpp::websocket`) |
//! | `/irc-websocket` | IRC over WebSocket (`irc::websocket`) |
//! | `/api/<method>`, `/api/openapi.json` | the server API (`api`), unless it listens on its own |
//! | `/<app>`, `/<app>/info`, `/<app>/iframe*.html`, `/<app>/<server>/<session>/<transport>` | SockJS (`transport::sockjs`) |

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use apps::AppKind;
use base::Connection;
use base::http::{Body, bytes_response, not_found, text_response};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use transport::{sockjs, websocket};
use wire::app::{AppError, Count};

use crate::activity::Busy;
use crate::config::{Listen, MountKind};
use crate::state::{MountState, ServerState};

/// Keeps `busy` (the request counted as in progress) until the body is
/// done or dropped, so a streaming response keeps its connection busy.
pub fn hold(body: Body, busy: Busy) -> Body {
    Held { body, _busy: busy }.boxed()
}

struct Held {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

const INDEX_HTML: &str = include_str!("../../../web/index.html");

/// Handles one request.
pub async fn route(mut req: Request<Incoming>, server: Arc<ServerState>, connection: Arc<Connection>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let res = match path.as_str() {
        "/" | "/index.html" => bytes_response(StatusCode::OK, "text/html; charset=UTF-8", INDEX_HTML),
        "/healthz" => text_response(StatusCode::OK, "ok\n"),
        sockjs::CLIENT_SCRIPT_PATH => sockjs::client_script(&req),
        "/xmpp-websocket" => match &server.xmpp {
            Some(xmpp) => xmpp::websocket::upgrade(&mut req, xmpp, connection.clone()),
            None => xmpp_off(),
        },
        "/irc-websocket" => irc::websocket::upgrade(&mut req, &server.irc, connection.clone()),
        api if api.starts_with(api::PREFIX) => match &server.api {
            Some(service) if server.config.api.listen == Listen::Off => service.handle(req).await,
            Some(_) => text_response(StatusCode::NOT_FOUND, "The server API listens on its own (--api-listen).\n"),
            None => text_response(StatusCode::NOT_FOUND, "The server API is off: give --api-key to turn it on.\n"),
        },
        xmpp::bosh::PATH => match &server.bosh {
            Some(bosh) => xmpp::bosh::handle(req, bosh, &connection).await,
            None => xmpp_off(),
        },
        "/.well-known/host-meta" | "/.well-known/host-meta.json" if server.xmpp.is_none() => xmpp_off(),
        "/.well-known/host-meta" => xmpp::websocket::host_meta(&req, server.config.tls.is_some(), false),
        "/.well-known/host-meta.json" => xmpp::websocket::host_meta(&req, server.config.tls.is_some(), true),
        "/metrics" => {
            if let Some(cluster) = &server.cluster {
                let (up, reconnects) = cluster.health();
                server.metrics.broker(up, reconnects);
            }
            if let Some(xmpp) = &server.xmpp {
                let (parked, waiting) = xmpp.held().await;
                server.metrics.xmpp(parked, waiting);
                let (waiting, guests) = xmpp.federated();
                server.metrics.s2s(waiting, guests);
            }
            if let Some(archive) = &server.archive {
                server.metrics.archive_queue(archive.waiting());
            }
            bytes_response(
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                server.metrics.encode(),
            )
        }
        _ => {
            let (prefix, rest) = match path[1..].find('/') {
                Some(i) => path.split_at(i + 1),
                None => (path.as_str(), ""),
            };
            match server.mount(prefix) {
                Some(mount) => route_mount(req, rest, mount, &server, connection).await,
                None => not_found(),
            }
        }
    };
    Ok(res)
}

/// Handles one request on the server API's own listener (`--api-listen`):
/// the API's paths, and nothing else.
pub async fn route_api(req: Request<Incoming>, server: &ServerState) -> Result<Response<Body>, Infallible> {
    Ok(match &server.api {
        Some(service) if req.uri().path().starts_with(api::PREFIX) => service.handle(req).await,
        _ => not_found(),
    })
}

/// The answer at XMPP's endpoints when XMPP is off.
fn xmpp_off() -> Response<Body> {
    text_response(StatusCode::NOT_FOUND, "XMPP is off on this server (--xmpp-listen).")
}

async fn route_mount(
    mut req: Request<Incoming>,
    rest: &str,
    mount: &Arc<MountState>,
    server: &Arc<ServerState>,
    connection: Arc<Connection>,
) -> Response<Body> {
    match rest {
        "/websocket" if mount.sockjs.websocket => {
            if !sockjs::origin_allowed(req.headers(), &mount.sockjs.origins) {
                return text_response(StatusCode::FORBIDDEN, "Origin not allowed.\n");
            }
            let identity = match server.context.authenticate(&req, mount.name()) {
                Ok(identity) => identity,
                Err(res) => return res,
            };
            websocket::upgrade(&mut req, mount, &server.context, connection, identity, "websocket", websocket::Raw::default(), websocket::Raw::default())
        }
        "/xhr" if mount.protocol.kind() == MountKind::App(AppKind::Count) => match server.context.authenticate(&req, mount.name()) {
            Ok(_) => count_xhr(&req, server, mount),
            Err(res) => res,
        },
        _ => sockjs::route(req, rest, mount, &server.context, connection).await,
    }
}

/// `GET /count/xhr?count=N` → `{"count":N-1}`.
fn count_xhr(req: &Request<Incoming>, server: &ServerState, mount: &MountState) -> Response<Body> {
    let metrics = server.metrics.client(mount.name(), "http");
    let query = req.uri().query().unwrap_or("");
    let count = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("count="))
        .ok_or_else(|| AppError::Malformed("expected ?count=N".into()))
        .and_then(|n| n.parse().map_err(|_| AppError::Malformed(format!("count {n:?} is not an integer"))))
        .and_then(|count| Count { count }.answer());
    metrics.received(query.len());
    let (status, body) = match count {
        Ok(answer) => (StatusCode::OK, answer.to_json()),
        Err(e) => (StatusCode::BAD_REQUEST, e.to_json()),
    };
    metrics.sent(1, body.len());
    let mut res = bytes_response(status, "application/json", body);
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}
