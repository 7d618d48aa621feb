//! What a caller of the server API is told when a call fails: an HTTP
//! status, a code a program can match, and a message a person reads, as
//! `{"error":{"code":"…","message":"…"}}`.

use hyper::StatusCode;
use serde_json::json;

/// A failed call; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into() }
    }

    /// 400: the body is not the JSON the method takes.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: no key, or one the server does not know.
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 404: no such method.
    pub fn unknown_method(name: &str) -> ApiError {
        let known = crate::methods::NAMES.join(", ");
        ApiError::new(StatusCode::NOT_FOUND, "unknown_method", format!("no method {name:?}; the methods are {known}"))
    }

    /// 409: a publish with the same idempotency key is under way.
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 413: the body is longer than `--api-max-body`.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", format!("the body is longer than {limit} bytes (--api-max-body)"))
    }

    /// 422: well-formed, but a value is not acceptable.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }

    /// 429: the key has made its `--api-rate` of calls.
    pub fn too_many(rate: u32) -> ApiError {
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_requests", format!("more than {rate} calls a second with this key (--api-rate); try again in a second"))
    }

    /// 503: the broker between the nodes, or the store, cannot be reached.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// The error as the body of a response, or an item of a batch's replies.
    pub fn to_json(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl From<hub::BrokerError> for ApiError {
    fn from(e: hub::BrokerError) -> ApiError {
        ApiError::unavailable(e.to_string())
    }
}
