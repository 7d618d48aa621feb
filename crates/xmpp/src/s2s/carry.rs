//! One authenticated stream between servers at work, whichever side
//! opened it: it writes what its domain pair's queue holds (a stream this
//! server opened, or one the other server opened and asked to use both
//! ways, XEP-0288), and reads what the other server sends on it (a stream
//! it opened, or this server's when both ways), each stanza checked
//! against the domain the stream is authenticated for and then delivered
//! here. It ends when the other side ends it, on a stream error, after
//! `--xmpp-s2s-idle-timeout` without traffic either way, or at shutdown.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use wire::xmpp::{Element, StreamEvent};

use super::wire_stream::{Failed, WireStream, as_client};
use super::{Peer, Undelivered, ns};
use crate::{Jid, Xmpp};

/// What a stream does: the queue it writes, if any, with its domain pair
/// (ours, theirs); whether it reads stanzas; and the domain it is
/// authenticated for, whose stanzas it takes.
pub(super) struct Duties<'a> {
    pub sends: Option<(&'a (String, String), &'a Peer)>,
    pub reads: bool,
    pub theirs: &'a str,
}

/// Drives `stream` as `duties` say until it ends; what the senders of
/// anything still queued are told.
pub(super) async fn carry<S: AsyncRead + AsyncWrite + Unpin>(xmpp: &Arc<Xmpp>, stream: &mut WireStream<S>, duties: Duties<'_>) -> Undelivered {
    let Some(federation) = xmpp.federation.clone() else { return Undelivered::NotFound };
    let metrics = &xmpp.context.metrics;
    let mut inflow = xmpp.inflow.clone();
    let idle = federation.settings.idle_timeout;
    let mut quiet = Box::pin(tokio::time::sleep(idle));
    loop {
        if let Some((key, peer)) = duties.sends {
            let batch = peer.take();
            if !batch.is_empty() {
                let text: String = batch.iter().map(|item| item.text()).collect();
                if let Err(e) = stream.send(&text).await {
                    tracing::warn!("xmpp: stream to {} broke: {e}", key.1);
                    xmpp.undelivered(batch, Undelivered::Timeout);
                    return Undelivered::Timeout;
                }
                metrics.s2s_sent(batch.len(), text.len());
                quiet.as_mut().reset(tokio::time::Instant::now() + idle);
                continue;
            }
        }
        let before = stream.read;
        let event = tokio::select! {
            () = ready(duties.sends) => continue,
            // A stream that carries nothing this way still reads: whitespace, its errors, its end.
            event = stream.event() => event,
            () = quiet.as_mut() => {
                // Closed first: a stanza queued meanwhile opens a new stream.
                let left = close(xmpp, duties.sends);
                let _ = stream.send(&format!("{left}{}", wire::xmpp::STREAM_END)).await;
                return Undelivered::Timeout;
            }
            () = xmpp.context.shutdown.wait() => {
                let left = close(xmpp, duties.sends);
                let _ = stream.send(&left).await;
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
                tracing::info!("xmpp: stream with {} ended{}", duties.theirs, error.map(|e| format!(" with {e}")).unwrap_or_default());
                let _ = stream.send(wire::xmpp::STREAM_END).await;
                return Undelivered::Timeout;
            }
            Err(Failed::Protocol(condition, text)) => {
                stream.fail(condition, &text).await;
                return Undelivered::Timeout;
            }
            Err(Failed::Io(_)) => return Undelivered::Timeout,
        };
        let bytes = stream.read - before;
        metrics.s2s_received(1, bytes);
        let checked = if duties.reads { check(xmpp, &stanza, duties.theirs) } else { Err(("unsupported-stanza-type", "this stream carries stanzas the other way only".into())) };
        if let Err((condition, text)) = checked {
            metrics.s2s_failed(condition);
            stream.fail(condition, &text).await;
            return Undelivered::Timeout;
        }
        Box::pin(xmpp.take_remote(as_client(stanza))).await;
        // Over its rate, the other server is read again only once under it.
        if let Some(until) = inflow.charge(1, bytes) {
            tokio::time::sleep_until(until).await;
        }
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

/// Whether `stanza` may come from a stream authenticated for `domain`
/// (RFC 6120 §8.1.1.2, §8.1.2.2, §13.7.2.1): a stanza, with both
/// addresses, from that domain, to one served here; else the stream error.
fn check(xmpp: &Xmpp, stanza: &Element, domain: &str) -> Result<(), (&'static str, String)> {
    if stanza.ns != ns::SERVER || !matches!(stanza.name.as_str(), "message" | "presence" | "iq") {
        return Err(("unsupported-stanza-type", format!("{{{}}}{} is not a stanza", stanza.ns, stanza.name)));
    }
    let (Some(from), Some(to)) = (stanza.get("from"), stanza.get("to")) else {
        return Err(("improper-addressing", "a stanza between servers has both 'from' and 'to'".into()));
    };
    let (Some(from), Some(to)) = (Jid::parse(from), Jid::parse(to)) else {
        return Err(("improper-addressing", "a stanza's address is not a JID".into()));
    };
    if from.domain != domain {
        return Err(("invalid-from", format!("this stream is authenticated for {domain}, not {}", from.domain)));
    }
    if !xmpp.serves(&to.domain) {
        return Err(("host-unknown", format!("{} is not served here", to.domain)));
    }
    Ok(())
}
