//! The socket.io client transport against the real socket.io 4 peer (peers/socketio,
//! issue 6): every scenario with tiny parameters and exact counts. `make test` installs
//! the peer (`peers/socketio/install.sh`); without it these tests fail and say so.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::{json, measure};

/// The socket.io peer on a free port, stopped when dropped.
struct Peer {
    child: Child,
    port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    /// Starts `peers/socketio/start.sh 0` and reads its ready line; panics, naming
    /// the install step, when the peer is not installed.
    fn start() -> Peer {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../peers/socketio");
        assert!(
            dir.join("node_modules/socket.io").is_dir(),
            "the socket.io peer is not installed ({}/node_modules is missing): run peers/socketio/install.sh, \
             or `make test`, which does",
            dir.display()
        );
        let mut child = Command::new(dir.join("start.sh"))
            .arg("0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start peers/socketio/start.sh");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("ready line");
        // `listening on http://127.0.0.1:PORT/`
        let port = line
            .trim()
            .strip_prefix("listening on http://127.0.0.1:")
            .and_then(|rest| rest.trim_end_matches('/').parse().ok())
            .unwrap_or_else(|| panic!("unexpected ready line {line:?}"));
        Peer { child, port }
    }

    fn url(&self, app: &str) -> String {
        format!("http://127.0.0.1:{}/{app}", self.port)
    }
}

#[tokio::test]
async fn every_scenario_over_socketio() {
    let peer = Peer::start();

    let argv = ["pingpong", "--quiet", "--target", &peer.url("echo"), "--transport", "socketio", "--count", "20"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    assert_eq!(v["runs"][0]["results"][0]["transport"], "socketio");
    assert_eq!(v["runs"][0]["results"][0]["round_trip"]["count"], 20);

    let argv =
        ["countdown", "--quiet", "--target", &peer.url("count"), "--transport", "http,socketio", "--count", "30"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    for r in json(&file)["runs"][0]["results"].as_array().expect("results") {
        assert_eq!(r["iterations"], 30, "{r:#}");
    }

    let argv = [
        "chat", "--quiet", "--target", &peer.url("chat"), "--transport", "socketio", "--rooms", "2", "--users", "3",
        "--messages", "4", "--interval", "5ms",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    assert_eq!(r["expected"], 2 * 3 * 3 * 4);
    assert_eq!(r["received"], r["expected"], "{r:#}");

    let argv = [
        "broadcast", "--quiet", "--target", &peer.url("broadcast"), "--transport", "socketio", "--levels", "5",
        "--start-rate", "50", "--step", "100%", "--max-rate", "100", "--step-seconds", "0.3",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let level = &v["runs"][0]["levels"][0];
    assert_eq!(level["saturation"], serde_json::Value::Null, "{level:#}");
    for step in level["steps"].as_array().expect("steps") {
        assert!(step["sent"].as_u64().expect("sent") > 0);
        assert_eq!(step["received"], step["expected"], "{step:#}");
    }
}

#[tokio::test]
async fn an_unknown_namespace_is_refused_clearly() {
    let peer = Peer::start();
    let argv = ["pingpong", "--quiet", "--target", &peer.url("nope"), "--transport", "socketio", "--count", "1"];
    let (_, err) = measure(&argv).await;
    let err = err.expect("refused");
    assert!(err.is_not_found(), "{err}");
    assert!(err.to_string().contains("Invalid namespace"), "{err}");
}
