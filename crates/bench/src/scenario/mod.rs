//! The workloads, each written once against the `transport` module, plus the context
//! they share (target, clock, resource monitor, Ctrl-C, progress).

pub(crate) mod api;
pub(crate) mod broadcast;
pub(crate) mod channel;
pub(crate) mod chat;
pub(crate) mod countdown;
pub(crate) mod federated;
pub(crate) mod idle;
pub(crate) mod link;
pub(crate) mod login;
pub(crate) mod muc;
pub(crate) mod pingpong;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::flags::XmppSettings;
use crate::progress::Progress;
use crate::resources::Monitor;
use crate::stamp::Clock;
use crate::transport::{self, Connection, Receiver, Text, TransportKind};
use crate::{Error, Target};

/// A send that leaves later than this after its scheduled time is counted as late.
/// Tokio timers have 1 ms granularity, so anything below 2 ms is timer noise.
pub(crate) const LATE_US: u64 = 2_000;

pub(crate) struct Ctx {
    /// The server, or its first node.
    pub target: Target,
    /// Every node of the server, the first being `target`.
    pub nodes: Vec<Target>,
    pub clock: Clock,
    pub monitor: Monitor,
    pub cancel: CancellationToken,
    pub progress: Progress,
    /// Longest wait for a connection or an expected reply.
    pub timeout: Duration,
    /// Who XMPP clients are, for scenarios with XMPP flags.
    pub xmpp: Option<XmppSettings>,
    /// The server API's key, for `bench api`.
    pub api_key: Option<String>,
}

impl Ctx {
    /// Opens a connection and returns it with its connect time in µs.
    pub async fn connect(&self, kind: TransportKind) -> Result<(Connection, u64), Error> {
        self.connect_to(&self.target, kind, 0, self.timeout).await
    }

    /// Opens the `i`th client's connection, to node `i` mod the number of nodes.
    pub async fn connect_nth(&self, i: u32, kind: TransportKind) -> Result<(Connection, u64), Error> {
        let node = &self.nodes[i as usize % self.nodes.len()];
        self.connect_to(node, kind, i, self.timeout).await
    }

    /// Opens client `index`'s connection to `target` (e.g. the target through a link)
    /// within `timeout` and returns it with its connect time in µs; Ctrl-C stops the wait.
    pub async fn connect_to(
        &self,
        target: &Target,
        kind: TransportKind,
        index: u32,
        timeout: Duration,
    ) -> Result<(Connection, u64), Error> {
        let t0 = Instant::now();
        let client = transport::Client { index, xmpp: self.xmpp.as_ref() };
        let conn = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Error::cancelled()),
            c = transport::connect(target, kind, client, timeout) => c?,
        };
        Ok((conn, t0.elapsed().as_micros() as u64))
    }

    /// The next message, or a clear error if the server closes, stalls or Ctrl-C is hit.
    pub async fn recv(&self, rx: &mut Receiver, what: &str) -> Result<Text, Error> {
        self.expect(rx.recv(), what).await
    }

    /// What `next` yields, or a clear error if the server closes (`None`), stalls past
    /// the timeout, or Ctrl-C is hit.
    pub async fn expect<T>(&self, next: impl Future<Output = Result<Option<T>, Error>>, what: &str) -> Result<T, Error> {
        tokio::select! {
            _ = self.cancel.cancelled() => Err(Error::cancelled()),
            r = tokio::time::timeout(self.timeout, next) => match r {
                Err(_) => Err(Error::timeout(format!(
                    "no {what} from {} within {:?}", self.target.as_str(), self.timeout
                ))),
                Ok(Ok(Some(next))) => Ok(next),
                Ok(Ok(None)) => Err(Error::closed(format!(
                    "{} closed the connection while waiting for {what}", self.target.as_str()
                ))),
                Ok(Err(e)) => Err(e),
            },
        }
    }

    pub fn check_cancel(&self) -> Result<(), Error> {
        if self.cancel.is_cancelled() { Err(Error::cancelled()) } else { Ok(()) }
    }
}

/// Shortens a peer's reply for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 120;
    if text.len() <= MAX {
        return format!("{text:?}");
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}…", &text[..end])
}

/// Opens `n` connections at most `CONNECT_AT_ONCE` at a time, spread over the nodes
/// (connection i to node i mod N); returns them in order with
/// the distribution of their connect times. The first failure is returned with how many
/// had connected before it.
pub(crate) async fn connect_fleet(
    ctx: &Ctx,
    kind: TransportKind,
    n: u32,
) -> Result<(Vec<transport::Connection>, crate::latency::Latency), (u32, Error)> {
    use futures_util::StreamExt;
    /// Enough parallel handshakes to be quick, few enough not to look like a SYN flood.
    const CONNECT_AT_ONCE: usize = 64;
    let mut slots: Vec<Option<transport::Connection>> = (0..n).map(|_| None).collect();
    let mut connect = crate::latency::Latency::new();
    let mut opened = futures_util::stream::iter(0..n)
        .map(|i| async move { (i, ctx.connect_nth(i, kind).await) })
        .buffer_unordered(CONNECT_AT_ONCE);
    let mut done = 0;
    while let Some((i, result)) = opened.next().await {
        match result {
            Ok((conn, us)) => {
                connect.record(us);
                slots[i as usize] = Some(conn);
                done += 1;
                ctx.progress.set(done as u64);
            }
            Err(e) => return Err((done, e)),
        }
    }
    Ok((slots.into_iter().flatten().collect(), connect))
}

/// Runs `step` on each connection with its index, at most `at_once` at a time, in order of
/// start; the first failure is returned with how many had succeeded before it.
pub(crate) async fn on_each<'c, F, Fut>(conns: &'c mut [Connection], at_once: usize, mut step: F) -> Result<(), (u32, Error)>
where
    F: FnMut(&'c mut Connection, u32) -> Fut,
    Fut: Future<Output = Result<(), Error>> + 'c,
{
    use futures_util::StreamExt;
    let mut waiting = conns.iter_mut().zip(0u32..);
    // Pushed by hand rather than through `buffer_unordered`: its closure over borrowed
    // connections is a future the compiler cannot prove `Send` for every lifetime.
    let mut running = futures_util::stream::FuturesUnordered::new();
    for (conn, i) in waiting.by_ref().take(at_once) {
        running.push(step(conn, i));
    }
    let mut done = 0;
    while let Some(result) = running.next().await {
        result.map_err(|e| (done, e))?;
        done += 1;
        if let Some((conn, i)) = waiting.next() {
            running.push(step(conn, i));
        }
    }
    Ok(())
}

/// Latency figures of one step, merged from every shard.
#[derive(Default)]
pub(crate) struct StepLatency {
    /// From the scheduled send time (coordinated omission corrected).
    pub corrected: crate::latency::Latency,
    /// From the actual send time.
    pub uncorrected: crate::latency::Latency,
    /// Messages back within the loss timeout (all of them where no timeout applies).
    pub in_time: u64,
}

/// Per-step latency histograms, sharded by client so receivers on different runtime
/// threads rarely touch the same lock; the lock is never held across an `.await`.
pub(crate) struct Recorder {
    shards: Vec<parking_lot::Mutex<Vec<StepLatency>>>,
    steps: usize,
}

impl Recorder {
    pub fn new(steps: usize) -> Recorder {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Recorder { shards: (0..cores).map(|_| parking_lot::Mutex::new(Vec::new())).collect(), steps }
    }

    /// Records one message; a step index outside the plan (a peer's garbage) is ignored.
    pub fn record(&self, client: u32, step: u32, corrected_us: u64, uncorrected_us: u64, in_time: bool) -> bool {
        let step = step as usize;
        if step >= self.steps {
            return false;
        }
        let mut shard = self.shards[client as usize % self.shards.len()].lock();
        if shard.len() <= step {
            shard.resize_with(step + 1, StepLatency::default);
        }
        let s = &mut shard[step];
        s.corrected.record(corrected_us);
        s.uncorrected.record(uncorrected_us);
        s.in_time += u64::from(in_time);
        true
    }

    /// The merged figures of one step so far.
    pub fn step(&self, step: usize) -> StepLatency {
        let mut merged = StepLatency::default();
        for shard in &self.shards {
            if let Some(s) = shard.lock().get(step) {
                merged.corrected.merge(&s.corrected);
                merged.uncorrected.merge(&s.uncorrected);
                merged.in_time += s.in_time;
            }
        }
        merged
    }
}
