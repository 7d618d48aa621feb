//! XMPP over TCP: one XML stream each way on the socket.

use std::sync::Arc;

use hub::{Drained, Outbox};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use wire::xmpp::{Limits, StreamParser};

use super::Xmpp;
use super::session::{Framing, Phase, Session, StreamEnd, header, stream_end_for};
use crate::server::ServerState;

/// Serves one client connection until either side ends the stream.
pub async fn run(mut stream: TcpStream, server: Arc<ServerState>, xmpp: Arc<Xmpp>, _slot: OwnedSemaphorePermit) {
    let outbox = Arc::new(Outbox::new(server.config.queue_limit));
    let metrics = server.metrics.connection("xmpp", "tcp");
    let mut session = Session::new(Framing::Stream, xmpp, outbox.clone());
    let limits = Limits { max_stanza_bytes: server.config.max_message_size, ..Limits::default() };
    let mut parser = StreamParser::new(limits);
    let mut read = vec![0u8; 16 * 1024];
    let mut batch = Vec::new();
    let mut out = String::new();
    let ending = loop {
        tokio::select! {
            n = stream.read(&mut read) => {
                let n = match n {
                    Ok(0) | Err(_) => break None,
                    Ok(n) => n,
                };
                metrics.received(n);
                parser.feed(&read[..n]);
                match session.take_events(&mut parser).await {
                    Ok(true) => {}
                    Ok(false) => break Some(StreamEnd("", String::new())),
                    Err(end) => break Some(end),
                }
            }
            drained = outbox.drain(&mut batch) => {
                out.clear();
                let count = batch.len();
                batch.drain(..).filter_map(|p| session.render(&p)).for_each(|text| out.push_str(&text));
                if !out.is_empty() && stream.write_all(out.as_bytes()).await.is_err() {
                    break None;
                }
                metrics.sent(count, out.len());
                if let Drained::Closed(close) = drained {
                    break Some(stream_end_for(&close));
                }
            }
            () = server.shutdown.wait() => break Some(StreamEnd("system-shutdown", "the server is shutting down".into())),
        }
    };
    session.leave_all();
    if let Some(StreamEnd(condition, text)) = ending {
        // What was answered before the end goes first (the stream header,
        // when the error came in the same read as the client's).
        out.clear();
        if outbox.try_drain(&mut batch).is_some() {
            batch.drain(..).filter_map(|p| session.render(&p)).for_each(|text| out.push_str(&text));
        }
        if session.phase == Phase::Connected {
            // An error before the client's header still opens a stream (§4.9.1.1).
            out.push_str(&header(session.domain(), "error"));
        }
        if !condition.is_empty() {
            out.push_str(&session.stream_error(condition, &text));
        }
        out.push_str(Framing::Stream.close());
        let _ = stream.write_all(out.as_bytes()).await;
    }
    let _ = stream.shutdown().await;
}
