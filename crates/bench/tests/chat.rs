//! chat: every message reaches every member of its room, sender included: R × U² × M.

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

#[tokio::test]
async fn every_member_receives_every_message() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = [
        "chat", "--quiet", "--target", &server.url("chat"), "--rooms", "1,2", "--users", "2,3", "--messages", "5",
        "--interval", "5ms",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    for r in results {
        let (rooms, users) = (r["rooms"].as_u64().expect("rooms"), r["users"].as_u64().expect("users"));
        assert_eq!(r["joined"].as_u64(), Some(rooms * users));
        assert_eq!(r["sent"].as_u64(), Some(rooms * users * 5));
        assert_eq!(r["expected"].as_u64(), Some(rooms * users * users * 5));
        assert_eq!(r["received"], r["expected"], "{r:#}");
        assert_eq!(r["latency"]["count"], r["received"]);
    }
}

#[tokio::test]
async fn an_echo_app_is_not_a_chat_app() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = ["chat", "--quiet", "--target", &server.url("echo"), "--rooms", "1", "--users", "2", "--timeout", "500ms"];
    let (_, err) = measure(&argv).await;
    let err = err.expect("must fail");
    assert!(err.is_unexpected_reply(), "{err}");
    assert!(err.to_string().contains("chat app"), "{err}");
}
