//! Server Dialback (XEP-0220): how a server whose certificate does not
//! vouch for its domain may still be let in, where the configuration
//! allows it, by asking that domain's own server (found as any server of
//! the domain is: route or DNS) whether it sent the key it gave. Keys are
//! derived from a secret as XEP-0185 says, so this server checks the keys
//! it gave out without remembering them.

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Which domains may authenticate with dialback (`--xmpp-s2s-dialback`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialbackPolicy {
    /// None: a server must show a certificate that vouches for its domain.
    Off,
    /// Any domain.
    Any,
    /// These domains.
    Domains(HashSet<String>),
}

impl DialbackPolicy {
    pub fn allows(&self, domain: &str) -> bool {
        match self {
            DialbackPolicy::Off => false,
            DialbackPolicy::Any => true,
            DialbackPolicy::Domains(domains) => domains.contains(domain),
        }
    }
}

impl std::str::FromStr for DialbackPolicy {
    type Err = String;

    /// `off`, `*` for any domain, or domains separated by commas.
    fn from_str(text: &str) -> Result<DialbackPolicy, String> {
        match text.trim() {
            "off" | "" => Ok(DialbackPolicy::Off),
            "*" => Ok(DialbackPolicy::Any),
            list => Ok(DialbackPolicy::Domains(list.split(',').map(|d| d.trim().to_ascii_lowercase()).filter(|d| !d.is_empty()).collect())),
        }
    }
}

/// The keys this server gives out and checks.
#[derive(Clone)]
pub struct Keys {
    /// The secret's SHA-256, in hex: the HMAC key (XEP-0185 §3).
    key: String,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys")
    }
}

impl Keys {
    pub fn new(secret: &str) -> Keys {
        Keys { key: hex(&Sha256::digest(secret.as_bytes())) }
    }

    /// The key this server, as `originating`, gives `receiving` on the
    /// stream `id` that `receiving` named.
    pub fn key(&self, receiving: &str, originating: &str, id: &str) -> String {
        // HMAC takes a key of any length.
        let mut mac = Hmac::<Sha256>::new_from_slice(self.key.as_bytes()).unwrap_or_else(|_| unreachable!());
        mac.update(format!("{receiving} {originating} {id}").as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// Whether `key` is the one this server gave.
    pub fn check(&self, receiving: &str, originating: &str, id: &str, key: &str) -> bool {
        self.key(receiving, originating, id).as_bytes().ct_eq(key.trim().as_bytes()).into()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_xep_0185_and_check_only_themselves() {
        // As Python's hashlib and hmac compute it for XEP-0185's secret and names.
        let keys = Keys::new("s3cr3tf0rd14lb4ck");
        assert_eq!(keys.key, "a7136eb1f46c9ef18c5e78c36ca257067c69b3d518285f0b18a96c33beae9acc");
        let key = keys.key("example.net", "example.org", "D60000229F");
        assert_eq!(key, "787d747fddd82406a36c193fd1437027b163c5f9f787a2b77c30d15409c34aa3");
        assert!(keys.check("example.net", "example.org", "D60000229F", &key));
        assert!(!keys.check("example.net", "example.org", "D60000229E", &key));
        assert!(!Keys::new("another").check("example.net", "example.org", "D60000229F", &key));
        assert!(!keys.check("example.net", "example.org", "D60000229F", ""));
    }

    #[test]
    fn the_policy_reads_off_any_and_lists() {
        assert_eq!("off".parse(), Ok(DialbackPolicy::Off));
        assert!("*".parse::<DialbackPolicy>().unwrap().allows("x.test"));
        let some: DialbackPolicy = "a.test, B.test".parse().unwrap();
        assert!(some.allows("a.test") && some.allows("b.test") && !some.allows("c.test"));
    }
}
