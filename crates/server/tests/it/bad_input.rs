//! Bad input gets its documented answer and harms no other client.

use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::{Frame, FrameHeader};

use crate::support::TestServer;

#[tokio::test]
async fn a_message_over_the_size_limit_closes_with_1009() {
    let server = TestServer::start().await;
    let mut bystander = server.ws("/echo/websocket").await;
    let mut ws = server.ws("/echo/websocket").await;
    ws.send(&"x".repeat(64 * 1024)).await;
    assert_eq!(ws.recv().await.len(), 64 * 1024, "exactly the limit is accepted");
    ws.send(&"x".repeat(64 * 1024 + 1)).await;
    assert_eq!(u16::from(ws.closed().await.code), 1009);
    bystander.send("still fine").await;
    assert_eq!(bystander.recv().await, "still fine");
}

#[tokio::test]
async fn invalid_utf8_in_a_text_frame_closes_with_1007() {
    let server = TestServer::start().await;
    let mut ws = server.ws("/echo/websocket").await;
    let header = FrameHeader { opcode: OpCode::Data(Data::Text), ..FrameHeader::default() };
    ws.send_raw(Message::Frame(Frame::from_payload(header, vec![b'o', b'k', 0xff, 0xfe].into()))).await;
    assert_eq!(u16::from(ws.closed().await.code), 1007);
}

#[tokio::test]
async fn invalid_utf8_closes_at_the_first_bad_byte_not_at_the_end_of_the_frame() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start().await;
    let mut ws = server.raw_ws("/echo/websocket").await;
    // A text frame announcing 1000 bytes (zero mask), of which only three come: "ok" and 0xff.
    ws.write_all(&[0x81, 0x80 | 126, 0x03, 0xe8, 0, 0, 0, 0, b'o', b'k', 0xff]).await.unwrap();
    let reason = b"invalid UTF-8 in text frame";
    let mut close = vec![0x88, 2 + reason.len() as u8, 0x03, 0xef];
    close.extend_from_slice(reason);
    let mut got = vec![0u8; close.len()];
    tokio::time::timeout(crate::support::PATIENCE, ws.read_exact(&mut got)).await.unwrap().unwrap();
    assert_eq!(got, close);
}

#[tokio::test]
async fn unknown_paths_and_bad_handshakes_get_http_errors() {
    let server = TestServer::start().await;
    assert_eq!(server.get("/nope").await.0, 404);
    assert_eq!(server.get("/echo/nope").await.0, 404);
    assert_eq!(server.get("/nope/websocket").await.0, 404);
    let (status, body) = server.get("/echo/websocket").await;
    assert_eq!((status, body.as_str()), (400, "Can \"Upgrade\" only to \"WebSocket\"."));
    assert_eq!(server.get("/healthz").await, (200, "ok\n".to_owned()));
}

#[tokio::test]
async fn garbage_on_the_socket_harms_no_one() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start().await;
    let mut ws = server.ws("/echo/websocket").await;
    // Not HTTP at all.
    let mut raw = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    raw.write_all(b"\x16\x03\x01\x02\x00garbage\r\n\r\n").await.unwrap();
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf).await;
    assert!(buf.is_empty() || buf.starts_with(b"HTTP/1.1 400"), "{:?}", String::from_utf8_lossy(&buf));
    ws.send("after garbage").await;
    assert_eq!(ws.recv().await, "after garbage");
}

#[tokio::test]
async fn a_client_still_sending_after_a_protocol_error_reads_the_close_and_no_reset() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = TestServer::start().await;
    let mut ws = server.raw_ws("/echo/websocket").await;
    // Autobahn's case 4.2.5, whose client sends a byte at a time: "hi",
    // then the head of a frame with the reserved opcode 15 (masked, zero mask).
    ws.write_all(&[0x81, 0x82, 0, 0, 0, 0, b'h', b'i', 0x8f, 0x8d, 0, 0, 0, 0]).await.unwrap();
    let reason = b"protocol error";
    let mut expected = vec![0x81, 0x02, b'h', b'i', 0x88, 2 + reason.len() as u8, 0x03, 0xea];
    expected.extend_from_slice(reason);
    let mut got = vec![0u8; expected.len()];
    tokio::time::timeout(crate::support::PATIENCE, ws.read_exact(&mut got)).await.unwrap().unwrap();
    assert_eq!(got, expected, "the echo, then the close");
    // The client has not seen the close yet: it sends the rest of that
    // frame and a ping. The server reads them and drops them, so that the
    // connection ends with the client's own end, not with a reset that would
    // throw away what the client has not read yet.
    ws.write_all(b"Hello, world!").await.unwrap();
    ws.write_all(&[0x89, 0x80, 0, 0, 0, 0]).await.unwrap();
    ws.shutdown().await.unwrap();
    let mut rest = Vec::new();
    let end = tokio::time::timeout(crate::support::PATIENCE, ws.read_to_end(&mut rest)).await.unwrap();
    assert!(end.is_ok(), "the connection ended cleanly: {end:?}");
    assert!(rest.is_empty(), "{rest:?}");
}
