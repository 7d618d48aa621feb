//! Names people choose: chat names now, MUC nicks next, under one rule, the
//! PRECIS Nickname profile (RFC 8266). Enforcement refuses what could fake
//! another name or another line — control characters (NUL, BEL, ESC, line
//! breaks), default-ignorable characters such as zero-width spaces and the
//! right-to-left override — trims and collapses spaces, and applies NFKC,
//! so `ａｌｉｃｅ` becomes `alice`. Two names are the same name when their
//! comparison forms (enforced, then lower-cased, then NFKC) are equal, so
//! `Alice` and `alice` cannot both be in one room.

use std::sync::Arc;

use precis_core::profile::{PrecisFastInvocation, Rules};
use precis_profiles::Nickname as Profile;

/// Longest name, in bytes of its enforced form.
pub const MAX_LEN: usize = 64;

/// A name that follows RFC 8266: what is shown, and what is compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nickname {
    /// The enforced form, shown to others.
    pub shown: Arc<str>,
    /// The comparison form: equal keys are the same name.
    pub key: Arc<str>,
}

/// Why a name was refused, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NicknameError {
    #[error("must not be empty")]
    Empty,
    #[error("must be at most {MAX_LEN} bytes")]
    TooLong,
    #[error("holds a character names may not use (controls, invisible or direction-changing characters)")]
    Disallowed,
}

impl Nickname {
    /// Enforces the profile on `text`.
    pub fn parse(text: &str) -> Result<Nickname, NicknameError> {
        if text.is_empty() {
            return Err(NicknameError::Empty);
        }
        // Checked before enforcement too, so a huge input costs nothing.
        if text.len() > MAX_LEN * 4 {
            return Err(NicknameError::TooLong);
        }
        let shown = Profile::enforce(text).map_err(|e| match e {
            precis_core::Error::Invalid if text.trim().is_empty() => NicknameError::Empty,
            _ => NicknameError::Disallowed,
        })?;
        if shown.len() > MAX_LEN {
            return Err(NicknameError::TooLong);
        }
        let profile = Profile::new();
        let key = profile
            .case_mapping_rule(shown.as_ref())
            .and_then(|lower| profile.normalization_rule(lower))
            .map_err(|_| NicknameError::Disallowed)?;
        let shown: Arc<str> = Arc::from(shown.as_ref());
        // A name already in its comparison form (most are) is held once.
        let key = if *key == *shown { shown.clone() } else { Arc::from(key.as_ref()) };
        Ok(Nickname { key, shown })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_unchanged() {
        let n = Nickname::parse("Alice Smith").unwrap();
        assert_eq!(&*n.shown, "Alice Smith");
        assert_eq!(&*n.key, "alice smith");
        assert_eq!(&*Nickname::parse("Zoë 😀").unwrap().shown, "Zoë 😀");
    }

    #[test]
    fn names_that_would_fake_another_are_refused() {
        for bad in [
            "bob\nmallory: hi",
            "nul\0",
            "bell\u{7}",
            "\u{1b}[31mred",
            "evil\u{202e}txt.exe",
            "zero\u{200b}width",
            "tab\there",
        ] {
            assert_eq!(Nickname::parse(bad), Err(NicknameError::Disallowed), "{bad:?}");
        }
        assert_eq!(Nickname::parse(""), Err(NicknameError::Empty));
        assert_eq!(Nickname::parse("   "), Err(NicknameError::Empty));
        assert_eq!(Nickname::parse(&"x".repeat(MAX_LEN + 1)), Err(NicknameError::TooLong));
        assert!(Nickname::parse(&"x".repeat(MAX_LEN)).is_ok());
    }

    #[test]
    fn the_same_name_in_other_clothes_has_the_same_key() {
        let alice = Nickname::parse("alice").unwrap();
        for same in ["ａｌｉｃｅ", "Alice", "ALICE", "  alice  "] {
            assert_eq!(Nickname::parse(same).unwrap().key, alice.key, "{same:?}");
        }
        assert_eq!(&*Nickname::parse("ａｌｉｃｅ").unwrap().shown, "alice");
        assert_eq!(&*Nickname::parse("a   b").unwrap().shown, "a b");
        assert_ne!(Nickname::parse("alice2").unwrap().key, alice.key);
    }
}
