//! The polling receivers: `xhr` (POST, answered `<frame>\n`) and `jsonp`
//! (GET, answered `/**/<callback>("<frame>");\r\n`). Each request carries
//! exactly one frame and then ends with a Content-Length, so any HTTP/1.0
//! proxy passes it: `o` for a new session, else everything queued since the
//! last poll as one `a[...]`, else the close, else `h` once a heartbeat
//! interval passes with nothing to say. Messages that arrive between polls
//! wait in the session's outbox, so none is lost.

use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use wire::sockjs::{Callback, OPEN, jsonp_into, xhr_into};

use super::headers::{self, Echo};
use crate::Protocol;
use super::{Receiving, another_connection_still_open, callback_param, next_frame};
use base::http::Body;

/// `POST /<server>/<session>/xhr`.
pub async fn xhr<P: Protocol>(echo: &Echo, receiving: Receiving<'_, P>) -> Response<Body> {
    let frame = match poll(echo, receiving).await {
        Ok(frame) => frame,
        Err(refused) => return refused,
    };
    let mut body = Vec::with_capacity(frame.len() + 1);
    xhr_into(&frame, &mut body);
    echo.session_response(StatusCode::OK, headers::JAVASCRIPT, body)
}

/// `GET /<server>/<session>/jsonp?c=<callback>`. The callback is checked
/// before the session is touched.
pub async fn jsonp<B, P: Protocol>(req: &Request<B>, echo: &Echo, receiving: Receiving<'_, P>) -> Response<Body> {
    let name = callback_param(req);
    let callback = match Callback::parse(name.as_deref()) {
        Ok(callback) => callback,
        Err(e) => return echo.session_response(StatusCode::INTERNAL_SERVER_ERROR, headers::TEXT, e.to_string()),
    };
    let frame = match poll(echo, receiving).await {
        Ok(frame) => frame,
        Err(refused) => return refused,
    };
    let mut body = Vec::with_capacity(frame.len() + callback.as_str().len() + 16);
    jsonp_into(callback, &frame, &mut body);
    let mut res = echo.session_response(StatusCode::OK, headers::JAVASCRIPT, body);
    // The body is script: a browser must not sniff it into anything else.
    res.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    res
}

/// The one frame a polling request carries. If the request is dropped while
/// it waits (the client went away), the receiver's drop closes the session
/// with 1002; nothing has left the outbox by then. The error is the 503 for
/// a mount that filled up.
// The error is the response to send; its size on the stack does not matter.
#[allow(clippy::result_large_err)]
async fn poll<P: Protocol>(echo: &Echo, receiving: Receiving<'_, P>) -> Result<Vec<u8>, Response<Body>> {
    let mut frame = Vec::new();
    let heartbeat = receiving.heartbeat();
    match receiving.attach(echo)? {
        None => another_connection_still_open(&mut frame),
        Some(mut receiver) => {
            if receiver.opening() {
                frame.extend_from_slice(OPEN);
            } else {
                next_frame(&mut receiver, heartbeat, &mut frame).await;
            }
            receiver.finish();
        }
    }
    Ok(frame)
}
