//! `bench api` against the real server: the throughput part's publishes all answered,
//! the fan-out's deliveries counted and timed both ways, and a wrong key said plainly.

use crate::support::Serve;
use crate::{json, measure};

const KEY: &str = "0123456789abcdef-bench-test";

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

async fn serve() -> Serve {
    let mut config = server::Config::default();
    config.api.keys = Some(server::ApiKeys(vec![KEY.to_owned()]));
    Serve::with(config).await
}

#[tokio::test]
async fn api_publishes_are_counted_and_the_fanout_is_timed_both_ways() {
    let serve = serve().await;
    let out = std::env::temp_dir().join(format!("bench-api-{}.json", std::process::id()));
    let argv = [
        "api", "--quiet", "--key", KEY, "--target", &serve.url("chat"), "--requests", "300", "--connections", "3", "--members", "20", "--messages",
        "10", "--interval", "5ms", "--out", out.to_str().expect("utf-8"),
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    let publish = &r["publish"];
    assert_eq!((u(&publish["ok"]), u(&publish["refused"]), u(&publish["latency"]["count"])), (300, 0, 300), "{publish:#}");
    let fanout = &r["fanout"];
    // 10 messages, 5 each way, each delivered to all 20 members.
    assert_eq!((u(&fanout["through_api"]), u(&fanout["from_member"]), u(&fanout["expected"]), u(&fanout["received"])), (5, 5, 200, 200), "{fanout:#}");
    assert_eq!((u(&fanout["api"]["count"]), u(&fanout["member"]["count"])), (100, 100));
    // The file as written validates against the schema, without the key.
    bench::run(crate::args(&argv)).await.expect("run succeeds");
    let written = crate::schema::assert_valid(&out);
    assert!(!std::fs::read_to_string(&out).expect("written").contains(KEY), "the key is not written");
    assert_eq!(written["runs"][0]["scenario"], "api");
    let _ = std::fs::remove_file(&out);
}

#[tokio::test]
async fn a_key_the_server_does_not_know_is_a_clear_error() {
    let serve = serve().await;
    let argv = ["api", "--quiet", "--key", "not-the-key-of-this-server", "--target", &serve.url("chat"), "--requests", "5", "--members", "0"];
    let (file, err) = measure(&argv).await;
    let err = err.expect("refused").to_string();
    assert!(err.contains("refused every publish: 401 Unauthorized"), "{err}");
    assert_eq!(u(&json(&file)["runs"][0]["results"][0]["publish"]["refused"]), 5);
}
