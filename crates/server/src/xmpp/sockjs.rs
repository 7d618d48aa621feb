//! XMPP over SockJS (and over the xmpp mount's plain WebSocket): each
//! message is one framing element, as RFC 7395 has them over WebSocket. The
//! SockJS session hands the client's messages to a task that runs its XMPP
//! session; the task renders what the session is sent and queues it, as
//! text, for the SockJS session's writer. Sessions over SockJS are not
//! resumed (XEP-0198): SockJS has its own way back, and its session ends
//! when SockJS gives up.

use std::sync::Arc;

use hub::{Close, Drained, Outbox, Payload};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Utf8Bytes;
use wire::xmpp::{Limits, StreamParser};

use super::session::{Flow, Framing, Session, StreamEnd, stream_end_for};
use crate::server::ServerState;

/// Messages from the client the task has not taken yet.
const INBOUND: usize = 64;

/// Starts a client's XMPP session, whose output goes to `client` (the
/// SockJS session's outbox); the sender takes the client's messages, and
/// dropping it ends the session.
pub fn open(server: Arc<ServerState>, client: Arc<Outbox>) -> mpsc::Sender<Utf8Bytes> {
    let (tx, rx) = mpsc::channel(INBOUND);
    let tracker = server.tracker.clone();
    tracker.spawn(run(server, client, rx));
    tx
}

async fn run(server: Arc<ServerState>, client: Arc<Outbox>, mut inbound: mpsc::Receiver<Utf8Bytes>) {
    let Some(xmpp) = server.xmpp.clone() else { return };
    let own = Arc::new(Outbox::new(server.config.queue_limit));
    let metrics = server.metrics.connection("xmpp", "sockjs");
    let mut session = Session::new(server.clone(), Framing::Messages, xmpp, own.clone());
    session.may_resume = false;
    let limits = Limits { max_stanza_bytes: server.config.max_message_size, ..Limits::default() };
    let mut parser = StreamParser::fragments(limits);
    let mut batch = Vec::new();
    let ending = loop {
        tokio::select! {
            text = inbound.recv() => {
                // The SockJS session is gone: so is the XMPP session.
                let Some(text) = text else { break None };
                parser.feed(text.as_bytes());
                let before = session.stanzas_in;
                let flow = session.take_events(&mut parser).await;
                metrics.received_many(session.stanzas_in - before, text.len());
                match flow {
                    // Neither STARTTLS nor resumption is offered here.
                    Ok(Flow::Continue | Flow::StartTls | Flow::Resume(..)) => {}
                    Ok(Flow::Closed) => break Some(StreamEnd::closed()),
                    Err(end) => break Some(end),
                }
            }
            drained = own.drain(&mut batch) => {
                let count = batch.len();
                let mut bytes = 0;
                for text in batch.drain(..).filter_map(|p| session.render(&p)) {
                    bytes += text.len();
                    // A refused push has closed the SockJS session, which drops the sender.
                    let _ = client.push(Payload::from(text));
                }
                metrics.sent(count, bytes);
                if let Drained::Closed(close) = drained {
                    break Some(stream_end_for(&close));
                }
            }
            () = server.shutdown.wait() => break Some(StreamEnd("system-shutdown", "the server is shutting down".into())),
        }
    };
    session.leave_all();
    if let Some(end) = ending {
        for text in session.last_words(end) {
            let _ = client.push(Payload::from(text));
        }
        client.close(Close::new(1000, "the XMPP stream ended"));
    }
}
