//! Message archives (XEP-0313) and stanza ids (XEP-0359), to the byte.

use wire::xmpp::Element;

use crate::xmpp::{Client, bound_account, with_accounts};

const MAM: &str = "urn:xmpp:mam:2";
const SID: &str = "urn:xmpp:sid:0";
const STANZAS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";

fn result_ids(messages: &[Element]) -> Vec<String> {
    messages.iter().filter_map(|m| m.find("result", MAM)).map(|r| r.get("id").unwrap().to_owned()).collect()
}

fn bodies(messages: &[Element]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.find("result", MAM)?.find("forwarded", "urn:xmpp:forward:0")?.find("message", "jabber:client")?.find("body", "jabber:client"))
        .map(Element::text_content)
        .collect()
}

#[tokio::test]
async fn messages_are_archived_with_the_id_their_live_copy_carries_and_read_back_in_pages() {
    let server = with_accounts(&["ann", "ben"]).await;
    let addr = server.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence/>").await;
    ann.send("<presence/>").await;
    // A client's own claim to an id the server gives is taken away (XEP-0359 §4).
    for n in 0..5 {
        ann.send(&format!("<message to='ben@localhost' type='chat' id='m{n}'><body>n{n}</body><stanza-id xmlns='urn:xmpp:sid:0' by='ben@localhost' id='forged'/></message>")).await;
    }
    let mut live = Vec::new();
    while live.len() < 5 {
        let stanza = ben.stanza().await;
        if stanza.name == "message" {
            live.push(stanza);
        }
    }
    let ids: Vec<String> = live
        .iter()
        .map(|m| {
            let sids: Vec<&Element> = m.elements().filter(|e| e.name == "stanza-id" && e.ns == SID).collect();
            assert_eq!(sids.len(), 1, "{m:?}");
            assert_eq!(sids[0].get("by"), Some("ben@localhost"));
            sids[0].get("id").unwrap().to_owned()
        })
        .collect();
    assert_ne!(ids[0], "forged");
    assert_eq!(
        live[0].to_xml("jabber:client"),
        format!("<message to=\"ben@localhost\" type=\"chat\" id=\"m0\" from=\"ann@localhost/desk\"><body>n0</body><stanza-id xmlns=\"urn:xmpp:sid:0\" by=\"ben@localhost\" id=\"{}\"/></message>", ids[0])
    );

    // What ben was given live is in his archive when he asks at once,
    // though another session queued it.
    ben.send("<iq type='set' id='q0'><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'><max>5</max><before/></set></query></iq>").await;
    let (newest, _) = ben.until_answer("q0").await;
    assert_eq!(result_ids(&newest), ids);

    // Ben's archive, two at a time.
    ben.send("<iq type='set' id='q1'><query xmlns='urn:xmpp:mam:2' queryid='f1'><set xmlns='http://jabber.org/protocol/rsm'><max>2</max></set></query></iq>").await;
    let (page, fin) = ben.until_answer("q1").await;
    assert_eq!(result_ids(&page), ids[..2]);
    let first = &page[0];
    let stamp = first.find("result", MAM).unwrap().find("forwarded", "urn:xmpp:forward:0").unwrap().find("delay", "urn:xmpp:delay").unwrap().get("stamp").unwrap();
    assert_eq!(
        first.to_xml("jabber:client"),
        format!(
            "<message to=\"ben@localhost/phone\" from=\"ben@localhost\"><result xmlns=\"urn:xmpp:mam:2\" id=\"{id}\" queryid=\"f1\"><forwarded xmlns=\"urn:xmpp:forward:0\"><delay xmlns=\"urn:xmpp:delay\" stamp=\"{stamp}\"/><message xmlns=\"jabber:client\" to=\"ben@localhost\" type=\"chat\" id=\"m0\" from=\"ann@localhost/desk\"><body>n0</body><stanza-id xmlns=\"urn:xmpp:sid:0\" by=\"ben@localhost\" id=\"{id}\"/></message></forwarded></result></message>",
            id = ids[0]
        )
    );
    assert_eq!(
        fin.to_xml("jabber:client"),
        format!("<iq type=\"result\" id=\"q1\" to=\"ben@localhost/phone\"><fin xmlns=\"urn:xmpp:mam:2\"><set xmlns=\"http://jabber.org/protocol/rsm\"><first>{}</first><last>{}</last></set></fin></iq>", ids[0], ids[1])
    );
    ben.send(&format!("<iq type='set' id='q2'><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'><max>10</max><after>{}</after></set></query></iq>", ids[1])).await;
    let (rest, fin) = ben.until_answer("q2").await;
    assert_eq!(bodies(&rest), ["n2", "n3", "n4"]);
    assert_eq!(fin.find("fin", MAM).unwrap().get("complete"), Some("true"));
    // Backwards: the newest page first, in order; flipped, newest first.
    ben.send("<iq type='set' id='q3'><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'><max>2</max><before/></set><flip-page/></query></iq>").await;
    assert_eq!(bodies(&ben.until_answer("q3").await.0), ["n4", "n3"]);
    // An id the archive has not: item-not-found.
    ben.send("<iq type='set' id='q4'><query xmlns='urn:xmpp:mam:2'><set xmlns='http://jabber.org/protocol/rsm'><after>nope</after></set></query></iq>").await;
    let missing = ben.until_answer("q4").await.1;
    assert!(missing.find("error", "jabber:client").unwrap().find("item-not-found", STANZAS).is_some(), "{missing:?}");

    // The `#extended` fields: between two ids, chosen ids (in the
    // archive's order), and a time range to the microsecond of the
    // entries' stamps; an id not there in after-id is item-not-found.
    let form = |fields: &str| format!("<query xmlns='urn:xmpp:mam:2'><x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'><value>urn:xmpp:mam:2</value></field>{fields}</x></query>");
    let field = |var: &str, values: &[&str]| format!("<field var='{var}'>{}</field>", values.iter().map(|v| format!("<value>{v}</value>")).collect::<String>());
    ben.send(&format!("<iq type='set' id='x1'>{}</iq>", form(&(field("after-id", &[&ids[1]]) + &field("before-id", &[&ids[4]]))))).await;
    assert_eq!(bodies(&ben.until_answer("x1").await.0), ["n2", "n3"]);
    ben.send(&format!("<iq type='set' id='x2'>{}</iq>", form(&field("ids", &[&ids[3], "unknown", &ids[0]])))).await;
    assert_eq!(bodies(&ben.until_answer("x2").await.0), ["n0", "n3"]);
    ben.send("<iq type='set' id='all'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let stamps: Vec<String> = ben
        .until_answer("all")
        .await
        .0
        .iter()
        .filter_map(|m| Some(m.find("result", MAM)?.find("forwarded", "urn:xmpp:forward:0")?.find("delay", "urn:xmpp:delay")?.get("stamp")?.to_owned()))
        .collect();
    assert_eq!(stamps.len(), 5);
    ben.send(&format!("<iq type='set' id='x3'>{}</iq>", form(&(field("start", &[&stamps[1]]) + &field("end", &[&stamps[3]]))))).await;
    // Two entries may share a microsecond: those whose stamps fall inside.
    let inside: Vec<String> = (0..5).filter(|&n| stamps[1] <= stamps[n] && stamps[n] <= stamps[3]).map(|n| format!("n{n}")).collect();
    assert!(inside.len() >= 3, "{stamps:?}");
    assert_eq!(bodies(&ben.until_answer("x3").await.0), inside);
    ben.send(&format!("<iq type='set' id='x4'>{}</iq>", form(&field("after-id", &["unknown"])))).await;
    let missing = ben.until_answer("x4").await.1;
    assert!(missing.find("error", "jabber:client").unwrap().find("item-not-found", STANZAS).is_some(), "{missing:?}");

    // Ann's archive has what she sent, with ben, under ids of its own.
    ann.send("<iq type='set' id='a1'><query xmlns='urn:xmpp:mam:2'><x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'><value>urn:xmpp:mam:2</value></field><field var='with'><value>ben@localhost</value></field></x></query></iq>").await;
    let (sent, _) = ann.until_answer("a1").await;
    assert_eq!(bodies(&sent), ["n0", "n1", "n2", "n3", "n4"]);
    assert!(result_ids(&sent).iter().all(|id| !ids.contains(id)));
    ann.send("<iq type='set' id='a2'><query xmlns='urn:xmpp:mam:2'><x xmlns='jabber:x:data' type='submit'><field var='with'><value>nobody@localhost</value></field></x></query></iq>").await;
    assert!(ann.until_answer("a2").await.0.is_empty());
    ann.send("<iq type='set' id='a3'><query xmlns='urn:xmpp:mam:2'><x xmlns='jabber:x:data' type='submit'><field var='start'><value>not a date</value></field></x></query></iq>").await;
    assert!(ann.until_answer("a3").await.1.find("error", "jabber:client").unwrap().find("bad-request", STANZAS).is_some());

    // What the server offers, and the archive's ends.
    ann.send("<iq type='get' id='d'><query xmlns='http://jabber.org/protocol/disco#info'/></iq>").await;
    let info = ann.until_answer("d").await.1;
    let features: Vec<&str> = info.find("query", "http://jabber.org/protocol/disco#info").unwrap().elements().filter_map(|f| f.get("var")).collect();
    for feature in [MAM, "urn:xmpp:mam:2#extended", SID] {
        assert!(features.contains(&feature), "{features:?}");
    }
    ben.send("<iq type='get' id='md'><metadata xmlns='urn:xmpp:mam:2'/></iq>").await;
    let metadata = ben.until_answer("md").await.1;
    let metadata = metadata.find("metadata", MAM).unwrap();
    assert_eq!(metadata.find("start", MAM).unwrap().get("id"), Some(ids[0].as_str()));
    assert_eq!(metadata.find("end", MAM).unwrap().get("id"), Some(ids[4].as_str()));
    ben.send("<iq type='get' id='form'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let form = ben.until_answer("form").await.1;
    let vars: Vec<&str> = form.find("query", MAM).unwrap().find("x", "jabber:x:data").unwrap().elements().filter_map(|f| f.get("var")).collect();
    assert_eq!(vars, ["FORM_TYPE", "with", "start", "end", "after-id", "before-id", "ids"]);
}

/// An anonymous user's messages are carried but kept in no archive of its
/// own; the account it writes to keeps them. A headline is not archived.
#[tokio::test]
async fn only_accounts_keep_archives_and_only_chat_and_normal_messages_are_kept() {
    let server = with_accounts(&["ben"]).await;
    let addr = server.xmpp.unwrap();
    let (mut anon, anon_jid, _) = Client::anonymous(addr).await;
    let mut ben = bound_account(addr, "ben", "phone").await;
    ben.send("<presence/>").await;
    anon.send("<message to='ben@localhost' type='normal'><body>from nobody</body></message>").await;
    anon.send("<message to='ben@localhost' type='headline'><body>news</body></message>").await;
    ben.send(&format!("<message to='{anon_jid}' type='chat'><body>back</body></message>")).await;
    ben.send("<iq type='set' id='q'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let (stanzas, _) = ben.until_answer("q").await;
    let archived: Vec<Element> = stanzas.into_iter().filter(|s| s.find("result", MAM).is_some()).collect();
    assert_eq!(bodies(&archived), ["from nobody", "back"]);
    // The anonymous user's copy of ben's answer has no id: it has no archive.
    let back = loop {
        let stanza = anon.stanza().await;
        if stanza.name == "message" {
            break stanza;
        }
    };
    assert!(back.find("stanza-id", SID).is_none(), "{back:?}");
    // Its archive keeps nothing, whatever it asks.
    anon.send("<iq type='get' id='ap'><prefs xmlns='urn:xmpp:mam:2'/></iq>").await;
    assert_eq!(anon.answer("ap").await.find("prefs", MAM).unwrap().get("default"), Some("never"));
    anon.send("<iq type='set' id='as'><prefs xmlns='urn:xmpp:mam:2' default='always'/></iq>").await;
    let refused = anon.answer("as").await;
    assert!(refused.find("error", "jabber:client").unwrap().find("forbidden", STANZAS).is_some(), "{refused:?}");
    anon.send("<iq type='set' id='aq'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let (none, fin) = anon.until_answer("aq").await;
    assert!(none.iter().all(|s| s.find("result", MAM).is_none()));
    assert_eq!(fin.find("fin", MAM).unwrap().get("complete"), Some("true"));
}

/// The bodies of the messages `c`'s user's archive keeps.
async fn archived_bodies(c: &mut Client) -> Vec<String> {
    c.archived_messages().await.iter().map(|m| m.find("body", "jabber:client").map(Element::text_content).unwrap_or_default()).collect()
}

/// Archiving preferences (XEP-0441), to the byte: read, set (JIDs in
/// canonical form, the set answered with what was applied), refused when
/// malformed or past the list limit; and each archive keeps what its
/// owner's preferences say, by the most precise listing, then the
/// default, a default of `roster` asking the roster. A message one
/// archive does not keep reaches its recipient without an id of it.
#[tokio::test]
async fn each_archive_keeps_what_its_owners_preferences_say() {
    let accounts = ["ann", "ben", "cy", "dan"].iter().map(|name| server::AccountEntry::new(name, "pw")).collect();
    let mut config = server::Config { xmpp_accounts: accounts, ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.list_limit = 2;
    let server = crate::support::TestServer::with_xmpp(config).await;
    let addr = server.xmpp.unwrap();
    let mut ann = bound_account(addr, "ann", "desk").await;
    ann.send("<iq type='get' id='p0'><prefs xmlns='urn:xmpp:mam:2'/></iq>").await;
    assert_eq!(
        ann.answer("p0").await.to_xml("jabber:client"),
        "<iq type=\"result\" id=\"p0\" to=\"ann@localhost/desk\"><prefs xmlns=\"urn:xmpp:mam:2\" default=\"always\"><always/><never/></prefs></iq>"
    );
    for (id, prefs, condition) in [
        ("bad1", "<prefs xmlns='urn:xmpp:mam:2' default='sometimes'/>", "bad-request"),
        ("bad2", "<prefs xmlns='urn:xmpp:mam:2' default='never'><never><jid>@nowhere</jid></never></prefs>", "jid-malformed"),
        ("bad3", "<prefs xmlns='urn:xmpp:mam:2' default='never'><never><jid>a@l</jid><jid>b@l</jid><jid>c@l</jid></never></prefs>", "not-acceptable"),
    ] {
        ann.send(&format!("<iq type='set' id='{id}'>{prefs}</iq>")).await;
        let refused = ann.answer(id).await;
        let error = refused.find("error", "jabber:client").unwrap_or_else(|| panic!("{refused:?}"));
        assert_eq!((error.get("type"), error.find(condition, STANZAS).is_some()), (Some("modify"), true), "{refused:?}");
    }
    // Ann keeps her contacts' messages (cy is on her roster, ben is not),
    // ben's phone's always, cy's laptop's never.
    ann.send("<iq type='set' id='r'><query xmlns='jabber:iq:roster'><item jid='cy@localhost'/></query></iq>").await;
    ann.answer("r").await;
    ann.send("<iq type='set' id='p1'><prefs xmlns='urn:xmpp:mam:2' default='roster'><always><jid>Ben@LOCALHOST/phone</jid></always><never><jid>cy@localhost/laptop</jid></never></prefs></iq>").await;
    let applied = "<prefs xmlns=\"urn:xmpp:mam:2\" default=\"roster\"><always><jid>ben@localhost/phone</jid></always><never><jid>cy@localhost/laptop</jid></never></prefs>";
    assert_eq!(ann.answer("p1").await.to_xml("jabber:client"), format!("<iq type=\"result\" id=\"p1\" to=\"ann@localhost/desk\">{applied}</iq>"));
    ann.send("<iq type='get' id='p2'><prefs xmlns='urn:xmpp:mam:2'/></iq>").await;
    assert_eq!(ann.answer("p2").await.find("prefs", MAM).unwrap().to_xml("jabber:client"), applied);
    // Cy keeps nothing but what is with ann.
    let mut cy = bound_account(addr, "cy", "laptop").await;
    cy.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='never'><always><jid>ann@localhost</jid></always></prefs></iq>").await;
    assert_eq!(cy.answer("p").await.get("type"), Some("result"));
    let mut ben = bound_account(addr, "ben", "phone").await;
    for c in [&mut ann, &mut ben, &mut cy] {
        c.send("<presence/>").await;
    }

    ann.send("<message to='ben@localhost' type='chat'><body>ann to ben</body></message>").await;
    let to_ben = ben.next_named("message").await;
    assert!(to_ben.find("stanza-id", SID).is_some(), "ben keeps everything: {to_ben:?}");
    ben.send("<message to='ann@localhost' type='chat'><body>ben to ann</body></message>").await;
    let from_ben = ann.next_named("message").await;
    assert_eq!(from_ben.find("stanza-id", SID).and_then(|s| s.get("by")), Some("ann@localhost"), "{from_ben:?}");
    cy.send("<message to='ann@localhost' type='chat'><body>cy to ann</body></message>").await;
    let from_cy = ann.next_named("message").await;
    assert!(from_cy.find("stanza-id", SID).is_none(), "ann never keeps cy's laptop: {from_cy:?}");
    ann.send("<message to='cy@localhost' type='chat'><body>ann to cy</body></message>").await;
    cy.next_named("message").await;
    ben.send("<message to='cy@localhost' type='normal'><body>ben to cy</body></message>").await;
    let ben_to_cy = cy.next_named("message").await;
    assert!(ben_to_cy.find("stanza-id", SID).is_none(), "{ben_to_cy:?}");

    assert_eq!(archived_bodies(&mut ann).await, ["ben to ann", "ann to cy"]);
    assert_eq!(archived_bodies(&mut ben).await, ["ann to ben", "ben to ann", "ben to cy"]);
    assert_eq!(archived_bodies(&mut cy).await, ["cy to ann", "ann to cy"]);

    // A message kept offline (XEP-0160) for a user whose archive keeps
    // nothing: given at its next login without an archive id, and kept in
    // no archive (ann's default of roster, and dan is not on her roster).
    let mut dan = bound_account(addr, "dan", "desk").await;
    dan.send("<iq type='set' id='p'><prefs xmlns='urn:xmpp:mam:2' default='never'/></iq>").await;
    assert_eq!(dan.answer("p").await.get("type"), Some("result"));
    dan.send("</stream:stream>").await;
    while dan.event().await.is_some() {}
    ann.send("<message to='dan@localhost' type='chat'><body>while away</body></message>").await;
    let mut dan = bound_account(addr, "dan", "desk").await;
    dan.send("<presence/>").await;
    let kept = dan.next_named("message").await;
    assert_eq!((kept.find("body", "jabber:client").map(Element::text_content).as_deref(), kept.find("stanza-id", SID)), (Some("while away"), None));
    assert!(archived_bodies(&mut dan).await.is_empty());
    assert_eq!(archived_bodies(&mut ann).await, ["ben to ann", "ann to cy"]);
}
