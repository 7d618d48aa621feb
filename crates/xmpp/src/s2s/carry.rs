//! One authenticated stream between servers at work, whichever side
//! opened it: it writes what its domain pair's queue holds (a stream this
//! server opened, or one the other server opened and asked to use both
//! ways, XEP-0288), and reads what the other server sends on it (a stream
//! it opened, or this server's when both ways), each stanza checked
//! against the domain the stream is authenticated for and then delivered
//! here. It ends when the other side ends it, on a stream error, after
//! `--xmpp-s2s-idle-timeout` without traffic either way, or at shutdown.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use wire::xmpp::{Element, StreamEvent};

use super::wire_stream::{Failed, WireStream, as_client};
use super::zero::{self, Continuity, Sending};
use super::{Item, Peer, Undelivered, ns};
use crate::{Jid, Xmpp};

/// What a stream does: the queue it writes, if any, with its domain pair
/// (ours, theirs); whether it reads stanzas; and the domains it is
/// authenticated for, whose stanzas it takes (one, but for a peer
/// configured in advance, `zero`).
pub(super) struct Duties<'a> {
    pub sends: Option<(&'a (String, String), &'a Peer)>,
    pub reads: bool,
    pub theirs: &'a [String],
    /// Stream management is on already (this server asked for it while
    /// negotiating), or may be asked for by the other (this server offered it).
    pub acks: Acks,
    /// Stream management across connections, with a zero-handshake peer.
    pub continuity: Option<&'a Continuity>,
    /// Ends the stream when notified: a newer connection from the same
    /// zero-handshake peer took its place.
    pub superseded: Option<&'a tokio::sync::Notify>,
}

/// Stream management on a stream between servers (XEP-0198 §4): each side
/// counts the stanzas it handled and says how many when asked; this side
/// asks with the batches it writes (see [`ASK_EVERY`]), and keeps what the
/// other has not yet acknowledged, to send it again on a new stream if
/// this one breaks (once; with a zero-handshake peer, the counts go on
/// across connections instead, see [`Continuity`]).
#[derive(Default)]
pub(super) struct Acks {
    /// Enabled on this stream.
    on: bool,
    /// Offered to the other side, which may enable it.
    offered: bool,
    handled: u32,
    acked: u32,
    unacked: VecDeque<Item>,
    /// An answer (`<a/>`) the other asked for and has not had yet, due by
    /// then: it goes at the head of the next batch this way, or alone at
    /// that time (see [`ACK_DELAY`]).
    owed: Option<tokio::time::Instant>,
    /// When this side last asked (`<r/>`) on this stream, if it has.
    asked_at: Option<tokio::time::Instant>,
    /// Stanzas sent since then without asking about them.
    unasked: usize,
    /// When to ask about them if no batch has by then: alone.
    ask_due: Option<tokio::time::Instant>,
    /// Across connections (a zero-handshake peer): the id this side's
    /// stanzas are numbered under …
    epoch: String,
    /// … whether sending waits for the other's opening, to know what it
    /// has of what was sent before …
    resuming: bool,
    /// … whether the other's opening came …
    opened: bool,
    /// … and the number of the other's last stanza on this connection.
    next: u32,
}

/// How often this side asks the other how many stanzas it handled: with
/// the first batch, then with a batch at least this long after the last
/// request, or alone once this long has passed with stanzas sent without
/// asking; and at once when [`ASK_AFTER`] went without. A request and the
/// answer it draws are each ~30 bytes more on the line: at 2400 bit/s,
/// asking with every message cost a round trip of messages about 0.2 s.
/// What a broken stream sends again on a new one is what the other never
/// acknowledged: at most this long's worth, or that many stanzas (some
/// may then arrive twice).
const ASK_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Stanzas sent without asking after which this side asks at once.
const ASK_AFTER: usize = 64;

/// How long the answer to the other server's `<r/>` waits for a batch
/// going its way to ride on, when this stream carries stanzas both ways.
/// An answer alone is a packet of its own, which on a slow link queues in
/// front of the stanza that follows it (at 2400 bit/s, about 0.3 s: an
/// answer is ~50 bytes in its TLS record, plus the packet's headers);
/// the usual answer to a message (its reply, a receipt) follows within
/// milliseconds. Only the other side's resending on a broken stream waits
/// on answers, and it is told before this stream ends.
const ACK_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

impl Acks {
    /// On from the start: this server asked for it, and the other agreed.
    pub fn on() -> Acks {
        Acks { on: true, ..Acks::default() }
    }

    /// Offered: the other may ask for it.
    pub fn offered() -> Acks {
        Acks { offered: true, ..Acks::default() }
    }
}

/// Drives `stream` as `duties` say until it ends; what the senders of
/// anything still queued are told.
pub(super) async fn carry<S: AsyncRead + AsyncWrite + Unpin>(xmpp: &Arc<Xmpp>, stream: &mut WireStream<S>, mut duties: Duties<'_>) -> Undelivered {
    if let Some(continuity) = duties.continuity {
        return carry_on(xmpp, stream, duties, continuity).await;
    }
    let why = drive(xmpp, stream, &mut duties).await;
    // What the other did not acknowledge is sent again, once, on a new
    // stream; what was sent again already goes back to its senders.
    let unacked: Vec<Item> = duties.acks.unacked.drain(..).collect();
    if !unacked.is_empty() {
        if let Some((key, peer)) = duties.sends {
            xmpp.close_peer(key, peer);
        }
        xmpp.send_again(unacked, why);
    }
    why
}

/// `carry` with a zero-handshake peer: stream management goes on from the
/// last connection and on to the next (see [`Continuity`]).
async fn carry_on<S: AsyncRead + AsyncWrite + Unpin>(xmpp: &Arc<Xmpp>, stream: &mut WireStream<S>, mut duties: Duties<'_>, continuity: &Continuity) -> Undelivered {
    let acks = &mut duties.acks;
    let mut stalls = 0;
    if duties.sends.is_some() {
        let Sending { epoch, acked, unacked, stalls: before } = continuity.take_sending();
        (acks.epoch, acks.acked, acks.unacked, stalls) = (epoch, acked, unacked, before);
        acks.resuming = !acks.unacked.is_empty();
    } else {
        acks.epoch = continuity.epoch();
    }
    let acked_before = acks.acked;
    let (opening, next) = continuity.opening(&acks.epoch);
    acks.next = next;
    acks.handled = next;
    let why = match stream.send(&opening).await {
        Ok(()) => drive(xmpp, stream, &mut duties).await,
        Err(_) => Undelivered::Timeout,
    };
    let Some((key, peer)) = duties.sends else { return why };
    let acks = std::mem::take(&mut duties.acks);
    let ended = match acks.opened {
        false => Ended::Unanswered,
        // Progress: the peer acknowledged more, or nothing is left.
        true if acks.acked != acked_before || acks.unacked.is_empty() => Ended::Progressed,
        true => Ended::Stalled,
    };
    let taken = Sending { epoch: acks.epoch, acked: acks.acked, unacked: acks.unacked, stalls };
    carry_over(xmpp, key, peer, continuity, taken, ended, why);
    why
}

/// How a connection to a zero-handshake peer that sent ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// The peer opened its side and acknowledged more, or nothing is left.
    Progressed,
    /// The peer opened its side and acknowledged nothing more.
    Stalled,
    /// The peer never opened its side, or the connection was never made.
    Unanswered,
}

/// After a connection to a zero-handshake peer that sent this side's
/// stanzas ended, or could not be made: what it held unacknowledged
/// (`taken`) and what still waited in the queue (closed here) are kept for
/// the next connection, opened at once when this one progressed. One that
/// did not is a stall: the next waits 1 s, then 2 s, and past [`zero::STALLS`]
/// of them in a row, if the peer answered, the first stanza still
/// unacknowledged (the one the peer keeps ending the connection on, as
/// likely as not) is given up on; if it never answered, everything is
/// (`why`), and counting starts over.
pub(super) fn carry_over(xmpp: &Arc<Xmpp>, key: &(String, String), peer: &Peer, continuity: &Continuity, mut taken: Sending, ended: Ended, why: Undelivered) {
    taken.stalls = if ended == Ended::Progressed { 0 } else { taken.stalls + 1 };
    let mut abandon = false;
    if taken.stalls >= zero::STALLS {
        if ended == Ended::Stalled {
            tracing::warn!("xmpp: {} ended {} connections in a row with nothing more acknowledged: the first stanza it has not acknowledged is given up on", key.1, taken.stalls);
            xmpp.undelivered(taken.unacked.pop_front().into_iter().collect(), Undelivered::Timeout);
        } else {
            abandon = true;
        }
        taken.stalls = 0;
    }
    let stalls = taken.stalls;
    // What was held unacknowledged and what waited in the queue, each
    // bounded by --xmpp-s2s-queue: so much and no more goes on to the next
    // connection, however many come and go.
    let bound = xmpp.federation.as_ref().map_or(usize::MAX, |f| f.settings.queue_bytes.saturating_mul(2));
    // What was queued and never sent goes after what was, on the next
    // connection, in order; the queue closes while the continuity is held,
    // so that a connection opened for a stanza queued next takes it whole.
    let kept = continuity.keep(taken, bound, || {
        xmpp.close_peer(key, peer);
        peer.take()
    });
    xmpp.undelivered(kept.over, Undelivered::Full);
    if abandon || kept.left && xmpp.context.shutdown.has_begun() {
        // The peer never answered, time after time: its senders are told.
        xmpp.undelivered(continuity.abandon().into(), why);
    } else if kept.left {
        xmpp.reopen(key.clone(), Duration::from_secs(stalls.checked_sub(1).map_or(0, |n| 1 << n)));
    }
}

async fn drive<S: AsyncRead + AsyncWrite + Unpin>(xmpp: &Arc<Xmpp>, stream: &mut WireStream<S>, duties: &mut Duties<'_>) -> Undelivered {
    let Some(federation) = xmpp.federation.clone() else { return Undelivered::NotFound };
    let metrics = &xmpp.context.metrics;
    let mut inflow = xmpp.inflow.clone();
    let idle = federation.settings.idle_timeout;
    // Negotiated: from now on a write the other side takes nothing of for
    // as long as it may stay quiet ends the stream.
    stream.stall = Some(idle);
    let mut quiet = Box::pin(tokio::time::sleep(idle));
    loop {
        // What was sent and not yet acknowledged is held, to send again if
        // the stream breaks: at most --xmpp-s2s-queue bytes of it. Past
        // that, sending waits for an answer, asking every ASK_EVERY, and
        // stanzas wait in the queue, which is bounded the same.
        let held = duties.acks.on && duties.acks.unacked.iter().map(|item| item.text().len()).sum::<usize>() >= federation.settings.queue_bytes;
        if held {
            let at = duties.acks.asked_at.unwrap_or_else(tokio::time::Instant::now);
            duties.acks.ask_due.get_or_insert(at + ASK_EVERY);
        }
        let sending = !duties.acks.resuming && !held;
        if let Some((key, peer)) = duties.sends
            && sending
        {
            let batch = peer.take();
            if !batch.is_empty() {
                let mut text = owed_answer(&mut duties.acks);
                let stanzas: String = batch.iter().map(|item| item.text()).collect();
                let bytes = stanzas.len();
                text.push_str(&stanzas);
                if duties.acks.on {
                    text.push_str(&ask(&mut duties.acks, batch.len()));
                }
                if let Err(e) = stream.send(&text).await {
                    tracing::warn!("xmpp: stream to {} broke: {e}", key.1);
                    duties.acks.unacked.extend(batch);
                    return Undelivered::Timeout;
                }
                metrics.s2s_sent(batch.len(), bytes);
                if duties.acks.on {
                    duties.acks.unacked.extend(batch);
                }
                quiet.as_mut().reset(tokio::time::Instant::now() + idle);
                continue;
            }
        }
        let before = stream.read;
        let event = tokio::select! {
            () = ready(if sending { duties.sends } else { None }) => continue,
            () = due(duties.acks.owed) => {
                let answer = owed_answer(&mut duties.acks);
                if stream.send(&answer).await.is_err() {
                    return Undelivered::Timeout;
                }
                continue;
            }
            () = due(duties.acks.ask_due) => {
                duties.acks.ask_due = None;
                if !duties.acks.unacked.is_empty() {
                    let request = format!("{}{}", owed_answer(&mut duties.acks), request(&mut duties.acks));
                    if stream.send(&request).await.is_err() {
                        return Undelivered::Timeout;
                    }
                }
                continue;
            }
            // A stream that carries nothing this way still reads: whitespace, its errors, its end.
            event = stream.event() => event,
            () = notified(duties.superseded) => {
                tracing::info!("xmpp: a connection from {} ended: a newer one from it took its place", duties.theirs.join(", "));
                let answer = owed_answer(&mut duties.acks);
                let _ = stream.send(&format!("{answer}{}", wire::xmpp::STREAM_END)).await;
                return Undelivered::Timeout;
            }
            () = quiet.as_mut() => {
                // Closed first: a stanza queued meanwhile opens a new stream.
                // With a continuity, `carry_on` closes it as it keeps what
                // is unacknowledged, and what is left in it is numbered on
                // the next connection: written here, it would be neither.
                let left = if duties.continuity.is_some() { String::new() } else { close(xmpp, duties.sends) };
                let answer = owed_answer(&mut duties.acks);
                let _ = stream.send(&format!("{answer}{left}{}", wire::xmpp::STREAM_END)).await;
                return Undelivered::Timeout;
            }
            () = xmpp.context.shutdown.wait() => {
                let left = close(xmpp, duties.sends);
                let answer = owed_answer(&mut duties.acks);
                let _ = stream.send(&format!("{answer}{left}")).await;
                stream.fail("system-shutdown", "the server is shutting down").await;
                return Undelivered::NotFound;
            }
        };
        quiet.as_mut().reset(tokio::time::Instant::now() + idle);
        let stanza = match event {
            Ok(StreamEvent::Stanza(stanza)) => stanza,
            Ok(_) => {
                stream.fail("bad-format", "a stream header in the middle of the stream").await;
                return Undelivered::Timeout;
            }
            Err(Failed::Closed(error)) => {
                tracing::info!("xmpp: stream with {} ended{}", duties.theirs.join(", "), error.map(|e| format!(" with {e}")).unwrap_or_default());
                let answer = owed_answer(&mut duties.acks);
                let _ = stream.send(&format!("{answer}{}", wire::xmpp::STREAM_END)).await;
                return Undelivered::Timeout;
            }
            Err(Failed::Protocol(condition, text)) => {
                stream.fail(condition, &text).await;
                return Undelivered::Timeout;
            }
            Err(Failed::Io(_)) => return Undelivered::Timeout,
        };
        let bytes = stream.read - before;
        if stanza.ns == ns::SM
            && let Some(continuity) = duties.continuity
            && matches!(stanza.name.as_str(), "resume" | "enabled")
        {
            if let Err((condition, text)) = opening(stream, duties, continuity, &stanza).await {
                stream.fail(condition, &text).await;
                return Undelivered::Timeout;
            }
            continue;
        }
        if stanza.ns == ns::SM {
            // What is acknowledged is archived (see `Xmpp::take_remote`).
            if stanza.name == "r"
                && duties.acks.on
                && let Some(archive) = &xmpp.archive
            {
                archive.flush().await;
            }
            if stanza.name == "r" && duties.acks.on && duties.sends.is_some() {
                // Answered with the next batch this way, or alone by the deadline.
                duties.acks.owed.get_or_insert(tokio::time::Instant::now() + ACK_DELAY);
                continue;
            }
            if let Err((condition, text)) = acks(stream, &mut duties.acks, &stanza).await {
                stream.fail(condition, &text).await;
                return Undelivered::Timeout;
            }
            continue;
        }
        metrics.s2s_received(1, bytes);
        let checked = if duties.reads { check(xmpp, &stanza, duties.theirs) } else { Err(("unsupported-stanza-type", "this stream carries stanzas the other way only".into())) };
        if let Err((condition, text)) = checked {
            metrics.s2s_failed(condition);
            stream.fail(condition, &text).await;
            return Undelivered::Timeout;
        }
        let fresh = match duties.continuity {
            // Numbered: one that comes again after all is dropped.
            Some(continuity) => {
                duties.acks.next = duties.acks.next.wrapping_add(1);
                let (fresh, handled) = continuity.arrived(duties.acks.next);
                duties.acks.handled = handled;
                fresh
            }
            None => {
                if duties.acks.on {
                    duties.acks.handled = duties.acks.handled.wrapping_add(1);
                }
                true
            }
        };
        if fresh {
            Box::pin(xmpp.take_remote(as_client(stanza))).await;
        }
        // Over its rate, the other server is read again only once under it.
        if let Some(until) = inflow.charge(1, bytes) {
            tokio::time::sleep_until(until).await;
        }
    }
}

/// Handles the other side's opening of a zero-handshake connection (see
/// [`Continuity`]): `<resume/>`, what it has of this side's stanzas, then
/// `<enabled/>`, the id it numbers its own under. Sending this way goes on
/// once it is known what the other has: the rest is sent again first.
async fn opening<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut WireStream<S>, duties: &mut Duties<'_>, continuity: &Continuity, element: &Element) -> Result<(), (&'static str, String)> {
    let acks = &mut duties.acks;
    let sends = duties.sends.is_some() && !acks.opened;
    match element.name.as_str() {
        "resume" if sends => {
            let h: u32 = element.get("h").and_then(|h| h.parse().ok()).ok_or(("bad-format", "<resume/> says how many in 'h'".to_owned()))?;
            if element.get("previd") == Some(acks.epoch.as_str()) {
                let newly = h.wrapping_sub(acks.acked) as usize;
                if newly > acks.unacked.len() {
                    return Err(("undefined-condition", format!("{h} stanzas acknowledged, {} sent", acks.acked as usize + acks.unacked.len())));
                }
                acks.unacked.drain(..newly);
                acks.acked = h;
            } else {
                // Another id: what it counted is not this side's count.
                acks.acked = 0;
            }
            acks.opened = true;
        }
        "resume" => acks.opened = true,
        _ => {
            let epoch = element.get("id").ok_or(("bad-format", "<enabled/> names its id".to_owned()))?;
            continuity.their_epoch(epoch, &mut acks.next);
            acks.handled = acks.next;
            if sends {
                // No <resume/> first: the other counted none of this side's.
                acks.acked = 0;
            }
            acks.opened = true;
        }
    }
    if acks.resuming && acks.opened {
        acks.resuming = false;
        if !acks.unacked.is_empty() {
            let again: String = acks.unacked.iter().map(Item::text).collect();
            let count = acks.unacked.len();
            tracing::info!("xmpp: {count} stanzas sent again to {} on a new connection", duties.theirs.join(", "));
            let text = format!("{again}{}", request(acks));
            stream.send(&text).await.map_err(|e| ("undefined-condition", e.to_string()))?;
        }
    }
    Ok(())
}

/// Handles a stream management element (XEP-0198): the other enabling it,
/// asking how many of its stanzas were handled, or saying how many of
/// this side's it handled; `Err` with the stream error for one that breaks
/// the protocol.
async fn acks<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut WireStream<S>, acks: &mut Acks, element: &Element) -> Result<(), (&'static str, String)> {
    match element.name.as_str() {
        "enable" if acks.offered && !acks.on => {
            acks.on = true;
            stream.send_element(&Element::new("enabled", ns::SM)).await.map_err(|e| ("undefined-condition", e.to_string()))
        }
        "enable" => stream.send_element(&Element::new("failed", ns::SM).child(Element::new("unexpected-request", ns::STANZA_ERRORS))).await.map_err(|e| ("undefined-condition", e.to_string())),
        "r" if acks.on => {
            let answer = Element::new("a", ns::SM).attr("h", &acks.handled.to_string());
            stream.send_element(&answer).await.map_err(|e| ("undefined-condition", e.to_string()))
        }
        "a" if acks.on => {
            let h: u32 = element.get("h").and_then(|h| h.parse().ok()).ok_or(("bad-format", "<a/> says how many in 'h'".to_owned()))?;
            let newly = h.wrapping_sub(acks.acked) as usize;
            if newly > acks.unacked.len() {
                // XEP-0198 §4: more acknowledged than sent.
                return Err(("undefined-condition", format!("{h} stanzas acknowledged, {} sent", acks.acked as usize + acks.unacked.len())));
            }
            acks.unacked.drain(..newly);
            acks.acked = h;
            Ok(())
        }
        // A request before enabling, or a failure: nothing to do.
        _ => Ok(()),
    }
}

/// The answer owed to the other's `<r/>`, if one is, as text; it is no
/// longer owed.
fn owed_answer(acks: &mut Acks) -> String {
    match acks.owed.take() {
        Some(_) => Element::new("a", ns::SM).attr("h", &acks.handled.to_string()).to_xml(ns::SERVER),
        None => String::new(),
    }
}

/// The request (`<r/>`) to write after `sent` more stanzas, if this side
/// asks now (see [`ASK_EVERY`]); otherwise when it will ask is noted.
fn ask(acks: &mut Acks, sent: usize) -> String {
    acks.unasked = acks.unasked.saturating_add(sent);
    match acks.asked_at {
        Some(at) if tokio::time::Instant::now() < at + ASK_EVERY && acks.unasked < ASK_AFTER => {
            acks.ask_due.get_or_insert(at + ASK_EVERY);
            String::new()
        }
        _ => request(acks),
    }
}

/// A request (`<r/>`), asked now.
fn request(acks: &mut Acks) -> String {
    acks.asked_at = Some(tokio::time::Instant::now());
    acks.unasked = 0;
    acks.ask_due = None;
    Element::new("r", ns::SM).to_xml(ns::SERVER)
}

/// Waits until an owed answer (or request) is due; never, when none is.
async fn due(owed: Option<tokio::time::Instant>) {
    match owed {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Waits until `notify`, if there is one, is notified; never, when none is.
async fn notified(notify: Option<&tokio::sync::Notify>) {
    match notify {
        Some(notify) => notify.notified().await,
        None => std::future::pending().await,
    }
}

/// Waits until the queue, if the stream has one, holds something.
async fn ready(sends: Option<(&(String, String), &Peer)>) {
    match sends {
        Some((_, peer)) => peer.ready.notified().await,
        None => std::future::pending().await,
    }
}

/// Closes the stream's queue, if it has one: what is left in it, to send last.
fn close(xmpp: &Xmpp, sends: Option<(&(String, String), &Peer)>) -> String {
    let Some((key, peer)) = sends else { return String::new() };
    xmpp.close_peer(key, peer);
    peer.take().iter().map(|item| item.text()).collect()
}

/// Whether `stanza` may come from a stream authenticated for `domains`
/// (RFC 6120 §8.1.1.2, §8.1.2.2, §13.7.2.1): a stanza, with both
/// addresses, from one of them, to one served here; else the stream error.
fn check(xmpp: &Xmpp, stanza: &Element, domains: &[String]) -> Result<(), (&'static str, String)> {
    if stanza.ns != ns::SERVER || !matches!(stanza.name.as_str(), "message" | "presence" | "iq") {
        return Err(("unsupported-stanza-type", format!("{{{}}}{} is not a stanza", stanza.ns, stanza.name)));
    }
    let (Some(from), Some(to)) = (stanza.get("from"), stanza.get("to")) else {
        return Err(("improper-addressing", "a stanza between servers has both 'from' and 'to'".into()));
    };
    let (Some(from), Some(to)) = (Jid::parse(from), Jid::parse(to)) else {
        return Err(("improper-addressing", "a stanza's address is not a JID".into()));
    };
    if !domains.contains(&from.domain) {
        return Err(("invalid-from", format!("this stream is authenticated for {}, not {}", domains.join(", "), from.domain)));
    }
    if !xmpp.serves(&to.domain) {
        return Err(("host-unknown", format!("{} is not served here", to.domain)));
    }
    Ok(())
}
