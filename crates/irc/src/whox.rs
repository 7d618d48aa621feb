//! `WHO` with a field list (IRCv3 WHOX): `WHO <mask> %<fields>[,<token>]`
//! answers `354` lines that hold only the fields asked for, always in the
//! order `t c u i h s n f d l a o r`, whatever order they were asked in;
//! `t` is the token (one to three digits) the client gave, so it can tell
//! its queries' answers apart, `a` the account (`0` for none), `r` the real
//! name, last.

use wire::irc::Line;

/// The fields, in the order every reply gives them.
const ORDER: &[u8] = b"tcuihsnfdlaor";

/// A `WHO` query's field list and token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// One bit per field of [`ORDER`] asked for.
    asked: u16,
    /// The token to echo in `t`: `0` when the client gave none that fits.
    token: String,
}

/// One member as a `354` line shows it.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The channel the query named, or `*`.
    pub channel: &'a str,
    pub user: &'a str,
    /// What the member's host and address are shown as.
    pub host: &'a str,
    pub server: &'a str,
    pub nick: &'a str,
    /// `H` or `G`, `*` for an operator, then its channel prefix.
    pub flags: &'a str,
    /// Seconds since the member last spoke.
    pub idle: u64,
    pub account: Option<&'a str>,
    pub realname: &'a str,
}

impl Fields {
    /// The field list of `WHO`'s second parameter, if it is one (it starts
    /// with `%`); letters not in [`ORDER`] are left out.
    pub fn parse(param: &str) -> Option<Fields> {
        let list = param.strip_prefix('%')?;
        let (letters, token) = list.split_once(',').unwrap_or((list, ""));
        let asked = letters.bytes().filter_map(|b| ORDER.iter().position(|&o| o == b)).fold(0, |bits, i| bits | 1 << i);
        let fits = (1..=3).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_digit());
        Some(Fields { asked, token: if fits { token.to_owned() } else { "0".to_owned() } })
    }

    fn has(&self, field: u8) -> bool {
        ORDER.iter().position(|&o| o == field).is_some_and(|i| self.asked & 1 << i != 0)
    }

    /// The `354` line for `row`, to `line` (the reply already addressed
    /// to the client who asked).
    pub fn line(&self, mut line: Line, row: &Row<'_>) -> String {
        let idle = row.idle.to_string();
        for &field in ORDER {
            if !self.has(field) {
                continue;
            }
            let value = match field {
                b't' => &self.token,
                b'c' => row.channel,
                b'u' => row.user,
                // Addresses are not shown: the conventional hidden one.
                b'i' => "255.255.255.255",
                b'h' => row.host,
                b's' => row.server,
                b'n' => row.nick,
                b'f' => row.flags,
                // One server: no hops.
                b'd' => "0",
                b'l' => &idle,
                b'a' => row.account.unwrap_or("0"),
                // No channel operator levels here.
                b'o' => "n/a",
                _ => return line.trailing(row.realname),
            };
            line = line.arg(value);
        }
        line.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row<'static> {
        Row {
            channel: "#chan",
            user: "~al",
            host: "irc.test",
            server: "irc.test",
            nick: "al",
            flags: "H@",
            idle: 7,
            account: None,
            realname: "Al Smith",
        }
    }

    fn reply() -> Line {
        Line::new(Some("irc.test"), "354").arg("me")
    }

    #[test]
    fn every_field_comes_in_one_order_whatever_the_order_asked() {
        let all = ":irc.test 354 me 123 #chan ~al 255.255.255.255 irc.test irc.test al H@ 0 7 0 n/a :Al Smith\r\n";
        assert_eq!(Fields::parse("%tcuihsnfdlaor,123").unwrap().line(reply(), &row()), all);
        assert_eq!(Fields::parse("%roaldfnshiuct,123").unwrap().line(reply(), &row()), all);
    }

    #[test]
    fn only_the_fields_asked_for_and_the_token_as_given() {
        assert_eq!(Fields::parse("%tn,321").unwrap().line(reply(), &row()), ":irc.test 354 me 321 al\r\n");
        let logged_in = Row { account: Some("alice"), ..row() };
        assert_eq!(Fields::parse("%na").unwrap().line(reply(), &logged_in), ":irc.test 354 me al alice\r\n");
        assert_eq!(Fields::parse("%na").unwrap().line(reply(), &row()), ":irc.test 354 me al 0\r\n");
        // A real name alone is still the trailing parameter.
        assert_eq!(Fields::parse("%r").unwrap().line(reply(), &row()), ":irc.test 354 me :Al Smith\r\n");
    }

    #[test]
    fn a_token_that_is_not_one_to_three_digits_is_zero_and_unknown_letters_are_skipped() {
        for list in ["%tn,1234", "%tn,ab", "%tn,", "%tn", "%tnxyz,x"] {
            assert_eq!(Fields::parse(list).unwrap().line(reply(), &row()), ":irc.test 354 me 0 al\r\n", "{list}");
        }
        assert_eq!(Fields::parse("o"), None, "not a field list");
        assert_eq!(Fields::parse("%").unwrap().line(reply(), &row()), ":irc.test 354 me\r\n");
    }
}
