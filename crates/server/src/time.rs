//! Timers the transports share.

use tokio::time::Instant;

/// Sleeps until `at`, or for ever when there is no `at`: a deadline that may
/// not exist, as one `select!` branch.
pub async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
