//! broadcast: for each connection level, every client connects first; then the total
//! send rate ramps step by step while the server broadcasts every message to everyone.
//!
//! Open loop (wrk2 style): each sender follows a fixed schedule and a late send does not
//! delay the next one, so a slow server cannot slow the bench down and hide its own
//! latency. The round trip is measured only by the sender, from the *scheduled* send time
//! carried in the message (coordinated omission corrected), with the actual-send figure
//! beside it. Every other client only counts what it receives, per step.
//!
//! A level ends at saturation: a message not back at its sender within the loss timeout,
//! more dropped connections than allowed, or a step whose mean round trip is too high.
//!
//! The clients hear each other through a broadcast app, or through an XMPP MUC room that
//! they join once connected (`Fanout`; `bench muc`); IRC clients through a channel they
//! join once connected. An IRC server does not send a message back to its sender, so
//! there each message is n − 1 deliveries, and its round trip is measured by the next
//! client (its witness) from the same stamp: all clients share this process's clock.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::{Ctx, LATE_US, Recorder, connect_fleet, excerpt};
use crate::Error;
use crate::flags::BroadcastSettings;
use crate::result::{BroadcastLevel, BroadcastStep, LevelSummary, Saturation, round};
use crate::stamp::{Clock, Stamp};
use crate::transport::{Receiver, Sender, TransportKind};

/// The step index of the barrier probes sent before the ramp; never counted.
const PROBE_STEP: u32 = u32::MAX;

/// How a level's clients come to hear each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fanout {
    /// A broadcast app sends every message to every connected client.
    App,
    /// XMPP clients join one MUC room per level, which reflects every groupchat message.
    Room,
}

impl Fanout {
    /// The scenario's name, for progress and errors.
    fn scenario(self) -> &'static str {
        match self {
            Fanout::App => "broadcast",
            Fanout::Room => "muc",
        }
    }

    /// What the target must be for the sweep to work.
    fn needs(self) -> &'static str {
        match self {
            Fanout::App => "a broadcast app",
            Fanout::Room => "an XMPP server whose MUC rooms reflect every message",
        }
    }
}

pub(crate) async fn run(
    ctx: &Ctx,
    settings: &BroadcastSettings,
    kinds: &[TransportKind],
    fanout: Fanout,
    out: &mut Vec<BroadcastLevel>,
) -> Result<(), Error> {
    for &kind in kinds {
        for &n in &settings.levels {
            let (level, failure) = run_level(ctx, settings, kind, fanout, n).await;
            out.push(level);
            if let Some(e) = failure {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The rates of the ramp, from --start-rate up to --max-rate.
fn rates(settings: &BroadcastSettings) -> Vec<f64> {
    let mut rates = Vec::new();
    let mut r = settings.start_rate;
    while r <= settings.max_rate * (1.0 + 1e-9) && rates.len() < 10_000 {
        rates.push(r);
        r = settings.step.next(r);
    }
    rates
}

/// What the sender and receiver tasks of one level share.
struct Shared {
    clock: Clock,
    n: u32,
    /// Whether a sender hears its own messages; if not, client i's are timed by client i + 1.
    echo: bool,
    rates: Vec<f64>,
    /// When step 0 starts (µs on the run clock); set once the barrier is passed.
    t0_us: AtomicU64,
    step_us: u64,
    loss_timeout_us: u64,
    recorder: Recorder,
    /// Per client: (seq, actual send µs, step) of own messages not yet at their witness,
    /// oldest first.
    outstanding: Vec<Mutex<VecDeque<(u64, u64, usize)>>>,
    /// Per client: deliveries of measured messages it has counted so far (for the drain).
    received: Vec<Delivered>,
    /// Clients that have seen at least one barrier probe.
    probed: AtomicU64,
    dropped: AtomicU64,
    first_drop: Mutex<Option<String>>,
    unexpected: Mutex<Option<String>>,
    /// Senders stop sending; receivers keep counting.
    stop_sending: CancellationToken,
    /// Receivers stop counting.
    stop_receiving: CancellationToken,
    /// Set once the level is being torn down, so closes after that are not "dropped".
    closing: AtomicBool,
}

impl Shared {
    /// Clients that hear each message.
    fn listeners(&self) -> u32 {
        if self.echo { self.n } else { self.n - 1 }
    }

    /// The client that times `sender`'s messages.
    fn witness(&self, sender: u32) -> u32 {
        if self.echo { sender } else { (sender + 1) % self.n }
    }

    fn drop_connection(&self, client: u32, why: String) {
        if self.closing.load(Ordering::Relaxed) {
            return;
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        self.first_drop.lock().get_or_insert_with(|| format!("client {client}: {why}"));
    }

    /// Deliveries counted by all receivers so far.
    fn delivered(&self) -> u64 {
        self.received.iter().map(|d| d.0.load(Ordering::Relaxed)).sum()
    }

    /// Send time and step of the oldest own message still not back, over all clients.
    fn oldest_outstanding(&self) -> Option<(u64, usize)> {
        self.outstanding.iter().filter_map(|q| q.lock().front().map(|&(_, sent, step)| (sent, step))).min()
    }
}

/// One receiver's running total of deliveries, on a cache line of its own. Every receiver
/// counts every message, so one shared counter took a contended atomic add per delivery
/// (~10× a plain store on two cores, worse on more); here each receiver stores its own
/// total and only the drain, every 10 ms, reads them all. 128 bytes: x86 fetches lines
/// in pairs.
#[derive(Default)]
#[repr(align(128))]
struct Delivered(AtomicU64);

/// What one client's sender did per step: (sent, late).
type SendCounts = Vec<(u64, u64)>;

async fn run_level(ctx: &Ctx, s: &BroadcastSettings, kind: TransportKind, fanout: Fanout, n: u32) -> (BroadcastLevel, Option<Error>) {
    let scenario = fanout.scenario();
    let mut level = BroadcastLevel {
        transport: kind,
        connections: n,
        connect: Default::default(),
        steps: Vec::new(),
        saturation: None,
        max_received_per_s_good_mean: None,
        max_sustainable_received_per_s: None,
    };
    ctx.progress.step(format!("{scenario} {kind}: connecting {n}"), n as u64);
    let (mut conns, connect) = match connect_fleet(ctx, kind, n).await {
        Ok(c) => c,
        // Nothing connected at all: the target is wrong, not saturated.
        Err((0, e)) => return (level, Some(e)),
        Err((_, e)) if e.is_cancelled() => return (level, Some(e)),
        Err((done, e)) => {
            level.saturation = Some(Saturation {
                reason: "connect".into(),
                rate: 0.0,
                detail: format!("only {done} of {n} clients could connect: {e}"),
            });
            return (level, None);
        }
    };
    level.connect = connect.summary();
    if !kind.echoes() && n < 2 {
        return (level, Some(Error::usage(format!("{kind} clients do not hear their own messages: a level needs at least 2"))));
    }
    // IRC clients join one fresh channel, XMPP clients one fresh MUC room.
    let joining = if kind.is_irc() || fanout == Fanout::Room {
        ctx.progress.step(format!("{scenario} {kind}: {n} clients joining"), n as u64);
        if kind.is_irc() {
            let channel = super::channel::fresh(&n.to_string());
            Some((super::channel::join_all(ctx, &mut conns, |_| channel.clone()).await, channel))
        } else {
            let room = match super::muc::room(ctx, kind, n) {
                Ok(room) => room,
                Err(e) => return (level, Some(e)),
            };
            Some((super::muc::join_all(ctx, &mut conns, &room).await, room))
        }
    } else {
        None
    };
    match joining {
        None | Some((Ok(()), _)) => {}
        // Not even the first could join: the room or the service is wrong, not saturated.
        Some((Err((0, e)), _)) => return (level, Some(e)),
        Some((Err((_, e)), _)) if e.is_cancelled() => return (level, Some(e)),
        Some((Err((done, e)), place)) => {
            let detail = format!("only {done} of {n} clients could join {place}: {e}");
            level.saturation = Some(Saturation { reason: "join".into(), rate: 0.0, detail });
            return (level, None);
        }
    }
    let rates = rates(s);
    let shared = Arc::new(Shared {
        clock: ctx.clock,
        n,
        echo: kind.echoes(),
        rates: rates.clone(),
        t0_us: AtomicU64::new(0),
        step_us: s.step_us,
        loss_timeout_us: s.loss_timeout_us,
        recorder: Recorder::new(rates.len()),
        outstanding: (0..n).map(|_| Mutex::new(VecDeque::new())).collect(),
        received: (0..n).map(|_| Delivered::default()).collect(),
        probed: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        first_drop: Mutex::new(None),
        unexpected: Mutex::new(None),
        stop_sending: CancellationToken::new(),
        stop_receiving: CancellationToken::new(),
        closing: AtomicBool::new(false),
    });
    let mut senders = Vec::with_capacity(n as usize);
    let mut receivers = Vec::with_capacity(n as usize);
    for (i, conn) in conns.into_iter().enumerate() {
        senders.push(conn.sender);
        receivers.push(tokio::spawn(receive(i as u32, conn.receiver, shared.clone())));
    }

    // Barrier: every client must have received a broadcast before the ramp starts, which
    // proves the app broadcasts and that every subscription is in place.
    ctx.progress.step(format!("{scenario} {kind}: {n} clients subscribing"), n as u64);
    if let Err(e) = barrier(ctx, &mut senders[0], &shared, fanout).await {
        shared.closing.store(true, Ordering::Relaxed);
        shared.stop_receiving.cancel();
        for mut tx in senders {
            tx.close().await;
        }
        return (level, Some(e));
    }

    // Every sender follows one schedule that starts a little after now.
    let t0_us = ctx.clock.now_us() + 20_000;
    shared.t0_us.store(t0_us, Ordering::Relaxed);
    let sender_tasks: Vec<_> =
        senders.into_iter().enumerate().map(|(i, tx)| tokio::spawn(send(i as u32, tx, shared.clone()))).collect();
    let (failure, last_step, ended_us, saturated_step) = watch_steps(ctx, s, kind, fanout, &shared, &mut level).await;

    // Stop sending, then give what is in flight up to the loss timeout to arrive.
    shared.stop_sending.cancel();
    let mut per_sender: Vec<SendCounts> = Vec::with_capacity(n as usize);
    let mut txs = Vec::with_capacity(n as usize);
    for t in sender_tasks {
        if let Ok((counts, tx)) = t.await {
            per_sender.push(counts);
            txs.push(tx);
        }
    }
    let total_sent: u64 = per_sender.iter().flatten().map(|(sent, _)| sent).sum();
    ctx.progress.message(format!("{scenario} {kind} {n} conns: draining"));
    let deadline = ctx.clock.now_us() + s.loss_timeout_us;
    while ctx.clock.now_us() < deadline && !ctx.cancel.is_cancelled() {
        let all_back = shared.outstanding.iter().all(|q| q.lock().is_empty());
        if all_back && shared.delivered() >= total_sent * shared.listeners() as u64 {
            break;
        }
        if shared.dropped.load(Ordering::Relaxed) > 0 && all_back {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    shared.closing.store(true, Ordering::Relaxed);
    shared.stop_receiving.cancel();
    let mut received = vec![0u64; rates.len()];
    for r in receivers {
        if let Ok(counts) = r.await {
            for (k, c) in counts.into_iter().enumerate() {
                received[k] += c;
            }
        }
    }
    for mut tx in txs {
        tx.close().await;
    }

    for (k, step) in level.steps.iter_mut().enumerate().take(last_step + 1) {
        let (sent, late) = per_sender.iter().filter_map(|c| c.get(k)).fold((0, 0), |(s, l), (a, b)| (s + a, l + b));
        let lat = shared.recorder.step(k);
        let step_start = t0_us + k as u64 * s.step_us;
        let us = if k == last_step { ended_us.saturating_sub(step_start).min(s.step_us) } else { s.step_us };
        let secs = (us as f64 / 1e6).max(1e-3);
        step.sent = sent;
        step.late_sends = late;
        step.duration_s = round(secs, 3);
        step.sent_per_s = round(sent as f64 / secs, 1);
        step.received = received[k];
        step.received_per_s = round(received[k] as f64 / secs, 1);
        step.expected = sent * shared.listeners() as u64;
        step.lost = sent.saturating_sub(lat.in_time);
        step.missing = step.expected.saturating_sub(received[k]);
        step.round_trip = lat.corrected.summary();
        step.round_trip_uncorrected = lat.uncorrected.summary();
    }
    let good_mean = s.good_mean_us as f64;
    level.max_received_per_s_good_mean = level
        .steps
        .iter()
        .filter(|st| st.round_trip.count > 0 && st.round_trip.mean_us < good_mean)
        .map(|st| st.received_per_s)
        .reduce(f64::max);
    level.max_sustainable_received_per_s = level
        .steps
        .iter()
        .enumerate()
        .filter(|(k, st)| {
            saturated_step.is_none_or(|sat| *k < sat) && st.lost == 0 && st.missing == 0 && st.round_trip.mean_us <= s.max_mean_us as f64
        })
        .map(|(_, st)| st.received_per_s)
        .reduce(f64::max);
    if failure.is_none()
        && level.steps.iter().all(|st| st.round_trip.count == 0)
        && let Some(text) = shared.unexpected.lock().clone()
    {
        let e = Error::unexpected(format!(
            "{} is not {}: no message came back to its sender; got {text}",
            ctx.target.as_str(),
            fanout.needs()
        ));
        return (level, Some(e));
    }
    (level, failure)
}

/// Client 0 broadcasts probes until every client has received one.
async fn barrier(ctx: &Ctx, sender: &mut Sender, sh: &Shared, fanout: Fanout) -> Result<(), Error> {
    let deadline = ctx.clock.now_us() + ctx.timeout.as_micros() as u64;
    let mut seq = 0;
    loop {
        let now = ctx.clock.now_us();
        let probed = sh.probed.load(Ordering::Relaxed);
        ctx.progress.set(probed);
        if probed >= sh.listeners() as u64 {
            return Ok(());
        }
        ctx.check_cancel()?;
        if let Some(why) = sh.first_drop.lock().clone() {
            return Err(Error::closed(format!("{}: a connection closed before the ramp: {why}", ctx.target.as_str())));
        }
        if now > deadline {
            let got = sh.unexpected.lock().clone().map(|t| format!("; got {t}")).unwrap_or_default();
            return Err(Error::unexpected(format!(
                "only {probed} of {} clients received a broadcast within {:?}; is {} {}?{got}",
                sh.listeners(),
                ctx.timeout,
                ctx.target.as_str(),
                fanout.needs()
            )));
        }
        let probe = Stamp { step: PROBE_STEP, sender: 0, seq, intended_us: now, sent_us: now }.to_text();
        sender.send(&probe).await?;
        seq += 1;
        // Wait up to 100 ms for this probe to reach everyone before sending another.
        for _ in 0..20 {
            if sh.probed.load(Ordering::Relaxed) >= sh.listeners() as u64 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Runs the ramp: one step per rate until saturation, Ctrl-C or --max-rate.
/// Returns the error that stopped it (Ctrl-C), the last step run, when it ended, and the
/// step whose messages saturated the server (it may be earlier than the last step: a
/// message is only known to be lost a loss-timeout after it was sent).
async fn watch_steps(
    ctx: &Ctx,
    s: &BroadcastSettings,
    kind: TransportKind,
    fanout: Fanout,
    sh: &Shared,
    level: &mut BroadcastLevel,
) -> (Option<Error>, usize, u64, Option<usize>) {
    let t0 = sh.t0_us.load(Ordering::Relaxed);
    let steps = sh.rates.len();
    for (k, &rate) in sh.rates.iter().enumerate() {
        let end = t0 + (k as u64 + 1) * s.step_us;
        ctx.progress.step(format!("{} {kind} {} conns @ {rate:.0} msg/s", fanout.scenario(), sh.n), steps as u64);
        ctx.progress.set(k as u64);
        level.steps.push(empty_step(rate));
        let window = ctx.monitor.window();
        let mut saturation: Option<(&str, String, usize)> = None;
        loop {
            let now = ctx.clock.now_us();
            if now >= end {
                break;
            }
            let wait = Duration::from_micros((end - now).min(100_000));
            tokio::select! {
                _ = ctx.cancel.cancelled() => {
                    level.steps[k].resources = ctx.monitor.finish(window);
                    return (Some(Error::cancelled()), k, ctx.clock.now_us(), None);
                }
                _ = tokio::time::sleep(wait) => {}
            }
            let dropped = sh.dropped.load(Ordering::Relaxed);
            if dropped > s.max_dropped {
                let why = sh.first_drop.lock().clone().unwrap_or_default();
                saturation = Some(("dropped", format!("{dropped} connection(s) dropped; first: {why}"), k));
                break;
            }
            let now = ctx.clock.now_us();
            if let Some((sent, step)) = sh.oldest_outstanding()
                && now.saturating_sub(sent) > s.loss_timeout_us
            {
                let age = (now - sent) as f64 / 1e6;
                saturation = Some(("timeout", format!("a message sent at this rate was not back after {age:.1}s"), step));
                break;
            }
        }
        level.steps[k].resources = ctx.monitor.finish(window);
        // The previous step's messages are (nearly) all back by now, so its mean is the
        // reliable one; this step's is checked too, on what has returned so far.
        if saturation.is_none() {
            for j in k.saturating_sub(1)..=k {
                let mean = sh.recorder.step(j).corrected.mean_us();
                if mean > s.max_mean_us as f64 {
                    let detail = format!("mean round trip {:.1}ms above {:.1}ms", mean / 1e3, s.max_mean_us as f64 / 1e3);
                    saturation = Some(("mean", detail, j));
                    break;
                }
            }
        }
        if let Some((reason, detail, step)) = saturation {
            level.saturation = Some(Saturation { reason: reason.into(), rate: round(sh.rates[step], 1), detail });
            return (None, k, ctx.clock.now_us().min(end), Some(step));
        }
    }
    (None, steps.saturating_sub(1), t0 + steps as u64 * s.step_us, None)
}

/// One client's open-loop sender: client `i` of `n` sends at `start + (i + j·n)/rate`, so
/// the clients together send `rate` messages per second, evenly spaced. A send that is
/// late does not move the schedule; the stamp keeps both times.
async fn send(i: u32, mut tx: Sender, sh: Arc<Shared>) -> (SendCounts, Sender) {
    let mut counts: SendCounts = vec![(0, 0); sh.rates.len()];
    let t0 = sh.t0_us.load(Ordering::Relaxed);
    let mut seq = 0u64;
    let mut text = String::with_capacity(64);
    'steps: for (k, &rate) in sh.rates.iter().enumerate() {
        let start = t0 + k as u64 * sh.step_us;
        let end = start + sh.step_us;
        for j in 0u64.. {
            let t = start + ((i as u64 + j * sh.n as u64) as f64 * 1e6 / rate) as u64;
            if t >= end {
                break;
            }
            let at = tokio::time::Instant::from_std(sh.clock.instant(t));
            tokio::select! {
                biased;
                _ = sh.stop_sending.cancelled() => break 'steps,
                _ = tokio::time::sleep_until(at) => {}
            }
            let now = sh.clock.now_us();
            text.clear();
            Stamp { step: k as u32, sender: i, seq, intended_us: t, sent_us: now }.write(&mut text);
            sh.outstanding[i as usize].lock().push_back((seq, now, k));
            let sent = tokio::select! {
                biased;
                _ = sh.stop_sending.cancelled() => break 'steps,
                r = tx.send(&text) => r,
            };
            if let Err(e) = sent {
                sh.drop_connection(i, e.to_string());
                break 'steps;
            }
            counts[k].0 += 1;
            counts[k].1 += u64::from(now.saturating_sub(t) > LATE_US);
            seq += 1;
        }
    }
    (counts, tx)
}

/// One client's receiver: counts every measured message per step; for the messages it
/// witnesses (its own, or without echo its predecessor's) it also records the round trip.
async fn receive(i: u32, mut rx: Receiver, sh: Arc<Shared>) -> Vec<u64> {
    let mut counts = vec![0u64; sh.rates.len()];
    let mut delivered = 0u64;
    let mut probed = false;
    // Made once: a fresh `cancelled()` per message was a measurable share of the
    // bench's CPU at a million messages a second.
    let mut stop = std::pin::pin!(sh.stop_receiving.cancelled());
    loop {
        let msg = tokio::select! {
            biased;
            _ = &mut stop => break,
            m = rx.recv() => m,
        };
        let text = match msg {
            Ok(Some(text)) => text,
            Ok(None) => {
                sh.drop_connection(i, "closed by the server".into());
                break;
            }
            Err(e) => {
                sh.drop_connection(i, e.to_string());
                break;
            }
        };
        let Some(stamp) = Stamp::find(&text) else {
            sh.unexpected.lock().get_or_insert_with(|| excerpt(&text));
            continue;
        };
        if stamp.step == PROBE_STEP {
            if !probed {
                probed = true;
                sh.probed.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        let Some(count) = counts.get_mut(stamp.step as usize) else { continue };
        *count += 1;
        delivered += 1;
        sh.received[i as usize].0.store(delivered, Ordering::Relaxed);
        if stamp.sender < sh.n && sh.witness(stamp.sender) == i {
            let now = sh.clock.now_us();
            let rtt = now.saturating_sub(stamp.sent_us);
            let corrected = now.saturating_sub(stamp.intended_us);
            sh.recorder.record(i, stamp.step, corrected, rtt, rtt <= sh.loss_timeout_us);
            let mut q = sh.outstanding[stamp.sender as usize].lock();
            // Usually the front; a skipped message stays queued until it times out.
            if let Some(pos) = q.iter().position(|&(seq, _, _)| seq == stamp.seq) {
                q.remove(pos);
            }
        }
    }
    counts
}

fn empty_step(rate: f64) -> BroadcastStep {
    BroadcastStep {
        rate: round(rate, 1),
        duration_s: 0.0,
        sent: 0,
        sent_per_s: 0.0,
        received: 0,
        received_per_s: 0.0,
        expected: 0,
        lost: 0,
        missing: 0,
        late_sends: 0,
        round_trip: Default::default(),
        round_trip_uncorrected: Default::default(),
        resources: Default::default(),
    }
}

/// One row per level: the highest sustainable received rate.
pub(crate) fn summarise(levels: &[BroadcastLevel]) -> Vec<LevelSummary> {
    levels
        .iter()
        .map(|l| LevelSummary {
            transport: l.transport,
            connections: l.connections,
            max_sustainable_received_per_s: l.max_sustainable_received_per_s,
            max_received_per_s_good_mean: l.max_received_per_s_good_mean,
            saturated: l.saturation.is_some(),
            bench_cpu_bound: l.steps.iter().any(|s| s.resources.bench_cpu_bound),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::RateStep;

    #[test]
    fn ramp_rates() {
        let s = BroadcastSettings {
            levels: vec![1],
            start_rate: 10.0,
            step: RateStep::Percent(100.0),
            step_us: 1,
            max_rate: 80.0,
            loss_timeout_us: 1,
            max_dropped: 0,
            max_mean_us: 1,
            good_mean_us: 1,
            selftest: false,
        };
        assert_eq!(rates(&s), vec![10.0, 20.0, 40.0, 80.0]);
        let s = BroadcastSettings { step: RateStep::Add(25.0), max_rate: 60.0, ..s };
        assert_eq!(rates(&s), vec![10.0, 35.0, 60.0]);
    }
}
