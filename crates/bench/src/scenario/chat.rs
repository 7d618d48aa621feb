//! chat: `rooms × users` clients join their rooms; once everyone has joined, every user
//! sends `messages` messages every `interval` (open loop, users spread evenly over one
//! interval). The server delivers each message to every member, the sender included, so
//! rooms × users² × messages deliveries are expected. Every receiver measures latency
//! from the scheduled send time in the stamp (one clock: all clients live in this process).
//!
//! Clients join with the chat app's `join` message and wait for its `members` reply;
//! IRC clients join the channel `#<room>` instead, and IRC servers do not send a message
//! back to its sender, so there rooms × users × (users − 1) × messages are expected.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wire::app::{ChatEvent, Join};

use super::{Ctx, LATE_US, Recorder, connect_fleet, excerpt};
use crate::Error;
use crate::flags::ChatSettings;
use crate::result::{ChatResult, round};
use crate::stamp::{Clock, Stamp};
use crate::transport::{Receiver, Sender, TransportKind};

pub(crate) async fn run(
    ctx: &Ctx,
    settings: &ChatSettings,
    kinds: &[TransportKind],
    out: &mut Vec<ChatResult>,
) -> Result<(), Error> {
    let mut index = 0;
    for &kind in kinds {
        for &rooms in &settings.rooms {
            for &users in &settings.users {
                index += 1;
                run_one(ctx, settings, kind, rooms, users, index, out).await?;
            }
        }
    }
    Ok(())
}

struct Shared {
    clock: Clock,
    recorder: Recorder,
    joined: AtomicU64,
    received: AtomicU64,
    /// What a receiver saw that it did not expect (first one only).
    refused: Mutex<Option<Error>>,
    unexpected: Mutex<Option<String>>,
    stop: CancellationToken,
}

async fn run_one(
    ctx: &Ctx,
    s: &ChatSettings,
    kind: TransportKind,
    rooms: u32,
    users: u32,
    index: u32,
    out: &mut Vec<ChatResult>,
) -> Result<(), Error> {
    let n = rooms * users;
    ctx.progress.step(format!("chat {kind} {rooms}×{users}: connecting"), n as u64);
    let (mut conns, connect) = connect_fleet(ctx, kind, n).await.map_err(|(_, e)| e)?;
    // Messages each member hears: every member's, its own too where the room echoes.
    let heard = users as u64 - u64::from(!kind.echoes());
    let per_client = heard * s.messages;
    let shared = Arc::new(Shared {
        clock: ctx.clock,
        recorder: Recorder::new(1),
        joined: AtomicU64::new(if kind.is_irc() { n as u64 } else { 0 }),
        received: AtomicU64::new(0),
        refused: Mutex::new(None),
        unexpected: Mutex::new(None),
        stop: CancellationToken::new(),
    });
    // Room names unique to this run, so leftovers of an earlier run never share a room.
    let room_of = |i: u32| format!("bench-{}-{index}-r{}", std::process::id(), i / users);
    if kind.is_irc() {
        ctx.progress.step(format!("chat {kind} {rooms}×{users}: joining"), n as u64);
        super::channel::join_all(ctx, &mut conns, |i| format!("#{}", room_of(i))).await.map_err(|(_, e)| e)?;
    }
    let mut senders = Vec::with_capacity(n as usize);
    let mut receivers = Vec::with_capacity(n as usize);
    for (i, conn) in conns.into_iter().enumerate() {
        let i = i as u32;
        senders.push(conn.sender);
        let who = format!("u{i} in {}", room_of(i));
        receivers.push(tokio::spawn(receive(i, who, conn.receiver, per_client, shared.clone())));
    }

    if !kind.is_irc() {
        ctx.progress.step(format!("chat {kind} {rooms}×{users}: joining"), n as u64);
        for (i, tx) in senders.iter_mut().enumerate() {
            let join = Join { name: format!("u{i}"), room: room_of(i as u32), since: None };
            // Serialising two strings cannot fail.
            tx.send(&serde_json::to_string(&join).unwrap_or_default()).await?;
        }
    }
    let joined = wait_joined(ctx, &shared, n).await;
    if let Err(e) = joined {
        shared.stop.cancel();
        for mut tx in senders {
            tx.close().await;
        }
        return Err(e);
    }

    // Everyone is in: the open-loop schedule starts a little after now.
    let window = ctx.monitor.window();
    let t0 = ctx.clock.now_us() + 20_000;
    let started = ctx.clock.now_us();
    ctx.progress.step(format!("chat {kind} {rooms}×{users}: {} msgs each", s.messages), per_client * n as u64);
    let sender_tasks: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(i, tx)| {
            let offset = s.interval_us * i as u64 / n as u64;
            tokio::spawn(send(i as u32, tx, t0 + offset, s.interval_us, s.messages, shared.clone()))
        })
        .collect();
    let mut sent = 0;
    let mut late = 0;
    let mut txs = Vec::with_capacity(n as usize);
    let mut stopped = None;
    for t in sender_tasks {
        let progress = async {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.progress.set(shared.received.load(Ordering::Relaxed));
            }
        };
        let joined = tokio::select! {
            j = t => j,
            _ = progress => unreachable!("the progress loop never ends"),
            _ = ctx.cancel.cancelled(), if stopped.is_none() => {
                stopped = Some(Error::cancelled());
                shared.stop.cancel();
                continue;
            }
        };
        if let Ok((s_sent, s_late, tx)) = joined {
            sent += s_sent;
            late += s_late;
            txs.push(tx);
        }
    }
    // Wait for what is in flight, up to --drain after the last send.
    let expected = rooms as u64 * users as u64 * heard * s.messages;
    let deadline = ctx.clock.now_us() + s.drain_us;
    while stopped.is_none() && ctx.clock.now_us() < deadline && shared.received.load(Ordering::Relaxed) < expected {
        ctx.progress.set(shared.received.load(Ordering::Relaxed));
        tokio::select! {
            _ = ctx.cancel.cancelled() => stopped = Some(Error::cancelled()),
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    shared.stop.cancel();
    let mut received = 0;
    for r in receivers {
        if let Ok(count) = r.await {
            received += count;
        }
    }
    let duration_s = (ctx.clock.now_us() - started) as f64 / 1e6;
    let resources = ctx.monitor.finish(window);
    for mut tx in txs {
        tx.close().await;
    }
    let lat = shared.recorder.step(0);
    out.push(ChatResult {
        transport: kind,
        rooms,
        users,
        messages: s.messages,
        joined: shared.joined.load(Ordering::Relaxed),
        connect: connect.summary(),
        sent,
        expected,
        received,
        late_sends: late,
        latency: lat.corrected.summary(),
        latency_uncorrected: lat.uncorrected.summary(),
        duration_s: round(duration_s, 3),
        resources,
    });
    stopped.map_or(Ok(()), Err)
}

/// Waits until every client got its `members` reply, or a refusal, or the timeout.
async fn wait_joined(ctx: &Ctx, sh: &Shared, n: u32) -> Result<(), Error> {
    let deadline = ctx.clock.now_us() + ctx.timeout.as_micros() as u64;
    loop {
        let joined = sh.joined.load(Ordering::Relaxed);
        ctx.progress.set(joined);
        if joined >= n as u64 {
            return Ok(());
        }
        if let Some(e) = sh.refused.lock().take() {
            return Err(e);
        }
        ctx.check_cancel()?;
        if ctx.clock.now_us() > deadline {
            let got = sh.unexpected.lock().clone().map(|t| format!("; got {t}")).unwrap_or_default();
            return Err(Error::unexpected(format!(
                "only {joined} of {n} clients were answered with a members list within {:?}; is {} a chat app?{got}",
                ctx.timeout,
                ctx.target.as_str()
            )));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One user's open-loop sender: `messages` sends at `first + j·interval`.
async fn send(i: u32, mut tx: Sender, first: u64, interval: u64, messages: u64, sh: Arc<Shared>) -> (u64, u64, Sender) {
    let (mut sent, mut late) = (0, 0);
    let mut text = String::with_capacity(80);
    for seq in 0..messages {
        let t = first + seq * interval;
        tokio::select! {
            biased;
            _ = sh.stop.cancelled() => break,
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(sh.clock.instant(t))) => {}
        }
        let now = sh.clock.now_us();
        text.clear();
        text.push_str("{\"message\":\"");
        Stamp { step: 0, sender: i, seq, intended_us: t, sent_us: now }.write(&mut text);
        text.push_str("\"}");
        let r = tokio::select! {
            biased;
            _ = sh.stop.cancelled() => break,
            r = tx.send(&text) => r,
        };
        if r.is_err() {
            break;
        }
        sent += 1;
        late += u64::from(now.saturating_sub(t) > LATE_US);
    }
    (sent, late, tx)
}

/// One user's receiver: waits for its `members` reply, then counts stamped messages and
/// records their latency until it has all it expects or is stopped.
async fn receive(i: u32, who: String, mut rx: Receiver, expected: u64, sh: Arc<Shared>) -> u64 {
    let mut joined = false;
    let mut count = 0;
    while count < expected {
        let msg = tokio::select! {
            biased;
            _ = sh.stop.cancelled() => break,
            m = rx.recv() => m,
        };
        let text = match msg {
            Ok(Some(text)) => text,
            Ok(None) | Err(_) => break,
        };
        // What the room kept from before this client joined: stamped by an
        // earlier run, not part of this one.
        if text.starts_with(wire::app::HISTORY_EVENT_START) {
            continue;
        }
        if let Some(stamp) = Stamp::find(&text) {
            let now = sh.clock.now_us();
            sh.recorder.record(i, 0, now.saturating_sub(stamp.intended_us), now.saturating_sub(stamp.sent_us), true);
            count += 1;
            sh.received.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if !joined {
            match ChatEvent::parse(&text) {
                Ok(ChatEvent::Members { .. }) => {
                    joined = true;
                    sh.joined.fetch_add(1, Ordering::Relaxed);
                }
                Ok(ChatEvent::Error { error }) => {
                    // Quoted as the server sent it, so a reason with spaces reads as one.
                    let error = serde_json::Value::String(error);
                    sh.refused
                        .lock()
                        .get_or_insert_with(|| Error::unexpected(format!("the chat app refused {who}: {error}")));
                }
                _ => {
                    sh.unexpected.lock().get_or_insert_with(|| excerpt(&text));
                }
            }
        }
    }
    count
}
