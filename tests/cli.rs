//! The `switchboard` binary as a user runs it: flags, the start-up line,
//! and signals.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

#[test]
fn a_bad_flag_names_the_flag_and_fails() {
    let out = Command::new(BIN).args(["serve", "--listen", "nowhere"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--listen"), "{stderr}");
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let out = Command::new(BIN).args(["serve", "--config", "/nonexistent/switchboard.toml"]).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read /nonexistent/switchboard.toml"), "{stderr}");
}

#[tokio::test]
async fn serve_prints_where_it_listens_and_sigterm_closes_clients_with_1001() {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--xmpp-listen", "off"])
        .env("SWITCHBOARD_LISTEN", "127.0.0.1:1") // the flag wins over the environment
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("switchboard listening on http://127.0.0.1:"), "{line}");
    assert!(line.contains("/echo, /broadcast, /chat, /count"), "{line}");
    let addr = line.split("http://").nth(1).unwrap().split('/').next().unwrap().to_owned();

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/echo/websocket")).await.unwrap();
    ws.send(Message::text("up?")).await.unwrap();
    assert_eq!(ws.next().await.unwrap().unwrap(), Message::text("up?"));

    let started = Instant::now();
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    match ws.next().await.unwrap().unwrap() {
        Message::Close(Some(frame)) => assert_eq!(u16::from(frame.code), 1001),
        other => panic!("expected close 1001, got {other:?}"),
    }
    drop(ws);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap());
    let status = tokio::time::timeout(Duration::from_secs(5), status)
        .await
        .expect("exits within 5 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
