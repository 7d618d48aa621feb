//! The archive's writer yields to live traffic: sqlx runs each SQLite
//! connection on a thread of its own, and on a server with fewer cores
//! than busy threads the writer's commits took turns with the threads that
//! deliver messages. At a lower priority (a higher nice value) it runs when
//! they wait. The chat study on one core (`shootout/archive-cost.sh`, 2
//! rooms × 50 and × 60 users, archiving to SQLite): p99 6.9 to 10.1 ms at
//! the same nice as the server, 3.3 to 4.4 ms at 10 more, against 3.1 to
//! 3.7 ms without archiving; 19 more was as good there and worse past
//! them, where the server fills the core and the writer falls behind.
//!
//! Only the writer's thread: a reader's answers a client who waits, row by
//! row through a channel, and at a lower priority the thread that takes
//! the rows ran at each one (a page of 50 on one shared core, `cargo bench
//! -p switchboard-store --bench archive`: p50 250 to 290 µs at the same
//! nice, 580 to 800 µs with the readers 10 nicer too). The writer's own
//! other work (a login's counts, a roster change, an offline message)
//! waits with it on a core that delivery fills (not measured).
//!
//! sqlx gives its threads no hook of their own, and names them all alike
//! (`sqlx-sqlite-worker-N`, which Linux cuts to 15 bytes), so the writer's
//! is found as the newest: its connection opens before any reader's and
//! is kept for the store's life. Elsewhere than Linux this does nothing.

/// How much less priority the writer's thread gets than the server's.
pub const NICER: i32 = 10;

/// What sqlx names its SQLite threads, as Linux keeps it.
const NAME: &str = "sqlx-sqlite-wor";

/// Gives the newest SQLite thread of this process [`NICER`] more than
/// the calling thread's nice value (at most 19).
#[cfg(target_os = "linux")]
pub fn lower_newest() {
    use rustix::process::{Pid, getpriority_process, setpriority_process};
    let (Ok(tasks), Ok(own)) = (std::fs::read_dir("/proc/self/task"), getpriority_process(None)) else { return };
    let newest = tasks
        .flatten()
        .filter(|task| std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| comm.trim_end() == NAME))
        .filter_map(|task| task.file_name().to_str().and_then(|t| t.parse().ok()))
        .max();
    // A thread that ended meanwhile fails, which changes nothing.
    if let Some(tid) = newest.and_then(Pid::from_raw) {
        let _ = setpriority_process(Some(tid), (own + NICER).min(19));
    }
}

#[cfg(not(target_os = "linux"))]
pub fn lower_newest() {}
