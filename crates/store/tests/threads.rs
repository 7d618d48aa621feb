//! The archive writer's SQLite thread runs at a lower priority than the
//! server's, 10 more nice than the thread that opened the store, and the
//! readers' at the same (docs/storage.md). A test binary of its own, so
//! that no other test opens a store meanwhile.

#![cfg(target_os = "linux")]

use store::{Choice, Cursor, Entry, Filter};

/// Each thread of this process: its name and its nice value.
fn threads() -> Vec<(String, i32)> {
    let mut all = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten() {
        let (Ok(comm), Ok(stat)) = (std::fs::read_to_string(task.path().join("comm")), std::fs::read_to_string(task.path().join("stat"))) else { continue };
        // After the name in parentheses: state, then 15 more, then nice (proc(5)).
        let after = &stat[stat.rfind(')').expect("a name") + 2..];
        let nice = after.split(' ').nth(16).and_then(|n| n.parse().ok()).expect("a nice value");
        all.push((comm.trim_end().to_owned(), nice));
    }
    all
}

#[tokio::test(flavor = "current_thread")]
async fn the_sqlite_writer_is_ten_nicer_than_the_server_and_its_readers_are_not() {
    let own = threads().into_iter().find(|(name, _)| !name.starts_with("sqlx")).expect("this thread").1;
    let dir = tempfile::tempdir().unwrap();
    let store = store::open(&Choice::Sqlite(dir.path().to_owned())).await.unwrap();
    // The writer's connection, and readers' (more than one at once).
    store.append(&[Entry { archive: "a@l".into(), id: "1".into(), at: 1, with: "b@l".into(), message: "m".into() }]).await.unwrap();
    let (all, oldest) = (Filter::default(), Cursor::Oldest);
    let page = || store.page("a@l", &all, &oldest, 1);
    let (a, b, c) = tokio::join!(page(), page(), page());
    assert!([a, b, c].into_iter().all(|p| p.unwrap().unwrap().entries.len() == 1));
    let mut sqlite: Vec<i32> = threads().into_iter().filter(|(name, _)| name == "sqlx-sqlite-wor").map(|(_, nice)| nice).collect();
    sqlite.sort();
    assert!(sqlite.len() >= 3, "the writer's thread and readers': {sqlite:?}");
    let lowered = (own + 10).min(19);
    assert_eq!(sqlite.iter().filter(|&&nice| nice == lowered).count(), 1, "{sqlite:?}, the server's {own}");
    assert!(sqlite.iter().all(|&nice| nice == own || nice == lowered), "{sqlite:?}, the server's {own}");
}
