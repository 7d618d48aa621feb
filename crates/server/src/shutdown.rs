//! Shutdown as a value every connection holds: the server cancels it once,
//! and each connection's task notices and closes its client with 1001.

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// A handle on the server's shutdown; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(CancellationToken);

impl Shutdown {
    /// Starts the shutdown; idempotent.
    pub fn trigger(&self) {
        self.0.cancel();
    }

    /// Resolves once shutdown has started.
    pub async fn wait(&self) {
        self.0.cancelled().await;
    }

    /// [`Shutdown::wait`] as a future that owns its handle.
    pub fn waiting(&self) -> WaitForCancellationFutureOwned {
        self.0.clone().cancelled_owned()
    }

    /// Whether shutdown has begun.
    pub fn has_begun(&self) -> bool {
        self.0.is_cancelled()
    }
}
