//! BOSH (XEP-0124) carrying XMPP (XEP-0206) at `/http-bind`: XMPP for
//! clients that can only make HTTP requests. The codec is `wire::bosh`;
//! the XMPP session is the server's like any other, fed stanza by stanza
//! through `xmpp::bridge`; the session registry and reaper are the ones
//! SockJS uses (`transport::http_session`).
//!
//! A session lives across requests, each a `<body/>` with the next `rid`:
//! - a request without `sid` creates one, and its answer carries the
//!   session's terms (`sid`, `wait`, `hold`, `requests`, `inactivity`) and
//!   the stream features;
//! - each request hands its stanzas to the XMPP session in `rid` order (one
//!   that comes early within the window waits for those before it) and is
//!   then held until there is something to send, or `wait` has passed. A
//!   newer request takes over from a held one, which is answered at once
//!   (`hold` is 1), so the server always has a request to answer with;
//! - what arrives while no request is held waits in the session's outbox;
//!   the last answers are kept, so a client that asks again with the same
//!   `rid` (its answer was lost) gets the same answer: nothing is lost
//!   between requests;
//! - `xmpp:restart` restarts the stream after SASL, and `type='terminate'`
//!   ends the session. The server ends one with the condition XEP-0124
//!   names: `item-not-found` for an unknown `sid` or a `rid` outside the
//!   window, `bad-request` for a body that is not one, `host-unknown`,
//!   `remote-stream-error` (with the stream error in the body),
//!   `system-shutdown`, `policy-violation` for a slow consumer.
//!
//! A session with no request for `--bosh-inactivity` expires. Browsers on
//! other origins may use it (CORS, any origin: BOSH carries no cookie).

use std::collections::VecDeque;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;

use base::http::{Body, BodyError, bytes_response};
use base::{Connection, Context};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use wire::bosh::{Body as Wrapper, Condition, VERSION};
use wire::xmpp::{Element, Limits};

use super::{FRAMING_CLOSE, FRAMING_NS, Framing, Xmpp};
use transport::http_session::{self, Attach, HttpSession, Refusal, Registry, Step};


/// Where BOSH is served.
pub const PATH: &str = "/http-bind";

/// Requests held at once: one, so that the client always has one more to
/// send with (`requests` is `hold` + 1).
const HOLD: u64 = 1;

/// How many full-size stanzas a request's body may be, as a SockJS send.
const BODY_LIMIT_IN_MESSAGES: usize = 8;

/// The BOSH service of a server with XMPP on: the XMPP service its
/// sessions are of, its sessions and its terms.
#[derive(Debug)]
pub struct Bosh {
    xmpp: Arc<Xmpp>,
    sessions: Arc<Registry<Window>>,
    settings: Settings,
}

/// BOSH's settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Most sessions at once (`--bosh-max-sessions`).
    pub max_sessions: usize,
    /// Most sessions of one client address (`--bosh-max-sessions-per-address`).
    pub per_address: usize,
    /// Longest a request is held (`--bosh-wait`).
    pub wait: Duration,
    /// How long a session lives with no request (`--bosh-inactivity`).
    pub inactivity: Duration,
}

impl Bosh {
    /// The BOSH service of `xmpp`.
    pub fn new(xmpp: Arc<Xmpp>, settings: Settings) -> Bosh {
        Bosh { xmpp, sessions: Arc::new(Registry::new(16, settings.max_sessions).shared(settings.per_address)), settings }
    }

    fn context(&self) -> &Context {
        &self.xmpp.context
    }
}

/// What BOSH keeps about a session: its terms and where its requests are.
#[derive(Debug)]
pub struct Window {
    /// Longest a request is held.
    wait: Duration,
    /// Requests held at once: 0 (the client polls) or 1.
    hold: u64,
    /// Whether the client asked for acknowledgements (`ack='1'`).
    acks: bool,
    /// Whether the client predates `ver` (XEP-0124 1.6): it is told of
    /// errors by HTTP status.
    legacy: bool,
    rids: Mutex<Rids>,
    /// Signalled when a request has been handled, for one that came early.
    turn: Notify,
}

#[derive(Debug)]
struct Rids {
    /// The `rid` of the next request to hand its stanzas over.
    next: u64,
    /// The last answers, oldest first, for a client that asks again.
    answers: VecDeque<(u64, Bytes)>,
}

impl Window {
    /// Requests a client may have open at once.
    fn requests(&self) -> u64 {
        self.hold + 1
    }

    /// Keeps the answer to `rid`, forgetting those the window has passed.
    fn remember(&self, rid: u64, answer: Bytes) {
        let mut rids = self.rids.lock();
        rids.answers.retain(|(r, _)| *r != rid);
        rids.answers.push_back((rid, answer));
        while rids.answers.len() as u64 > self.requests() {
            rids.answers.pop_front();
        }
    }

    /// Forgets the answers the client says it has (`ack`).
    fn acknowledged(&self, ack: u64) {
        self.rids.lock().answers.retain(|(r, _)| *r > ack);
    }
}

/// Where a request stands in its session's `rid` order.
enum Turn {
    /// It is the next one: hand its stanzas over.
    Now,
    /// It was answered already: answer the same again.
    Again(Bytes),
    /// It was handled and is still held (the client gave up on it and asks
    /// again): hold this one instead.
    Held,
    /// Outside the window, or the gap before it never filled.
    Lost,
}

/// The largest `rid` XEP-0124 allows (2^53 - 1).
const MAX_RID: u64 = (1 << 53) - 1;

/// Waits, for at most `wait`, until `rid` is the next request of `window`.
async fn turn(window: &Window, rid: u64, wait: Duration) -> Turn {
    let deadline = Instant::now() + wait;
    loop {
        let mut handled = pin!(window.turn.notified());
        handled.as_mut().enable();
        {
            let rids = window.rids.lock();
            if rid == rids.next {
                return Turn::Now;
            }
            if rid < rids.next {
                if let Some((_, answer)) = rids.answers.iter().find(|(r, _)| *r == rid) {
                    return Turn::Again(answer.clone());
                }
                return if rid + window.requests() >= rids.next { Turn::Held } else { Turn::Lost };
            }
            if rid >= rids.next + window.requests() {
                return Turn::Lost;
            }
        }
        // It came before one it follows: that one may still arrive.
        if tokio::time::timeout_at(deadline, handled).await.is_err() {
            return Turn::Lost;
        }
    }
}

/// Handles a request to [`PATH`].
pub async fn handle(req: Request<Incoming>, service: &Bosh, connection: &Connection) -> Response<Body> {
    let context = service.context();
    match *req.method() {
        Method::POST => {}
        Method::OPTIONS => return preflight(),
        _ => {
            let mut res = bytes_response(StatusCode::METHOD_NOT_ALLOWED, "text/plain; charset=UTF-8", "BOSH (XEP-0206): POST a <body/> here.\n");
            res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
            return answer(res);
        }
    }
    let limit = context.bounds.max_message_size.saturating_mul(BODY_LIMIT_IN_MESSAGES);
    let bytes = match base::http::read_body(req.into_body(), limit, context.bounds.idle_timeout).await {
        Ok(bytes) => bytes,
        Err(BodyError::TooLarge) => return terminate(StatusCode::PAYLOAD_TOO_LARGE, Condition::PolicyViolation),
        Err(BodyError::TimedOut) => {
            context.metrics.refused("xmpp", "body_timeout");
            return base::http::body_timeout(terminate(StatusCode::BAD_REQUEST, Condition::PolicyViolation));
        }
        // The client went away mid-body; nobody reads this answer.
        Err(BodyError::Broken) => return terminate(StatusCode::BAD_REQUEST, Condition::BadRequest),
    };
    let limits = Limits { max_stanza_bytes: context.bounds.max_message_size, ..Limits::default() };
    let Ok(body) = Wrapper::parse(&bytes, limits) else {
        return terminate(StatusCode::BAD_REQUEST, Condition::BadRequest);
    };
    let Ok(Some(rid)) = body.number("rid") else {
        return terminate(StatusCode::BAD_REQUEST, Condition::BadRequest);
    };
    match body.get("sid") {
        None => create(service, connection, body, rid).await,
        Some(sid) => match service.sessions.get(sid) {
            Some(session) => carry(service, &session, body, rid).await,
            None => terminate(StatusCode::OK, Condition::ItemNotFound),
        },
    }
}

/// A session creation request.
async fn create(service: &Bosh, connection: &Connection, body: Wrapper, rid: u64) -> Response<Body> {
    let context = service.context();
    let domain = &service.xmpp.domain;
    // XEP-0124 §14: rids stay within 2^53 - 1 as they count up, so one
    // beyond it cannot start a session (and could never wrap one).
    if rid > MAX_RID {
        return terminate(StatusCode::OK, Condition::BadRequest);
    }
    match body.get("to") {
        Some(to) if to.eq_ignore_ascii_case(domain) => {}
        Some(_) => return terminate(StatusCode::OK, Condition::HostUnknown),
        None => return terminate(StatusCode::OK, Condition::BadRequest),
    }
    let (Ok(wait), Ok(hold)) = (body.number("wait"), body.number("hold")) else {
        return terminate(StatusCode::OK, Condition::BadRequest);
    };
    if service.sessions.is_full() {
        context.metrics.refused("xmpp", "max_sessions");
        return refuse(StatusCode::SERVICE_UNAVAILABLE, "5");
    }
    if !context.session_rates.admit(connection.address) {
        context.metrics.refused("xmpp", "session_rate");
        return refuse(StatusCode::TOO_MANY_REQUESTS, "1");
    }
    let settings = &service.settings;
    let window = Window {
        wait: wait.map_or(settings.wait, |w| Duration::from_secs(w).min(settings.wait)),
        hold: hold.unwrap_or(HOLD).min(HOLD),
        acks: body.get("ack") == Some("1"),
        legacy: body.get("ver").is_none(),
        rids: Mutex::new(Rids { next: rid, answers: VecDeque::new() }),
        turn: Notify::new(),
    };
    let ver = body.get("ver").map(|v| older(v, VERSION).to_owned());
    let terms = [
        ("wait", window.wait.as_secs().to_string()),
        ("hold", window.hold.to_string()),
        ("requests", window.requests().to_string()),
        ("inactivity", settings.inactivity.as_secs().to_string()),
        ("polling", "1".to_owned()),
    ];
    let id = format!("{:032x}", rand::random::<u128>());
    let opened = service.sessions.get_or_open(&id, connection.address, |id| {
        let outbox = Arc::new(hub::Outbox::new(context.bounds.queue_limit));
        let client = super::bridge::open(service.xmpp.clone(), outbox, Framing::Bosh, connection.address);
        HttpSession::new(id, client, context.metrics.client("xmpp", "bosh"), service.xmpp.inflow.clone(), window)
    });
    let session = match opened {
        Ok((session, true)) => session,
        Err(Refusal::AddressFull) => {
            context.metrics.refused("xmpp", "address_sessions");
            return refuse(StatusCode::TOO_MANY_REQUESTS, "5");
        }
        // (A 128-bit random id already taken would be someone else's session.)
        Ok((_, false)) | Err(Refusal::Full) => return refuse(StatusCode::SERVICE_UNAVAILABLE, "5"),
    };
    context.tracker.spawn(http_session::reap(service.sessions.clone(), session.clone(), settings.inactivity, context.shutdown.clone()));
    let mut created = Wrapper::new().attr("sid", session.id()).attr("from", domain);
    for (name, value) in terms {
        created = created.attr(name, value);
    }
    if let Some(ver) = ver {
        created = created.attr("ver", ver);
    }
    if session.transport.acks {
        created = created.attr("ack", rid);
    }
    created = created.attr("secure", "true").attr("xmpp:version", "1.0").attr("xmpp:restartlogic", "true");
    exchange(service, &session, vec![open(domain)], rid, created).await
}

/// A request of a session that exists.
async fn carry(service: &Bosh, session: &Arc<HttpSession<Window>>, body: Wrapper, rid: u64) -> Response<Body> {
    let window = &session.transport;
    if let Ok(Some(ack)) = body.number("ack") {
        window.acknowledged(ack);
    }
    let mut messages = Vec::new();
    match turn(window, rid, window.wait).await {
        Turn::Now => {
            if body.get("xmpp:restart") == Some("true") {
                messages.push(open(&service.xmpp.domain));
            }
            messages.extend(body.stanzas.iter().map(Element::to_xml_standalone));
            if body.is_terminate() {
                messages.push(FRAMING_CLOSE.to_owned());
            }
        }
        Turn::Again(answer) => return xml(answer),
        Turn::Held => return exchange(service, session, Vec::new(), rid, Wrapper::new()).await,
        Turn::Lost => {
            session.outbox().close(hub::Close::new(1008, "a request outside the window"));
            return terminate(status(window, Condition::ItemNotFound), Condition::ItemNotFound);
        }
    }
    if body.is_terminate() {
        session.deliver(messages, service.context().bounds.max_message_size);
        handled(window, rid);
        service.sessions.remove(session);
        return xml(Bytes::from(Wrapper::new().attr("type", "terminate").to_xml()));
    }
    exchange(service, session, messages, rid, Wrapper::new()).await
}

/// Hands `messages` to the session as request `rid`, then holds the
/// request until there is something to send (or `wait` passes), and
/// answers with `head`'s attributes around it.
async fn exchange(
    service: &Bosh,
    session: &Arc<HttpSession<Window>>,
    messages: Vec<String>,
    rid: u64,
    mut head: Wrapper,
) -> Response<Body> {
    let window = &session.transport;
    let until = (!messages.is_empty()).then(|| session.deliver(messages, service.context().bounds.max_message_size)).flatten();
    let highest = handled(window, rid);
    if let Some(until) = until {
        // Over its rate: the answer waits, and with it the client's next request.
        tokio::time::sleep_until(until).await;
    }
    // The newest request is the one held; an older one that comes back
    // after it takes what is queued, if no request is held, and goes.
    let newest = rid >= highest;
    let mut stanzas = Vec::new();
    let close = match session.attach(newest) {
        Attach::Receiver(mut receiver) => {
            let hold_for = if window.hold == 0 || !newest { Duration::ZERO } else { window.wait };
            let close = match receiver.next(hold_for).await {
                Step::Messages(batch) => {
                    stanzas.extend(batch.iter().map(|p| p.as_text().unwrap_or_default().to_owned()));
                    receiver.take_close()
                }
                Step::Idle | Step::Displaced => None,
                Step::Close(close) => Some(close),
            };
            receiver.finish();
            close
        }
        Attach::Busy => None,
        // It expired since it was looked up.
        Attach::Expired => return terminate(StatusCode::OK, Condition::ItemNotFound),
    };
    if window.acks && highest > rid {
        head = head.attr("ack", highest);
    }
    let mut code = StatusCode::OK;
    if let Some(close) = close {
        head = head.attr("type", "terminate");
        if let Some(condition) = condition_of(&close) {
            head = head.attr("condition", condition.as_str());
            code = status(window, condition);
        }
        service.sessions.remove(session);
    }
    let mut out = String::new();
    head.write_around(stanzas.iter().map(String::as_str), &mut out);
    let answer = Bytes::from(out);
    window.remember(rid, answer.clone());
    let mut res = xml(answer);
    *res.status_mut() = code;
    res
}

/// Marks `rid` handled, if it is the next, and lets a request that came
/// early go on; returns the highest `rid` handled.
fn handled(window: &Window, rid: u64) -> u64 {
    let mut rids = window.rids.lock();
    if rid == rids.next {
        rids.next += 1;
        drop(rids);
        window.turn.notify_waiters();
        return rid;
    }
    rids.next - 1
}

/// What the client's `<open/>` would be: how BOSH's creation and restart
/// requests reach the XMPP session.
fn open(domain: &str) -> String {
    let mut out = String::new();
    Element::new("open", FRAMING_NS).attr("to", domain).attr("version", "1.0").write("", &mut out);
    out
}

/// The condition a closed session ends with; none when the client ended it.
fn condition_of(close: &hub::Close) -> Option<Condition> {
    Some(match (close.code, &*close.reason) {
        // The XMPP stream ended (`xmpp::bridge::ended`): the reason is its
        // stream error's condition, if it had one.
        (1000, "") => return None,
        (1000, "system-shutdown") | (1001, _) => Condition::SystemShutdown,
        (1000, _) => Condition::RemoteStreamError,
        (1008 | 1009, _) => Condition::PolicyViolation,
        _ => Condition::UndefinedCondition,
    })
}

/// The HTTP status of an answer with `condition`: 200 for a client that
/// knows terminal conditions, the codes XEP-0124 §17 gives for a legacy one.
fn status(window: &Window, condition: Condition) -> StatusCode {
    match condition {
        Condition::BadRequest if window.legacy => StatusCode::BAD_REQUEST,
        Condition::ItemNotFound if window.legacy => StatusCode::NOT_FOUND,
        Condition::PolicyViolation if window.legacy => StatusCode::FORBIDDEN,
        _ => StatusCode::OK,
    }
}

/// The lower of two versions, `major.minor`.
fn older<'a>(a: &'a str, b: &'a str) -> &'a str {
    let parse = |v: &str| v.split_once('.').and_then(|(major, minor)| Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?)));
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) if x < y => a,
        _ => b,
    }
}

/// A terminating body with `condition`.
fn terminate(status: StatusCode, condition: Condition) -> Response<Body> {
    let mut res = xml(Bytes::from(condition.body().to_xml()));
    *res.status_mut() = status;
    res
}

/// A refused session creation, with when to try again.
fn refuse(status: StatusCode, retry: &'static str) -> Response<Body> {
    let condition = if status == StatusCode::TOO_MANY_REQUESTS { Condition::PolicyViolation } else { Condition::UndefinedCondition };
    let mut res = terminate(status, condition);
    res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(retry));
    res
}

/// An XML answer.
fn xml(body: Bytes) -> Response<Body> {
    answer(bytes_response(StatusCode::OK, "text/xml; charset=utf-8", body))
}

/// Any answer, made usable from other origins.
fn answer(mut res: Response<Body>) -> Response<Body> {
    let headers = res.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The answer to a CORS preflight.
fn preflight() -> Response<Body> {
    let mut res = answer(Response::new(base::http::empty()));
    let headers = res.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("POST, OPTIONS"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("Content-Type"));
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("86400"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_meet_at_the_older() {
        assert_eq!(older("1.6", VERSION), "1.6");
        assert_eq!(older("1.11", VERSION), "1.11");
        assert_eq!(older("2.0", VERSION), VERSION);
        assert_eq!(older("junk", VERSION), VERSION);
    }

    #[test]
    fn the_xmpp_session_opens_as_over_websocket() {
        assert_eq!(open("localhost"), "<open xmlns=\"urn:ietf:params:xml:ns:xmpp-framing\" to=\"localhost\" version=\"1.0\"/>");
    }

    #[test]
    fn how_a_closed_session_ends() {
        let of = |code, reason: &'static str| condition_of(&hub::Close::new(code, reason)).map(Condition::as_str);
        assert_eq!(of(1000, ""), None);
        assert_eq!(of(1000, "not-authorized"), Some("remote-stream-error"));
        assert_eq!(of(1000, "system-shutdown"), Some("system-shutdown"));
        assert_eq!(of(1001, "going away"), Some("system-shutdown"));
        assert_eq!(of(1008, "slow consumer"), Some("policy-violation"));
    }

    fn window(hold: u64) -> Window {
        Window {
            wait: Duration::from_secs(60),
            hold,
            acks: true,
            legacy: false,
            rids: Mutex::new(Rids { next: 10, answers: VecDeque::new() }),
            turn: Notify::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_take_their_turn_in_rid_order() {
        let w = Arc::new(window(1));
        assert!(matches!(turn(&w, 10, w.wait).await, Turn::Now));
        assert!(matches!(turn(&w, 12, w.wait).await, Turn::Lost), "past the window of two");
        assert!(matches!(turn(&w, 9, w.wait).await, Turn::Held));
        assert!(matches!(turn(&w, 7, w.wait).await, Turn::Lost), "long gone");
        // 11 comes before 10 is handled: it waits for it.
        let early = tokio::spawn({
            let w = w.clone();
            async move { matches!(turn(&w, 11, w.wait).await, Turn::Now) }
        });
        tokio::task::yield_now().await;
        assert!(!early.is_finished());
        assert_eq!(handled(&w, 10), 10);
        assert!(early.await.unwrap());
        // Asked again, a request answered is answered the same.
        w.remember(10, Bytes::from_static(b"<body/>"));
        assert!(matches!(turn(&w, 10, w.wait).await, Turn::Again(a) if a == "<body/>"));
        w.acknowledged(10);
        assert!(matches!(turn(&w, 10, w.wait).await, Turn::Held));
    }

    #[tokio::test(start_paused = true)]
    async fn a_gap_that_never_fills_loses_the_request() {
        let w = window(1);
        assert!(matches!(turn(&w, 11, Duration::from_secs(5)).await, Turn::Lost));
    }

    #[test]
    fn only_the_last_answers_are_kept() {
        let w = window(1);
        for rid in 10..15 {
            w.remember(rid, Bytes::from(rid.to_string()));
        }
        let kept: Vec<u64> = w.rids.lock().answers.iter().map(|(r, _)| *r).collect();
        assert_eq!(kept, [13, 14]);
    }
}
