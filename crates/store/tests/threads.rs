//! SQLite's threads run at a lower priority than the server's: 10 more
//! nice than the thread that opened the store (docs/storage.md). A test
//! binary of its own, so that no other test opens a store meanwhile.

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
async fn sqlite_threads_are_ten_nicer_than_the_server() {
    let own = threads().into_iter().find(|(name, _)| !name.starts_with("sqlx")).expect("this thread").1;
    let dir = tempfile::tempdir().unwrap();
    let store = store::open(&Choice::Sqlite(dir.path().to_owned())).await.unwrap();
    // The writer's connection, and a reader's.
    store.append(&[Entry { archive: "a@l".into(), id: "1".into(), at: 1, with: "b@l".into(), message: "m".into() }]).await.unwrap();
    assert_eq!(store.page("a@l", &Filter::default(), &Cursor::Oldest, 1).await.unwrap().unwrap().entries.len(), 1);
    let sqlite: Vec<i32> = threads().into_iter().filter(|(name, _)| name == "sqlx-sqlite-wor").map(|(_, nice)| nice).collect();
    assert!(sqlite.len() >= 2, "the writer's thread and a reader's: {sqlite:?}");
    assert!(sqlite.iter().all(|&nice| nice == (own + 10).min(19)), "{sqlite:?}, the server's {own}");
}
