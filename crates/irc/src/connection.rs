//! One IRC client's connection: lines read under its rates (by
//! back-pressure: the socket is not read until the client may send again),
//! its outbox written as it fills, a `PING` when it has been quiet for
//! `--ping-interval` and the end when it stays quiet for another, and the
//! end of a client not registered within `--irc-registration-timeout`.
//! Every end the server chooses says why in an `ERROR` line.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures_util::future::Either;
use hub::{Drained, Outbox, Payload};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use base::alarm::Timer;
use base::time::Ms;
use wire::irc::{Line, LineError, MAX_LINE, MAX_TAGS, Message};

use crate::Irc;
use crate::client::{Client, Flow};

/// How long the last words (what was queued, then `ERROR`) may take to
/// write.
pub(crate) const LAST_WORDS: Duration = Duration::from_secs(1);

/// Serves one client from `address` until it quits or is closed, holding
/// its `slot`; with `tls` the connection starts with a TLS handshake. Not
/// an `async fn`: over plain TCP the future is [`drive`]'s own, so the
/// task does not also keep the socket, the address and the rest that an
/// outer future would hold beside it.
pub fn run(tcp: TcpStream, address: IpAddr, irc: Arc<Irc>, slot: OwnedSemaphorePermit, tls: bool) -> impl Future<Output = ()> + Send + 'static {
    if tls {
        // Boxed, handshake and all: a TLS stream's state is large, and
        // inline it would make every plain client's task as big.
        Either::Left(Box::pin(run_tls(tcp, address, irc, slot)))
    } else {
        Either::Right(drive(tcp, address, irc, "tcp", Some(slot)))
    }
}

async fn run_tls(tcp: TcpStream, address: IpAddr, irc: Arc<Irc>, slot: OwnedSemaphorePermit) {
    let Some(acceptor) = irc.tls.clone() else { return };
    let handshake = tokio::time::timeout(irc.context.bounds.header_timeout, acceptor.accept(tcp)).await;
    if let Ok(Ok(stream)) = handshake {
        drive(stream, address, irc, "tls", Some(slot)).await;
    }
}

/// What a client past `--max-connections` gets.
pub async fn refuse(mut tcp: TcpStream, server: String) {
    let line = Line::new(Some(&server), "ERROR").trailing("Closing Link: too many connections; try again later");
    let _ = tcp.write_all(line.as_bytes()).await;
    let _ = tcp.shutdown().await;
}

/// Serves one client over `socket` (`carrier` names it in the metrics),
/// holding its connection's `slot` if it has one. What the client's task
/// keeps while it waits is what an idle client costs, so nothing here is
/// kept twice: the context, the outbox and the bounds are read where the
/// client and `irc` hold them. The socket is not split: the read is a
/// branch of the select below and the write its handlers' (select! drops
/// its branches' futures before a handler runs), so one task drives both
/// halves without the lock and the allocation of a split.
pub(crate) fn drive<S: AsyncRead + AsyncWrite + Unpin + Send>(mut socket: S, address: IpAddr, irc: Arc<Irc>, carrier: &'static str, slot: Option<OwnedSemaphorePermit>) -> impl Future<Output = ()> + Send {
    // An async block, not an async fn: an async fn keeps its arguments twice
    // in its future (as passed, and as moved into its body), which would be
    // a hundred bytes more in every idle client's task.
    // Made before it, so that the block holds only what it uses after.
    let metrics = irc.context.metrics.client("irc", carrier);
    let encrypted = carrier == "tls" || (carrier == "websocket" && irc.settings.https);
    let mut client = Client::new(irc.clone(), Arc::new(Outbox::new(irc.context.bounds.queue_limit)), address, encrypted);
    async move {
        // Boxed: with it inline, the task's cell would be a size class bigger
        // than the 512 bytes it fits in (see the server's test of its size).
        let mut inflow = Box::new(client.irc.settings.inflow.clone());
        // Registered once, not on every turn of the loop as a fresh wait would be.
        let mut shutdown = client.irc.context.shutdown.waiter();
        // Until the client registers, when it connected: its registration's
        // time runs from then, whatever it sends.
        let (mut quiet_since, mut pinged) = (Ms::now(), false);
        let mut paused: Option<Ms> = None;
        // The one timer, for both the end of a pause and the deadline: an
        // idle client's deadline is seconds away, so it waits on the
        // alarms' wheel, in 16 bytes where a tokio `Sleep` took 112.
        let mut timer = Timer::new();
        let mut buffer: Vec<u8> = Vec::new();
        // Inside a line longer than any may be: the rest of it is dropped.
        let mut discarding = false;
        // The client's last line was cut by a write that failed: its last
        // words begin on a line of their own.
        let mut cut_line = false;
        let reason = 'serve: loop {
            // What woke the client, handled once the select is over: inside
            // its handlers, the select's output would be kept across their
            // waits, in every idle client's task.
            let woke = tokio::select! {
                () = std::future::poll_fn(|cx| client.public.outbox.poll_queued(cx)) => Woke::Queued,
                read = socket.read_buf(&mut buffer), if paused.is_none() => Woke::Read(matches!(read, Ok(n) if n > 0)),
                () = {
                    let deadline = next_deadline(&client, pinged, quiet_since);
                    let at = paused.map_or(deadline, |resume| resume.min(deadline));
                    let timer = &mut timer;
                    std::future::poll_fn(move |cx| timer.poll_at(cx, at.instant()))
                } => Woke::Timer,
                () = std::future::poll_fn(|cx| shutdown.poll(cx)) => break Some("Server shutting down".to_owned()),
            };
            match woke {
                Woke::Queued => {
                    // Taken into a batch made only now: one kept across the
                    // select would be in every idle client's task. (The
                    // batch's room, the outbox's queue's, is let go once it
                    // is written: idle clients are many.)
                    let mut batch = Vec::new();
                    let Some(drained) = client.public.outbox.try_drain(&mut batch) else { continue };
                    // Whether the client was closed, in a byte across the
                    // waits (the close itself is read again from the outbox).
                    // With `--write-delay`, what is queued within it goes in
                    // the same write.
                    let gathers = matches!(drained, Drained::Messages) && !client.irc.settings.write_delay.is_zero();
                    let mut closed = matches!(drained, Drained::Closed(_));
                    drop(drained);
                    if gathers {
                        // Boxed: a timer inline would make every idle
                        // client's task a size class bigger.
                        closed = Box::pin(gather(&client.public.outbox, &mut batch, client.irc.settings.write_delay)).await;
                    }
                    let patience = client.irc.context.bounds.ping_interval;
                    if let Err(unwritten) = write(&mut socket, &mut client, &mut batch, &metrics, patience).await {
                        // A write left waiting because the client was
                        // closed (its queue overflowed behind it) says why,
                        // on a line of its own.
                        match client.public.outbox.close_reason() {
                            Some(close) if close.is_slow_consumer() => {
                                cut_line = unwritten.mid_line;
                                metrics.slow_consumer();
                                client.irc.context.metrics.refused("irc", "send_queue");
                                break Some("SendQ exceeded".to_owned());
                            }
                            _ => break None,
                        }
                    }
                    if closed && let Some(close) = client.public.outbox.close_reason() {
                        if close.is_slow_consumer() {
                            metrics.slow_consumer();
                            client.irc.context.metrics.refused("irc", "send_queue");
                            break Some("SendQ exceeded".to_owned());
                        }
                        break Some(close.reason.into_owned());
                    }
                }
                Woke::Read(false) => break None,
                Woke::Read(true) => {
                    // A read that filled the buffer left more behind: the buffer
                    // grows (`read_buf` doubles it). One that did not drained the
                    // socket: once its lines are read, the buffer is let go, so
                    // an idle client holds none.
                    let drained = buffer.len() < buffer.capacity();
                    let mut lines = 0;
                    let mut used = 0;
                    // A CR ends a line as an LF does (no line may hold
                    // either): a bare CR must not reach what a line's
                    // parameters are copied into, another client's lines.
                    while let Some(end) = buffer[used..].iter().position(|&b| b == b'\n' || b == b'\r') {
                        let line = &buffer[used..used + end];
                        used += end + 1;
                        if std::mem::take(&mut discarding) || line.is_empty() {
                            continue;
                        }
                        lines += 1;
                        // Boxed: a command's state (a join through the broker, a
                        // login through the store) is large, and idle clients
                        // are many. One allocation a line.
                        if let Flow::Close(reason) = Box::pin(on_line(&mut client, line)).await {
                            break 'serve Some(reason);
                        }
                    }
                    metrics.received_many(lines, used);
                    if client.registered {
                        (quiet_since, pinged) = (Ms::now(), false);
                    }
                    buffer.drain(..used);
                    if buffer.len() > MAX_TAGS + MAX_LINE {
                        buffer.clear();
                        if !std::mem::replace(&mut discarding, true) {
                            client.too_long();
                        }
                    }
                    if buffer.is_empty() && drained {
                        buffer = Vec::new();
                    }
                    paused = inflow.charge(lines, used).map(Ms::at);
                }
                Woke::Timer => {
                    let now = Ms::now();
                    if paused.is_some_and(|resume| resume <= now) {
                        paused = None;
                    }
                    if now < next_deadline(&client, pinged, quiet_since) {
                        continue;
                    }
                    if !client.registered {
                        client.irc.context.metrics.refused("irc", "registration_timeout");
                        break Some("Registration timed out".to_owned());
                    }
                    if pinged {
                        client.irc.context.metrics.refused("irc", "ping_timeout");
                        break Some(format!("Ping timeout: {}", humantime::format_duration(2 * client.irc.context.bounds.ping_interval)));
                    }
                    pinged = true;
                    client.public.send(Line::new(None, "PING").arg(client.irc.server_name()).end());
                }
            }
        };
        client.end(reason.as_deref().unwrap_or("Connection closed"));
        if let Some(reason) = reason {
            // Boxed: it runs once, and its state would otherwise make every
            // idle client's task as big as its last words.
            let outbox = client.public.outbox.clone();
            Box::pin(finish(socket, client, outbox, cut_line, metrics, reason)).await;
        }
        // Held to the end.
        drop(slot);
    }
}

/// What woke an IRC client's connection.
enum Woke {
    /// Its outbox has something: messages, or its close.
    Queued,
    /// The socket was read: whether it gave bytes (not its end or an error).
    Read(bool),
    /// Its timer fired.
    Timer,
}

/// One line from the client, parsed (the parsed line is kept in the boxed
/// future of its handling, not in the connection's).
async fn on_line(client: &mut Client, line: &[u8]) -> Flow {
    match Message::parse(line) {
        Ok(message) => client.on_line(&message).await,
        Err(LineError::TooLong) => {
            client.too_long();
            Flow::Go
        }
        // Empty lines, and lines that are not commands, are ignored.
        Err(_) => Flow::Go,
    }
}

/// Waits `delay`, then takes what was queued meanwhile: a write delay's
/// gathering; whether the client was closed meanwhile. Pushes meanwhile
/// wake nothing: the outbox wakes its writer only when it was empty and
/// the writer waiting, which it is not while it sleeps here.
async fn gather(outbox: &Outbox, batch: &mut Vec<Payload>, delay: std::time::Duration) -> bool {
    tokio::time::sleep(delay).await;
    matches!(outbox.try_drain(batch), Some(Drained::Closed(_)))
}

/// When the client is next due something: the end of its registration's
/// time, else a `PING` once it has been quiet for `--ping-interval`, else
/// its end once it stays quiet for another. Worked out again where needed,
/// not kept across the wait.
fn next_deadline(client: &Client, pinged: bool, quiet_since: Ms) -> Ms {
    let irc = &client.irc;
    let ping_interval = irc.context.bounds.ping_interval;
    match (client.registered, pinged) {
        (false, _) => quiet_since + irc.settings.registration_timeout,
        (true, false) => quiet_since + ping_interval,
        (true, true) => quiet_since + 2 * ping_interval,
    }
}

/// Writes what was queued (after a line end, if a failed write cut the
/// client's last line: `cut_line`), then why the link closes, and closes it.
async fn finish<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut client: Client,
    outbox: Arc<Outbox>,
    cut_line: bool,
    metrics: base::metrics::ClientMetrics,
    reason: String,
) {
    outbox.close(hub::Close::new(1000, "closing"));
    // A line a failed write cut ends before anything more.
    let mut batch = if cut_line { vec![Payload::new("\r\n")] } else { Vec::new() };
    let _ = outbox.drain(&mut batch).await;
    batch.push(Payload::new(Line::new(None, "ERROR").trailing(&format!("Closing Link: {} ({reason})", client.address()))));
    // A client that is not reading gets its last words only if its socket
    // takes them soon.
    let _ = write(&mut writer, &mut client, &mut batch, &metrics, LAST_WORDS).await;
    let _ = tokio::time::timeout(LAST_WORDS, writer.shutdown()).await;
}

/// A write that did not finish: the socket failed, or it was abandoned.
struct Unwritten {
    /// Some of it was written: the client's last line is cut.
    mid_line: bool,
}

/// Writes what was drained, each room event in the client's form, in one
/// write. A write the socket does not take within `patience`, or still
/// waiting when the client's outbox is closed (it overflowed behind the
/// write), is abandoned: a client that stops reading must not hold its
/// connection forever. Not an `async fn`: the lines are made before the
/// future, which holds only what the write needs.
fn write<'a, W: AsyncWrite + Unpin>(
    writer: &'a mut W,
    client: &'a mut Client,
    batch: &mut Vec<Payload>,
    metrics: &base::metrics::ClientMetrics,
    patience: Duration,
) -> impl Future<Output = Result<(), Unwritten>> + 'a {
    // The lines are copied into one buffer, even a single payload's shared
    // form: holding that form across the write instead makes the idle
    // task's future 24 bytes bigger, out of its allocation class (measured
    // by the server's test of its size), which costs every idle client.
    let mut out = Vec::new();
    let mut count = 0;
    for payload in batch.drain(..) {
        if let Some(lines) = client.render(&payload) {
            out.extend_from_slice(&lines);
            count += 1;
        }
    }
    if !out.is_empty() {
        metrics.sent(count, out.len());
    }
    let outbox = &client.public.outbox;
    // Most writes the socket takes at once: tried here, before the future,
    // so that the future holds no state of that try. (Tried without the
    // task's waker: one the socket does not take whole is tried again, at
    // once, by `write_rest` with it.) One that must wait is boxed with
    // what it waits on: inline, its state would be in the task's while it
    // writes.
    let mut written = 0;
    let first = write_some(&mut *writer, &mut std::task::Context::from_waker(std::task::Waker::noop()), &out, &mut written);
    // In milliseconds: 8 bytes less of the future.
    let patience = u32::try_from(patience.as_millis()).unwrap_or(u32::MAX);
    async move {
        if first? {
            return Ok(());
        }
        Box::pin(write_rest(writer, outbox, &out, written, Duration::from_millis(patience.into()))).await
    }
}

/// Writes `out` from `written` on until it is all written (`Ok(true)`) or
/// the socket takes no more for now (`Ok(false)`).
fn write_some<W: AsyncWrite + Unpin>(writer: &mut W, cx: &mut std::task::Context<'_>, out: &[u8], written: &mut usize) -> Result<bool, Unwritten> {
    while *written < out.len() {
        match Pin::new(&mut *writer).poll_write(cx, &out[*written..]) {
            Poll::Ready(Ok(n)) if n > 0 => *written += n,
            Poll::Ready(_) => return Err(Unwritten { mid_line: false }),
            Poll::Pending => return Ok(false),
        }
    }
    Ok(true)
}

/// The rest of a write that waits: abandoned after `patience`, or once
/// the client's `outbox` is closed.
async fn write_rest<W: AsyncWrite + Unpin>(writer: &mut W, outbox: &Outbox, out: &[u8], mut written: usize, patience: Duration) -> Result<(), Unwritten> {
    let (until, mut timer) = (Ms::now() + patience, Timer::new());
    std::future::poll_fn(|cx| {
        if write_some(&mut *writer, cx, out, &mut written)? {
            return Poll::Ready(Ok(()));
        }
        outbox.wake_on_close(cx.waker());
        if outbox.is_closed() || timer.poll_at(cx, until.instant()).is_ready() {
            return Poll::Ready(Err(Unwritten { mid_line: written > 0 && out[written - 1] != b'\n' }));
        }
        Poll::Pending
    })
    .await
}
