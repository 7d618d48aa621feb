//! A token bucket: holds up to `burst` tokens and gains `rate` a second.
//! Taking more than it holds puts it in debt, and [`Bucket::take`] says how
//! long until the debt is paid, so a caller can wait instead of refusing.
//! The clock is tokio's, so tests drive it paused.

use std::time::Duration;

use tokio::time::Instant;

/// A token bucket; see the module docs.
#[derive(Debug, Clone)]
pub struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    /// A full bucket refilling at `rate` tokens a second, holding at most `burst`.
    pub fn new(rate: u32, burst: u32) -> Bucket {
        let burst = f64::from(burst.max(1));
        Bucket { rate: f64::from(rate.max(1)), burst, tokens: burst, last: Instant::now() }
    }

    /// A full bucket holding at most `count` tokens and gaining `count`
    /// each `period`: for rates slower than one a second.
    pub fn per(count: u32, period: Duration) -> Bucket {
        let count = f64::from(count.max(1));
        Bucket { rate: count / period.as_secs_f64().max(1e-9), burst: count, tokens: count, last: Instant::now() }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.saturating_duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + gained).min(self.burst);
        self.last = now;
    }

    /// Takes `cost` tokens, going into debt if there are not enough, and
    /// returns how long until the bucket is out of debt (zero if it is not).
    pub fn take(&mut self, cost: f64, now: Instant) -> Duration {
        self.refill(now);
        self.tokens -= cost;
        if self.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-self.tokens / self.rate) }
    }

    /// Takes one token if there is one; a refusal costs nothing.
    pub fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether there is a token to take now; looking takes nothing.
    pub fn has_one(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= 1.0
    }

    /// Whether the bucket is full, so forgetting it changes nothing.
    pub fn is_full(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_bucket_allows_its_burst_then_its_rate() {
        let mut bucket = Bucket::new(10, 5);
        let now = Instant::now();
        assert!((0..5).all(|_| bucket.try_take(now)));
        assert!(!bucket.try_take(now));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(bucket.try_take(Instant::now()));
        assert!(!bucket.try_take(Instant::now()));
        // A long pause refills only up to the burst.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!((0..10).filter(|_| bucket.try_take(Instant::now())).count(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn debt_is_paid_back_at_the_rate() {
        let mut bucket = Bucket::new(100, 100);
        let now = Instant::now();
        assert_eq!(bucket.take(100.0, now), Duration::ZERO);
        assert_eq!(bucket.take(50.0, now), Duration::from_millis(500));
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(bucket.take(0.0, Instant::now()), Duration::ZERO);
    }

}
