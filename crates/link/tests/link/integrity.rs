//! Bytes arrive unchanged and in order whatever the link does to them.

use std::hash::{DefaultHasher, Hasher};

use rand::{RngCore, SeedableRng, rngs::StdRng};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use crate::support::proxy;

fn checksum(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// An upstream that echoes every connection and closes when its client has.
async fn echo_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind echo");
    let addr = listener.local_addr().expect("echo address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                tokio::io::copy(&mut read, &mut write).await.expect("echo");
                write.shutdown().await.expect("echo fin");
            });
        }
    });
    addr
}

/// 1 MB of random bytes through jitter and loss, both ways (echoed), then
/// the FIN both ways: what comes back is what went out.
#[tokio::test]
async fn a_megabyte_through_jitter_and_loss_arrives_identical() {
    let proxy = proxy(
        "rate=100mbit,delay=5ms,jitter=4ms,loss=1%,seed=7",
        echo_server().await,
    )
    .await;
    let mut data = vec![0; 1_000_000];
    StdRng::seed_from_u64(1).fill_bytes(&mut data);

    let client = TcpStream::connect(proxy.local_addr()).await.expect("connect");
    let (mut read, mut write) = client.into_split();
    let send = async {
        // Uneven writes, so packets come in many sizes.
        for piece in data.chunks(7_919) {
            write.write_all(piece).await.expect("write");
        }
        write.shutdown().await.expect("fin");
    };
    let mut echoed = Vec::with_capacity(data.len());
    let (_, received) = tokio::join!(send, read.read_to_end(&mut echoed));
    received.expect("read to the echo's FIN");

    assert_eq!(echoed.len(), data.len());
    assert_eq!(checksum(&echoed), checksum(&data));
    assert!(echoed == data);
    let counts = proxy.stats().snapshot();
    eprintln!("1 MB with loss: {counts:?}");
    assert_eq!(counts.up.delivered_bytes, 1_000_000);
    assert_eq!(counts.down.delivered_bytes, 1_000_000);
    assert!(counts.up.retransmissions > 0 && counts.down.retransmissions > 0, "{counts:?}");
}
