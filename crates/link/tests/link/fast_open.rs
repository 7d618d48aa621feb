//! TCP Fast Open through the link: a client's first bytes in its SYN cross
//! with it, one way after the connect instead of a round trip and a way,
//! when the upstream takes them there; when it does not, they cross again
//! after the SYN-ACK, as TCP would send them.

use std::{net::SocketAddr, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
    time::Instant,
};

use crate::support::{Upstream, assert_near, proxy};

const TOLERANCE: f64 = 0.05;
const DELAY: Duration = Duration::from_millis(200);

/// Opens a connection through `proxy` with Fast Open, its first write
/// `hello`, which the upstream answers: when the answer came back, after
/// the connect began. Then `more` follows, once, in order.
async fn first_answer(proxy: &link::Proxy, upstream: &mut Upstream) -> Duration {
    let start = Instant::now();
    let mut client = tfo::connect(proxy.local_addr()).await.expect("connect to the proxy");
    client.write_all(b"hello").await.expect("write");
    let mut server = upstream.accept().await;
    let mut got = [0; 5];
    server.read_exact(&mut got).await.expect("read");
    assert_eq!(&got, b"hello");
    server.write_all(b"hi").await.expect("answer");
    let mut answer = [0; 2];
    client.read_exact(&mut answer).await.expect("read the answer");
    let answered = start.elapsed();
    client.write_all(b"more").await.expect("write");
    let mut got = [0; 4];
    server.read_exact(&mut got).await.expect("read");
    assert_eq!(&got, b"more", "the SYN's bytes once, then the next");
    answered
}

async fn upstream(listener: TcpListener) -> (Upstream, SocketAddr) {
    let upstream = Upstream::on(listener);
    let addr = upstream.addr;
    (upstream, addr)
}

/// One round trip: the SYN with `hello`, the SYN-ACK with the answer.
#[tokio::test]
async fn the_first_bytes_ride_in_the_syn_to_an_upstream_that_takes_them() {
    tfo::host_allows().expect("the host must allow TCP Fast Open");
    // An address of this test's own: cookies are kept per address.
    let (mut upstream, addr) = upstream(tfo::bind("127.0.0.94:0".parse().unwrap(), 16).await.expect("bind")).await;
    let proxy = proxy("delay=200ms", addr).await;
    // The first connections fetch the cookies the kernel does not already
    // hold: the proxy's for the client, then the upstream's for the proxy.
    for _ in 0..3 {
        first_answer(&proxy, &mut upstream).await;
        if proxy.stats().snapshot().fast_opens > 0 {
            break;
        }
    }
    let before = proxy.stats().snapshot();
    assert!(before.fast_opens > 0, "no fast open in three connections");
    let answered = first_answer(&proxy, &mut upstream).await;
    assert_near("the first answer, after a fast open", answered, 2 * DELAY, TOLERANCE);
    let after = proxy.stats().snapshot();
    assert_eq!(after.fast_opens - before.fast_opens, 1);
    let up = after.up.since(&before.up);
    assert_eq!((up.payload_bytes, up.delivered_bytes, up.retransmissions), (9, 9, 0), "the SYN's bytes crossed once");
}

/// Two round trips, as with no fast open: the SYN with `hello`, the
/// SYN-ACK, `hello` again, the answer.
#[tokio::test]
async fn the_first_bytes_cross_again_when_the_upstream_does_not_take_them() {
    tfo::host_allows().expect("the host must allow TCP Fast Open");
    let (mut upstream, addr) = upstream(TcpListener::bind("127.0.0.95:0").await.expect("bind")).await;
    let proxy = proxy("delay=200ms", addr).await;
    for _ in 0..2 {
        let answered = first_answer(&proxy, &mut upstream).await;
        assert_near("the first answer, after the handshake", answered, 4 * DELAY, TOLERANCE);
    }
    let counts = proxy.stats().snapshot();
    assert_eq!(counts.fast_opens, 0);
    // `hello` crossed again after the SYN that carried it (the second
    // connection's at least: the first fetched the proxy's cookie if the
    // client had none): a retransmission, not more payload.
    assert_eq!((counts.up.payload_bytes, counts.up.delivered_bytes), (18, 18));
    assert!(counts.up.retransmissions >= 1);
}
