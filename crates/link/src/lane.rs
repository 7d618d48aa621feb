//! One direction of a link as a pure model: no sockets, no clock of its own.
//! The caller says "these bytes were handed to the link at `now`" and the
//! lane answers when their last byte reaches the far end. The proxy drives it
//! with the real clock, tests and the bench with virtual time.
//!
//! The model, per packet of `p` payload bytes (a payload is cut into packets
//! of at most `mss` bytes; an empty send, such as a SYN or FIN, is one packet):
//!
//! 1. **Serialisation.** The packet occupies the line for
//!    `(p + overhead) × 8 / rate`, starting when it is handed over or when the
//!    line finishes the packet before it, whichever is later: a busy line
//!    queues, first in first out.
//! 2. **Propagation.** Its last byte arrives `delay ± jitter` after it left
//!    the line (jitter uniform, the sum never below zero).
//! 3. **Loss as a stall.** Each transmission is lost with probability `loss`.
//!    TCP would notice after a retransmission timeout and send the packet
//!    again, so a loss never drops bytes: it delays the packet by
//!    `RTO + serialisation` and charges the line for the second copy. The
//!    first RTO is `max(200 ms, serialisation + 2 × (delay + jitter))` —
//!    one round trip with the worst jitter, floored as Linux floors it — and
//!    doubles for each further loss of the same packet (RFC 6298 backoff),
//!    capped at 120 s and at 15 retransmissions.
//! 4. **Order.** Arrivals never go back in time: a packet that would overtake
//!    the one before it arrives with it instead, as TCP delivers in order.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::spec::{LinkSpec, Loss, Rate};

/// Linux's floor on the retransmission timeout (`TCP_RTO_MIN`).
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// Linux's ceiling on the retransmission timeout (`TCP_RTO_MAX`).
pub const RTO_MAX: Duration = Duration::from_secs(120);
/// Most retransmissions of one packet (Linux's `tcp_retries2` default); a
/// real connection would give up here, the model delivers.
pub const MAX_RETRANSMISSIONS: u32 = 15;

/// What happened to bytes handed to a [`Lane`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    /// When the last byte reaches the far end.
    pub arrival: Instant,
    /// Payload bytes handed over.
    pub payload_bytes: u64,
    /// Packets they were cut into (retransmissions not counted).
    pub packets: u64,
    /// Bytes put on the line: payload plus overhead, for every copy sent,
    /// retransmissions included.
    pub wire_bytes: u64,
    /// Copies sent again after a loss.
    pub retransmissions: u64,
}

/// One direction of a link: a serial line followed by a delay.
#[derive(Debug, Clone)]
pub struct Lane {
    rate: Option<Rate>,
    delay: Duration,
    jitter: Duration,
    loss: Loss,
    overhead: u64,
    mss: usize,
    rng: StdRng,
    /// The line's current busy period: when it began and the bytes queued
    /// in it since. Each packet's end is computed from these rather than by
    /// adding rounded per-packet times, so rounding never accumulates.
    busy: Option<(Instant, u64)>,
    /// When the last packet arrives at the far end; later packets not before.
    last_arrival: Option<Instant>,
}

impl Lane {
    /// A lane shaped by `spec`. `stream` picks one of many independent
    /// random streams from `spec.seed`, so the lanes of many links differ
    /// but every run repeats.
    pub fn new(spec: &LinkSpec, stream: u64) -> Lane {
        // Odd constant spreads consecutive streams over the seed space.
        let seed = spec.seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        Lane {
            rate: spec.rate,
            delay: spec.delay,
            jitter: spec.jitter,
            loss: spec.loss,
            overhead: u64::from(spec.overhead),
            mss: usize::try_from(spec.mss.get()).unwrap_or(usize::MAX),
            rng: StdRng::seed_from_u64(seed),
            busy: None,
            last_arrival: None,
        }
    }

    /// Hands `len` payload bytes to the link at `now` and says when the last
    /// one arrives. `len` is cut into packets of at most `mss` bytes; 0 is
    /// one empty packet (a SYN or a FIN). Times should not go backwards
    /// (threads racing to a shared lane may make them, slightly); if they do
    /// the packet still queues behind the line and arrives in order.
    pub fn send(&mut self, now: Instant, len: usize) -> Transmission {
        let mut tx = Transmission {
            arrival: now,
            payload_bytes: 0,
            packets: 0,
            wire_bytes: 0,
            retransmissions: 0,
        };
        let mut remaining = len;
        loop {
            let piece = remaining.min(self.mss);
            self.packet(now, piece, &mut tx);
            remaining -= piece;
            if remaining == 0 {
                return tx;
            }
        }
    }

    /// Largest payload of one packet.
    pub fn mss(&self) -> usize {
        self.mss
    }

    /// When the line will have sent everything queued on it (`now` if idle).
    pub fn line_free(&self, now: Instant) -> Instant {
        self.busy.map_or(now, |(since, bytes)| self.line_time(since, bytes).max(now))
    }

    /// When a line that started sending at `since` has sent `bytes`.
    fn line_time(&self, since: Instant, bytes: u64) -> Instant {
        later(since, self.rate.map_or(Duration::ZERO, |rate| rate.serialisation(bytes)))
    }

    /// Time one packet of `payload` bytes occupies the line.
    pub fn serialisation(&self, payload: usize) -> Duration {
        let wire = u64::try_from(payload).unwrap_or(u64::MAX).saturating_add(self.overhead);
        self.rate.map_or(Duration::ZERO, |rate| rate.serialisation(wire))
    }

    /// The first retransmission timeout for a packet that takes `serialise`
    /// on the line (see the module doc).
    pub fn first_rto(&self, serialise: Duration) -> Duration {
        let round_trip = serialise
            .saturating_add(self.delay.saturating_add(self.jitter).saturating_mul(2));
        round_trip.clamp(RTO_MIN, RTO_MAX)
    }

    fn packet(&mut self, now: Instant, payload: usize, tx: &mut Transmission) {
        let serialise = self.serialisation(payload);
        let wire = u64::try_from(payload).unwrap_or(u64::MAX).saturating_add(self.overhead);
        // Join the line's busy period, or begin one if the line is idle.
        let (since, queued) = match self.busy {
            Some((since, queued)) if self.line_time(since, queued) > now => (since, queued),
            _ => (now, 0),
        };
        let queued = queued.saturating_add(wire);
        let sent = self.line_time(since, queued);

        let mut copies: u32 = 1;
        let mut stall = Duration::ZERO;
        let mut rto = self.first_rto(serialise);
        while copies <= MAX_RETRANSMISSIONS && self.lost() {
            stall = stall.saturating_add(rto).saturating_add(serialise);
            rto = rto.saturating_mul(2).min(RTO_MAX);
            copies += 1;
        }
        // The copies sent again use the line too; charging them now rather
        // than at the timeout keeps the line's queue first in first out.
        let again = wire.saturating_mul(u64::from(copies - 1));
        self.busy = Some((since, queued.saturating_add(again)));

        let arrival = later(later(sent, self.propagation()), stall);
        let arrival = self.last_arrival.map_or(arrival, |last| arrival.max(last));
        self.last_arrival = Some(arrival);

        let payload = u64::try_from(payload).unwrap_or(u64::MAX);
        tx.arrival = arrival;
        tx.payload_bytes = tx.payload_bytes.saturating_add(payload);
        tx.packets += 1;
        tx.wire_bytes = tx.wire_bytes.saturating_add(wire.saturating_mul(u64::from(copies)));
        tx.retransmissions += u64::from(copies - 1);
    }

    /// Whether one transmission is lost.
    fn lost(&mut self) -> bool {
        !self.loss.is_none() && self.rng.random_range(0..1_000_000) < self.loss.per_million()
    }

    /// `delay ± jitter`, never below zero.
    fn propagation(&mut self) -> Duration {
        if self.jitter.is_zero() {
            return self.delay;
        }
        let jitter = i64::try_from(self.jitter.as_nanos()).unwrap_or(i64::MAX);
        let offset = i128::from(self.rng.random_range(-jitter..=jitter));
        let delay = i128::try_from(self.delay.as_nanos()).unwrap_or(i128::MAX);
        let nanos = (delay + offset).max(0);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// `t + d`, with `d` capped at a century so absurd settings (1 bit/s, a
/// 4 GB overhead) give absurd times rather than a panic.
fn later(t: Instant, d: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    t.checked_add(d.min(CENTURY)).unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(list: &str) -> LinkSpec {
        list.parse().expect("valid link list")
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn unshaped_lane_delivers_at_once() {
        let mut lane = Lane::new(&LinkSpec::default(), 0);
        let t0 = Instant::now();
        let tx = lane.send(t0, 100_000);
        assert_eq!(tx.arrival, t0);
        assert_eq!(tx.payload_bytes, 100_000);
        assert_eq!(tx.packets, 100_000_u64.div_ceil(1460));
        assert_eq!(tx.wire_bytes, 100_000 + 40 * tx.packets);
        assert_eq!(tx.retransmissions, 0);
    }

    #[test]
    fn rate_2400_bytes_at_19200_bit_take_exactly_one_second() {
        let mut lane = Lane::new(&spec("rate=19200bit,overhead=0"), 0);
        let t0 = Instant::now();
        let tx = lane.send(t0, 2400);
        assert_eq!(tx.arrival - t0, Duration::from_secs(1));
        assert_eq!(tx.packets, 2); // 1460 + 940
        assert_eq!(tx.wire_bytes, 2400);
    }

    #[test]
    fn overhead_is_paid_per_packet() {
        let mut lane = Lane::new(&spec("rate=19200bit,overhead=40"), 0);
        let t0 = Instant::now();
        let tx = lane.send(t0, 2400);
        // Two packets: 2400 + 2 × 40 = 2480 bytes = 19,840 bits.
        assert_eq!(tx.wire_bytes, 2480);
        // Times round up to the nanosecond: a byte is not there before its last bit.
        assert_eq!(tx.arrival - t0, Duration::from_nanos(1_033_333_334));
        // An empty packet (SYN, FIN) costs just the overhead.
        let fin = lane.send(tx.arrival, 0);
        assert_eq!(fin.packets, 1);
        assert_eq!(fin.wire_bytes, 40);
        assert_eq!(fin.arrival - tx.arrival, Duration::from_nanos(16_666_667));
    }

    #[test]
    fn a_busy_line_queues_and_an_idle_one_does_not() {
        let mut lane = Lane::new(&spec("rate=8000bit,overhead=0"), 0);
        let t0 = Instant::now();
        // 1000 bytes = 1 s of line each.
        let a = lane.send(t0, 1000);
        let b = lane.send(t0 + 100 * MS, 1000);
        assert_eq!(a.arrival - t0, Duration::from_secs(1));
        assert_eq!(b.arrival - t0, Duration::from_secs(2), "b waits for a");
        assert_eq!(lane.line_free(t0), t0 + Duration::from_secs(2));
        // After the line has gone idle a packet starts at once.
        let c = lane.send(t0 + Duration::from_secs(5), 1000);
        assert_eq!(c.arrival - t0, Duration::from_secs(6));
    }

    #[test]
    fn delay_is_added_after_serialisation() {
        let mut lane = Lane::new(&spec("rate=8000bit,overhead=0,delay=500ms"), 0);
        let t0 = Instant::now();
        let a = lane.send(t0, 1000);
        assert_eq!(a.arrival - t0, Duration::from_millis(1500));
        // Propagation overlaps the next packet's serialisation (a pipe).
        let b = lane.send(t0, 1000);
        assert_eq!(b.arrival - t0, Duration::from_millis(2500));
    }

    #[test]
    fn delay_alone_shifts_every_packet_by_the_same_time() {
        let mut lane = Lane::new(&spec("delay=160ms"), 0);
        let t0 = Instant::now();
        for i in 0..10 {
            let now = t0 + i * 7 * MS;
            assert_eq!(lane.send(now, 10).arrival - now, 160 * MS);
        }
    }

    #[test]
    fn jitter_stays_in_bounds_and_never_reorders() {
        let mut lane = Lane::new(&spec("delay=100ms,jitter=20ms,seed=3"), 0);
        let t0 = Instant::now();
        // Far apart: each packet's own delay shows, within delay ± jitter.
        let delays: Vec<Duration> = (0..1000)
            .map(|i| {
                let now = t0 + i * Duration::from_secs(1);
                lane.send(now, 100).arrival - now
            })
            .collect();
        assert!(delays.iter().all(|d| (80 * MS..=120 * MS).contains(d)));
        assert!(delays.iter().any(|d| *d < 85 * MS) && delays.iter().any(|d| *d > 115 * MS));
        let mean = delays.iter().sum::<Duration>() / 1000;
        assert!((98 * MS..=102 * MS).contains(&mean), "mean {mean:?}");
        // Back to back: arrivals never go back in time.
        let start = t0 + Duration::from_secs(2000);
        let arrivals: Vec<Instant> = (0..1000).map(|i| lane.send(start + i * MS, 100).arrival).collect();
        assert!(arrivals.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn jitter_larger_than_delay_never_goes_below_zero() {
        let mut lane = Lane::new(&spec("delay=5ms,jitter=50ms"), 0);
        let t0 = Instant::now();
        for i in 0..200 {
            let now = t0 + i * Duration::from_secs(1);
            assert!(lane.send(now, 1).arrival >= now);
        }
    }

    #[test]
    fn the_same_seed_repeats_and_streams_differ() {
        let s = spec("delay=100ms,jitter=50ms,loss=5%,seed=42");
        let t0 = Instant::now();
        let run = |stream| {
            let mut lane = Lane::new(&s, stream);
            (0..200).map(|i| lane.send(t0 + i * MS, 500).arrival).collect::<Vec<_>>()
        };
        assert_eq!(run(0), run(0));
        assert_ne!(run(0), run(1));
    }

    #[test]
    fn a_loss_is_a_stall_of_one_rto_plus_a_second_copy() {
        let s = spec("rate=80kbit,overhead=40,delay=50ms,loss=10%,seed=1");
        let mut lane = Lane::new(&s, 0);
        let serialise = lane.serialisation(960); // (960 + 40) × 8 / 80,000 = 100 ms
        assert_eq!(serialise, 100 * MS);
        let rto = lane.first_rto(serialise); // max(200, 100 + 2 × 50) = 200 ms
        assert_eq!(rto, 200 * MS);
        let t0 = Instant::now();
        let mut seen = [0u64; 4];
        for i in 0..2000 {
            // An hour apart, so no packet waits for another.
            let now = t0 + i * Duration::from_secs(3600);
            let tx = lane.send(now, 960);
            // k losses: k stalls of RTO·2^j + serialisation, and k more copies on the line.
            let k = tx.retransmissions;
            let stalls: Duration = (0..k).map(|j| rto * (1 << j) + serialise).sum();
            assert_eq!(tx.arrival - now, serialise + 50 * MS + stalls, "packet {i}");
            assert_eq!(tx.wire_bytes, 1000 * (k + 1));
            assert_eq!(lane.line_free(now), now + serialise * (k as u32 + 1));
            seen[k.min(3) as usize] += 1;
        }
        // About 10 % lost once, 1 % twice.
        assert!((1700..1900).contains(&seen[0]), "{seen:?}");
        assert!((140..220).contains(&seen[1]), "{seen:?}");
        assert!(seen[2] > 5, "{seen:?}");
    }

    #[test]
    fn the_rto_grows_with_the_round_trip() {
        let lane = Lane::new(&spec("rate=2400bit,delay=500ms,jitter=20ms"), 0);
        let serialise = lane.serialisation(1460); // 1500 × 8 / 2400 = 5 s
        assert_eq!(serialise, Duration::from_secs(5));
        assert_eq!(lane.first_rto(serialise), Duration::from_millis(6040));
        let lane = Lane::new(&spec("delay=1000s"), 0);
        assert_eq!(lane.first_rto(Duration::ZERO), RTO_MAX);
    }

    #[test]
    fn loss_never_drops_bytes() {
        let mut lane = Lane::new(&spec("rate=1mbit,delay=10ms,jitter=5ms,loss=30%,seed=9"), 0);
        let t0 = Instant::now();
        let mut payload = 0;
        let mut last = t0;
        for i in 0..500 {
            let tx = lane.send(t0 + i * MS, 1460);
            payload += tx.payload_bytes;
            assert!(tx.arrival >= last);
            last = tx.arrival;
        }
        assert_eq!(payload, 500 * 1460);
    }

    #[test]
    fn huge_inputs_do_not_panic() {
        let s = spec("rate=1bit,delay=100000s,jitter=100000s,loss=99.9999%,overhead=4000000000");
        let mut lane = Lane::new(&s, u64::MAX);
        let t0 = Instant::now();
        let tx = lane.send(t0, 3000);
        assert_eq!(tx.packets, 3);
        assert_eq!(tx.retransmissions, 3 * u64::from(MAX_RETRANSMISSIONS));
    }
}
