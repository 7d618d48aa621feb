//! Counters of what crossed a link, per direction, for the bench to report
//! bytes on the wire per message and per connection set-up. Atomics, so the
//! proxy's tasks count without a lock and a reader takes a snapshot at any time.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::lane::Transmission;

/// Counters of one proxy: both directions plus connections.
#[derive(Debug, Default)]
pub struct LinkStats {
    /// Client → upstream.
    pub up: DirectionStats,
    /// Upstream → client.
    pub down: DirectionStats,
    connections: AtomicU64,
    upstream_failures: AtomicU64,
    fast_opens: AtomicU64,
}

/// Counters of one direction.
#[derive(Debug, Default)]
pub struct DirectionStats {
    payload_bytes: AtomicU64,
    packets: AtomicU64,
    wire_bytes: AtomicU64,
    retransmissions: AtomicU64,
    delivered_bytes: AtomicU64,
}

/// A snapshot of [`LinkStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LinkCounts {
    pub up: DirectionCounts,
    pub down: DirectionCounts,
    /// Client connections accepted.
    pub connections: u64,
    /// Client connections closed because the upstream could not be reached.
    pub upstream_failures: u64,
    /// Connections whose SYN carried the client's first bytes and whose
    /// upstream took them there (TCP Fast Open).
    pub fast_opens: u64,
}

/// A snapshot of [`DirectionStats`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DirectionCounts {
    /// Payload bytes handed to the link.
    pub payload_bytes: u64,
    /// Packets they made, including the empty SYN, SYN-ACK and FIN packets of
    /// connection set-up and close; retransmissions not counted.
    pub packets: u64,
    /// Bytes on the line: payload plus per-packet overhead, for every copy,
    /// retransmissions included.
    pub wire_bytes: u64,
    /// Packets sent again after a loss.
    pub retransmissions: u64,
    /// Payload bytes written to the far end so far.
    pub delivered_bytes: u64,
}

impl LinkStats {
    /// The counters as they are now.
    pub fn snapshot(&self) -> LinkCounts {
        LinkCounts {
            up: self.up.snapshot(),
            down: self.down.snapshot(),
            connections: self.connections.load(Ordering::Relaxed),
            upstream_failures: self.upstream_failures.load(Ordering::Relaxed),
            fast_opens: self.fast_opens.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn connection(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn upstream_failure(&self) {
        self.upstream_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn fast_open(&self) {
        self.fast_opens.fetch_add(1, Ordering::Relaxed);
    }
}

impl DirectionStats {
    /// The counters as they are now.
    pub fn snapshot(&self) -> DirectionCounts {
        DirectionCounts {
            payload_bytes: self.payload_bytes.load(Ordering::Relaxed),
            packets: self.packets.load(Ordering::Relaxed),
            wire_bytes: self.wire_bytes.load(Ordering::Relaxed),
            retransmissions: self.retransmissions.load(Ordering::Relaxed),
            delivered_bytes: self.delivered_bytes.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn sent(&self, tx: &Transmission) {
        self.payload_bytes.fetch_add(tx.payload_bytes, Ordering::Relaxed);
        self.packets.fetch_add(tx.packets, Ordering::Relaxed);
        self.wire_bytes.fetch_add(tx.wire_bytes, Ordering::Relaxed);
        self.retransmissions.fetch_add(tx.retransmissions, Ordering::Relaxed);
    }

    /// A copy of bytes already counted, sent again: the line's bytes and a
    /// retransmission, not more payload.
    pub(crate) fn resent(&self, tx: &Transmission) {
        self.wire_bytes.fetch_add(tx.wire_bytes, Ordering::Relaxed);
        self.retransmissions.fetch_add(tx.packets + tx.retransmissions, Ordering::Relaxed);
    }

    pub(crate) fn delivered(&self, bytes: usize) {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        self.delivered_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

impl DirectionCounts {
    /// What was counted between `earlier` and `self`, e.g. the cost of one
    /// message.
    pub fn since(&self, earlier: &DirectionCounts) -> DirectionCounts {
        DirectionCounts {
            payload_bytes: self.payload_bytes.saturating_sub(earlier.payload_bytes),
            packets: self.packets.saturating_sub(earlier.packets),
            wire_bytes: self.wire_bytes.saturating_sub(earlier.wire_bytes),
            retransmissions: self.retransmissions.saturating_sub(earlier.retransmissions),
            delivered_bytes: self.delivered_bytes.saturating_sub(earlier.delivered_bytes),
        }
    }
}
