//! One test body for every store: what one keeps, the others keep the same
//! way (in memory, SQLite and PostgreSQL), and the databases still have it
//! after they are opened again.

use super::*;

fn account(n: u8) -> Account {
    Account {
        salt: vec![n; 16],
        iterations: 4096,
        sha1: ScramKeys { stored: vec![n; 20], server: vec![n + 1; 20] },
        sha256: ScramKeys { stored: vec![n; 32], server: vec![n + 1; 32] },
    }
}

/// Each store under test: in memory, SQLite in a folder of its own, and
/// PostgreSQL on a server of its own (Debian's; the test fails, naming the
/// package, without it).
struct Stores {
    list: Vec<Arc<dyn Store>>,
    _dir: tempfile::TempDir,
    _postgres: PostgresServer,
}

async fn stores() -> Stores {
    let dir = tempfile::tempdir().unwrap();
    let postgres = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let list = vec![
        open(&Choice::Memory).await.unwrap(),
        open(&Choice::Sqlite(dir.path().to_owned())).await.unwrap(),
        open(&Choice::Postgres(postgres.url.clone())).await.unwrap(),
    ];
    Stores { list, _dir: dir, _postgres: postgres }
}

async fn accounts_body(store: &dyn Store) {
    assert_eq!(store.create("alice", &account(1), Origin::Administrator, 0).await.unwrap(), Created::Made, "an administrator's is not bounded");
    assert_eq!(store.create("alice", &account(2), Origin::Registration, 10).await.unwrap(), Created::Taken);
    assert_eq!(store.create("zoe", &account(3), Origin::Registration, 1).await.unwrap(), Created::Made);
    assert_eq!(store.create("yan", &account(3), Origin::Registration, 1).await.unwrap(), Created::Full, "registration's bound counts its own");
    assert_eq!(store.account("alice").await.unwrap(), Some(account(1)));
    assert_eq!(store.account("nobody").await.unwrap(), None);
    assert!(store.set_keys("alice", &account(7)).await.unwrap());
    assert!(!store.set_keys("nobody", &account(7)).await.unwrap());
    assert_eq!(store.account("alice").await.unwrap(), Some(account(7)));
    assert_eq!(store.names().await.unwrap(), ["alice", "zoe"]);
    assert!(store.remove("zoe").await.unwrap());
    assert!(!store.remove("zoe").await.unwrap());
    assert_eq!(store.create("yan", &account(3), Origin::Registration, 1).await.unwrap(), Created::Made, "a removed account frees its place");
}

async fn rosters_body(store: &dyn Store) {
    let mut asking = |c: &mut Contact| c.ask = true;
    for i in 0..3 {
        let jid = format!("c{i}@l");
        let Updated::Changed(added) = store.update("a@l", &jid, true, 3, &mut asking).await.unwrap() else { panic!("not added") };
        assert_eq!(added, Change { contact: Contact { jid, ask: true, ..Contact::default() }, ver: i + 1 }, "with the version it made");
    }
    assert_eq!(store.update("a@l", "more@l", true, 3, &mut |_| {}).await.unwrap(), Updated::Full);
    assert_eq!(store.update("a@l", "absent@l", false, 3, &mut |_| {}).await.unwrap(), Updated::Absent);
    assert_eq!(store.update("nobody@l", "a@l", false, 3, &mut |_| {}).await.unwrap(), Updated::Absent);
    let mut both = |c: &mut Contact| {
        c.subscription = Subscription { to: true, from: true };
        c.name = Some("Cy \"one\"".into());
        c.groups = vec!["Friends".into(), "Work, and 'more'".into()];
        c.ask = false;
    };
    let Updated::Changed(changed) = store.update("a@l", "c1@l", false, 3, &mut both).await.unwrap() else { panic!("not changed") };
    assert_eq!(store.contact("a@l", "c1@l").await.unwrap(), Some(changed.contact.clone()));
    assert_eq!(changed.ver, 4);
    assert_eq!(store.version("a@l").await.unwrap(), 4, "three added, one changed");
    assert_eq!(store.version("nobody@l").await.unwrap(), 0);
    let jids: Vec<String> = store.contacts("a@l").await.unwrap().into_iter().map(|c| c.jid).collect();
    assert_eq!(jids, ["c0@l", "c1@l", "c2@l"], "in the order added, a change keeping its place");
    assert!(store.contacts("nobody@l").await.unwrap().is_empty());

    store.hold("b@l", "a@l", "<presence type='subscribe'/>", 2).await.unwrap();
    store.hold("b@l", "a@l", "<presence type='subscribe'>again</presence>", 2).await.unwrap();
    store.hold("b@l", "c@l", "<c/>", 2).await.unwrap();
    store.hold("b@l", "d@l", "<d/>", 2).await.unwrap();
    assert_eq!(store.pending("b@l").await.unwrap(), ["<presence type='subscribe'>again</presence>", "<c/>"], "one per requester, at most the limit");
    assert_eq!(store.waiting().await.unwrap(), 2);
    assert!(store.answered("b@l", "a@l").await.unwrap());
    assert!(!store.answered("b@l", "a@l").await.unwrap());
    store.hold("a@l", "c1@l", "<x/>", 2).await.unwrap();
    assert_eq!(store.remove_contact("a@l", "c1@l").await.unwrap(), Some(Change { contact: changed.contact, ver: 5 }));
    assert_eq!(store.remove_contact("a@l", "c1@l").await.unwrap(), None);
    assert_eq!(store.version("a@l").await.unwrap(), 5, "one removed; a request held or answered is no change");
    assert!(store.pending("a@l").await.unwrap().is_empty(), "a removed contact's request goes with it");
    store.forget("a@l").await.unwrap();
    assert!(store.contacts("a@l").await.unwrap().is_empty());
    assert_eq!(store.version("a@l").await.unwrap(), 0);
}

async fn offline_body(store: &dyn Store) {
    assert!(store.take("a@l").await.unwrap().is_empty());
    for i in 0..3 {
        assert!(store.keep("a@l", &format!("<message>{i}</message>"), 3).await.unwrap());
    }
    assert!(!store.keep("a@l", "<message>3</message>", 3).await.unwrap(), "past the limit");
    assert!(store.keep("b@l", "<message>b</message>", 3).await.unwrap(), "the limit is each user's");
    assert_eq!(store.take("a@l").await.unwrap(), ["<message>0</message>", "<message>1</message>", "<message>2</message>"]);
    assert!(store.take("a@l").await.unwrap().is_empty(), "taken once");
    assert!(store.keep("a@l", "<message>4</message>", 3).await.unwrap(), "room again once taken");
    assert_eq!(store.take("b@l").await.unwrap(), ["<message>b</message>"]);
}

async fn rooms_body(store: &dyn Store) {
    assert!(store.rooms().await.unwrap().is_empty());
    store.save_room("lobby", "{\"one\":1}", "01").await.unwrap();
    store.save_room("attic", "{}", "").await.unwrap();
    store.save_room("lobby", "{\"two\":2}", "02").await.unwrap();
    assert_eq!(store.rooms().await.unwrap(), [("attic".to_owned(), "{}".to_owned()), ("lobby".to_owned(), "{\"two\":2}".to_owned())]);
    assert_eq!(store.room("lobby").await.unwrap().as_deref(), Some("{\"two\":2}"));
    // An older version written later leaves the newer; the same one replaces.
    store.save_room("lobby", "{\"one\":1}", "01").await.unwrap();
    assert_eq!(store.room("lobby").await.unwrap().as_deref(), Some("{\"two\":2}"));
    store.save_room("lobby", "{\"again\":2}", "02").await.unwrap();
    assert_eq!(store.room("lobby").await.unwrap().as_deref(), Some("{\"again\":2}"));
    store.remove_room("attic").await.unwrap();
    store.remove_room("nowhere").await.unwrap();
    assert_eq!(store.rooms().await.unwrap().len(), 1);
    assert_eq!(store.room("attic").await.unwrap(), None);
}

fn token(agent: &str, n: u8, expires: i64) -> FastToken {
    FastToken { agent: agent.into(), mechanism: "HT-SHA-256-NONE".into(), proof: vec![n; 32], answer: vec![n + 1; 32], expires, keys: vec![n; 32], early_count: 0 }
}

async fn fast_tokens_body(store: &dyn Store) {
    assert!(store.tokens("alice").await.unwrap().is_empty());
    for n in 1..=3 {
        store.keep_token("alice", &token("phone", n, 100 * i64::from(n)), 50, 10).await.unwrap();
    }
    store.keep_token("alice", &token("laptop", 9, 90), 50, 10).await.unwrap();
    let mut kept = store.tokens("alice").await.unwrap();
    kept.sort_by_key(|t| t.proof.clone());
    assert_eq!(kept, [token("phone", 2, 200), token("phone", 3, 300), token("laptop", 9, 90)], "a client's two newest");
    // The phone logs in with its newest: the one before goes.
    store.forget_tokens("alice", "phone", 300).await.unwrap();
    assert_eq!(store.tokens("alice").await.unwrap().len(), 2);
    // Past the account's limit, the soonest to expire goes; so do expired ones.
    store.keep_token("alice", &token("tablet", 20, 400), 95, 2).await.unwrap();
    let mut kept = store.tokens("alice").await.unwrap();
    kept.sort_by_key(|t| t.expires);
    assert_eq!(kept, [token("phone", 3, 300), token("tablet", 20, 400)]);
    store.forget_tokens("alice", "tablet", i64::MAX).await.unwrap();
    assert_eq!(store.tokens("alice").await.unwrap(), [token("phone", 3, 300)]);
    // Early-data counts only go up: a count taken, or one below it, is a replay.
    assert!(store.raise_early_count("alice", &[3; 32], 1).await.unwrap());
    assert!(!store.raise_early_count("alice", &[3; 32], 1).await.unwrap(), "the same count again");
    assert!(store.raise_early_count("alice", &[3; 32], 5).await.unwrap(), "counts may skip");
    assert!(!store.raise_early_count("alice", &[3; 32], 4).await.unwrap(), "a lower one");
    assert!(!store.raise_early_count("bob", &[3; 32], 9).await.unwrap(), "another account's");
    assert!(!store.raise_early_count("alice", &[77; 32], 1).await.unwrap(), "no such token");
    assert_eq!(store.tokens("alice").await.unwrap()[0].early_count, 5);
    // A new password, or no account, ends them.
    store.create("alice", &account(1), Origin::Administrator, 0).await.unwrap();
    store.set_keys("alice", &account(2)).await.unwrap();
    assert!(store.tokens("alice").await.unwrap().is_empty());
    store.keep_token("alice", &token("phone", 4, 500), 0, 10).await.unwrap();
    store.remove("alice").await.unwrap();
    assert!(store.tokens("alice").await.unwrap().is_empty());
}

/// Entry `n`'s id, made as an [`crate::IdClock`] makes them (its time first), with
/// `n` for the tail.
fn id(n: i64) -> String {
    crate::id_of(n * 1_000_000, n as u32)
}

fn entry(archive: &str, n: i64, with: &str) -> Entry {
    Entry { archive: archive.into(), id: id(n), at: n * 1_000_000, with: with.into(), message: format!("<message><body>{n}</body></message>") }
}

/// The entries of `page`, by number.
fn ids(page: &Page) -> Vec<i64> {
    page.entries.iter().map(|e| i64::from_str_radix(&e.id[13..], 16).unwrap()).collect()
}

async fn archive_body(store: &dyn Store) {
    // a@l's archive: 10 messages, with b (even) and c (odd); another archive between.
    for n in 0..10 {
        store.append(&[entry("a@l", n, if n % 2 == 0 { "b@l" } else { "c@l" }), entry("z@l", 100 + n, "a@l")]).await.unwrap();
    }
    let page = |filter: Filter, cursor: Cursor, max| async move { store.page("a@l", &filter, &cursor, max).await.unwrap().unwrap() };
    let first = page(Filter::default(), Cursor::Oldest, 4).await;
    assert_eq!((ids(&first), first.complete), (vec![0, 1, 2, 3], false));
    assert_eq!(first.entries[2], entry("a@l", 2, "b@l"), "an entry comes back whole");
    let next = page(Filter::default(), Cursor::After(id(3)), 4).await;
    assert_eq!(ids(&next), [4, 5, 6, 7]);
    let last = page(Filter::default(), Cursor::After(id(7)), 4).await;
    assert_eq!((ids(&last), last.complete), (vec![8, 9], true));
    let newest = page(Filter::default(), Cursor::Before(None), 3).await;
    assert_eq!((ids(&newest), newest.complete), (vec![7, 8, 9], false), "backwards: the newest page, oldest first");
    let earlier = page(Filter::default(), Cursor::Before(Some(id(2))), 3).await;
    assert_eq!((ids(&earlier), earlier.complete), (vec![0, 1], true));
    let with_c = page(Filter { with: Some("c@l".into()), ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!(ids(&with_c), [1, 3, 5, 7, 9]);
    // A room's archive, which has no index by sender, narrows alike.
    for n in 0..10 {
        store.append(&[entry("/chat#lobby", 200 + n, if n % 3 == 0 { "/chat#lobby/ann" } else { "/chat#lobby/bob" })]).await.unwrap();
    }
    let ann = Filter { with: Some("/chat#lobby/ann".into()), ..Filter::default() };
    let ann = &ann;
    let room = |cursor: Cursor, max| async move { store.page("/chat#lobby", ann, &cursor, max).await };
    let newest = room(Cursor::Before(None), 3).await.unwrap().unwrap();
    assert_eq!((ids(&newest), newest.complete), (vec![203, 206, 209], false));
    let earlier = room(Cursor::Before(Some(id(203))), 3).await.unwrap().unwrap();
    assert_eq!((ids(&earlier), earlier.complete), (vec![200], true));
    let after = room(Cursor::After(id(200)), 2).await.unwrap().unwrap();
    assert_eq!((ids(&after), after.complete), (vec![203, 206], false));
    assert!(store.page("/chat#lobby", &Filter { with: Some("c@l".into()), ..Filter::default() }, &Cursor::Oldest, 5).await.unwrap().unwrap().entries.is_empty());
    store.forget_archive("/chat#lobby").await.unwrap();
    // Written out of order (senders racing to the writer), read in the
    // order of ids, both ways.
    store.append(&[entry("o@l", 32, "b@l")]).await.unwrap();
    store.append(&[entry("o@l", 31, "b@l"), entry("o@l", 33, "b@l")]).await.unwrap();
    let o = |cursor: Cursor| async move { ids(&store.page("o@l", &Filter::default(), &cursor, 2).await.unwrap().unwrap()) };
    assert_eq!(o(Cursor::Oldest).await, [31, 32]);
    assert_eq!(o(Cursor::After(id(31))).await, [32, 33]);
    assert_eq!(o(Cursor::Before(None)).await, [32, 33]);
    assert_eq!(o(Cursor::Before(Some(id(32)))).await, [31]);
    store.forget_archive("o@l").await.unwrap();
    let timed = page(Filter { start: Some(3_000_000), end: Some(5_000_000), ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!((ids(&timed), timed.complete), (vec![3, 4, 5], true));
    let inside = page(Filter { start: Some(3_000_001), end: Some(4_999_999), ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!(ids(&inside), [4], "to the microsecond");
    let since = page(Filter { start: Some(8_000_000), ..Filter::default() }, Cursor::Before(None), 10).await;
    assert_eq!(ids(&since), [8, 9]);
    let until = page(Filter { end: Some(1_000_000), ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!(ids(&until), [0, 1]);
    let between = page(Filter { after_id: Some(id(5)), before_id: Some(id(8)), ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!(ids(&between), [6, 7]);
    let chosen = page(Filter { ids: vec![id(9), id(2), "nope".into()], ..Filter::default() }, Cursor::Oldest, 10).await;
    assert_eq!(ids(&chosen), [2, 9]);
    assert_eq!(store.page("a@l", &Filter::default(), &Cursor::After(id(100)), 5).await.unwrap(), None, "another archive's id is not this one's");
    assert_eq!(store.page("a@l", &Filter { after_id: Some("nope".into()), ..Filter::default() }, &Cursor::Oldest, 5).await.unwrap(), None);
    // A room's archive, kept apart from accounts', ages and is capped alike.
    store.append(&(0..6).map(|n| entry("/chat#den", n, "/chat#den/ann")).collect::<Vec<_>>()).await.unwrap();
    assert_eq!(store.trim(2_000_000).await.unwrap(), 2 + 2, "a@l's two oldest, and the den's");
    assert_eq!(ids(&page(Filter::default(), Cursor::Oldest, 1).await), [2]);
    // Eight left in a@l, ten in z@l, four in the den: each keeps its newest three.
    assert_eq!(store.cap(3).await.unwrap(), 5 + 7 + 1);
    assert_eq!(ids(&store.page("/chat#den", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap()), [3, 4, 5]);
    assert_eq!(ids(&page(Filter::default(), Cursor::Oldest, 10).await), [7, 8, 9]);
    assert_eq!(ids(&store.page("z@l", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap()), [107, 108, 109]);
    store.forget_archive("z@l").await.unwrap();
    assert!(store.page("z@l", &Filter::default(), &Cursor::Oldest, 5).await.unwrap().unwrap().entries.is_empty());
    // A limit of none takes everything; so does retention past any id's time.
    assert_eq!(store.cap(0).await.unwrap(), 3 + 3, "a@l's and the den's");
    store.append(&[entry("a@l", 50, "b@l")]).await.unwrap();
    assert_eq!(store.trim(i64::MAX).await.unwrap(), 1);
    assert!(store.page("a@l", &Filter::default(), &Cursor::Oldest, 5).await.unwrap().unwrap().entries.is_empty());
}

async fn prefs_body(store: &dyn Store) {
    assert_eq!(store.prefs("a@l").await.unwrap(), None, "none set");
    let prefs = Prefs { default: Keep::Roster, always: vec!["b@l".into(), "c@l/phone".into()], never: vec!["d@l".into()] };
    store.set_prefs("a@l", &prefs).await.unwrap();
    store.set_prefs("e@l", &Prefs { default: Keep::Never, ..Prefs::default() }).await.unwrap();
    assert_eq!(store.prefs("a@l").await.unwrap().as_ref(), Some(&prefs));
    let emptied = Prefs { default: Keep::Always, always: Vec::new(), never: vec!["d@l".into()] };
    store.set_prefs("a@l", &emptied).await.unwrap();
    assert_eq!(store.prefs("a@l").await.unwrap(), Some(emptied), "set again, replaced whole");
    assert_eq!(store.prefs("e@l").await.unwrap(), Some(Prefs { default: Keep::Never, ..Prefs::default() }), "an empty list comes back empty");
    // The account's archive forgotten (it is gone), its preferences go with it.
    store.append(&[entry("a@l", 1, "b@l")]).await.unwrap();
    store.forget_archive("a@l").await.unwrap();
    assert_eq!(store.prefs("a@l").await.unwrap(), None);
    assert!(store.prefs("e@l").await.unwrap().is_some());
}

#[tokio::test]
async fn every_store_keeps_archiving_preferences_alike() {
    for store in &stores().await.list {
        prefs_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_archives_alike() {
    for store in &stores().await.list {
        archive_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_fast_tokens_alike() {
    for store in &stores().await.list {
        fast_tokens_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_rooms_alike() {
    for store in &stores().await.list {
        rooms_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_offline_messages_alike() {
    for store in &stores().await.list {
        offline_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_accounts_alike() {
    for store in &stores().await.list {
        accounts_body(&**store).await;
    }
}

#[tokio::test]
async fn every_store_keeps_rosters_alike() {
    for store in &stores().await.list {
        rosters_body(&**store).await;
    }
}

async fn kept_when_opened_again(choice: Choice) {
    {
        let store = open(&choice).await.unwrap();
        assert!(store.persistent());
        store.create("alice", &account(1), Origin::Registration, 5).await.unwrap();
        store.update("alice@l", "bob@l", true, 5, &mut |c| c.subscription.to = true).await.unwrap();
        store.hold("alice@l", "cy@l", "<presence/>", 5).await.unwrap();
        store.set_prefs("alice@l", &Prefs { default: Keep::Never, always: vec!["bob@l".into()], never: Vec::new() }).await.unwrap();
    }
    let again = open(&choice).await.unwrap();
    assert_eq!(again.account("alice").await.unwrap(), Some(account(1)));
    assert_eq!(again.contacts("alice@l").await.unwrap()[0].subscription, Subscription { to: true, from: false });
    assert_eq!(again.pending("alice@l").await.unwrap(), ["<presence/>"]);
    assert_eq!(again.prefs("alice@l").await.unwrap().map(|p| (p.default, p.always)), Some((Keep::Never, vec!["bob@l".to_owned()])));
    assert_eq!(again.create("zed", &account(2), Origin::Registration, 1).await.unwrap(), Created::Full, "the bound counts what was kept");
}

#[tokio::test]
async fn the_databases_keep_what_they_were_given_when_opened_again() {
    let dir = tempfile::tempdir().unwrap();
    kept_when_opened_again(Choice::Sqlite(dir.path().join("deeper"))).await;
    let postgres = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    kept_when_opened_again(Choice::Postgres(postgres.url.clone())).await;
}

/// Two processes opening one new SQLite file at once (a server starting
/// and `switchboard account add`) bring its schema up to date once: the
/// other waits, then finds nothing left to do.
#[tokio::test]
async fn stores_opening_one_new_sqlite_file_at_once_both_open() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let choice = Choice::Sqlite(dir.path().to_owned());
        let (a, b) = tokio::join!(open(&choice), open(&choice));
        let (a, b) = (a.unwrap_or_else(|e| panic!("{e}")), b.unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(a.create("alice", &account(1), Origin::Registration, 2).await.unwrap(), Created::Made);
        assert_eq!(b.account("alice").await.unwrap(), Some(account(1)));
    }
}

/// Two stores on one PostgreSQL database (two nodes' worth) see each
/// other's writes, and registration's bound holds across them.
#[tokio::test]
async fn two_stores_on_one_postgres_database_share_what_they_keep() {
    let postgres = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let a = open(&Choice::Postgres(postgres.url.clone())).await.unwrap();
    let b = open(&Choice::Postgres(postgres.url.clone())).await.unwrap();
    assert_eq!(a.create("alice", &account(1), Origin::Registration, 2).await.unwrap(), Created::Made);
    assert_eq!(b.account("alice").await.unwrap(), Some(account(1)));
    assert_eq!(b.create("alice", &account(2), Origin::Registration, 2).await.unwrap(), Created::Taken);
    let (bob, cy) = (account(3), account(4));
    let (one, two) = tokio::join!(a.create("bob", &bob, Origin::Registration, 2), b.create("cy", &cy, Origin::Registration, 2));
    let made = [one.unwrap(), two.unwrap()].iter().filter(|c| **c == Created::Made).count();
    assert_eq!(made, 1, "one place left, taken once");
    b.update("alice@l", "bob@l", true, 5, &mut |c| c.ask = true).await.unwrap();
    assert!(a.contact("alice@l", "bob@l").await.unwrap().unwrap().ask);
}

/// An append is all or none: in a batch of more than one statement's rows,
/// an id its archive has already refuses the whole batch, an error that
/// says the rows were refused (the writer then tries each write alone).
#[tokio::test]
async fn an_append_with_an_id_already_kept_keeps_none_of_its_batch() {
    let stores = stores().await;
    for store in &stores.list[1..] {
        store.append(&[entry("a@l", 7, "b@l")]).await.unwrap();
        let batch: Vec<Entry> = (100..300).chain([7]).map(|n| entry("a@l", n, "b@l")).collect();
        let refused = store.append(&batch).await.expect_err("an id kept already");
        assert!(refused.refused(), "{refused}");
        let page = store.page("a@l", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap();
        assert_eq!(ids(&page), [7]);
        store.append(&[entry("a@l", 8, "b@l")]).await.unwrap();
        assert_eq!(ids(&store.page("a@l", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap()), [7, 8], "the store goes on");
    }
}

/// PostgreSQL's text holds no NUL, which a chat message may carry: one
/// such message must not refuse its batch, everyone's messages of those
/// 250 ms. Both databases keep it as U+FFFD.
#[tokio::test]
async fn a_nul_in_a_message_is_kept_as_a_replacement_character() {
    let stores = stores().await;
    for store in &stores.list[1..] {
        let mut nul = entry("/chat#lobby", 1, "/chat#lobby/ann");
        nul.message = "a\0b".into();
        store.append(&[nul, entry("/chat#lobby", 2, "/chat#lobby/bob")]).await.unwrap();
        let page = store.page("/chat#lobby", &Filter::default(), &Cursor::Oldest, 10).await.unwrap().unwrap();
        assert_eq!(ids(&page), [1, 2], "the batch is kept");
        assert_eq!(page.entries[0].message, "a\u{fffd}b");
    }
}

#[tokio::test]
async fn a_database_that_cannot_be_opened_is_refused_with_its_address_but_not_its_password() {
    let postgres = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let url = postgres.url.replace("switchboard@", "switchboard:secret@").replace("/postgres", "/nowhere");
    let error = open(&Choice::Postgres(url)).await.unwrap_err().to_string();
    assert!(error.contains("cannot connect to postgres://switchboard@127.0.0.1:") && error.contains("nowhere") && !error.contains("secret"), "{error}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(SqlStore::file_in(dir.path()), b"this is not a database, and it is long enough to have a header").unwrap();
    let error = open(&Choice::Sqlite(dir.path().to_owned())).await.unwrap_err().to_string();
    assert!(error.contains("switchboard.db"), "{error}");
}

/// What a SQLite store keeps, copied into a new PostgreSQL database, is
/// read back there alike; a database that keeps something already is not
/// copied into.
#[tokio::test]
async fn a_sqlite_store_is_copied_into_postgres_whole() {
    let dir = tempfile::tempdir().unwrap();
    let postgres = PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let (from, to) = (Choice::Sqlite(dir.path().to_owned()), Choice::Postgres(postgres.url.clone()));
    let sqlite = open(&from).await.unwrap();
    sqlite.create("alice", &account(1), Origin::Registration, 10).await.unwrap();
    sqlite.create("bob", &account(2), Origin::Administrator, 0).await.unwrap();
    for jid in ["c@l", "b@l"] {
        sqlite.update("alice@l", jid, true, 10, &mut |c: &mut Contact| c.name = Some(jid.to_uppercase())).await.unwrap();
    }
    sqlite.update("alice@l", "c@l", true, 10, &mut |c: &mut Contact| c.subscription.to = true).await.unwrap();
    sqlite.hold("bob@l", "x@l", "<presence type='subscribe'/>", 10).await.unwrap();
    for text in ["first", "second"] {
        sqlite.keep("bob@l", text, 10).await.unwrap();
    }
    sqlite.save_room("plans", "{}", "0a").await.unwrap();
    sqlite.keep_token("bob", &token("phone", 1, 100), 0, 10).await.unwrap();
    // Two rooms' archives, more than a chunk of the copy between them.
    let entries: Vec<Entry> = (0..1234).map(|n| entry(["/chat#lobby", "/chat#kitchen", "alice@l"][n as usize % 3], n, "b@l")).collect();
    sqlite.append(&entries).await.unwrap();
    let prefs = Prefs { default: Keep::Roster, always: vec!["b@l".into()], never: vec!["c@l/x".into(), "d@l".into()] };
    sqlite.set_prefs("alice@l", &prefs).await.unwrap();
    drop(sqlite);

    let copied = copy(&from, &to).await.unwrap();
    assert_eq!(copied, [("account", 2), ("contact", 2), ("subscription_request", 1), ("roster_version", 1), ("offline_message", 2), ("room", 1), ("fast_token", 1), ("archive_prefs", 1), ("archive", 411), ("room_archive", 823)]);
    let pg = open(&to).await.unwrap();
    assert_eq!(pg.account("alice").await.unwrap(), Some(account(1)));
    assert_eq!(pg.names().await.unwrap(), ["alice", "bob"]);
    assert_eq!(pg.create("carl", &account(3), Origin::Registration, 1).await.unwrap(), Created::Full, "alice still counts as registered");
    let contacts = pg.contacts("alice@l").await.unwrap();
    assert_eq!(contacts.iter().map(|c| (c.jid.as_str(), c.name.as_deref(), c.subscription.to)).collect::<Vec<_>>(), [("c@l", Some("C@L"), true), ("b@l", Some("B@L"), false)]);
    assert_eq!(pg.version("alice@l").await.unwrap(), 3);
    assert_eq!(pg.pending("bob@l").await.unwrap(), ["<presence type='subscribe'/>"]);
    assert_eq!(pg.take("bob@l").await.unwrap(), ["first", "second"]);
    assert_eq!(pg.rooms().await.unwrap(), [("plans".to_owned(), "{}".to_owned())]);
    pg.save_room("plans", "{\"older\":1}", "09").await.unwrap();
    assert_eq!(pg.room("plans").await.unwrap().as_deref(), Some("{}"), "its version copied too");
    assert_eq!(pg.tokens("bob").await.unwrap(), [token("phone", 1, 100)]);
    assert_eq!(pg.prefs("alice@l").await.unwrap(), Some(prefs));
    let newest = pg.page("alice@l", &Filter::default(), &Cursor::Before(None), 2).await.unwrap().unwrap();
    assert_eq!(ids(&newest), [1229, 1232]);
    let room = pg.page("/chat#lobby", &Filter::default(), &Cursor::Oldest, 2).await.unwrap().unwrap();
    assert_eq!((ids(&room), room.entries[0].clone()), (vec![0, 3], entry("/chat#lobby", 0, "b@l")));
    let kitchen = pg.page("/chat#kitchen", &Filter::default(), &Cursor::Before(None), 500).await.unwrap().unwrap();
    assert_eq!(ids(&kitchen), (1..1234).step_by(3).collect::<Vec<i64>>(), "all 411 of the second room, in order");
    // The archive goes on after what was copied.
    pg.append(&[entry("alice@l", 5000, "b@l")]).await.unwrap();
    assert_eq!(ids(&pg.page("alice@l", &Filter::default(), &Cursor::Before(None), 1).await.unwrap().unwrap()), [5000]);

    let again = copy(&from, &to).await.unwrap_err();
    assert!(again.to_string().contains("already keeps"), "{again}");
    assert!(copy(&Choice::Memory, &to).await.is_err());
}
