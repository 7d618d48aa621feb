//! The `switchboard` binary as a user runs it: flags, the start-up line,
//! and signals.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// `serve` on a free port, with only its HTTP listener, in memory.
fn serve() -> Command {
    let mut command = Command::new(BIN);
    command.args(["serve", "--listen", "127.0.0.1:0", "--xmpp-listen", "off", "--irc-listen", "off", "--store", "memory"]);
    command
}

/// The address in `serve`'s first line (`switchboard listening on http://ADDRESS/ …`).
fn http_address(line: &str) -> String {
    line.split("http://").nth(1).unwrap().split('/').next().unwrap().to_owned()
}

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
    let mut child = serve()
        .env("SWITCHBOARD_LISTEN", "127.0.0.1:1") // the flag wins over the environment
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("switchboard listening on http://127.0.0.1:"), "{line}");
    assert!(line.contains("/echo, /broadcast, /chat, /count"), "{line}");
    let addr = http_address(&line);

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

/// Starts `serve` with `args`, stops it with SIGTERM once it listens, and
/// returns what it wrote to standard error (a pipe, not a terminal).
fn logs_of(args: &[&str]) -> String {
    let mut child = serve()
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("switchboard listening on"), "{line}");
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", out.status);
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn logs_to_a_pipe_carry_no_colour_codes() {
    let logs = logs_of(&[]);
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(!logs.contains('\u{1b}'), "an escape sequence in {logs:?}");
}

#[test]
fn json_logs_are_one_object_a_line() {
    let logs = logs_of(&["--log-format", "json"]);
    let lines: Vec<serde_json::Value> = logs.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    let stop = lines.iter().find(|l| l["fields"]["message"] == "shutting down").unwrap_or_else(|| panic!("no shutdown line in {logs}"));
    assert_eq!(stop["level"], "INFO");
    assert!(stop["timestamp"].is_string(), "{stop}");
}

#[test]
fn an_error_is_one_line_with_no_backtrace_even_when_asked_for() {
    let out = Command::new(BIN)
        .args(["serve", "--config", "/nonexistent/switchboard.toml"])
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error: Vec<&str> = stderr.lines().filter(|l| l.starts_with("Error: ")).collect();
    assert_eq!(error.len(), 1, "{stderr}");
    assert!(error[0].contains("cannot read /nonexistent/switchboard.toml"), "{stderr}");
    assert!(!stderr.contains("stack backtrace") && !stderr.contains("Stack backtrace"), "{stderr}");
}

/// A store that cannot be opened stops the server before it says it
/// listens: whoever waits for that line never sees it for a server that
/// is about to end.
#[test]
fn a_store_that_cannot_be_opened_ends_the_server_before_it_says_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("switchboard.db"), b"this is not a database, and it is long enough to be read as a header").unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--xmpp-listen", "127.0.0.1:0", "--irc-listen", "off", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stderr.contains("switchboard.db"), "{stderr}");
    assert!(!stdout.contains("listening") && !stdout.contains("serves XMPP"), "{stdout}");
}

/// A server whose standard error is a pipe nobody reads goes on serving:
/// its logs are written by a thread of their own, and dropped past a bound
/// while that thread cannot write, rather than written where they are
/// made, which stopped the server at the first line the pipe had no room
/// for.
#[tokio::test]
async fn a_server_whose_logs_nobody_reads_goes_on_serving() {
    let mut child = serve()
        // Several lines for each message, more than a pipe holds.
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Held open and never read.
    let _logs = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = http_address(&line);
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/echo/websocket")).await.unwrap();
    for i in 0..2_000 {
        let text = format!("message {i}");
        ws.send(Message::text(text.clone())).await.unwrap();
        // A bound that turns a server stopped on its logs into a failure.
        let echo = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.unwrap_or_else(|_| panic!("no echo of message {i}: the server stopped"));
        assert_eq!(echo.unwrap().unwrap(), Message::text(text));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
