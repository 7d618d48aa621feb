//! XMPP between users and in rooms an XMPP client made, at the byte
//! level: presence to a user's own other resources, iqs carried between
//! users, and a room's creation, configuration, moderation and end.

use serde_json::json;
use wire::xmpp::Element;

use crate::support::TestServer;
use crate::xmpp::Client;

const MUC_USER: &str = "http://jabber.org/protocol/muc#user";
const STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";

/// The status codes of a MUC presence.
fn codes(presence: &Element) -> Vec<String> {
    let x = presence.find("x", MUC_USER).expect("a muc#user presence");
    x.elements().filter(|e| e.name == "status").filter_map(|e| e.get("code")).map(str::to_owned).collect()
}

/// The affiliation and role of a MUC presence's item.
fn standing(presence: &Element) -> (String, String) {
    let item = presence.find("x", MUC_USER).unwrap().find("item", MUC_USER).unwrap();
    (item.get("affiliation").unwrap().to_owned(), item.get("role").unwrap().to_owned())
}

fn condition(error: &Element) -> String {
    assert_eq!(error.get("type"), Some("error"), "{error:?}");
    error.find("error", "jabber:client").unwrap().elements().find(|e| e.ns == STANZAS).unwrap().name.clone()
}

/// Reads up to the room's subject, the end of a join; the presences before it.
async fn joined(c: &mut Client) -> Vec<Element> {
    let mut presences = Vec::new();
    loop {
        let stanza = c.stanza().await;
        if stanza.find("subject", "jabber:client").is_some() {
            return presences;
        }
        if stanza.name == "presence" {
            presences.push(stanza);
        }
    }
}

#[tokio::test]
async fn a_room_an_xmpp_client_makes_is_its_own_to_configure_moderate_and_destroy() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let addr = server.xmpp.unwrap();
    let (mut owner, owner_jid) = Client::login(addr).await;
    owner.send("<presence to='den@conference.localhost/olga'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    let own = joined(&mut owner).await.pop().unwrap();
    assert_eq!(codes(&own), ["110", "201"], "the first occupant made the room");
    assert_eq!(standing(&own), ("owner".to_owned(), "moderator".to_owned()));

    // Locked until its owner configures it (XEP-0045 §10.1).
    let (mut guest, guest_jid) = Client::login(addr).await;
    guest.send("<presence to='den@conference.localhost/gus'/>").await;
    assert_eq!(condition(&guest.stanza().await), "item-not-found");
    owner.send("<iq type='get' id='c1' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'/></iq>").await;
    let form = owner.stanza().await;
    assert_eq!(form.get("type"), Some("result"));
    let fields = form.find("query", "http://jabber.org/protocol/muc#owner").unwrap().find("x", "jabber:x:data").unwrap();
    assert!(fields.elements().any(|f| f.get("var") == Some("muc#roomconfig_roomname")));
    owner.send("<iq type='set' id='c2' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_roomname'><value>The Den</value></field></x></query></iq>").await;
    assert_eq!(owner.stanza().await.get("type"), Some("result"));
    // Only the owner configures.
    guest.send("<iq type='get' id='c3' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'/></iq>").await;
    assert_eq!(condition(&guest.stanza().await), "forbidden");

    guest.send("<presence to='den@conference.localhost/gus'/>").await;
    let presences = joined(&mut guest).await;
    assert_eq!(presences.len(), 2);
    assert_eq!(standing(&presences[0]), ("owner".to_owned(), "moderator".to_owned()));
    assert_eq!(codes(&presences[1]), ["110"]);
    assert_eq!(owner.stanza().await.get("from"), Some("den@conference.localhost/gus"));
    // A chat-app member is in the same room, as a participant.
    let mut chat = server.ws("/chat/websocket").await;
    chat.send(&json!({"name": "cleo", "room": "den"}).to_string()).await;
    assert_eq!(chat.recv_json().await["event"], "members");
    assert_eq!(chat.recv_json().await["event"], "join");
    for c in [&mut owner, &mut guest] {
        let cleo = c.stanza().await;
        assert_eq!((cleo.get("from"), standing(&cleo)), (Some("den@conference.localhost/cleo"), ("none".to_owned(), "participant".to_owned())));
    }

    // A nick change (XEP-0045 §7.6): everyone sees the old nick leave with
    // 303 and the new one, then the new nick come in; the chat app sees a
    // leave naming the new name and a join naming the old. A nick someone
    // has is refused.
    guest.send("<presence to='den@conference.localhost/cleo'/>").await;
    assert_eq!(condition(&guest.stanza().await), "conflict");
    guest.send("<presence to='den@conference.localhost/gus2'/>").await;
    for (c, own) in [(&mut guest, true), (&mut owner, false)] {
        let left = c.stanza().await;
        assert_eq!((left.get("from"), left.get("type")), (Some("den@conference.localhost/gus"), Some("unavailable")));
        assert_eq!(codes(&left), if own { vec!["110", "303"] } else { vec!["303"] });
        let item = left.find("x", MUC_USER).unwrap().find("item", MUC_USER).unwrap();
        assert_eq!((item.get("nick"), item.get("role")), (Some("gus2"), Some("participant")), "the occupant stays, in its role");
        let back = c.stanza().await;
        assert_eq!((back.get("from"), back.get("type")), (Some("den@conference.localhost/gus2"), None));
        assert_eq!(codes(&back), if own { vec!["110"] } else { Vec::<&str>::new() });
    }
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "gus", "room": "den", "new_name": "gus2"}));
    assert_eq!(chat.recv_json().await, json!({"event": "join", "name": "gus2", "room": "den", "old_name": "gus"}));

    // A private message between occupants goes to the real JID, from the room JID.
    guest.send("<message to='den@conference.localhost/olga' type='chat'><body>psst</body></message>").await;
    let private = owner.stanza().await;
    assert_eq!((private.get("from"), private.get("to")), (Some("den@conference.localhost/gus2"), Some(owner_jid.as_str())));
    // A presence update in the room (XEP-0045 §7.7) goes to every XMPP occupant.
    owner.send("<presence to='den@conference.localhost/olga'><show>away</show><status>lunch</status></presence>").await;
    for (c, own) in [(&mut owner, true), (&mut guest, false)] {
        let update = c.stanza().await;
        assert_eq!(update.get("from"), Some("den@conference.localhost/olga"));
        assert_eq!(update.find("show", "jabber:client").map(Element::text_content), Some("away".to_owned()));
        assert_eq!(update.find("status", "jabber:client").map(Element::text_content), Some("lunch".to_owned()));
        assert_eq!(codes(&update), if own { vec!["110"] } else { Vec::<&str>::new() });
    }
    // A moderator may see real JIDs; the owner kicks the guest.
    owner.send("<iq type='set' id='k1' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item nick='gus2' role='none'/></query></iq>").await;
    let kicked = guest.stanza().await;
    assert_eq!((kicked.get("type"), codes(&kicked)), (Some("unavailable"), vec!["110".to_owned(), "307".to_owned()]));
    assert_eq!(kicked.find("x", MUC_USER).unwrap().find("item", MUC_USER).unwrap().get("jid"), Some(guest_jid.as_str()));
    let witnessed = owner.stanza().await;
    assert_eq!((witnessed.get("from"), witnessed.get("type"), codes(&witnessed)), (Some("den@conference.localhost/gus2"), Some("unavailable"), vec!["307".to_owned()]));
    assert_eq!(owner.stanza().await.get("id"), Some("k1"));
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "gus2", "room": "den"}));

    // Destroyed: each XMPP occupant is told; the chat app sees it leave.
    owner.send("<iq type='set' id='d1' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><destroy jid='attic@conference.localhost'><password>up</password><reason>done</reason></destroy></query></iq>").await;
    let told = owner.stanza().await;
    let destroy = told.find("x", MUC_USER).unwrap().find("destroy", MUC_USER).expect("a <destroy/>");
    assert_eq!(told.get("type"), Some("unavailable"));
    // The alternate venue, its password and the reason (XEP-0045 §10.9), to the byte.
    assert_eq!(
        destroy.to_xml(MUC_USER),
        "<destroy jid=\"attic@conference.localhost\"><password>up</password><reason>done</reason></destroy>"
    );
    assert_eq!(codes(&told), ["110"]);
    assert_eq!(owner.stanza().await.get("id"), Some("d1"));
    assert_eq!(chat.recv_json().await, json!({"event": "leave", "name": "olga", "room": "den"}));
    owner.send("<message to='den@conference.localhost' type='groupchat'><body>anyone?</body></message>").await;
    assert_eq!(condition(&owner.stanza().await), "not-acceptable", "no longer an occupant");
}

/// A server with room `den`, made an instant room by its owner olga; olga,
/// and a guest logged in but not in the room.
async fn instant_room() -> (TestServer, Client, Client) {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let addr = server.xmpp.unwrap();
    let (mut owner, _) = Client::login(addr).await;
    owner.send("<presence to='den@conference.localhost/olga'/>").await;
    joined(&mut owner).await;
    owner.send("<iq type='set' id='c1' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'/></query></iq>").await;
    assert_eq!(owner.stanza().await.get("type"), Some("result"));
    let (guest, _) = Client::login(addr).await;
    (server, owner, guest)
}

/// The next three messages with a body.
async fn three_messages(c: &mut Client) -> Vec<Element> {
    let mut got = Vec::new();
    while got.len() < 3 {
        let stanza = c.next_named("message").await;
        if stanza.find("body", "jabber:client").is_some() {
            got.push(stanza);
        }
    }
    got
}

/// An occupant's groupchat messages come back to it with the id and the
/// origin-id (XEP-0359) they were sent with, in order, whatever the room
/// sends between; others get the room's copy, without them.
#[tokio::test]
async fn an_occupants_own_messages_come_back_with_the_ids_it_sent_them_with() {
    let (_server, mut owner, mut guest) = instant_room().await;
    guest.send("<presence to='den@conference.localhost/gus'/>").await;
    joined(&mut guest).await;
    owner.send("<message to='den@conference.localhost' type='groupchat' id='a1'><body>first</body><origin-id xmlns='urn:xmpp:sid:0' id='o1'/></message>").await;
    owner.send("<message to='den@conference.localhost' type='groupchat'><body>second</body></message>").await;
    owner.send("<message to='den@conference.localhost' type='groupchat' id='a3'><body>first</body></message>").await;
    let back = three_messages(&mut owner).await;
    let strip = |m: &Element| {
        let mut m = m.clone();
        m.children.retain(|c| !matches!(c, wire::xmpp::Node::Element(e) if e.name == "stanza-id"));
        m.to_xml("jabber:client")
    };
    assert_eq!(
        back.iter().map(strip).collect::<Vec<_>>(),
        [
            "<message from=\"den@conference.localhost/olga\" to=\"{to}\" type=\"groupchat\" id=\"a1\"><body>first</body><origin-id xmlns=\"urn:xmpp:sid:0\" id=\"o1\"/></message>",
            "<message from=\"den@conference.localhost/olga\" to=\"{to}\" type=\"groupchat\"><body>second</body></message>",
            "<message from=\"den@conference.localhost/olga\" to=\"{to}\" type=\"groupchat\" id=\"a3\"><body>first</body></message>",
        ]
        .map(|m| m.replace("{to}", back[0].get("to").unwrap()))
    );
    let theirs = three_messages(&mut guest).await;
    assert!(theirs.iter().all(|m| m.get("id").is_none() && m.find("origin-id", "urn:xmpp:sid:0").is_none()), "{theirs:?}");
    // A nick change between a message and its reflection: each comes back
    // with its own id, under the nick it was sent with.
    owner.send("<message to='den@conference.localhost' type='groupchat' id='b1'><body>ok</body></message>").await;
    owner.send("<presence to='den@conference.localhost/olly'/>").await;
    owner.send("<message to='den@conference.localhost' type='groupchat' id='b2'><body>ok</body></message>").await;
    let mut back = Vec::new();
    while back.len() < 2 {
        let stanza = owner.next_named("message").await;
        if stanza.find("body", "jabber:client").is_some() {
            back.push((stanza.get("from").unwrap().to_owned(), stanza.get("id").map(str::to_owned)));
        }
    }
    assert_eq!(back, [("den@conference.localhost/olga".to_owned(), Some("b1".to_owned())), ("den@conference.localhost/olly".to_owned(), Some("b2".to_owned()))]);
}

/// Answers a ping, so that a test can tell nothing came before the answer.
async fn nothing_more(c: &mut Client) {
    c.send("<iq type='get' id='p1' to='localhost'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(c.stanza().await.get("id"), Some("p1"), "nothing more came before the answer");
}

/// A client may send its nick change before the room has answered its
/// join: the room's echo of that join, still queued when the change is
/// made, is not shown to it as another occupant under its old nick.
#[tokio::test]
async fn a_nick_change_sent_with_the_join_shows_no_one_under_the_old_nick() {
    let (_server, mut owner, mut guest) = instant_room().await;
    guest.send("<presence to='den@conference.localhost/gus'/><presence to='den@conference.localhost/gus2'/>").await;
    let presences = joined(&mut guest).await;
    assert_eq!(presences.iter().map(|p| p.get("from").unwrap()).collect::<Vec<_>>(), ["den@conference.localhost/olga", "den@conference.localhost/gus"]);
    assert_eq!(codes(&presences[1]), ["110"]);
    let left = guest.stanza().await;
    assert_eq!((left.get("from"), left.get("type"), codes(&left)), (Some("den@conference.localhost/gus"), Some("unavailable"), vec!["110".to_owned(), "303".to_owned()]));
    let back = guest.stanza().await;
    assert_eq!((back.get("from"), back.get("type"), codes(&back)), (Some("den@conference.localhost/gus2"), None, vec!["110".to_owned()]));
    nothing_more(&mut guest).await;

    // The room saw gus come in, leave for gus2, and gus2 come in.
    let seen: Vec<_> = [owner.stanza().await, owner.stanza().await, owner.stanza().await].iter().map(|p| (p.get("from").unwrap().to_owned(), p.get("type").map(str::to_owned))).collect();
    assert_eq!(seen, [
        ("den@conference.localhost/gus".to_owned(), None),
        ("den@conference.localhost/gus".to_owned(), Some("unavailable".to_owned())),
        ("den@conference.localhost/gus2".to_owned(), None),
    ]);
}

/// A client that leaves a room and enters it again in the same write is
/// told of its leave once, and is in the room after.
#[tokio::test]
async fn a_leave_and_a_join_sent_together_leave_the_client_in_the_room() {
    let (_server, mut owner, mut guest) = instant_room().await;
    guest.send("<presence to='den@conference.localhost/gus'/>").await;
    joined(&mut guest).await;
    assert_eq!(owner.stanza().await.get("from"), Some("den@conference.localhost/gus"));

    guest.send("<presence type='unavailable' to='den@conference.localhost/gus'/><presence to='den@conference.localhost/gus'/>").await;
    let left = guest.stanza().await;
    assert_eq!((left.get("from"), left.get("type"), codes(&left)), (Some("den@conference.localhost/gus"), Some("unavailable"), vec!["110".to_owned()]));
    let presences = joined(&mut guest).await;
    assert_eq!(presences.iter().map(|p| (p.get("from").unwrap(), p.get("type"))).collect::<Vec<_>>(), [("den@conference.localhost/olga", None), ("den@conference.localhost/gus", None)]);
    nothing_more(&mut guest).await;
    for kind in [Some("unavailable"), None] {
        let seen = owner.stanza().await;
        assert_eq!((seen.get("from"), seen.get("type")), (Some("den@conference.localhost/gus"), kind));
    }
    // In the room: its message reaches the owner and comes back to it.
    guest.send("<message type='groupchat' to='den@conference.localhost'><body>back</body></message>").await;
    for c in [&mut owner, &mut guest] {
        let message = c.stanza().await;
        assert_eq!((message.get("from"), message.find("body", "jabber:client").map(Element::text_content)), (Some("den@conference.localhost/gus"), Some("back".to_owned())));
    }
}

#[tokio::test]
async fn presence_reaches_a_users_other_resources_and_iqs_reach_other_users() {
    let server = crate::xmpp::with_accounts(&["alice", "bob"]).await;
    let addr = server.xmpp.unwrap();
    let mut desk = crate::xmpp::bound_account(addr, "alice", "desk").await;
    let mut phone = crate::xmpp::bound_account(addr, "alice", "phone").await;
    desk.send("<presence/>").await;
    phone.send("<presence><status>out</status></presence>").await;
    // The first available presence brings the other resource's.
    let seen = phone.stanza().await;
    assert_eq!((seen.get("from"), seen.get("to")), (Some("alice@localhost/desk"), Some("alice@localhost/phone")));
    let told = desk.stanza().await;
    assert_eq!((told.get("from"), told.find("status", "jabber:client").map(Element::text_content)), (Some("alice@localhost/phone"), Some("out".to_owned())));

    // An iq to another user's resource is carried there, and its answer back.
    let mut bob = crate::xmpp::bound_account(addr, "bob", "home").await;
    let bob_jid = "bob@localhost/home";
    bob.send("<iq type='get' id='v1' to='alice@localhost/desk'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let carried = desk.stanza().await;
    assert_eq!((carried.get("from"), carried.get("id")), (Some(bob_jid), Some("v1")));
    desk.send(&format!("<iq type='result' id='v1' to='{bob_jid}'/>")).await;
    let answer = bob.stanza().await;
    assert_eq!((answer.get("type"), answer.get("from")), (Some("result"), Some("alice@localhost/desk")));
    bob.send("<iq type='get' id='v2' to='alice@localhost/tablet'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(condition(&bob.stanza().await), "service-unavailable");

    // Directed presence, and its end when the session ends.
    bob.send("<presence to='alice@localhost/desk'/>").await;
    assert_eq!(desk.stanza().await.get("from"), Some(bob_jid));
    bob.send("</stream:stream>").await;
    let gone = desk.stanza().await;
    assert_eq!((gone.get("from"), gone.get("type")), (Some(bob_jid), Some("unavailable")));
    // A resource that goes tells the other.
    desk.send("</stream:stream>").await;
    let gone = phone.stanza().await;
    assert_eq!((gone.get("from"), gone.get("type")), (Some("alice@localhost/desk"), Some("unavailable")));
}

/// The next stanza that is not a roster push, answering the pushes met on
/// the way; and the pushed items' (jid, subscription, ask).
async fn past_pushes(c: &mut Client, pushed: &mut Vec<(String, String, Option<String>)>) -> Element {
    loop {
        let stanza = c.stanza().await;
        let item = stanza.find("query", "jabber:iq:roster").and_then(|q| q.find("item", "jabber:iq:roster"));
        let Some(item) = item.filter(|_| stanza.get("type") == Some("set")) else { return stanza };
        pushed.push((item.get("jid").unwrap().to_owned(), item.get("subscription").unwrap().to_owned(), item.get("ask").map(str::to_owned)));
        c.send(&format!("<iq type='result' id='{}'/>", stanza.get("id").unwrap())).await;
    }
}

#[tokio::test]
async fn removing_a_contact_whose_answer_is_awaited_withdraws_the_request_and_sends_nothing() {
    let server = crate::xmpp::with_accounts(&["ann", "ben"]).await;
    let addr = server.xmpp.unwrap();
    let mut ann = crate::xmpp::bound_account(addr, "ann", "a").await;
    let mut ben = crate::xmpp::bound_account(addr, "ben", "b").await;
    ben.send("<presence/>").await;
    let (mut ann_pushes, mut ben_pushes) = (Vec::new(), Vec::new());
    // ann asks; ben does not answer.
    ann.send("<presence type='subscribe' to='ben@localhost'/>").await;
    let request = past_pushes(&mut ben, &mut ben_pushes).await;
    assert_eq!((request.get("type"), request.get("from")), (Some("subscribe"), Some("ann@localhost")));
    // ann takes ben off her roster (as Smack's tests do between tests).
    ann.send("<iq type='set' id='r1'><query xmlns='jabber:iq:roster'><item jid='ben@localhost' subscription='remove'/></query></iq>").await;
    assert_eq!(past_pushes(&mut ann, &mut ann_pushes).await.get("id"), Some("r1"));
    assert_eq!(std::mem::take(&mut ann_pushes).last().map(|(_, s, _)| s.as_str()), Some("remove"));
    // No subscription ended, so ann is not told ben went away...
    ann.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(past_pushes(&mut ann, &mut ann_pushes).await.get("id"), Some("p1"));
    // ...ben is sent nothing, so the next thing from ann is her new request...
    ann.send("<presence type='subscribe' to='ben@localhost'/>").await;
    let next = past_pushes(&mut ben, &mut ben_pushes).await;
    assert_eq!((next.get("type"), next.get("from")), (Some("subscribe"), Some("ann@localhost")), "{next:?}");
    // ...and the withdrawn request is no longer waiting: one answer approves the new one.
    ben.send("<presence type='subscribed' to='ann@localhost'/>").await;
    ben.send("<iq type='get' id='p2'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(past_pushes(&mut ben, &mut ben_pushes).await.get("id"), Some("p2"));
    let approved = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!((approved.get("type"), approved.get("from")), (Some("subscribed"), Some("ben@localhost")));
}

#[tokio::test]
async fn a_subscription_is_asked_approved_pushed_and_ended_as_rfc_6121_says() {
    let server = crate::xmpp::with_accounts(&["ann", "ben"]).await;
    let addr = server.xmpp.unwrap();
    let mut ann = crate::xmpp::bound_account(addr, "ann", "a").await;
    let mut ben = crate::xmpp::bound_account(addr, "ben", "b").await;
    ben.send("<presence><status>here</status></presence>").await;
    let (mut ann_pushes, mut ben_pushes) = (Vec::new(), Vec::new());

    ann.send("<iq type='set' id='r1'><query xmlns='jabber:iq:roster'><item jid='ben@localhost' name='Ben'><group>Work</group></item></query></iq>").await;
    assert_eq!(past_pushes(&mut ann, &mut ann_pushes).await.get("id"), Some("r1"));
    assert_eq!(std::mem::take(&mut ann_pushes), [("ben@localhost".to_owned(), "none".to_owned(), None)]);

    // Asked: ann's roster says so, and ben gets the request from ann's bare JID.
    ann.send("<presence type='subscribe' to='ben@localhost/b'/>").await;
    ann.send("<iq type='get' id='r2'><query xmlns='jabber:iq:roster'/></iq>").await;
    let roster = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!(std::mem::take(&mut ann_pushes), [("ben@localhost".to_owned(), "none".to_owned(), Some("subscribe".to_owned()))]);
    let item = roster.find("query", "jabber:iq:roster").unwrap().find("item", "jabber:iq:roster").unwrap();
    assert_eq!((item.get("name"), item.get("ask")), (Some("Ben"), Some("subscribe")));
    let request = past_pushes(&mut ben, &mut ben_pushes).await;
    assert_eq!((request.get("type"), request.get("from"), request.get("to")), (Some("subscribe"), Some("ann@localhost"), Some("ben@localhost")));

    // Approved: both rosters are pushed, ann gets the approval from ben's
    // bare JID, then ben's current presence.
    ben.send("<presence type='subscribed' to='ann@localhost/a'/>").await;
    let approval = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!((approval.get("type"), approval.get("from")), (Some("subscribed"), Some("ben@localhost")));
    let current = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!((current.get("from"), current.find("status", "jabber:client").map(Element::text_content)), (Some("ben@localhost/b"), Some("here".to_owned())));
    assert_eq!(std::mem::take(&mut ann_pushes), [("ben@localhost".to_owned(), "to".to_owned(), None)]);
    // ben's next presence reaches ann; ann's does not reach ben (no subscription that way).
    ben.send("<presence><status>busy</status></presence>").await;
    let changed = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!(changed.find("status", "jabber:client").map(Element::text_content), Some("busy".to_owned()));
    ben.send("<iq type='get' id='p1'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    assert_eq!(past_pushes(&mut ben, &mut ben_pushes).await.get("id"), Some("p1"));
    assert_eq!(std::mem::take(&mut ben_pushes), [("ann@localhost".to_owned(), "from".to_owned(), None)]);

    // Removed: ann's push says so, ben's subscription from ann ends, and
    // ann sees ben go unavailable.
    ann.send("<iq type='set' id='r3'><query xmlns='jabber:iq:roster'><item jid='ben@localhost' subscription='remove'/></query></iq>").await;
    assert_eq!(past_pushes(&mut ann, &mut ann_pushes).await.get("id"), Some("r3"));
    let gone = past_pushes(&mut ann, &mut ann_pushes).await;
    assert_eq!((gone.get("from"), gone.get("type")), (Some("ben@localhost/b"), Some("unavailable")));
    assert_eq!(std::mem::take(&mut ann_pushes), [("ben@localhost".to_owned(), "remove".to_owned(), None)]);
    let unsubscribe = past_pushes(&mut ben, &mut ben_pushes).await;
    assert_eq!((unsubscribe.get("type"), unsubscribe.get("from")), (Some("unsubscribe"), Some("ann@localhost")));
    assert_eq!(std::mem::take(&mut ben_pushes), [("ann@localhost".to_owned(), "none".to_owned(), None)]);
    ann.send("<iq type='set' id='r4'><query xmlns='jabber:iq:roster'><item jid='ben@localhost' subscription='remove'/></query></iq>").await;
    assert_eq!(condition(&past_pushes(&mut ann, &mut ann_pushes).await), "item-not-found");
}

/// The messages `c` was sent until now, skipping presence: it pings the
/// server and takes what comes before the answer.
async fn messages_so_far(c: &mut Client) -> Vec<Element> {
    c.send("<iq type='get' id='so-far'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let mut messages = Vec::new();
    loop {
        let stanza = c.stanza().await;
        match stanza.name.as_str() {
            "iq" if stanza.get("id") == Some("so-far") => return messages,
            "message" => messages.push(stanza),
            _ => {}
        }
    }
}

/// alice asks to see bob's presence and bob lets her (RFC 6121 §3.1).
async fn alice_sees_bob(alice: &mut Client, bob: &mut Client) {
    alice.send("<presence type='subscribe' to='bob@localhost'/>").await;
    while bob.stanza().await.get("type") != Some("subscribe") {}
    bob.send("<presence type='subscribed' to='alice@localhost'/>").await;
    messages_so_far(bob).await;
}

fn ids(messages: &[Element]) -> Vec<&str> {
    messages.iter().map(|m| m.get("id").unwrap_or_default()).collect()
}

#[tokio::test]
async fn messages_to_a_user_go_where_rfc_6121_section_8_5_says() {
    let server = crate::xmpp::with_accounts(&["alice", "bob", "carol"]).await;
    let addr = server.xmpp.unwrap();
    let mut alice = crate::xmpp::bound_account(addr, "alice", "a").await;
    // bob: priorities 1, 0 and -1, and a resource that never said it is available.
    let mut high = crate::xmpp::bound_account(addr, "bob", "high").await;
    let mut low = crate::xmpp::bound_account(addr, "bob", "low").await;
    let mut away = crate::xmpp::bound_account(addr, "bob", "away").await;
    let mut silent = crate::xmpp::bound_account(addr, "bob", "silent").await;
    for (c, presence) in [(&mut high, "<priority>1</priority>"), (&mut low, ""), (&mut away, "<priority>-1</priority>")] {
        c.send(&format!("<presence>{presence}</presence>")).await;
        messages_so_far(c).await;
    }
    // carol is bound and has never been available.
    let mut carol = crate::xmpp::bound_account(addr, "carol", "c").await;
    let sent = [
        ("chat", "bob@localhost"),
        ("normal", "bob@localhost/gone"),
        ("headline", "bob@localhost/gone"),
        ("headline", "bob@localhost"),
        ("groupchat", "bob@localhost"),
        ("groupchat", "bob@localhost/silent"),
        ("error", "bob@localhost"),
        ("chat", "bob@localhost/away"),
        ("chat", "carol@localhost"),
        ("headline", "carol@localhost"),
        ("chat", "nobody@localhost"),
    ];
    for (kind, to) in sent {
        alice.send(&format!("<message to='{to}' type='{kind}' id='{kind} {to}'><body>hi</body></message>")).await;
    }
    let refused = messages_so_far(&mut alice).await;
    // carol has an account but no available resource: her chat message is
    // kept for her (XEP-0160), her headline dropped; nobody has no account.
    // A full JID's resource that is not there takes only a chat message as
    // the bare JID would (§8.5.3.2.1): a normal one is refused, a headline dropped.
    assert_eq!(ids(&refused), ["normal bob@localhost/gone", "groupchat bob@localhost", "chat nobody@localhost"]);
    assert!(refused.iter().all(|m| m.get("type") == Some("error") && condition(m) == "service-unavailable"));
    // A bare JID's chat and normal messages go to the highest priority, a
    // headline to every non-negative one, a full JID's to its resource.
    assert_eq!(ids(&messages_so_far(&mut high).await), ["chat bob@localhost", "headline bob@localhost"]);
    assert_eq!(ids(&messages_so_far(&mut low).await), ["headline bob@localhost"]);
    assert_eq!(ids(&messages_so_far(&mut away).await), ["chat bob@localhost/away"]);
    assert_eq!(ids(&messages_so_far(&mut silent).await), ["groupchat bob@localhost/silent"]);
    // An iq to a resource's own full JID is carried to it (RFC 6120 §10.5.4).
    alice.send("<iq type='get' to='alice@localhost/a' id='self'><ping xmlns='urn:xmpp:ping'/></iq>").await;
    let to_self = alice.stanza().await;
    assert_eq!((to_self.get("type"), to_self.get("id"), to_self.get("from")), (Some("get"), Some("self"), Some("alice@localhost/a")));
    carol.send("<presence/>").await;
    let kept = messages_so_far(&mut carol).await;
    assert_eq!(ids(&kept), ["chat carol@localhost"]);
    assert_eq!(kept[0].get("from"), Some("alice@localhost/a"));
    assert!(kept[0].find("delay", "urn:xmpp:delay").is_some_and(|d| d.get("from") == Some("localhost")), "{kept:?}");
}

#[tokio::test]
async fn a_roster_set_that_rfc_6121_refuses_changes_nothing() {
    let server = crate::xmpp::with_accounts(&["alice", "bob"]).await;
    let mut alice = crate::xmpp::bound_account(server.xmpp.unwrap(), "alice", "a").await;
    let refused = [
        ("bob@localhost", "<group>friends</group>", "forbidden"),
        ("", "<group>friends</group><group>friends</group>", "bad-request"),
        ("", "<group/>", "not-acceptable"),
    ];
    for (to, groups, expected) in refused {
        let to = if to.is_empty() { String::new() } else { format!(" to='{to}'") };
        alice.send(&format!("<iq type='set' id='set'{to}><query xmlns='jabber:iq:roster'><item jid='carol@localhost'>{groups}</item></query></iq>")).await;
        let answer = alice.stanza().await;
        assert_eq!((answer.get("id"), condition(&answer)), (Some("set"), expected.to_owned()), "{groups}{to}");
    }
    alice.send("<iq type='get' id='get'><query xmlns='jabber:iq:roster'/></iq>").await;
    let roster = alice.stanza().await;
    assert_eq!(roster.to_xml("jabber:client"), r#"<iq type="result" id="get" to="alice@localhost/a"><query xmlns="jabber:iq:roster"/></iq>"#);
}

#[tokio::test]
async fn another_users_items_are_empty_to_those_who_do_not_see_its_presence() {
    let server = crate::xmpp::with_accounts(&["alice", "bob"]).await;
    let addr = server.xmpp.unwrap();
    let mut alice = crate::xmpp::bound_account(addr, "alice", "a").await;
    let mut bob = crate::xmpp::bound_account(addr, "bob", "b").await;
    bob.send("<presence/>").await;
    messages_so_far(&mut bob).await;
    for user in ["bob@localhost", "nobody@localhost"] {
        alice.send(&format!("<iq type='get' id='items' to='{user}'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>")).await;
        assert_eq!(
            alice.stanza().await.to_xml("jabber:client"),
            format!(r#"<iq type="result" id="items" from="{user}" to="alice@localhost/a"><query xmlns="http://jabber.org/protocol/disco#items"/></iq>"#)
        );
    }
    // Once bob lets alice see his presence, she sees his available resource.
    alice_sees_bob(&mut alice, &mut bob).await;
    alice.send("<iq type='get' id='items' to='bob@localhost'><query xmlns='http://jabber.org/protocol/disco#items'/></iq>").await;
    let items = alice.answer("items").await;
    let query = items.find("query", "http://jabber.org/protocol/disco#items").unwrap();
    assert_eq!(query.elements().map(|i| i.get("jid").unwrap_or_default()).collect::<Vec<_>>(), ["bob@localhost/b"]);
}

/// XEP-0045 §10.1.3: cancelling a new room's configuration destroys it;
/// §10.2.1: a configuration change is told to the occupants (172 when real
/// JIDs are shown to all, 173 when no longer, 104 otherwise), and a room
/// made members-only takes out those who are not members (322).
#[tokio::test]
async fn configuration_changes_are_told_and_a_cancelled_creation_destroys_the_room() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let addr = server.xmpp.unwrap();
    let (mut owner, _) = Client::login(addr).await;
    let owner_iq = |id: &str, x: &str| format!("<iq type='set' id='{id}' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'>{x}</query></iq>");
    owner.send("<presence to='den@conference.localhost/olga'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    assert_eq!(codes(&joined(&mut owner).await.pop().unwrap()), ["110", "201"]);
    owner.send(&owner_iq("c0", "<x xmlns='jabber:x:data' type='cancel'/>")).await;
    let gone = owner.stanza().await;
    assert_eq!((gone.name.as_str(), gone.get("type")), ("presence", Some("unavailable")), "{gone:?}");
    assert!(gone.find("x", MUC_USER).unwrap().find("destroy", MUC_USER).is_some(), "{gone:?}");
    assert_eq!(owner.stanza().await.get("id"), Some("c0"));
    // Destroyed: the next to enter makes it anew.
    owner.send("<presence to='den@conference.localhost/olga'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    assert_eq!(codes(&joined(&mut owner).await.pop().unwrap()), ["110", "201"]);
    owner.send(&owner_iq("c1", "<x xmlns='jabber:x:data' type='submit'/>")).await;
    assert_eq!(owner.stanza().await.get("id"), Some("c1"));
    let (mut guest, guest_jid) = Client::login(addr).await;
    guest.send("<presence to='den@conference.localhost/gus'/>").await;
    joined(&mut guest).await;
    owner.stanza().await; // the guest's presence

    let field = |var: &str, value: &str| format!("<field var='{var}'><value>{value}</value></field>");
    for (id, change, expected) in [
        ("c2", field("muc#roomconfig_whois", "anyone"), vec!["172"]),
        ("c3", field("muc#roomconfig_roomname", "The Den"), vec!["104"]),
        ("c4", format!("{}{}", field("muc#roomconfig_whois", "moderators"), field("muc#roomconfig_roomdesc", "ours")), vec!["173", "104"]),
    ] {
        owner.send(&owner_iq(id, &format!("<x xmlns='jabber:x:data' type='submit'>{change}</x>"))).await;
        for c in [&mut owner, &mut guest] {
            let told = c.stanza().await;
            assert_eq!(
                told.to_xml("jabber:client"),
                format!(
                    "<message type=\"groupchat\" from=\"den@conference.localhost\" to=\"{}\"><x xmlns=\"http://jabber.org/protocol/muc#user\">{}</x></message>",
                    told.get("to").unwrap(),
                    expected.iter().map(|code| format!("<status code=\"{code}\"/>")).collect::<String>()
                )
            );
        }
        assert_eq!(owner.stanza().await.get("id"), Some(id));
    }
    owner.send(&owner_iq("c5", &format!("<x xmlns='jabber:x:data' type='submit'>{}</x>", field("muc#roomconfig_membersonly", "1")))).await;
    let out = loop {
        let stanza = guest.stanza().await;
        if stanza.name == "presence" {
            break stanza;
        }
    };
    assert_eq!(out.get("type"), Some("unavailable"));
    assert_eq!(out.get("to"), Some(guest_jid.as_str()));
    assert_eq!(codes(&out), ["110", "322"]);
}

/// XEP-0045 §7.8.2: a mediated invitation, to the byte; in a members-only
/// room only admins and owners invite, and the invitee becomes a member.
/// §7.5: a private message of type groupchat is refused.
#[tokio::test]
async fn invitations_go_through_the_room_and_a_groupchat_private_message_is_refused() {
    let server = crate::xmpp::with_accounts(&["olga", "ben", "cy"]).await;
    let addr = server.xmpp.unwrap();
    let mut olga = crate::xmpp::bound_account(addr, "olga", "desk").await;
    olga.send("<presence to='den@conference.localhost/olga'><x xmlns='http://jabber.org/protocol/muc'/></presence>").await;
    joined(&mut olga).await;
    olga.send("<iq type='set' id='c' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_membersonly'><value>1</value></field></x></query></iq>").await;
    assert_eq!(olga.stanza().await.get("id"), Some("c"));
    let mut ben = crate::xmpp::bound_account(addr, "ben", "phone").await;
    ben.send("<presence to='den@conference.localhost/ben'/>").await;
    assert_eq!(condition(&ben.stanza().await), "registration-required");
    olga.send("<message to='den@conference.localhost'><x xmlns='http://jabber.org/protocol/muc#user'><invite to='ben@localhost'><reason>plans</reason></invite></x></message>").await;
    assert_eq!(
        ben.stanza().await.to_xml("jabber:client"),
        "<message from=\"den@conference.localhost\" to=\"ben@localhost\"><x xmlns=\"http://jabber.org/protocol/muc#user\"><invite from=\"olga@localhost/desk\"><reason>plans</reason></invite></x></message>"
    );
    ben.send("<presence to='den@conference.localhost/ben'/>").await;
    let presences = joined(&mut ben).await;
    assert_eq!(standing(presences.last().unwrap()), ("member".to_owned(), "participant".to_owned()));
    olga.stanza().await; // ben's presence
    // A member who is not an admin invites nobody into a members-only room.
    ben.send("<message to='den@conference.localhost' id='inv'><x xmlns='http://jabber.org/protocol/muc#user'><invite to='cy@localhost'/></x></message>").await;
    assert_eq!(condition(&ben.stanza().await), "forbidden");
    ben.send("<message to='den@conference.localhost/olga' type='groupchat' id='pm'><body>psst</body></message>").await;
    let refused = ben.stanza().await;
    assert_eq!((refused.get("id"), condition(&refused)), (Some("pm"), "bad-request".to_owned()));
}

/// XEP-0030 §3.1, RFC 6121 §8.5.2.1.3: the server answers disco#info to a
/// user's bare JID for it, to those who see its presence; to others, and
/// for a name with no user, service-unavailable (XEP-0030 §8, RFC 6121
/// §8.5.1), so that neither presence nor existence leaks.
#[tokio::test]
async fn the_server_answers_disco_info_for_a_users_bare_jid_to_those_who_see_its_presence() {
    let server = crate::xmpp::with_accounts(&["alice", "bob"]).await;
    let addr = server.xmpp.unwrap();
    let mut alice = crate::xmpp::bound_account(addr, "alice", "a").await;
    let mut bob = crate::xmpp::bound_account(addr, "bob", "b").await;
    bob.send("<presence/>").await;
    messages_so_far(&mut bob).await;
    for user in ["bob@localhost", "nobody@localhost"] {
        alice.send(&format!("<iq type='get' id='n' to='{user}'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>")).await;
        let refused = alice.stanza().await;
        assert_eq!((refused.get("id"), condition(&refused)), (Some("n"), "service-unavailable".to_owned()), "{user}");
    }
    alice_sees_bob(&mut alice, &mut bob).await;
    alice.send("<iq type='get' id='i' to='bob@localhost'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>").await;
    let info = alice.answer("i").await;
    assert_eq!(
        info.to_xml("jabber:client"),
        "<iq type=\"result\" id=\"i\" from=\"bob@localhost\" to=\"alice@localhost/a\"><query xmlns=\"http://jabber.org/protocol/disco#info\"><identity category=\"account\" type=\"registered\"/><feature var=\"http://jabber.org/protocol/disco#info\"/><feature var=\"http://jabber.org/protocol/disco#items\"/></query></iq>"
    );
}

/// The configuration form names the room's owners (XEP-0045 §10.2's
/// muc#roomconfig_roomowners): a form that names none is refused with
/// conflict, one that names others makes them owners and the rest
/// unaffiliated, each told as an affiliation change would be.
#[tokio::test]
async fn the_configuration_form_sets_the_owners_but_never_none() {
    let server = TestServer::with_xmpp(server::Config::default()).await;
    let addr = server.xmpp.unwrap();
    let (mut olga, olga_jid) = Client::login(addr).await;
    let (mut gus, gus_jid) = Client::login(addr).await;
    let bare = |jid: &str| jid.split('/').next().unwrap().to_owned();
    olga.send("<presence to='den@conference.localhost/olga'/>").await;
    joined(&mut olga).await;
    let form = |id: &str, owners: &[String]| {
        let values: String = owners.iter().map(|o| format!("<value>{o}</value>")).collect();
        format!("<iq type='set' id='{id}' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'><field var='muc#roomconfig_roomowners'>{values}</field></x></query></iq>")
    };
    olga.send(&form("none", &[])).await;
    assert_eq!(condition(&olga.stanza().await), "conflict");
    olga.send(&form("both", &[bare(&olga_jid), bare(&gus_jid)])).await;
    assert_eq!(olga.stanza().await.get("type"), Some("result"));
    gus.send("<presence to='den@conference.localhost/gus'/>").await;
    let own = joined(&mut gus).await.pop().unwrap();
    assert_eq!(standing(&own).0, "owner");
    // Olga hands the room to gus alone.
    olga.send(&form("gus", &[bare(&gus_jid)])).await;
    let demoted = loop {
        let stanza = gus.stanza().await;
        if stanza.get("from") == Some("den@conference.localhost/olga") {
            break stanza;
        }
    };
    assert_eq!(standing(&demoted).0, "none");
    olga.send("<iq type='get' id='owners' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='owner'/></query></iq>").await;
    loop {
        let stanza = olga.stanza().await;
        if stanza.get("id") == Some("owners") {
            assert_eq!(condition(&stanza), "forbidden", "no longer an owner");
            break;
        }
    }
}

/// With --xmpp-muc-non-anonymous a room starts non-anonymous, and whoever
/// is in it may read its owner list, after its owner left too (XEP-0045
/// §10: a room keeps its owner); a room its owner made semi-anonymous
/// keeps that list to owners.
#[tokio::test]
async fn the_occupants_of_a_non_anonymous_room_read_who_owns_it() {
    let mut config = server::Config::default();
    config.xmpp.muc_non_anonymous = true;
    let server = TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let (mut olga, olga_jid) = Client::login(addr).await;
    let (mut gus, _) = Client::login(addr).await;
    let olga_bare = olga_jid.split('/').next().unwrap().to_owned();
    let owners = |room: &str| format!("<iq type='get' id='owners' to='{room}@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='owner'/></query></iq>");
    let submit = |room: &str, fields: &str| format!("<iq type='set' id='c1' to='{room}@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#owner'><x xmlns='jabber:x:data' type='submit'>{fields}</x></query></iq>");

    olga.send("<presence to='den@conference.localhost/olga'/>").await;
    assert_eq!(codes(&joined(&mut olga).await.pop().unwrap()), ["110", "100", "201"], "non-anonymous from the start");
    olga.send(&submit("den", "")).await;
    assert_eq!(olga.stanza().await.get("type"), Some("result"));
    gus.send("<presence to='den@conference.localhost/gus'/>").await;
    assert_eq!(codes(&joined(&mut gus).await.pop().unwrap()), ["110", "100"]);
    olga.send("<presence type='unavailable' to='den@conference.localhost/olga'/>").await;
    assert_eq!(gus.stanza().await.get("type"), Some("unavailable"), "olga left");
    gus.send(&owners("den")).await;
    let list = gus.answer("owners").await;
    assert_eq!(list.get("type"), Some("result"));
    let expected = format!("<query xmlns=\"http://jabber.org/protocol/muc#admin\"><item affiliation=\"owner\" jid=\"{olga_bare}\"/></query>");
    assert_eq!(list.elements().next().unwrap().to_xml("jabber:client"), expected);
    gus.send("<iq type='get' id='members' to='den@conference.localhost'><query xmlns='http://jabber.org/protocol/muc#admin'><item affiliation='member'/></query></iq>").await;
    assert_eq!(condition(&gus.answer("members").await), "forbidden", "the member list stays the admins'");

    olga.send("<presence to='cave@conference.localhost/olga'/>").await;
    joined(&mut olga).await;
    olga.send(&submit("cave", "<field var='muc#roomconfig_whois'><value>moderators</value></field>")).await;
    assert_eq!(olga.stanza().await.get("type"), Some("result"));
    gus.send("<presence to='cave@conference.localhost/gus'/>").await;
    assert_eq!(codes(&joined(&mut gus).await.pop().unwrap()), ["110"], "semi-anonymous");
    gus.send(&owners("cave")).await;
    assert_eq!(condition(&gus.answer("owners").await), "forbidden");
}
