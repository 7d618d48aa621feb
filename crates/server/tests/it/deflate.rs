//! permessage-deflate (RFC 7692) on the native WebSocket endpoints (issue 9):
//! the negotiation, the client's compressed messages, the server's compressed
//! replies, and one compressed frame shared by every member of a broadcast.
//! Checked on the wire, byte for byte.

use flate2::{Decompress, FlushDecompress};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use server::Config;

use crate::support::{PATIENCE, TestServer};

const OFFER: &str = "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n";

/// A client frame: FIN, RSV1 as given, masked with a fixed key.
fn frame(rsv1: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let mut f = vec![0x80 | if rsv1 { 0x40 } else { 0 } | opcode];
    if payload.len() < 126 {
        f.push(0x80 | payload.len() as u8);
    } else {
        f.push(0x80 | 126);
        f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    }
    f.extend_from_slice(&key);
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    f
}

async fn exact(stream: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut buf)).await.expect("the server answered").unwrap();
    buf
}

/// One whole server frame: its first byte and its payload.
async fn server_frame(stream: &mut TcpStream) -> (u8, Vec<u8>) {
    let head = exact(stream, 2).await;
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let len = match head[1] & 0x7f {
        126 => {
            let n = exact(stream, 2).await;
            usize::from(u16::from_be_bytes([n[0], n[1]]))
        }
        127 => panic!("no frame here is that long"),
        n => usize::from(n),
    };
    (head[0], exact(stream, len).await)
}

fn inflate(data: &[u8]) -> Vec<u8> {
    let mut input = data.to_vec();
    input.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    let mut out = Vec::with_capacity(64 * 1024);
    Decompress::new(false).decompress_vec(&input, &mut out, FlushDecompress::Sync).expect("inflates");
    out
}

#[tokio::test]
async fn the_handshake_agrees_no_context_takeover_for_the_server() {
    let server = TestServer::start().await;
    let (_, head) = server.raw_ws_with("/echo/websocket", OFFER).await;
    assert!(head.contains("\r\nsec-websocket-extensions: permessage-deflate; server_no_context_takeover\r\n"), "{head}");
    let (_, head) = server
        .raw_ws_with("/echo/websocket", "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover; server_max_window_bits=10\r\n")
        .await;
    assert!(
        head.contains("\r\nsec-websocket-extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10\r\n"),
        "{head}"
    );
    // No offer, a bad offer, or the setting off: no extension.
    let (_, head) = server.raw_ws_with("/echo/websocket", "").await;
    assert!(!head.to_ascii_lowercase().contains("sec-websocket-extensions"), "{head}");
    let (_, head) = server.raw_ws_with("/echo/websocket", "Sec-WebSocket-Extensions: permessage-deflate; x=1\r\n").await;
    assert!(!head.to_ascii_lowercase().contains("sec-websocket-extensions"), "{head}");
    let mut config = Config::default();
    config.server.permessage_deflate = false;
    let off = TestServer::with(config).await;
    let (_, head) = off.raw_ws_with("/echo/websocket", OFFER).await;
    assert!(!head.to_ascii_lowercase().contains("sec-websocket-extensions"), "{head}");
    // SockJS's WebSocket does not offer it.
    let (_, head) = server.raw_ws_with("/echo/000/abcdefgh/websocket", OFFER).await;
    assert!(!head.to_ascii_lowercase().contains("sec-websocket-extensions"), "{head}");
}

#[tokio::test]
async fn a_compressed_message_is_inflated_and_a_long_reply_compressed() {
    let server = TestServer::start().await;
    let (mut ws, _) = server.raw_ws_with("/echo/websocket", OFFER).await;
    // RFC 7692 §7.2.3.1: "Hello" compressed. A reply under 64 bytes goes uncompressed.
    ws.write_all(&frame(true, 0x1, &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])).await.unwrap();
    assert_eq!(exact(&mut ws, 7).await, [0x81, 0x05, b'H', b'e', b'l', b'l', b'o']);
    // An uncompressed message is still a message.
    ws.write_all(&frame(false, 0x1, b"plain")).await.unwrap();
    assert_eq!(exact(&mut ws, 7).await, [0x81, 0x05, b'p', b'l', b'a', b'i', b'n']);
    // A long one comes back compressed: RSV1 set, and it inflates to the message.
    let long = "all the same ".repeat(40);
    ws.write_all(&frame(false, 0x1, long.as_bytes())).await.unwrap();
    let (b0, payload) = server_frame(&mut ws).await;
    assert_eq!(b0, 0xc1, "FIN, RSV1, text");
    assert!(payload.len() < long.len() / 4, "{} bytes for {}", payload.len(), long.len());
    assert_eq!(inflate(&payload), long.as_bytes());
    // Binary stays binary.
    ws.write_all(&frame(false, 0x2, &[7u8; 300])).await.unwrap();
    let (b0, payload) = server_frame(&mut ws).await;
    assert_eq!(b0, 0xc2, "FIN, RSV1, binary");
    assert_eq!(inflate(&payload), [7u8; 300]);
}

#[tokio::test]
async fn bad_compressed_data_closes_1007_and_rsv1_without_the_extension_1002() {
    let server = TestServer::start().await;
    let (mut ws, _) = server.raw_ws_with("/echo/websocket", OFFER).await;
    ws.write_all(&frame(true, 0x1, &[0xff; 8])).await.unwrap();
    let close = exact(&mut ws, 4).await;
    assert_eq!(close[..4], [0x88, close[1], 0x03, 0xef], "close 1007");
    let mut plain = server.raw_ws("/echo/websocket").await;
    plain.write_all(&frame(true, 0x1, &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00])).await.unwrap();
    let close = exact(&mut plain, 4).await;
    assert_eq!(close[..4], [0x88, close[1], 0x03, 0xea], "close 1002");
}

#[tokio::test]
async fn a_broadcast_is_compressed_once_and_the_same_frame_reaches_every_member() {
    let server = TestServer::start().await;
    let (mut a, _) = server.raw_ws_with("/broadcast/websocket", OFFER).await;
    let (mut b, _) = server.raw_ws_with("/broadcast/websocket", OFFER).await;
    let mut plain = server.raw_ws("/broadcast/websocket").await;
    let message = "a message every member receives, long enough to compress; ".repeat(3);
    a.write_all(&frame(false, 0x1, message.as_bytes())).await.unwrap();
    let (first, to_a) = server_frame(&mut a).await;
    let (second, to_b) = server_frame(&mut b).await;
    assert_eq!((first, second), (0xc1, 0xc1));
    assert_eq!(to_a, to_b, "byte for byte the same compressed frame");
    assert_eq!(inflate(&to_a), message.as_bytes());
    // A member that did not agree gets it as it was sent.
    let (b0, to_plain) = server_frame(&mut plain).await;
    assert_eq!(b0, 0x81);
    assert_eq!(to_plain, message.as_bytes());
}
