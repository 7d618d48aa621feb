//! An upstream that cannot be reached costs one client, not the proxy.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    time::timeout,
};

use crate::support::{Upstream, proxy};

/// Safety net only: each await below completes on its own.
const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn unreachable_upstream_closes_that_client_and_the_proxy_keeps_serving() {
    // A port nobody listens on (until later in the test).
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    drop(listener);
    let proxy = proxy("delay=10ms", addr).await;

    let mut refused = TcpStream::connect(proxy.local_addr()).await.expect("proxy accepts");
    let mut buf = [0; 16];
    let read = timeout(LIMIT, refused.read(&mut buf)).await.expect("the proxy closes the client");
    assert!(matches!(read, Ok(0) | Err(_)), "closed, not data: {read:?}");
    assert_eq!(proxy.stats().snapshot().upstream_failures, 1);

    // The upstream comes up; the same proxy serves the next client.
    let mut upstream = Upstream::on(TcpListener::bind(addr).await.expect("rebind"));
    let mut client = TcpStream::connect(proxy.local_addr()).await.expect("connect again");
    let mut server = timeout(LIMIT, upstream.accept()).await.expect("proxy connects upstream");
    client.write_all(b"still here").await.expect("write");
    let mut got = [0; 10];
    timeout(LIMIT, server.read_exact(&mut got)).await.expect("arrives").expect("read");
    assert_eq!(&got, b"still here");
    let counts = proxy.stats().snapshot();
    assert_eq!((counts.connections, counts.upstream_failures), (2, 1));
}
