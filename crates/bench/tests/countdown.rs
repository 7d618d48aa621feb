//! countdown over http and websocket: every step answered, the ratio between them.

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

#[tokio::test]
async fn counts_down_over_http_and_websocket() {
    let server = TestServer::start(Behaviour::default()).await;
    let (file, err) = measure(&["countdown", "--quiet", "--target", &server.url("count"), "--count", "40"]).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    let transports: Vec<&str> = results.iter().map(|r| r["transport"].as_str().expect("name")).collect();
    assert_eq!(transports, ["http", "websocket"]);
    for r in results {
        assert_eq!(r["iterations"], 40);
        assert_eq!(r["from"], 40);
        assert!(r["ratio_to_websocket"].as_f64().is_some());
    }
    assert_eq!(results[1]["ratio_to_websocket"], 1.0);
}

#[tokio::test]
async fn a_server_that_ends_keep_alive_connections_is_followed_to_a_new_one() {
    // Every 7th answer says `Connection: close`; 40 steps span five connections.
    let server = TestServer::start(Behaviour { count_close_every: Some(7), ..Default::default() }).await;
    let argv = ["countdown", "--quiet", "--transport", "http", "--target", &server.url("count"), "--count", "40"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["iterations"], 40);
}
