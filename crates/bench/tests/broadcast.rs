//! broadcast: every message reaches every client; a slow server saturates; a message the
//! server swallows is counted as lost (and as missing at every client).

use std::time::Duration;

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

fn steps(level: &serde_json::Value) -> &Vec<serde_json::Value> {
    level["steps"].as_array().expect("steps")
}

fn total(level: &serde_json::Value, field: &str) -> u64 {
    steps(level).iter().map(|s| s[field].as_u64().expect("count")).sum()
}

#[tokio::test]
async fn every_message_reaches_every_client() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = [
        "broadcast", "--quiet", "--target", &server.url("broadcast"), "--levels", "3,6", "--start-rate", "40",
        "--step", "100%", "--max-rate", "80", "--step-seconds", "0.3",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    let levels = run["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 2);
    for (level, n) in levels.iter().zip([3u64, 6]) {
        assert_eq!(level["connections"], n);
        assert_eq!(level["saturation"], serde_json::Value::Null, "{level:#}");
        assert_eq!(level["connect"]["count"], n);
        assert_eq!(steps(level).len(), 2);
        for step in steps(level) {
            let sent = step["sent"].as_u64().expect("sent");
            assert!(sent > 0);
            assert_eq!(step["expected"].as_u64(), Some(sent * n));
            assert_eq!(step["received"], step["expected"], "{step:#}");
            assert_eq!(step["lost"], 0);
            assert_eq!(step["missing"], 0);
            assert_eq!(step["round_trip"]["count"].as_u64(), Some(sent));
        }
        assert!(level["max_sustainable_received_per_s"].as_f64().is_some());
    }
    assert_eq!(run["summary"].as_array().expect("summary").len(), 2);
}

#[tokio::test]
async fn a_slow_server_saturates() {
    // The server handles one broadcast at a time at 10 ms each: about 100 msgs/s at most.
    let server = TestServer::start(Behaviour { broadcast_cost: Duration::from_millis(10), ..Default::default() }).await;
    let argv = [
        "broadcast", "--quiet", "--target", &server.url("broadcast"), "--levels", "2", "--start-rate", "20",
        "--step", "100%", "--max-rate", "5120", "--step-seconds", "0.5", "--max-mean", "200ms", "--loss-timeout", "1s",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let level = &json(&file)["runs"][0]["levels"][0];
    let saturation = &level["saturation"];
    assert!(saturation.is_object(), "a server capped at ~100 msgs/s was not found saturated: {level:#}");
    let rate = saturation["rate"].as_f64().expect("rate");
    assert!(rate > 20.0 && rate < 5120.0, "saturated at {rate}");
    assert!(["mean", "timeout"].contains(&saturation["reason"].as_str().expect("reason")));
    assert_eq!(json(&file)["runs"][0]["summary"][0]["saturated"], true);
}

#[tokio::test]
async fn a_swallowed_message_is_lost() {
    // The 12th message the server receives (barrier probes included) is never broadcast.
    let server = TestServer::start(Behaviour { broadcast_drop_nth: Some(12), ..Default::default() }).await;
    let argv = [
        "broadcast", "--quiet", "--target", &server.url("broadcast"), "--levels", "3", "--start-rate", "20",
        "--step", "100%", "--max-rate", "320", "--step-seconds", "0.5", "--loss-timeout", "500ms",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let level = &json(&file)["runs"][0]["levels"][0];
    assert_eq!(total(level, "lost"), 1, "{level:#}");
    assert_eq!(total(level, "missing"), 3, "{level:#}");
    assert_eq!(level["saturation"]["reason"], "timeout", "{level:#}");
    // The saturation is pinned to the step that sent the lost message, not the step
    // running when its loss timeout expired.
    let lossy = steps(level).iter().find(|s| s["lost"] == 1).expect("the lossy step");
    assert_eq!(level["saturation"]["rate"], lossy["rate"], "{level:#}");
}

#[tokio::test]
async fn an_echo_app_is_not_a_broadcast_app() {
    let server = TestServer::start(Behaviour::default()).await;
    let argv = ["broadcast", "--quiet", "--target", &server.url("echo"), "--levels", "3", "--timeout", "1s"];
    let (_, err) = measure(&argv).await;
    let err = err.expect("must fail");
    assert!(err.is_unexpected_reply(), "{err}");
    assert!(err.to_string().contains("broadcast app"), "{err}");
}
