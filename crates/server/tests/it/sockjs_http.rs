//! SockJS over HTTP (issue 3), written from the protocol: the exact bytes of
//! every HTTP transport, the header rules, every error, and sessions across
//! requests (nothing lost between polls, 2010, 3000, 1002, expiry).

use std::time::Duration;

use serde_json::Value;
use server::{Config, Mount};

use crate::support::{Raw, Reply, TestServer, session_id, sockjs_config, until};

const NO_CACHE: &str = "no-store, no-cache, no-transform, must-revalidate, max-age=0";
const JAVASCRIPT: &str = "application/javascript; charset=UTF-8";
const TEXT: &str = "text/plain; charset=UTF-8";
const ORIGIN: (&str, &str) = ("Origin", "http://test.example");
const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

async fn suite_server() -> TestServer {
    TestServer::with(sockjs_config(|_| {})).await
}

/// `/<mount>/000/<fresh id>`.
fn session_url(mount: &str) -> String {
    format!("/{mount}/000/{}", session_id())
}

async fn post(server: &TestServer, path: &str, body: &str) -> Reply {
    server.http("POST", path, &[], body.as_bytes()).await
}

async fn poll(server: &TestServer, url: &str) -> String {
    let reply = post(server, &format!("{url}/xhr"), "").await;
    assert_eq!(reply.status(), 200);
    reply.text().to_owned()
}

async fn send(server: &TestServer, url: &str, body: &str) {
    let reply = post(server, &format!("{url}/xhr_send"), body).await;
    assert_eq!((reply.status(), reply.text()), (204, ""), "xhr_send {body}");
}

fn assert_not_cached(reply: &Reply) {
    assert_eq!(reply.header("cache-control"), Some(NO_CACHE));
    assert_eq!(reply.header("expires"), None);
    assert_eq!(reply.header("last-modified"), None);
}

fn assert_cors(reply: &Reply, origin: Option<&str>) {
    match origin {
        Some(origin) => {
            assert_eq!(reply.header("access-control-allow-origin"), Some(origin));
            assert_eq!(reply.header("access-control-allow-credentials"), Some("true"));
        }
        None => {
            assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
            assert_eq!(reply.header("access-control-allow-credentials"), None);
        }
    }
}

/// Opens a streaming request and reads its head and prelude.
async fn stream(server: &TestServer, method: &str, path: &str) -> Raw {
    let mut raw = server.raw().await;
    raw.send(method, path, "1.1", &[], b"").await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert!(head.is_chunked(), "{head:?}");
    raw.chunk().await.expect("prelude");
    raw
}

#[tokio::test]
async fn greeting_and_unknown_paths() {
    let server = suite_server().await;
    for path in ["/echo", "/echo/"] {
        let reply = server.http("GET", path, &[], b"").await;
        assert_eq!(reply.status(), 200);
        assert_eq!(reply.header("content-type"), Some(TEXT));
        assert_eq!(reply.text(), "Welcome to SockJS!\n");
        assert_eq!(reply.header("set-cookie"), None);
    }
    for suffix in ["/a", "/a.html", "//", "///", "/a/a", "/a/a/", "/a/", "/a/a/nope"] {
        let reply = server.http("GET", &format!("/echo{suffix}"), &[], b"").await;
        assert_eq!(reply.status(), 404, "{suffix}");
    }
    for suffix in ["//", "/a./a", "/a/a.", "/./.", "/", "///"] {
        for method in ["GET", "POST"] {
            let reply = server.http(method, &format!("/echo{suffix}/xhr"), &[], b"").await;
            assert_eq!(reply.status(), 404, "{method} {suffix}/xhr");
        }
    }
}

#[tokio::test]
async fn info_reports_the_mount_with_fresh_entropy() {
    let server = suite_server().await;
    let reply = server.http("GET", "/echo/info", &[ORIGIN], b"").await;
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.header("content-type"), Some("application/json; charset=UTF-8"));
    assert_not_cached(&reply);
    assert_cors(&reply, Some(ORIGIN.1));
    assert_eq!(reply.header("set-cookie"), None);
    let info: Value = serde_json::from_str(reply.text()).unwrap();
    assert_eq!(info["websocket"], true);
    assert_eq!(info["cookie_needed"], false);
    assert_eq!(info["origins"], serde_json::json!(["*:*"]));
    let entropy = info["entropy"].as_u64().expect("an integer");
    assert!(entropy <= u64::from(u32::MAX));
    let again: Value = serde_json::from_str(server.http("GET", "/echo/info", &[], b"").await.text()).unwrap();
    assert_ne!(again["entropy"], info["entropy"], "fresh entropy on every call");

    let reply = server.http("GET", "/echo/info", &[], b"").await;
    assert_cors(&reply, None);
    let off: Value = serde_json::from_str(server.http("GET", "/disabled_websocket_echo/info", &[], b"").await.text()).unwrap();
    assert_eq!(off["websocket"], false);
    let reply = server.http("GET", "/cookie_needed_echo/info", &[], b"").await;
    assert_eq!(reply.header("set-cookie"), None, "info never sets the cookie");
    let cookie: Value = serde_json::from_str(reply.text()).unwrap();
    assert_eq!(cookie["cookie_needed"], true);
}

#[tokio::test]
async fn preflights_are_cacheable_for_a_year() {
    let server = suite_server().await;
    for (path, methods) in [
        ("/echo/info", "OPTIONS, GET"),
        ("/echo/abc/abc/xhr", "OPTIONS, POST"),
        ("/echo/abc/abc/xhr_send", "OPTIONS, POST"),
        ("/echo/abc/abc/xhr_streaming", "OPTIONS, POST"),
    ] {
        for origin in ["http://test.example", "null"] {
            let reply = server
                .http("OPTIONS", path, &[("Origin", origin), ("Access-Control-Request-Method", "POST")], b"")
                .await;
            assert_eq!(reply.status(), 204, "{path}");
            assert_eq!(reply.header("cache-control"), Some("public, max-age=31536000"));
            assert!(reply.header("expires").is_some_and(|e| e.ends_with(" GMT")));
            assert_eq!(reply.header("access-control-max-age"), Some("31536000"));
            assert_eq!(reply.header("access-control-allow-methods"), Some(methods));
            assert_eq!(reply.header("access-control-allow-headers"), None);
            assert_cors(&reply, Some(origin));
            assert!(reply.body.is_empty());
        }
    }
    let reply = server
        .http("OPTIONS", "/echo/a/b/xhr", &[ORIGIN, ("Access-Control-Request-Headers", "a, b, c")], b"")
        .await;
    assert_eq!(reply.header("access-control-allow-headers"), Some("a, b, c"));
    let reply = server
        .http("OPTIONS", "/echo/a/b/xhr", &[ORIGIN, ("Access-Control-Request-Headers", "")], b"")
        .await;
    assert_eq!(reply.header("access-control-allow-headers"), None);
}

const IFRAME_PAGE: &str = "<!DOCTYPE html>
<html>
<head>
  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />
  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />
  <script src=\"/sockjs.min.js\"></script>
  <script>
    document.domain = document.domain;
    SockJS.bootstrap_iframe();
  </script>
</head>
<body>
  <h2>Don't panic!</h2>
  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>
</body>
</html>
";

#[tokio::test]
async fn the_iframe_page_is_cached_by_etag_and_loads_our_sockjs_client() {
    let server = suite_server().await;
    let first = server.http("GET", "/echo/iframe.html", &[], b"").await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.header("content-type"), Some("text/html; charset=UTF-8"));
    assert_eq!(first.header("cache-control"), Some("public, max-age=31536000"));
    assert!(first.header("expires").is_some());
    assert_eq!(first.header("last-modified"), None);
    assert_eq!(first.header("set-cookie"), None);
    assert_eq!(first.text(), IFRAME_PAGE);
    let etag = first.header("etag").expect("an ETag").to_owned();
    for path in ["/iframe-a.html", "/iframe-.html", "/iframe-0.1.2.html", "/iframe-0.1.2abc-dirty.2144.html", "/iframe-a.html?t=1234"] {
        let reply = server.http("GET", &format!("/echo{path}"), &[], b"").await;
        assert_eq!((reply.status(), reply.text()), (200, IFRAME_PAGE), "{path}");
        assert_eq!(reply.header("etag"), Some(etag.as_str()));
    }
    for path in ["/iframe.htm", "/iframe", "/IFRAME.HTML", "/IFRAME", "/iframe.HTML", "/iframe.xml", "/iframe-/.html"] {
        assert_eq!(server.http("GET", &format!("/echo{path}"), &[], b"").await.status(), 404, "{path}");
    }
    let cached = server.http("GET", "/echo/iframe.html", &[("If-None-Match", &etag)], b"").await;
    assert_eq!(cached.status(), 304);
    assert_eq!(cached.header("content-type"), None);
    assert!(cached.body.is_empty());

    let script = server.http("GET", "/sockjs.min.js", &[], b"").await;
    assert_eq!(script.status(), 200);
    assert_eq!(script.header("content-type"), Some(JAVASCRIPT));
    assert!(script.text().contains("bootstrap_iframe"), "the sockjs-client build");
    let etag = script.header("etag").unwrap().to_owned();
    let cached = server.http("GET", "/sockjs.min.js", &[("If-None-Match", &etag)], b"").await;
    assert_eq!((cached.status(), cached.body.len()), (304, 0));
}

#[tokio::test]
async fn xhr_polling_bytes_and_headers() {
    let server = suite_server().await;
    let id = session_id();
    let opened = server.http("POST", &format!("/echo/000/{id}/xhr"), &[ORIGIN], b"").await;
    assert_eq!(opened.status(), 200);
    assert_eq!(opened.body, b"o\n");
    assert_eq!(opened.header("content-type"), Some(JAVASCRIPT));
    assert_eq!(opened.header("content-length"), Some("2"));
    assert_not_cached(&opened);
    assert_cors(&opened, Some(ORIGIN.1));
    assert_eq!(opened.header("set-cookie"), None);

    let sent = server.http("POST", &format!("/echo/000/{id}/xhr_send"), &[ORIGIN], br#"["x"]"#).await;
    assert_eq!(sent.status(), 204);
    assert!(sent.body.is_empty());
    assert_eq!(sent.header("content-type"), Some(TEXT));
    assert_not_cached(&sent);
    assert_cors(&sent, Some(ORIGIN.1));

    // The server id is for load balancers only: any value reaches the session.
    let got = server.http("POST", &format!("/echo/999/{id}/xhr"), &[], b"").await;
    assert_eq!(got.body, b"a[\"x\"]\n");
    assert_cors(&got, None);

    // Many content types, one batch.
    for content_type in ["text/plain", "T", "application/json", "application/xml", "", "text/xml; charset=utf-8"] {
        let reply = server
            .http("POST", &format!("/echo/000/{id}/xhr_send"), &[("Content-Type", content_type)], br#"["a"]"#)
            .await;
        assert_eq!(reply.status(), 204, "{content_type:?}");
    }
    assert_eq!(poll(&server, &format!("/echo/000/{id}")).await, "a[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]\n");
}

#[tokio::test]
async fn send_errors_follow_the_protocol() {
    let server = suite_server().await;
    let unknown = session_url("echo");
    assert_eq!(post(&server, &format!("{unknown}/xhr_send"), r#"["x"]"#).await.status(), 404);
    let reply = server.http("POST", &format!("{unknown}/jsonp_send"), &[FORM], b"d=%5B%22x%22%5D").await;
    assert_eq!(reply.status(), 404);

    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    for (body, reason) in [(r#"["x"#, "Broken JSON encoding."), ("", "Payload expected."), ("{}", "Payload expected.")] {
        let reply = post(&server, &format!("{url}/xhr_send"), body).await;
        assert_eq!((reply.status(), reply.text()), (500, reason), "{body:?}");
        assert_eq!(reply.header("content-type"), Some(TEXT));
    }
    send(&server, &url, "[]").await;
    send(&server, &url, r#"["a"]"#).await;
    assert_eq!(poll(&server, &url).await, "a[\"a\"]\n", "errors and empty frames deliver nothing");
}

#[tokio::test]
async fn nothing_is_lost_between_xhr_polls() {
    let server = suite_server().await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    // No receiver: the messages wait, in order.
    send(&server, &url, r#"["1"]"#).await;
    send(&server, &url, r#"["2"]"#).await;
    send(&server, &url, r#"["3","4"]"#).await;
    assert_eq!(poll(&server, &url).await, "a[\"1\",\"2\",\"3\",\"4\"]\n");
    // A waiting poll is answered by the next message.
    let waiting = {
        let (addr, url) = (server.addr, url.clone());
        tokio::spawn(async move { crate::support::Raw::connect(addr).await.exchange("POST", &format!("{url}/xhr"), &[], b"").await })
    };
    // Until the poll is waiting, sends queue; either way it gets "5" first.
    send(&server, &url, r#"["5"]"#).await;
    let first = waiting.await.unwrap();
    assert_eq!(first.text(), "a[\"5\"]\n");
    send(&server, &url, r#"["6"]"#).await;
    send(&server, &url, r#"["7"]"#).await;
    assert_eq!(poll(&server, &url).await, "a[\"6\",\"7\"]\n");
}

#[tokio::test]
async fn nothing_is_lost_between_jsonp_polls() {
    let server = suite_server().await;
    let url = session_url("echo");
    let jsonp = |url: &str| format!("{url}/jsonp?c=cb");
    assert_eq!(server.http("GET", &jsonp(&url), &[], b"").await.text(), "/**/cb(\"o\");\r\n");
    for d in ["d=%5B%221%22%5D", "d=%5B%222%22%2C%223%22%5D"] {
        let reply = server.http("POST", &format!("{url}/jsonp_send"), &[FORM], d.as_bytes()).await;
        assert_eq!((reply.status(), reply.text()), (200, "ok"));
    }
    let reply = server.http("POST", &format!("{url}/jsonp_send"), &[("Content-Type", "text/plain")], br#"["4"]"#).await;
    assert_eq!(reply.text(), "ok");
    let got = server.http("GET", &jsonp(&url), &[], b"").await;
    assert_eq!(got.text(), "/**/cb(\"a[\\\"1\\\",\\\"2\\\",\\\"3\\\",\\\"4\\\"]\");\r\n");
}

#[tokio::test]
async fn a_session_that_stops_polling_is_closed_past_its_queue_bound() {
    let mut config = sockjs_config(|_| {});
    config.server.queue_limit = 1024;
    let server = TestServer::with(config).await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    let message = format!(r#"["{}"]"#, "m".repeat(100));
    for _ in 0..20 {
        send(&server, &url, &message).await;
    }
    assert_eq!(poll(&server, &url).await, "c[1008,\"slow consumer: outbound queue limit exceeded\"]\n");
    let series = r#"switchboard_slow_consumer_disconnects_total{app="echo",transport="xhr-polling"}"#;
    assert_eq!(server.metric(series).await, Some(1.0));
}

#[tokio::test]
async fn jsonp_bytes_and_callback_rules() {
    let server = suite_server().await;
    let reply = server.http("GET", "/echo/a/a/jsonp", &[], b"").await;
    assert_eq!((reply.status(), reply.text()), (500, "\"callback\" parameter required"));
    for callback in ["%20", "*", "abc(", "abc%28", "", "a+b"] {
        let reply = server.http("GET", &format!("/echo/a/a/jsonp?c={callback}"), &[], b"").await;
        assert_eq!((reply.status(), reply.text()), (500, "invalid \"callback\" parameter"), "{callback:?}");
    }
    assert!(server.http("POST", "/echo/a/a/jsonp_send", &[FORM], b"d=%5B%5D").await.status() == 404, "no session was opened");

    let url = session_url("echo");
    let opened = server.http("GET", &format!("{url}/jsonp?c=%63allback"), &[], b"").await;
    assert_eq!(opened.status(), 200);
    assert_eq!(opened.text(), "/**/callback(\"o\");\r\n");
    assert_eq!(opened.header("content-type"), Some(JAVASCRIPT));
    assert_eq!(opened.header("x-content-type-options"), Some("nosniff"));
    assert_not_cached(&opened);

    let sent = server.http("POST", &format!("{url}/jsonp_send"), &[FORM], b"d=%5B%22x%22%5D").await;
    assert_eq!((sent.status(), sent.text()), (200, "ok"));
    assert_eq!(sent.header("content-type"), Some(TEXT));
    assert_not_cached(&sent);
    let got = server.http("GET", &format!("{url}/jsonp?callback=callback"), &[], b"").await;
    assert_eq!(got.text(), "/**/callback(\"a[\\\"x\\\"]\");\r\n");

    let broken = server.http("POST", &format!("{url}/jsonp_send"), &[FORM], b"d=%5B%22x").await;
    assert_eq!((broken.status(), broken.text()), (500, "Broken JSON encoding."));
    for body in ["", "d=", "p=p"] {
        let reply = server.http("POST", &format!("{url}/jsonp_send"), &[FORM], body.as_bytes()).await;
        assert_eq!((reply.status(), reply.text()), (500, "Payload expected."), "{body:?}");
    }
}

#[tokio::test]
async fn xhr_streaming_sends_each_frame_as_its_own_chunk() {
    let server = suite_server().await;
    let url = session_url("echo");
    let mut raw = server.raw().await;
    raw.send("POST", &format!("{url}/xhr_streaming"), "1.1", &[ORIGIN], b"").await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert!(head.is_chunked());
    assert_eq!(head.header("content-type"), Some(JAVASCRIPT));
    assert_eq!(head.header("cache-control"), Some(NO_CACHE));
    assert_eq!(head.header("access-control-allow-origin"), Some(ORIGIN.1));
    assert_eq!(raw.chunk_text().await, format!("{}\n", "h".repeat(2048)));
    assert_eq!(raw.chunk_text().await, "o\n");
    send(&server, &url, r#"["x"]"#).await;
    assert_eq!(raw.chunk_text().await, "a[\"x\"]\n");
    send(&server, &url, r#"["a","b"]"#).await;
    assert_eq!(raw.chunk_text().await, "a[\"a\",\"b\"]\n");
}

#[tokio::test]
async fn streaming_responses_end_at_the_response_limit() {
    // `/echo` has the suite's 4096-byte limit.
    let server = suite_server().await;
    let url = session_url("echo");
    let mut raw = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(raw.chunk_text().await, "o\n");
    let message = format!("\"{}\"", "x".repeat(128));
    // 2 + 30 × 134 bytes stay under 4096; the 31st frame passes it.
    for _ in 0..31 {
        send(&server, &url, &format!("[{message}]")).await;
        assert_eq!(raw.chunk_text().await, format!("a[{message}]\n"));
    }
    assert_eq!(raw.chunk().await, None, "the response ends after the limit");
    // The session carries on in the next request, without a second `o`.
    let mut next = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    send(&server, &url, r#"["more"]"#).await;
    assert_eq!(next.chunk_text().await, "a[\"more\"]\n");

    let url = session_url("echo");
    let mut events = stream(&server, "GET", &format!("{url}/eventsource")).await;
    assert_eq!(events.chunk_text().await, "data: o\r\n\r\n");
    let big = "x".repeat(4096);
    send(&server, &url, &format!("[\"{big}\"]")).await;
    assert_eq!(events.chunk_text().await, format!("data: a[\"{big}\"]\r\n\r\n"));
    assert_eq!(events.chunk().await, None);
}

#[tokio::test]
async fn eventsource_bytes() {
    let server = suite_server().await;
    let url = session_url("echo");
    let mut raw = server.raw().await;
    raw.send("GET", &format!("{url}/eventsource"), "1.1", &[], b"").await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert_eq!(head.header("cache-control"), Some(NO_CACHE));
    assert_eq!(raw.chunk_text().await, "\r\n");
    assert_eq!(raw.chunk_text().await, "data: o\r\n\r\n");
    send(&server, &url, r#"["x"]"#).await;
    assert_eq!(raw.chunk_text().await, "data: a[\"x\"]\r\n\r\n");
    send(&server, &url, r#"["  \u0000\n\r "]"#).await;
    assert_eq!(raw.chunk_text().await, "data: a[\"  \\u0000\\n\\r \"]\r\n\r\n");
    send(&server, &url, r#"["100%"]"#).await;
    assert_eq!(raw.chunk_text().await, "data: a[\"100%25\"]\r\n\r\n", "sockjs-client decodeURIs each event");
}

const HTMLFILE_PAGE: &str = "<!doctype html>
<html><head>
  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />
  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />
</head><body><h2>Don't panic!</h2>
  <script>
    document.domain = document.domain;
    var c = parent.callback;
    c.start();
    function p(d) {c.message(d);};
    window.onload = function() {c.stop();};
  </script>";

#[tokio::test]
async fn htmlfile_bytes_and_callback_rules() {
    let server = suite_server().await;
    let reply = server.http("GET", "/echo/a/a/htmlfile", &[], b"").await;
    assert_eq!((reply.status(), reply.text()), (500, "\"callback\" parameter required"));
    for callback in ["%20", "*", "abc(", "abc%28"] {
        let reply = server.http("GET", &format!("/echo/a/a/htmlfile?c={callback}"), &[], b"").await;
        assert_eq!((reply.status(), reply.text()), (500, "invalid \"callback\" parameter"));
    }

    let url = session_url("echo");
    let mut raw = server.raw().await;
    raw.send("GET", &format!("{url}/htmlfile?c=%63allback"), "1.1", &[], b"").await;
    let head = raw.head().await;
    assert_eq!(head.header("content-type"), Some("text/html; charset=UTF-8"));
    assert_eq!(head.header("cache-control"), Some(NO_CACHE));
    let page = raw.chunk_text().await;
    assert_eq!(page.trim(), HTMLFILE_PAGE);
    assert!(page.len() > 1024, "Safari shows nothing of a page before 1 KiB");
    assert_eq!(raw.chunk_text().await, "<script>\np(\"o\");\n</script>\r\n");
    send(&server, &url, r#"["x"]"#).await;
    assert_eq!(raw.chunk_text().await, "<script>\np(\"a[\\\"x\\\"]\");\n</script>\r\n");
    send(&server, &url, r#"["</script>"]"#).await;
    assert_eq!(raw.chunk_text().await, "<script>\np(\"a[\\\"\\u003c/script>\\\"]\");\n</script>\r\n");
}

#[tokio::test]
async fn a_second_receiver_gets_2010_and_the_first_keeps_the_session() {
    let server = suite_server().await;
    let url = session_url("echo");
    let mut first = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(first.chunk_text().await, "o\n");

    assert_eq!(poll(&server, &url).await, "c[2010,\"Another connection still open\"]\n");
    let jsonp = server.http("GET", &format!("{url}/jsonp?c=x"), &[], b"").await;
    assert_eq!(jsonp.text(), "/**/x(\"c[2010,\\\"Another connection still open\\\"]\");\r\n");
    let mut second = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(second.chunk_text().await, "c[2010,\"Another connection still open\"]\n");
    assert_eq!(second.chunk().await, None);
    let mut third = stream(&server, "GET", &format!("{url}/eventsource")).await;
    assert_eq!(third.chunk_text().await, "data: c[2010,\"Another connection still open\"]\r\n\r\n");
    assert_eq!(third.chunk().await, None);

    send(&server, &url, r#"["still mine"]"#).await;
    assert_eq!(first.chunk_text().await, "a[\"still mine\"]\n");
}

#[tokio::test]
async fn a_closed_session_answers_3000_until_it_expires() {
    let server = TestServer::with(sockjs_config(|o| o.disconnect_delay = Duration::from_millis(200))).await;
    let url = session_url("close");
    assert_eq!(poll(&server, &url).await, "o\n");
    for _ in 0..2 {
        assert_eq!(poll(&server, &url).await, "c[3000,\"Go away!\"]\n");
    }
    let jsonp = format!("{}/jsonp?c=x", session_url("close"));
    assert_eq!(server.http("GET", &jsonp, &[], b"").await.text(), "/**/x(\"o\");\r\n");
    assert_eq!(server.http("GET", &jsonp, &[], b"").await.text(), "/**/x(\"c[3000,\\\"Go away!\\\"]\");\r\n");

    let streamed = session_url("close");
    let mut first = stream(&server, "POST", &format!("{streamed}/xhr_streaming")).await;
    assert_eq!(first.chunk_text().await, "o\n");
    assert_eq!(first.chunk_text().await, "c[3000,\"Go away!\"]\n");
    assert_eq!(first.chunk().await, None);
    // Not 2010: a closed session tells every request why it ended.
    let mut second = stream(&server, "POST", &format!("{streamed}/xhr_streaming")).await;
    assert_eq!(second.chunk_text().await, "c[3000,\"Go away!\"]\n");
    assert_eq!(second.chunk().await, None);

    // xhr_send does not keep a session alive; once it has expired the id is
    // unknown, and a receiving request opens a new session.
    let closed_at = tokio::time::Instant::now();
    until(|| async {
        (post(&server, &format!("{url}/xhr_send"), r#"["x"]"#).await.status() == 404).then_some(())
    })
    .await;
    assert!(closed_at.elapsed() >= Duration::from_millis(150), "expired only after the disconnect delay");
    assert_eq!(poll(&server, &url).await, "o\n");
}

#[tokio::test]
async fn a_receiver_cut_off_mid_request_interrupts_the_session() {
    let server = TestServer::with(sockjs_config(|o| o.heartbeat = Duration::from_secs(2))).await;
    // Streaming: the prelude proves the request is the receiver.
    let url = session_url("echo");
    let mut receiver = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(receiver.chunk_text().await, "o\n");
    drop(receiver);
    let answer = until(|| async {
        let body = poll(&server, &url).await;
        (body != "c[2010,\"Another connection still open\"]\n").then_some(body)
    })
    .await;
    assert_eq!(answer, "c[1002,\"Connection interrupted\"]\n");

    // Polling: a second poll answered 2010 proves the first is the receiver.
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    let mut waiting = server.raw().await;
    waiting.send("POST", &format!("{url}/xhr"), "1.1", &[], b"").await;
    until(|| async { (poll(&server, &url).await == "c[2010,\"Another connection still open\"]\n").then_some(()) }).await;
    drop(waiting);
    let answer = until(|| async {
        let body = poll(&server, &url).await;
        (body != "c[2010,\"Another connection still open\"]\n").then_some(body)
    })
    .await;
    assert_eq!(answer, "c[1002,\"Connection interrupted\"]\n");
}

#[tokio::test]
async fn http10_clients_get_content_length_or_close_never_chunks() {
    let server = suite_server().await;
    let mut raw = server.raw().await;
    for _ in 0..2 {
        raw.send("GET", "/echo", "1.0", &[("Connection", "Keep-Alive")], b"").await;
        let head = raw.head().await;
        assert_eq!(head.status, 200);
        assert_eq!(head.header("transfer-encoding"), None);
        assert_eq!(head.header("content-length"), Some("19"));
        assert_eq!(raw.exact(19).await, b"Welcome to SockJS!\n");
        assert_eq!(head.header("connection").map(str::to_ascii_lowercase).as_deref(), Some("keep-alive"));
    }

    let url = session_url("echo");
    let mut raw = server.raw().await;
    raw.send("POST", &format!("{url}/xhr"), "1.0", &[], b"").await;
    let head = raw.head().await;
    assert_eq!(head.header("transfer-encoding"), None);
    assert_eq!(head.header("content-length"), Some("2"));
    assert_eq!(raw.exact(2).await, b"o\n");

    // Streaming over HTTP/1.0: the end of the body is the end of the connection.
    let url = session_url("close");
    let mut raw = server.raw().await;
    raw.send("POST", &format!("{url}/xhr_streaming"), "1.0", &[("Connection", "Keep-Alive")], b"").await;
    let head = raw.head().await;
    assert_eq!(head.status, 200);
    assert_eq!(head.header("transfer-encoding"), None);
    assert_eq!(head.header("content-length"), None);
    let body = raw.read_to_end().await;
    let expected = format!("{}\no\nc[3000,\"Go away!\"]\n", "h".repeat(2048));
    assert_eq!(String::from_utf8(body).unwrap(), expected);

    // The same over HTTP/1.1: chunks, then the last chunk.
    let url = session_url("close");
    let mut raw = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(raw.chunk_text().await, "o\n");
    assert_eq!(raw.chunk_text().await, "c[3000,\"Go away!\"]\n");
    assert_eq!(raw.chunk().await, None);
}

#[tokio::test]
async fn heartbeats_keep_idle_receivers_and_their_sessions_alive() {
    let server = TestServer::with(sockjs_config(|o| {
        o.heartbeat = Duration::from_millis(50);
        o.disconnect_delay = Duration::from_millis(100);
    }))
    .await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    assert_eq!(poll(&server, &url).await, "h\n");
    let jsonp = server.http("GET", &format!("{url}/jsonp?c=f"), &[], b"").await;
    assert_eq!(jsonp.text(), "/**/f(\"h\");\r\n");
    let mut raw = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    // Five heartbeats: well past the disconnect delay, yet the session lives,
    // because a request is receiving.
    for _ in 0..5 {
        assert_eq!(raw.chunk_text().await, "h\n");
    }
    send(&server, &url, r#"["alive"]"#).await;
    assert_eq!(raw.chunk_text().await, "a[\"alive\"]\n");
}

#[tokio::test]
async fn idle_sessions_expire_after_the_disconnect_delay() {
    let delay = Duration::from_millis(150);
    let server = TestServer::with(sockjs_config(|o| o.disconnect_delay = delay)).await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    let idle_from = tokio::time::Instant::now();
    let labels = r#"{app="echo",transport="xhr-polling"}"#;
    assert_eq!(server.metric(&format!("switchboard_connections{labels}")).await, Some(1.0));
    until(|| async { (post(&server, &format!("{url}/xhr_send"), "[]").await.status() == 404).then_some(()) }).await;
    assert!(idle_from.elapsed() >= delay);
    assert_eq!(server.metric(&format!("switchboard_connections{labels}")).await, Some(0.0));
    assert_eq!(poll(&server, &url).await, "o\n", "the same id now opens a new session");
}

#[tokio::test]
async fn the_jsessionid_cookie_when_the_mount_needs_it() {
    let server = suite_server().await;
    let check = |reply: &Reply, value: &str| {
        assert_eq!(reply.header("set-cookie"), Some(format!("JSESSIONID={value}; path=/").as_str()));
    };
    let url = session_url("cookie_needed_echo");
    let opened = post(&server, &format!("{url}/xhr"), "").await;
    assert_eq!(opened.text(), "o\n");
    check(&opened, "dummy");
    let mine = server.http("POST", &format!("{}/xhr", session_url("cookie_needed_echo")), &[("Cookie", "JSESSIONID=abcdef")], b"").await;
    check(&mine, "abcdef");
    check(&post(&server, &format!("{url}/xhr_send"), "[]").await, "dummy");
    let sent = server.http("POST", &format!("{url}/jsonp_send"), &[FORM], b"d=%5B%5D").await;
    check(&sent, "dummy");
    let jsonp = server.http("GET", &format!("{}/jsonp?c=x", session_url("cookie_needed_echo")), &[], b"").await;
    check(&jsonp, "dummy");
    for (method, transport) in [("POST", "xhr_streaming"), ("GET", "eventsource"), ("GET", "htmlfile?c=x")] {
        let mut raw = server.raw().await;
        raw.send(method, &format!("{}/{transport}", session_url("cookie_needed_echo")), "1.1", &[], b"").await;
        assert_eq!(raw.head().await.header("set-cookie"), Some("JSESSIONID=dummy; path=/"), "{transport}");
    }
    let preflight = server.http("OPTIONS", &format!("{url}/xhr"), &[ORIGIN], b"").await;
    check(&preflight, "dummy");
    assert_eq!(post(&server, &format!("{}/xhr", session_url("echo")), "").await.header("set-cookie"), None);
}

#[tokio::test]
async fn wrong_methods_get_405_naming_the_right_ones() {
    let server = suite_server().await;
    for (method, transport, allow) in [
        ("GET", "xhr", "OPTIONS, POST"),
        ("GET", "xhr_send", "OPTIONS, POST"),
        ("GET", "xhr_streaming", "OPTIONS, POST"),
        ("POST", "eventsource", "GET"),
        ("POST", "htmlfile", "GET"),
        ("POST", "jsonp", "GET"),
        ("GET", "jsonp_send", "POST"),
        ("POST", "websocket", "GET"),
        ("PUT", "xhr", "OPTIONS, POST"),
    ] {
        let reply = server.http(method, &format!("/echo/a/b/{transport}"), &[], b"").await;
        assert_eq!(reply.status(), 405, "{method} {transport}");
        assert_eq!(reply.header("allow"), Some(allow));
        assert_eq!(reply.header("content-type"), None);
        assert!(reply.body.is_empty());
    }
    let reply = server.http("POST", "/echo/info", &[], b"").await;
    assert_eq!((reply.status(), reply.header("allow")), (405, Some("OPTIONS, GET")));
}

#[tokio::test]
async fn the_server_escapes_what_browsers_mangle() {
    let server = suite_server().await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    // Sent escaped (as sockjs-client does), echoed back escaped the same way,
    // in lowercase hex; plain non-ASCII text passes as UTF-8.
    let escaped = r#"\u0001\n\u200c\u200f\u2028\u202f\u2060\u206f\ufff0\uffff\"\\"#;
    send(&server, &url, &format!("[\"{escaped} é ☃ 😀\"]")).await;
    assert_eq!(poll(&server, &url).await, format!("a[\"{escaped} é ☃ \\ud83d\\ude00\"]\n"));
}

#[tokio::test]
async fn origins_outside_the_allowed_list_are_refused() {
    let mut config = Config { mounts: vec![Mount::new(server::MountKind::App(server::AppKind::Echo))], ..Config::default() };
    config.mounts[0].sockjs.origins = vec!["example.com:*".to_owned()];
    let server = TestServer::with(config).await;
    let url = session_url("echo");
    let evil = ("Origin", "http://evil.example");
    let good = ("Origin", "https://example.com");
    assert_eq!(server.http("GET", "/echo/info", &[evil], b"").await.status(), 403);
    assert_eq!(server.http("POST", &format!("{url}/xhr"), &[evil], b"").await.status(), 403);
    let info = server.http("GET", "/echo/info", &[good], b"").await;
    assert_eq!(info.status(), 200);
    assert_eq!(serde_json::from_str::<Value>(info.text()).unwrap()["origins"], serde_json::json!(["example.com:*"]));
    assert_eq!(server.http("POST", &format!("{url}/xhr"), &[good], b"").await.text(), "o\n");
    assert_eq!(server.http("POST", &format!("{url}/xhr_send"), &[], b"[]").await.status(), 204, "no Origin: not a browser");
    let handshake = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", "x3JJHMbDL1EzLkh9GBhXDw==")];
    for path in ["/echo/websocket".to_owned(), format!("{url}/websocket")] {
        let refused = server.http("GET", &path, &[handshake[0], handshake[1], handshake[2], handshake[3], evil], b"").await;
        assert_eq!(refused.status(), 403, "{path}");
        let mut raw = server.raw().await;
        raw.send("GET", &path, "1.1", &[handshake[0], handshake[1], handshake[2], handshake[3], good], b"").await;
        assert_eq!(raw.head().await.status, 101, "{path}");
    }
}

#[tokio::test]
async fn a_message_over_the_size_limit_closes_the_session_with_1009() {
    let mut config = sockjs_config(|_| {});
    config.server.max_message_size = 10;
    let server = TestServer::with(config).await;
    let url = session_url("echo");
    assert_eq!(poll(&server, &url).await, "o\n");
    send(&server, &url, r#"["0123456789"]"#).await;
    send(&server, &url, r#"["0123456789X"]"#).await;
    assert_eq!(poll(&server, &url).await, "a[\"0123456789\"]\n");
    assert_eq!(poll(&server, &url).await, "c[1009,\"message too big\"]\n");
    let huge = format!("[\"{}\"]", "x".repeat(100));
    let reply = post(&server, &format!("{}/xhr_send", {
        let url = session_url("echo");
        assert_eq!(poll(&server, &url).await, "o\n");
        url
    }), &huge).await;
    assert_eq!((reply.status(), reply.text()), (413, "Payload too large."));
}

#[tokio::test]
async fn shutdown_sends_1001_to_receivers_and_returns() {
    let server = suite_server().await;
    let url = session_url("echo");
    let mut raw = stream(&server, "POST", &format!("{url}/xhr_streaming")).await;
    assert_eq!(raw.chunk_text().await, "o\n");
    let task = server.shutdown();
    assert_eq!(raw.chunk_text().await, "c[1001,\"server shutting down\"]\n");
    assert_eq!(raw.chunk().await, None);
    tokio::time::timeout(Duration::from_secs(5), task).await.expect("exits within 5 s").unwrap().unwrap();
}

#[tokio::test]
async fn sessions_are_counted_by_transport_in_metrics() {
    let server = suite_server().await;
    let url = session_url("echo");
    let mut raw = stream(&server, "GET", &format!("{url}/eventsource")).await;
    assert_eq!(raw.chunk_text().await, "data: o\r\n\r\n");
    send(&server, &url, r#"["12345"]"#).await;
    assert_eq!(raw.chunk_text().await, "data: a[\"12345\"]\r\n\r\n");
    let labels = r#"{app="echo",transport="eventsource"}"#;
    assert_eq!(server.metric(&format!("switchboard_connections{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_messages_in_total{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_messages_out_total{labels}")).await, Some(1.0));
    assert_eq!(server.metric(&format!("switchboard_bytes_in_total{labels}")).await, Some(5.0));
}
