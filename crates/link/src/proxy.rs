//! The TCP proxy that puts a [`Lane`] in each direction of every connection.
//!
//! Per connection and direction a reader takes what the sender wrote, cuts it
//! into packets of at most `mss` bytes, asks the lane when each arrives, and
//! queues it; a writer sleeps until that time and writes it. Bytes held
//! between the two are bounded (`buffer`): at the bound the reader stops, so
//! the sender is held back by TCP flow control as a real link's finite
//! buffer would hold it back. The connection itself crosses the link too: the
//! upstream is dialled when the SYN would arrive, and the client's first
//! bytes leave only when the SYN-ACK would be back, so set-up costs one round
//! trip as it does over TCP. A client opening with TCP Fast Open (RFC 7413)
//! carries its first bytes in the SYN: the proxy takes them with it, dials
//! the upstream with Fast Open too, and when the upstream takes them there,
//! they arrive with the SYN; when it does not, they cross again after the
//! SYN-ACK and what the upstream answers waits until they arrive.

use std::{
    future::Future,
    io,
    net::{Ipv4Addr, SocketAddr},
    str::FromStr,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{Semaphore, mpsc},
    task::{JoinHandle, JoinSet},
    time::{Instant, sleep, sleep_until, timeout},
};
use tracing::{debug, warn};

use crate::{
    lane::Lane,
    spec::{self, LinkSpec, ParseError, SpecError},
    stats::{DirectionStats, LinkStats},
};

/// Default bound on bytes held per connection and direction: 1 MiB.
pub const DEFAULT_BUFFER: usize = 1 << 20;
/// How long to wait for the upstream to accept before closing the client.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest single read; a read is then cut into packets of at most `mss`.
const READ_CHUNK: usize = 64 * 1024;
/// Connections opened with data in their SYN (TCP Fast Open) that may wait
/// to be accepted.
pub const FAST_OPEN_QUEUE: u16 = 1024;
/// How many times the dial looks for an upstream's handshake to be done.
const HANDSHAKE_TURNS: u32 = 64;

/// A link and how the proxy uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyConfig {
    /// The link in each direction.
    pub link: LinkSpec,
    /// One link shared by all connections (their packets queue on the same
    /// line, first in first out, as on a radio channel) instead of one link
    /// per connection. Default: false.
    pub shared: bool,
    /// Most bytes held inside the proxy per connection and direction (queued
    /// or propagating); reading stops at the bound. Default: 1 MiB.
    pub buffer: usize,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            link: LinkSpec::default(),
            shared: false,
            buffer: DEFAULT_BUFFER,
        }
    }
}

impl FromStr for ProxyConfig {
    type Err = SpecError;

    /// Parses a link list (see [`LinkSpec`]'s `FromStr`) that may also say
    /// `shared` (or `shared=true|false`) and `buffer=<bytes>`.
    fn from_str(s: &str) -> Result<ProxyConfig, SpecError> {
        const KNOWN: &str = "rate, delay, jitter, loss, overhead, mss, seed, shared, buffer";
        let mut config = ProxyConfig::default();
        for (key, value) in spec::settings(s) {
            let bad = |source: ParseError| SpecError::Value {
                key: key.to_owned(),
                value: value.unwrap_or_default().to_owned(),
                source,
            };
            match (key, value) {
                ("shared", None) => config.shared = true,
                ("shared", Some(v)) => config.shared = spec::parse_bool(v).map_err(bad)?,
                ("buffer", Some(v)) => config.buffer = spec::parse_count(v, 1).map_err(bad)?,
                (_, None) => return Err(SpecError::MissingValue(key.to_owned())),
                (_, Some(v)) => {
                    if !config.link.set(key, v)? {
                        let key = key.to_owned();
                        return Err(SpecError::UnknownKey { key, known: KNOWN });
                    }
                }
            }
        }
        Ok(config)
    }
}

impl std::fmt::Display for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let topology = if self.shared {
            "one link shared by all connections"
        } else {
            "one link per connection"
        };
        write!(f, "{}; {topology}", self.link)
    }
}

/// A running proxy started by [`spawn`]. Dropping it stops the proxy and
/// closes its connections.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    stats: Arc<LinkStats>,
    task: JoinHandle<()>,
}

impl Proxy {
    /// Where clients connect.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The proxy's counters, live.
    pub fn stats(&self) -> &Arc<LinkStats> {
        &self.stats
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts a proxy on 127.0.0.1 and a free port in front of `upstream`, on
/// the current tokio runtime.
pub async fn spawn(config: ProxyConfig, upstream: SocketAddr) -> io::Result<Proxy> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    fast_open(&listener);
    let addr = listener.local_addr()?;
    let stats = Arc::new(LinkStats::default());
    let task = tokio::spawn(serve(
        listener,
        config,
        upstream,
        Arc::clone(&stats),
        std::future::pending(),
    ));
    Ok(Proxy { addr, stats, task })
}

/// Lets clients open connections to `listener` with TCP Fast Open, so that
/// the link carries their first bytes in the SYN as a path to a server that
/// takes them would. Where the host does not allow it, the debug log says so.
pub fn fast_open(listener: &TcpListener) {
    if let Err(why) = tfo::listen(listener, FAST_OPEN_QUEUE) {
        debug!(%why, "clients cannot open connections with data in the SYN");
    }
}

/// Accepts clients on `listener` and proxies each to `upstream` until
/// `shutdown` completes; then the connections still open are closed.
pub async fn serve(
    listener: TcpListener,
    config: ProxyConfig,
    upstream: SocketAddr,
    stats: Arc<LinkStats>,
    shutdown: impl Future<Output = ()>,
) {
    let lanes = Lanes::new(&config.link, config.shared);
    let buffer = config.buffer.max(1);
    // Owning the connection tasks here means they end when serving does.
    let mut connections = JoinSet::new();
    let mut index = 0u64;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((client, peer)) => {
                    stats.connection();
                    let (up, down) = lanes.for_connection(index);
                    index += 1;
                    let stats = Arc::clone(&stats);
                    connections.spawn(async move {
                        let link = Connection { up, down, stats, buffer };
                        match link.run(client, upstream).await {
                            Ok(()) => debug!(%peer, "connection closed"),
                            Err(error) => debug!(%peer, %error, "connection aborted"),
                        }
                    });
                }
                // Out of file descriptors and the like: pause rather than spin.
                Err(error) => {
                    warn!(%error, "accept failed");
                    sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
}

/// A lane behind a lock, so a shared link's connections can use it. The lock
/// is only held while the lane computes, never across an `.await`.
type SharedLane = Arc<Mutex<Lane>>;

fn lock(lane: &SharedLane) -> MutexGuard<'_, Lane> {
    // The lane has no invariant a panic elsewhere could break half-way.
    lane.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Where each connection's lanes come from.
enum Lanes {
    Shared { up: SharedLane, down: SharedLane },
    PerConnection(LinkSpec),
}

impl Lanes {
    fn new(spec: &LinkSpec, shared: bool) -> Lanes {
        let lane = |stream| Arc::new(Mutex::new(Lane::new(spec, stream)));
        if shared {
            Lanes::Shared { up: lane(0), down: lane(1) }
        } else {
            Lanes::PerConnection(spec.clone())
        }
    }

    /// The (up, down) lanes of the `index`th connection.
    fn for_connection(&self, index: u64) -> (SharedLane, SharedLane) {
        match self {
            Lanes::Shared { up, down } => (Arc::clone(up), Arc::clone(down)),
            Lanes::PerConnection(spec) => {
                let lane = |stream| Arc::new(Mutex::new(Lane::new(spec, stream)));
                (lane(2 * index), lane(2 * index + 1))
            }
        }
    }
}

/// One client connection's link.
struct Connection {
    /// Client → upstream.
    up: SharedLane,
    /// Upstream → client.
    down: SharedLane,
    stats: Arc<LinkStats>,
    buffer: usize,
}

impl Connection {
    async fn run(self, mut client: TcpStream, upstream: SocketAddr) -> io::Result<()> {
        // A client opening with TCP Fast Open put its first bytes in its SYN
        // (at most a packet's worth ride there; the rest follows the handshake).
        let mss = lock(&self.up).mss();
        let carried = tfo::syn_data(&client).ok().flatten().map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX).min(mss));
        let mut first = vec![0; carried];
        client.read_exact(&mut first).await?;
        // The SYN crosses the link; the upstream sees the connection when it
        // arrives.
        let syn = send(&self.up, &self.stats.up, Instant::now(), carried);
        sleep_until(syn).await;
        let (server, taken) = match timeout(CONNECT_TIMEOUT, dial(upstream, &first)).await {
            Ok(Ok(dialled)) => dialled,
            Ok(Err(error)) => return Err(self.unreachable(upstream, error)),
            Err(_) => {
                let error = io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
                return Err(self.unreachable(upstream, error));
            }
        };
        self.stats.up.delivered(first.len());
        // The SYN-ACK crosses back; the client sends nothing more before it lands.
        let syn_ack = send(&self.down, &self.stats.down, Instant::now(), 0);
        let answer_from = if first.is_empty() || taken {
            if taken {
                self.stats.fast_open();
            }
            syn
        } else {
            // The upstream did not take the SYN's bytes: the client sends them
            // again once the SYN-ACK is back, and the upstream can answer only
            // once they arrive (the proxy already wrote them; what it answers
            // meanwhile waits for then). Handed to the lane when the SYN-ACK
            // lands, not before: a shared line is not held for it meanwhile.
            sleep_until(syn_ack).await;
            let tx = lock(&self.up).send(Instant::now().into_std(), first.len());
            self.stats.up.resent(&tx);
            Instant::from_std(tx.arrival)
        };
        // Each write is one packet released at its time: no Nagle delay.
        client.set_nodelay(true)?;
        server.set_nodelay(true)?;
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let up = pump(client_read, server_write, &self.up, &self.stats.up, self.buffer, syn_ack);
        let down = pump(server_read, client_write, &self.down, &self.stats.down, self.buffer, answer_from);
        // An error either way (a reset, a peer gone) ends both directions.
        tokio::try_join!(up, down).map(|_| ())
    }

    /// Counts and logs a failed dial; dropping the client then closes it.
    fn unreachable(&self, upstream: SocketAddr, error: io::Error) -> io::Error {
        self.stats.upstream_failure();
        warn!(%upstream, %error, "upstream unreachable; closing the client");
        error
    }
}

/// Connects to `upstream`; with the client's SYN bytes `first`, with TCP
/// Fast Open, writing them: the stream, and whether the upstream took them
/// in its SYN (when the handshake cannot be seen done at once, as it is on
/// this host, they are counted as not taken).
async fn dial(upstream: SocketAddr, first: &[u8]) -> io::Result<(TcpStream, bool)> {
    if first.is_empty() {
        return Ok((TcpStream::connect(upstream).await?, false));
    }
    let mut server = tfo::connect(upstream).await?;
    tfo::write_first(&mut server, first).await?;
    // On the loopback the SYN-ACK is handled within the write; a few turns
    // of the scheduler cover a handshake that is not, a little later.
    for _ in 0..HANDSHAKE_TURNS {
        if let Some(taken) = tfo::syn_data_taken(&server)? {
            return Ok((server, taken));
        }
        tokio::task::yield_now().await;
    }
    Ok((server, false))
}

/// Hands `len` bytes to `lane` at `now` and says when they arrive.
fn send(lane: &SharedLane, stats: &DirectionStats, now: Instant, len: usize) -> Instant {
    let tx = lock(lane).send(now.into_std(), len);
    stats.sent(&tx);
    Instant::from_std(tx.arrival)
}

/// Carries one direction: from `reader`, across `lane`, to `writer`, then the
/// end of stream (FIN) after the last byte. Nothing is handed to the lane
/// before `not_before`. At most `buffer` bytes are held at once.
pub(crate) async fn pump<R, W>(
    mut reader: R,
    mut writer: W,
    lane: &SharedLane,
    stats: &DirectionStats,
    buffer: usize,
    not_before: Instant,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let chunk = buffer.clamp(1, READ_CHUNK);
    // One permit per byte held. A read waits for room for one byte, takes
    // all the room there is up to a chunk, and gives back what it did not fill.
    let room = Semaphore::new(buffer.max(1));
    // Unbounded in messages but bounded in bytes by `room`.
    let (queue, mut arrivals) = mpsc::unbounded_channel::<(Instant, Option<Vec<u8>>)>();

    let read = async {
        let mut buf = vec![0; chunk];
        loop {
            room.acquire().await.map_err(io::Error::other)?.forget();
            // Only this loop takes permits, so what is available stays so.
            let more = room.available_permits().min(chunk - 1);
            let more = match room.try_acquire_many(u32::try_from(more).unwrap_or(0)) {
                Ok(permit) => {
                    permit.forget();
                    more
                }
                Err(_) => 0,
            };
            let limit = 1 + more;
            let n = reader.read(&mut buf[..limit]).await?;
            room.add_permits(limit - n);
            let now = Instant::now().max(not_before);
            if n == 0 {
                let fin = send(lane, stats, now, 0);
                // A closed queue means the writer failed; try_join reports it.
                let _ = queue.send((fin, None));
                return Ok(());
            }
            // One lock for the whole read keeps its packets together.
            let packets: Vec<(Instant, Vec<u8>)> = {
                let mut lane = lock(lane);
                let mss = lane.mss();
                buf[..n]
                    .chunks(mss)
                    .map(|packet| {
                        let tx = lane.send(now.into_std(), packet.len());
                        stats.sent(&tx);
                        (Instant::from_std(tx.arrival), packet.to_vec())
                    })
                    .collect()
            };
            for (arrival, packet) in packets {
                if queue.send((arrival, Some(packet))).is_err() {
                    return Ok(());
                }
            }
        }
    };

    let write = async {
        while let Some((arrival, packet)) = arrivals.recv().await {
            sleep_until(arrival).await;
            match packet {
                Some(bytes) => {
                    writer.write_all(&bytes).await?;
                    stats.delivered(bytes.len());
                    room.add_permits(bytes.len());
                }
                None => {
                    writer.shutdown().await?;
                    break;
                }
            }
        }
        Ok(())
    };

    tokio::try_join!(read, write).map(|_| ())
}

#[cfg(test)]
mod tests {
    //! The pump on in-memory pipes and tokio's paused clock: exact times.

    use super::*;
    use tokio::io::{DuplexStream, duplex};

    fn lane(list: &str, stream: u64) -> SharedLane {
        let spec: LinkSpec = list.parse().expect("valid link list");
        Arc::new(Mutex::new(Lane::new(&spec, stream)))
    }

    /// A pump from a fresh `(sender, receiver)` pair, running in a task.
    fn start(lane: SharedLane, stats: Arc<DirectionStats>, buffer: usize) -> (DuplexStream, DuplexStream) {
        let (sender, proxy_in) = duplex(1 << 20);
        let (proxy_out, receiver) = duplex(1 << 20);
        tokio::spawn(async move {
            pump(proxy_in, proxy_out, &lane, &stats, buffer, Instant::now()).await
        });
        (sender, receiver)
    }

    async fn read_exact(receiver: &mut DuplexStream, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        receiver.read_exact(&mut buf).await.expect("bytes arrive");
        buf
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_arrive_at_the_lanes_time_then_the_fin() {
        let stats = Arc::new(DirectionStats::default());
        let (mut sender, mut receiver) =
            start(lane("rate=19200bit,overhead=0,delay=500ms,mss=1200", 0), Arc::clone(&stats), DEFAULT_BUFFER);
        let t0 = Instant::now();
        sender.write_all(&[7; 2400]).await.expect("write");
        sender.shutdown().await.expect("fin");
        // The first packet (1200 B) after its serialisation plus the delay.
        // (Times are whole milliseconds: tokio's timer rounds up to one.)
        assert_eq!(read_exact(&mut receiver, 1200).await, vec![7; 1200]);
        assert_eq!(t0.elapsed(), Duration::from_millis(1000));
        assert_eq!(read_exact(&mut receiver, 1200).await, vec![7; 1200]);
        assert_eq!(t0.elapsed(), Duration::from_millis(1500));
        // The FIN is an empty packet behind the data.
        let mut rest = Vec::new();
        receiver.read_to_end(&mut rest).await.expect("eof");
        assert!(rest.is_empty());
        assert_eq!(t0.elapsed(), Duration::from_millis(1500));
        let counts = stats.snapshot();
        assert_eq!((counts.payload_bytes, counts.packets, counts.delivered_bytes), (2400, 3, 2400));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_lane_queues_two_connections_on_one_line() {
        // 1000 B at 8000 bit/s = 1 s of line.
        let shared = lane("rate=8000bit,overhead=0,mss=1000", 0);
        let stats = Arc::new(DirectionStats::default());
        let (mut a_tx, mut a_rx) = start(Arc::clone(&shared), Arc::clone(&stats), DEFAULT_BUFFER);
        let (mut b_tx, mut b_rx) = start(shared, Arc::clone(&stats), DEFAULT_BUFFER);
        let t0 = Instant::now();
        a_tx.write_all(&[1; 2000]).await.expect("write a");
        b_tx.write_all(&[2; 2000]).await.expect("write b");
        let (a, b) = tokio::join!(
            async {
                read_exact(&mut a_rx, 2000).await;
                t0.elapsed()
            },
            async {
                read_exact(&mut b_rx, 2000).await;
                t0.elapsed()
            },
        );
        // First in, first out: a's two packets, then b's.
        assert_eq!((a, b), (Duration::from_secs(2), Duration::from_secs(4)));
    }

    #[tokio::test(start_paused = true)]
    async fn separate_lanes_do_not_wait_for_each_other() {
        let stats = Arc::new(DirectionStats::default());
        let (mut a_tx, mut a_rx) = start(lane("rate=8000bit,overhead=0", 0), Arc::clone(&stats), DEFAULT_BUFFER);
        let (mut b_tx, mut b_rx) = start(lane("rate=8000bit,overhead=0", 1), Arc::clone(&stats), DEFAULT_BUFFER);
        let t0 = Instant::now();
        a_tx.write_all(&[1; 2000]).await.expect("write a");
        b_tx.write_all(&[2; 2000]).await.expect("write b");
        read_exact(&mut a_rx, 2000).await;
        read_exact(&mut b_rx, 2000).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn the_buffer_bounds_bytes_held_and_holds_the_sender_back() {
        let stats = Arc::new(DirectionStats::default());
        // A 1 s delay and a 10 kB bound: 10 kB go in, the rest waits.
        let (mut sender, mut receiver) =
            start(lane("delay=1s,mss=1000", 0), Arc::clone(&stats), 10_000);
        let t0 = Instant::now();
        let writer = tokio::spawn(async move {
            sender.write_all(&vec![5; 1 << 21]).await.expect("write");
            sender
        });
        // Half a second in, before anything has arrived, the proxy has taken
        // exactly its bound.
        sleep(Duration::from_millis(500)).await;
        assert_eq!(stats.snapshot().payload_bytes, 10_000);
        // Each second delivers one buffer-full and lets the next one in.
        read_exact(&mut receiver, 10_000).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(1));
        read_exact(&mut receiver, 10_000).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(2));
        writer.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_goes_before_not_before() {
        let stats = DirectionStats::default();
        let (mut sender, proxy_in) = duplex(1024);
        let (proxy_out, mut receiver) = duplex(1024);
        let lane = lane("delay=100ms", 0);
        let t0 = Instant::now();
        sender.write_all(b"early").await.expect("write");
        sender.shutdown().await.expect("fin");
        let start = t0 + Duration::from_secs(1);
        pump(proxy_in, proxy_out, &lane, &stats, 1024, start).await.expect("pump");
        let mut got = Vec::new();
        receiver.read_to_end(&mut got).await.expect("read");
        assert_eq!(got, b"early");
        assert_eq!(t0.elapsed(), Duration::from_millis(1100));
    }

    #[test]
    fn proxy_lists_add_shared_and_buffer() {
        let config: ProxyConfig = "rate=2400bit,shared,buffer=4096".parse().expect("valid");
        assert!(config.shared);
        assert_eq!(config.buffer, 4096);
        assert_eq!(config.link.rate.map(|r| r.bps()), Some(2400));
        let config: ProxyConfig = "shared=false".parse().expect("valid");
        assert!(!config.shared);
        let err = "shared=maybe".parse::<ProxyConfig>().expect_err("bad bool");
        assert_eq!(err.to_string(), "invalid value 'maybe' for 'shared': expected true or false");
        let err = "buffer=0".parse::<ProxyConfig>().expect_err("zero buffer");
        assert_eq!(err.to_string(), "invalid value '0' for 'buffer': must be at least 1");
        let err = "speed=1mbit".parse::<ProxyConfig>().expect_err("unknown");
        assert!(err.to_string().contains("shared, buffer"), "{err}");
    }
}
