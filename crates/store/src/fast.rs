//! FAST tokens (XEP-0484): what lets a client log in again in one round
//! trip without its password. A token itself is never kept, only what
//! checks it: for a hashed-token mechanism without channel binding
//! (HT-SHA-256-NONE) the client's proof is the same at every login, so the
//! store keeps a hash of that proof and the answer the server gives back.
//! A database that leaks gives nobody a way to log in.

use async_trait::async_trait;

use crate::Result;

/// One token, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastToken {
    /// The client it was given to: its SASL2 user-agent id.
    pub agent: String,
    /// The mechanism it was given for, the only one it works with.
    pub mechanism: String,
    /// SHA-256 of the proof the client sends with it.
    pub proof: Vec<u8>,
    /// What the server answers a login with it (the mechanism's
    /// additional data).
    pub answer: Vec<u8>,
    /// When it stops working, in seconds since the Unix epoch.
    pub expires: i64,
    /// What the account's keys were when it was given (a hash of them): a
    /// token works only while they are the same, so that a new password, or
    /// a new account under the name, ends it whoever kept it.
    pub keys: Vec<u8>,
    /// The highest count a login with it sent in TLS early data carried
    /// (XEP-0484 §4); 0 before any.
    pub early_count: i64,
}

/// Tokens an account's one client keeps at most: the one it logs in with
/// and the newer one it was given, kept until it has used that one
/// (XEP-0484 §5: a client that missed the newer one can still log in).
pub const PER_CLIENT: usize = 2;

#[async_trait]
pub trait FastTokenStore {
    /// Keeps `token` for `account`. Of the same client's tokens, the
    /// [`PER_CLIENT`] newest stay; of the account's, those expired by
    /// `now` go, and past `limit` those expiring first. Kept once this
    /// returns.
    async fn keep_token(&self, account: &str, token: &FastToken, now: i64, limit: usize) -> Result<()>;

    /// `account`'s tokens, expired ones included.
    async fn tokens(&self, account: &str) -> Result<Vec<FastToken>>;

    /// Forgets the tokens `account` gave `agent` that expire before
    /// `before`: older than the one just used, or, with `i64::MAX`, all.
    async fn forget_tokens(&self, account: &str, agent: &str, before: i64) -> Result<()>;

    /// Raises the early-data count of `account`'s token whose proof hashes
    /// to `proof` to `count`, if `count` is higher than the one kept, in one
    /// step however many logins race: whether it was raised (false for a
    /// count already taken, a replay, or a token gone).
    async fn raise_early_count(&self, account: &str, proof: &[u8], count: i64) -> Result<bool>;
}

/// The proofs of the tokens to forget once `kept` (an account's, the one
/// just kept for `agent` among them) is pruned as
/// [`FastTokenStore::keep_token`] says: one rule for every store.
pub(crate) fn to_forget(kept: &[FastToken], agent: &str, now: i64, limit: usize) -> Vec<Vec<u8>> {
    let mut live: Vec<&FastToken> = kept.iter().filter(|t| t.expires > now).collect();
    // Newest first, so that what is past a bound is the oldest.
    live.sort_by(|a, b| b.expires.cmp(&a.expires).then_with(|| a.proof.cmp(&b.proof)));
    let mut of_agent = 0;
    live.retain(|t| {
        if t.agent != agent {
            return true;
        }
        of_agent += 1;
        of_agent <= PER_CLIENT
    });
    live.truncate(limit);
    kept.iter().filter(|t| !live.iter().any(|l| l.proof == t.proof)).map(|t| t.proof.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(agent: &str, n: u8, expires: i64) -> FastToken {
        FastToken { agent: agent.into(), mechanism: "HT-SHA-256-NONE".into(), proof: vec![n], answer: vec![n], expires, keys: vec![], early_count: 0 }
    }

    #[test]
    fn a_client_keeps_its_two_newest_and_an_account_its_limit() {
        let kept = [token("a", 1, 10), token("a", 2, 20), token("a", 3, 30), token("b", 4, 5), token("b", 5, 25), token("c", 6, 40)];
        // a's oldest goes; b's first has expired at 6.
        assert_eq!(to_forget(&kept, "a", 6, 10), [vec![1], vec![4]]);
        // At most three: c's, a's newest, b's.
        assert_eq!(to_forget(&kept, "a", 6, 3), [vec![1], vec![2], vec![4]]);
        assert!(to_forget(&kept, "c", 0, 10).is_empty(), "c has one; nothing has expired");
    }
}
