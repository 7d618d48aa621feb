//! What the store keeps across a restart of the server: accounts made by
//! in-band registration, rosters, and subscription requests and messages
//! waiting for a user who was offline (XEP-0160).

use std::net::SocketAddr;

use wire::xmpp::{Element, StreamEvent};

use crate::support::TestServer;
use crate::xmpp::{Client, HEADER, bound_account};

const ROSTER: &str = "jabber:iq:roster";

/// A server keeping its store in `dir` (SQLite), with registration open.
fn kept_in(dir: &std::path::Path) -> server::Config {
    let mut config = server::Config::default();
    config.store.data_dir = dir.to_owned();
    config.xmpp.registration = 10;
    config.xmpp.plain_unencrypted = true;
    config
}

/// A node keeping its store in the PostgreSQL database at `url`, with
/// registration open.
fn kept_on(url: &str) -> server::Config {
    let mut config = server::Config::default();
    config.store.kind = server::StoreKind::Postgres;
    config.store.database = Some(url.to_owned());
    config.xmpp.registration = 10;
    config.xmpp.plain_unencrypted = true;
    config
}

async fn register(addr: SocketAddr, name: &str) {
    let mut c = Client::connect(addr).await;
    c.send(HEADER).await;
    assert!(matches!(c.event().await, Some(StreamEvent::Open { .. })));
    c.stanza().await;
    c.send(&format!("<iq type='set' id='r'><query xmlns='jabber:iq:register'><username>{name}</username><password>pw</password></query></iq>")).await;
    assert_eq!(c.stanza().await.get("type"), Some("result"), "{name} registered");
}

#[tokio::test]
async fn accounts_rosters_and_waiting_requests_outlive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestServer::with_xmpp_kept(kept_in(dir.path())).await;
    let addr = first.xmpp.unwrap();
    register(addr, "ann").await;
    register(addr, "ben").await;
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<iq type='set' id='add'><query xmlns='jabber:iq:roster'><item jid='ben@localhost' name='Ben'><group>Friends</group></item></query></iq>").await;
    assert_eq!(ann.answer("add").await.get("type"), Some("result"));
    // Ben is offline: the request waits for him, in the store.
    ann.send("<presence to='ben@localhost' type='subscribe'/>").await;
    let push = ann.stanza().await;
    assert_eq!(push.find("query", ROSTER).unwrap().find("item", ROSTER).unwrap().get("ask"), Some("subscribe"));
    ann.send("<message to='ben@localhost' type='chat' id='m1'><body>while you were away</body></message>").await;
    // A roster get after both: they were handled before it is answered.
    ann.send("<iq type='get' id='sync'><query xmlns='jabber:iq:roster'/></iq>").await;
    ann.answer("sync").await;
    drop(ann);
    first.shutdown().await.unwrap().unwrap();

    let second = TestServer::with_xmpp_kept(kept_in(dir.path())).await;
    let addr = second.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<iq type='get' id='roster'><query xmlns='jabber:iq:roster'/></iq>").await;
    let roster = ann.answer("roster").await;
    assert_eq!(
        roster.find("query", ROSTER).unwrap().to_xml("jabber:client"),
        "<query xmlns=\"jabber:iq:roster\"><item jid=\"ben@localhost\" subscription=\"none\" name=\"Ben\" ask=\"subscribe\"><group>Friends</group></item></query>"
    );
    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence/>").await;
    let request = ben.stanza().await;
    assert_eq!((request.name.as_str(), request.get("type"), request.get("from")), ("presence", Some("subscribe"), Some("ann@localhost")));
    let kept = ben.stanza().await;
    assert_eq!((kept.get("id"), kept.get("from")), (Some("m1"), Some("ann@localhost/desk")));
    assert_eq!(kept.find("body", "jabber:client").unwrap().text_content(), "while you were away");
    assert!(kept.find("delay", "urn:xmpp:delay").is_some(), "{kept:?}");
    let sid = kept.find("stanza-id", "urn:xmpp:sid:0").unwrap_or_else(|| panic!("no stanza-id: {kept:?}"));
    assert_eq!(sid.get("by"), Some("ben@localhost"));
    let sid = sid.get("id").unwrap().to_owned();
    // And it is in his archive (XEP-0313), kept across the restart too,
    // under the id his copy carries.
    ben.send("<iq type='set' id='mam'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let mut archived = Vec::new();
    loop {
        let stanza = ben.stanza().await;
        if stanza.get("id") == Some("mam") {
            break;
        }
        if let Some(result) = stanza.find("result", "urn:xmpp:mam:2") {
            let message = result.find("forwarded", "urn:xmpp:forward:0").unwrap().find("message", "jabber:client").unwrap();
            archived.push((result.get("id").unwrap().to_owned(), message.get("id").unwrap().to_owned()));
        }
    }
    assert_eq!(archived, [(sid, "m1".to_owned())]);
    // A name registered before the restart is still taken.
    let mut c = Client::connect(addr).await;
    c.send(HEADER).await;
    c.event().await;
    c.stanza().await;
    c.send("<iq type='set' id='again'><query xmlns='jabber:iq:register'><username>Ann</username><password>x</password></query></iq>").await;
    let taken = c.stanza().await;
    assert!(taken.find("error", "jabber:client").unwrap().find("conflict", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{taken:?}");
}

/// A store the server cannot open stops it at start, saying which file.
#[tokio::test]
async fn a_store_that_cannot_be_opened_stops_the_server_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("switchboard.db"), vec![b'x'; 4096]).unwrap();
    let server = TestServer::with_xmpp_kept(kept_in(dir.path())).await;
    let error = server.shutdown().await.unwrap().unwrap_err();
    assert!(error.is_store() && error.to_string().contains("switchboard.db"), "{error}");
}

/// Past `--xmpp-offline-limit` messages waiting for one account, the sender
/// is told `service-unavailable`; a headline or a message without a body is
/// not kept; a negative priority takes nothing.
#[tokio::test]
async fn offline_messages_are_bounded_per_account_and_wait_for_a_non_negative_priority() {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw"), server::AccountEntry::new("ben", "pw")], ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.offline_limit = 2;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    for id in ["one", "two", "three"] {
        ann.send(&format!("<message to='ben@localhost' type='chat' id='{id}'><body>{id}</body></message>")).await;
    }
    ann.send("<message to='ben@localhost' type='headline' id='news'><body>dropped</body></message>").await;
    ann.send("<message to='ben@localhost' type='chat' id='typing'><composing xmlns='http://jabber.org/protocol/chatstates'/></message>").await;
    let full = ann.stanza().await;
    assert_eq!((full.get("id"), full.get("type")), (Some("three"), Some("error")));
    assert!(full.find("error", "jabber:client").unwrap().find("service-unavailable", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some());
    let bodiless = ann.stanza().await;
    assert_eq!((bodiless.get("id"), bodiless.get("type")), (Some("typing"), Some("error")));
    assert_eq!(server.metric("switchboard_refused_total{app=\"xmpp\",reason=\"offline_full\"}").await, Some(1.0));

    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence><priority>-1</priority></presence>").await;
    let mut ben2 = bound_account(addr, "ben", "laptop").await;
    ben2.send("<presence/>").await;
    // Its other resource's presence first, then what was kept, in order.
    let mut ids = Vec::new();
    while ids.len() < 2 {
        let stanza = ben2.stanza().await;
        if stanza.name == "message" {
            ids.push(stanza.get("id").unwrap().to_owned());
        }
    }
    assert_eq!(ids, ["one", "two"]);
    // The negative-priority resource was given none of them.
    ben.send("<iq type='get' id='ping'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    no_message_before(&mut ben, "ping").await;
}

/// A first presence of priority -1 takes no kept message; the session's
/// next one of 0 or more does.
#[tokio::test]
async fn kept_messages_wait_for_the_sessions_first_non_negative_priority() {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw"), server::AccountEntry::new("ben", "pw")], ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<message to='ben@localhost' type='chat' id='kept'><body>hi</body></message>").await;
    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence><priority>-1</priority></presence>").await;
    ben.send("<iq type='get' id='ping'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    no_message_before(&mut ben, "ping").await;
    ben.send("<presence><priority>5</priority></presence>").await;
    loop {
        let stanza = ben.stanza().await;
        if stanza.name == "message" {
            assert_eq!(stanza.get("id"), Some("kept"));
            break;
        }
    }
}

/// What was kept for an account goes with it: whoever registers its name
/// next is not given its offline messages, nor its archive.
#[tokio::test]
async fn a_removed_account_leaves_no_offline_message_or_archive_to_its_successor() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::with_xmpp(kept_in(dir.path())).await;
    let addr = server.xmpp.unwrap();
    register(addr, "ann").await;
    register(addr, "wes").await;
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<message to='wes@localhost' type='chat' id='m1'><body>for the first wes</body></message>").await;
    let mut wes = bound_account(addr, "wes", "phone").await;
    // Kept for wes, who has sent no presence yet; then archived live too.
    wes.send("<iq type='get' id='ping'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(wes.stanza().await.get("id"), Some("ping"));
    wes.send("<iq type='set' id='rm'><query xmlns='jabber:iq:register'><remove/></query></iq>").await;
    assert_eq!(wes.stanza().await.get("id"), Some("rm"));
    assert_eq!(wes.stream_error().await, "not-authorized");

    register(addr, "wes").await;
    let mut wes = bound_account(addr, "wes", "phone").await;
    wes.send("<presence/>").await;
    wes.send("<iq type='set' id='q'><query xmlns='urn:xmpp:mam:2' queryid='all'/></iq>").await;
    no_message_before(&mut wes, "q").await;
}

/// Reads up to the answer `id`: no message comes before it.
async fn no_message_before(c: &mut Client, id: &str) {
    loop {
        let stanza = c.stanza().await;
        assert_ne!(stanza.name, "message", "{stanza:?}");
        if stanza.get("id") == Some(id) {
            return;
        }
    }
}

/// Reads up to the room's subject, the end of a join; the subject.
async fn subject_after_join(c: &mut Client) -> Element {
    loop {
        let stanza = c.stanza().await;
        if stanza.find("subject", "jabber:client").is_some() {
            return stanza;
        }
    }
}

/// A room its owner made persistent (XEP-0045 §10.2) keeps its
/// configuration, affiliations and subject (set last by an IRC client's
/// `TOPIC`) across a restart, with no occupant; destroying it forgets it
/// in the store too.
#[tokio::test]
async fn a_persistent_room_outlives_a_restart_and_a_destroyed_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let config = || {
        let mut config = kept_in(dir.path());
        config.xmpp_accounts = ["ann", "ben", "cy"].iter().map(|name| server::AccountEntry::new(name, "pw")).collect();
        config
    };
    let first = TestServer::with_xmpp_kept(config()).await;
    let addr = first.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    for room in ["plans", "scratch"] {
        ann.send(&format!("<presence to='{room}@conference.localhost/ann'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
        subject_after_join(&mut ann).await;
        let form = format!(
            "<iq type='set' id='cfg-{room}' to='{room}@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'>\
             <field var='muc#roomconfig_roomname'><value>The {room}</value></field>\
             <field var='muc#roomconfig_persistentroom'><value>1</value></field>\
             <field var='muc#roomconfig_membersonly'><value>1</value></field></x></query></iq>"
        );
        ann.send(&form).await;
        assert_eq!(ann.answer(&format!("cfg-{room}")).await.get("type"), Some("result"));
    }
    ann.send("<iq type='set' id='member' to='plans@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='member' jid='ben@localhost'/></query></iq>").await;
    assert_eq!(ann.answer("member").await.get("type"), Some("result"));
    ann.send("<message to='plans@conference.localhost' type='groupchat'><subject>Q4 plans</subject></message>").await;
    while ann.next_named("message").await.find("subject", "jabber:client").is_none() {}
    // Then an IRC client sets the channel's topic: the room keeps it as its subject.
    let mut ivy = crate::irc::Irc::register(first.irc, "ivy").await;
    ivy.join("#plans").await;
    ivy.send("TOPIC #plans :Q1 plans").await;
    ivy.until(" TOPIC #plans :Q1 plans").await;
    ann.send("<iq type='set' id='gone' to='scratch@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><destroy/></query></iq>").await;
    assert_eq!(ann.answer("gone").await.get("type"), Some("result"));
    drop(ann);
    first.shutdown().await.unwrap().unwrap();

    let second = TestServer::with_xmpp_kept(config()).await;
    let addr = second.xmpp.unwrap();
    let mut cy = bound_account(addr, "cy", "desk").await;
    cy.send("<iq type='get' id='list' to='conference.localhost'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>").await;
    assert_eq!(
        cy.answer("list").await.find("query", "http://jabber.org/protocol/disco#items").unwrap().to_xml("jabber:client"),
        "<query xmlns=\"http://jabber.org/protocol/disco#items\"><item jid=\"plans@conference.localhost\" name=\"The plans\"/></query>",
        "listed with no occupant; the destroyed room is not"
    );
    cy.send("<presence to='plans@conference.localhost/cy'/>").await;
    let refused = cy.stanza().await;
    assert!(refused.find("error", "jabber:client").unwrap().find("registration-required", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence to='plans@conference.localhost/ben'/>").await;
    let subject = subject_after_join(&mut ben).await;
    assert_eq!((subject.get("from"), subject.find("subject", "jabber:client").unwrap().text_content().as_str()), (Some("plans@conference.localhost/ivy"), "Q1 plans"));
    // The kept subject is the room's topic, in the chat app too.
    let mut dee = second.ws("/chat/websocket").await;
    dee.send(&serde_json::json!({"name": "dee", "room": "plans"}).to_string()).await;
    assert_eq!(dee.recv_json().await["event"], "members");
    assert_eq!(dee.recv_json().await, serde_json::json!({"event": "topic", "name": "ivy", "room": "plans", "topic": "Q1 plans"}));
    // The owner is still its owner: the room was not made anew.
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<presence to='plans@conference.localhost/ann'/>").await;
    let own = loop {
        let stanza = ann.stanza().await;
        if stanza.name == "presence" && stanza.get("from") == Some("plans@conference.localhost/ann") {
            break stanza;
        }
    };
    let x = own.find("x", "http://jabber.org/protocol/muc#user").unwrap();
    assert_eq!(x.find("item", "http://jabber.org/protocol/muc#user").unwrap().get("affiliation"), Some("owner"));
    assert!(!x.elements().any(|s| s.get("code") == Some("201")), "not created again: {own:?}");
}

/// Two nodes on one PostgreSQL database share accounts, rosters, offline
/// messages and archives: a user registered on one logs in on the other,
/// and what one node archived the other reads.
#[tokio::test]
async fn two_nodes_on_one_postgres_database_share_accounts_rosters_offline_messages_and_archives() {
    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let node = || kept_on(&postgres.url);
    let (a, b) = (TestServer::with_xmpp_kept(node()).await, TestServer::with_xmpp_kept(node()).await);
    register(a.xmpp.unwrap(), "dana").await;
    register(a.xmpp.unwrap(), "eli").await;
    let mut dana = bound_account(b.xmpp.unwrap(), "dana", "b").await;
    dana.send("<iq type='set' id='add'><query xmlns='jabber:iq:roster'><item jid='eli@localhost'/></query></iq>").await;
    assert_eq!(dana.answer("add").await.get("type"), Some("result"));
    dana.send("<message to='eli@localhost' type='chat' id='hello'><body>from node b</body></message>").await;
    dana.send("<iq type='get' id='sync'><query xmlns='jabber:iq:roster'/></iq>").await;
    dana.answer("sync").await;

    let mut on_a = bound_account(a.xmpp.unwrap(), "dana", "a").await;
    on_a.send("<iq type='get' id='get'><query xmlns='jabber:iq:roster'/></iq>").await;
    let roster = on_a.answer("get").await;
    assert_eq!(roster.find("query", ROSTER).unwrap().elements().map(|i| i.get("jid").unwrap().to_owned()).collect::<Vec<_>>(), ["eli@localhost"]);
    let mut eli = bound_account(a.xmpp.unwrap(), "eli", "a").await;
    eli.send("<presence/>").await;
    let kept = eli.stanza().await;
    assert_eq!((kept.get("id"), kept.get("from")), (Some("hello"), Some("dana@localhost/b")));

    // The message's entries in both archives, written by node b (a query
    // there waits for what b queued before it), are read on node a.
    let expected = [("hello".to_owned(), "from node b".to_owned())];
    assert_eq!(archived(&mut dana).await, expected, "dana's archive on node b");
    assert_eq!(archived(&mut on_a).await, expected, "dana's archive on node a");
    assert_eq!(archived(&mut eli).await, expected, "eli's archive on node a");
}

/// Two nodes on one PostgreSQL database, joined by the node link: a
/// user's archiving preferences (XEP-0441) set on one hold at once for the
/// messages the other archives, though it had read them before.
#[tokio::test]
async fn archiving_preferences_set_on_one_node_hold_at_once_on_another() {
    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let node = || kept_on(&postgres.url);
    let broker = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut second = node();
    second.broker.url = Some(format!("node://{}", broker.local_addr().unwrap()));
    let a = TestServer::host_kept(node(), broker).await;
    let b = TestServer::with_xmpp_kept(second).await;
    register(a.xmpp.unwrap(), "dana").await;
    register(a.xmpp.unwrap(), "eli").await;
    let mut eli = bound_account(a.xmpp.unwrap(), "eli", "a").await;
    let mut dana = bound_account(b.xmpp.unwrap(), "dana", "b").await;
    for (c, id) in [(&mut eli, "e0"), (&mut dana, "d0")] {
        c.send("<presence/>").await;
        // Its node has taken its presence once it answers what came after.
        c.send(&format!("<iq type='get' id='{id}'><ping xmlns='urn:xmpp:ping'/></iq>")).await;
        c.answer(id).await;
    }
    // Node b archives dana's message in eli's archive, as his preferences
    // (none yet: always) say.
    dana.send("<message to='eli@localhost' type='chat'><body>kept</body></message>").await;
    assert!(eli.next_named("message").await.find("stanza-id", "urn:xmpp:sid:0").is_some());
    eli.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='never'/></iq>").await;
    assert_eq!(eli.answer("p").await.get("type"), Some("result"));
    // Node a told node b; a message after its word on the link is there after it.
    eli.send("<message to='dana@localhost/b' type='chat'><body>after</body></message>").await;
    assert_eq!(dana.next_named("message").await.find("body", "jabber:client").map(Element::text_content).as_deref(), Some("after"));
    dana.send("<message to='eli@localhost' type='chat'><body>not kept</body></message>").await;
    let unkept = eli.next_named("message").await;
    assert!(unkept.find("stanza-id", "urn:xmpp:sid:0").is_none(), "{unkept:?}");
    assert_eq!(archived(&mut eli).await.into_iter().map(|(_, body)| body).collect::<Vec<_>>(), ["kept"]);
}

/// The ids and bodies of the messages in the archive of `c`'s user.
async fn archived(c: &mut Client) -> Vec<(String, String)> {
    let messages = c.archived_messages().await;
    messages.iter().map(|m| (m.get("id").unwrap_or_default().to_owned(), m.find("body", "jabber:client").map(Element::text_content).unwrap_or_default())).collect()
}

/// A database that goes away while the server runs fails the requests that
/// need it, each with an error the client reads and a count in the metrics;
/// live chat goes on.
#[tokio::test]
async fn a_database_gone_while_running_fails_only_what_needs_it() {
    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw")], ..server::Config::default() };
    config.store.kind = server::StoreKind::Postgres;
    config.store.database = Some(postgres.url.clone());
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp_kept(config).await;
    let mut ann = bound_account(server.xmpp.unwrap(), "ann", "desk").await;
    drop(postgres);
    ann.send("<iq type='get' id='roster'><query xmlns='jabber:iq:roster'/></iq>").await;
    let failed = ann.answer("roster").await;
    let error = failed.find("error", "jabber:client").unwrap();
    assert_eq!(error.get("type"), Some("wait"));
    assert!(error.find("internal-server-error", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{failed:?}");
    // Counted: the roster get (and the scrape's count of waiting requests,
    // if the store fails before the scrape stops waiting for it).
    let failures = server.metric("switchboard_store_failures_total{what=\"rosters\"}").await.unwrap_or(0.0);
    assert!(failures >= 1.0, "{failures}");
    // The room does not need the store: its members still talk, XMPP occupant included.
    let mut bob = server.chat_member("bob", "lobby").await;
    ann.send("<presence to='lobby@conference.localhost/ann'/>").await;
    assert_eq!(bob.recv_json().await["name"], "ann");
    bob.send(&serde_json::json!({"message": "still here"}).to_string()).await;
    loop {
        let stanza = ann.stanza().await;
        if stanza.find("body", "jabber:client").is_some_and(|b| b.text_content() == "still here") {
            break;
        }
    }
}

/// Roster versioning (RFC 6121 §2.6), to the byte: the feature is offered;
/// a client with the current version gets an empty result, even after a
/// restart; pushes carry the new version; an old version gets the roster.
#[tokio::test]
async fn a_client_with_the_current_roster_version_is_sent_no_roster_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = || server::Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw")], ..kept_in(dir.path()) };
    let first = TestServer::with_xmpp_kept(config()).await;
    let addr = first.xmpp.unwrap();
    let features = {
        use base64::Engine;
        let plain = base64::engine::general_purpose::STANDARD.encode("\0ann\0pw");
        Client::authenticate(addr, &format!("<auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>{plain}</auth>")).await.2
    };
    assert!(features.find("ver", "urn:xmpp:features:rosterver").is_some(), "{features:?}");
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<iq type='get' id='g1'><query xmlns='jabber:iq:roster' ver=''/></iq>").await;
    assert_eq!(
        ann.answer("g1").await.to_xml("jabber:client"),
        "<iq type=\"result\" id=\"g1\" to=\"ann@localhost/desk\"><query xmlns=\"jabber:iq:roster\" ver=\"0\"/></iq>"
    );
    ann.send("<iq type='set' id='add'><query xmlns='jabber:iq:roster'><item jid='bo@localhost'/></query></iq>").await;
    let push = ann.stanza().await;
    assert_eq!(push.find("query", ROSTER).unwrap().get("ver"), Some("1"), "{push:?}");
    ann.answer("add").await;
    ann.send("<iq type='get' id='g2'><query xmlns='jabber:iq:roster' ver='1'/></iq>").await;
    assert_eq!(ann.answer("g2").await.to_xml("jabber:client"), "<iq type=\"result\" id=\"g2\" to=\"ann@localhost/desk\"/>");
    drop(ann);
    first.shutdown().await.unwrap().unwrap();

    let second = TestServer::with_xmpp_kept(config()).await;
    let mut ann = bound_account(second.xmpp.unwrap(), "ann", "desk").await;
    ann.send("<iq type='get' id='g3'><query xmlns='jabber:iq:roster' ver='1'/></iq>").await;
    assert_eq!(ann.answer("g3").await.to_xml("jabber:client"), "<iq type=\"result\" id=\"g3\" to=\"ann@localhost/desk\"/>");
    ann.send("<iq type='get' id='g4'><query xmlns='jabber:iq:roster' ver='0'/></iq>").await;
    assert_eq!(
        ann.answer("g4").await.to_xml("jabber:client"),
        "<iq type=\"result\" id=\"g4\" to=\"ann@localhost/desk\"><query xmlns=\"jabber:iq:roster\" ver=\"1\"><item jid=\"bo@localhost\" subscription=\"none\"/></query></iq>"
    );
    ann.send("<iq type='get' id='g5'><query xmlns='jabber:iq:roster'/></iq>").await;
    assert_eq!(
        ann.answer("g5").await.to_xml("jabber:client"),
        "<iq type=\"result\" id=\"g5\" to=\"ann@localhost/desk\"><query xmlns=\"jabber:iq:roster\"><item jid=\"bo@localhost\" subscription=\"none\"/></query></iq>",
        "no version asked, none given"
    );
}

/// A room made persistent on one node is taken up from the shared
/// database by another node that started before it was made: its
/// configuration and affiliations hold there.
#[tokio::test]
async fn a_persistent_room_made_on_one_node_holds_on_another() {
    let postgres = store::PostgresServer::start().unwrap_or_else(|e| panic!("{e}"));
    let node = || {
        let mut config = server::Config::default();
        config.store.kind = server::StoreKind::Postgres;
        config.store.database = Some(postgres.url.clone());
        config.xmpp_accounts = ["ann", "ben", "cy"].iter().map(|name| server::AccountEntry::new(name, "pw")).collect();
        config.xmpp.plain_unencrypted = true;
        config
    };
    let (a, b) = (TestServer::with_xmpp_kept(node()).await, TestServer::with_xmpp_kept(node()).await);
    let mut ann = bound_account(a.xmpp.unwrap(), "ann", "desk").await;
    ann.send("<presence to='vault@conference.localhost/ann'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    subject_after_join(&mut ann).await;
    ann.send(
        "<iq type='set' id='cfg' to='vault@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'>\
         <field var='muc#roomconfig_persistentroom'><value>1</value></field>\
         <field var='muc#roomconfig_membersonly'><value>1</value></field></x></query></iq>",
    )
    .await;
    assert_eq!(ann.answer("cfg").await.get("type"), Some("result"));
    ann.send("<iq type='set' id='member' to='vault@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='member' jid='ben@localhost'/></query></iq>").await;
    assert_eq!(ann.answer("member").await.get("type"), Some("result"));

    let mut cy = bound_account(b.xmpp.unwrap(), "cy", "desk").await;
    cy.send("<presence to='vault@conference.localhost/cy'/>").await;
    let refused = cy.stanza().await;
    assert!(refused.find("error", "jabber:client").unwrap().find("registration-required", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
    let mut ben = bound_account(b.xmpp.unwrap(), "ben", "phone").await;
    ben.send("<presence to='vault@conference.localhost/ben'/>").await;
    let own = loop {
        let stanza = ben.stanza().await;
        if stanza.name == "presence" && stanza.get("from") == Some("vault@conference.localhost/ben") {
            break stanza;
        }
    };
    let item = own.find("x", "http://jabber.org/protocol/muc#user").unwrap().find("item", "http://jabber.org/protocol/muc#user").unwrap();
    assert_eq!(item.get("affiliation"), Some("member"), "{own:?}");
}
