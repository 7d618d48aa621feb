//! What clients send over HTTP: `xhr_send` (a JSON array of strings, any
//! content type, answered 204) and `jsonp_send` (the same array, raw or as
//! the `d` field of a form, answered 200 `ok` because some browsers
//! mishandle a 204 there). The session must exist (404 otherwise); a body
//! that is empty or not an array is 500 `Payload expected.`, broken JSON 500
//! `Broken JSON encoding.`, as the protocol fixes.

use std::sync::Arc;

use base::http::BodyError;
use hub::Close;
use hyper::body::Incoming;
use hyper::header;
use hyper::{Request, Response, StatusCode};
use wire::sockjs::{PayloadError, decode_jsonp_send, decode_xhr_send};

use super::headers::{self, Echo};
use base::http::Body;
use base::Context;

use crate::{Mount, Protocol};

/// `POST /<server>/<session>/xhr_send`.
pub async fn xhr_send<P: Protocol>(req: Request<Incoming>, echo: &Echo, id: &str, mount: &Arc<Mount<P>>, context: &Context) -> Response<Body> {
    match deliver(req, echo, id, mount, context, |_, body| decode_xhr_send(body)).await {
        Ok(()) => echo.session_response(StatusCode::NO_CONTENT, headers::TEXT, ""),
        Err(res) => res,
    }
}

/// `POST /<server>/<session>/jsonp_send`.
pub async fn jsonp_send<P: Protocol>(req: Request<Incoming>, echo: &Echo, id: &str, mount: &Arc<Mount<P>>, context: &Context) -> Response<Body> {
    match deliver(req, echo, id, mount, context, decode_jsonp_send).await {
        Ok(()) => echo.session_response(StatusCode::OK, headers::TEXT, "ok"),
        Err(res) => res,
    }
}

/// How many full-size messages' worth a send body may be. sockjs-client
/// batches every message queued while a send is in flight into the next
/// one, and JSON escaping can grow text, so a body is allowed well over one
/// message; past this it is refused with 413 and the session closed (1009).
const BODY_LIMIT_IN_MESSAGES: usize = 8;

async fn deliver<P: Protocol>(
    req: Request<Incoming>,
    echo: &Echo,
    id: &str,
    mount: &Mount<P>,
    context: &Context,
    decode: impl FnOnce(Option<&str>, &[u8]) -> Result<Vec<String>, PayloadError>,
) -> Result<(), Response<Body>> {
    let Some(session) = mount.sessions.get(id) else {
        return Err(echo.session_response(StatusCode::NOT_FOUND, headers::TEXT, "No such session.\n"));
    };
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let limit = context.bounds.max_message_size.saturating_mul(BODY_LIMIT_IN_MESSAGES);
    let body = match base::http::read_body(req.into_body(), limit, context.bounds.idle_timeout).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            session.outbox().close(Close::new(1009, "message too big"));
            return Err(echo.session_response(StatusCode::PAYLOAD_TOO_LARGE, headers::TEXT, "Payload too large."));
        }
        Err(BodyError::TimedOut) => {
            context.metrics.refused(mount.name(), "body_timeout");
            return Err(base::http::body_timeout(echo.session_response(StatusCode::REQUEST_TIMEOUT, headers::TEXT, "The body did not arrive in time.")));
        }
        // The client went away mid-body; nobody reads this answer.
        Err(BodyError::Broken) => return Err(echo.session_response(StatusCode::BAD_REQUEST, headers::TEXT, "Incomplete body.")),
    };
    let messages = decode(content_type.as_deref(), &body)
        .map_err(|e| echo.session_response(StatusCode::INTERNAL_SERVER_ERROR, headers::TEXT, e.reason()))?;
    if let Some(until) = session.deliver(messages, context.bounds.max_message_size) {
        // Over its rate: the answer waits, and with it the client's next send.
        tokio::time::sleep_until(until).await;
    }
    Ok(())
}
