//! api: the server API's `POST /api/publish`, in two parts.
//!
//! Throughput: `--connections` keep-alive HTTP/1.1 connections publish back to back,
//! `--requests` in all, into a room with no member (the API's own cost, and the broker's
//! and the archive's); each answer must be 200. Closed loop: the figure is how many
//! publishes a second the server answers, with each one's time from send to answer.
//!
//! Fan-out: `--members` chat clients over WebSocket join one room; then a message every
//! `--interval`, one published through the API, the next sent by a member, and so on.
//! Every member times every message from its scheduled send (the stamp in its text; one
//! clock, this process's), so the two ways into the room are compared side by side, in
//! one run, at the same load.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wire::app::Join;

use super::{Ctx, connect_fleet, excerpt};
use crate::Error;
use crate::flags::ApiSettings;
use crate::latency::Latency;
use crate::result::{ApiFanout, ApiPublish, ApiResult, round};
use crate::stamp::{Clock, Stamp};
use crate::transport::{Receiver, TransportKind};
use crate::Target;

/// The name the API publishes under; members are `u<i>`.
const PUBLISHER: &str = "bench-api";

/// How long the fan-out waits for what is still on its way after the last send.
const DRAIN: Duration = Duration::from_secs(5);

pub(crate) async fn run(ctx: &Ctx, s: &ApiSettings, kinds: &[TransportKind], out: &mut Vec<ApiResult>) -> Result<(), Error> {
    if kinds != [TransportKind::Websocket] {
        return Err(Error::usage("bench api's members are chat clients over websocket: give no --transport, or websocket"));
    }
    let api = Api::new(ctx, s)?;
    let publish = throughput(ctx, s, &api).await?;
    let refused = publish.ok == 0;
    out.push(ApiResult { publish, fanout: None });
    if refused {
        let why = out[0].publish.first_refusal.clone().unwrap_or_default();
        return Err(Error::unexpected(format!("{} refused every publish: {why}", s.api_url)));
    }
    if s.members > 0 {
        let fanout = fanout(ctx, s, &api).await?;
        out[0].fanout = Some(fanout);
    }
    Ok(())
}

/// Where and how to call the API.
struct Api {
    target: Target,
    key: String,
    path: String,
}

impl Api {
    fn new(ctx: &Ctx, s: &ApiSettings) -> Result<Api, Error> {
        let target = Target::parse(&s.api_url)?;
        let key = ctx.api_key.clone().ok_or_else(|| Error::usage("bench api needs --key"))?;
        Ok(Api { path: target.path("/publish"), target, key })
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, Error> {
        crate::transport::http::open(&self.target).await
    }

    /// Publishes `text` into `room` as [`PUBLISHER`]: `Ok(None)` when answered 200, else
    /// the status and body it was answered with.
    async fn publish(&self, conn: &mut SendRequest<Full<Bytes>>, room: &str, text: &str) -> Result<Option<String>, Error> {
        let body = json!({"room": room, "name": PUBLISHER, "text": text}).to_string();
        let req = hyper::Request::post(&self.path)
            .header(hyper::header::HOST, self.target.authority())
            .header("x-api-key", &self.key)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::usage(format!("bad request to {}: {e}", self.path)))?;
        conn.ready().await.map_err(|e| Error::closed(format!("{}: {e}", self.target.as_str())))?;
        let res = conn.send_request(req).await.map_err(|e| Error::closed(format!("{}: {e}", self.target.as_str())))?;
        let status = res.status();
        let body = res.into_body().collect().await.map_err(|e| Error::closed(format!("{}: {e}", self.target.as_str())))?.to_bytes();
        Ok((status != hyper::StatusCode::OK).then(|| format!("{status}: {}", excerpt(&String::from_utf8_lossy(&body)))))
    }
}

async fn throughput(ctx: &Ctx, s: &ApiSettings, api: &Api) -> Result<ApiPublish, Error> {
    ctx.progress.step(format!("api: {} publishes on {} connections", s.requests, s.connections), s.requests);
    let room = format!("bench-api-{}-publish", std::process::id());
    let mut conns = Vec::with_capacity(s.connections as usize);
    for _ in 0..s.connections {
        conns.push(api.connect().await?);
    }
    let issued = Arc::new(AtomicU64::new(0));
    let window = ctx.monitor.window();
    let started = Instant::now();
    let tasks: Vec<_> = conns
        .into_iter()
        .map(|mut conn| {
            let (issued, room, requests, cancel) = (issued.clone(), room.clone(), s.requests, ctx.cancel.clone());
            let api = Api { target: api.target.clone(), key: api.key.clone(), path: api.path.clone() };
            tokio::spawn(async move {
                let (mut latency, mut ok, mut refused, mut first) = (Latency::new(), 0u64, 0u64, None);
                while !cancel.is_cancelled() {
                    let i = issued.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        break;
                    }
                    let sent = Instant::now();
                    match api.publish(&mut conn, &room, &format!("p{i}")).await? {
                        None => ok += 1,
                        Some(why) => {
                            refused += 1;
                            first.get_or_insert(why);
                        }
                    }
                    latency.record(sent.elapsed().as_micros() as u64);
                }
                Ok::<_, Error>((latency, ok, refused, first))
            })
        })
        .collect();
    let (mut latency, mut ok, mut refused, mut first_refusal) = (Latency::new(), 0, 0, None);
    for task in tasks {
        let progress = async {
            loop {
                tokio::time::sleep(Duration::from_millis(100)).await;
                ctx.progress.set(issued.load(Ordering::Relaxed).min(s.requests));
            }
        };
        let (l, o, r, f) = tokio::select! {
            done = task => done.map_err(|e| Error::unexpected(format!("a publishing task failed: {e}")))??,
            () = progress => unreachable!("the progress loop never ends"),
        };
        latency.merge(&l);
        ok += o;
        refused += r;
        if first_refusal.is_none() {
            first_refusal = f;
        }
    }
    ctx.check_cancel()?;
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    Ok(ApiPublish {
        connections: s.connections,
        ok,
        refused,
        first_refusal,
        duration_s: round(secs, 3),
        per_s: round(ok as f64 / secs, 1),
        latency: latency.summary(),
        resources: ctx.monitor.finish(window),
    })
}

/// What the fan-out's members share.
struct Heard {
    clock: Clock,
    joined: AtomicU64,
    received: AtomicU64,
    /// Deliveries of messages published through the API, and of those a member sent.
    api: Mutex<Latency>,
    member: Mutex<Latency>,
    unexpected: Mutex<Option<String>>,
    stop: CancellationToken,
}

async fn fanout(ctx: &Ctx, s: &ApiSettings, api: &Api) -> Result<ApiFanout, Error> {
    let n = s.members;
    ctx.progress.step(format!("api: {n} members connecting"), n as u64);
    let (mut conns, _) = connect_fleet(ctx, TransportKind::Websocket, n).await.map_err(|(_, e)| e)?;
    let room = format!("bench-api-{}-fanout", std::process::id());
    let heard = Arc::new(Heard {
        clock: ctx.clock,
        joined: AtomicU64::new(0),
        received: AtomicU64::new(0),
        api: Mutex::new(Latency::new()),
        member: Mutex::new(Latency::new()),
        unexpected: Mutex::new(None),
        stop: CancellationToken::new(),
    });
    ctx.progress.step(format!("api: {n} members joining"), n as u64);
    let mut senders = Vec::with_capacity(n as usize);
    let mut receivers = Vec::with_capacity(n as usize);
    for (i, conn) in conns.drain(..).enumerate() {
        let mut tx = conn.sender;
        let join = Join { name: format!("u{i}"), room: room.clone(), since: None };
        tx.send(&serde_json::to_string(&join).unwrap_or_default()).await?;
        senders.push(tx);
        receivers.push(tokio::spawn(listen(conn.receiver, heard.clone())));
    }
    let deadline = Instant::now() + ctx.timeout;
    while heard.joined.load(Ordering::Relaxed) < n as u64 {
        ctx.check_cancel()?;
        if let Some(what) = heard.unexpected.lock().clone() {
            let hint = if what.contains("too many joins") { " (a room of --members needs a server started with --join-rate at least that)" } else { "" };
            return Err(Error::unexpected(format!("{} refused a member's join: {what}{hint}", ctx.target.as_str())));
        }
        if Instant::now() > deadline {
            return Err(Error::unexpected(format!("only {} of {n} members joined within {:?}", heard.joined.load(Ordering::Relaxed), ctx.timeout)));
        }
        ctx.progress.set(heard.joined.load(Ordering::Relaxed));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // One message every interval, alternately through the API and from member 0.
    let window = ctx.monitor.window();
    let mut conn = api.connect().await?;
    let expected = s.messages * n as u64;
    ctx.progress.step(format!("api: {} messages to {n} members", s.messages), expected);
    let t0 = ctx.clock.now_us() + 20_000;
    let (mut through_api, mut from_member) = (0, 0);
    for k in 0..s.messages {
        let intended = t0 + k * s.interval_us;
        tokio::time::sleep_until(ctx.clock.instant(intended).into()).await;
        ctx.check_cancel()?;
        let via_api = k % 2 == 0;
        let text = Stamp { step: 0, sender: u32::from(!via_api), seq: k, intended_us: intended, sent_us: ctx.clock.now_us() }.to_text();
        if via_api {
            if let Some(why) = api.publish(&mut conn, &room, &text).await? {
                return Err(Error::unexpected(format!("{} refused a publish: {why}", s.api_url)));
            }
            through_api += 1;
        } else {
            senders[0].send(&json!({"message": text}).to_string()).await?;
            from_member += 1;
        }
        ctx.progress.set(heard.received.load(Ordering::Relaxed));
    }
    let deadline = Instant::now() + DRAIN;
    while heard.received.load(Ordering::Relaxed) < expected && Instant::now() < deadline && !ctx.cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    heard.stop.cancel();
    for r in receivers {
        let _ = r.await;
    }
    for mut tx in senders {
        tx.close().await;
    }
    let (api_latency, member_latency) = (heard.api.lock().summary(), heard.member.lock().summary());
    Ok(ApiFanout {
        members: n,
        through_api,
        from_member,
        expected,
        received: heard.received.load(Ordering::Relaxed),
        p50_extra_us: api_latency.p50_us as f64 - member_latency.p50_us as f64,
        api: api_latency,
        member: member_latency,
        resources: ctx.monitor.finish(window),
    })
}

/// One member: counts its join, then times every stamped message by who sent it.
async fn listen(mut rx: Receiver, heard: Arc<Heard>) {
    let (mut api, mut member) = (Latency::new(), Latency::new());
    loop {
        let text = tokio::select! {
            () = heard.stop.cancelled() => break,
            next = rx.recv() => match next {
                Ok(Some(text)) => text,
                _ => break,
            },
        };
        let now = heard.clock.now_us();
        let Some(stamp) = Stamp::find(&text) else {
            if text.contains(r#""event":"members""#) {
                heard.joined.fetch_add(1, Ordering::Relaxed);
            } else if text.contains(r#""error""#) {
                heard.unexpected.lock().get_or_insert_with(|| excerpt(&text));
            }
            continue;
        };
        let from_api = serde_json::from_str::<Value>(&text).is_ok_and(|v| v["name"] == PUBLISHER);
        let took = now.saturating_sub(stamp.intended_us);
        if from_api { api.record(took) } else { member.record(took) }
        heard.received.fetch_add(1, Ordering::Relaxed);
    }
    heard.api.lock().merge(&api);
    heard.member.lock().merge(&member);
}
