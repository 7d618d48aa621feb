//! Rates a client may not pass, as token buckets: what one connection
//! sends ([`Inflow`]) and how many new sessions one address opens
//! ([`AddressRates`], with `hub::Bucket`).
//!
//! A reader that waits for what [`Inflow::charge`] says before reading on
//! holds its client to the rate by back-pressure (TCP fills up on the
//! client's side), never by dropping what the client sent.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use hub::{Bucket, Shards};
use tokio::time::Instant;

use crate::time::Ms;

/// What one client may send: messages and bytes a second, each with a
/// burst of one second's worth. Kept as each rate's theoretical arrival
/// time (the generic cell rate algorithm, which is a token bucket counted
/// the other way round): when the client will have sent no more than its
/// rates allow, in nanoseconds of `Ms::base`. A full bucket is a time past.
/// 24 bytes, where two `hub::Bucket`s took 80: every connected client
/// holds one.
#[derive(Debug, Clone)]
pub struct Inflow {
    message_rate: u32,
    byte_rate: u32,
    messages_due: u64,
    bytes_due: u64,
}

/// The burst each rate allows, as the time the rate takes to earn it.
const BURST_NS: u64 = 1_000_000_000;

impl Inflow {
    /// The bounds of a client of a mount with these rates.
    pub fn new(message_rate: u32, byte_rate: u32) -> Inflow {
        Inflow { message_rate: message_rate.max(1), byte_rate: byte_rate.max(1), messages_due: 0, bytes_due: 0 }
    }

    /// Charges `messages` messages of `bytes` bytes in all, and returns when
    /// the client may be read again, if it must wait.
    pub fn charge(&mut self, messages: usize, bytes: usize) -> Option<Instant> {
        let now = since_base(Instant::now());
        let due = charge(&mut self.messages_due, now, messages, self.message_rate).max(charge(&mut self.bytes_due, now, bytes, self.byte_rate));
        // In debt past the burst: read again once it is paid back to it.
        (due > now + BURST_NS).then(|| Ms::base() + Duration::from_nanos(due - BURST_NS))
    }
}

/// Moves a rate's arrival time on by what `cost` takes at `rate` a second,
/// from now if it is past (what a full bucket had earned is not kept), and
/// gives it.
fn charge(due: &mut u64, now: u64, cost: usize, rate: u32) -> u64 {
    let took = (cost as u128 * 1_000_000_000).div_ceil(u128::from(rate));
    *due = (*due).max(now).saturating_add(u64::try_from(took).unwrap_or(u64::MAX));
    *due
}

/// `at` in nanoseconds of the process's one base instant (`Ms::base`,
/// tokio's clock, so tests drive it paused).
fn since_base(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(Ms::base()).as_nanos()).unwrap_or(u64::MAX)
}

/// Most addresses a limiter remembers; past it, the full buckets (addresses
/// that have not opened anything lately) are forgotten, and if none is full
/// the address that asks is refused, so the map itself stays bounded.
const MAX_ADDRESSES: usize = 65_536;

/// A rate per client address: how many new sessions each may open, or how
/// many failed logins each may make.
#[derive(Debug)]
pub struct AddressRates {
    /// A full bucket, which each address starts with a copy of.
    fresh: Bucket,
    buckets: Shards<HashMap<IpAddr, Bucket>>,
}

impl AddressRates {
    /// `rate` a second per address, with bursts of `burst`.
    pub fn new(rate: u32, burst: u32) -> AddressRates {
        AddressRates { fresh: Bucket::new(rate, burst), buckets: Shards::new(16) }
    }

    /// `count` each `period` per address, all of them at once if need be.
    pub fn per(count: u32, period: std::time::Duration) -> AddressRates {
        AddressRates { fresh: Bucket::per(count, period), buckets: Shards::new(16) }
    }

    /// Whether `address` has one left now, without counting one.
    pub fn allows(&self, address: IpAddr) -> bool {
        let now = Instant::now();
        self.buckets.get(&address).lock().get_mut(&address).is_none_or(|bucket| bucket.has_one(now))
    }

    /// Whether `address` may open one more now; counts it if so.
    pub fn admit(&self, address: IpAddr) -> bool {
        let now = Instant::now();
        let mut shard = self.buckets.get(&address).lock();
        if !shard.contains_key(&address) && shard.len() >= MAX_ADDRESSES / 16 {
            shard.retain(|_, bucket| !bucket.is_full(now));
            hub::shrink_when_sparse(&mut shard);
            if shard.len() >= MAX_ADDRESSES / 16 {
                return false;
            }
        }
        shard.entry(address).or_insert_with(|| self.fresh.clone()).try_take(now)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn inflow_waits_for_the_tighter_of_its_two_rates() {
        let mut inflow = Inflow::new(10, 1000);
        let start = Instant::now();
        assert_eq!(inflow.charge(10, 10), None);
        assert_eq!(inflow.charge(1, 10), Some(start + Duration::from_millis(100)));
        let mut inflow = Inflow::new(10, 1000);
        assert_eq!(inflow.charge(1, 3000), Some(start + Duration::from_secs(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_client_earns_back_its_burst_and_no_more() {
        let mut inflow = Inflow::new(10, 1000);
        assert_eq!(inflow.charge(15, 10), Some(Instant::now() + Duration::from_millis(500)));
        tokio::time::advance(Duration::from_secs(60)).await;
        let back = Instant::now();
        assert_eq!(inflow.charge(10, 1000), None, "a whole burst again after a pause");
        assert_eq!(inflow.charge(1, 0), Some(back + Duration::from_millis(100)), "but not two");
    }

    #[tokio::test(start_paused = true)]
    async fn each_address_has_its_own_rate() {
        let rates = AddressRates::new(1, 3);
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        assert_eq!((0..10).filter(|_| rates.admit(a)).count(), 3);
        assert!(rates.admit(b));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(rates.admit(a));
        assert!(!rates.admit(a));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_a_minute_allows_its_count_then_one_each_share_of_the_minute() {
        let failures = AddressRates::per(30, Duration::from_secs(60));
        let a: IpAddr = [127, 0, 0, 1].into();
        assert!(failures.allows(a));
        assert_eq!((0..40).filter(|_| failures.admit(a)).count(), 30);
        assert!(!failures.allows(a), "looking counts nothing, and there is none left");
        tokio::time::advance(Duration::from_millis(1900)).await;
        assert!(!failures.allows(a));
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(failures.allows(a));
        assert!(failures.admit(a));
        assert!(!failures.admit(a));
    }

    #[tokio::test(start_paused = true)]
    async fn the_address_map_stays_bounded() {
        let rates = AddressRates::new(1, 1);
        for i in 0..(MAX_ADDRESSES as u32 + 1000) {
            rates.admit(IpAddr::from(i.to_be_bytes()));
        }
        let held: usize = rates.buckets.iter().map(|s| s.lock().len()).sum();
        assert!(held <= MAX_ADDRESSES, "{held}");
    }
}
