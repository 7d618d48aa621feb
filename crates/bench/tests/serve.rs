//! Every scenario with tiny parameters against the real `switchboard serve`, with exact
//! counts: every pong, every count step, every broadcast delivery, R × U² × M chat messages.

use crate::support::Serve;
use crate::{json, measure};

#[tokio::test]
async fn pingpong_and_countdown() {
    let serve = Serve::start().await;
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &serve.url("echo"), "--count", "20"]).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["round_trip"]["count"], 20);

    let (file, err) = measure(&["countdown", "--quiet", "--target", &serve.url("count"), "--count", "30"]).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    for r in v["runs"][0]["results"].as_array().expect("results") {
        assert_eq!(r["iterations"], 30, "{r:#}");
    }
}

#[tokio::test]
async fn chat_delivers_rooms_times_users_squared_times_messages() {
    let serve = Serve::start().await;
    let argv = [
        "chat", "--quiet", "--target", &serve.url("chat"), "--rooms", "1,2", "--users", "3", "--messages", "4",
        "--interval", "5ms",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        let rooms = r["rooms"].as_u64().expect("rooms");
        assert_eq!(r["expected"].as_u64(), Some(rooms * 3 * 3 * 4));
        assert_eq!(r["received"], r["expected"], "{r:#}");
    }
}

#[tokio::test]
async fn broadcast_reaches_every_client() {
    let serve = Serve::start().await;
    let argv = [
        "broadcast", "--quiet", "--target", &serve.url("broadcast"), "--levels", "4,8", "--start-rate", "50",
        "--step", "100%", "--max-rate", "100", "--step-seconds", "0.3",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    for level in v["runs"][0]["levels"].as_array().expect("levels") {
        assert_eq!(level["saturation"], serde_json::Value::Null, "{level:#}");
        for step in level["steps"].as_array().expect("steps") {
            assert!(step["sent"].as_u64().expect("sent") > 0);
            assert_eq!(step["received"], step["expected"], "{step:#}");
            assert_eq!(step["lost"], 0);
        }
    }
}

#[tokio::test]
async fn sockjs_transports_against_serve() {
    let serve = Serve::start().await;
    let argv = ["pingpong", "--quiet", "--target", &serve.url("echo"), "--count", "10", "--transport", "all"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 6, "{results:#?}");
    for r in results {
        assert_eq!(r["round_trip"]["count"], 10, "{r:#}");
    }
    let argv = [
        "broadcast", "--quiet", "--target", &serve.url("broadcast"), "--levels", "3", "--start-rate", "20",
        "--max-rate", "20", "--step-seconds", "0.3", "--transport", "xhr-streaming,xhr-polling,eventsource,jsonp-polling,sockjs-websocket",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    for level in v["runs"][0]["levels"].as_array().expect("levels") {
        for step in level["steps"].as_array().expect("steps") {
            assert_eq!(step["received"], step["expected"], "{level:#}");
        }
    }
}
