//! `--shared`: all connections queue on one line; otherwise each has its own.

use std::time::Duration;

use tokio::{io::AsyncReadExt, io::AsyncWriteExt, net::TcpStream, time::Instant};


use crate::support::{Upstream, pair, proxy};

/// 5,000 bytes at 80 kbit/s with no overhead: 0.5 s of line.
const LINK: &str = "rate=80kbit,overhead=0";
const BYTES: usize = 5_000;

/// Time for `n` connections through one proxy to each send `BYTES` at once,
/// until the last has arrived.
async fn transfer(link: &str, n: usize) -> Duration {
    let mut upstream = Upstream::start().await;
    let proxy = proxy(link, upstream.addr).await;
    let mut pairs: Vec<(TcpStream, TcpStream)> = Vec::new();
    for _ in 0..n {
        pairs.push(pair(&proxy, &mut upstream).await);
    }
    let start = Instant::now();
    let mut transfers = tokio::task::JoinSet::new();
    for (mut client, mut server) in pairs {
        transfers.spawn(async move {
            let data = vec![1; BYTES];
            let mut got = vec![0; BYTES];
            let (w, r) = tokio::join!(client.write_all(&data), server.read_exact(&mut got));
            w.and(r).expect("transfer");
        });
    }
    while let Some(done) = transfers.join_next().await {
        done.expect("transfer task");
    }
    let elapsed = start.elapsed();
    assert_eq!(proxy.stats().snapshot().connections, n as u64);
    elapsed
}

/// Two connections on a shared link take about twice as long as one; on
/// per-connection links about as long as one.
#[tokio::test]
async fn shared_link_is_one_line_for_all_connections() {
    let single = transfer(LINK, 1).await;
    let separate = transfer(LINK, 2).await;
    let shared = transfer(&format!("{LINK},shared"), 2).await;
    let ratio = |d: Duration| d.as_secs_f64() / single.as_secs_f64();
    eprintln!(
        "one connection {single:?}; two on separate links {separate:?} ({:.2}×); two on a shared link {shared:?} ({:.2}×)",
        ratio(separate),
        ratio(shared)
    );
    assert!(ratio(shared) >= 1.6, "shared: {shared:?} vs single {single:?}");
    assert!(ratio(separate) <= 1.3, "separate: {separate:?} vs single {single:?}");
}
