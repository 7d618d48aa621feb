//! pingpong: connect, then N sequential round trips to an echo app. Closed loop by
//! definition (the next ping waits for the pong), so the round trip is measured from
//! the actual send; every reply must be byte-identical to its ping.

use super::{Ctx, excerpt};
use crate::Error;
use crate::flags::PingpongSettings;
use crate::latency::Latency;
use crate::result::PingpongResult;
use crate::stamp::Stamp;
use crate::transport::TransportKind;

pub(crate) async fn run(
    ctx: &Ctx,
    settings: &PingpongSettings,
    kinds: &[TransportKind],
    out: &mut Vec<PingpongResult>,
) -> Result<(), Error> {
    for &kind in kinds {
        ctx.progress.step(format!("pingpong {kind}"), settings.count);
        let window = ctx.monitor.window();
        let (mut conn, connect_us) = ctx.connect(kind).await?;
        let mut round_trip = Latency::new();
        let start = ctx.clock.now_us();
        let mut count = 0;
        let mut failure = None;
        for seq in 0..settings.count {
            match ping(ctx, &mut conn, seq).await {
                Ok(us) => round_trip.record(us),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
            count += 1;
            ctx.progress.inc(1);
        }
        let total_us = ctx.clock.now_us() - start;
        conn.sender.close().await;
        out.push(PingpongResult {
            transport: kind,
            connect_us,
            count,
            total_us,
            round_trip: round_trip.summary(),
            resources: ctx.monitor.finish(window),
        });
        if let Some(e) = failure {
            return Err(e);
        }
    }
    Ok(())
}

async fn ping(ctx: &Ctx, conn: &mut crate::transport::Connection, seq: u64) -> Result<u64, Error> {
    let sent_us = ctx.clock.now_us();
    let ping = Stamp { step: 0, sender: 0, seq, intended_us: sent_us, sent_us }.to_text();
    conn.sender.send(&ping).await?;
    let pong = ctx.recv(&mut conn.receiver, "echo reply").await?;
    let rtt = ctx.clock.now_us() - sent_us;
    if pong.as_str() != ping {
        return Err(Error::unexpected(format!(
            "{} is not an echo app: sent {ping:?}, got {}",
            ctx.target.as_str(),
            excerpt(&pong)
        )));
    }
    Ok(rtt)
}
