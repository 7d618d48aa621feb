//! The server API (`/api/`) at the byte level: keys, every method and its
//! errors and bounds, a publish reaching a member of every protocol, a
//! disconnect seen by each, and the API on a listener of its own (issue 33).

use serde_json::{Value, json};

use crate::irc::Irc;
use crate::support::{Reply, TestServer, json};
use crate::xmpp::Client as Xmpp;

const KEY: &str = "0123456789abcdef-backend";

fn config() -> server::Config {
    let mut config = server::Config::default();
    config.api.keys = Some(server::ApiKeys(vec![KEY.to_owned(), "another-key-of-16-bytes".to_owned()]));
    config
}

async fn call(server: &TestServer, method: &str, params: &Value) -> Reply {
    server.http("POST", &format!("/api/{method}"), &[("X-API-Key", KEY), ("Content-Type", "application/json")], params.to_string().as_bytes()).await
}

/// A call that must succeed: its result, whole.
async fn ok(server: &TestServer, method: &str, params: Value) -> Value {
    let reply = call(server, method, &params).await;
    assert_eq!(reply.status(), 200, "{method} {params}: {}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    serde_json::from_str(reply.text()).unwrap()
}

/// A server with the API and XMPP, where the account `mallory` (password
/// `pw`) may log in without TLS.
async fn with_mallory() -> TestServer {
    let mut config = config();
    config.xmpp_accounts = vec![server::AccountEntry::new("mallory", "pw")];
    config.xmpp.plain_unencrypted = true;
    TestServer::with_xmpp(config).await
}

/// An XMPP client with no account in `room` as `nick`, past its join.
async fn occupant(server: &TestServer, room: &str, nick: &str) -> Xmpp {
    let (mut xmpp, _) = Xmpp::login(server.xmpp.unwrap()).await;
    xmpp.send(&format!("<presence to='{room}@conference.localhost/{nick}'><x xmlns='http://jabber.org/protocol/muc'/></presence>")).await;
    while xmpp.stanza().await.find("subject", "jabber:client").is_none() {}
    xmpp
}

/// The next groupchat body `xmpp` receives, with who it is from.
async fn groupchat(xmpp: &mut Xmpp) -> (String, String) {
    loop {
        let stanza = xmpp.stanza().await;
        if let Some(body) = stanza.find("body", "jabber:client") {
            return (stanza.get("from").unwrap_or("").to_owned(), body.text_content());
        }
    }
}

#[tokio::test]
async fn the_api_is_off_without_a_key() {
    let server = TestServer::start().await;
    let reply = server.http("POST", "/api/info", &[("X-API-Key", KEY)], b"{}").await;
    assert_eq!((reply.status(), reply.text()), (404, "The server API is off: give --api-key to turn it on.\n"));
}

#[tokio::test]
async fn a_caller_without_a_known_key_is_refused_401_and_counted() {
    let server = TestServer::with(config()).await;
    let none = server.http("POST", "/api/info", &[], b"{}").await;
    assert_eq!(none.status(), 401);
    assert_eq!(
        none.text(),
        r#"{"error":{"code":"unauthorized","message":"give an API key in X-API-Key, or a token with the admin claim in Authorization: Bearer"}}"#
    );
    let wrong = server.http("POST", "/api/info", &[("X-API-Key", "0123456789abcdef-backenD")], b"{}").await;
    assert_eq!(wrong.text(), r#"{"error":{"code":"unauthorized","message":"this API key is not one of the server's (--api-key)"}}"#);
    let bearer = server.http("POST", "/api/info", &[("Authorization", "Bearer x.y.z")], b"{}").await;
    assert_eq!(bearer.status(), 401, "no token is checked on this server");
    assert_eq!(server.metric("switchboard_refused_total{app=\"api\",reason=\"key\"}").await, Some(3.0));
    // Either configured key is taken.
    let other = server.http("POST", "/api/info", &[("X-API-Key", "another-key-of-16-bytes")], b"{}").await;
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn a_token_with_the_admin_claim_may_call_and_one_without_may_not() {
    let secret = "a-secret-of-at-least-16-bytes";
    let mut config = config();
    config.token_key = Some(server::TokenKey::Secret(secret.to_owned()));
    let server = TestServer::with(config).await;
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 60;
    let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes());
    let token = |claims: Value| jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).unwrap();
    let admin = format!("Bearer {}", token(json!({"sub": "backend", "exp": exp, "admin": true})));
    let user = format!("Bearer {}", token(json!({"sub": "alice", "exp": exp})));
    assert_eq!(server.http("POST", "/api/info", &[("Authorization", &admin)], b"").await.status(), 200);
    let refused = server.http("POST", "/api/info", &[("Authorization", &user)], b"").await;
    assert_eq!(refused.text(), r#"{"error":{"code":"unauthorized","message":"the token has no admin claim"}}"#);
}

#[tokio::test]
async fn a_publish_reaches_a_member_of_every_protocol_once_and_is_kept() {
    let server = TestServer::with_xmpp(config()).await;
    let mut chat = server.chat_member("alice", "lobby").await;
    let mut sockjs = crate::support::Ws::connect(&server.url("/chat/000/apitest1/websocket")).await;
    assert_eq!(sockjs.recv().await, "o");
    sockjs.send(&json!([json!({"name": "sam", "room": "lobby"}).to_string()]).to_string()).await;
    let mut irc = Irc::register(server.irc, "ivan").await;
    irc.join("#lobby").await;
    let mut xmpp = occupant(&server, "lobby", "xena").await;
    // The chat member has seen the three others come in.
    for name in ["sam", "ivan", "xena"] {
        assert_eq!(chat.recv_json().await, json!({"event": "join", "name": name, "room": "lobby"}));
    }

    let params = json!({"room": "lobby", "name": "shop", "text": "order 42 has shipped", "idempotency_key": "order-42"});
    let reply = call(&server, "publish", &params).await;
    let epoch = serde_json::from_str::<Value>(reply.text()).unwrap().get("epoch").cloned().unwrap_or_default();
    let epoch = epoch.as_str().expect("the message's position");
    assert_eq!((reply.status(), reply.text()), (200, format!(r#"{{"room":"lobby","offset":1,"epoch":"{epoch}"}}"#).as_str()));
    // Sent again under the same key: answered the same, published once.
    assert_eq!(call(&server, "publish", &params).await.text(), reply.text());
    assert_eq!(ok(&server, "publish", json!({"room": "lobby", "name": "shop", "text": "next"})).await["offset"], 2);

    for (offset, text) in [(1, "order 42 has shipped"), (2, "next")] {
        assert_eq!(chat.recv_whole().await, json!({"name": "shop", "room": "lobby", "message": text, "offset": offset, "epoch": epoch}), "where the API said");
        assert_eq!(groupchat(&mut xmpp).await, ("lobby@conference.localhost/shop".to_owned(), text.to_owned()));
        assert_eq!(irc.until("PRIVMSG").await, format!(":shop!shop@localhost PRIVMSG #lobby :{text}\r\n"));
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let frame = sockjs.recv().await;
        let Some(batch) = frame.strip_prefix('a') else { continue };
        let events: Vec<String> = serde_json::from_str(batch).unwrap();
        seen.extend(events.iter().map(|e| json(e)).filter(|e| e["name"] == "shop").map(|e| e["message"].clone()));
    }
    assert_eq!(seen, [json!("order 42 has shipped"), json!("next")]);

    // Kept in the room's archive, oldest first, each once.
    let history = ok(&server, "history", json!({"room": "lobby"})).await;
    let texts: Vec<&Value> = history["messages"].as_array().unwrap().iter().map(|m| &m["text"]).collect();
    assert_eq!(texts, [&json!("order 42 has shipped"), &json!("next")]);
    assert_eq!(history["complete"], true);
    let first = &history["messages"][0];
    assert_eq!(first["name"], "shop");
    assert!(first["id"].is_string() && first["at"].as_str().unwrap().ends_with('Z'), "{first}");
    let after = ok(&server, "history", json!({"room": "lobby", "after": first["id"]})).await;
    assert_eq!(after["messages"].as_array().unwrap().len(), 1);
    assert_eq!(after["messages"][0]["text"], "next");
    let unknown = call(&server, "history", &json!({"room": "lobby", "before": "nope"})).await;
    assert_eq!(unknown.status(), 422);
}

#[tokio::test]
async fn presence_lists_every_protocols_members_and_stats_count_them() {
    let server = TestServer::with_xmpp(config()).await;
    let _chat = server.chat_member("alice", "lobby").await;
    let mut irc = Irc::register(server.irc, "ivan").await;
    irc.join("#lobby").await;
    let _xmpp = occupant(&server, "lobby", "xena").await;
    let _other = server.chat_member("otto", "other").await;

    let presence = ok(&server, "presence", json!({"room": "lobby"})).await;
    let mut members: Vec<(String, String, String)> = presence["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_owned(), m["protocol"].as_str().unwrap().to_owned(), m["node"].as_str().unwrap().to_owned()))
        .collect();
    members.sort();
    let local = |name: &str, protocol: &str| (name.to_owned(), protocol.to_owned(), "local".to_owned());
    assert_eq!(members, [local("alice", "app"), local("ivan", "irc"), local("xena", "xmpp")]);
    assert_eq!(ok(&server, "presence", json!({"room": "lobby", "limit": 2})).await["members"].as_array().unwrap().len(), 2);

    let stats = ok(&server, "presence_stats", json!({"room": "lobby"})).await;
    assert_eq!(stats, json!({"room": "lobby", "members": 3, "protocols": {"app": 1, "xmpp": 1, "irc": 1}}));
    assert_eq!(ok(&server, "presence_stats", json!({"room": "empty"})).await["members"], 0);

    let rooms = ok(&server, "rooms", json!({})).await;
    assert_eq!(rooms, json!({"rooms": [{"room": "lobby", "members": 3}, {"room": "other", "members": 1}], "next": null}));
    let page = ok(&server, "rooms", json!({"limit": 1})).await;
    assert_eq!(page, json!({"rooms": [{"room": "lobby", "members": 3}], "next": "lobby"}));
    let next = ok(&server, "rooms", json!({"limit": 1, "after": "lobby"})).await;
    assert_eq!(next, json!({"rooms": [{"room": "other", "members": 1}], "next": null}));
    assert_eq!(ok(&server, "rooms", json!({"pattern": "o*"})).await["rooms"], json!([{"room": "other", "members": 1}]));

    let info = ok(&server, "info", json!({})).await;
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!((&info["node"], &info["nodes"]), (&json!("local"), &json!(["local"])));
    let clients = info["clients"].as_array().unwrap();
    let count = |app: &str, transport: &str| clients.iter().find(|c| c["app"] == app && c["transport"] == transport).map(|c| c["count"].clone());
    assert_eq!(count("chat", "websocket"), Some(json!(2)));
    assert_eq!(count("irc", "tcp"), Some(json!(1)));
    assert_eq!(count("xmpp", "tcp"), Some(json!(1)));
}

#[tokio::test]
async fn a_disconnect_closes_the_user_on_every_protocol_with_its_reason() {
    let server = with_mallory().await;
    let mut chat = server.chat_member("mallory", "lobby").await;
    let mut elsewhere = server.chat_member("Mallory", "other").await;
    let mut irc = Irc::register(server.irc, "mallory").await;
    let mut xmpp = crate::xmpp::bound_account(server.xmpp.unwrap(), "mallory", "phone").await;
    let mut bystander = server.chat_member("bob", "lobby").await;

    let reply = ok(&server, "disconnect", json!({"name": "mallory", "reason": "banned"})).await;
    assert_eq!(reply, json!({"name": "mallory", "disconnected": 4}), "two chat clients, one IRC and one XMPP");
    for ws in [&mut chat, &mut elsewhere] {
        let close = ws.closed().await;
        assert_eq!((u16::from(close.code), close.reason.as_str()), (1008, "banned"));
    }
    assert_eq!(irc.until("ERROR").await, "ERROR :Closing Link: 127.0.0.1 (banned)\r\n");
    assert_eq!(xmpp.stream_error().await, "policy-violation");
    // Nobody else was touched.
    assert_eq!(bystander.recv_json().await, json!({"event": "leave", "name": "mallory", "room": "lobby"}));
    assert_eq!(ok(&server, "disconnect", json!({"name": "nobody"})).await["disconnected"], 0);
    let long = call(&server, "disconnect", &json!({"name": "bob", "reason": "x".repeat(121)})).await;
    assert_eq!(long.status(), 422);
}

/// A session waiting to be resumed (XEP-0198) ends at a disconnect: it
/// leaves its rooms at once, and cannot be resumed.
#[tokio::test]
async fn a_disconnect_ends_a_session_waiting_to_be_resumed() {
    let server = with_mallory().await;
    let addr = server.xmpp.unwrap();
    let mut bob = server.chat_member("bob", "lobby").await;
    let mut xmpp = crate::xmpp::bound_account(addr, "mallory", "phone").await;
    xmpp.send("<enable xmlns='urn:xmpp:sm:3' resume='true'/>").await;
    let id = xmpp.stanza().await.get("id").expect("resumable").to_owned();
    xmpp.send("<presence to='lobby@conference.localhost/mallory'/>").await;
    while xmpp.stanza().await.find("subject", "jabber:client").is_none() {}
    assert_eq!(bob.recv_json().await, json!({"event": "join", "name": "mallory", "room": "lobby"}));
    drop(xmpp);
    crate::support::until(|| async { (server.metric("switchboard_xmpp_parked_sessions ").await == Some(1.0)).then_some(()) }).await;

    let reply = ok(&server, "disconnect", json!({"name": "mallory", "reason": "banned"})).await;
    assert_eq!(reply["disconnected"], 1);
    assert_eq!(bob.recv_json().await, json!({"event": "leave", "name": "mallory", "room": "lobby"}));
    let mut again = crate::xmpp::login_account(addr, "mallory", "pw").await;
    again.send(&format!("<resume xmlns='urn:xmpp:sm:3' previd='{id}' h='0'/>")).await;
    assert_eq!(again.stanza().await.name, "failed");
    assert_eq!(server.metric("switchboard_xmpp_parked_sessions ").await, Some(0.0));
}

#[tokio::test]
async fn each_error_has_its_status_and_code() {
    let mut config = config();
    config.api.max_body = 256;
    config.api.max_batch = 2;
    config.api.max_page = 10;
    let server = TestServer::with(config).await;
    let code = |reply: &Reply| json(reply.text())["error"]["code"].as_str().unwrap().to_owned();

    let get = server.http("GET", "/api/publish", &[("X-API-Key", KEY)], b"").await;
    assert_eq!((get.status(), get.header("allow")), (405, Some("POST")));
    let unknown = call(&server, "nope", &json!({})).await;
    assert_eq!((unknown.status(), code(&unknown)), (404, "unknown_method".to_owned()));
    let malformed = server.http("POST", "/api/publish", &[("X-API-Key", KEY)], b"{\"room\":").await;
    assert_eq!((malformed.status(), code(&malformed)), (400, "bad_request".to_owned()));
    let extra = call(&server, "presence", &json!({"room": "lobby", "extra": 1})).await;
    assert_eq!(extra.status(), 400);
    let large = call(&server, "publish", &json!({"room": "lobby", "name": "shop", "text": "x".repeat(300)})).await;
    assert_eq!((large.status(), code(&large)), (413, "too_large".to_owned()));
    for bad in [
        json!({"room": "", "name": "shop", "text": "hi"}),
        json!({"room": "x".repeat(65), "name": "shop", "text": "hi"}),
        json!({"room": "lobby", "name": "", "text": "hi"}),
        json!({"room": "lobby", "name": "shop", "text": ""}),
    ] {
        let reply = call(&server, "publish", &bad).await;
        assert_eq!((reply.status(), code(&reply)), (422, "invalid".to_owned()), "{bad}");
    }
    let page = call(&server, "rooms", &json!({"limit": 11})).await;
    assert_eq!(page.text(), r#"{"error":{"code":"invalid","message":"limit must be at most 10 (--api-max-page)"}}"#);
    let batch = call(&server, "batch", &json!({"commands": [{"method": "info"}, {"method": "info"}, {"method": "info"}]})).await;
    assert_eq!((batch.status(), code(&batch)), (422, "invalid".to_owned()));
}

#[tokio::test]
async fn a_batch_runs_each_call_in_order_and_tells_each_outcome() {
    let server = TestServer::with(config()).await;
    let mut chat = server.chat_member("alice", "lobby").await;
    let commands = json!({"commands": [
        {"method": "publish", "params": {"room": "lobby", "name": "shop", "text": "one"}},
        {"method": "presence_stats", "params": {"room": "lobby"}},
        {"method": "publish", "params": {"room": "", "name": "shop", "text": "no"}},
        {"method": "batch", "params": {"commands": []}},
        {"method": "nope"},
    ]});
    let replies = ok(&server, "batch", commands).await;
    assert_eq!(replies["replies"][0]["result"]["room"], "lobby");
    assert_eq!(replies["replies"][0]["result"]["offset"], 1);
    assert_eq!(replies["replies"][1], json!({"result": {"room": "lobby", "members": 1, "protocols": {"app": 1, "xmpp": 0, "irc": 0}}}));
    assert_eq!(replies["replies"][2]["error"]["code"], "invalid");
    assert_eq!(replies["replies"][3]["error"]["message"], "a batch cannot hold a batch");
    assert_eq!(replies["replies"][4]["error"]["code"], "unknown_method");
    assert_eq!(chat.recv_json().await, json!({"name": "shop", "room": "lobby", "message": "one"}));

    let long_key = call(&server, "publish", &json!({"room": "lobby", "name": "shop", "text": "hi", "idempotency_key": "k".repeat(201)})).await;
    assert_eq!(long_key.text(), r#"{"error":{"code":"invalid","message":"an idempotency key is 1 to 200 bytes"}}"#);
    let broadcast = ok(&server, "broadcast", json!({"rooms": ["lobby", "news"], "name": "shop", "text": "closing"})).await;
    assert_eq!(broadcast["replies"][0]["result"]["offset"], 2);
    assert_eq!(broadcast["replies"][1], json!({"result": {"room": "news"}}), "a room with no member keeps nothing here");
    assert_eq!(chat.recv_json().await, json!({"name": "shop", "room": "lobby", "message": "closing"}));
}

#[tokio::test]
async fn a_key_past_its_rate_is_answered_429_with_retry_after() {
    let mut config = config();
    config.api.rate = 2;
    let server = TestServer::with(config).await;
    ok(&server, "info", json!({})).await;
    ok(&server, "info", json!({})).await;
    let refused = call(&server, "info", &json!({})).await;
    assert_eq!((refused.status(), refused.header("retry-after")), (429, Some("1")));
    assert_eq!(server.metric("switchboard_refused_total{app=\"api\",reason=\"rate\"}").await, Some(1.0));
    // Another key has a rate of its own.
    let other = server.http("POST", "/api/info", &[("X-API-Key", "another-key-of-16-bytes")], b"").await;
    assert_eq!(other.status(), 200);
}

#[tokio::test]
async fn the_openapi_document_is_served() {
    let server = TestServer::with(config()).await;
    let (status, body) = server.get("/api/openapi.json").await;
    assert_eq!(status, 200);
    let doc = json(&body);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/publish"]["post"].is_object());
}

#[tokio::test]
async fn the_api_on_a_listener_of_its_own_serves_only_the_api() {
    let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_addr = api.local_addr().unwrap();
    let mut config = config();
    config.api.listen = server::Listen::At(api_addr);
    let server = TestServer::with_api(config, api).await;
    let on_main = server.http("POST", "/api/info", &[("X-API-Key", KEY)], b"").await;
    assert_eq!((on_main.status(), on_main.text()), (404, "The server API listens on its own (--api-listen).\n"));
    let on_own = crate::support::request(api_addr, "POST", "/api/info", &[("X-API-Key", KEY)], b"").await;
    assert_eq!(on_own.status(), 200, "{}", on_own.text());
    let page = crate::support::request(api_addr, "GET", "/", &[], b"").await;
    assert_eq!(page.status(), 404, "nothing else is served there");
}

#[tokio::test]
async fn a_publish_without_a_name_is_the_rooms_own_in_every_protocol() {
    let server = TestServer::with_xmpp(config()).await;
    let mut chat = server.chat_member("alice", "lobby").await;
    let mut irc = Irc::register(server.irc, "ivan").await;
    irc.join("#lobby").await;
    let mut xmpp = occupant(&server, "lobby", "xena").await;
    let reply = ok(&server, "publish", json!({"room": "lobby", "text": "we close at six"})).await;
    assert_eq!(reply["offset"], 1);

    loop {
        let event = chat.recv_json().await;
        if event.get("message").is_some() {
            assert_eq!(event, json!({"room": "lobby", "message": "we close at six"}), "a message with no name");
            break;
        }
    }
    assert_eq!(groupchat(&mut xmpp).await, ("lobby@conference.localhost".to_owned(), "we close at six".to_owned()), "from the room's bare JID");
    assert_eq!(irc.until("NOTICE").await, ":localhost NOTICE #lobby :we close at six\r\n", "from the server, as a notice");
    let history = ok(&server, "history", json!({"room": "lobby"})).await;
    assert_eq!((&history["messages"][0]["name"], &history["messages"][0]["text"]), (&Value::Null, &json!("we close at six")));
    // An XMPP client reading the room's archive sees it from the room too.
    xmpp.send("<iq type='set' id='q' to='lobby@conference.localhost'><query xmlns='urn:xmpp:mam:2' queryid='f'/></iq>").await;
    let (results, _) = xmpp.until_answer("q").await;
    let forwarded = results.iter().find_map(|m| m.find("result", "urn:xmpp:mam:2")).expect("a result");
    let message = forwarded.find("forwarded", "urn:xmpp:forward:0").and_then(|f| f.find("message", "jabber:client")).expect("the message");
    assert_eq!(message.get("from"), Some("lobby@conference.localhost"));
}

#[tokio::test]
async fn each_methods_answer_to_its_documented_example_has_the_documented_fields() {
    let server = TestServer::with(config()).await;
    let _member = server.chat_member("alice", "lobby").await;
    let doc: Value = serde_json::from_str(api::OPENAPI).unwrap();
    for method in api::NAMES {
        let operation = &doc["paths"][format!("/api/{method}")]["post"];
        let example = &operation["requestBody"]["content"]["application/json"]["example"];
        let answer = ok(&server, method, example.clone()).await;
        let schema = &operation["responses"]["200"]["content"]["application/json"]["schema"];
        let documented: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
        for field in answer.as_object().unwrap().keys() {
            assert!(documented.contains(&field), "{method}: {field} is answered but not documented");
        }
        for field in schema["required"].as_array().unwrap() {
            assert!(answer.get(field.as_str().unwrap()).is_some(), "{method}: {field} is documented as always answered: {answer}");
        }
    }
}
