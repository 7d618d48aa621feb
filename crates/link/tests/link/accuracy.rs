//! The accuracy proofs: rate and delay measured through the real
//! proxy, within 5 %.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Upstream, assert_near, one_way, pair, proxy};

const TOLERANCE: f64 = 0.05;

/// 2,400 bytes at 19,200 bit/s with no overhead are 19,200 bits: 1 s, in
/// each direction, measured from just before the first byte is written to
/// when the last byte is read at the far end.
#[tokio::test]
async fn rate_2400_bytes_at_19200_bit_take_one_second_each_way() {
    let mut upstream = Upstream::start().await;
    let proxy = proxy("rate=19200bit,overhead=0", upstream.addr).await;
    let (mut client, mut server) = pair(&proxy, &mut upstream).await;
    let data = vec![0x5a; 2400];

    let up = one_way(&mut client, &mut server, &data).await;
    assert_near("2400 B at 19200 bit/s, up", up, Duration::from_secs(1), TOLERANCE);
    let down = one_way(&mut server, &mut client, &data).await;
    assert_near("2400 B at 19200 bit/s, down", down, Duration::from_secs(1), TOLERANCE);

    let counts = proxy.stats().snapshot();
    assert_eq!(counts.up.payload_bytes, 2400);
    assert_eq!(counts.up.wire_bytes, 2400, "overhead 0");
}

/// The two directions are separate lines: both at once take no longer.
#[tokio::test]
async fn directions_are_separate_lines() {
    let mut upstream = Upstream::start().await;
    let proxy = proxy("rate=19200bit,overhead=0", upstream.addr).await;
    let (client, server) = pair(&proxy, &mut upstream).await;
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let data = vec![0xa5; 2400];
    let (mut at_server, mut at_client) = ([0; 2400], [0; 2400]);
    let start = tokio::time::Instant::now();
    let (a, b, c, d) = tokio::join!(
        client_write.write_all(&data),
        server_write.write_all(&data),
        server_read.read_exact(&mut at_server),
        client_read.read_exact(&mut at_client),
    );
    a.and(b).expect("writes");
    c.and(d).expect("reads");
    assert_near("2400 B both ways at once", start.elapsed(), Duration::from_secs(1), TOLERANCE);
}

/// A 500 ms one-way delay adds 500 ms each way, once the connection is up.
/// Setting it up costs a round trip first: the upstream sees the connection
/// when the SYN arrives (0.5 s) and the client's first byte leaves when the
/// SYN-ACK is back (1 s), arriving at 1.5 s.
#[tokio::test]
async fn delay_500ms_adds_500ms_each_way() {
    let delay = Duration::from_millis(500);
    let mut upstream = Upstream::start().await;
    let proxy = proxy("delay=500ms", upstream.addr).await;

    let start = tokio::time::Instant::now();
    let (mut client, mut server) = pair(&proxy, &mut upstream).await;
    assert_near("connect reaches upstream", start.elapsed(), delay, TOLERANCE);
    client.write_all(b"hello").await.expect("write");
    server.read_exact(&mut [0; 5]).await.expect("read");
    assert_near("first byte after connect", start.elapsed(), 3 * delay, TOLERANCE);

    let up = one_way(&mut client, &mut server, b"ping").await;
    assert_near("500ms delay, up", up, delay, TOLERANCE);
    let down = one_way(&mut server, &mut client, b"pong").await;
    assert_near("500ms delay, down", down, delay, TOLERANCE);
}

/// Without shaping options bytes pass as they come.
#[tokio::test]
async fn no_shaping_forwards_unchanged() {
    let mut upstream = Upstream::start().await;
    let proxy = proxy("", upstream.addr).await;
    let (mut client, mut server) = pair(&proxy, &mut upstream).await;
    for i in 0..100u8 {
        let message = [i; 100];
        let up = one_way(&mut client, &mut server, &message).await;
        let down = one_way(&mut server, &mut client, &message).await;
        // Generous: this only shows nothing waits on a timer.
        assert!(up < Duration::from_millis(100) && down < Duration::from_millis(100));
    }
}
