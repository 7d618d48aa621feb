//! pingpong: connect, then N sequential round trips to an echo app. Closed loop by
//! definition (the next ping waits for the pong), so the round trip is measured from
//! the actual send; every reply must be byte-identical to its ping. Over an XMPP
//! transport the connect time covers the whole login (split into its phases), and each
//! round trip is an XEP-0199 ping to the server, answered by its iq result. Over IRC
//! the connect time covers the registration, and each round trip is a `PING` to the
//! server, answered by its `PONG`.

use wire::xmpp::{Element, ns};

use super::{Ctx, excerpt};
use crate::Error;
use crate::flags::PingpongSettings;
use crate::latency::Latency;
use crate::result::PingpongResult;
use crate::stamp::Stamp;
use crate::transport::{Connection, TransportKind};

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
            let round_trip_us = if kind.is_xmpp() {
                xmpp_ping(ctx, &mut conn, seq).await
            } else if kind.is_irc() {
                irc_ping(ctx, &mut conn, seq).await
            } else {
                ping(ctx, &mut conn, seq).await
            };
            match round_trip_us {
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
            login: conn.login(),
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

async fn ping(ctx: &Ctx, conn: &mut Connection, seq: u64) -> Result<u64, Error> {
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

/// One XEP-0199 ping to the server (`<iq type='get' to='DOMAIN'><ping/></iq>`) and its result.
async fn xmpp_ping(ctx: &Ctx, conn: &mut Connection, seq: u64) -> Result<u64, Error> {
    let (Some(tx), Some(rx)) = (conn.sender.xmpp(), conn.receiver.xmpp()) else {
        return Err(Error::usage("an XMPP ping needs an XMPP transport"));
    };
    let domain = ctx.xmpp.as_ref().map_or("", |x| x.domain.as_str());
    let id = format!("ping{seq}");
    let ping = Element::new("iq", ns::CLIENT).attr("type", "get").attr("to", domain).attr("id", &id).child(Element::new("ping", ns::PING));
    let sent_us = ctx.clock.now_us();
    tx.send_stanza(&ping).await?;
    ctx.expect(async { rx.result(&id, "ping").await.map(Some) }, "ping result").await?;
    Ok(ctx.clock.now_us() - sent_us)
}

/// One IRC `PING :bench<seq>` to the server and its `PONG` naming the same token.
async fn irc_ping(ctx: &Ctx, conn: &mut Connection, seq: u64) -> Result<u64, Error> {
    let (Some(tx), Some(rx)) = (conn.sender.irc(), conn.receiver.irc()) else {
        return Err(Error::usage("an IRC ping needs the IRC transport"));
    };
    let token = format!("bench{seq}");
    let sent_us = ctx.clock.now_us();
    tx.line(&format!("PING :{token}\r\n")).await?;
    let pong = async {
        while let Some(line) = rx.line().await? {
            if let Ok(m) = wire::irc::Message::parse(&line)
                && m.is("PONG")
                && m.params.last() == Some(&token.as_str())
            {
                return Ok(Some(()));
            }
        }
        Ok(None)
    };
    ctx.expect(pong, "PONG").await?;
    Ok(ctx.clock.now_us() - sent_us)
}
