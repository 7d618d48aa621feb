//! What a real deployment needs: TLS on the listener, connection tokens,
//! and a shutdown that keeps its grace.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use rustls::pki_types::ServerName;
use server::{Config, TlsFiles, TokenKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{PATIENCE, TestServer};

const SECRET: &str = "a shared secret for the tests";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn hs256(claims: serde_json::Value, secret: &str) -> String {
    encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
}

fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("switchboard-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

async fn token_server(key: TokenKey) -> TestServer {
    TestServer::with(Config { token_key: Some(key), ..Config::default() }).await
}

#[tokio::test]
async fn without_a_good_token_nobody_connects_and_each_refusal_says_why() {
    let server = token_server(TokenKey::Secret(SECRET.into())).await;
    let cases = [
        (String::new(), "a token is required"),
        (format!("?token={}", hs256(serde_json::json!({"sub": "alice", "exp": now() - 600}), SECRET)), "the token has expired"),
        (
            format!("?token={}", hs256(serde_json::json!({"sub": "alice", "exp": now() + 600}), "somebody else's secret")),
            "the token's signature does not verify",
        ),
        ("?token=garbage".to_owned(), "the token is malformed"),
    ];
    for (query, reason) in cases {
        for path in [format!("/chat/websocket{query}"), format!("/chat/000/{}/xhr{query}", crate::support::session_id())] {
            let method = if path.ends_with("websocket") || path.contains("websocket?") { "GET" } else { "POST" };
            let headers: &[(&str, &str)] = if method == "GET" {
                &[("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]
            } else {
                &[]
            };
            let reply = server.http(method, &path, headers, b"").await;
            assert_eq!(reply.status(), 401, "{path}");
            assert!(reply.text().starts_with(reason), "{path}: {}", reply.text());
            assert!(reply.header("www-authenticate").unwrap().starts_with("Bearer error="), "{path}");
        }
    }
    assert_eq!(server.metric(r#"switchboard_refused_total{app="chat",reason="token"}"#).await, Some(8.0));
    // Pages and health stay open.
    assert_eq!(server.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn a_token_names_its_holder_and_the_rooms_it_may_join() {
    let server = token_server(TokenKey::Secret(SECRET.into())).await;
    let token = hs256(serde_json::json!({"sub": "alice", "exp": now() + 600, "rooms": ["lobby"]}), SECRET);
    let mut ws = server.ws(&format!("/chat/websocket?token={token}")).await;
    ws.send(r#"{"name":"bob","room":"lobby"}"#).await;
    assert_eq!(ws.recv_json().await["error"], r#"your token names you "alice"; you cannot join as "bob""#);
    ws.send(r#"{"name":"alice","room":"kitchen"}"#).await;
    assert_eq!(ws.recv_json().await["error"], r#"your token does not let you join room "kitchen""#);
    ws.send(r#"{"name":"Alice","room":"lobby"}"#).await;
    assert_eq!(ws.recv_json().await["event"], "members");

    // The header works too, and over SockJS the query does.
    let (mut by_header, _) = tokio_tungstenite::connect_async(
        tokio_tungstenite::tungstenite::http::Request::builder()
            .uri(server.url("/echo/websocket"))
            .header("Host", server.addr.to_string())
            .header("Authorization", format!("Bearer {token}"))
            .header("Connection", "Upgrade")
            .header("Upgrade", "websocket")
            .header("Sec-WebSocket-Version", "13")
            .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
            .body(())
            .unwrap(),
    )
    .await
    .unwrap();
    by_header.send(Message::text("hi")).await.unwrap();
    assert_eq!(by_header.next().await.unwrap().unwrap(), Message::text("hi"));
    let reply = server.http("POST", &format!("/echo/000/{}/xhr?token={token}", crate::support::session_id()), &[], b"").await;
    assert_eq!((reply.status(), reply.text()), (200, "o\n"));
}

#[tokio::test]
async fn a_connection_is_closed_when_its_token_expires() {
    let server = token_server(TokenKey::Secret(SECRET.into())).await;
    // Valid for the leeway of 5 s and one more second.
    let token = hs256(serde_json::json!({"sub": "alice", "exp": now() - 4}), SECRET);
    let mut ws = server.ws(&format!("/echo/websocket?token={token}")).await;
    let close = ws.closed().await;
    assert_eq!((u16::from(close.code), close.reason.as_str()), (1008, "token expired"));
}

#[tokio::test]
async fn es256_tokens_verify_with_the_public_key() {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let public = temp_file("es256.pub.pem", &pair.public_key_pem());
    let server = token_server(TokenKey::PublicKey(public)).await;
    let signer = EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap();
    let token = encode(&Header::new(Algorithm::ES256), &serde_json::json!({"sub": "carol", "exp": now() + 600}), &signer).unwrap();
    let mut ws = server.ws(&format!("/chat/websocket?token={token}")).await;
    ws.send(r#"{"name":"carol","room":"lobby"}"#).await;
    assert_eq!(ws.recv_json().await["event"], "members");
    // An HS256 token is refused by an ES256 server, whatever its secret.
    let wrong = hs256(serde_json::json!({"sub": "carol", "exp": now() + 600}), SECRET);
    let reply = server.http("GET", &format!("/count/xhr?count=3&token={wrong}"), &[], b"").await;
    assert_eq!(reply.status(), 401);
}

#[tokio::test]
async fn tls_serves_https_and_wss() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let files = TlsFiles {
        cert: temp_file("cert.pem", &cert.cert.pem()),
        key: temp_file("key.pem", &cert.signing_key.serialize_pem()),
    };
    let server = TestServer::with(Config { tls: Some(files), ..Config::default() }).await;
    let connector = crate::support::tls_connector(cert.cert.der());
    let name = ServerName::try_from("localhost").unwrap();

    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let mut tls = connector.connect(name.clone(), tcp).await.unwrap();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, tls.read_to_end(&mut answer)).await.unwrap().unwrap();
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok\n"), "{answer}");

    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    let url = format!("wss://localhost:{}/echo/websocket", server.addr.port());
    let (mut ws, _) = tokio_tungstenite::client_async(url, tls).await.unwrap();
    ws.send(Message::text("over TLS")).await.unwrap();
    let echoed = tokio::time::timeout(PATIENCE, ws.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(echoed, Message::text("over TLS"));

    // A client that speaks plain HTTP to the TLS port gets nothing served.
    let mut plain = TcpStream::connect(server.addr).await.unwrap();
    plain.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, plain.read_to_end(&mut sink)).await.unwrap();
    assert!(!String::from_utf8_lossy(&sink).contains("ok\n"));
}

#[tokio::test]
async fn shutdown_keeps_its_grace_even_with_a_client_that_never_answers() {
    let grace = Duration::from_secs(2);
    let mut config = Config::default();
    config.server.shutdown_grace = grace;
    let server = TestServer::with(config).await;
    // A client that completed the handshake and then stopped reading and writing.
    let mut stuck = TcpStream::connect(server.addr).await.unwrap();
    stuck
        .write_all(b"GET /echo/websocket HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 12];
    stuck.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 101");
    let started = tokio::time::Instant::now();
    server.shutdown().await.unwrap().unwrap();
    // The grace is a promise; the margin only absorbs a busy machine's scheduling.
    assert!(started.elapsed() < grace + Duration::from_millis(450), "shutdown took {:?}", started.elapsed());
}
