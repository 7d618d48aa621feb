//! Rooms' archives: every message of a room is kept in its archive under
//! an id its members' copies carry (XEP-0359), a room opened again after a
//! restart greets its members with the newest of it whatever protocol they
//! speak, and XMPP clients page through it (XEP-0313 on the room's JID).

use wire::xmpp::Element;

use crate::support::TestServer;
use crate::xmpp::{Client, bound_account};

const MAM: &str = "urn:xmpp:mam:2";
const SID: &str = "urn:xmpp:sid:0";
const LOBBY: &str = "lobby@conference.localhost";

/// A server keeping its store in `dir` (SQLite), with one account, ann.
fn kept_in(dir: &std::path::Path) -> server::Config {
    let mut config = server::Config { xmpp_accounts: vec![server::AccountEntry::new("ann", "pw")], ..server::Config::default() };
    config.store.data_dir = dir.to_owned();
    config.xmpp.plain_unencrypted = true;
    config
}

/// Joins the lobby and reads up to its subject: the history's messages.
async fn join_lobby(ann: &mut Client, nick: &str) -> Vec<Element> {
    ann.send(&format!("<presence to='{LOBBY}/{nick}'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
    let mut history = Vec::new();
    loop {
        let stanza = ann.stanza().await;
        if stanza.find("subject", "jabber:client").is_some() {
            return history;
        }
        if stanza.name == "message" {
            history.push(stanza);
        }
    }
}

fn body(message: &Element) -> String {
    message.find("body", "jabber:client").map(Element::text_content).unwrap_or_default()
}

fn stanza_id(message: &Element) -> String {
    let sid = message.find("stanza-id", SID).unwrap_or_else(|| panic!("no stanza-id: {message:?}"));
    assert_eq!(sid.get("by"), Some(LOBBY));
    sid.get("id").unwrap().to_owned()
}

/// The next groupchat message with a body.
async fn next_message(c: &mut Client) -> Element {
    loop {
        let stanza = c.stanza().await;
        if stanza.name == "message" && stanza.find("body", "jabber:client").is_some() {
            return stanza;
        }
    }
}

/// A page of the lobby's archive: the results' (id, nick, body), and the fin.
async fn room_page(ann: &mut Client, id: &str, set: &str) -> (Vec<(String, String, String)>, Element) {
    ann.send(&format!("<iq type='set' id='{id}' to='{LOBBY}'><query xmlns='{MAM}' queryid='{id}'><set xmlns='http://jabber.org/protocol/rsm'>{set}</set></query></iq>")).await;
    let mut results = Vec::new();
    loop {
        let stanza = ann.stanza().await;
        if stanza.get("id") == Some(id) {
            assert_eq!(stanza.get("type"), Some("result"), "{stanza:?}");
            return (results, stanza.find("fin", MAM).unwrap().clone());
        }
        if let Some(result) = stanza.find("result", MAM) {
            assert_eq!((stanza.get("from"), result.get("queryid")), (Some(LOBBY), Some(id)));
            let message = result.find("forwarded", "urn:xmpp:forward:0").unwrap().find("message", "jabber:client").unwrap();
            let nick = message.get("from").unwrap().strip_prefix(&format!("{LOBBY}/")).unwrap().to_owned();
            results.push((result.get("id").unwrap().to_owned(), nick, body(message)));
        }
    }
}

#[tokio::test]
async fn a_rooms_messages_outlive_a_restart_for_its_members_on_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestServer::with_xmpp_kept(kept_in(dir.path())).await;
    let mut bob = first.chat_member("bob", "lobby").await;
    for text in ["one", "two"] {
        bob.send(&serde_json::json!({ "message": text }).to_string()).await;
        assert_eq!(bob.recv_json().await["message"], text);
    }
    // An XMPP occupant who joins later gets them with their ids.
    let mut ann = bound_account(first.xmpp.unwrap(), "ann", "desk").await;
    let history = join_lobby(&mut ann, "ann").await;
    assert_eq!(history.iter().map(body).collect::<Vec<_>>(), ["one", "two"]);
    let mut ids: Vec<String> = history.iter().map(stanza_id).collect();
    // Its own message's live copy carries its archive id, and back to it
    // the id it was sent with (XEP-0045 §7.4), to the byte.
    ann.send(&format!("<message to='{LOBBY}' type='groupchat' id='m3'><body>three</body></message>")).await;
    let echo = next_message(&mut ann).await;
    let id = stanza_id(&echo);
    assert_eq!(
        echo.to_xml("jabber:client"),
        format!("<message from=\"{LOBBY}/ann\" to=\"ann@localhost/desk\" type=\"groupchat\" id=\"m3\"><body>three</body><stanza-id xmlns=\"{SID}\" id=\"{id}\" by=\"{LOBBY}\"/></message>")
    );
    ids.push(id);
    // Bob hears of ann's join, then her message.
    assert_eq!(bob.recv_json().await["event"], "join");
    assert_eq!(bob.recv_json().await["message"], "three");
    // Everything is in before the server stops.
    ann.send(&format!("<iq type='get' id='sync' to='{LOBBY}'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>")).await;
    let info = ann.answer("sync").await;
    let features: Vec<&str> = info.find("query", "http://jabber.org/protocol/disco#info").unwrap().elements().filter_map(|f| f.get("var")).collect();
    assert!(features.contains(&MAM) && features.contains(&SID), "{features:?}");
    drop((ann, bob));
    first.shutdown().await.unwrap().unwrap();

    // After the restart, a chat-app member is greeted with the history…
    let second = TestServer::with_xmpp_kept(kept_in(dir.path())).await;
    let mut carol = second.ws("/chat/websocket").await;
    carol.send(&serde_json::json!({"name": "carol", "room": "lobby"}).to_string()).await;
    assert_eq!(carol.recv_json().await["event"], "members");
    assert_eq!(
        crate::support::json(&carol.recv().await).to_string(),
        r#"{"event":"history","room":"lobby","messages":[{"name":"bob","room":"lobby","message":"one"},{"name":"bob","room":"lobby","message":"two"},{"name":"ann","room":"lobby","message":"three"}]}"#
    );
    // …a SockJS member (over SockJS's WebSocket) too…
    let mut dora = second.ws(&format!("/chat/000/{}/websocket", crate::support::session_id())).await;
    assert_eq!(dora.recv().await, "o");
    dora.send(&serde_json::to_string(&[r#"{"name":"dora","room":"lobby"}"#]).unwrap()).await;
    let mut greeted: Vec<serde_json::Value> = Vec::new();
    while !greeted.iter().any(|m| m["event"] == "history") {
        let frame = dora.recv().await;
        let Some(batch) = frame.strip_prefix('a') else { continue };
        greeted.extend(serde_json::from_str::<Vec<String>>(batch).unwrap().iter().map(|m| crate::support::json(m)));
    }
    assert_eq!(greeted.iter().map(|m| m["event"].as_str().unwrap_or_default()).collect::<Vec<_>>(), ["members", "history"]);
    assert_eq!(greeted[1]["messages"], crate::support::json(r#"[{"name":"bob","room":"lobby","message":"one"},{"name":"bob","room":"lobby","message":"two"},{"name":"ann","room":"lobby","message":"three"}]"#));
    // …an IRC member that reads times and batches…
    let mut gil = crate::irc::Irc::connect(second.irc).await;
    for line in ["CAP REQ :server-time batch", "NICK gil", "USER g 0 * :G", "CAP END"] {
        gil.send(line).await;
    }
    gil.until(" 422 ").await;
    gil.join("#lobby").await;
    let batch = gil.lines_until("BATCH -").await;
    assert_eq!((batch.len(), batch[0].as_str(), batch[4].as_str()), (5, ":localhost BATCH +h1 chathistory #lobby\r\n", ":localhost BATCH -h1\r\n"), "{batch:?}");
    for (line, said) in batch[1..4].iter().zip(["bob!bob@localhost PRIVMSG #lobby :one", "bob!bob@localhost PRIVMSG #lobby :two", "ann!ann@localhost PRIVMSG #lobby :three"]) {
        assert!(line.starts_with("@batch=h1;time=20") && line.ends_with(&format!(" :{said}\r\n")), "{batch:?}");
    }
    // …and an XMPP occupant, under the same ids.
    let mut ann = bound_account(second.xmpp.unwrap(), "ann", "phone").await;
    let history = join_lobby(&mut ann, "ann").await;
    assert_eq!(history.iter().map(body).collect::<Vec<_>>(), ["one", "two", "three"]);
    assert_eq!(history.iter().map(stanza_id).collect::<Vec<_>>(), ids);
    // The room's archive, two at a time (XEP-0313 on the room's JID).
    let (page, fin) = room_page(&mut ann, "q1", "<max>2</max>").await;
    let expected = |i: usize, nick: &str, text: &str| (ids[i].clone(), nick.to_owned(), text.to_owned());
    assert_eq!(page, [expected(0, "bob", "one"), expected(1, "bob", "two")]);
    assert_eq!(fin.get("complete"), None);
    let (page, fin) = room_page(&mut ann, "q2", &format!("<max>2</max><after>{}</after>", ids[1])).await;
    assert_eq!(page, [expected(2, "ann", "three")]);
    assert_eq!(fin.get("complete"), Some("true"));
    // An id the room's archive has not: item-not-found.
    ann.send(&format!("<iq type='set' id='q3' to='{LOBBY}'><query xmlns='{MAM}'><set xmlns='http://jabber.org/protocol/rsm'><after>nope</after></set></query></iq>")).await;
    let error = ann.answer("q3").await;
    assert!(error.find("error", "jabber:client").unwrap().find("item-not-found", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{error:?}");
}

/// A room's archive is read by those who may enter it: an outcast is
/// refused with forbidden, and nothing is archived with --room-archive false.
#[tokio::test]
async fn a_rooms_archive_is_closed_to_those_kept_out_and_absent_when_off() {
    let mut config = server::Config {
        xmpp_accounts: vec![server::AccountEntry::new("ann", "pw"), server::AccountEntry::new("cy", "pw")],
        ..server::Config::default()
    };
    config.xmpp.plain_unencrypted = true;
    let server = TestServer::with_xmpp(config.clone()).await;
    let mut ann = bound_account(server.xmpp.unwrap(), "ann", "desk").await;
    join_lobby(&mut ann, "ann").await;
    ann.send(&format!("<iq type='set' id='cfg' to='{LOBBY}'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>")).await;
    assert_eq!(ann.answer("cfg").await.get("type"), Some("result"));
    ann.send(&format!("<iq type='set' id='ban' to='{LOBBY}'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='outcast' jid='cy@localhost'/></query></iq>")).await;
    assert_eq!(ann.answer("ban").await.get("type"), Some("result"));
    let mut cy = bound_account(server.xmpp.unwrap(), "cy", "desk").await;
    cy.send(&format!("<iq type='set' id='q' to='{LOBBY}'><query xmlns='{MAM}'/></iq>")).await;
    let refused = cy.answer("q").await;
    assert!(refused.find("error", "jabber:client").unwrap().find("forbidden", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");

    config.rooms.archive = false;
    let off = TestServer::with_xmpp(config).await;
    let mut ann = bound_account(off.xmpp.unwrap(), "ann", "desk").await;
    join_lobby(&mut ann, "ann").await;
    ann.send(&format!("<message to='{LOBBY}' type='groupchat'><body>not kept</body></message>")).await;
    let live = next_message(&mut ann).await;
    assert!(live.find("stanza-id", SID).is_none(), "{live:?}");
    ann.send(&format!("<iq type='set' id='q' to='{LOBBY}'><query xmlns='{MAM}'/></iq>")).await;
    let refused = ann.answer("q").await;
    assert!(refused.find("error", "jabber:client").unwrap().find("service-unavailable", "urn:ietf:params:xml:ns:xmpp-stanzas").is_some(), "{refused:?}");
}
