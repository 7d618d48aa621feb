//! pingpong: exact counts, and the bench reports a delay the server really adds.

use std::time::Duration;

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

#[tokio::test]
async fn counts_every_round_trip() {
    let server = TestServer::start(Behaviour::default()).await;
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &server.url("echo"), "--count", "25"]).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    assert_eq!(run["scenario"], "pingpong");
    assert_eq!(run["partial"], false);
    assert_eq!(run["target_name"], "default");
    let r = &run["results"][0];
    assert_eq!(r["transport"], "websocket");
    assert_eq!(r["count"], 25);
    assert_eq!(r["round_trip"]["count"], 25);
    // The test server runs inside this process, so its pid is found from the port.
    assert_eq!(run["server_pid"], std::process::id());
    // Both are this process here, so the server's CPUs and the bench's are the same list.
    let own = std::fs::read_to_string("/proc/self/status").expect("status");
    let own = own.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list").trim();
    assert_eq!(run["server_cpus"], own);
    assert_eq!(v["machine"]["bench_cpus"], own);
}

#[tokio::test]
async fn reports_the_delay_the_server_adds() {
    let delay = Duration::from_millis(50);
    let server = TestServer::start(Behaviour { echo_delay: delay, ..Default::default() }).await;
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &server.url("echo"), "--count", "10"]).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    let p50 = r["round_trip"]["p50_us"].as_u64().expect("p50");
    let min = r["round_trip"]["min_us"].as_u64().expect("min");
    assert!(min >= 50_000, "min round trip {min}µs is below the 50 ms the server waits");
    assert!(p50 < 50_000 + 100_000, "p50 {p50}µs is far above the 50 ms the server waits");
    let total = r["total_us"].as_u64().expect("total");
    assert!(total >= 10 * 50_000, "10 round trips of 50 ms took only {total}µs");
}

#[tokio::test]
async fn ws_target_is_used_exactly_as_given() {
    let server = TestServer::start(Behaviour::default()).await;
    let url = format!("ws://{}/echo/websocket", server.addr);
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &url, "--count", "3"]).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["count"], 3);
}
