//! XMPP: pingpong over every XMPP transport, the MUC sweep and idle sessions against the
//! real `switchboard serve`, the client's bytes against a scripted server, and the clear
//! errors a wrong password, domain or mechanism gets.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::Serve;
use crate::{args, json, measure};

const XMPP_TRANSPORTS: [&str; 8] = [
    "xmpp-tcp",
    "xmpp-websocket",
    "bosh",
    "xmpp-sockjs-websocket",
    "xmpp-xhr-streaming",
    "xmpp-xhr-polling",
    "xmpp-eventsource",
    "xmpp-jsonp-polling",
];

/// `argv` with the flags that point XMPP transports at `serve`.
fn at(serve: &Serve, argv: &[&str]) -> Vec<String> {
    argv.iter().map(|s| s.to_string()).chain(serve.xmpp_target()).collect()
}

async fn measure_at(serve: &Serve, argv: &[&str]) -> (bench::ResultFile, Option<bench::Error>) {
    let argv = at(serve, argv);
    measure(&argv.iter().map(String::as_str).collect::<Vec<_>>()).await
}

/// A server with the accounts bench0 … bench{n-1}, password `bench`, PLAIN allowed
/// without TLS and no anonymous logins.
async fn serve_accounts(n: u32) -> Serve {
    let mut config = server::Config { xmpp_accounts: (0..n).map(|i| server::AccountEntry::new(&format!("bench{i}"), "bench")).collect(), ..server::Config::default() };
    config.xmpp.plain_unencrypted = true;
    config.xmpp.anonymous = false;
    Serve::with_xmpp(config).await
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test]
async fn pingpong_over_every_xmpp_transport() {
    let serve = Serve::with_xmpp(server::Config::default()).await;
    let transports = XMPP_TRANSPORTS.join(",");
    let (file, err) = measure_at(&serve, &["pingpong", "--quiet", "--count", "10", "--transport", &transports]).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    let who = serde_json::json!({"domain": "localhost", "muc_service": "conference.localhost", "auth": {"mechanism": "anonymous"}, "bosh_wait_s": 60});
    assert_eq!(run["xmpp"], who);
    let results = run["results"].as_array().expect("results");
    let ran: Vec<&str> = results.iter().map(|r| r["transport"].as_str().expect("name")).collect();
    assert_eq!(ran, XMPP_TRANSPORTS);
    for r in results {
        assert_eq!(r["count"], 10, "{r:#}");
        let rt = &r["round_trip"];
        assert_eq!(rt["count"], 10, "{r:#}");
        assert!(u(&rt["min_us"]) <= u(&rt["p50_us"]) && u(&rt["p50_us"]) <= u(&rt["p90_us"]), "{r:#}");
        assert!(u(&rt["p90_us"]) <= u(&rt["p99_us"]) && u(&rt["p99_us"]) <= u(&rt["max_us"]), "{r:#}");
        // The login's phases are parts of the connect time, each of them measured.
        let login = &r["login"];
        let phases = ["transport_us", "stream_us", "sasl_us", "restart_us", "bind_us"];
        let parts: u64 = phases.iter().map(|p| u(&login[*p])).sum();
        assert!(parts <= u(&r["connect_us"]), "{r:#}");
        assert!(phases.iter().all(|p| u(&login[*p]) > 0), "{r:#}");
    }
}

#[tokio::test]
async fn pingpong_logs_in_to_numbered_accounts_with_plain() {
    let serve = serve_accounts(1).await;
    let argv = [
        "pingpong", "--quiet", "--count", "5", "--transport", "xmpp-tcp,xmpp-websocket,bosh", "--xmpp-user", "bench{i}",
        "--xmpp-password", "bench",
    ];
    let (file, err) = measure_at(&serve, &argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    assert_eq!(v["runs"][0]["xmpp"]["auth"], serde_json::json!({"mechanism": "plain", "user": "bench{i}"}));
    for r in v["runs"][0]["results"].as_array().expect("results") {
        assert_eq!(r["round_trip"]["count"], 5, "{r:#}");
    }
    // The result file never holds the password: `bench` stands only in the pattern and
    // in the command line the file records as given.
    let mut written = v.clone();
    written["command"] = serde_json::Value::Null;
    assert!(!written.to_string().contains("\"bench\""), "{written:#}");
}

#[tokio::test]
async fn a_wrong_password_domain_or_mechanism_is_refused_by_name() {
    let serve = serve_accounts(1).await;
    let cases: [(&[&str], &str); 3] = [
        (&["--xmpp-user", "bench{i}", "--xmpp-password", "wrong"], "SASL PLAIN as bench0 failed with not-authorized"),
        (&["--xmpp-user", "bench{i}", "--xmpp-password", "bench", "--xmpp-domain", "elsewhere.example"], "host-unknown"),
        (&[], "does not offer SASL ANONYMOUS (it offers SCRAM-SHA-256, SCRAM-SHA-1, PLAIN)"),
    ];
    for (extra, says) in cases {
        for transport in ["xmpp-tcp", "bosh"] {
            let mut argv = vec!["pingpong", "--quiet", "--count", "1", "--transport", transport];
            argv.extend(extra);
            let (file, err) = measure_at(&serve, &argv).await;
            let err = err.expect("must fail");
            assert!(err.is_refused(), "{err}");
            assert!(err.to_string().contains(says), "{transport} {extra:?}: {err}");
            assert_eq!(json(&file)["runs"][0]["partial"], true);
        }
    }
    // PLAIN in the clear is offered only when the server allows it.
    let plain_off = Serve::with_xmpp(server::Config { xmpp_accounts: vec![server::AccountEntry::new("bench0", "bench")], ..server::Config::default() }).await;
    let argv = ["pingpong", "--quiet", "--transport", "xmpp-websocket", "--xmpp-user", "bench0", "--xmpp-password", "bench"];
    let (_, err) = measure_at(&plain_off, &argv).await;
    let err = err.expect("must fail");
    assert!(err.is_refused() && err.to_string().contains("--xmpp-plain-unencrypted true"), "{err}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = silent.local_addr().expect("addr").port().to_string();
    let holding = tokio::spawn(async move {
        let (socket, _) = silent.accept().await.expect("the bench connects");
        // Held open, never answered, until the test ends.
        std::future::pending::<()>().await;
        drop(socket);
    });
    let argv = ["pingpong", "--quiet", "--transport", "xmpp-tcp", "--target", "http://127.0.0.1:1", "--xmpp-port", &port, "--timeout", "300ms"];
    let (_, err) = measure(&argv).await;
    let err = err.expect("must fail");
    assert!(err.is_timeout(), "{err}");
    holding.abort();
}

#[tokio::test]
async fn muc_every_occupant_receives_every_message() {
    let serve = Serve::with_xmpp(server::Config::default()).await;
    let argv = [
        "muc", "--quiet", "--levels", "3,5", "--start-rate", "30", "--step", "100%", "--max-rate", "60",
        "--step-seconds", "0.3", "--transport", "xmpp-tcp,xmpp-websocket,bosh",
    ];
    let (file, err) = measure_at(&serve, &argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let run = &v["runs"][0];
    assert_eq!(run["scenario"], "muc");
    let levels = run["levels"].as_array().expect("levels");
    let expected = ["xmpp-tcp", "xmpp-websocket", "bosh"].into_iter().flat_map(|kind| [(kind, 3u64), (kind, 5)]);
    assert_eq!(levels.len(), 6);
    for (level, (kind, n)) in levels.iter().zip(expected) {
        assert_eq!((level["transport"].as_str(), u(&level["connections"])), (Some(kind), n));
        assert_eq!(level["saturation"], serde_json::Value::Null, "{level:#}");
        assert_eq!(level["connect"]["count"], n);
        let steps = level["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), 2);
        // A step of 0.3 s on a loaded machine may send nothing; the level sends something.
        assert!(steps.iter().map(|s| u(&s["sent"])).sum::<u64>() > 0, "{level:#}");
        for step in steps {
            let sent = u(&step["sent"]);
            assert_eq!(u(&step["expected"]), sent * n);
            assert_eq!(step["received"], step["expected"], "{step:#}");
            assert_eq!((u(&step["lost"]), u(&step["missing"])), (0, 0), "{step:#}");
            assert_eq!(u(&step["round_trip"]["count"]), sent, "{step:#}");
        }
    }
    assert_eq!(run["summary"].as_array().expect("summary").len(), 6);
}

#[tokio::test]
async fn idle_sessions_are_held_and_measured() {
    let serve = serve_accounts(12).await;
    let argv = [
        "idle", "--quiet", "--connections", "12", "--hold", "0.3", "--transport", "xmpp-tcp,xmpp-websocket,bosh",
        "--xmpp-user", "bench{i}", "--xmpp-password", "bench",
    ];
    let (file, err) = measure_at(&serve, &argv).await;
    assert!(err.is_none(), "{err:?}");
    let v = json(&file);
    let results = v["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!((u(&r["connections"]), u(&r["opened"]), u(&r["dropped"])), (12, 12, 0), "{r:#}");
        assert_eq!(r["connect"]["count"], 12);
        // The server runs in this process, found from its port: its RSS is read.
        assert!(r["server_rss_before_bytes"].is_u64() && r["server_rss_after_bytes"].is_u64(), "{r:#}");
        assert!(r["server_rss_per_connection_bytes"].is_number(), "{r:#}");
    }
}

#[tokio::test]
async fn idle_refuses_more_connections_than_open_files() {
    let serve = Serve::with_xmpp(server::Config::default()).await;
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).expect("limit");
    let too_many = u32::try_from(hard).unwrap_or(u32::MAX - 1000) + 1;
    let argv = ["idle", "--quiet", "--connections", &too_many.to_string(), "--transport", "xmpp-tcp"];
    let (_, err) = measure_at(&serve, &argv).await;
    let err = err.expect("must fail");
    assert!(err.is_usage() && err.to_string().contains("ulimit -n"), "{err}");
}

#[tokio::test]
async fn result_files_match_the_schema() {
    let serve = Serve::with_xmpp(server::Config::default()).await;
    let dir = std::env::temp_dir().join(format!("bench-xmpp-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let cases: [(&str, &[&str]); 3] = [
        ("pingpong", &["--count", "3", "--transport", "xmpp-tcp"]),
        ("muc", &["--levels", "2", "--start-rate", "20", "--max-rate", "20", "--step-seconds", "0.2"]),
        ("idle", &["--connections", "2", "--hold", "0.1", "--transport", "xmpp-tcp"]),
    ];
    for (scenario, extra) in cases {
        let out = dir.join(format!("{scenario}.json"));
        let mut argv = vec![scenario, "--quiet", "--out", out.to_str().expect("utf-8")];
        argv.extend(extra);
        let argv = at(&serve, &argv);
        bench::run(args(&argv.iter().map(String::as_str).collect::<Vec<_>>())).await.expect("run succeeds");
        let v = crate::schema::assert_valid(&out);
        assert_eq!(v["runs"][0]["scenario"], scenario);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn flags_that_cannot_work_are_usage_errors() {
    let plan = |argv: &[&str]| bench::Plan::from_args(args(argv));
    assert!(plan(&["pingpong", "--xmpp-password", "x"]).expect_err("password alone").is_usage());
    assert!(plan(&["pingpong", "--xmpp-user", "bench{i}"]).expect_err("user alone").is_usage());
    assert!(plan(&["pingpong", "--xmpp-websocket-path", "ws"]).expect_err("relative path").is_usage());
    let serve = Serve::with_xmpp(server::Config::default()).await;
    let cases: [&[&str]; 3] = [
        &["muc", "--quiet", "--transport", "websocket"],
        &["muc", "--quiet", "--transport", "all"],
        &["pingpong", "--quiet", "--transport", "xmpp-tcp", "--link", "rate=1mbit,delay=1ms"],
    ];
    for argv in cases {
        let (_, err) = measure_at(&serve, argv).await;
        assert!(err.as_ref().is_some_and(bench::Error::is_usage), "{argv:?}: {err:?}");
    }
    let (_, err) = measure(&["countdown", "--quiet", "--transport", "xmpp-tcp", "--target", &serve.url("count")]).await;
    assert!(err.as_ref().is_some_and(bench::Error::is_usage), "{err:?}");
}

/// Reads exactly `expected`'s length from the bench and checks it byte for byte.
async fn expect(socket: &mut TcpStream, expected: &str) {
    let mut got = vec![0u8; expected.len()];
    socket.read_exact(&mut got).await.expect("the bench sent it");
    assert_eq!(String::from_utf8_lossy(&got), expected);
}

#[tokio::test]
async fn the_client_speaks_rfc_6120_to_the_byte() {
    const HEADER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0' xml:lang='en'>";
    const SERVER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='s' from='localhost' version='1.0'>";
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.expect("the bench connects");
        expect(&mut s, HEADER).await;
        let features = "<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>PLAIN</mechanism></mechanisms></stream:features>";
        s.write_all(format!("{SERVER}{features}").as_bytes()).await.expect("write");
        // base64("\0bench7\0secret")
        expect(&mut s, r#"<auth xmlns="urn:ietf:params:xml:ns:xmpp-sasl" mechanism="PLAIN">AGJlbmNoNwBzZWNyZXQ=</auth>"#).await;
        s.write_all(b"<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>").await.expect("write");
        expect(&mut s, HEADER).await;
        // A server that still asks for RFC 3921's session.
        let features = "<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/><session xmlns='urn:ietf:params:xml:ns:xmpp-session'/></stream:features>";
        s.write_all(format!("{SERVER}{features}").as_bytes()).await.expect("write");
        expect(&mut s, r#"<iq type="set" id="bind"><bind xmlns="urn:ietf:params:xml:ns:xmpp-bind"/></iq>"#).await;
        s.write_all(b"<iq type='result' id='bind'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>bench7@localhost/r</jid></bind></iq>").await.expect("write");
        expect(&mut s, r#"<iq type="set" id="session"><session xmlns="urn:ietf:params:xml:ns:xmpp-session"/></iq>"#).await;
        s.write_all(b"<iq type='result' id='session'/>").await.expect("write");
        for seq in 0..2 {
            let ping = format!(r#"<iq type="get" to="localhost" id="ping{seq}"><ping xmlns="urn:xmpp:ping"/></iq>"#);
            expect(&mut s, &ping).await;
            s.write_all(format!("<iq type='result' id='ping{seq}' from='localhost'/>").as_bytes()).await.expect("write");
        }
        expect(&mut s, "</stream:stream>").await;
    });
    let argv = [
        "pingpong", "--quiet", "--count", "2", "--transport", "xmpp-tcp", "--target", "http://127.0.0.1:1", "--xmpp-port", &port,
        "--xmpp-user", "bench7", "--xmpp-password", "secret",
    ];
    let (file, err) = measure(&argv).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["count"], 2);
    server.await.expect("the scripted server saw every byte it expected");
}

/// What a scripted BOSH server keeps: every rid it was sent, in the order it took them,
/// the stanzas waiting for an answer, and the request it holds (hold 1).
#[derive(Default)]
struct BoshScript {
    rids: Vec<u64>,
    queue: Vec<String>,
    held: Option<tokio::sync::oneshot::Sender<Vec<String>>>,
    /// Whether the server takes each request as it comes, with no window to put them
    /// back in rid order: one that is not the next ends the session (item-not-found).
    in_arrival_order: bool,
}

/// Answers one request as a BOSH server with hold 1 would: a held request is answered at
/// once with what is queued, the stanzas this one carries are answered (SASL ANONYMOUS,
/// restart, bind, ping), and this one goes now if anything is queued, or is held. So
/// the answer to a client's stanza comes on the request that carried it, as ejabberd's.
async fn bosh_answer(script: std::sync::Arc<std::sync::Mutex<BoshScript>>, request: bytes::Bytes) -> String {
    let body = wire::bosh::Body::parse(&request, wire::xmpp::Limits::default()).expect("a body");
    let mut head = wire::bosh::Body::new();
    let wait = {
        let mut s = script.lock().expect("lock");
        let rid = body.number("rid").expect("rid").expect("rid");
        let next = s.rids.last().map(|last| last + 1);
        s.rids.push(rid);
        if s.in_arrival_order && next.is_some_and(|next| rid != next) {
            if let Some(held) = s.held.take() {
                let _ = held.send(Vec::new());
            }
            return wire::bosh::Body::new().attr("type", "terminate").attr("condition", "item-not-found").to_xml();
        }
        if let Some(held) = s.held.take() {
            let _ = held.send(std::mem::take(&mut s.queue));
        }
        if body.is_terminate() {
            return wire::bosh::Body::new().attr("type", "terminate").to_xml();
        }
        let features = |inner: &str| format!("<stream:features xmlns:stream='http://etherx.jabber.org/streams'>{inner}</stream:features>");
        if body.get("sid").is_none() {
            head = head.attr("sid", "s1").attr("wait", 60).attr("hold", 1).attr("requests", 2);
            s.queue.push(features("<mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>ANONYMOUS</mechanism></mechanisms>"));
        }
        if body.get("xmpp:restart") == Some("true") {
            s.queue.push(features("<bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/>"));
        }
        for stanza in &body.stanzas {
            let id = stanza.get("id").unwrap_or_default();
            s.queue.push(match stanza.name.as_str() {
                "auth" => "<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'/>".to_string(),
                "iq" => format!("<iq xmlns='jabber:client' type='result' id='{id}'/>"),
                other => panic!("unexpected <{other}/>"),
            });
        }
        if s.queue.is_empty() {
            let (tx, rx) = tokio::sync::oneshot::channel();
            s.held = Some(tx);
            Some(rx)
        } else {
            None
        }
    };
    let stanzas = match wait {
        Some(rx) => rx.await.unwrap_or_default(),
        None => std::mem::take(&mut script.lock().expect("lock").queue),
    };
    let mut answer = String::new();
    head.write_around(stanzas.iter().map(String::as_str), &mut answer);
    answer
}

#[tokio::test]
async fn bosh_requests_carry_one_rid_each_in_order() {
    use http_body_util::{BodyExt, Full};
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let script = std::sync::Arc::new(std::sync::Mutex::new(BoshScript::default()));
    let serving = script.clone();
    let server = tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.expect("accept");
            let script = serving.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let script = script.clone();
                    async move {
                        let request = req.into_body().collect().await.expect("body").to_bytes();
                        let answer = bosh_answer(script, request).await;
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(bytes::Bytes::from(answer))))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(socket), service).await;
            });
        }
    });
    let target = format!("http://127.0.0.1:{port}");
    let (file, err) = measure(&["pingpong", "--quiet", "--count", "20", "--transport", "bosh", "--target", &target]).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["round_trip"]["count"], 20);
    // Requests travel on two connections and may arrive in either order, but no rid
    // is used twice and none is skipped.
    let mut rids = script.lock().expect("lock").rids.clone();
    rids.sort_unstable();
    let first = rids[0];
    assert_eq!(rids, (first..first + rids.len() as u64).collect::<Vec<_>>());
    server.abort();
}

/// Serves `script` as a BOSH server that takes each request as it reads it, on a runtime
/// of its own (one thread) until `stop`: one task a connection, reading HTTP/1.1 itself,
/// so that nothing between the socket and the script reorders requests. A request that
/// is not the next first lets the runtime poll its sockets twice: whatever was written
/// before it, even on a connection not yet accepted, has then been read. After an answer
/// that carries stanzas the connection is closed (`Connection: close`), so the client's
/// next request needs a new one.
fn serve_bosh_in_arrival_order(script: std::sync::Arc<std::sync::Mutex<BoshScript>>, stop: tokio::sync::oneshot::Receiver<()>) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let listener = TcpListener::from_std(listener).expect("listener");
            let accepting = async {
                loop {
                    let (socket, _) = listener.accept().await.expect("accept");
                    tokio::spawn(serve_bosh_connection(socket, script.clone()));
                }
            };
            tokio::select! {
                () = accepting => {}
                _ = stop => {}
            }
        });
    });
    port
}

async fn serve_bosh_connection(mut socket: TcpStream, script: std::sync::Arc<std::sync::Mutex<BoshScript>>) {
    let mut read = Vec::new();
    loop {
        let body = loop {
            if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&read[..end]).to_ascii_lowercase();
                let length: usize =
                    head.lines().find_map(|line| line.strip_prefix("content-length:")).and_then(|n| n.trim().parse().ok()).expect("a content-length");
                if read.len() >= end + 4 + length {
                    let body = bytes::Bytes::copy_from_slice(&read[end + 4..end + 4 + length]);
                    read.drain(..end + 4 + length);
                    break body;
                }
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => read.extend_from_slice(&chunk[..n]),
            }
        };
        let rid = wire::bosh::Body::parse(&body, wire::xmpp::Limits::default()).ok().and_then(|b| b.number("rid").ok().flatten());
        for _ in 0..2 {
            if script.lock().expect("lock").rids.last().is_none_or(|last| rid == Some(last + 1)) {
                break;
            }
            // Yields until the runtime has polled its sockets (tokio defers the wake).
            tokio::task::yield_now().await;
        }
        let answer = bosh_answer(script.clone(), body).await;
        let close = wire::bosh::Body::parse(answer.as_bytes(), wire::xmpp::Limits::default()).is_ok_and(|b| !b.stanzas.is_empty());
        let connection = if close { "Connection: close\r\n" } else { "" };
        let response = format!("HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: {}\r\n{connection}\r\n{answer}", answer.len());
        if socket.write_all(response.as_bytes()).await.is_err() || close {
            return;
        }
    }
}

// The bench runs its sessions on a multi-threaded runtime, as the command does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bosh_requests_leave_in_rid_order() {
    // A server that takes requests as they come, as ejabberd does, must see every rid in
    // order. The connection an answer with stanzas came on is closed, so that a request
    // sent right after it needs a new one: a client that then sent an empty request
    // followed by the next ping on the connection still open, or did not wait for the
    // first to be written, would have the ping arrive first.
    let script = std::sync::Arc::new(std::sync::Mutex::new(BoshScript { in_arrival_order: true, ..BoshScript::default() }));
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let port = serve_bosh_in_arrival_order(script.clone(), stopped);
    let target = format!("http://127.0.0.1:{port}");
    let (file, err) = measure(&["pingpong", "--quiet", "--count", "300", "--transport", "bosh", "--target", &target]).await;
    let _ = stop.send(());
    let rids = script.lock().expect("lock").rids.clone();
    assert!(err.is_none(), "{err:?}; rids as they came: {rids:?}");
    assert_eq!(json(&file)["runs"][0]["results"][0]["round_trip"]["count"], 300);
    let first = rids[0];
    assert_eq!(rids, (first..first + rids.len() as u64).collect::<Vec<_>>());
}
