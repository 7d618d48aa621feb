//! The store as a user meets it through the binary: `switchboard account`
//! writes where `serve` reads, and what the server confirmed is still there
//! after it is stopped (SIGTERM) or killed (SIGKILL) and started again.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sqlx::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wire::xmpp::{Element, StreamEvent};

#[path = "support/xmpp.rs"]
mod xmpp_client;
use xmpp_client::Client;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

fn account(dir: &Path, args: &[&str], password: Option<&str>) -> (bool, String, String) {
    let mut child = Command::new(BIN)
        .args(["account", "--data-dir"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(password) = password {
        writeln!(stdin, "{password}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_account_command_adds_lists_changes_and_removes_accounts() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(account(dir.path(), &["add", "Zoe"], Some("first")), (true, "added zoe\n".into(), String::new()));
    assert!(account(dir.path(), &["add", "bob"], Some("pw")).0);
    let (ok, _, err) = account(dir.path(), &["add", "zoe"], Some("again"));
    assert!(!ok && err.contains("zoe has an account already"), "{err}");
    let (ok, _, err) = account(dir.path(), &["add", "a b"], Some("pw"));
    assert!(!ok && err.contains("not a JID localpart"), "{err}");
    let (ok, _, err) = account(dir.path(), &["add", "cy"], None);
    assert!(!ok && err.contains("standard input"), "{err}");
    assert_eq!(account(dir.path(), &["list"], None).1, "bob\nzoe\n");
    assert_eq!(account(dir.path(), &["passwd", "zoe"], Some("second")).1, "changed the password of zoe\n");
    assert_eq!(account(dir.path(), &["remove", "bob"], None).1, "removed bob\n");
    let (ok, _, err) = account(dir.path(), &["remove", "bob"], None);
    assert!(!ok && err.contains("bob has no account"), "{err}");
    assert_eq!(account(dir.path(), &["list"], None).1, "zoe\n");
    let (ok, _, err) = Command::new(BIN).args(["account", "--store", "memory", "list"]).output().map(|o| (o.status.success(), (), String::from_utf8_lossy(&o.stderr).into_owned())).unwrap();
    assert!(!ok && err.contains("keeps nothing"), "{err}");
}

/// `serve` on free ports with its store in `dir`; the child and its XMPP address.
fn serve(dir: &Path) -> (Child, SocketAddr) {
    serve_on(&["--data-dir", dir.to_str().unwrap()])
}

/// The server on the store `store` names (its flags).
fn serve_on(store: &[&str]) -> (Child, SocketAddr) {
    let served = start(store, None);
    (served.child, served.xmpp)
}

/// A server `start` started.
struct Served {
    child: Child,
    http: SocketAddr,
    xmpp: SocketAddr,
    /// The lines it logs, read as they come, so that none is dropped for
    /// want of room (past 10,000 waiting, the server drops lines).
    logged: std::thread::JoinHandle<Vec<String>>,
}

/// `serve` on free ports on the store `store` names (its flags), each
/// file it writes held to `bytes` if given (`RLIMIT_FSIZE`, with `SIGXFSZ`
/// ignored, which stays so across `exec`: a write past it fails as on a
/// full disk).
fn start(store: &[&str], bytes: Option<u64>) -> Served {
    let mut command = match bytes {
        Some(bytes) => {
            let mut limited = Command::new("bash");
            limited.args(["-c", "trap '' XFSZ; exec prlimit --fsize=\"$0\" -- \"$@\"", &bytes.to_string(), BIN]);
            limited
        }
        None => Command::new(BIN),
    };
    let mut child = command
        .args(["serve", "--listen", "127.0.0.1:0", "--xmpp-listen", "127.0.0.1:0", "--irc-listen", "off", "--xmpp-plain-unencrypted", "true", "--xmpp-registration", "100"])
        .args(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let errors = BufReader::new(child.stderr.take().unwrap()).lines();
    let logged = std::thread::spawn(move || errors.map_while(Result::ok).collect());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut http = None;
    let xmpp = lines
        .find_map(|line| {
            let line = line.unwrap();
            if let Some(at) = line.strip_prefix("switchboard listening on http://") {
                http = at.split('/').next().map(|a| a.parse().unwrap());
            }
            line.split("serves XMPP for localhost on ").nth(1).map(|at| at.parse().unwrap())
        })
        .expect("the server starts");
    std::thread::spawn(move || lines.for_each(drop));
    Served { child, http: http.expect("its HTTP address first"), xmpp, logged }
}

/// The value of `metric` on the server at `http`, 0 if it has none yet.
async fn metric(http: SocketAddr, metric: &str) -> f64 {
    let mut stream = TcpStream::connect(http).await.unwrap();
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").await.unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text.lines().find_map(|line| line.strip_prefix(metric)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

/// Stops `child` with `signal` (`KILL`, or `TERM` for a graceful stop)
/// and waits for it to end.
fn stop(mut child: Child, signal: &str) {
    let sent = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().unwrap();
    assert!(sent.success());
    child.wait().unwrap();
}

#[tokio::test]
async fn what_the_server_confirmed_outlives_sigkill() {
    outlives("KILL").await;
}

#[tokio::test]
async fn what_the_server_confirmed_outlives_sigterm() {
    outlives("TERM").await;
}

/// Registers `name` in band on a stream of its own.
async fn register(addr: SocketAddr, name: &str) {
    let mut c = Client::open(addr).await;
    let registered = c.ask(&format!("<iq type='set' id='r'><query xmlns='jabber:iq:register'><username>{name}</username><password>pw</password></query></iq>"), "r").await;
    assert_eq!(registered.get("type"), Some("result"), "{name} registered");
}

/// Kim registers, adds a contact, sends lee (registered, offline) a
/// message, and makes a persistent room with a message in it; each
/// confirmed, the server is stopped with `signal`. After a restart: the
/// roster is there, lee is given the message at her login with its delay
/// stamp and not again at the next, and the room greets kim with its
/// message, once.
async fn outlives(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (first, addr) = serve(dir.path());
    register(addr, "kim").await;
    register(addr, "lee").await;
    let mut kim = Client::login(addr, "kim").await;
    let added = kim.ask("<iq type='set' id='add'><query xmlns='jabber:iq:roster'><item jid='lee@localhost' name='Lee'/></query></iq>", "add").await;
    assert_eq!(added.get("type"), Some("result"));
    // Kept for lee before kim's next stanza is read.
    kim.send("<message to='lee@localhost' type='chat' id='off'><body>while you were away</body></message>").await;
    kim.send(&format!("<presence to='{DEN}/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
    kim.until(|e| e.name == "presence" && e.get("from") == Some(&format!("{DEN}/kim"))).await;
    let form = format!(
        "<iq type='set' id='cfg' to='{DEN}'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'>\
         <field var='muc#roomconfig_persistentroom'><value>1</value></field></x></query></iq>"
    );
    assert_eq!(kim.ask(&form, "cfg").await.get("type"), Some("result"));
    kim.send(&format!("<message to='{DEN}' type='groupchat'><body>kept in the den</body></message>")).await;
    kim.until(|e| e.name == "message" && e.get("type") == Some("groupchat") && e.find("body", "jabber:client").is_some()).await;
    // A query of the room's archive waits for what was queued before it.
    let query = format!("<iq type='set' id='q' to='{DEN}'><query xmlns='urn:xmpp:mam:2' queryid='q'/></iq>");
    kim.send(&query).await;
    let found = kim.until(|e| e.name == "message" && e.find("result", "urn:xmpp:mam:2").is_some()).await;
    assert!(found.to_xml("jabber:client").contains("kept in the den"), "{found:?}");
    kim.until(|e| e.get("id") == Some("q")).await;
    // Confirmed, then stopped: with SIGKILL, no shutdown of any kind.
    stop(first, signal);

    let (second, addr) = serve(dir.path());
    let mut kim = Client::login(addr, "kim").await;
    let roster = kim.ask("<iq type='get' id='get'><query xmlns='jabber:iq:roster'/></iq>", "get").await;
    let items: Vec<_> = roster.find("query", "jabber:iq:roster").unwrap().elements().map(|i| (i.get("jid").unwrap().to_owned(), i.get("name").unwrap().to_owned())).collect();
    assert_eq!(items, [("lee@localhost".to_owned(), "Lee".to_owned())]);
    let mut lee = Client::login(addr, "lee").await;
    lee.send("<presence/>").await;
    let kept = lee.until(|e| e.name == "message").await;
    let body = |e: &Element| e.find("body", "jabber:client").map(|b| b.text_content()).unwrap_or_default();
    assert_eq!((kept.get("id"), body(&kept).as_str()), (Some("off"), "while you were away"));
    assert!(kept.find("delay", "urn:xmpp:delay").is_some(), "{kept:?}");
    // Given once: the next login has nothing kept, up to a ping's answer.
    drop(lee);
    let mut lee = Client::login(addr, "lee").await;
    lee.send("<presence/><iq type='get' id='after'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let (before, _) = lee.until_answer("after").await;
    assert!(!before.iter().any(|e| e.name == "message"), "{before:?}");
    // The room is there, and greets kim with its message, once.
    kim.send(&format!("<presence to='{DEN}/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
    let mut history = Vec::new();
    loop {
        let stanza = kim.stanza().await;
        if stanza.find("subject", "jabber:client").is_some() {
            break;
        }
        if stanza.name == "message" {
            history.push(body(&stanza));
        }
    }
    assert_eq!(history, ["kept in the den"]);
    // An account added beside the running server logs in at once.
    assert!(account(dir.path(), &["add", "ann"], Some("pw")).0);
    Client::login(addr, "ann").await;
    stop(second, "KILL");
}

const DEN: &str = "den@conference.localhost";

/// Under a stream of messages, the server is killed (SIGKILL) just after it
/// acknowledged some (XEP-0198): after a restart, both archives hold every
/// acknowledged message, in order, once, and nothing the sender did not send.
#[tokio::test]
async fn every_acknowledged_message_is_archived_once_and_in_order_after_sigkill() {
    acknowledged_messages_outlive_sigkill(|n| format!("<message to='lee@localhost' type='chat' id='m{n}'><body>{n}</body></message>"), &[("kim", None), ("lee", None)]).await;
}

/// The same in a room: every groupchat message the server acknowledged is
/// in the room's archive after a SIGKILL and a restart, in order, once.
#[tokio::test]
async fn every_acknowledged_room_message_is_archived_once_and_in_order_after_sigkill() {
    acknowledged_messages_outlive_sigkill(|n| format!("<message to='{ROOM}' type='groupchat' id='m{n}'><body>m{n}</body></message>"), &[("lee", Some(ROOM))]).await;
}

const ROOM: &str = "lobby@conference.localhost";

/// Kim sends 2,000 messages made by `message`, asking for an
/// acknowledgement every 50; once a tenth are acknowledged the server is
/// killed; after a restart each of `archives` (a user, and the JID whose
/// archive it reads, its own if none) holds a gapless prefix of them that
/// covers the acknowledged ones.
async fn acknowledged_messages_outlive_sigkill(message: impl Fn(usize) -> String, archives: &[(&str, Option<&str>)]) {
    const SENT: usize = 2000;
    let dir = tempfile::tempdir().unwrap();
    for name in ["kim", "lee"] {
        assert!(account(dir.path(), &["add", name], Some("pw")).0);
    }
    let (server, addr) = serve(dir.path());
    let mut lee = Client::login(addr, "lee").await;
    lee.stream.write_all(b"<presence/>").await.unwrap();
    let mut kim = Client::login(addr, "kim").await;
    kim.stream.write_all(format!("<presence to='{ROOM}/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>").as_bytes()).await.unwrap();
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    kim.stream.write_all(b"<enable xmlns='urn:xmpp:sm:3'/>").await.unwrap();
    let enabled = kim.stanza().await;
    assert_eq!(enabled.name, "enabled", "{enabled:?}");
    let mut burst = String::new();
    for n in 0..SENT {
        burst.push_str(&message(n));
        if n % 50 == 49 {
            burst.push_str("<r xmlns='urn:xmpp:sm:3'/>");
        }
    }
    let (mut reader, mut writer) = kim.stream.into_split();
    let sending = tokio::spawn(async move {
        // The server may be killed while this is still being written.
        let _ = writer.write_all(burst.as_bytes()).await;
        writer
    });
    // Acknowledgements until one says a tenth of the messages were handled.
    let mut acked = 0;
    while acked < SENT / 10 {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(20), reader.read(&mut buf)).await.expect("an ack in time").unwrap();
        assert!(n > 0, "the server closed the stream");
        kim.parser.feed(&buf[..n]);
        while let Some(event) = kim.parser.next_event().unwrap() {
            if let StreamEvent::Stanza(a) = event
                && a.name == "a"
            {
                acked = acked.max(a.get("h").unwrap().parse::<usize>().unwrap());
            }
        }
    }
    stop(server, "KILL");
    drop(sending);
    drop(lee);

    let (again, addr) = serve(dir.path());
    for &(name, archive) in archives {
        let mut c = Client::login(addr, name).await;
        let to = archive.map(|jid| format!(" to='{jid}'")).unwrap_or_default();
        let mut ids = Vec::new();
        let mut after = String::new();
        loop {
            let set = if after.is_empty() { "<max>250</max>".to_owned() } else { format!("<max>250</max><after>{after}</after>") };
            c.stream.write_all(format!("<iq type='set' id='q'{to}><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'>{set}</set></query></iq>").as_bytes()).await.unwrap();
            let fin = loop {
                let stanza = c.stanza().await;
                if let Some(result) = stanza.find("result", "urn:xmpp:mam:2") {
                    let message = result.find("forwarded", "urn:xmpp:forward:0").unwrap().find("message", "jabber:client").unwrap();
                    // A room's archive keeps the text; a user's, the stanza with its id.
                    let id = message.get("id").map(str::to_owned).unwrap_or_else(|| message.find("body", "jabber:client").unwrap().text_content());
                    ids.push(id);
                } else if stanza.get("id") == Some("q") {
                    assert_eq!(stanza.get("type"), Some("result"), "{stanza:?}");
                    break stanza;
                }
            };
            let fin = fin.find("fin", "urn:xmpp:mam:2").unwrap();
            if fin.get("complete") == Some("true") {
                break;
            }
            after = fin.find("set", "http://jabber.org/protocol/rsm").unwrap().find("last", "http://jabber.org/protocol/rsm").unwrap().text_content();
        }
        // What was kept is what was sent, from the first, with no gap and no repeat.
        let expected: Vec<String> = (0..ids.len()).map(|n| format!("m{n}")).collect();
        assert_eq!(ids, expected, "{name}'s archive");
        assert!(ids.len() >= acked && ids.len() <= SENT, "{name}: {} kept, {acked} acknowledged", ids.len());
    }
    stop(again, "KILL");
}

/// `switchboard store copy` moves a stopped server's SQLite store into a new
/// PostgreSQL database: a server started on that has its accounts and the
/// message it kept for a user who was offline.
#[tokio::test]
async fn store_copy_moves_a_sqlite_store_to_postgres() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["kim", "lee"] {
        assert!(account(dir.path(), &["add", name], Some("pw")).0);
    }
    let (server, addr) = serve(dir.path());
    let mut kim = Client::login(addr, "kim").await;
    kim.stream.write_all(b"<message to='lee@localhost' type='chat' id='moved'><body>see you on the other side</body></message>").await.unwrap();
    // Answered after the message was kept.
    kim.ask("<iq type='get' id='sync'><query xmlns='jabber:iq:roster'/></iq>", "sync").await;
    stop(server, "TERM");

    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(BIN).args(["store", "--data-dir"]).arg(dir.path()).args(["copy", "--to-database", &postgres.url]).output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(printed.contains("account: 2 copied\n") && printed.contains("offline_message: 1 copied\n"), "{printed}");
    // Not twice into the same database.
    let again = Command::new(BIN).args(["store", "--data-dir"]).arg(dir.path()).args(["copy", "--to-database", &postgres.url]).output().unwrap();
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("already keeps"));

    let (moved, addr) = serve_on(&["--store", "postgres", "--database", &postgres.url]);
    let mut lee = Client::login(addr, "lee").await;
    lee.stream.write_all(b"<presence/>").await.unwrap();
    let kept = loop {
        let stanza = lee.stanza().await;
        if stanza.name == "message" {
            break stanza;
        }
    };
    assert_eq!((kept.get("id"), kept.find("body", "jabber:client").map(Element::text_content)), (Some("moved"), Some("see you on the other side".to_owned())));
    stop(moved, "KILL");
}

/// A disk that fills while the server runs (each file it writes held to
/// 512 KiB): what needs the store fails, counted, with an error to whoever
/// asked (an in-band registration: `internal-server-error`); a room's
/// messages, whose archiving fails, are all delivered, in order.
#[tokio::test]
async fn a_full_disk_fails_what_needs_the_store_and_chat_goes_on() {
    const ROUNDS: usize = 40;
    const EACH: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    for name in ["kim", "lee"] {
        assert!(account(dir.path(), &["add", name], Some("pw")).0);
    }
    let Served { child: server, http, xmpp: addr, logged } = start(&["--data-dir", dir.path().to_str().unwrap()], Some(512 << 10));
    let mut lee = Client::login(addr, "lee").await;
    lee.stream.write_all(format!("<presence to='{ROOM}/lee'><x xmlns='http://jabber.org/protocol/muc'/></presence>").as_bytes()).await.unwrap();
    while lee.stanza().await.find("subject", "jabber:client").is_none() {}
    // Made by lee, so locked until configured (XEP-0045 §10.1): an instant room.
    let instant = format!("<iq type='set' id='c' to='{ROOM}'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>");
    assert_eq!(lee.ask(&instant, "c").await.get("type"), Some("result"));
    let mut kim = Client::login(addr, "kim").await;
    kim.stream.write_all(format!("<presence to='{ROOM}/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>").as_bytes()).await.unwrap();
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    let text = "x".repeat(400);
    let mut refused = None;
    let mut sent = 0;
    for round in 0..ROUNDS {
        let burst: String = (sent..sent + EACH).map(|n| format!("<message to='{ROOM}' type='groupchat'><body>{n} {text}</body></message>")).collect();
        kim.stream.write_all(burst.as_bytes()).await.unwrap();
        // Lee is given every one, in order, whatever the archive does.
        let mut got = sent;
        while got < sent + EACH {
            let stanza = lee.stanza().await;
            if let Some(body) = stanza.find("body", "jabber:client") {
                assert_eq!(body.text_content().split(' ').next(), Some(got.to_string().as_str()), "in order, none lost");
                got += 1;
            }
        }
        sent += EACH;
        if metric(http, "switchboard_store_failures_total{what=\"archive\"}").await == 0.0 {
            continue;
        }
        // The archive has failed: a registration now may too, once the
        // database can no longer make room by checkpointing.
        let mut newcomer = Client::open(addr).await;
        let form = format!("<iq type='set' id='r'><query xmlns='jabber:iq:register'><username>new{round}</username><password>pw</password></query></iq>");
        let answer = newcomer.ask(&form, "r").await;
        if answer.get("type") == Some("error") {
            refused = Some(answer);
            break;
        }
    }
    let refused = refused.unwrap_or_else(|| panic!("no registration refused after {sent} messages"));
    let error = refused.find("error", "jabber:client").unwrap();
    assert_eq!(error.get("type"), Some("wait"), "{refused:?}");
    assert!(error.find("internal-server-error", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
    assert!(metric(http, "switchboard_store_failures_total{what=\"accounts\"}").await >= 1.0);
    // And the room still carries messages.
    kim.stream.write_all(format!("<message to='{ROOM}' type='groupchat'><body>{sent} after</body></message>").as_bytes()).await.unwrap();
    while lee.stanza().await.find("body", "jabber:client").is_none_or(|b| b.text_content() != format!("{sent} after")) {}
    stop(server, "KILL");
    let logged = logged.join().unwrap();
    assert!(logged.iter().any(|line| line.contains("archive entries not kept")), "the failure is logged: {logged:?}");
}

/// `serve` on the store in `dir`, writing at most `bytes` to any file
/// when given (what a full disk allows): whether it failed before it
/// served (within a minute), and what it said.
fn serve_until_it_stops(dir: &Path, bytes: Option<u64>) -> (bool, String) {
    let limit = bytes.map_or_else(String::new, |bytes| format!("prlimit --fsize={bytes} --"));
    let script = format!("trap '' XFSZ; exec timeout 60 {limit} \"$0\" serve --listen 127.0.0.1:0 --xmpp-listen 127.0.0.1:0 --irc-listen off --data-dir \"$1\"");
    let out = Command::new("bash").args(["-c", &script, BIN]).arg(dir).output().unwrap();
    let stopped = out.status.code().is_some_and(|code| code != 0 && code != 124);
    (stopped, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A database that cannot be opened for writing as the server starts
/// stops it at once, saying which file and why: one another program holds
/// locked (after SQLite's busy timeout, 5 s), and one on a disk with no
/// room for its WAL index or its tables (a limit on the size of the files
/// the server writes stands for a full disk).
#[tokio::test]
async fn a_database_locked_or_full_as_the_server_starts_stops_it_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("switchboard.db");
    let mut lock = sqlx::SqliteConnection::connect(&format!("sqlite://{}?mode=rwc", file.display())).await.unwrap();
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut lock).await.unwrap();
    let (stopped, said) = serve_until_it_stops(dir.path(), None);
    assert!(stopped && said.contains(&format!("cannot open {}", file.display())) && said.contains("database is locked"), "{said}");
    drop(lock);
    for bytes in [8 << 10, 40 << 10] {
        let dir = tempfile::tempdir().unwrap();
        let (stopped, said) = serve_until_it_stops(dir.path(), Some(bytes));
        let file = dir.path().join("switchboard.db");
        assert!(stopped && said.contains(&file.display().to_string()) && said.contains("disk I/O error"), "{bytes} bytes: {said}");
        assert!(!said.contains("timed out"), "the database's own error, at once: {said}");
    }
}

/// A database another program holds locked (SQLite, `BEGIN EXCLUSIVE`):
/// a write waits SQLite's busy timeout (5 s), then fails, counted, with an
/// error to whoever asked; logins and a room's messages go on meanwhile,
/// and writes work again once the lock is let go.
#[tokio::test]
async fn a_locked_database_fails_what_writes_and_the_rest_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    assert!(account(dir.path(), &["add", "kim"], Some("pw")).0);
    let Served { child: server, http, xmpp: addr, .. } = start(&["--data-dir", dir.path().to_str().unwrap()], None);
    let register = |name: &str| format!("<iq type='set' id='r'><query xmlns='jabber:iq:register'><username>{name}</username><password>pw</password></query></iq>");
    // A write first, so that what the server writes as it starts is done.
    assert_eq!(Client::open(addr).await.ask(&register("bob"), "r").await.get("type"), Some("result"));
    let file = dir.path().join("switchboard.db");
    let mut lock = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display())).await.unwrap();
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut lock).await.unwrap();
    let answer = Client::open(addr).await.ask(&register("ann"), "r").await;
    let error = answer.find("error", "jabber:client").unwrap_or_else(|| panic!("{answer:?}"));
    assert_eq!(error.get("type"), Some("wait"), "{answer:?}");
    assert!(error.find("internal-server-error", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{answer:?}");
    assert!(metric(http, "switchboard_store_failures_total{what=\"accounts\"}").await >= 1.0);
    // Reads go on: kim logs in, and talks in a room.
    let mut kim = Client::login(addr, "kim").await;
    kim.stream.write_all(format!("<presence to='{ROOM}/kim'><x xmlns='http://jabber.org/protocol/muc'/></presence>").as_bytes()).await.unwrap();
    while kim.stanza().await.find("subject", "jabber:client").is_none() {}
    kim.stream.write_all(format!("<message to='{ROOM}' type='groupchat'><body>still here</body></message>").as_bytes()).await.unwrap();
    while kim.stanza().await.find("body", "jabber:client").is_none_or(|b| b.text_content() != "still here") {}
    sqlx::query("ROLLBACK").execute(&mut lock).await.unwrap();
    let answer = Client::open(addr).await.ask(&register("ann"), "r").await;
    assert_eq!(answer.get("type"), Some("result"), "registered once the lock is let go: {answer:?}");
    // The message the lock held is in the room's archive once it went (a
    // query waits for what was queued before it), and the writer's
    // metrics say that nothing waits now and how long its last batch did.
    kim.stream.write_all(format!("<iq type='set' id='q' to='{ROOM}'><query xmlns='urn:xmpp:mam:2' queryid='q'/></iq>").as_bytes()).await.unwrap();
    let (results, answer) = kim.until_answer("q").await;
    assert_eq!(answer.get("type"), Some("result"), "{answer:?}");
    let found: Vec<String> = results
        .iter()
        .filter_map(|stanza| stanza.find("result", "urn:xmpp:mam:2")?.find("forwarded", "urn:xmpp:forward:0")?.find("message", "jabber:client")?.find("body", "jabber:client").map(Element::text_content))
        .collect();
    assert_eq!(found, ["still here"]);
    assert_eq!(metric(http, "switchboard_archive_queue").await, 0.0);
    assert!(metric(http, "switchboard_archive_lag_seconds").await > 0.0);
    stop(server, "KILL");
}
