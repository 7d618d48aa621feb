//! `bench link` (issue 5): what a constrained link does to each transport, on links
//! this scenario starts in-process in front of the target (an echo app), one per row
//! group, each shared by the client's connections:
//!
//! (a) round trip vs payload size, beside the theoretical minimum;
//! (b) round trip vs one-way delay per rate, the first from cold and the stable one;
//! (c) link utilisation streaming messages back to back;
//! (d) bytes on the wire per connection set-up and per message.
//!
//! Round trips are closed loop and timed on this host from the actual send. Each
//! measured round trip starts on an idle link (everything handed to it delivered, and
//! nothing new for `SETTLE`), so a polling transport's next poll or a previous echo
//! never queues in front of it; byte counts come from the link's own counters.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, Semaphore};

use super::{Ctx, excerpt};
use crate::Error;
use crate::linked::{self, BytesRow, DelayRow, FailedRow, LinkSettings, LinkTable, LinkTables, SizeRow, ThroughputRow};
use crate::result::round;
use crate::target::Target;
use crate::transport::{Connection, Receiver, Text, TransportKind};

/// How long the link must carry nothing new before it counts as idle. Long enough for
/// the client to issue what follows a reply (the next poll) on a busy machine.
const SETTLE: Duration = Duration::from_millis(50);

/// Bytes allowed for headers and framing when sizing timeouts (the SockJS xhr-streaming
/// prelude alone is 2 KiB).
const HEADROOM_BYTES: u64 = 4096;

pub(crate) async fn run(ctx: &Ctx, s: &LinkSettings, kinds: &[TransportKind], out: &mut LinkTables) -> Result<(), Error> {
    for &table in &s.tables {
        for &kind in kinds {
            match table {
                LinkTable::Size => size_table(ctx, s, kind, out).await?,
                LinkTable::Delay => delay_table(ctx, s, kind, out).await?,
                LinkTable::Throughput => throughput_table(ctx, s, kind, out).await?,
                LinkTable::Bytes => bytes_table(ctx, s, kind, out).await?,
            }
        }
    }
    Ok(())
}

/// One link in front of the target, and the target as reached through it.
struct Linked {
    proxy: link::Proxy,
    target: Target,
    rate_bps: u64,
    delay_us: u64,
}

impl Linked {
    async fn start(ctx: &Ctx, s: &LinkSettings, rate_bps: u64, delay_us: u64) -> Result<Linked, Error> {
        let (proxy, target) = linked::insert(s.link.config(rate_bps, delay_us), &ctx.target).await?;
        Ok(Linked { proxy, target, rate_bps, delay_us })
    }

    fn counts(&self) -> link::LinkCounts {
        self.proxy.stats().snapshot()
    }

    /// A generous wait for `bytes` to cross both ways: `--timeout` plus twice the time
    /// the line needs for them and some headers, plus the delays.
    fn allowance(&self, ctx: &Ctx, bytes: u64) -> Duration {
        let line = linked::line_time_us(2.0 * (bytes + HEADROOM_BYTES) as f64, self.rate_bps, 6, self.delay_us);
        ctx.timeout + Duration::from_micros(2 * line)
    }

    /// Opens a connection through the link; returns it with its connect time in µs.
    async fn open(&self, ctx: &Ctx, kind: TransportKind) -> Result<(Connection, u64), Error> {
        ctx.connect_to(&self.target, kind, 0, self.allowance(ctx, 0)).await
    }

    /// Waits until the link is idle and returns its counters then.
    async fn idle(&self, ctx: &Ctx) -> Result<link::LinkCounts, Error> {
        let deadline = Instant::now() + self.allowance(ctx, 0);
        let mut last = self.counts();
        loop {
            tokio::select! {
                _ = ctx.cancel.cancelled() => return Err(Error::cancelled()),
                _ = tokio::time::sleep(SETTLE) => {}
            }
            let now = self.counts();
            let drained = now.up.payload_bytes == now.up.delivered_bytes
                && now.down.payload_bytes == now.down.delivered_bytes;
            if drained && now == last {
                return Ok(now);
            }
            if Instant::now() > deadline {
                return Err(Error::timeout(format!(
                    "the link in front of {} did not go idle within {:?}",
                    ctx.target.as_str(),
                    deadline.elapsed()
                )));
            }
            last = now;
        }
    }

    /// One closed-loop round trip of `text`; its time in µs from the actual send.
    async fn round_trip(&self, ctx: &Ctx, conn: &mut Connection, text: &str) -> Result<u64, Error> {
        let t0 = Instant::now();
        conn.sender.send(text).await?;
        let reply = recv(ctx, &mut conn.receiver, self.allowance(ctx, text.len() as u64)).await?;
        let us = t0.elapsed().as_micros() as u64;
        check_echo(ctx, text, &reply)?;
        Ok(us)
    }
}

/// The next message within `allowance`, or a clear error.
async fn recv(ctx: &Ctx, rx: &mut Receiver, allowance: Duration) -> Result<Text, Error> {
    tokio::select! {
        _ = ctx.cancel.cancelled() => Err(Error::cancelled()),
        r = tokio::time::timeout(allowance, rx.recv()) => match r {
            Err(_) => Err(Error::timeout(format!(
                "no echo from {} through the link within {allowance:?}", ctx.target.as_str()
            ))),
            Ok(Ok(Some(text))) => Ok(text),
            Ok(Ok(None)) => Err(Error::closed(format!(
                "{} closed the connection while waiting for an echo", ctx.target.as_str()
            ))),
            Ok(Err(e)) => Err(e),
        },
    }
}

fn check_echo(ctx: &Ctx, sent: &str, got: &str) -> Result<(), Error> {
    if sent == got {
        return Ok(());
    }
    Err(Error::unexpected(format!(
        "{} is not an echo app: sent {}, got {}",
        ctx.target.as_str(),
        excerpt(sent),
        excerpt(got)
    )))
}

/// A message of exactly `size` bytes that tells `seq` apart from its neighbours: the
/// sequence number's last digits, then words drawn from [`WORDS`] by a generator
/// seeded with `seq`, so the text compresses about as much as prose of the same
/// letters does (permessage-deflate's share in the bytes table), not as a run of
/// one letter would. Lower-case ASCII and spaces, so no transport escapes it.
fn payload(seq: u64, size: u32) -> String {
    let size = size as usize;
    let digits = seq.to_string();
    if digits.len() >= size {
        return digits[digits.len() - size..].to_string();
    }
    let mut s = digits;
    let mut state = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while s.len() < size {
        // xorshift64: deterministic, and plenty for choosing words.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        s.push(' ');
        s.push_str(WORDS[(state >> 59) as usize]);
    }
    s.truncate(size);
    s
}

/// The filler's words: common English ones of one to eight letters.
const WORDS: [&str; 32] = [
    "the", "a", "room", "message", "server", "client", "every", "sends", "reads", "and", "to", "of", "in", "link",
    "slow", "frame", "bytes", "wire", "on", "is", "it", "that", "with", "for", "each", "one", "time", "delay",
    "rate", "lost", "again", "at",
];

/// Min, mean and max of a non-empty list of µs.
fn spread(us: &[u64]) -> (u64, f64, u64) {
    let min = us.iter().copied().min().unwrap_or(0);
    let max = us.iter().copied().max().unwrap_or(0);
    let mean = if us.is_empty() { 0.0 } else { us.iter().sum::<u64>() as f64 / us.len() as f64 };
    (min, round(mean, 1), max)
}

/// Records a row that could not be measured (the table goes on with the next row);
/// Ctrl-C is passed on.
fn failed(out: &mut LinkTables, e: Error, row: FailedRow) -> Result<(), Error> {
    if e.is_cancelled() {
        return Err(e);
    }
    out.failures.push(FailedRow { error: e.to_string(), ..row });
    Ok(())
}

/// A failed row of `table` for `kind`; the error is filled in by `failed`.
fn failure(table: LinkTable, kind: TransportKind, rate_bps: u64, delay_us: u64, payload_bytes: u32) -> FailedRow {
    FailedRow { table, transport: kind, rate_bps, delay_us, payload_bytes, error: String::new() }
}

/// A link at `--rate`/`--delay` and a connection through it that has carried one
/// message, so what the transport opens lazily (SockJS's sending connection) is open.
async fn warm(ctx: &Ctx, s: &LinkSettings, kind: TransportKind) -> Result<(Linked, Connection), Error> {
    let link = Linked::start(ctx, s, s.rate_bps, s.delay_us).await?;
    let (mut conn, _) = link.open(ctx, kind).await?;
    link.round_trip(ctx, &mut conn, &payload(0, 2)).await?;
    Ok((link, conn))
}

/// (a) Round trip vs payload size, on one connection per transport (a fresh one after
/// a row failed).
async fn size_table(ctx: &Ctx, s: &LinkSettings, kind: TransportKind, out: &mut LinkTables) -> Result<(), Error> {
    ctx.progress.step(format!("link: round trip vs size, {kind}"), s.sizes_bytes.len() as u64 * u64::from(s.round_trips));
    let mut open: Option<(Linked, Connection)> = None;
    for &size in &s.sizes_bytes {
        let row = async {
            let (link, conn) = match &mut open {
                Some(open) => open,
                None => open.insert(warm(ctx, s, kind).await?),
            };
            size_row(ctx, s, kind, link, conn, size).await
        };
        match row.await {
            Ok(row) => out.round_trip_vs_size.push(row),
            Err(e) => {
                open = None;
                failed(out, e, failure(LinkTable::Size, kind, s.rate_bps, s.delay_us, size))?;
            }
        }
    }
    if let Some((_, mut conn)) = open {
        conn.sender.close().await;
    }
    Ok(())
}

async fn size_row(
    ctx: &Ctx,
    s: &LinkSettings,
    kind: TransportKind,
    link: &Linked,
    conn: &mut Connection,
    size: u32,
) -> Result<SizeRow, Error> {
    let mut times = Vec::new();
    let (mut up, mut down) = (0, 0);
    for seq in 1..=u64::from(s.round_trips) {
        let before = link.idle(ctx).await?;
        times.push(link.round_trip(ctx, conn, &payload(seq, size)).await?);
        let at_reply = link.counts();
        up += at_reply.up.wire_bytes - before.up.wire_bytes;
        down += at_reply.down.wire_bytes - before.down.wire_bytes;
        ctx.progress.inc(1);
    }
    let n = f64::from(s.round_trips);
    let (min, mean, max) = spread(&times);
    let (up, down) = (round(up as f64 / n, 1), round(down as f64 / n, 1));
    Ok(SizeRow {
        transport: kind,
        rate_bps: s.rate_bps,
        delay_us: s.delay_us,
        payload_bytes: size,
        round_trips: s.round_trips,
        round_trip_min_us: min,
        round_trip_mean_us: mean,
        round_trip_max_us: max,
        min_payload_us: linked::line_time_us(2.0 * f64::from(size), s.rate_bps, 2, s.delay_us),
        wire_up_bytes: up,
        wire_down_bytes: down,
        min_wire_us: linked::line_time_us(up + down, s.rate_bps, 2, s.delay_us),
    })
}

/// (b) Per rate and delay, on a fresh link and connection each: the first round trip
/// from cold (connect included), then the stable round trips.
async fn delay_table(ctx: &Ctx, s: &LinkSettings, kind: TransportKind, out: &mut LinkTables) -> Result<(), Error> {
    let rows = (s.rates_bps.len() * s.delays_us.len()) as u64;
    ctx.progress.step(format!("link: round trip vs delay, {kind}"), rows * (1 + u64::from(s.round_trips)));
    for &rate_bps in &s.rates_bps {
        for &delay_us in &s.delays_us {
            match delay_row(ctx, s, kind, rate_bps, delay_us).await {
                Ok(row) => out.round_trip_vs_delay.push(row),
                Err(e) => failed(out, e, failure(LinkTable::Delay, kind, rate_bps, delay_us, s.payload_bytes))?,
            }
        }
    }
    Ok(())
}

async fn delay_row(ctx: &Ctx, s: &LinkSettings, kind: TransportKind, rate_bps: u64, delay_us: u64) -> Result<DelayRow, Error> {
    let link = Linked::start(ctx, s, rate_bps, delay_us).await?;
    let t0 = Instant::now();
    let (mut conn, connect_us) = link.open(ctx, kind).await?;
    link.round_trip(ctx, &mut conn, &payload(0, s.payload_bytes)).await?;
    let first_round_trip_us = t0.elapsed().as_micros() as u64;
    ctx.progress.inc(1);
    let mut times = Vec::new();
    for seq in 1..=u64::from(s.round_trips) {
        link.idle(ctx).await?;
        times.push(link.round_trip(ctx, &mut conn, &payload(seq, s.payload_bytes)).await?);
        ctx.progress.inc(1);
    }
    conn.sender.close().await;
    let (min, mean, max) = spread(&times);
    Ok(DelayRow {
        transport: kind,
        rate_bps,
        delay_us,
        payload_bytes: s.payload_bytes,
        connect_us,
        first_round_trip_us,
        stable_round_trips: s.round_trips,
        stable_round_trip_min_us: min,
        stable_round_trip_mean_us: mean,
        stable_round_trip_max_us: max,
        min_payload_us: linked::line_time_us(2.0 * f64::from(s.payload_bytes), rate_bps, 2, delay_us),
    })
}

/// (c) Per payload size: messages sent back to back for `stream_us` (at least two),
/// with enough of them in flight to keep the line busy; the echo app sends each back,
/// which paces the sender. Utilisation is taken one way: the payload bits over the time
/// the client's line carried them, from the first send until the last byte left it.
async fn throughput_table(ctx: &Ctx, s: &LinkSettings, kind: TransportKind, out: &mut LinkTables) -> Result<(), Error> {
    ctx.progress.step(format!("link: throughput, {kind}"), s.stream_sizes_bytes.len() as u64);
    let mut open: Option<(Linked, Connection)> = None;
    for &size in &s.stream_sizes_bytes {
        let row = async {
            let (link, conn) = match &mut open {
                Some(open) => open,
                None => open.insert(warm(ctx, s, kind).await?),
            };
            throughput_row(ctx, s, kind, link, conn, size).await
        };
        match row.await {
            Ok(row) => out.throughput.push(row),
            Err(e) => {
                open = None;
                failed(out, e, failure(LinkTable::Throughput, kind, s.rate_bps, s.delay_us, size))?;
            }
        }
        ctx.progress.inc(1);
    }
    if let Some((_, mut conn)) = open {
        conn.sender.close().await;
    }
    Ok(())
}

async fn throughput_row(
    ctx: &Ctx,
    s: &LinkSettings,
    kind: TransportKind,
    link: &Linked,
    conn: &mut Connection,
    size: u32,
) -> Result<ThroughputRow, Error> {
    let before = link.idle(ctx).await?;
    let stream = stream(ctx, link, conn, s, size).await?;
    let after = link.idle(ctx).await?;
    let n = stream.messages as f64;
    let payload_bps = if stream.duration_us == 0 {
        0.0
    } else {
        stream.messages as f64 * f64::from(size) * 8.0 * 1e6 / stream.duration_us as f64
    };
    Ok(ThroughputRow {
        transport: kind,
        rate_bps: s.rate_bps,
        delay_us: s.delay_us,
        payload_bytes: size,
        messages: stream.messages,
        duration_us: stream.duration_us,
        payload_bps: round(payload_bps, 1),
        utilisation_pct: round(payload_bps / s.rate_bps as f64 * 100.0, 1),
        wire_up_bytes: round((after.up.wire_bytes - before.up.wire_bytes) as f64 / n, 1),
        wire_down_bytes: round((after.down.wire_bytes - before.down.wire_bytes) as f64 / n, 1),
    })
}

struct Stream {
    messages: u64,
    /// How long the client's line carried the stream: from the first send (on an idle
    /// link) until the last byte left the line, i.e. its arrival at the server less the
    /// one-way delay.
    duration_us: u64,
}

/// How often the link's delivered-bytes counter is read while a stream runs: the time
/// of the last delivery to the server is known to within this.
const WATCH: Duration = Duration::from_millis(1);

async fn stream(ctx: &Ctx, link: &Linked, conn: &mut Connection, s: &LinkSettings, size: u32) -> Result<Stream, Error> {
    // In flight: as many messages as fill the stream time on the line (at least two), so
    // the line is never idle waiting for an echo. They are written at once and the link
    // packs them into packets of up to the MSS, as TCP does with a full send buffer.
    let size_f = f64::from(size);
    let packets = (size_f / f64::from(s.link.mss_bytes.max(1))).ceil().max(1.0);
    let message_s = (size_f + packets * f64::from(s.link.overhead_bytes)) * 8.0 / link.rate_bps as f64;
    let window = ((s.stream_us as f64 / 1e6 / message_s).ceil() as usize).clamp(2, 10_000);
    let credit = Semaphore::new(window);
    let stop_at = Instant::now() + Duration::from_micros(s.stream_us);
    // How many messages the stream has, once the sender has decided (0 until then: at
    // least two are always sent); `decided` wakes a receiver that already has them all.
    let total = AtomicU64::new(0);
    let decided = Notify::new();
    let allowance = link.allowance(ctx, (window as u64 + 1) * (u64::from(size) + 1024));
    let Connection { sender, receiver } = conn;
    let send = async {
        let mut sent = 0u64;
        let time_up = |sent: u64| sent >= 2 && Instant::now() >= stop_at;
        loop {
            ctx.check_cancel()?;
            if !time_up(sent) {
                credit.acquire().await.map_err(|_| Error::cancelled())?.forget();
            }
            // Checked again after waiting for credit: no message is sent late.
            if time_up(sent) {
                total.store(sent, Ordering::Relaxed);
                decided.notify_one();
                return Ok::<(), Error>(());
            }
            sender.send(&payload(sent, size)).await?;
            sent += 1;
        }
    };
    let receive = async {
        let mut received = 0u64;
        loop {
            if total.load(Ordering::Relaxed) == received && received > 0 {
                return Ok::<u64, Error>(received);
            }
            let text = tokio::select! {
                text = recv(ctx, receiver, allowance) => text?,
                () = decided.notified() => continue,
            };
            check_echo(ctx, &payload(received, size), &text)?;
            received += 1;
            credit.add_permits(1);
        }
    };
    // The echoes pace the sender; the figure is taken one way, at the link: when did the
    // last byte reach the server? Every message has, once its echo is back.
    let start = Instant::now();
    let mut delivered = link.counts().up.delivered_bytes;
    let mut last_delivery = start;
    let both = async { tokio::try_join!(send, receive) };
    tokio::pin!(both);
    let messages = loop {
        tokio::select! {
            r = &mut both => break r?.1,
            () = tokio::time::sleep(WATCH) => {
                let now = link.counts().up.delivered_bytes;
                if now != delivered {
                    delivered = now;
                    last_delivery = Instant::now();
                }
            }
        }
    };
    let line_done = last_delivery.saturating_duration_since(start + Duration::from_micros(link.delay_us));
    Ok(Stream { messages, duration_us: line_done.as_micros() as u64 })
}

/// (d) Bytes on the wire: connection set-up on a fresh link, the first message, then
/// `round_trips` messages, each counted until the link is idle again.
async fn bytes_table(ctx: &Ctx, s: &LinkSettings, kind: TransportKind, out: &mut LinkTables) -> Result<(), Error> {
    ctx.progress.step(format!("link: bytes on the wire, {kind}"), 1 + u64::from(s.round_trips));
    match bytes_row(ctx, s, kind).await {
        Ok(row) => out.wire_bytes.push(row),
        Err(e) => failed(out, e, failure(LinkTable::Bytes, kind, s.rate_bps, s.delay_us, s.payload_bytes))?,
    }
    Ok(())
}

async fn bytes_row(ctx: &Ctx, s: &LinkSettings, kind: TransportKind) -> Result<BytesRow, Error> {
    let link = Linked::start(ctx, s, s.rate_bps, s.delay_us).await?;
    let start = link.counts();
    let (mut conn, _) = link.open(ctx, kind).await?;
    let setup = link.idle(ctx).await?;
    link.round_trip(ctx, &mut conn, &payload(0, s.payload_bytes)).await?;
    let mut before = link.idle(ctx).await?;
    let first = (before.up.since(&setup.up), before.down.since(&setup.down));
    ctx.progress.inc(1);
    let (mut up, mut down) = (link::DirectionCounts::default(), link::DirectionCounts::default());
    for seq in 1..=u64::from(s.round_trips) {
        link.round_trip(ctx, &mut conn, &payload(seq, s.payload_bytes)).await?;
        let after = link.idle(ctx).await?;
        add(&mut up, &after.up.since(&before.up));
        add(&mut down, &after.down.since(&before.down));
        before = after;
        ctx.progress.inc(1);
    }
    conn.sender.close().await;
    let n = f64::from(s.round_trips);
    let per = |x: u64| round(x as f64 / n, 1);
    let (setup_up, setup_down) = (setup.up.since(&start.up), setup.down.since(&start.down));
    Ok(BytesRow {
        transport: kind,
        rate_bps: s.rate_bps,
        delay_us: s.delay_us,
        payload_bytes: s.payload_bytes,
        setup_wire_up_bytes: setup_up.wire_bytes,
        setup_wire_down_bytes: setup_down.wire_bytes,
        setup_packets_up: setup_up.packets,
        setup_packets_down: setup_down.packets,
        first_message_wire_up_bytes: first.0.wire_bytes,
        first_message_wire_down_bytes: first.1.wire_bytes,
        messages: s.round_trips,
        message_wire_up_bytes: per(up.wire_bytes),
        message_wire_down_bytes: per(down.wire_bytes),
        message_packets_up: per(up.packets),
        message_packets_down: per(down.packets),
        message_overhead_bytes: round(per(up.wire_bytes) + per(down.wire_bytes) - 2.0 * f64::from(s.payload_bytes), 1),
    })
}

fn add(sum: &mut link::DirectionCounts, d: &link::DirectionCounts) {
    sum.payload_bytes += d.payload_bytes;
    sum.packets += d.packets;
    sum.wire_bytes += d.wire_bytes;
    sum.retransmissions += d.retransmissions;
    sum.delivered_bytes += d.delivered_bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_exact_size_and_differ() {
        assert_eq!(payload(7, 2), "7 ");
        assert_eq!(payload(123, 2), "23");
        assert_eq!(payload(5, 10).len(), 10);
        assert!(payload(5, 10).starts_with("5 "), "{:?}", payload(5, 10));
        assert!(payload(3, 1000).bytes().all(|b| b == b' ' || b.is_ascii_alphanumeric()));
        assert_eq!(payload(9, 300), payload(9, 300), "the same for the same message");
        assert_eq!(payload(0, 10240).len(), 10240);
        assert_ne!(payload(1, 100), payload(2, 100));
    }

    #[test]
    fn spreads() {
        assert_eq!(spread(&[3, 1, 2]), (1, 2.0, 3));
    }
}
