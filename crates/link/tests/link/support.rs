//! Servers and measurements the tests share.

use std::{net::SocketAddr, time::Duration};

use link::{Proxy, ProxyConfig};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::mpsc,
    time::Instant,
};

/// A server on port 0 that hands each accepted connection to the test, so
/// the test holds both ends and times one direction on one clock.
pub struct Upstream {
    pub addr: SocketAddr,
    accepted: mpsc::UnboundedReceiver<TcpStream>,
}

impl Upstream {
    pub async fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind upstream");
        Upstream::on(listener)
    }

    pub fn on(listener: TcpListener) -> Upstream {
        let addr = listener.local_addr().expect("upstream address");
        let (tx, accepted) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                stream.set_nodelay(true).expect("nodelay");
                if tx.send(stream).is_err() {
                    break;
                }
            }
        });
        Upstream { addr, accepted }
    }

    /// The next connection the proxy opened to us.
    pub async fn accept(&mut self) -> TcpStream {
        self.accepted.recv().await.expect("the proxy connects upstream")
    }
}

/// A proxy with the link list `link` in front of `upstream`.
pub async fn proxy(link: &str, upstream: SocketAddr) -> Proxy {
    let config: ProxyConfig = link.parse().expect("valid link list");
    link::spawn(config, upstream).await.expect("proxy starts")
}

/// A client through `proxy` and the upstream's end of the same connection.
pub async fn pair(proxy: &Proxy, upstream: &mut Upstream) -> (TcpStream, TcpStream) {
    let client = TcpStream::connect(proxy.local_addr()).await.expect("connect to proxy");
    client.set_nodelay(true).expect("nodelay");
    let server = upstream.accept().await;
    (client, server)
}

/// Time from just before the first of `data` is written at `from` to when
/// its last byte has been read at `to`.
pub async fn one_way(from: &mut TcpStream, to: &mut TcpStream, data: &[u8]) -> Duration {
    let start = Instant::now();
    let mut got = vec![0; data.len()];
    let (written, read) = tokio::join!(from.write_all(data), async {
        to.read_exact(&mut got).await.map(|_| Instant::now())
    });
    written.expect("write");
    let end = read.expect("read");
    assert!(got == data, "bytes changed on the way");
    end - start
}

/// Asserts `actual` is within `tolerance` (a fraction) of `expected`, and
/// prints it so a run with `--nocapture` shows what was measured.
pub fn assert_near(what: &str, actual: Duration, expected: Duration, tolerance: f64) {
    let error = (actual.as_secs_f64() - expected.as_secs_f64()) / expected.as_secs_f64();
    eprintln!("{what}: measured {actual:?}, expected {expected:?} ({:+.2} %)", error * 100.0);
    assert!(
        error.abs() <= tolerance,
        "{what}: {actual:?} is not within {} % of {expected:?}",
        tolerance * 100.0
    );
}
