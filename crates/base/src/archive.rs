//! The one writer of message archives, which every protocol that archives
//! shares: XMPP's accounts (XEP-0313) and the rooms' (see `rooms`).
//!
//! Off the live path: a message is delivered first, then its entries go
//! through a bounded queue to this writer, which appends what has gathered
//! in one transaction, at most one every [`COMMIT_EVERY`], or every
//! [`COMMIT_AWAITED`] while someone waits for one, and a full batch at
//! once. A sender goes on once
//! its entries are queued; whoever must confirm them waits for
//! [`Archive::flush`] (XMPP before it acknowledges stanzas, XEP-0198; an
//! archive query before it reads). A full queue holds senders back, never
//! drops.

use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use store::{Cursor, Entry, Filter, Page, Store};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use crate::Context;

/// Writes (each of one or more entries) at most in one transaction.
const BATCH: usize = 1024;

/// One transaction at most this often while nobody waits for one: what
/// gathers meanwhile goes in the next. A commit's cost is mostly the pages
/// it changes (docs/storage.md): the chat study's 2 rooms × 30 users
/// (30,000 messages) on one core (`shootout/archive-cost.sh`, SQLite, when
/// a room's archive had an index by sender) cost the database's thread
/// 0.44 s of CPU at 20 ms, 0.33 s at 50 ms and 0.25 s at 100 ms. And each
/// commit's pages pass through the caches of the core that delivers: at
/// 1 and 4 rooms × 10 users, 250 ms took SQLite's thread from 2.75 to 2.0
/// µs a message and the server's other threads from 53.4 to 52.3 µs, on
/// 49.4 without archiving (four rounds interleaved). It is how long a
/// message that nobody confirms (the chat app's) may wait to be kept.
pub const COMMIT_EVERY: Duration = Duration::from_millis(250);

/// One transaction at most this often while someone waits for it: how
/// long an XMPP acknowledgement (XEP-0198) or an archive query may wait
/// for the archive. With a commit as soon as the last one ended, the chat
/// study's loads cost 1.6 to 2.4 times the server's CPU without archiving;
/// at 5 ms, 1.45 to 2.35; at 20 ms, 1.1 to 1.6.
pub const COMMIT_AWAITED: Duration = Duration::from_millis(20);

/// Whether an account's archive keeps a message with another party: its
/// owner's archiving preferences (XEP-0441), which XMPP keeps and which
/// IRC's private messages go by too.
pub trait Keeps: Send + Sync + std::fmt::Debug {
    /// Whether the archive of `owner` (a bare JID) keeps a message
    /// exchanged with `peer` (a JID).
    fn keeps<'a>(&'a self, owner: &'a str, peer: &'a str) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>>;
}

/// Entries waiting for the writer: when they were queued, and who waits
/// for their commit, if anyone does.
struct Queued {
    entries: Vec<Entry>,
    queued: Instant,
    done: Option<oneshot::Sender<bool>>,
}

/// The archives' writer, and how to read them.
#[derive(Debug)]
pub struct Archive {
    store: Arc<dyn Store>,
    queue: mpsc::Sender<Queued>,
    /// Wakes the writer before its time: a batch is full, or someone
    /// waits. Writes alone do not, so a quiet server's writer wakes once
    /// a commit, not once a message.
    hurry: Arc<Notify>,
    /// Writes waiting at most, for the metrics.
    capacity: usize,
}

impl Queued {
    /// Whether someone still waits for its commit.
    fn awaited(&self) -> bool {
        self.done.as_ref().is_some_and(|done| !done.is_closed())
    }
}

impl Archive {
    /// The archives in `store`, written by a task of their own through a
    /// queue of at most `queue` waiting writes; every hour, entries older
    /// than `bounds.retention` and all but the newest `bounds.limit` of
    /// each archive are forgotten.
    pub fn start(store: Arc<dyn Store>, queue: usize, bounds: Bounds, context: Arc<Context>) -> Archive {
        let (tx, rx) = mpsc::channel(queue.max(1));
        let hurry = Arc::new(Notify::new());
        tokio::spawn(write(store.clone(), rx, hurry.clone(), context));
        if bounds.retention.is_some() || bounds.limit.is_some() {
            tokio::spawn(trim(store.clone(), bounds));
        }
        Archive { store, queue: tx, hurry, capacity: queue.max(1) }
    }

    /// Writes waiting for the writer.
    pub fn waiting(&self) -> usize {
        self.capacity - self.queue.capacity()
    }

    /// Queues `entries` for the writer, waiting only for room in the
    /// queue; the writer keeps them in order with everything queued before.
    pub async fn queue(&self, entries: Vec<Entry>) {
        // Ready at once while there is room: a send that could wait would
        // also count against the task's budget and wait when that is spent.
        match self.queue.try_send(Queued { entries, queued: Instant::now(), done: None }) {
            Err(mpsc::error::TrySendError::Full(queued)) => {
                self.hurry.notify_one();
                let _ = self.queue.send(queued).await;
            }
            Ok(()) if self.waiting() >= BATCH.min(self.capacity) => self.hurry.notify_one(),
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Appends `entries` and waits until they are kept; `false` if the
    /// store failed (counted and logged by the writer). The writer commits
    /// at the pace of [`COMMIT_AWAITED`] while anyone waits here.
    pub async fn keep(&self, entries: Vec<Entry>) -> bool {
        let (done, written) = oneshot::channel();
        let _ = self.queue.send(Queued { entries, queued: Instant::now(), done: Some(done) }).await;
        self.hurry.notify_one();
        written.await.unwrap_or(false)
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

    /// Forgets `archive` whole, with what the writer was given for it
    /// before (which would otherwise be written after); a failure is
    /// logged and counted.
    pub async fn forget(&self, archive: &str, context: &Context) {
        self.flush().await;
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

pub use store::id_of;

/// The ids of this process's archive entries.
static IDS: store::IdClock = store::IdClock::new();

/// A new archive entry's time and id, taken now ([`store::IdClock::next`]).
pub fn next_id() -> (i64, String) {
    IDS.next(now())
}

/// Stripes of [`in_order`], by archive: two archives rarely share one.
static ORDER: [Mutex<()>; 64] = [const { Mutex::new(()) }; 64];

/// Runs `hand` holding `archive`'s stripe of the order. `hand` takes a new
/// entry's id ([`next_id`]) and gives its message its place in the order
/// the archive's readers see live (pushes it to them, or hands it to a
/// broker that places it when called), so that messages racing into one
/// archive reach its readers in the order of their ids, which is the order
/// it is read in. `hand` must not wait.
pub fn in_order<T>(archive: &str, hand: impl FnOnce() -> T) -> T {
    let stripe = BuildHasherDefault::<DefaultHasher>::default().hash_one(archive);
    let _held = ORDER[(stripe % ORDER.len() as u64) as usize].lock();
    hand()
}

/// Takes note of an archive id another node made, now
/// ([`store::IdClock::observe`]): later ids here rise above it.
pub fn observe_id(id: &str) {
    IDS.observe(id, now());
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
/// transaction, at most one every [`COMMIT_EVERY`], or [`COMMIT_AWAITED`]
/// once someone waits.
async fn write(store: Arc<dyn Store>, mut queue: mpsc::Receiver<Queued>, hurry: Arc<Notify>, context: Arc<Context>) {
    let mut batch = Vec::new();
    let mut last = Instant::now() - COMMIT_EVERY;
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        gather(&mut queue, &mut batch, last, &hurry).await;
        last = Instant::now();
        // Moved out of the batch, not copied: each write is a length of them.
        let lengths: Vec<usize> = batch.iter().map(|q| q.entries.len()).collect();
        let entries: Vec<Entry> = batch.iter_mut().flat_map(|q| std::mem::take(&mut q.entries)).collect();
        // A flush alone has nothing to write.
        let appended = if entries.is_empty() { Ok(()) } else { store.append(&entries).await };
        let kept = match appended {
            Ok(()) => vec![true; batch.len()],
            Err(e) => each_alone(store.as_ref(), &entries, &lengths, &e, &context).await,
        };
        if let Some(oldest) = batch.first() {
            context.metrics.archive_lag(oldest.queued.elapsed());
        }
        for (queued, kept) in batch.drain(..).zip(kept) {
            if let Some(done) = queued.done {
                let _ = done.send(kept);
            }
        }
    }
}

/// Each write's answer, of the `lengths` of `entries` a batch the store
/// failed to append held (a flush: whether every write before it was
/// kept). Where the database refused the batch for what a write holds (an
/// id it holds already) and it held more than one, each is tried alone,
/// so that such a write costs only itself; a database that fails
/// otherwise (gone, full, locked) is not asked again for each.
async fn each_alone(store: &dyn Store, entries: &[Entry], lengths: &[usize], failed: &store::Error, context: &Context) -> Vec<bool> {
    let (mut rest, mut lost, mut all) = (entries, 0, true);
    let mut alone = failed.refused() && lengths.iter().filter(|n| **n > 0).count() > 1;
    let mut kept = Vec::with_capacity(lengths.len());
    for &n in lengths {
        let (write, after) = rest.split_at(n);
        rest = after;
        let this = if write.is_empty() {
            all
        } else if alone {
            let appended = store.append(write).await;
            alone = appended.as_ref().err().is_none_or(store::Error::refused);
            appended.is_ok()
        } else {
            false
        };
        if !write.is_empty() && !this {
            (lost, all) = (lost + n, false);
        }
        kept.push(this);
    }
    if lost > 0 {
        tracing::warn!("{lost} of {} archive entries not kept: {failed}", entries.len());
        context.metrics.store_failed("archive");
    }
    kept
}

/// Gathers into `batch` what has arrived when its time comes:
/// [`COMMIT_EVERY`] after the `last` commit, or [`COMMIT_AWAITED`] once a
/// write someone waits for is in it; a full batch goes at once, so that the
/// pace never bounds how many entries a second are kept. Between, the
/// queue is read only when `hurry` says to (a sender saw a batch's worth
/// waiting or a full queue, or someone waits): a wake-up for each write
/// cost a quiet server more than the database did (docs/storage.md). Who
/// waits is told by the writes themselves: none can be missed, and none
/// counts once answered.
async fn gather(queue: &mut mpsc::Receiver<Queued>, batch: &mut Vec<Queued>, last: Instant, hurry: &Notify) {
    let due = tokio::time::sleep_until(last + COMMIT_EVERY);
    tokio::pin!(due);
    let (mut hurried, mut seen, mut time) = (false, 0, false);
    loop {
        while batch.len() < BATCH {
            match queue.try_recv() {
                Ok(more) => batch.push(more),
                Err(mpsc::error::TryRecvError::Empty) => break,
                // Every sender is gone: what is left goes now.
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        // Its time, or full: what is there by now goes.
        if time || batch.len() >= BATCH {
            return;
        }
        if !hurried && batch[seen..].iter().any(Queued::awaited) {
            hurried = true;
            due.as_mut().reset(last + COMMIT_AWAITED);
        }
        seen = batch.len();
        tokio::select! {
            () = &mut due => time = true,
            () = hurry.notified() => {}
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
    fn times_go_both_ways() {
        assert_eq!(micros(time(1_275_868_800_123_456)), 1_275_868_800_123_456);
    }

    /// Threads that each take an id and push it somewhere shared: in one
    /// archive's order, the pushes are in the order of the ids.
    #[test]
    fn ids_taken_in_an_archives_order_are_pushed_in_that_order() {
        let pushed = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let pushed = pushed.clone();
                std::thread::spawn(move || {
                    for _ in 0..5_000 {
                        in_order("alice@example.org", || pushed.lock().push(next_id().1));
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let pushed = pushed.lock();
        assert_eq!(pushed.len(), 20_000);
        assert_eq!(pushed.windows(2).filter(|w| w[0] >= w[1]).count(), 0, "an id pushed after a later one");
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

    /// A batch of three writes, the second with an id the database holds
    /// already: the other two are kept, and each waiter hears of its own.
    #[tokio::test]
    async fn a_write_the_store_refuses_costs_only_itself() {
        let folder = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(store::SqlStore::sqlite(&folder.path().join("store.db")).await.unwrap());
        let archive = Archive::start(store, 8, Bounds::default(), Context::for_tests());
        let entry = |id: &str, message: &str| Entry { archive: "a".into(), id: id.into(), at: now(), with: "b".into(), message: message.into() };
        assert!(archive.keep(vec![entry("1", "first")]).await);
        // Queued before the writer's next batch, which takes all three.
        let (second, third) = tokio::join!(archive.keep(vec![entry("2", "second")]), archive.keep(vec![entry("1", "again"), entry("3", "third")]));
        let fourth = archive.keep(vec![entry("4", "fourth")]).await;
        assert_eq!((second, third, fourth), (true, false, true));
        let page = archive.page("a", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap();
        let kept: Vec<(&str, &str)> = page.entries.iter().map(|e| (e.id.as_str(), e.message.as_str())).collect();
        assert_eq!(kept, [("1", "first"), ("2", "second"), ("4", "fourth")], "the refused write whole, and only it");
    }

    /// On tokio's paused clock: each commit is at the pace of whether
    /// anyone waits for it.
    #[tokio::test(start_paused = true)]
    async fn a_commit_nobody_waits_for_comes_at_the_slow_pace_and_a_waiter_hurries_it() {
        let store: Arc<dyn Store> = Arc::new(store::MemoryStore::default());
        let archive = Archive::start(store.clone(), 4, Bounds::default(), Context::for_tests());
        let entry = |id: &str| Entry { archive: "a".into(), id: id.into(), at: now(), with: "b".into(), message: id.into() };
        let kept = |n: usize| {
            let store = store.clone();
            async move { store.page("a", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().map_or(0, |p| p.entries.len()) == n }
        };
        let start = Instant::now();
        assert!(archive.keep(vec![entry("1")]).await);
        assert_eq!(start.elapsed(), Duration::ZERO, "the first commit at once");
        assert!(archive.keep(vec![entry("2")]).await);
        assert_eq!(start.elapsed(), COMMIT_AWAITED, "one waits: the fast pace");

        archive.queue(vec![entry("3")]).await;
        tokio::time::sleep(COMMIT_EVERY - Duration::from_millis(1)).await;
        assert!(kept(2).await, "nobody waits: not before the slow pace");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert!(kept(3).await, "nobody waits: at the slow pace");

        archive.queue(vec![entry("4")]).await;
        tokio::time::sleep(COMMIT_AWAITED * 2).await;
        assert!(kept(3).await);
        let waits = Instant::now();
        assert!(archive.flush().await);
        assert_eq!(waits.elapsed(), Duration::ZERO, "one starts to wait past the fast pace: at once");
        assert!(kept(4).await);
    }

    /// On tokio's paused clock: a full batch is written at once, whatever
    /// the pace.
    #[tokio::test(start_paused = true)]
    async fn a_full_batch_does_not_wait_for_the_pace() {
        let store: Arc<dyn Store> = Arc::new(store::MemoryStore::default());
        let archive = Archive::start(store.clone(), 2 * BATCH, Bounds::default(), Context::for_tests());
        let entry = |n: usize| Entry { archive: "a".into(), id: n.to_string(), at: now(), with: "b".into(), message: String::new() };
        assert!(archive.keep(vec![entry(0)]).await);
        let start = Instant::now();
        for n in 1..=BATCH {
            archive.queue(vec![entry(n)]).await;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        let kept = store.page("a", &Filter::default(), &Cursor::Oldest, 2 * BATCH).await.unwrap().unwrap().entries.len();
        assert_eq!((kept, start.elapsed()), (BATCH + 1, Duration::from_millis(1)), "a full batch: no pace");
    }

    /// On tokio's paused clock: the writer takes writes as they come, up
    /// to a batch, so senders through a queue shorter than a batch never
    /// wait for the pace.
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_does_not_wait_for_the_pace() {
        let store: Arc<dyn Store> = Arc::new(store::MemoryStore::default());
        let archive = Archive::start(store.clone(), 4, Bounds::default(), Context::for_tests());
        let entry = |n: usize| Entry { archive: "a".into(), id: n.to_string(), at: now(), with: "b".into(), message: String::new() };
        assert!(archive.keep(vec![entry(0)]).await);
        let start = Instant::now();
        for n in 1..=40 {
            archive.queue(vec![entry(n)]).await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO, "40 writes through a queue of 4");
    }
}
