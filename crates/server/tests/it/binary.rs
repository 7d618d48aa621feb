//! Binary messages (issue 9): echo and broadcast carry them as binary, a
//! SockJS member of a broadcast gets them as base64 text, and the JSON apps
//! refuse them with 1003. Checked on the wire, byte for byte.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{PATIENCE, TestServer, session_id};

/// A masked client frame with a zero mask (masking with zeros is still masking).
fn masked(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126);
    let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8, 0, 0, 0, 0];
    frame.extend_from_slice(payload);
    frame
}

async fn exact(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut buf)).await.expect("the server answered").unwrap();
    buf
}

const DATA: [u8; 4] = [0x00, 0xff, 0x80, b'a'];

#[tokio::test]
async fn echo_sends_a_binary_message_back_as_binary() {
    let server = TestServer::start().await;
    let mut ws = server.raw_ws("/echo/websocket").await;
    ws.write_all(&masked(0x2, &DATA)).await.unwrap();
    assert_eq!(exact(&mut ws, 6).await, [0x82, 0x04, 0x00, 0xff, 0x80, b'a']);
    // An empty one too, and text after binary stays text.
    ws.write_all(&masked(0x2, b"")).await.unwrap();
    assert_eq!(exact(&mut ws, 2).await, [0x82, 0x00]);
    ws.write_all(&masked(0x1, b"hi")).await.unwrap();
    assert_eq!(exact(&mut ws, 4).await, [0x81, 0x02, b'h', b'i']);
}

#[tokio::test]
async fn a_binary_broadcast_reaches_websocket_members_as_binary_and_sockjs_members_as_base64() {
    let server = TestServer::start().await;
    let sockjs = format!("/broadcast/000/{}/xhr", session_id());
    assert_eq!(server.http("POST", &sockjs, &[], b"").await.text(), "o\n");
    let mut reader = server.raw_ws("/broadcast/websocket").await;
    let mut sender = server.ws("/broadcast/websocket").await;
    sender.send_raw(Message::binary(DATA.to_vec())).await;
    assert_eq!(exact(&mut reader, 6).await, [0x82, 0x04, 0x00, 0xff, 0x80, b'a']);
    assert_eq!(sender.next().await, Message::binary(DATA.to_vec()), "the sender is a member too");
    // base64 of 00 ff 80 61, standard alphabet, padded.
    assert_eq!(server.http("POST", &sockjs, &[], b"").await.text(), "a[\"AP+AYQ==\"]\n");
    // Text and binary keep their order for everyone.
    sender.send("after").await;
    assert_eq!(exact(&mut reader, 7).await, [0x81, 0x05, b'a', b'f', b't', b'e', b'r']);
    assert_eq!(server.http("POST", &sockjs, &[], b"").await.text(), "a[\"after\"]\n");
}

#[tokio::test]
async fn chat_and_count_refuse_a_binary_message_with_1003() {
    let server = TestServer::start().await;
    for path in ["/chat/websocket", "/count/websocket"] {
        let mut ws = server.raw_ws(path).await;
        ws.write_all(&masked(0x2, &DATA)).await.unwrap();
        let reason = b"binary messages are not accepted here; send JSON text";
        let mut close = vec![0x88, 2 + reason.len() as u8, 0x03, 0xeb];
        close.extend_from_slice(reason);
        assert_eq!(exact(&mut ws, close.len()).await, close, "{path}");
    }
}

#[tokio::test]
async fn sockjs_over_websocket_refuses_a_binary_frame_with_1003() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/echo/000/abc/websocket").await;
    assert_eq!(ws.recv().await, "o");
    ws.send_raw(Message::binary(DATA.to_vec())).await;
    assert_eq!(ws.recv().await, r#"c[1003,"SockJS frames are text; binary frames are not accepted"]"#);
    assert_eq!(u16::from(ws.closed().await.code), 1003);
}
