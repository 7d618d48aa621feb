//! idle: per transport, opens `--connections` connections (over XMPP, logged-in sessions
//! that have sent their initial presence), holds them idle for `--hold`, and reads the
//! server's RSS before the first opens and at the end of the hold: what one idle
//! connection costs the server. Each connection's task only reads what the server sends
//! meanwhile (keep-alives), answering an XMPP server's pings, and notes a connection the
//! server ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use wire::xmpp::{Element, ns};

use super::{Ctx, connect_fleet, on_each};
use crate::Error;
use crate::flags::IdleSettings;
use crate::result::{IdleResult, round};
use crate::transport::{Connection, TransportKind, xmpp};

/// Descriptors the bench keeps for everything but the held connections.
const SPARE_FILES: u64 = 100;

/// Sessions that send their initial presence at once.
const PRESENCE_AT_ONCE: usize = 64;

pub(crate) async fn run(ctx: &Ctx, settings: &IdleSettings, kinds: &[TransportKind], out: &mut Vec<IdleResult>) -> Result<(), Error> {
    enough_files(settings.connections)?;
    for &kind in kinds {
        let n = settings.connections;
        let window = ctx.monitor.window();
        let before = ctx.monitor.server_rss();
        ctx.progress.step(format!("idle {kind}: opening {n}"), n as u64);
        let mut result = IdleResult {
            transport: kind,
            connections: n,
            opened: 0,
            connect: Default::default(),
            dropped: 0,
            first_drop: None,
            held_s: 0.0,
            server_rss_before_bytes: before,
            server_rss_after_bytes: None,
            server_rss_per_connection_bytes: None,
            resources: Default::default(),
        };
        let (mut conns, connect) = match connect_fleet(ctx, kind, n).await {
            Ok(opened) => opened,
            Err((done, e)) => {
                result.opened = done;
                result.resources = ctx.monitor.finish(window);
                out.push(result);
                return Err(e);
            }
        };
        result.connect = connect.summary();
        if kind.is_xmpp() {
            ctx.progress.step(format!("idle {kind}: initial presence"), n as u64);
            if let Err(e) = present_all(ctx, &mut conns).await {
                result.resources = ctx.monitor.finish(window);
                out.push(result);
                return Err(e);
            }
        }
        result.opened = conns.len() as u32;
        ctx.progress.message(format!("idle {kind}: holding {n}"));
        let held = hold(ctx, conns, Duration::from_micros(settings.hold_us)).await;
        result.held_s = round(held.seconds, 3);
        result.dropped = held.dropped;
        result.first_drop = held.first_drop;
        result.server_rss_after_bytes = held.rss;
        if let (Some(before), Some(after)) = (before, held.rss) {
            result.server_rss_per_connection_bytes = Some(round((after as f64 - before as f64) / f64::from(result.opened.max(1)), 1));
        }
        result.resources = ctx.monitor.finish(window);
        out.push(result);
        if let Some(e) = held.failure {
            return Err(e);
        }
    }
    Ok(())
}

/// Refuses a run the open-file limit cannot hold, naming the limit.
fn enough_files(n: u32) -> Result<(), Error> {
    let (soft, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).map_err(|e| Error::io(format!("reading the open-file limit: {e}")))?;
    let want = u64::from(n) + SPARE_FILES;
    if soft < want {
        return Err(Error::usage(format!(
            "{n} connections need {want} open files, and the limit is {soft} (hard limit {hard}): raise `ulimit -n`, or ask for fewer"
        )));
    }
    Ok(())
}

/// Every XMPP session sends its initial presence, then pings the server, so that the
/// server has handled the presence once the ping is answered.
async fn present_all(ctx: &Ctx, conns: &mut [Connection]) -> Result<(), Error> {
    let done = AtomicU64::new(0);
    let presenting = on_each(conns, PRESENCE_AT_ONCE, |conn, _| {
        let done = &done;
        async move {
            present(ctx, conn).await?;
            ctx.progress.set(done.fetch_add(1, Ordering::Relaxed) + 1);
            Ok(())
        }
    });
    presenting.await.map_err(|(_, e)| e)
}

async fn present(ctx: &Ctx, conn: &mut Connection) -> Result<(), Error> {
    let (Some(tx), Some(rx)) = (conn.sender.xmpp(), conn.receiver.xmpp()) else { return Ok(()) };
    tx.send_stanza(&Element::new("presence", ns::CLIENT)).await?;
    tx.send_stanza(&xmpp::iq("get", "present", Element::new("ping", ns::PING))).await?;
    ctx.expect(async { rx.result("present", "the ping after the initial presence").await.map(Some) }, "ping result").await?;
    Ok(())
}

/// What became of the held connections.
struct Held {
    seconds: f64,
    dropped: u32,
    first_drop: Option<String>,
    /// The server's RSS at the end of the hold.
    rss: Option<u64>,
    /// Ctrl-C.
    failure: Option<Error>,
}

/// Holds the connections for `hold`, each read by a task of its own, then reads the
/// server's RSS and closes them.
async fn hold(ctx: &Ctx, conns: Vec<Connection>, hold: Duration) -> Held {
    let stop = CancellationToken::new();
    let dropped = Arc::new(AtomicU32::new(0));
    let first_drop = Arc::new(Mutex::new(None::<String>));
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|conn| tokio::spawn(keep(conn, stop.clone(), dropped.clone(), first_drop.clone())))
        .collect();
    let started = std::time::Instant::now();
    let failure = tokio::select! {
        _ = ctx.cancel.cancelled() => Some(Error::cancelled()),
        _ = tokio::time::sleep(hold) => None,
    };
    let seconds = started.elapsed().as_secs_f64();
    let rss = ctx.monitor.server_rss();
    stop.cancel();
    for task in tasks {
        let _ = task.await;
    }
    let first_drop = first_drop.lock().take();
    Held { seconds, dropped: dropped.load(Ordering::Relaxed), first_drop, rss, failure }
}

/// Reads one held connection until `stop`, answering an XMPP server's pings; closes it then.
async fn keep(mut conn: Connection, stop: CancellationToken, dropped: Arc<AtomicU32>, first_drop: Arc<Mutex<Option<String>>>) {
    let ended = loop {
        let next = async {
            match conn.receiver.xmpp() {
                Some(rx) => rx.stanza().await.map(|s| s.map(Some)),
                None => conn.receiver.recv().await.map(|t| t.map(|_| None)),
            }
        };
        let stanza = tokio::select! {
            _ = stop.cancelled() => break None,
            next = next => next,
        };
        match stanza {
            Ok(Some(Some(stanza))) => {
                if let (Some(pong), Some(tx)) = (xmpp::pong(&stanza), conn.sender.xmpp())
                    && let Err(e) = tx.send_stanza(&pong).await
                {
                    break Some(e.to_string());
                }
            }
            Ok(Some(None)) => {}
            Ok(None) => break Some("closed by the server".to_string()),
            Err(e) => break Some(e.to_string()),
        }
    };
    if let Some(why) = ended {
        dropped.fetch_add(1, Ordering::Relaxed);
        first_drop.lock().get_or_insert(why);
    }
    conn.sender.close().await;
}
