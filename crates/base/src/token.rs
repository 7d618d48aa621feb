//! Connection tokens: when the server is given a key, every client must
//! present a JWT signed with it to reach an app, as a `token` query
//! parameter (what browsers and sockjs-client can send) or an
//! `Authorization: Bearer` header. This is Centrifugo's model of connection
//! tokens: the application's backend signs them, the real-time server only
//! verifies. The token's subject (`sub`) is the user's chat name, so nobody
//! else can take that name; an optional `rooms` claim lists the rooms it may
//! join. `exp` is required, and a connection is closed (1008) when it passes.
//!
//! Keys: HS256 with a shared secret, or RS256 / ES256 (P-256) with a public
//! key in PEM, chosen by the key's type. Verification is jsonwebtoken's.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hub::Close;
use hyper::Request;
use hyper::header::{self, HeaderValue};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::time::Instant;

use crate::ConfigError as Error;

/// What verifies connection tokens.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenKey {
    /// HS256 with a shared secret.
    Secret(String),
    /// RS256 or ES256 with the public key in this PEM file.
    PublicKey(std::path::PathBuf),
}

/// Clock skew tolerated on `exp` and `nbf`, in seconds.
const LEEWAY_SECONDS: u64 = 5;

/// The close for a client whose token has expired.
pub const EXPIRED: Close = Close { code: 1008, reason: Cow::Borrowed("token expired") };

/// Who a verified token says the client is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The subject: the only chat name this client may use.
    pub name: String,
    /// The rooms it may join; `None` for any.
    pub rooms: Option<Vec<String>>,
    /// When the token expires, on tokio's clock.
    pub expires: Instant,
    /// The `admin` claim: it may call the server API.
    pub admin: bool,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    exp: u64,
    #[serde(default)]
    rooms: Option<Vec<String>>,
    #[serde(default)]
    admin: bool,
}

/// Why a client's token was refused, as the reason it is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("a token is required: send it as ?token=<JWT> or an Authorization: Bearer header")]
    Missing,
    #[error("the token has expired")]
    Expired,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token is signed with an algorithm this server does not accept")]
    WrongAlgorithm,
    #[error("the token is malformed: {0}")]
    Malformed(String),
}

/// Checks tokens against the configured key.
#[derive(Debug)]
pub struct Verifier {
    key: DecodingKey,
    validation: Validation,
}

impl Verifier {
    pub fn new(key: &TokenKey) -> Result<Verifier, Error> {
        let (key, algorithm) = match key {
            TokenKey::Secret(secret) => {
                if secret.len() < 16 {
                    return Err(Error::new("--token-secret must be at least 16 bytes"));
                }
                (DecodingKey::from_secret(secret.as_bytes()), Algorithm::HS256)
            }
            TokenKey::PublicKey(path) => {
                let pem = std::fs::read(path)
                    .map_err(|e| Error::new(format!("cannot read the token public key {}: {e}", path.display())))?;
                if let Ok(key) = DecodingKey::from_rsa_pem(&pem) {
                    (key, Algorithm::RS256)
                } else if let Ok(key) = DecodingKey::from_ec_pem(&pem) {
                    (key, Algorithm::ES256)
                } else {
                    return Err(Error::new(format!(
                        "{} is neither an RSA nor an EC public key in PEM",
                        path.display()
                    )));
                }
            }
        };
        let mut validation = Validation::new(algorithm);
        validation.leeway = LEEWAY_SECONDS;
        validation.set_required_spec_claims(&["exp", "sub"]);
        Ok(Verifier { key, validation })
    }

    /// Verifies the token a request carries.
    pub fn verify_request<B>(&self, req: &Request<B>) -> Result<Arc<Identity>, TokenError> {
        let token = request_token(req).ok_or(TokenError::Missing)?;
        self.verify(&token).map(Arc::new)
    }

    /// Verifies one token.
    pub fn verify(&self, token: &str) -> Result<Identity, TokenError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.key, &self.validation).map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => TokenError::Expired,
            ErrorKind::InvalidSignature => TokenError::BadSignature,
            ErrorKind::InvalidAlgorithm => TokenError::WrongAlgorithm,
            ErrorKind::MissingRequiredClaim(claim) => TokenError::Malformed(format!("no {claim:?} claim")),
            ErrorKind::ImmatureSignature => TokenError::Malformed("not valid yet (nbf)".into()),
            _ => TokenError::Malformed(e.to_string()),
        })?;
        let Claims { sub, exp, rooms, admin } = data.claims;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        let left = Duration::from_secs((exp + LEEWAY_SECONDS).saturating_sub(now));
        Ok(Identity { name: sub, rooms, expires: Instant::now() + left, admin })
    }
}

/// The token in `?token=` or `Authorization: Bearer`, the query first.
fn request_token<B>(req: &Request<B>) -> Option<String> {
    let query = req.uri().query().unwrap_or("");
    if let Some((_, token)) = form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == "token") {
        return Some(token.into_owned());
    }
    let auth = req.headers().get(header::AUTHORIZATION).map(HeaderValue::to_str)?.ok()?;
    let (scheme, token) = auth.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};

    const SECRET: &str = "a test secret of enough bytes";

    fn token(claims: serde_json::Value, secret: &str) -> String {
        encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
    }

    #[tokio::test]
    async fn good_and_bad_tokens() {
        let v = Verifier::new(&TokenKey::Secret(SECRET.into())).unwrap();
        let good = token(serde_json::json!({"sub": "alice", "exp": now() + 60, "rooms": ["lobby"]}), SECRET);
        let id = v.verify(&good).unwrap();
        assert_eq!((id.name.as_str(), id.rooms.as_deref()), ("alice", Some(&["lobby".to_owned()][..])));
        let expired = token(serde_json::json!({"sub": "alice", "exp": now() - 120}), SECRET);
        assert_eq!(v.verify(&expired), Err(TokenError::Expired));
        let forged = token(serde_json::json!({"sub": "alice", "exp": now() + 60}), "another secret entirely");
        assert_eq!(v.verify(&forged), Err(TokenError::BadSignature));
        assert!(matches!(v.verify("not.a.jwt"), Err(TokenError::Malformed(_))));
        let no_exp = token(serde_json::json!({"sub": "alice"}), SECRET);
        assert!(matches!(v.verify(&no_exp), Err(TokenError::Malformed(m)) if m.contains("exp")));
    }

    #[test]
    fn the_token_comes_from_the_query_or_the_header() {
        let req = Request::get("/chat/websocket?a=1&token=abc%2Edef").body(()).unwrap();
        assert_eq!(request_token(&req).as_deref(), Some("abc.def"));
        let req = Request::get("/chat/websocket").header("authorization", "Bearer xyz").body(()).unwrap();
        assert_eq!(request_token(&req).as_deref(), Some("xyz"));
        let req = Request::get("/chat/websocket").header("authorization", "Basic xyz").body(()).unwrap();
        assert_eq!(request_token(&req), None);
    }

    #[test]
    fn short_secrets_are_refused() {
        assert!(Verifier::new(&TokenKey::Secret("short".into())).unwrap_err().to_string().contains("16 bytes"));
    }
}
