//! Latency recording: HdrHistogram everywhere (constant memory, 1 µs resolution,
//! three significant digits), summarised into the figures every output shows.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::result::round;

/// Highest trackable latency: one hour in µs; larger values are clamped, not lost.
const HIGHEST_US: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
#[derive(Clone)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Latency {
    pub fn new() -> Latency {
        let hist = Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("static bounds are valid");
        Latency { hist }
    }

    pub fn record(&mut self, us: u64) {
        self.hist.saturating_record(us.max(1));
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides, so `add` cannot fail.
        let _ = self.hist.add(&other.hist);
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn mean_us(&self) -> f64 {
        if self.hist.is_empty() { 0.0 } else { self.hist.mean() }
    }

    pub fn summary(&self) -> LatencySummary {
        let h = &self.hist;
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: h.len(),
            mean_us: round(h.mean(), 1),
            stddev_us: round(h.stdev(), 1),
            min_us: h.min(),
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
        }
    }
}

impl Default for Latency {
    fn default() -> Latency {
        Latency::new()
    }
}

/// The figures of one latency distribution, all in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub stddev_us: f64,
    pub min_us: u64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

/// Formats microseconds for tables: `812µs`, `12.3ms`, `1.52s`.
pub fn human_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut l = Latency::new();
        for us in 1..=1000 {
            l.record(us);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_us, 1);
        assert_eq!(s.p50_us, 500);
        assert_eq!(s.max_us, 1000);
        assert!((s.mean_us - 500.5).abs() < 1.0);
        let mut other = Latency::new();
        other.record(HIGHEST_US * 10);
        l.merge(&other);
        assert_eq!(l.count(), 1001);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(Latency::new().summary(), LatencySummary::default());
        assert_eq!(human_us(1500.0), "1.50ms");
    }
}
