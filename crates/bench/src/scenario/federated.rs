//! federated: a user of the target and a user of another XMPP server that it
//! federates with message each other, as in the study of XMPP over satellite links:
//! the target's user sends a chat message to the other's bare JID, the other answers
//! with the same body (after the typing delay, when one is given), and the round trip
//! is timed at the sender without that delay. The run's first round trip is reported
//! on its own: with freshly started servers it includes setting up the streams
//! between them, which a constrained link between them (`switchboard link`) makes
//! slow. Both users log in with SASL PLAIN over xmpp-tcp and send initial presence,
//! so that a message to their bare JID reaches them.
//!
//! Over IRC (`--transport irc`, `--peer-irc`), the two are clients of two servers of one
//! IRC network, linked as IRC servers are, in one channel: the messages are the
//! channel's, which reach the other server's client across the link. Both join and
//! each waits to see the other there before the first message; IRC servers link when
//! they start, not on a message, so the wait (reported) is where a fresh pair's link
//! set-up shows, and the first round trip crosses a link already up.

use std::time::Duration;

use rand::Rng;
use rand::distr::Alphanumeric;
use wire::xmpp::{Element, ns};

use super::Ctx;
use crate::Error;
use crate::flags::{FederatedSettings, XmppAuth, XmppSettings};
use crate::latency::Latency;
use crate::result::{FederatedResult, FederatedRow, FederatedThroughput};
use crate::target::{Target, XmppEndpoints};
use crate::transport::{self, Connection, TransportKind, irc, xmpp};

pub(crate) async fn run(ctx: &Ctx, settings: &FederatedSettings, kinds: &[TransportKind], out: &mut Vec<FederatedResult>) -> Result<(), Error> {
    let meeting = Meeting::new(ctx, settings)?;
    for &kind in kinds {
        let rounds = 1 + settings.sizes.len() as u64 * settings.typing_us.len() as u64 * settings.round_trips + settings.throughput.len() as u64;
        ctx.progress.step(format!("federated {kind}"), rounds);
        let window = ctx.monitor.window();
        let (mut mine, connect_us) = ctx.connect(kind).await?;
        let started = std::time::Instant::now();
        let mut theirs = meeting.connect(ctx).await?;
        let peer_connect_us = started.elapsed().as_micros() as u64;
        let met_us = meeting.meet(ctx, &mut mine, &mut theirs).await?;
        let first_us = round_trip(ctx, &mut mine, &mut theirs, settings.sizes[0], 0).await?;
        ctx.progress.inc(1);
        let mut rows = Vec::new();
        for &size in &settings.sizes {
            for &typing_us in &settings.typing_us {
                let mut latency = Latency::new();
                for _ in 0..settings.round_trips {
                    latency.record(round_trip(ctx, &mut mine, &mut theirs, size, typing_us).await?);
                    ctx.progress.inc(1);
                }
                rows.push(FederatedRow { size, typing_us, round_trip: latency.summary() });
            }
        }
        let mut throughput = Vec::new();
        for &size in &settings.throughput {
            let messages = (settings.throughput_bytes / size).max(2) as u64;
            throughput.push(FederatedThroughput { size, messages, duration_us: stream(ctx, &mut mine, &mut theirs, size, messages).await? });
            ctx.progress.inc(1);
        }
        mine.sender.close().await;
        theirs.sender.close().await;
        out.push(FederatedResult { transport: kind, connect_us, peer_connect_us, met_us, first_us, rows, throughput, resources: ctx.monitor.finish(window) });
    }
    Ok(())
}

/// Where the other user is and how the two meet.
enum Meeting {
    /// Users of two XMPP servers, each messaging the other's bare JID.
    Xmpp { me: String, peer: String, settings: XmppSettings, target: Target },
    /// Clients of two servers of one IRC network, in one channel.
    Irc { target: Target, channel: String },
}

impl Meeting {
    fn new(ctx: &Ctx, settings: &FederatedSettings) -> Result<Meeting, Error> {
        if let Some(address) = &settings.peer_irc {
            return Ok(Meeting::Irc { target: Target::parse(&format!("irc://{address}"))?, channel: super::channel::fresh("federated") });
        }
        let Some(XmppSettings { auth: XmppAuth::Plain { user, password }, domain, .. }) = &ctx.xmpp else {
            return Err(Error::usage("federated needs --xmpp-user and --xmpp-password"));
        };
        Ok(Meeting::Xmpp {
            me: format!("{}@{domain}", user.replace("{i}", "0")),
            peer: format!("{}@{}", settings.peer_user, settings.peer_domain),
            settings: XmppSettings {
                domain: settings.peer_domain.clone(),
                muc_service: format!("conference.{}", settings.peer_domain),
                auth: XmppAuth::Plain { user: settings.peer_user.clone(), password: password.clone() },
                bosh_wait_s: 60,
            },
            target: peer_target(&settings.peer_xmpp)?,
        })
    }

    /// The other user's connection, logged in (client 1: an IRC nickname apart from
    /// the target's client 0 on the same network).
    async fn connect(&self, ctx: &Ctx) -> Result<Connection, Error> {
        let (target, kind, client) = match self {
            Meeting::Xmpp { settings, target, .. } => (target, TransportKind::XmppTcp, transport::Client { index: 0, xmpp: Some(settings) }),
            Meeting::Irc { target, .. } => (target, TransportKind::Irc, transport::Client { index: 1, xmpp: None }),
        };
        tokio::select! {
            _ = ctx.cancel.cancelled() => Err(Error::cancelled()),
            c = transport::connect(target, kind, client, ctx.timeout) => c,
        }
    }

    /// Makes each user's messages go to the other. Over IRC, both join the channel and
    /// each waits to see the other there; how long that took (the servers' link set-up
    /// when they were just started, else a round trip or so) is returned.
    async fn meet(&self, ctx: &Ctx, mine: &mut Connection, theirs: &mut Connection) -> Result<Option<u64>, Error> {
        match self {
            Meeting::Xmpp { me, peer, .. } => {
                available(mine).await?;
                available(theirs).await?;
                address(mine, peer)?;
                address(theirs, me)?;
                Ok(None)
            }
            Meeting::Irc { channel, .. } => {
                let started = std::time::Instant::now();
                let (Some(my_tx), Some(my_rx), Some(their_tx), Some(their_rx)) = (mine.sender.irc(), mine.receiver.irc(), theirs.sender.irc(), theirs.receiver.irc())
                else {
                    return Err(Error::usage("federated with --peer-irc needs the IRC transport"));
                };
                let (my_nick, their_nick) = (my_tx.nick().to_owned(), their_tx.nick().to_owned());
                let (i_met, they_met) = (tokio::sync::Notify::new(), tokio::sync::Notify::new());
                tokio::try_join!(
                    meet_irc(ctx, my_tx, my_rx, channel, &their_nick, &i_met, &they_met),
                    meet_irc(ctx, their_tx, their_rx, channel, &my_nick, &they_met, &i_met),
                )?;
                Ok(Some(started.elapsed().as_micros() as u64))
            }
        }
    }
}

/// One side of the meeting over IRC: joins `channel` and waits to see `other` there,
/// says so through `met`, then goes on reading (answering its server's pings) until
/// the other side has seen it too (`other_met`): over a slow link that can take
/// longer than a server lets a client be silent.
async fn meet_irc(
    ctx: &Ctx,
    tx: &mut irc::Sender,
    rx: &mut irc::Receiver,
    channel: &str,
    other: &str,
    met: &tokio::sync::Notify,
    other_met: &tokio::sync::Notify,
) -> Result<(), Error> {
    let what = format!("{other} in {channel}, seen by the other server's client");
    ctx.expect(async { irc::meet(tx, rx, channel, other).await.map(Some) }, &what).await?;
    met.notify_one();
    tokio::select! {
        () = other_met.notified() => Ok(()),
        e = irc::idle(rx) => Err(e),
    }
}

/// The other server's client side at `address` (`host:port`).
fn peer_target(address: &str) -> Result<Target, Error> {
    let port = address.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).ok_or_else(|| Error::usage(format!("--peer-xmpp {address:?} is not host:port")))?;
    let endpoints = XmppEndpoints { tcp_port: port, websocket_path: String::new(), sockjs_path: String::new(), bosh_path: String::new() };
    Ok(Target::parse(&format!("http://{address}"))?.with_xmpp(endpoints))
}

/// Sends initial presence: the session is available, and a message to its bare JID
/// reaches it (RFC 6121 §8.5.2.1.1).
async fn available(conn: &mut Connection) -> Result<(), Error> {
    let tx = conn.sender.xmpp().ok_or_else(|| Error::usage("federated needs an XMPP transport"))?;
    tx.send_stanza(&Element::new("presence", ns::CLIENT)).await
}

fn address(conn: &mut Connection, to: &str) -> Result<(), Error> {
    conn.sender.xmpp().ok_or_else(|| Error::usage("federated needs an XMPP transport"))?.address(to, "chat");
    Ok(())
}

/// One message of `size` random letters and digits from the target's user, answered
/// with the same body by the other after `typing_us`; its round trip less the typing.
async fn round_trip(ctx: &Ctx, mine: &mut Connection, theirs: &mut Connection, size: usize, typing_us: u64) -> Result<u64, Error> {
    let body: String = rand::rng().sample_iter(&Alphanumeric).take(size).map(char::from).collect();
    let sent_us = ctx.clock.now_us();
    mine.sender.send(&body).await?;
    let got = across(ctx, mine, theirs, &body, "the message at the other server's user").await?;
    if typing_us > 0 {
        tokio::select! {
            _ = ctx.cancel.cancelled() => return Err(Error::cancelled()),
            () = tokio::time::sleep(Duration::from_micros(typing_us)) => {}
        }
    }
    theirs.sender.send(&got).await?;
    until(ctx, mine, &body, "the answer from the other server's user").await?;
    Ok((ctx.clock.now_us() - sent_us).saturating_sub(typing_us))
}

/// `messages` messages of `size` random letters and digits from the target's user,
/// sent back to back; how long until the last reached the other user. Each body
/// starts with its number, so that the last is known.
async fn stream(ctx: &Ctx, mine: &mut Connection, theirs: &mut Connection, size: usize, messages: u64) -> Result<u64, Error> {
    let bodies: Vec<String> = (0..messages)
        .map(|n| {
            let mark = format!("{n}.");
            let fill: String = rand::rng().sample_iter(&Alphanumeric).take(size.saturating_sub(mark.len())).map(char::from).collect();
            format!("{mark}{fill}")
        })
        .collect();
    let sent_us = ctx.clock.now_us();
    for body in &bodies {
        mine.sender.send(body).await?;
    }
    // In order over one stream: the last to arrive is the last sent.
    if let Some(last) = bodies.last() {
        across(ctx, mine, theirs, last, "the last of a stream of messages at the other server's user").await?;
    }
    Ok(ctx.clock.now_us() - sent_us)
}

/// Waits for the message whose body is `body` at `theirs` while reading `mine` too,
/// which is silent meanwhile: its server's pings are answered (an IRC or XMPP server
/// ends a client silent for two ping intervals, and a message crossing a slow link,
/// or a stream of them, can take longer), and a message its XMPP server could not
/// deliver comes back to it as an error. What else reaches `mine` meanwhile is passed
/// over: an IRC server sends a client nothing of its own channel messages, and the
/// answer to this message is sent only once it has arrived.
async fn across(ctx: &Ctx, mine: &mut Connection, theirs: &mut Connection, body: &str, what: &str) -> Result<String, Error> {
    tokio::select! {
        got = until(ctx, theirs, body, what) => got,
        bounced = until(ctx, mine, "", what) => {
            bounced?;
            Err(Error::unexpected("the sender's server sent back nothing but a message with no body"))
        }
    }
}

/// Waits for the message whose body is `body`, passing over any other stanza and
/// answering the server's pings (XEP-0199): a user waiting for a slow link's first
/// message is silent long enough for its server to ask whether it is still there.
async fn until(ctx: &Ctx, conn: &mut Connection, body: &str, what: &str) -> Result<String, Error> {
    let (Some(tx), Some(rx)) = (conn.sender.xmpp(), conn.receiver.xmpp()) else {
        // IRC: the text of each PRIVMSG (the transport answers the server's PINGs).
        loop {
            if &*ctx.recv(&mut conn.receiver, what).await? == body {
                return Ok(body.to_owned());
            }
        }
    };
    loop {
        let stanza = ctx.expect(rx.stanza(), what).await?;
        if let Some(pong) = xmpp::pong(&stanza) {
            tx.send_stanza(&pong).await?;
            continue;
        }
        if stanza.name != "message" {
            continue;
        }
        if stanza.get("type") == Some("error") {
            return Err(Error::refused(format!("{}: the server bounced a message: {}", rx.place(), xmpp::stanza_error(&stanza))));
        }
        if let Some(got) = stanza.find("body", ns::CLIENT).map(Element::text_content).filter(|got| got == body) {
            return Ok(got);
        }
    }
}
