//! The server API: what an application's backend does to the rooms over
//! HTTP with JSON, as Centrifugo's server API and ejabberd's admin API
//! offer: publish into a room (to every protocol's members, on every
//! node), broadcast into several, list a room's members and counts, read
//! its history, disconnect a user everywhere it is connected, list rooms,
//! and the server's info; `batch` runs several calls at once.
//!
//! Each method is `POST /api/<method>` with its params as a JSON object;
//! the answer is the method's result, or an error (`error::ApiError`) with
//! an HTTP status. `GET /api/openapi.json` describes them all. A caller
//! presents one of the configured keys in `X-API-Key`, or a token with
//! the `admin` claim in `Authorization: Bearer`; every bound a caller can
//! reach is a setting ([`Settings`]).

mod error;
mod idempotency;
mod methods;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base::Context;
use base::archive::Archive;
use base::http::{Body, BodyError, bytes_response, read_body};
use hub::{BoxFuture, Broker, BrokerError, Bucket, Outbox};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use parking_lot::Mutex;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

pub use error::ApiError;
pub use methods::NAMES;

use idempotency::Idempotency;
use methods::Command;

/// Where the API is served.
pub const PREFIX: &str = "/api/";

/// The OpenAPI document, served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The name of a node that has no others (no broker between nodes).
pub const SOLE_NODE: &str = "local";

/// The API's bounds and keys (`--api-*`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The keys a caller may present in `X-API-Key`.
    pub keys: Vec<String>,
    /// Longest request body, in bytes.
    pub max_body: usize,
    /// Most commands in one batch, and rooms in one broadcast.
    pub max_batch: usize,
    /// Most items in one page (presence, history, rooms).
    pub max_page: usize,
    /// Calls a second one key may make, with bursts of a second's worth.
    pub rate: u32,
    /// How long an idempotency key is remembered.
    pub idempotency_window: Duration,
    /// Most idempotency keys remembered at once.
    pub idempotency_keys: usize,
}

/// Who is connected under a name in one protocol: the outboxes to close
/// to disconnect them.
pub type ClientsNamed = Box<dyn Fn(&str) -> Vec<Arc<Outbox>> + Send + Sync>;

/// Closes a user's clients on the other nodes (`(name, reason)`): how
/// many.
pub type Elsewhere = Box<dyn Fn(String, String) -> BoxFuture<'static, Result<usize, BrokerError>> + Send + Sync>;

/// This node's clients by name, in every protocol: the rooms' members and
/// what each protocol knows by name beside them (an XMPP account's
/// resources, an IRC nickname).
pub struct Clients {
    rooms: Arc<dyn Broker>,
    named: Vec<ClientsNamed>,
}

impl Clients {
    pub fn new(rooms: Arc<dyn Broker>, named: Vec<ClientsNamed>) -> Clients {
        Clients { rooms, named }
    }

    /// Closes every client of this node known by `name` with close 1008
    /// and `reason`, which each protocol tells in its own way: how many
    /// (one client found twice is closed and counted once).
    pub fn disconnect(&self, name: &str, reason: &str) -> usize {
        let mut outboxes = match wire::nickname::Nickname::parse(name) {
            Ok(nickname) => self.rooms.named(&nickname.key),
            Err(_) => Vec::new(),
        };
        for clients in &self.named {
            for outbox in clients(name) {
                if !outboxes.iter().any(|o| Arc::ptr_eq(o, &outbox)) {
                    outboxes.push(outbox);
                }
            }
        }
        let close = hub::Close::new(1008, reason.to_owned());
        for outbox in &outboxes {
            outbox.close(close.clone());
        }
        outboxes.len()
    }
}

/// What the API reaches of the rest of the server, which the server wires in.
pub struct Reach {
    /// The chat rooms (which MUC rooms and IRC channels are).
    pub rooms: Arc<dyn Broker>,
    /// The rooms' archive, and the chat mount's prefix that names a
    /// room's archive in it; `None` when rooms are not archived.
    pub archive: Option<(Arc<Archive>, String)>,
    /// This node's clients by name.
    pub clients: Arc<Clients>,
    /// The other nodes' clients, when there are other nodes.
    pub elsewhere: Option<Elsewhere>,
    /// This node's name.
    pub node: Arc<str>,
    /// The other nodes alive now.
    pub nodes: Box<dyn Fn() -> Vec<Arc<str>> + Send + Sync>,
}

/// The server API; see the module docs.
pub struct Api {
    context: Arc<Context>,
    settings: Settings,
    reach: Reach,
    idempotency: Idempotency,
    /// Calls left, by key (callers with a token share one bucket).
    rates: Mutex<HashMap<String, Bucket>>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api").field("settings", &format_args!("{} keys", self.settings.keys.len())).finish_non_exhaustive()
    }
}

/// The bucket of every caller that presents a token rather than a key.
const BEARER: &str = "";

impl Api {
    pub fn new(context: Arc<Context>, settings: Settings, reach: Reach) -> Api {
        let idempotency = Idempotency::new(settings.idempotency_window, settings.idempotency_keys);
        Api { context, settings, reach, idempotency, rates: Mutex::default() }
    }

    /// Answers one request under [`PREFIX`].
    pub async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let name = req.uri().path().strip_prefix(PREFIX).unwrap_or("").to_owned();
        if name == "openapi.json" {
            return match *req.method() {
                Method::GET | Method::HEAD => bytes_response(StatusCode::OK, "application/json", OPENAPI),
                _ => base::http::method_not_allowed("GET, HEAD"),
            };
        }
        if req.method() != Method::POST {
            return base::http::method_not_allowed("POST");
        }
        match self.call(&name, req).await {
            Ok(result) => json_response(StatusCode::OK, &result),
            Err(e) => {
                let mut res = json_response(e.status, &e.to_json());
                if e.status == StatusCode::TOO_MANY_REQUESTS {
                    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                }
                res
            }
        }
    }

    async fn call(&self, name: &str, req: Request<Incoming>) -> Result<serde_json::Value, ApiError> {
        let caller = self.caller(&req).inspect_err(|_| self.context.metrics.refused("api", "key"))?;
        if !self.take_call(caller) {
            self.context.metrics.refused("api", "rate");
            return Err(ApiError::too_many(self.settings.rate));
        }
        if !NAMES.contains(&name) {
            return Err(ApiError::unknown_method(name));
        }
        let body = read_body(req.into_body(), self.settings.max_body, self.context.bounds.idle_timeout).await.map_err(|e| match e {
            BodyError::TooLarge => {
                self.context.metrics.refused("api", "body_size");
                ApiError::too_large(self.settings.max_body)
            }
            BodyError::TimedOut | BodyError::Broken => ApiError::bad_request("the body did not arrive whole"),
        })?;
        let command = Command::parse(name, &body)?;
        self.run(command).await
    }

    /// The key the caller presented (for its rate), or why it may not call.
    fn caller<'a>(&'a self, req: &Request<Incoming>) -> Result<&'a str, ApiError> {
        if let Some(given) = req.headers().get("x-api-key") {
            let given = given.as_bytes();
            // Every key is compared, in constant time, so the time taken says nothing of them.
            let found = self.settings.keys.iter().fold(None, |found, key| {
                let equal: bool = key.as_bytes().ct_eq(given).into();
                found.or(equal.then_some(key.as_str()))
            });
            return found.ok_or_else(|| ApiError::unauthorized("this API key is not one of the server's (--api-key)"));
        }
        let bearer = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match (bearer, &self.context.tokens) {
            (None, _) => Err(ApiError::unauthorized("give an API key in X-API-Key, or a token with the admin claim in Authorization: Bearer")),
            (Some(_), None) => Err(ApiError::unauthorized("this server checks no tokens (--token-secret, --token-public-key): give an API key in X-API-Key")),
            (Some(token), Some(verifier)) => match verifier.verify(token) {
                Ok(identity) if identity.admin => Ok(BEARER),
                Ok(_) => Err(ApiError::unauthorized("the token has no admin claim")),
                Err(e) => Err(ApiError::unauthorized(e.to_string())),
            },
        }
    }

    /// Takes one call from `caller`'s rate; `false` if it has none left.
    fn take_call(&self, caller: &str) -> bool {
        let rate = self.settings.rate;
        let mut rates = self.rates.lock();
        if let Some(bucket) = rates.get_mut(caller) {
            return bucket.try_take(Instant::now());
        }
        // A bucket per key the server knows, and one for every token: bounded.
        let mut bucket = Bucket::new(rate, rate);
        let took = bucket.try_take(Instant::now());
        rates.insert(caller.to_owned(), bucket);
        took
    }
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    bytes_response(status, "application/json", value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The fields a method's params take, as serde lists them when it
    /// refuses an unknown one.
    fn fields_taken(method: &str) -> Vec<String> {
        let e = Command::parse(method, br#"{"surely_not_a_field":0}"#).unwrap_err();
        // "… expected one of `a`, `b`, `c` at …", "expected `a` or `b`", "expected `a`", "there are no fields".
        let Some((_, expected)) = e.message.split_once("expected ") else { return Vec::new() };
        let expected = expected.split(" at line").next().unwrap_or("").trim_start_matches("one of ");
        let mut fields: Vec<String> = expected.split(", ").flat_map(|f| f.split(" or ")).map(|f| f.trim_matches('`').to_owned()).collect();
        fields.sort();
        fields
    }

    #[test]
    fn the_openapi_document_describes_every_method_and_each_ones_params() {
        let doc: Value = serde_json::from_str(OPENAPI).unwrap();
        let paths = doc["paths"].as_object().unwrap();
        let mut documented: Vec<&str> = paths.keys().filter_map(|p| p.strip_prefix(PREFIX)).filter(|m| *m != "openapi.json").collect();
        documented.sort();
        let mut served = NAMES.to_vec();
        served.sort();
        assert_eq!(documented, served, "the document's paths are the methods served");
        for method in NAMES {
            let schema = &paths[&format!("{PREFIX}{method}")]["post"]["requestBody"]["content"]["application/json"]["schema"];
            let mut properties: Vec<String> = schema["properties"].as_object().unwrap().keys().cloned().collect();
            properties.sort();
            assert_eq!(properties, fields_taken(method), "{method}: the document's params are the fields the method takes");
            let required: Vec<&str> = schema["required"].as_array().map_or_else(Vec::new, |r| r.iter().filter_map(Value::as_str).collect());
            let example = &paths[&format!("{PREFIX}{method}")]["post"]["requestBody"]["content"]["application/json"]["example"];
            assert!(Command::parse(method, example.to_string().as_bytes()).is_ok(), "{method}: its example is taken");
            for field in properties.iter() {
                let mut without = example.clone();
                without.as_object_mut().unwrap().remove(field);
                let taken = Command::parse(method, without.to_string().as_bytes()).is_ok();
                assert_eq!(taken, !required.contains(&field.as_str()), "{method}: {field} is required in the document exactly when the method needs it");
            }
        }
    }
}
