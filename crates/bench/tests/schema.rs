//! The result file written by `--out` validates against crates/bench/schema.json.

use crate::support::{Behaviour, TestServer};
use crate::args;

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema.json")).expect("schema.json is JSON");
    jsonschema::validator_for(&schema).expect("schema.json is a valid schema")
}

pub fn assert_valid(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("result file written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("result file is JSON");
    let v = validator();
    let errors: Vec<String> = v.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "result file does not match schema.json:\n{}", errors.join("\n"));
    value
}

#[tokio::test]
async fn out_file_matches_the_schema() {
    let server = TestServer::start(Behaviour::default()).await;
    let dir = std::env::temp_dir().join(format!("bench-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let cases = [
        ("pingpong", "echo", vec!["--count", "5"]),
        ("countdown", "count", vec!["--count", "5"]),
        ("chat", "chat", vec!["--rooms", "1", "--users", "2", "--messages", "3", "--interval", "1ms"]),
        ("selftest", "broadcast", vec!["--connections", "3", "--start-rate", "20", "--max-rate", "40", "--step-seconds", "0.2"]),
        ("broadcast", "broadcast", vec!["--levels", "2", "--start-rate", "20", "--max-rate", "20", "--step-seconds", "0.2"]),
    ];
    for (name, app, extra) in cases {
        let out = dir.join(format!("{name}.json"));
        let url = format!("results={}", server.url(app));
        let mut argv = vec![name, "--quiet", "--target", &url, "--out", out.to_str().expect("utf-8")];
        argv.extend(extra);
        bench::run(args(&argv)).await.expect("run succeeds");
        let v = assert_valid(&out);
        assert_eq!(v["runs"][0]["target_name"], "results");
        assert_eq!(v["runs"][0]["scenario"], name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
