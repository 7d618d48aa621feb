//! What every protocol of the server stands on: the shutdown signal,
//! metrics, rates and their clocks, TLS acceptors, deflated byte streams, the connection-token
//! verifier, accounts and SASL against them, and HTTP response helpers. Nothing here knows a protocol, an
//! app or the server that puts them together.
//!
//! (The design calls this layer "core"; a crate of that name would shadow
//! Rust's own `core`.)

pub mod accounts;
pub mod alarm;
pub mod archive;
pub mod context;
pub mod deflated;
pub mod fast;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod rooms;
pub mod shutdown;
pub mod time;
pub mod tls;
pub mod token;
mod wakers;

pub use context::{Bounds, Connection, Context};

#[cfg(test)]
mod testing {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    /// A waker that counts its wakes.
    pub struct Wakes(pub AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A setting that cannot be used: a key or certificate file that cannot be
/// read, or one too weak.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

impl ConfigError {
    pub fn new(message: impl Into<String>) -> ConfigError {
        ConfigError(message.into())
    }
}
