//! The archive on SQLite, measured: how fast the writer's batches go in,
//! and how long a page of 50 takes from a large archive.
//!
//!     cargo bench -p switchboard-store --bench archive [-- ENTRIES]
//!
//! Prints entries per second appended in batches of 1,024 (one transaction
//! each, as the XMPP archive's writer does), then p50 and p99 over 1,000
//! queries of a page of 50 at random places in one account's archive of
//! ENTRIES (default 1,000,000), forwards after an id and the newest page.
//! Then a room's archive of 100,000 (`--archive-limit`'s default) from 40
//! members, which has no index by sender but is kept in the order of its
//! ids (`room_archive`): the newest page of 50 `with` one of them, and
//! `with` someone who never spoke there, which reads it all.
//! Last, what `--sqlite-synchronous full` costs against `normal`, each
//! on a fresh store: 100 batches of 1,024, and 500 commits of one entry
//! (a commit someone waits for, as a stream management acknowledgement's).
//! Run it pinned to one core (`taskset -c 1`) to read it as one core's.

use std::time::{Duration, Instant};

use store::{Choice, Cursor, Entry, Filter, Synchronous};

const BATCH: usize = 1024;
const QUERIES: usize = 1000;
const ROOM_ENTRIES: usize = 100_000;
const MEMBERS: usize = 40;

/// When entry `n` was taken: one a microsecond.
fn at(n: usize) -> i64 {
    1_700_000_000_000_000 + n as i64
}

fn entry(n: usize) -> Entry {
    // Two peers, so that `with` narrows to half; the id starts with the
    // time, as a `store::IdClock` makes it.
    Entry {
        archive: "ann@localhost".into(),
        id: store::id_of(at(n), n as u32),
        at: at(n),
        with: if n.is_multiple_of(2) { "ben@localhost".into() } else { "cy@localhost".into() },
        message: format!("<message xmlns='jabber:client' from='ben@localhost/phone' to='ann@localhost' type='chat' id='m{n}'><body>message number {n}, of about the size people write</body></message>"),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let entries: usize = std::env::args().skip(1).find(|a| !a.starts_with('-')).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = store::open(&Choice::Sqlite(dir.path().to_owned())).await.expect("a SQLite store");
    let started = Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    for n in 0..entries {
        batch.push(entry(n));
        if batch.len() == BATCH {
            store.append(&batch).await.expect("appended");
            batch.clear();
        }
    }
    store.append(&batch).await.expect("appended");
    let took = started.elapsed();
    println!("append: {entries} entries in batches of {BATCH}: {:.2} s, {:.0} entries/s", took.as_secs_f64(), entries as f64 / took.as_secs_f64());

    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % entries as u64) as usize
    };
    for (name, with) in [("after a random id", None), ("after a random id, with one peer", Some("ben@localhost".to_owned()))] {
        let filter = Filter { with, ..Filter::default() };
        let mut times = Vec::with_capacity(QUERIES);
        for _ in 0..QUERIES {
            let after = entry(next()).id;
            let start = Instant::now();
            let page = store.page("ann@localhost", &filter, &Cursor::After(after), 50).await.expect("a page").expect("the id is there");
            times.push(start.elapsed());
            assert!(page.entries.len() <= 50);
        }
        times.sort();
        println!("page of 50 {name}: p50 {:?}, p99 {:?}", percentile(&times, 0.5), percentile(&times, 0.99));
    }
    let mut times = Vec::with_capacity(QUERIES);
    for _ in 0..QUERIES {
        let start = Instant::now();
        let page = store.page("ann@localhost", &Filter::default(), &Cursor::Before(None), 50).await.expect("a page").expect("a page");
        times.push(start.elapsed());
        assert_eq!(page.entries.len(), 50);
    }
    times.sort();
    println!("newest page of 50: p50 {:?}, p99 {:?}", percentile(&times, 0.5), percentile(&times, 0.99));
    for (name, oldest) in [("from a random time, oldest first", true), ("until a random time, newest first", false)] {
        let mut times = Vec::with_capacity(QUERIES / 10);
        for _ in 0..QUERIES / 10 {
            let when = at(next());
            let (filter, cursor) = match oldest {
                true => (Filter { start: Some(when), ..Filter::default() }, Cursor::Oldest),
                false => (Filter { end: Some(when), ..Filter::default() }, Cursor::Before(None)),
            };
            let start = Instant::now();
            store.page("ann@localhost", &filter, &cursor, 50).await.expect("a page").expect("a page");
            times.push(start.elapsed());
        }
        times.sort();
        println!("page of 50 {name}: p50 {:?}, p99 {:?}", percentile(&times, 0.5), percentile(&times, 0.99));
    }

    let room: Vec<Entry> = (0..ROOM_ENTRIES)
        .map(|n| Entry {
            archive: "/chat#lobby".into(),
            id: store::id_of(1_800_000_000_000_000 + n as i64, n as u32),
            at: 1_800_000_000_000_000 + n as i64,
            with: format!("/chat#lobby/member{}", n % MEMBERS),
            message: format!("message number {n}, of about the size people write"),
        })
        .collect();
    for batch in room.chunks(BATCH) {
        store.append(batch).await.expect("appended");
    }
    for (name, with) in [("with one of its 40 members", "/chat#lobby/member7"), ("with someone who never spoke", "/chat#lobby/nobody")] {
        let filter = Filter { with: Some(with.to_owned()), ..Filter::default() };
        let mut times = Vec::with_capacity(QUERIES / 10);
        for _ in 0..QUERIES / 10 {
            let start = Instant::now();
            store.page("/chat#lobby", &filter, &Cursor::Before(None), 50).await.expect("a page").expect("a page");
            times.push(start.elapsed());
        }
        times.sort();
        println!("a room of {ROOM_ENTRIES}, newest page of 50 {name}: p50 {:?}, p99 {:?}", percentile(&times, 0.5), percentile(&times, 0.99));
    }

    // The hourly bounds, which hold the writer while they run: with nothing
    // past them, then with a little.
    for (name, before) in [("nothing past it", at(0)), ("the oldest 1,000", at(1000))] {
        let start = Instant::now();
        let gone = store.trim(before).await.expect("trimmed");
        println!("--archive-retention, {name}: {gone} gone in {:?}", start.elapsed());
    }
    for (name, keep) in [("nothing past it", entries as u64), ("the oldest 1,000", (entries - 2000) as u64)] {
        let start = Instant::now();
        let gone = store.cap(keep).await.expect("capped");
        println!("--archive-limit, {name}: {gone} gone in {:?}", start.elapsed());
    }

    for synchronous in [Synchronous::Normal, Synchronous::Full] {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let store = store::open_with(&Choice::Sqlite(dir.path().to_owned()), synchronous).await.expect("a SQLite store");
        let all: Vec<Entry> = (0..100 * BATCH + 500).map(entry).collect();
        let start = Instant::now();
        for batch in all[..100 * BATCH].chunks(BATCH) {
            store.append(batch).await.expect("appended");
        }
        let batched = all.len() - 500;
        println!("{synchronous:?}: {batched} entries in batches of {BATCH}: {:.0} entries/s", batched as f64 / start.elapsed().as_secs_f64());
        let mut times = Vec::with_capacity(500);
        for one in all[batched..].chunks(1) {
            let start = Instant::now();
            store.append(one).await.expect("appended");
            times.push(start.elapsed());
        }
        times.sort();
        println!("{synchronous:?}: a commit of one entry: p50 {:?}, p99 {:?}", percentile(&times, 0.5), percentile(&times, 0.99));
    }
}
