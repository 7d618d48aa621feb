//! Jabber IDs (RFC 7622): `local@domain/resource`, each part in the form
//! RFC 7622 §3 makes canonical, so that two JIDs are the same address
//! exactly when they are equal. The local part follows PRECIS's
//! UsernameCaseMapped profile (RFC 8265: `Alice` and `alice` are one
//! account), the resource the OpaqueString profile (kept as written, so
//! MUC nicks keep their case), the domain is lower-cased.
//!
//! Most JIDs on the wire are printable ASCII, for which each profile is
//! plain (the local part lower-cased, the resource as is); those take a fast
//! path here, since every stanza's `to` is parsed, and the rest go through
//! the `precis-profiles` crate.

use std::fmt;

use precis_core::profile::PrecisFastInvocation;
use precis_profiles::{OpaqueString, UsernameCaseMapped};

/// A JID split into its canonical parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Jid {
    pub local: Option<String>,
    pub domain: String,
    pub resource: Option<String>,
}

/// Longest part of a JID, in bytes (RFC 7622 §3.1).
const MAX_PART: usize = 1023;

/// What a local part may not hold even when PRECIS allows it (RFC 7622 §3.3.1).
const NOT_IN_LOCAL: [char; 8] = ['"', '&', '\'', '/', ':', '<', '>', '@'];

impl Jid {
    /// Parses a JID into its canonical form; `None` if it is empty,
    /// malformed, or a part breaks its profile.
    pub fn parse(text: &str) -> Option<Jid> {
        let (bare, resource) = match text.split_once('/') {
            Some((bare, resource)) => (bare, Some(resource)),
            None => (text, None),
        };
        let (local, domain) = match bare.split_once('@') {
            Some((local, domain)) => (Some(local), domain),
            None => (None, bare),
        };
        let local = match local {
            Some(local) => Some(localpart(local)?),
            None => None,
        };
        let resource = match resource {
            Some(resource) => Some(resourcepart(resource)?),
            None => None,
        };
        Some(Jid { local, domain: domainpart(domain)?, resource })
    }

    /// The JID without its resource.
    pub fn bare(&self) -> Jid {
        Jid { resource: None, ..self.clone() }
    }

    /// The JID with `resource`.
    pub fn with_resource(&self, resource: &str) -> Jid {
        Jid { resource: Some(resource.to_owned()), ..self.clone() }
    }
}

/// A local part in UsernameCaseMapped's form.
pub fn localpart(text: &str) -> Option<String> {
    let local = if text.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        text.to_ascii_lowercase()
    } else {
        UsernameCaseMapped::enforce(text).ok()?.into_owned()
    };
    (!local.is_empty() && local.len() <= MAX_PART && !local.contains(NOT_IN_LOCAL)).then_some(local)
}

/// A resource in OpaqueString's form.
pub fn resourcepart(text: &str) -> Option<String> {
    let resource = if text.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        text.to_owned()
    } else {
        OpaqueString::enforce(text).ok()?.into_owned()
    };
    (!resource.is_empty() && resource.len() <= MAX_PART).then_some(resource)
}

/// A domain, lower-cased, without the trailing dot of a fully qualified name.
fn domainpart(text: &str) -> Option<String> {
    let domain = text.strip_suffix('.').unwrap_or(text).to_lowercase();
    let bad = domain.is_empty()
        || domain.len() > MAX_PART
        || domain.chars().any(|c| c.is_control() || c.is_whitespace() || NOT_IN_LOCAL.contains(&c));
    (!bad).then_some(domain)
}

impl fmt::Display for Jid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(local) = &self.local {
            write!(f, "{local}@")?;
        }
        f.write_str(&self.domain)?;
        if let Some(resource) = &self.resource {
            write!(f, "/{resource}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_and_bad_ones_are_refused() {
        let jid = Jid::parse("lobby@conference.LOCALHOST/bob smith").unwrap();
        assert_eq!((jid.local.as_deref(), jid.domain.as_str(), jid.resource.as_deref()), (Some("lobby"), "conference.localhost", Some("bob smith")));
        assert_eq!(jid.to_string(), "lobby@conference.localhost/bob smith");
        assert_eq!(jid.bare().to_string(), "lobby@conference.localhost");
        assert_eq!(Jid::parse("localhost").unwrap().to_string(), "localhost");
        for bad in ["", "@x", "a@", "a@x/", "a<b@x", "a@x\u{7}", "a b@x", "a@x/\u{0}", "a@b@c", "a@b c"] {
            assert_eq!(Jid::parse(bad), None, "{bad:?}");
        }
    }

    /// RFC 7622 §3: the local part is case-mapped, the resource is not.
    #[test]
    fn the_local_part_is_case_folded_and_the_resource_kept() {
        let jid = Jid::parse("Alice@Example.COM./Phone").unwrap();
        assert_eq!(jid.to_string(), "alice@example.com/Phone");
        assert_eq!(Jid::parse("alice@example.com/Phone"), Some(jid));
        // Beyond ASCII the profiles themselves: width-mapped and case-mapped.
        assert_eq!(Jid::parse("ÅNGSTRÖM@x").unwrap().local.as_deref(), Some("ångström"));
        assert_eq!(Jid::parse("ＡＢＣ@x").unwrap().local.as_deref(), Some("abc"));
        assert_eq!(Jid::parse("juliet@x/ｂａｌｃｏｎｙ").unwrap().resource.as_deref(), Some("ｂａｌｃｏｎｙ"));
        // What PRECIS forbids: a zero-width joiner in a local part.
        assert_eq!(Jid::parse("al\u{200d}ice@x"), None);
    }

    /// The fast path for ASCII gives what the profiles give.
    #[test]
    fn the_ascii_path_agrees_with_the_profiles() {
        for byte in 0x21u8..=0x7e {
            let text = format!("a{}b", byte as char);
            let slow = UsernameCaseMapped::enforce(&text).ok().map(|s| s.into_owned()).filter(|s| !s.contains(NOT_IN_LOCAL));
            assert_eq!(localpart(&text), slow, "{text:?}");
        }
        for byte in 0x20u8..=0x7e {
            let text = format!("a{}b", byte as char);
            assert_eq!(resourcepart(&text), OpaqueString::enforce(&text).ok().map(|s| s.into_owned()), "{text:?}");
        }
    }
}
