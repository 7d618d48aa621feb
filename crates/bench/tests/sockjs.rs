//! SockJS client transports: pingpong over every one of them, and `--transport all`
//! finding them all from `/info`.

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

#[tokio::test]
async fn pingpong_over_every_sockjs_transport() {
    let server = TestServer::start(Behaviour::default()).await;
    let url = server.url("echo");
    let argv = ["pingpong", "--quiet", "--target", &url, "--count", "10", "--transport", "all"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    let names: Vec<&str> = results.iter().map(|r| r["transport"].as_str().expect("name")).collect();
    assert_eq!(names, ["websocket", "sockjs-websocket", "xhr-streaming", "xhr-polling", "eventsource", "jsonp-polling"]);
    for r in results {
        assert_eq!(r["count"], 10, "{r:#}");
        assert_eq!(r["round_trip"]["count"], 10, "{r:#}");
    }
}

#[tokio::test]
async fn all_without_sockjs_is_just_websocket() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = ["countdown", "--quiet", "--target", &server.url("count"), "--count", "5", "--transport", "all"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let names: Vec<&str> =
        v["runs"][0]["results"].as_array().expect("results").iter().map(|r| r["transport"].as_str().expect("name")).collect();
    assert_eq!(names, ["websocket", "http"]);
}
