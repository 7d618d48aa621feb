//! The one writer of message archives, which every protocol that archives
//! shares: XMPP's accounts (XEP-0313) and the rooms' (see `rooms`).
//!
//! Off the live path: a message is delivered first, then its entries go
//! through a bounded queue to this writer, which appends what has gathered
//! in one transaction, at most one every [`COMMIT_EVERY`]. A sender goes on
//! once its entries are queued; whoever must confirm them waits for
//! [`Archive::flush`] (XMPP before it acknowledges stanzas, XEP-0198). A
//! full queue holds senders back, never drops.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use store::{Cursor, Entry, Filter, Page, Store};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::Context;

/// Entries at most in one transaction.
const BATCH: usize = 1024;

/// One transaction at most this often: what gathers meanwhile goes in
/// the next. With a commit as soon as the last one ended, the chat study's
/// loads on one core (`shootout/archive-cost.sh`, SQLite) cost 1.6 to 2.4
/// times the server's CPU without archiving; at 5 ms, 1.45 to 2.35; at
/// 20 ms, 1.1 to 1.6 (50 ms measured as 20; docs/storage.md). It is also
/// how long an XMPP acknowledgement (XEP-0198) may wait for the archive.
pub const COMMIT_EVERY: Duration = Duration::from_millis(20);

/// Entries waiting for the writer: when they were queued, and who waits
/// for their commit.
struct Queued {
    entries: Vec<Entry>,
    queued: Instant,
    done: oneshot::Sender<bool>,
}

/// The archives' writer, and how to read them.
#[derive(Debug)]
pub struct Archive {
    store: Arc<dyn Store>,
    queue: mpsc::Sender<Queued>,
    /// Writes waiting at most, for the metrics.
    capacity: usize,
}

impl Archive {
    /// The archives in `store`, written by a task of their own through a
    /// queue of at most `queue` waiting writes; every hour, entries older
    /// than `bounds.retention` and all but the newest `bounds.limit` of
    /// each archive are forgotten.
    pub fn start(store: Arc<dyn Store>, queue: usize, bounds: Bounds, context: Arc<Context>) -> Archive {
        let (tx, rx) = mpsc::channel(queue.max(1));
        tokio::spawn(write(store.clone(), rx, context));
        if bounds.retention.is_some() || bounds.limit.is_some() {
            tokio::spawn(trim(store.clone(), bounds));
        }
        Archive { store, queue: tx, capacity: queue.max(1) }
    }

    /// Writes waiting for the writer.
    pub fn waiting(&self) -> usize {
        self.capacity - self.queue.capacity()
    }

    /// Queues `entries` for the writer, waiting only for room in the
    /// queue; the writer keeps them in order with everything queued before.
    pub async fn queue(&self, entries: Vec<Entry>) -> Written {
        let (done, written) = oneshot::channel();
        let _ = self.queue.send(Queued { entries, queued: Instant::now(), done }).await;
        Written(written)
    }

    /// Appends `entries` and waits until they are kept; `false` if the
    /// store failed (counted and logged by the writer).
    pub async fn keep(&self, entries: Vec<Entry>) -> bool {
        self.queue(entries).await.wait().await
    }

    /// Waits until every entry queued before this call is written;
    /// `false` if the last of them could not be.
    pub async fn flush(&self) -> bool {
        self.keep(Vec::new()).await
    }

    /// A page of `archive`; `None` when an id it names is not there.
    pub async fn page(&self, archive: &str, filter: &Filter, cursor: &Cursor, max: usize) -> Result<Option<Page>, store::Error> {
        self.store.page(archive, filter, cursor, max).await
    }

    /// Forgets `archive` whole; a failure is logged and counted.
    pub async fn forget(&self, archive: &str, context: &Context) {
        if let Err(e) = self.store.forget_archive(archive).await {
            tracing::warn!("archive {archive:?} not forgotten: {e}");
            context.metrics.store_failed("archive");
        }
    }
}

/// How much each archive keeps, checked every hour: an archive may pass
/// its limit by what an hour brings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bounds {
    /// Entries older than this go (`--archive-retention`).
    pub retention: Option<Duration>,
    /// Each archive keeps its newest this many (`--archive-limit`).
    pub limit: Option<u64>,
}

/// Entries queued for the writer, until they are written.
#[derive(Debug)]
pub struct Written(oneshot::Receiver<bool>);

impl Written {
    /// Waits until they are kept; `false` if the store failed.
    pub async fn wait(self) -> bool {
        self.0.await.unwrap_or(false)
    }
}

/// A new entry's id: its time, then random bits, so that ids sort by time
/// and two nodes writing one database do not collide.
pub fn new_id(at: i64) -> String {
    format!("{at:013x}{:08x}", rand::random::<u32>())
}

/// Microseconds since 1970 now.
pub fn now() -> i64 {
    micros(SystemTime::now())
}

/// A time in microseconds since 1970.
pub fn micros(at: SystemTime) -> i64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A time given in microseconds since 1970.
pub fn time(micros: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

/// The one writer: appends what has gathered, each batch in one
/// transaction, at most one every [`COMMIT_EVERY`].
async fn write(store: Arc<dyn Store>, mut queue: mpsc::Receiver<Queued>, context: Arc<Context>) {
    let mut batch = Vec::new();
    let mut last = Instant::now() - COMMIT_EVERY;
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        // What else arrives before this batch's time goes with it.
        tokio::time::sleep_until(last + COMMIT_EVERY).await;
        while batch.len() < BATCH
            && let Ok(more) = queue.try_recv()
        {
            batch.push(more);
        }
        last = Instant::now();
        // Moved out of the batch, not copied: each waiter only needs its answer.
        let entries: Vec<Entry> = batch.iter_mut().flat_map(|q| std::mem::take(&mut q.entries)).collect();
        // A flush alone has nothing to write.
        let appended = if entries.is_empty() { Ok(()) } else { store.append(&entries).await };
        let kept = match appended {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{} archive entries not kept: {e}", entries.len());
                context.metrics.store_failed("archive");
                false
            }
        };
        if let Some(oldest) = batch.first() {
            context.metrics.archive_lag(oldest.queued.elapsed());
        }
        for queued in batch.drain(..) {
            let _ = queued.done.send(kept);
        }
    }
}

/// Forgets what is past `bounds`, every hour.
async fn trim(store: Arc<dyn Store>, bounds: Bounds) {
    let mut every = tokio::time::interval(Duration::from_secs(3600));
    loop {
        every.tick().await;
        if let Some(retention) = bounds.retention {
            let before = now().saturating_sub(i64::try_from(retention.as_micros()).unwrap_or(i64::MAX));
            match store.trim(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!("{n} archive entries past the retention trimmed"),
                Err(e) => tracing::warn!("archive not trimmed: {e}"),
            }
        }
        if let Some(limit) = bounds.limit {
            match store.cap(limit).await {
                Ok(0) => {}
                Ok(n) => tracing::info!("{n} archive entries past --archive-limit trimmed"),
                Err(e) => tracing::warn!("archive not trimmed to its limit: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_times_go_both_ways() {
        assert!(new_id(1) < new_id(2));
        assert_eq!(new_id(0x1234).len(), 21);
        assert_eq!(micros(time(1_275_868_800_123_456)), 1_275_868_800_123_456);
    }

    #[tokio::test]
    async fn what_is_kept_is_read_back_in_order() {
        let store: Arc<dyn Store> = Arc::new(store::MemoryStore::default());
        let archive = Archive::start(store, 4, Bounds::default(), Context::for_tests());
        let entry = |id: &str| Entry { archive: "a".into(), id: id.into(), at: now(), with: "b".into(), message: id.into() };
        assert!(archive.keep(vec![entry("1"), entry("2")]).await);
        assert!(archive.keep(vec![entry("3")]).await);
        let page = archive.page("a", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap();
        assert_eq!(page.entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["1", "2", "3"]);
        assert_eq!(archive.waiting(), 0);
    }
}
