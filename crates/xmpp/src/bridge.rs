//! XMPP over transports that carry one element per message: SockJS (and
//! the xmpp mount's plain WebSocket), whose messages are framing elements
//! as RFC 7395 has them over WebSocket, and BOSH, which hands over each
//! stanza of a body, and stands for the stream's opening and end with
//! `<open/>` and `<close/>` of its own. The transport's session hands the
//! client's messages to a task that runs its XMPP session; the task
//! renders what the session is sent and queues it, as text, for the
//! transport's writer. These sessions are not resumed (XEP-0198): SockJS
//! and BOSH have their own way back, and a session ends when they give up.

use std::sync::Arc;

use hub::{Close, Drained, Outbox, Payload};
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::xmpp::{Limits, StreamParser};

use super::Xmpp;
use super::session::{Flow, Framing, Session, StreamEnd, stream_end_for};

/// The close of a BOSH client's outbox when its XMPP stream ends: 1000 with
/// the stream error's condition as the reason, empty when the client ended
/// it (BOSH's terminating body names the condition).
pub fn ended(end: &StreamEnd) -> Close {
    Close::new(1000, end.0)
}

/// A SockJS or BOSH client whose protocol is XMPP, as its transport holds
/// it: its messages go to the task that runs its XMPP session, which ends
/// when this drops.
#[derive(Debug)]
pub struct Bridged {
    outbox: Arc<Outbox>,
    /// The client's messages the session's task has not taken yet, bounded
    /// as what is sent to a client is (`--queue-limit`). An outbox, not a
    /// tokio channel, whose first block of slots (1.5 KiB) every idle
    /// session would hold.
    inbound: Arc<Outbox>,
}

impl Drop for Bridged {
    /// The transport's session is gone: so is the XMPP session, once it has
    /// taken what came before.
    fn drop(&mut self) {
        self.inbound.close(Close::GOING_AWAY);
    }
}

impl transport::Client for Bridged {
    fn outbox(&self) -> &Arc<Outbox> {
        &self.outbox
    }

    fn expires(&self) -> Option<tokio::time::Instant> {
        None
    }

    fn on_message(&mut self, text: Utf8Bytes) {
        if self.inbound.push(Payload::new(text)).is_err() {
            self.outbox.close(Close::new(1008, "sending faster than the XMPP session takes stanzas"));
        }
    }

    fn on_binary(&mut self, _data: bytes::Bytes) -> Result<(), Close> {
        Err(Close::new(1003, "XMPP is text: binary messages are not accepted here"))
    }
}

/// XMPP over SockJS: each client a session, one element per message.
impl transport::Protocol for Xmpp {
    type Client = Bridged;

    fn open(self: &Arc<Self>, outbox: Arc<Outbox>, _identity: Option<Arc<base::token::Identity>>, address: std::net::IpAddr) -> Bridged {
        open(self.clone(), outbox, Framing::Messages, address)
    }
}

/// Starts the XMPP session of a client at `address`, whose output goes to
/// `client` (the transport session's outbox) framed as `framing`. The
/// transport session counts the messages in its metrics; this task counts
/// nothing.
pub fn open(xmpp: Arc<Xmpp>, client: Arc<Outbox>, framing: Framing, address: std::net::IpAddr) -> Bridged {
    let inbound = Arc::new(Outbox::new(xmpp.context.bounds.queue_limit));
    let tracker = xmpp.context.tracker.clone();
    tracker.spawn(run(xmpp, client.clone(), framing, address, inbound.clone()));
    Bridged { outbox: client, inbound }
}

async fn run(xmpp: Arc<Xmpp>, client: Arc<Outbox>, framing: Framing, address: std::net::IpAddr, inbound: Arc<Outbox>) {
    let context = xmpp.context.clone();
    let own = Arc::new(Outbox::new(context.bounds.queue_limit));
    let mut session = Session::new(framing, xmpp, own.clone(), address);
    session.may_resume = false;
    let limits = Limits { max_stanza_bytes: context.bounds.max_message_size, ..Limits::default() };
    let mut parser = StreamParser::fragments(limits);
    let (mut batch, mut texts) = (Vec::new(), Vec::new());
    let ending = loop {
        tokio::select! {
            taken = inbound.drain(&mut texts) => {
                let gone = matches!(taken, Drained::Closed(_));
                drop(taken);
                // Taken whole, so that the batch's room goes with it.
                for text in std::mem::take(&mut texts) {
                    parser.feed(text.as_text().unwrap_or_default().as_bytes());
                }
                // Boxed: what handling a stanza awaits (a room's join …) is
                // a kilobyte, and inline it would be in every idle session's task.
                match Box::pin(session.take_events(&mut parser)).await {
                    // Neither STARTTLS nor resumption is offered here.
                    Ok(Flow::Continue | Flow::StartTls | Flow::Resume(..)) => {}
                    Ok(Flow::Closed) => break Some(StreamEnd::closed()),
                    Err(end) => break Some(end),
                }
                // The transport's session is gone, or its client sent faster
                // than this takes (it was closed with 1008): so is the XMPP session.
                if gone {
                    break None;
                }
            }
            drained = own.drain(&mut batch) => {
                for text in std::mem::take(&mut batch).into_iter().filter_map(|p| session.render(&p)) {
                    // A refused push has closed the transport's session, which drops the sender.
                    let _ = client.push(Payload::from(text));
                }
                if let Drained::Closed(close) = drained {
                    break Some(stream_end_for(&close));
                }
            }
            () = context.shutdown.wait() => break Some(StreamEnd("system-shutdown", "the server is shutting down".into())),
        }
    };
    session.leave_all().await;
    if let Some(end) = ending {
        let close = if framing == Framing::Bosh { ended(&end) } else { Close::new(1000, "the XMPP stream ended") };
        for text in session.last_words(end) {
            let _ = client.push(Payload::from(text));
        }
        client.close(close);
    }
}
