//! SQLite's work yields to live traffic: sqlx runs each SQLite connection
//! on a thread of its own, and on a server with fewer cores than busy
//! threads the archive writer's commits took turns with the threads that
//! deliver messages. At a lower priority (a higher nice value) it runs when
//! they wait. This is all of SQLite's work, not only the archive's: on a
//! core that delivery fills, a login's account read, a roster change or an
//! offline message waits too (not measured). The chat study on one core (`shootout/archive-cost.sh`, 2
//! rooms × 50 and × 60 users, archiving to SQLite): p99 6.9 to 10.1 ms at
//! the same nice as the server, 3.3 to 4.4 ms at 10 more, against 3.1 to
//! 3.7 ms without archiving; 19 more was as good there and worse past
//! them, where the server fills the core and the writer falls behind.
//!
//! sqlx gives its threads no hook of their own, so each new connection
//! looks them up by the name sqlx gives them (`sqlx-sqlite-worker-N`, which
//! Linux cuts to 15 bytes); elsewhere than Linux this does nothing.

/// How much less priority SQLite's threads get than the server's.
pub const NICER: i32 = 10;

/// What sqlx names its SQLite threads, as Linux keeps it.
const NAME: &str = "sqlx-sqlite-wor";

/// Gives every SQLite thread of this process [`NICER`] more than the
/// calling thread's nice value (at most 19); those already there are left.
#[cfg(target_os = "linux")]
pub fn lower() {
    use rustix::process::{Pid, getpriority_process, setpriority_process};
    let (Ok(tasks), Ok(own)) = (std::fs::read_dir("/proc/self/task"), getpriority_process(None)) else { return };
    let target = (own + NICER).min(19);
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()).and_then(Pid::from_raw) else { continue };
        let named = std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| comm.trim_end() == NAME);
        // A thread that ended meanwhile fails both, which changes nothing.
        if named && getpriority_process(Some(tid)).is_ok_and(|nice| nice < target) {
            let _ = setpriority_process(Some(tid), target);
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn lower() {}
