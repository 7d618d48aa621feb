//! Whether an HTTP connection has a request in progress, and since when it
//! has not: the accept loop closes a connection idle for `--idle-timeout`,
//! and a streaming response keeps its connection busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// Whether a connection has a request in progress, and since when it has not.
#[derive(Debug)]
pub struct Activity {
    started: Instant,
    in_progress: AtomicUsize,
    /// Milliseconds from `started` to the end of the last request.
    idle_since_ms: AtomicU64,
    /// Signalled when the last request in progress ends.
    ended: Notify,
}

impl Activity {
    pub fn new() -> Activity {
        Activity {
            started: Instant::now(),
            in_progress: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            ended: Notify::new(),
        }
    }

    /// Resolves once the connection has had no request in progress for `limit`.
    pub async fn idle_for(&self, limit: Duration) {
        loop {
            if self.in_progress.load(Ordering::Acquire) > 0 {
                // `notify_one` keeps a permit, so an end between the load and
                // this wait is not missed.
                self.ended.notified().await;
                continue;
            }
            let idle_since = self.started + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire));
            if Instant::now() >= idle_since + limit {
                return;
            }
            // A request may start meanwhile; the check above then waits for it.
            tokio::time::sleep_until(idle_since + limit).await;
        }
    }
}

/// A request in progress: from its head until its response body is done
/// (a streaming response is in progress for as long as it streams).
#[derive(Debug)]
pub struct Busy(Arc<Activity>);

impl Busy {
    pub fn start(activity: Arc<Activity>) -> Busy {
        activity.in_progress.fetch_add(1, Ordering::AcqRel);
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let ms = u64::try_from(self.0.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.idle_since_ms.store(ms, Ordering::Release);
        if self.0.in_progress.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.ended.notify_one();
        }
    }
}
