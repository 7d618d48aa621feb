//! Timers the transports share.

use std::num::NonZeroU64;

use tokio::time::Instant;

/// Sleeps until `at`, or for ever when there is no `at`: a deadline that may
/// not exist, as one `select!` branch.
pub async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A point in time in 8 bytes rather than an `Instant`'s 16: whole
/// milliseconds since the first one this process made. A connection keeps
/// several, idle or not, so an `Option<Ms>` is 8 bytes too (kept as one
/// more than the milliseconds, never zero). Converting an `Instant` rounds
/// it down, and a `Ms` made from `ms.instant()` is `ms` again, so deadlines
/// kept as `Ms` and the timer set from them agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ms(NonZeroU64);

impl Ms {
    /// The first instant this process made a `Ms` (or an alarm) from.
    pub(crate) fn base() -> Instant {
        static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *BASE.get_or_init(Instant::now)
    }

    fn from_millis(millis: u64) -> Ms {
        Ms(NonZeroU64::MIN.saturating_add(millis.min(u64::MAX - 1)))
    }

    fn millis(self) -> u64 {
        self.0.get() - 1
    }

    /// `at`, to the millisecond below.
    pub fn at(at: Instant) -> Ms {
        Ms::from_millis(u64::try_from(at.saturating_duration_since(Ms::base()).as_millis()).unwrap_or(u64::MAX))
    }

    pub fn now() -> Ms {
        Ms::at(Instant::now())
    }

    pub fn instant(self) -> Instant {
        Ms::base() + std::time::Duration::from_millis(self.millis())
    }

    /// `self` less `by`, if that is not before the first `Ms`.
    pub fn checked_sub(self, by: std::time::Duration) -> Option<Ms> {
        self.millis().checked_sub(u64::try_from(by.as_millis()).ok()?).map(Ms::from_millis)
    }

    /// How long after `earlier` this is; zero if it is not after.
    pub fn since(self, earlier: Ms) -> std::time::Duration {
        std::time::Duration::from_millis(self.millis().saturating_sub(earlier.millis()))
    }
}

impl std::ops::Add<std::time::Duration> for Ms {
    type Output = Ms;

    fn add(self, by: std::time::Duration) -> Ms {
        Ms::from_millis(self.millis().saturating_add(u64::try_from(by.as_millis()).unwrap_or(u64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_instant_is_kept_to_the_millisecond_below_and_comes_back_the_same() {
        let start = Ms::now().instant();
        let later = start + Duration::from_micros(2_999);
        assert_eq!(Ms::at(later), Ms::at(start) + Duration::from_millis(2));
        let ms = Ms::at(later);
        assert_eq!(Ms::at(ms.instant()), ms);
        assert!(ms.instant() <= later);
        assert_eq!(ms.since(Ms::at(start)), Duration::from_millis(2));
        assert_eq!(Ms::at(start).since(ms), Duration::ZERO);
        assert_eq!((ms + Duration::from_secs(1)).checked_sub(Duration::from_secs(1)), Some(ms));
        assert_eq!(Ms::at(start).checked_sub(Duration::from_secs(1 << 40)), None);
        assert_eq!(std::mem::size_of::<Option<Ms>>(), 8);
    }
}
