//! countdown: from N to 0 against a count app, one request or message at a time.
//! Over `http` a message is the query `count=N` of `GET <target>/xhr`; over every other
//! transport it is `{"count":N}` (`wire::app::Count`, the server's own format). Each
//! reply must be exactly N-1.

use wire::app::Count;

use super::{Ctx, excerpt};
use crate::Error;
use crate::flags::CountdownSettings;
use crate::result::{CountdownResult, round};
use crate::transport::TransportKind;

pub(crate) async fn run(
    ctx: &Ctx,
    settings: &CountdownSettings,
    kinds: &[TransportKind],
    out: &mut Vec<CountdownResult>,
) -> Result<(), Error> {
    let mut failure = None;
    for &kind in kinds {
        ctx.progress.step(format!("countdown {kind}"), settings.count);
        let window = ctx.monitor.window();
        let (mut conn, connect_us) = ctx.connect(kind).await?;
        let start = ctx.clock.now_us();
        let mut n = settings.count;
        while n > 0 {
            if let Err(e) = step(ctx, &mut conn, kind, n).await {
                failure = Some(e);
                break;
            }
            n -= 1;
            ctx.progress.inc(1);
        }
        let total_us = ctx.clock.now_us() - start;
        conn.sender.close().await;
        let iterations = settings.count - n;
        out.push(CountdownResult {
            transport: kind,
            connect_us,
            from: settings.count,
            iterations,
            total_us,
            per_iteration_us: if iterations == 0 { 0.0 } else { total_us as f64 / iterations as f64 },
            ratio_to_websocket: None,
            resources: ctx.monitor.finish(window),
        });
        if failure.is_some() {
            break;
        }
    }
    // The ratio needs every transport's total, so it is filled in at the end.
    if let Some(ws) = out.iter().find(|r| r.transport == TransportKind::Websocket && r.iterations == r.from) {
        let ws_total = ws.total_us.max(1) as f64;
        for r in out.iter_mut().filter(|r| r.iterations == r.from) {
            r.ratio_to_websocket = Some(round(r.total_us as f64 / ws_total, 3));
        }
    }
    failure.map_or(Ok(()), Err)
}

async fn step(ctx: &Ctx, conn: &mut crate::transport::Connection, kind: TransportKind, n: u64) -> Result<(), Error> {
    let message = match kind {
        TransportKind::Http => format!("count={n}"),
        _ => Count { count: n as i64 }.to_json(),
    };
    conn.sender.send(&message).await?;
    let reply = ctx.recv(&mut conn.receiver, "count reply").await?;
    match Count::parse(&reply) {
        Ok(r) if r.count == n as i64 - 1 => Ok(()),
        _ => Err(Error::unexpected(format!(
            "{} is not a count app: sent {message}, expected {{\"count\":{}}}, got {}",
            ctx.target.as_str(),
            n as i64 - 1,
            excerpt(&reply)
        ))),
    }
}
