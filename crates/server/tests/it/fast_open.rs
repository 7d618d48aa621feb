//! `--tcp-fast-open`: a client holding the server's cookie sends its first
//! bytes in its SYN, and the server takes and answers them there.

use server::{Config, Listen, Listeners, StoreKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::timeout;

use crate::support::PATIENCE;

const HEADER: &[u8] = b"<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' to='localhost' version='1.0'>";

/// Opens two XMPP streams in turn to a server at `address` (an address of
/// the test's own: the kernel keeps cookies per address) whose header each
/// client writes at once: whether the second's SYN carried it to a server
/// that took it (the first may have asked for the cookie).
async fn second_header_in_the_syn(address: &str, fast_open: bool) -> bool {
    tfo::host_allows().expect("the host must allow TCP Fast Open");
    let mut config = Config::default();
    config.store.kind = StoreKind::Memory;
    config.server.tcp_fast_open = fast_open;
    config.xmpp.listen = Listen::At(address.parse().unwrap());
    config.irc.listen = Listen::Off;
    let listeners = Listeners::bind(&config).await.expect("listeners");
    let xmpp = listeners.xmpp.as_ref().expect("XMPP listens").local_addr().unwrap();
    let http = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(server::serve_with(http, listeners, config, async move {
        let _ = stopped.await;
    }));
    let mut taken = false;
    for _ in 0..2 {
        let mut client = tfo::connect(xmpp).await.unwrap();
        client.write_all(HEADER).await.unwrap();
        let mut answer = Vec::new();
        while !String::from_utf8_lossy(&answer).contains("</stream:features>") {
            let mut buf = [0; 4096];
            let n = timeout(PATIENCE, client.read(&mut buf)).await.expect("the server answers").unwrap();
            assert!(n > 0, "closed: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buf[..n]);
        }
        taken = tfo::syn_data_taken(&client).unwrap().expect("the handshake is done");
    }
    let _ = stop.send(());
    let _ = task.await;
    taken
}

#[tokio::test]
async fn with_fast_open_a_stream_header_in_the_syn_is_taken_and_answered() {
    assert!(second_header_in_the_syn("127.0.0.96:0", true).await);
}

#[tokio::test]
async fn without_it_the_header_follows_the_handshake() {
    assert!(!second_header_in_the_syn("127.0.0.97:0", false).await);
}
