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
    anon.send("<iq type='set' id='aq'><query xmlns='urn:xmpp:mam:2'/></iq>").await;
    let (none, fin) = anon.until_answer("aq").await;
    assert!(none.iter().all(|s| s.find("result", MAM).is_none()));
    assert_eq!(fin.find("fin", MAM).unwrap().get("complete"), Some("true"));
}
