//! Clear errors: nothing listening, app not mounted, wrong app, and a stopped run that
//! still keeps what it measured.

use tokio_util::sync::CancellationToken;

use crate::support::{Behaviour, TestServer};
use crate::{args, json, measure};

#[tokio::test]
async fn unreachable_target_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}/echo");
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &url]).await;
    let err = err.expect("must fail");
    assert!(err.is_connect(), "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
    assert_eq!(json(&file)["runs"][0]["partial"], true);
}

#[tokio::test]
async fn missing_app_is_not_found() {
    let server = TestServer::start(Behaviour::default()).await;
    let (_, err) = measure(&["pingpong", "--quiet", "--target", &server.url("nope")]).await;
    let err = err.expect("must fail");
    assert!(err.is_not_found(), "{err}");
    let (_, err) = measure(&["countdown", "--quiet", "--transport", "http", "--target", &server.url("nope")]).await;
    assert!(err.expect("must fail").is_not_found());
}

#[tokio::test]
async fn wrong_app_is_an_unexpected_reply() {
    let server = TestServer::start(Behaviour::default()).await;
    let (_, err) = measure(&["pingpong", "--quiet", "--target", &server.url("count")]).await;
    let err = err.expect("must fail");
    assert!(err.is_unexpected_reply(), "{err}");
    assert!(err.to_string().contains("not an echo app"), "{err}");
    let (_, err) = measure(&["countdown", "--quiet", "--transport", "websocket", "--target", &server.url("echo")]).await;
    assert!(err.expect("must fail").is_unexpected_reply());
}

#[tokio::test]
async fn bad_flags_are_usage_errors() {
    let plan = bench::Plan::from_args(args(&["pingpong", "--transport", "smoke-signals"]));
    assert!(plan.expect_err("unknown transport").is_usage());
    let plan = bench::Plan::from_args(args(&["pingpong", "--transport", "http"])).expect("parses");
    let (_, err) = bench::measure(&plan, vec![], CancellationToken::new()).await;
    assert!(err.expect("http carries countdown only").is_usage());
}

#[tokio::test]
async fn a_stopped_run_is_partial_and_not_an_error() {
    let server = TestServer::start(Behaviour { echo_delay: std::time::Duration::from_millis(20), ..Default::default() }).await;
    let url = server.url("echo");
    let plan = bench::Plan::from_args(args(&["pingpong", "--quiet", "--target", &url, "--count", "1000"])).expect("flags");
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let measuring = tokio::spawn(async move { bench::measure(&plan, vec![], cancel).await });
    // Stop it once the server has answered-or-is-answering the fifth message: four
    // round trips are complete and the fifth may be.
    server.echoes_received(5).await;
    stopper.cancel();
    let (file, err) = measuring.await.expect("join");
    assert!(err.expect("stopped").is_cancelled());
    let v = json(&file);
    assert_eq!(v["runs"][0]["partial"], true);
    assert_eq!(v["runs"][0]["error"], serde_json::Value::Null);
    let count = v["runs"][0]["results"][0]["count"].as_u64().expect("count");
    assert!((4..=5).contains(&count), "{count} round trips kept");
}
