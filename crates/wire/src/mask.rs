//! Wildcard masks, as IRC's `WHO` and `WHOWAS` and the server API's room
//! listing read them: `*` is any run of bytes, `?` any one byte.

/// How the bytes of a mask and a text are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Sensitive,
    /// ASCII letters without case (IRC's nicknames).
    AsciiInsensitive,
}

/// Whether `text` matches `mask`. Greedy, going back only to the last `*`:
/// at most the product of the lengths, whatever the mask (a peer chooses it).
pub fn matches(mask: &str, text: &str, case: Case) -> bool {
    let (mask, text) = (mask.as_bytes(), text.as_bytes());
    let same = |a: u8, b: u8| match case {
        Case::Sensitive => a == b,
        Case::AsciiInsensitive => a.eq_ignore_ascii_case(&b),
    };
    let (mut m, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match mask.get(m) {
            Some(b'*') => {
                star = Some((m, t));
                m += 1;
            }
            Some(&c) if c == b'?' || same(c, text[t]) => {
                m += 1;
                t += 1;
            }
            _ => match star {
                Some((sm, st)) => {
                    star = Some((sm, st + 1));
                    m = sm + 1;
                    t = st + 1;
                }
                None => return false,
            },
        }
    }
    mask[m..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks_match_with_or_without_case() {
        for (mask, text, case, expected) in [
            ("*", "lobby", Case::Sensitive, true),
            ("lob*", "lobby", Case::Sensitive, true),
            ("lob*", "lob", Case::Sensitive, true),
            ("*by", "lobby", Case::Sensitive, true),
            ("l?bby", "lobby", Case::Sensitive, true),
            ("l?bby", "lbby", Case::Sensitive, false),
            ("a*b*c", "axxbyyc", Case::Sensitive, true),
            ("a*b*c", "axxbyy", Case::Sensitive, false),
            ("lobby", "lobby2", Case::Sensitive, false),
            ("", "", Case::Sensitive, true),
            ("", "a", Case::Sensitive, false),
            ("Lob*", "lobby", Case::Sensitive, false),
            ("coolni*", "coolNick", Case::AsciiInsensitive, true),
            ("c?ol*k", "coolNick", Case::AsciiInsensitive, true),
            ("cool", "coolNick", Case::AsciiInsensitive, false),
            ("*x", "coolNick", Case::AsciiInsensitive, false),
            ("**a*", "bab", Case::AsciiInsensitive, true),
        ] {
            assert_eq!(matches(mask, text, case), expected, "{mask:?} against {text:?} ({case:?})");
        }
        // A mask made to backtrack costs the product of the lengths at most.
        let hostile = "*?".repeat(200) + "z";
        assert!(!matches(&hostile, &"a".repeat(64), Case::AsciiInsensitive));
    }
}
