//! FAST (XEP-0484): tokens that let a client log in again in one round
//! trip, with the HT-SHA-256-NONE mechanism (draft-schmaus-kitten-sasl-ht,
//! revision 09, the one XEP-0484 names and clients speak): the client sends
//! `authcid NUL HMAC-SHA-256(token, "Initiator")` and the server answers
//! `HMAC-SHA-256(token, "Responder")`, the token's UTF-8 bytes as the key.
//!
//! Without channel binding the client's proof is the same at every login,
//! so whoever reads it can log in: the mechanism is offered only where
//! PLAIN is (over TLS, or where the configuration allows the clear). The
//! store keeps the proof's SHA-256 and the answer, never the token.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use sha2::{Digest, Sha256};
use store::{FastToken, Store};
use subtle::ConstantTimeEq;
use wire::xmpp::jid::localpart;

/// The longest a token may work (`--xmpp-fast-token-lifetime`'s bound).
pub const MAX_LIFETIME: Duration = Duration::from_secs(10 * 365 * 86_400);

/// The one FAST mechanism offered.
pub const MECHANISM: &str = "HT-SHA-256-NONE";

/// What FAST may give and keep (`--xmpp-fast-tokens`, `--xmpp-fast-token-lifetime`).
#[derive(Debug, Clone)]
pub struct Fast {
    store: Arc<dyn Store>,
    /// How long a token works.
    pub lifetime: Duration,
    /// Tokens one account keeps at most.
    pub limit: usize,
}

/// A token given to a client: what it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub token: String,
    /// When it stops working, as XEP-0082 writes a time.
    pub expiry: String,
}

/// A login with a token that worked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub account: String,
    /// The mechanism's answer (`<additional-data/>`).
    pub answer: Vec<u8>,
    /// When the token used expires, in seconds since the epoch.
    pub expires: i64,
    /// The fingerprint of the account's keys it was given under.
    pub keys: Vec<u8>,
    /// The hash of its proof, which names it in the store.
    pub proof: Vec<u8>,
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    crate::accounts::Hash::Sha256.hmac(key, data)
}

fn seconds(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Fast {
    pub fn new(store: Arc<dyn Store>, lifetime: Duration, limit: usize) -> Fast {
        // Past 10 years a time cannot be written as XEP-0082 asks for long.
        Fast { store, lifetime: lifetime.min(MAX_LIFETIME), limit }
    }

    /// Makes a token for `account`'s client `agent`, bound to the keys
    /// whose fingerprint is `keys`, and keeps it; `Err` when the store cannot.
    pub async fn issue(&self, account: &str, agent: &str, keys: &[u8]) -> Result<Issued, store::Error> {
        // 192 bits from the operating system's generator (the draft asks 128).
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
        let now = SystemTime::now();
        let expires = now + self.lifetime;
        let kept = FastToken {
            agent: agent.to_owned(),
            mechanism: MECHANISM.to_owned(),
            proof: Sha256::digest(hmac(token.as_bytes(), b"Initiator")).to_vec(),
            answer: hmac(token.as_bytes(), b"Responder"),
            expires: seconds(expires),
            keys: keys.to_vec(),
            early_count: 0,
        };
        self.store.keep_token(account, &kept, seconds(now), self.limit).await?;
        Ok(Issued { token, expiry: humantime::format_rfc3339_seconds(expires).to_string() })
    }

    /// Checks the initial response of a login with a token by the client
    /// `agent`: the account and the answer, or the SASL condition it fails
    /// with (RFC 6120 §6.5).
    pub async fn check(&self, data: &[u8], agent: &str) -> Result<Checked, &'static str> {
        let Some(at) = data.iter().position(|&b| b == 0) else { return Err("malformed-request") };
        let (name, proof) = (&data[..at], &data[at + 1..]);
        let Some(account) = std::str::from_utf8(name).ok().and_then(localpart) else { return Err("not-authorized") };
        let tokens = self.store.tokens(&account).await.map_err(|_| "temporary-auth-failure")?;
        let hashed = Sha256::digest(proof);
        let found = tokens.into_iter().find(|t| t.agent == agent && t.mechanism == MECHANISM && bool::from(t.proof.ct_eq(&hashed)));
        match found {
            None => Err("not-authorized"),
            Some(token) if token.expires <= seconds(SystemTime::now()) => Err("credentials-expired"),
            Some(token) => Ok(Checked { account, answer: token.answer, expires: token.expires, keys: token.keys, proof: token.proof }),
        }
    }

    /// A login with the token `checked` was sent in TLS early data with
    /// `count` (XEP-0484 §4): whether it is taken, its count higher than any
    /// taken before with that token. Early data can be replayed by whoever
    /// saw it; a replay carries a count already taken.
    pub async fn early_count(&self, checked: &Checked, count: i64) -> Result<bool, store::Error> {
        self.store.raise_early_count(&checked.account, &checked.proof, count).await
    }

    /// A login with the token that expires at `expires` worked: the
    /// client's older ones go (it has the newer); `invalidate` asks that
    /// this one go too. Whether the client is due a new one (half its
    /// token's life has gone).
    pub async fn used(&self, account: &str, agent: &str, expires: i64, invalidate: bool) -> Result<bool, store::Error> {
        let before = if invalidate { i64::MAX } else { expires };
        self.store.forget_tokens(account, agent, before).await?;
        let half = i64::try_from(self.lifetime.as_secs() / 2).unwrap_or(i64::MAX);
        Ok(!invalidate && expires - seconds(SystemTime::now()) < half)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's side of HT-SHA-256-NONE.
    fn proof(name: &str, token: &str) -> Vec<u8> {
        [name.as_bytes(), b"\0", &hmac(token.as_bytes(), b"Initiator")].concat()
    }

    #[tokio::test]
    async fn a_token_logs_its_client_in_and_nothing_else_does() {
        let fast = Fast::new(Arc::new(store::MemoryStore::default()), Duration::from_secs(3600), 4);
        let issued = fast.issue("alice", "phone", b"keys").await.unwrap();
        assert_eq!(issued.token.len(), 32);
        assert!(issued.expiry.ends_with('Z') && issued.expiry.len() == 20, "{}", issued.expiry);
        let checked = fast.check(&proof("Alice", &issued.token), "phone").await.unwrap();
        assert_eq!((checked.account.as_str(), &checked.answer), ("alice", &hmac(issued.token.as_bytes(), b"Responder")));
        assert_eq!(fast.check(&proof("alice", &issued.token), "laptop").await, Err("not-authorized"), "another client's");
        assert_eq!(fast.check(&proof("alice", "guessed"), "phone").await, Err("not-authorized"));
        assert_eq!(fast.check(&proof("bob", &issued.token), "phone").await, Err("not-authorized"));
        assert_eq!(fast.check(b"no separator", "phone").await, Err("malformed-request"));
        assert!(fast.early_count(&checked, 1).await.unwrap());
        assert!(!fast.early_count(&checked, 1).await.unwrap(), "a replay");
        assert!(!fast.used("alice", "phone", checked.expires, false).await.unwrap(), "not due in its first half");
        assert!(fast.used("alice", "phone", checked.expires, true).await.is_ok());
        assert_eq!(fast.check(&proof("alice", &issued.token), "phone").await, Err("not-authorized"), "invalidated");

        // A token kept until a second after the epoch.
        let old = FastToken { agent: "phone".into(), mechanism: MECHANISM.into(), proof: Sha256::digest(hmac(b"old", b"Initiator")).to_vec(), answer: Vec::new(), expires: 1, keys: Vec::new(), early_count: 0 };
        fast.store.keep_token("alice", &old, 0, 4).await.unwrap();
        assert_eq!(fast.check(&proof("alice", "old"), "phone").await, Err("credentials-expired"));
    }
}
