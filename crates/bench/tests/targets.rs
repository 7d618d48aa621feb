//! `--target NAME=URL` repeated (issue 6): several servers measured one after another
//! into one result file, one run each, and a server that fails does not stop the others.

use crate::support::{Behaviour, TestServer};
use crate::{json, measure};

#[tokio::test]
async fn several_targets_share_one_result_file() {
    let (a, b) = (TestServer::start(Behaviour::default()).await, TestServer::start(Behaviour::default()).await);
    let (ta, tb) = (format!("ours={}", a.url("echo")), format!("theirs={}", b.url("echo")));
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &ta, "--target", &tb, "--count", "5"]).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let runs = v["runs"].as_array().expect("runs");
    let names: Vec<&str> = runs.iter().map(|r| r["target_name"].as_str().expect("name")).collect();
    assert_eq!(names, ["ours", "theirs"]);
    assert_eq!(runs[1]["target"], b.url("echo"));
    for r in runs {
        assert_eq!(r["results"][0]["round_trip"]["count"], 5, "{r:#}");
    }
}

#[tokio::test]
async fn a_failing_target_is_recorded_and_the_next_still_runs() {
    let up = TestServer::start(Behaviour::default()).await;
    // A port nothing listens on: bind one, note it, release it.
    let down = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let (td, tu) = (format!("down=http://{down}/echo"), format!("up={}", up.url("echo")));
    let (file, err) = measure(&["pingpong", "--quiet", "--target", &td, "--target", &tu, "--count", "3"]).await;
    assert!(err.expect("the first failure is returned").is_connect());
    let v = json(&file);
    assert_eq!(v["runs"][0]["target_name"], "down");
    assert_eq!(v["runs"][0]["partial"], true);
    assert!(v["runs"][0]["error"].as_str().expect("error").contains("cannot reach"));
    assert_eq!(v["runs"][1]["target_name"], "up");
    assert_eq!(v["runs"][1]["partial"], false);
    assert_eq!(v["runs"][1]["results"][0]["round_trip"]["count"], 3);
}

#[test]
fn several_targets_need_names() {
    let args = crate::args(&["pingpong", "--target", "http://127.0.0.1:1/echo", "--target", "http://127.0.0.1:2/echo"]);
    let err = bench::Plan::from_args(args).expect_err("both named default");
    assert!(err.is_usage() && err.to_string().contains("own name"), "{err}");
    let args = crate::args(&["pingpong", "--target", "a=http://h/echo", "--target", "b=http://g/echo", "--server-pid", "1"]);
    assert!(bench::Plan::from_args(args).expect_err("one pid, two servers").is_usage());
}
