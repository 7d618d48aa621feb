//! `LIST`'s filters (`ELIST=MNU`): `LIST <conditions>`, comma-separated,
//! where `#chan*` names channels by mask (`M`; a channel any mask matches),
//! `!#chan*` leaves them out (`N`; one no such mask matches), and `>n`,
//! `<n` ask for more or fewer than `n` users (`U`). A channel is listed when
//! it meets every kind given. Conditions of other kinds (`C>`, `T<` …) are
//! not offered and are passed over.

use wire::mask::{Case, matches};

/// A `LIST`'s conditions.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Filter {
    masks: Vec<String>,
    not: Vec<String>,
    more_than: Option<usize>,
    fewer_than: Option<usize>,
}

impl Filter {
    /// The conditions of `LIST`'s first parameter (none: every channel).
    pub fn parse(conditions: Option<&str>) -> Filter {
        let mut filter = Filter::default();
        for condition in conditions.unwrap_or("").split(',').filter(|c| !c.is_empty()) {
            if let Some(n) = condition.strip_prefix('>').and_then(|n| n.parse().ok()) {
                filter.more_than = Some(filter.more_than.map_or(n, |m: usize| m.max(n)));
            } else if let Some(n) = condition.strip_prefix('<').and_then(|n| n.parse().ok()) {
                filter.fewer_than = Some(filter.fewer_than.map_or(n, |m: usize| m.min(n)));
            } else if let Some(mask) = condition.strip_prefix('!') {
                filter.not.push(mask.to_owned());
            } else if condition.starts_with(['#', '*', '?']) {
                filter.masks.push(condition.to_owned());
            }
        }
        filter
    }

    /// Whether `channel`, with `users` members, is listed.
    pub fn admits(&self, channel: &str, users: usize) -> bool {
        let matched = |mask: &String| matches(mask, channel, Case::AsciiInsensitive);
        (self.masks.is_empty() || self.masks.iter().any(matched))
            && !self.not.iter().any(matched)
            && self.more_than.is_none_or(|n| users > n)
            && self.fewer_than.is_none_or(|n| users < n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_channels_and_bangs_leave_them_out() {
        let listed = |conditions: &str| ["#chan1", "#chan2", "#other"].into_iter().filter(|c| Filter::parse(Some(conditions)).admits(c, 1)).collect::<Vec<_>>();
        assert_eq!(listed("*an1"), ["#chan1"]);
        assert_eq!(listed("#C*N2,#other"), ["#chan2", "#other"]);
        assert_eq!(listed("!#ch*"), ["#other"]);
        assert_eq!(listed("#ch*,!*2"), ["#chan1"]);
        assert_eq!(listed(""), ["#chan1", "#chan2", "#other"]);
        assert_eq!(listed("C>5,T<3"), ["#chan1", "#chan2", "#other"], "kinds not offered are passed over");
    }

    #[test]
    fn user_counts_are_bounds_either_side() {
        let users = |conditions: &str| (0..5).filter(|&n| Filter::parse(Some(conditions)).admits("#c", n)).collect::<Vec<_>>();
        assert_eq!(users(">1"), [2, 3, 4]);
        assert_eq!(users("<2"), [0, 1]);
        assert_eq!(users(">0,<4"), [1, 2, 3]);
        assert_eq!(users("<1,>2"), Vec::<usize>::new());
    }
}
