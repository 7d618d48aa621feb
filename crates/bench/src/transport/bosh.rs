//! The BOSH carrier of an XMPP session (XEP-0124, XEP-0206), on the shared codec
//! `wire::bosh`. A task of its own owns the BOSH session (its `sid`, the next `rid`, the
//! HTTP connections its requests go on), so that the XMPP session above sends and
//! receives stanzas as it does over any other transport.
//!
//! The task keeps a request held at the server at all times (`hold` 1), so that the
//! server answers as soon as it has a stanza for the client. Stanzas to send go at once
//! in a request of their own while fewer than `requests` are open, and otherwise wait
//! and go together in the next one. Each request carries the next `rid`, whichever
//! connection it goes on.
//!
//! Requests leave in `rid` order: a request is written out on its connection before the
//! next is handed to another (`Session::send`), and answers are taken in the same order
//! (XEP-0124 §10). A server may still take two requests sent close together in the
//! other order, one handler a connection: ejabberd 23.01 does, sets aside the one that
//! came early and takes it up only when it answers its predecessor with a payload, so an
//! empty request held there, overtaken by the next one (the client's stanza), leaves that
//! stanza aside for good. So when an answer leaves no request open, what the session
//! above says in reply goes in the next request (`react`), as a browser's BOSH client
//! sends what its page's handlers said, instead of in one of its own right behind an
//! empty one.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::FuturesOrdered;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use wire::bosh::{Body, VERSION};
use wire::xmpp::{Element, Limits};

use crate::{Error, Target};

/// Requests the client asks the server to hold at once.
const HOLD: u64 = 1;

/// Stanzas received ahead of the session above, before the task waits (as SockJS's).
const RECEIVE_QUEUE: usize = 4096;

/// Stanzas waiting to be sent before a sender waits.
const SEND_QUEUE: usize = 4096;

/// Longest the task waits for the answer to its `type='terminate'`.
const TERMINATE_WAIT: Duration = Duration::from_secs(2);

/// Longest the task waits, after an answer that left no request open, for the session
/// above to react to its stanzas before it sends an empty request (`react`): a session
/// that reads or writes ends the wait at once; one that does neither (between its login
/// and its scenario's start) still gets a request held at the server.
const REACTION_WAIT: Duration = Duration::from_millis(20);

/// What the XMPP session asks of its BOSH session.
enum Command {
    /// A stanza, serialised standing alone.
    Stanza(String),
    /// `xmpp:restart='true'`, after SASL.
    Restart,
    /// `type='terminate'`: the end.
    Terminate,
}

/// The sending half: hands stanzas and the stream's restart and end to the task.
pub(super) struct Sender {
    commands: mpsc::Sender<Command>,
    place: String,
}

/// The receiving half: the stanzas of the server's answers, in order.
pub(super) struct Receiver {
    stanzas: mpsc::Receiver<Result<Element, Error>>,
    /// Stanzas taken so far.
    taken: u64,
    /// `taken`, told to the task each time the session asks for more and none is left.
    caught_up: watch::Sender<u64>,
}

/// Opens the first HTTP connection to `<target><path>` and starts the task, which
/// creates the session with `to` = `domain`, asking for `wait` seconds at most.
pub(super) async fn connect(target: &Target, path: &str, domain: &str, wait: u64) -> Result<(Sender, Receiver), Error> {
    let first = open(target).await?;
    let place = format!("http://{}{path}", target.authority());
    let (commands, commands_rx) = mpsc::channel(SEND_QUEUE);
    let (stanzas_tx, stanzas) = mpsc::channel(RECEIVE_QUEUE);
    let (caught_up, taken) = watch::channel(0);
    let session = Session {
        target: target.clone(),
        path: path.to_string(),
        place: place.clone(),
        sid: String::new(),
        rid: u64::from(rand::random::<u32>()) + 1,
        requests: 1,
        idle: VecDeque::from([first]),
    };
    tokio::spawn(run(session, domain.to_string(), wait, commands_rx, Delivery { stanzas: stanzas_tx, delivered: 0, taken }));
    Ok((Sender { commands, place }, Receiver { stanzas, taken: 0, caught_up }))
}

impl Sender {
    pub(super) async fn send(&mut self, stanza: &str) -> Result<(), Error> {
        self.command(Command::Stanza(stanza.to_string())).await
    }

    pub(super) async fn restart(&mut self) -> Result<(), Error> {
        self.command(Command::Restart).await
    }

    /// Ends the session (best effort).
    pub(super) async fn terminate(&mut self) {
        let _ = self.command(Command::Terminate).await;
    }

    async fn command(&mut self, command: Command) -> Result<(), Error> {
        self.commands.send(command).await.map_err(|_| Error::closed(format!("{}: the BOSH session has ended", self.place)))
    }
}

impl Receiver {
    /// The next stanza; `None` once the session has ended.
    pub(super) async fn recv(&mut self) -> Result<Option<Element>, Error> {
        if self.stanzas.is_empty() {
            self.caught_up.send_replace(self.taken);
        }
        let next = self.stanzas.recv().await.transpose();
        self.taken += 1;
        next
    }
}

/// The task's state.
struct Session {
    target: Target,
    path: String,
    place: String,
    sid: String,
    /// The `rid` of the next request (`take_rid`).
    rid: u64,
    /// Requests the server lets the client have open at once.
    requests: usize,
    /// Keep-alive connections with no request on them, the longest idle first.
    idle: VecDeque<Conn>,
}

/// One keep-alive HTTP/1.1 connection of the session, and the count of the times it has
/// flushed what it wrote (`Flushes`): a request handed to it has been written out once
/// the count moves on.
struct Conn {
    send: SendRequest<Full<Bytes>>,
    flushed: watch::Receiver<u64>,
}

/// An answer, and the connection it came on when that may carry another request.
type Answered = (Option<Conn>, Result<Body, Error>);

/// Where the task hands stanzas to the session above, and how far that has read them.
struct Delivery {
    stanzas: mpsc::Sender<Result<Element, Error>>,
    /// Stanzas handed on so far.
    delivered: u64,
    /// `Receiver::taken` when the session last asked for more with none left.
    taken: watch::Receiver<u64>,
}

async fn run(mut session: Session, domain: String, wait: u64, mut commands: mpsc::Receiver<Command>, mut delivery: Delivery) {
    if let Err(e) = drive(&mut session, &domain, wait, &mut commands, &mut delivery).await {
        let _ = delivery.stanzas.send(Err(e)).await;
    }
}

/// Creates the session, then keeps requests going until the XMPP session ends it or
/// goes away, or the server ends it.
async fn drive(
    s: &mut Session,
    domain: &str,
    wait: u64,
    commands: &mut mpsc::Receiver<Command>,
    delivery: &mut Delivery,
) -> Result<(), Error> {
    let rid = s.take_rid();
    let (conn, answer) = s.send(creation(rid, domain, wait).to_xml()).await?.await;
    let answer = answer?;
    s.idle.extend(conn);
    if answer.is_terminate() {
        // Refused: the error names the condition.
        return deliver(s, answer, delivery).await;
    }
    s.sid = answer
        .get("sid")
        .ok_or_else(|| Error::unexpected(format!("{}: the session's creation was answered without a sid", s.place)))?
        .to_string();
    s.requests = answer.number("requests").ok().flatten().map_or(2, |n| n.max(1) as usize);
    let mut carried = !answer.stanzas.is_empty();
    deliver(s, answer, delivery).await?;
    let mut queue: Vec<String> = Vec::new();
    let mut restart = false;
    // The answers to come, in rid order.
    let mut open = FuturesOrdered::new();
    loop {
        if std::mem::take(&mut carried) && open.is_empty() && !react(commands, delivery, &mut queue, &mut restart).await {
            return s.terminate(queue).await;
        }
        // Send what is waiting while the server takes more requests, and keep one held.
        while open.len() < s.requests && (!queue.is_empty() || restart || open.is_empty()) {
            let mut text = String::new();
            next(s.take_rid(), &s.sid, restart.then_some(domain)).write_around(queue.iter().map(String::as_str), &mut text);
            restart = false;
            queue.clear();
            open.push_back(s.send(text).await?);
        }
        tokio::select! {
            command = commands.recv() => if !take(command, &mut queue, &mut restart) {
                return s.terminate(queue).await;
            },
            () = delivery.stanzas.closed() => return s.terminate(queue).await,
            Some((conn, answer)) = open.next() => {
                s.idle.extend(conn);
                let answer = answer?;
                carried = !answer.stanzas.is_empty();
                deliver(s, answer, delivery).await?;
            }
        }
    }
}

/// Adds what the session above asked for to the next request; `false` once it is to end.
fn take(command: Option<Command>, queue: &mut Vec<String>, restart: &mut bool) -> bool {
    match command {
        Some(Command::Stanza(stanza)) => queue.push(stanza),
        Some(Command::Restart) => *restart = true,
        Some(Command::Terminate) | None => return false,
    }
    true
}

/// After an answer whose stanzas left no request open, waits for the session above to
/// react to them: until it sends something, or asks for more with none left to take, or
/// `REACTION_WAIT` has passed; then adds all it has sent so far to the next request.
/// `false` once it is to end.
async fn react(commands: &mut mpsc::Receiver<Command>, delivery: &mut Delivery, queue: &mut Vec<String>, restart: &mut bool) -> bool {
    let delivered = delivery.delivered;
    let first = tokio::select! {
        command = commands.recv() => Some(command),
        _ = delivery.taken.wait_for(|&taken| taken >= delivered) => None,
        () = tokio::time::sleep(REACTION_WAIT) => None,
    };
    if let Some(command) = first
        && !take(command, queue, restart)
    {
        return false;
    }
    loop {
        match commands.try_recv() {
            Ok(command) => {
                if !take(Some(command), queue, restart) {
                    return false;
                }
            }
            Err(mpsc::error::TryRecvError::Empty) => return true,
            Err(mpsc::error::TryRecvError::Disconnected) => return false,
        }
    }
}

/// The request that creates a session (XEP-0206 §5).
fn creation(rid: u64, domain: &str, wait: u64) -> Body {
    Body::new()
        .attr("content", "text/xml; charset=utf-8")
        .attr("hold", HOLD)
        .attr("rid", rid)
        .attr("to", domain)
        .attr("ver", VERSION)
        .attr("wait", wait)
        .attr("xml:lang", "en")
        .attr("xmpp:version", "1.0")
}

/// The head of the session's next request; with a domain, the one that restarts the
/// stream after SASL (XEP-0206 §7).
fn next(rid: u64, sid: &str, restart: Option<&str>) -> Body {
    let head = Body::new().attr("rid", rid).attr("sid", sid);
    match restart {
        Some(domain) => head.attr("to", domain).attr("xml:lang", "en").attr("xmpp:restart", "true"),
        None => head,
    }
}

/// Hands the stanzas of an answer on; an answer that ends the session is an error
/// naming its condition (after its stanzas, which may say more: a stream error).
async fn deliver(s: &Session, answer: Body, delivery: &mut Delivery) -> Result<(), Error> {
    let terminated = answer.is_terminate();
    let condition = answer.get("condition").unwrap_or("no condition").to_string();
    for stanza in answer.stanzas {
        if delivery.stanzas.send(Ok(stanza)).await.is_err() {
            return Ok(());
        }
        delivery.delivered += 1;
    }
    if terminated {
        let hint = if condition == "host-unknown" { ": is --xmpp-domain right?" } else { "" };
        return Err(Error::refused(format!("{} ended the BOSH session with {condition}{hint}", s.place)));
    }
    Ok(())
}

impl Session {
    /// The `rid` of a new request: each request has its own, one above the last.
    fn take_rid(&mut self) -> u64 {
        self.rid += 1;
        self.rid - 1
    }

    /// Posts one body on an idle connection the server has not closed, or on a new one,
    /// and returns once it has been written out, so that no later request can overtake
    /// it; what it returns reads the answer. An idle connection is ready at once, or as
    /// soon as its task has finished with its last answer; a new one takes a connect.
    ///
    /// The connection idle longest goes first: the server may still be finishing with the
    /// one answered last (ejabberd's handler writes the answer, then reads again), and a
    /// request on it could then reach the session after the next request, sent on the other.
    async fn send(&mut self, body: String) -> Result<BoxFuture<'static, Answered>, Error> {
        let mut conn = None;
        while let Some(mut c) = self.idle.pop_front() {
            if c.send.ready().await.is_ok() {
                conn = Some(c);
                break;
            }
        }
        let mut conn = match conn {
            Some(c) => c,
            None => open(&self.target).await?,
        };
        let request = hyper::Request::post(self.path.as_str())
            .header(hyper::header::HOST, self.target.authority())
            .header(hyper::header::CONTENT_TYPE, "text/xml; charset=utf-8")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Error::usage(format!("{}: {e}", self.place)))?;
        conn.flushed.mark_unchanged();
        // hyper queues the request on the connection now; its task writes it out.
        let response = conn.send.send_request(request);
        // An error ends the connection, and the answer says what it was.
        let _ = conn.flushed.changed().await;
        let place = self.place.clone();
        Ok(Box::pin(async move { answer(conn, response, &place).await }))
    }

    /// Sends what is queued with `type='terminate'` and waits a little for the answer.
    async fn terminate(&mut self, queue: Vec<String>) -> Result<(), Error> {
        let mut text = String::new();
        next(self.take_rid(), &self.sid, None).attr("type", "terminate").write_around(queue.iter().map(String::as_str), &mut text);
        let _ = tokio::time::timeout(TERMINATE_WAIT, async {
            if let Ok(answer) = self.send(text).await {
                let _ = answer.await;
            }
        })
        .await;
        Ok(())
    }
}

/// Opens a keep-alive connection to the target for the session's requests.
async fn open(target: &Target) -> Result<Conn, Error> {
    let stream = target.dial().await.map_err(|e| Error::connect(format!("{}: {e}", target.as_str())))?;
    let (flushes, flushed) = watch::channel(0);
    let send = super::http::over(target, Flushes { stream, wrote: false, flushes }).await?;
    Ok(Conn { send, flushed })
}

/// Reads the answer to the request written out on `conn`.
async fn answer(
    conn: Conn,
    response: impl Future<Output = hyper::Result<hyper::Response<hyper::body::Incoming>>>,
    place: &str,
) -> Answered {
    let response = match response.await {
        Ok(r) => r,
        Err(e) => return (None, Err(Error::closed(format!("{place}: {e}")))),
    };
    let status = response.status();
    let bytes = match response.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return (None, Err(Error::closed(format!("{place}: {e}")))),
    };
    let answer = if status == hyper::StatusCode::NOT_FOUND {
        Err(Error::not_found(format!("{place} answered 404 Not Found (is BOSH there? --bosh-path)")))
    } else if !status.is_success() {
        Err(Error::unexpected(format!("{place} answered HTTP {status}: {}", String::from_utf8_lossy(&bytes[..bytes.len().min(120)]))))
    } else {
        Body::parse(&bytes, Limits::default()).map_err(|e| Error::unexpected(format!("{place}: the answer is not a BOSH body: {e}")))
    };
    (Some(conn), answer)
}

/// A connection's stream that counts the flushes that follow writes: hyper flushes once
/// it has written out all it buffered, so a request is on its way once the count moves.
struct Flushes {
    stream: TcpStream,
    /// Whether bytes were written since the last flush.
    wrote: bool,
    flushes: watch::Sender<u64>,
}

impl Flushes {
    fn wrote(&mut self, written: &Poll<std::io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.wrote = true;
        }
    }
}

impl AsyncRead for Flushes {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Flushes {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.wrote(&written);
        written
    }

    fn poll_write_vectored(self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.wrote(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.stream).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) && std::mem::take(&mut this.wrote) {
            this.flushes.send_modify(|n| *n += 1);
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_to_the_byte() {
        assert_eq!(
            creation(7, "localhost", 60).to_xml(),
            "<body xmlns='http://jabber.org/protocol/httpbind' xmlns:xmpp='urn:xmpp:xbosh' content='text/xml; charset=utf-8' hold='1' \
             rid='7' to='localhost' ver='1.11' wait='60' xml:lang='en' xmpp:version='1.0'/>"
        );
        assert_eq!(
            next(8, "s1", Some("localhost")).to_xml(),
            "<body xmlns='http://jabber.org/protocol/httpbind' xmlns:xmpp='urn:xmpp:xbosh' rid='8' sid='s1' to='localhost' xml:lang='en' \
             xmpp:restart='true'/>"
        );
        let mut with_stanza = String::new();
        next(9, "s1", None).write_around(["<presence xmlns=\"jabber:client\"/>"].into_iter(), &mut with_stanza);
        assert_eq!(with_stanza, "<body xmlns='http://jabber.org/protocol/httpbind' rid='9' sid='s1'><presence xmlns=\"jabber:client\"/></body>");
    }
}
