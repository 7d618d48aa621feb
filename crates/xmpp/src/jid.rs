//! Jabber IDs (RFC 7622), as far as routing needs them: `local@domain/resource`.

use std::fmt;

/// A JID split into its parts. The parts are kept as written; the MUC
/// nick (a room JID's resource) is checked by the room's name rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Jid {
    pub local: Option<String>,
    pub domain: String,
    pub resource: Option<String>,
}

/// Longest part of a JID, in bytes (RFC 7622 §3.1).
const MAX_PART: usize = 1023;

impl Jid {
    /// Parses a JID; `None` if it is empty or malformed.
    pub fn parse(text: &str) -> Option<Jid> {
        let (bare, resource) = match text.split_once('/') {
            Some((bare, resource)) if !resource.is_empty() => (bare, Some(resource.to_owned())),
            Some(_) => return None,
            None => (text, None),
        };
        let (local, domain) = match bare.split_once('@') {
            Some((local, domain)) if !local.is_empty() => (Some(local.to_owned()), domain),
            Some(_) => return None,
            None => (None, bare),
        };
        let bad = |part: &str| part.len() > MAX_PART || part.chars().any(|c| c.is_control());
        if domain.is_empty() || bad(domain) || local.as_deref().is_some_and(|l| bad(l) || l.contains(['"', '&', '\'', ':', '<', '>', '/']))
            || resource.as_deref().is_some_and(bad)
        {
            return None;
        }
        Some(Jid { local, domain: domain.to_ascii_lowercase(), resource })
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
        for bad in ["", "@x", "a@", "a@x/", "a<b@x", "a@x\u{7}"] {
            assert_eq!(Jid::parse(bad), None, "{bad:?}");
        }
    }
}
