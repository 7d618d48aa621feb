//! IRC: pingpong, chat, broadcast and idle against the real `switchboard serve`, the
//! client's bytes against a scripted IRC server, and the clear errors a wrong target
//! gets.

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::support::Serve;
use crate::{json, measure};

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test]
async fn pingpong_over_irc_is_ping_and_pong() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let (file, err) = measure(&["pingpong", "--quiet", "--count", "12", "--transport", "irc", "--target", &serve.irc_target()]).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    assert_eq!(r["transport"], "irc");
    assert_eq!((u(&r["count"]), u(&r["round_trip"]["count"])), (12, 12));
}

#[tokio::test]
async fn chat_over_irc_counts_every_other_members_message() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let argv = ["chat", "--quiet", "--transport", "irc", "--target", &serve.irc_target(), "--rooms", "2", "--users", "3", "--messages", "4", "--interval", "5ms"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    // 2 rooms × 3 users × 4 messages, each heard by the 2 other members.
    assert_eq!((u(&r["joined"]), u(&r["sent"]), u(&r["expected"]), u(&r["received"])), (6, 24, 48, 48), "{r:#}");
    assert_eq!(u(&r["latency"]["count"]), 48);
}

#[tokio::test]
async fn broadcast_over_irc_times_each_message_at_the_next_client() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let argv = [
        "broadcast", "--quiet", "--transport", "irc", "--target", &serve.irc_target(), "--levels", "4", "--start-rate", "40", "--max-rate", "40",
        "--step-seconds", "1",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let level = &json(&file)["runs"][0]["levels"][0];
    assert!(level["saturation"].is_null(), "{level:#}");
    let step = &level["steps"][0];
    let sent = u(&step["sent"]);
    assert!(sent > 0, "{step:#}");
    // Each message reaches the 3 other members, and one of them times it.
    assert_eq!((u(&step["expected"]), u(&step["received"]), u(&step["missing"]), u(&step["lost"])), (3 * sent, 3 * sent, 0, 0), "{step:#}");
    assert_eq!(u(&step["round_trip"]["count"]), sent);
}

#[tokio::test]
async fn idle_irc_clients_are_registered_and_held() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let (file, err) = measure(&["idle", "--quiet", "--transport", "irc", "--target", &serve.irc_target(), "--connections", "20", "--hold", "0.2"]).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    assert_eq!((u(&r["opened"]), u(&r["dropped"])), (20, 0), "{r:#}");
}

#[tokio::test]
async fn an_irc_target_takes_the_irc_transport_only() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let (_, err) = measure(&["pingpong", "--quiet", "--count", "1", "--target", &serve.irc_target()]).await;
    let err = err.expect("websocket at an irc:// target");
    assert!(err.is_usage() && err.to_string().contains("--transport irc"), "{err}");
    let (_, err) = measure(&["pingpong", "--quiet", "--count", "1", "--transport", "irc", "--target", &serve.url("echo")]).await;
    let err = err.expect("irc at an http:// target");
    assert!(err.is_usage() && err.to_string().contains("irc://"), "{err}");
    let (_, err) = measure(&["countdown", "--quiet", "--transport", "irc", "--target", &serve.irc_target()]).await;
    assert!(err.expect("countdown over irc").is_usage());
}

/// A scripted IRC server: the client's registration, its answer to a `PING`, a taken
/// nickname, and its own `PING`, to the byte.
#[tokio::test]
async fn the_clients_lines_to_the_byte() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let target = format!("irc://{}", listener.local_addr().expect("addr"));
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let (read, mut write) = tcp.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut next = async || lines.next_line().await.expect("read").expect("a line");
        assert_eq!(next().await, "NICK b0");
        assert_eq!(next().await, "USER b0 0 * :switchboard bench");
        write.write_all(b"PING :cookie 1\r\n:irc.test 433 * b0 :Nickname is already in use\r\n").await.expect("write");
        assert_eq!(next().await, "PONG :cookie 1");
        assert_eq!(next().await, "NICK b0_1");
        write.write_all(b":irc.test 001 b0_1 :Welcome\r\n").await.expect("write");
        assert_eq!(next().await, "PING :bench0");
        write.write_all(b":irc.test PONG irc.test :bench0\r\n").await.expect("write");
        assert_eq!(next().await, "QUIT :bench done");
    });
    let (file, err) = measure(&["pingpong", "--quiet", "--count", "1", "--transport", "irc", "--target", &target]).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["count"], 1);
    server.await.expect("the server's script");
}

/// `federated --peer-irc`: the two clients are here on one server (the satellite-link
/// script gives two linked ones), which the scenario cannot tell apart: each sees the
/// other in the channel, then every row and stream has its exact count.
#[tokio::test]
async fn federated_over_irc_meets_in_a_channel_and_counts_every_row() {
    let serve = Serve::with_irc(server::Config::default()).await;
    let peer = serve.irc.expect("started with_irc").to_string();
    let argv = [
        "federated", "--quiet", "--transport", "irc", "--target", &serve.irc_target(), "--peer-irc", &peer, "--sizes", "2,100", "--typing", "0s,20ms",
        "--round-trips", "3", "--throughput", "10,300", "--throughput-bytes", "100",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let run = &json(&file)["runs"][0];
    assert_eq!(run["settings"]["peer_irc"], peer.as_str());
    let r = &run["results"][0];
    assert_eq!(r["transport"], "irc");
    assert!(r["met_us"].as_u64().is_some() && u(&r["first_us"]) > 0, "{r:#}");
    let rows: Vec<(u64, u64, u64)> = r["rows"].as_array().expect("rows").iter().map(|r| (u(&r["size"]), u(&r["typing_us"]), u(&r["round_trip"]["count"]))).collect();
    assert_eq!(rows, [(2, 0, 3), (2, 20_000, 3), (100, 0, 3), (100, 20_000, 3)]);
    let streams: Vec<(u64, u64)> = r["throughput"].as_array().expect("throughput").iter().map(|r| (u(&r["size"]), u(&r["messages"]))).collect();
    assert_eq!(streams, [(10, 10), (300, 2)]);
}

/// One of two scripted IRC servers for `federated`: welcomes its client, lists both
/// nicknames on its JOIN, hands each PRIVMSG to the other server and delivers what the
/// other hands over. With `hold`, it PINGs its client on a message and hands that
/// message, and those after it, over only once the PONG came back: the message waits
/// on the client that sent it, as on a slow link where the sender's server pings it
/// before the message arrives.
async fn scripted(listener: TcpListener, me: &str, other: &str, hold: bool, over: tokio::sync::mpsc::Sender<String>, mut from: tokio::sync::mpsc::Receiver<String>) {
    let (tcp, _) = listener.accept().await.expect("accept");
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut channel = String::new();
    let mut held: Option<Vec<String>> = None;
    loop {
        tokio::select! {
            line = lines.next_line() => {
                let Some(line) = line.expect("read") else { return };
                let reply = if line.starts_with("USER ") {
                    format!(":irc.test 001 {me} :Welcome\r\n")
                } else if let Some(c) = line.strip_prefix("JOIN ") {
                    channel = c.to_owned();
                    format!(":irc.test 353 {me} = {c} :{me} {other}\r\n:irc.test 366 {me} {c} :End of /NAMES list.\r\n")
                } else if let Some(text) = line.strip_prefix(&format!("PRIVMSG {channel} :")) {
                    match &mut held {
                        Some(waiting) => waiting.push(text.to_owned()),
                        None if hold => {
                            held = Some(vec![text.to_owned()]);
                            write.write_all(b"PING :hold\r\n").await.expect("write");
                        }
                        None => over.send(text.to_owned()).await.expect("the other server"),
                    }
                    continue;
                } else if line == "PONG :hold" {
                    for text in held.take().expect("a PING was sent") {
                        over.send(text).await.expect("the other server");
                    }
                    continue;
                } else {
                    continue;
                };
                write.write_all(reply.as_bytes()).await.expect("write");
            }
            Some(text) = from.recv() => {
                write.write_all(format!(":{other}!u@h PRIVMSG {channel} :{text}\r\n").as_bytes()).await.expect("write");
            }
        }
    }
}

/// `federated` over IRC keeps reading the sender's connection while its message is on
/// the way to the other user: the server's PING meanwhile is answered, for round trips
/// and streams alike (an IRC server ends a client silent for two ping intervals, and
/// a slow link can take longer than that).
#[tokio::test]
async fn federated_over_irc_answers_the_senders_server_while_a_message_crosses() {
    let (mine, theirs) = (TcpListener::bind("127.0.0.1:0").await.expect("bind"), TcpListener::bind("127.0.0.1:0").await.expect("bind"));
    let (target, peer) = (format!("irc://{}", mine.local_addr().expect("addr")), theirs.local_addr().expect("addr").to_string());
    let (to_theirs, at_theirs) = tokio::sync::mpsc::channel(64);
    let (to_mine, at_mine) = tokio::sync::mpsc::channel(64);
    tokio::spawn(scripted(mine, "b0", "b1", true, to_theirs, at_mine));
    tokio::spawn(scripted(theirs, "b1", "b0", false, to_mine, at_theirs));
    let argv = ["federated", "--quiet", "--transport", "irc", "--target", &target, "--peer-irc", &peer, "--sizes", "2", "--round-trips", "2", "--throughput", "10", "--throughput-bytes", "30", "--timeout", "10s"];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    let r = &json(&file)["runs"][0]["results"][0];
    assert_eq!(u(&r["rows"][0]["round_trip"]["count"]), 2, "{r:#}");
    assert_eq!(u(&r["throughput"][0]["messages"]), 3, "{r:#}");
}

/// The meeting over IRC: the target's client sees the other at once, the other sees
/// it only once the target's server has had a PONG to a PING sent after that (as over
/// a slow link, where the target's client meanwhile is silent long enough to be
/// pinged). The target's client goes on reading while the other waits, so it answers.
#[tokio::test]
async fn federated_over_irc_keeps_the_first_to_meet_answering_until_both_have() {
    let (mine, theirs) = (TcpListener::bind("127.0.0.1:0").await.expect("bind"), TcpListener::bind("127.0.0.1:0").await.expect("bind"));
    let (target, peer) = (format!("irc://{}", mine.local_addr().expect("addr")), theirs.local_addr().expect("addr").to_string());
    let (go, mut gone) = tokio::sync::mpsc::channel::<()>(1);
    // The target's server: both in the channel at once, then a PING.
    tokio::spawn(async move {
        let (tcp, _) = mine.accept().await.expect("accept");
        let (read, mut write) = tcp.into_split();
        let mut lines = BufReader::new(read).lines();
        while let Some(line) = lines.next_line().await.expect("read") {
            if line.starts_with("USER ") {
                write.write_all(b":irc.test 001 b0 :Welcome\r\n").await.expect("write");
            } else if let Some(c) = line.strip_prefix("JOIN ") {
                write.write_all(format!(":irc.test 353 b0 = {c} :b0 b1\r\n:irc.test 366 b0 {c} :End\r\nPING :after-join\r\n").as_bytes()).await.expect("write");
            } else if line == "PONG :after-join" {
                go.send(()).await.expect("the other server");
            }
        }
    });
    // The other's server: alone in the channel until the target's client answered.
    tokio::spawn(async move {
        let (tcp, _) = theirs.accept().await.expect("accept");
        let (read, mut write) = tcp.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut channel = String::new();
        loop {
            tokio::select! {
                line = lines.next_line() => {
                    let Some(line) = line.expect("read") else { return };
                    if line.starts_with("USER ") {
                        write.write_all(b":irc.test 001 b1 :Welcome\r\n").await.expect("write");
                    } else if let Some(c) = line.strip_prefix("JOIN ") {
                        channel = c.to_owned();
                        write.write_all(format!(":irc.test 353 b1 = {c} :b1\r\n:irc.test 366 b1 {c} :End\r\n").as_bytes()).await.expect("write");
                    }
                }
                Some(()) = gone.recv() => {
                    write.write_all(format!(":b0!u@h JOIN {channel}\r\n").as_bytes()).await.expect("write");
                }
            }
        }
    });
    // No rows: the meeting is the whole run, then the first round trip, which nobody
    // answers here (refused within the timeout, after the meeting was counted).
    let argv = ["federated", "--quiet", "--transport", "irc", "--target", &target, "--peer-irc", &peer, "--sizes", "2", "--round-trips", "1", "--timeout", "3s"];
    let (_, err) = measure(&argv).await;
    let err = err.expect("no answer to the first round trip");
    assert!(err.to_string().contains("the message at the other server's user"), "the meeting ended, then the first message waited: {err}");
}

#[test]
fn federated_over_irc_takes_the_irc_transport_only() {
    let xmpp = bench::Plan::from_args(crate::args(&["federated", "--peer-irc", "127.0.0.1:6667", "--transport", "xmpp-tcp"])).expect_err("refused");
    assert!(xmpp.to_string().contains("--transport irc"), "{xmpp}");
    let nowhere = bench::Plan::from_args(crate::args(&["federated", "--peer-irc", "nowhere", "--transport", "irc"])).expect_err("refused");
    assert!(nowhere.to_string().contains("host:port"), "{nowhere}");
}
