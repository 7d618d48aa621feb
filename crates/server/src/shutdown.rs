//! Shutdown as a value every connection holds: the server cancels it once,
//! and each connection's task notices and closes its client with 1001.

use tokio_util::sync::CancellationToken;

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
}
