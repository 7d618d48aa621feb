//! HTTP answers every protocol gives: the response body type, plain
//! responses, and reading a request's body within a bound and a deadline.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

/// The body of every response: a whole buffer or a stream of frames.
pub type Body = BoxBody<Bytes, Infallible>;

/// Why a request's body could not be read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyError {
    /// Longer than the bound.
    TooLarge,
    /// Not all there within `--idle-timeout`: the client is stalling (its
    /// `Content-Length` promised more than it sends).
    TimedOut,
    /// The client went away mid-body.
    Broken,
}

/// Reads a request's body whole: at most `limit` bytes, within `deadline`.
pub async fn read_body(body: Incoming, limit: usize, deadline: std::time::Duration) -> Result<Bytes, BodyError> {
    match tokio::time::timeout(deadline, http_body_util::Limited::new(body, limit).collect()).await {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Ok(Err(_)) => Err(BodyError::Broken),
        Err(_) => Err(BodyError::TimedOut),
    }
}

/// The answer to a body that did not arrive in time: `408`, and the
/// connection closes, since the rest of the body would be read as the next
/// request.
pub fn body_timeout(mut res: Response<Body>) -> Response<Body> {
    *res.status_mut() = StatusCode::REQUEST_TIMEOUT;
    res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

/// A response with a text body.
pub fn text_response(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    bytes_response(status, "text/plain; charset=UTF-8", text)
}

/// A response with a body of the given content type.
pub fn bytes_response(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(Full::new(body.into()).boxed());
    *res.status_mut() = status;
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}

/// An empty body.
pub fn empty() -> Body {
    Full::new(Bytes::new()).boxed()
}

/// 404 for a path nothing is served at.
pub fn not_found() -> Response<Body> {
    text_response(StatusCode::NOT_FOUND, "Not found\n")
}

/// 405 naming the methods that are allowed, with no body and no content type
/// (as the SockJS protocol suite checks).
pub fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut res = Response::new(empty());
    *res.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    res.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
    res
}

