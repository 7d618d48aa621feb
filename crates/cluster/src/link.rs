//! The link between nodes without NATS: one TCP connection from a node to
//! the node that hosts its rooms (`--broker node://HOST:PORT` to a node
//! with `--broker-listen`), deflated each way for its whole life
//! (`base::deflated`), carrying one JSON object a line. Frames a node
//! writes in one go are one compressed flush, so what repeats from one
//! event to the next (the room, the names, the keys) costs a few bytes
//! after the first time. Every node of a cluster must run the same
//! encoding; these tests fix it to the byte.
//!
//! A node says `hello`, and the host answers `welcome` with the history
//! its rooms' positions count in. A node `follow`s a room while it has
//! members there: the host answers `followed` with what the room keeps
//! and the names held on other nodes, then sends each `event` of the room
//! in the room's one order. Names are claimed (`claim`, answered by
//! `claimed`) and let go (`release`) at the host; a node's messages go to
//! the host (`publish`, or `keep` for one kept in the room's history),
//! which sends them to the other nodes as events and answers the node with
//! `own` at the message's place in the room's order, with its position. `ask` and `answer` list rooms and their members;
//! `disconnect` and `disconnected` close a user's clients on the other end;
//! `deliver` and `delivered` carry a protocol's message to its clients
//! there.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::deflated::Deflated;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hub::{Payload, Position, RoomEvent};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;

use crate::envelope::Event;

/// One line of the link, either way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "lowercase")]
pub enum Frame {
    /// A node to its host, first: who it is.
    Hello { node: Arc<str> },
    /// The host's answer: who it is, and the history its positions count in.
    Welcome { node: Arc<str>, epoch: Arc<str> },
    /// A node has members in `room` of app `app` (its mount prefix).
    Follow { app: Arc<str>, room: Arc<str> },
    /// It no longer has.
    Unfollow { app: Arc<str>, room: Arc<str> },
    /// What the room keeps, and who is in it on other nodes than the one
    /// that follows it; the room's events follow.
    Followed {
        app: Arc<str>,
        room: Arc<str>,
        #[serde(default, skip_serializing_if = "is_zero")]
        last: u64,
        #[serde(default, skip_serializing_if = "is_zero")]
        trimmed: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        history: Vec<Item>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        names: Vec<Name>,
        /// The room's topic: the last topic event, with when it was set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic: Option<Item>,
    },
    /// A name for a member of `room`: `key` is its comparison form.
    Claim { id: u64, app: Arc<str>, room: Arc<str>, key: Arc<str>, name: Arc<str>, speaks: Arc<str> },
    /// Whether the claim `id` was granted.
    Claimed { id: u64, ok: bool },
    /// A name claimed is let go.
    Release { app: Arc<str>, room: Arc<str>, key: Arc<str> },
    /// A message or event for every member of the room; with `others`,
    /// for every member on the other nodes only (a node back after its
    /// link broke tells them of its members, whom its own never saw leave).
    /// Unless `others`, the host answers with `own` where the room's order
    /// puts it.
    Publish {
        app: Arc<str>,
        room: Arc<str>,
        item: Item,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        others: bool,
    },
    /// A message for every member, kept in the room's history; answered
    /// with `own`.
    Keep { app: Arc<str>, room: Arc<str>, item: Item },
    /// The node's oldest `publish` or `keep` not yet answered, at its place
    /// in the room's order: the node gives it to its members now (the host
    /// does not send the node back what it sent). The host answers a link's
    /// frames in the order it sent them. To a node that does not follow
    /// the room, the host says the message's position, if kept.
    Own {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
    },
    /// An event of a room a node follows; with `keep`, kept in the room's
    /// history, at the position after the last one kept (every node sees
    /// every event of the rooms it follows, so it counts them as the host
    /// does). A member's arrival or departure names the node it is on.
    Event {
        app: Arc<str>,
        room: Arc<str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<Arc<str>>,
        item: Item,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        keep: bool,
    },
    /// A question to the host: the rooms of `app` (no `room`), or the
    /// members of `room`, at most `max`.
    Ask { id: u64, app: Arc<str>, room: Option<Arc<str>>, max: usize },
    /// The answer: members (the room's, or one a room with its size in `max`).
    Answer { id: u64, names: Vec<Name> },
    /// Close the clients of the user `name`, telling them `reason`.
    Disconnect { id: u64, name: Arc<str>, reason: Arc<str> },
    /// How many were closed.
    Disconnected { id: u64, count: usize },
    /// A protocol's `body` for the clients `to`, to each node that holds
    /// some; `id` 0 when no answer is wanted.
    Deliver {
        #[serde(default, skip_serializing_if = "is_zero")]
        id: u64,
        to: Vec<Arc<str>>,
        body: Arc<str>,
    },
    /// How many clients a delivery reached.
    Delivered { id: u64, count: usize },
}

/// A member on some node: its shown name, the protocol it speaks (`app`,
/// `xmpp` or `irc`) and the node. In a room list, `name` is a room and
/// `count` its members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Name {
    pub name: Arc<str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaks: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
}

impl Name {
    /// A member named `name` who speaks `speaks`, on `node`.
    pub fn member(name: Arc<str>, speaks: Arc<str>, node: Arc<str>) -> Name {
        Name { name, speaks: Some(speaks), node: Some(node), count: None }
    }
}

/// A payload on the link: an app's text or binary data (base64), or a
/// room event with its archive id and client tags, and in a room's history
/// as `followed` sends it, its position there and when it was sent
/// (milliseconds since 1970).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "lowercase")]
pub enum Item {
    Text { text: Arc<str> },
    Binary { data: String },
    Event {
        e: Event,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Arc<str>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tags: Option<Arc<str>>,
        /// The account its sender is logged in to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        account: Option<Arc<str>>,
        /// Where its sender cut lines without a line break (`3,17`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cuts: Option<Arc<str>>,
        /// Its sender is a bot.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        bot: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
    },
}

impl Item {
    /// `payload` on the link; `kept`, with its position and when it was
    /// sent (as a room's history is sent).
    pub fn of(payload: &Payload, kept: bool) -> Item {
        match payload.as_event() {
            Some((_, event)) => Item::Event {
                e: Event::from(event.clone()),
                id: payload.id().map(Arc::from),
                tags: payload.client_tags().map(Arc::from),
                account: payload.account().map(Arc::from),
                cuts: (!payload.cuts().is_empty()).then(|| Arc::from(crate::envelope::cuts_text(payload.cuts()))),
                bot: payload.bot(),
                at: kept.then(|| millis(payload.at())),
                offset: payload.position().filter(|_| kept).map(|p| p.offset),
            },
            None => match payload.ws_message() {
                Message::Binary(data) => Item::Binary { data: STANDARD.encode(&data) },
                message => Item::Text { text: Arc::from(message.to_text().unwrap_or_default()) },
            },
        }
    }

    /// The payload of `room` this stands for, its position counted in
    /// `epoch`; `None` for binary data that is not base64. Its archive id,
    /// if any, is observed (`base::archive::observe_id`): later ids here
    /// rise above it.
    pub fn payload(self, room: &Arc<str>, epoch: &Arc<str>) -> Option<Payload> {
        match self {
            Item::Text { text } => Some(Payload::new(Utf8Bytes::from(&*text))),
            Item::Binary { data } => STANDARD.decode(data).ok().map(|data| Payload::binary(Bytes::from(data))),
            Item::Event { e, id, tags, account, cuts, bot, at, offset } => {
                if let Some(id) = &id {
                    base::archive::observe_id(id);
                }
                let at = at.map_or_else(SystemTime::now, |ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms));
                let payload = Payload::archived(room.clone(), RoomEvent::from(e), at, id).with_client_tags(tags).with_account(account).with_cuts(cuts.map(|c| crate::envelope::cuts_of(&c))).with_bot(bot);
                if let Some(offset) = offset {
                    payload.place(Position { offset, epoch: epoch.clone() });
                }
                Some(payload)
            }
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long a host asked by one node to disconnect a user waits for its
/// other nodes' answers before it answers: less than the asking node waits.
pub const DISCONNECT_PATIENCE: Duration = Duration::from_secs(1);

/// How long a host asked by one node to deliver waits for its other
/// nodes' answers before it answers with what it has: half of what a
/// protocol's sender waits (XMPP's, 1 s), so that what the host and the
/// nodes that answered took is counted.
pub const DELIVER_PATIENCE: Duration = Duration::from_millis(500);

/// The line of a delivery of `body` for `to` that wants no answer, unless
/// the frame, with the longest id an answer could need, is longer than a
/// link takes (a warning is logged).
pub fn delivery_line(to: &[Arc<str>], body: &Arc<str>, limits: Limits) -> Option<Arc<str>> {
    let line = line(&Frame::Deliver { id: 0, to: to.to_vec(), body: body.clone() });
    // `"id":` and 20 digits and a comma, where an answer is wanted.
    if line.len() + 26 > limits.max_line {
        tracing::warn!("broker: a delivery longer than a link takes ({} bytes) is not sent", body.len());
        return None;
    }
    Some(line)
}

/// A new random name, for a node or a history: 32 bits, plenty for the
/// nodes of one host, and 8 bytes each time the link names it.
pub fn new_node() -> Arc<str> {
    Arc::from(format!("{:08x}", rand::random::<u32>()))
}

/// The bounds of a link, each way.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest line (one frame) taken, in bytes.
    pub max_line: usize,
    /// Most frames waiting to be written; a link further behind ends.
    pub queue: usize,
}

impl Limits {
    /// Lines long enough for a message of `max_message_size` bytes, as
    /// JSON escapes it (at most six bytes a byte), and the room's name and
    /// the rest of a frame.
    pub fn for_messages(max_message_size: usize, queue: usize) -> Limits {
        Limits { max_line: max_message_size.saturating_mul(6).saturating_add(64 * 1024), queue }
    }
}

/// Idle time before TCP asks whether the other end is still there, the
/// time between asks, and how many go unanswered before the link is taken
/// for broken: a host or node gone without a word is found within a
/// minute and a half.
const KEEPALIVE: (Duration, Duration, u32) = (Duration::from_secs(60), Duration::from_secs(10), 3);

/// Readies a link's TCP connection: each frame sent at once, and TCP's
/// keep-alive, which is all that beats on a quiet link.
pub fn tune(socket: &tokio::net::TcpStream) {
    let _ = socket.set_nodelay(true);
    let (idle, interval, retries) = KEEPALIVE;
    let keepalive = socket2::TcpKeepalive::new().with_time(idle).with_interval(interval).with_retries(retries);
    if let Err(e) = socket2::SockRef::from(socket).set_tcp_keepalive(&keepalive) {
        tracing::warn!("broker: no TCP keep-alive on a link: {e}");
    }
}

/// A link's socket, as each end reads and writes it.
pub type Socket = Pin<Box<dyn Io>>;

/// A byte stream either way.
pub trait Io: AsyncRead + AsyncWrite + Send {}
impl<T: AsyncRead + AsyncWrite + Send> Io for T {}

/// Why a link ended.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the other end closed the link")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("a line was not a frame: {0}")]
    Frame(#[from] serde_json::Error),
    #[error("a line over {0} bytes")]
    TooLong(usize),
    #[error("more than {0} frames waited to be sent")]
    Behind(usize),
}

/// One end of a link: frames to send go into `sender`, frames read come
/// out of `frames`.
pub struct Ends {
    pub sender: Sender,
    pub frames: Frames,
}

/// Frames read from the other end.
pub type Frames = FramedRead<tokio::io::ReadHalf<Deflated<Socket>>, LinesCodec>;

/// A frame as its line (without the line end): what a host sends every
/// node that follows a room is made once.
pub fn line(frame: &Frame) -> Arc<str> {
    Arc::from(serde_json::to_string(frame).unwrap_or_default())
}

/// Where frames for the other end go: a bounded queue of their lines,
/// written by one task in as few flushes as it can. A full queue ends the
/// link: the other end reads too slowly to be kept current.
#[derive(Debug, Clone)]
pub struct Sender {
    queue: mpsc::Sender<Arc<str>>,
    /// Cancelled when the queue overflows, or the writer stops.
    ended: CancellationToken,
}

impl Sender {
    /// Queues `frame`; `Err` once the link has ended or is too far behind
    /// (which ends it).
    pub fn send(&self, frame: Frame) -> Result<(), LinkError> {
        self.send_line(line(&frame))
    }

    /// Queues a frame's [`line`], as [`Sender::send`] queues a frame.
    pub fn send_line(&self, line: Arc<str>) -> Result<(), LinkError> {
        self.queue.try_send(line).map_err(|e| {
            self.ended.cancel();
            match e {
                mpsc::error::TrySendError::Full(_) => LinkError::Behind(self.queue.max_capacity()),
                mpsc::error::TrySendError::Closed(_) => LinkError::Closed,
            }
        })
    }

    /// Resolves once the link can send no more.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }
}

/// Opens the link's ends over `socket`, within `limits`.
pub fn open(socket: Socket, limits: Limits) -> Ends {
    let (read, write) = tokio::io::split(Deflated::new(socket));
    let frames = FramedRead::new(read, LinesCodec::new_with_max_length(limits.max_line));
    let (tx, rx) = mpsc::channel(limits.queue.max(1));
    let ended = CancellationToken::new();
    tokio::spawn(write_frames(rx, FramedWrite::new(write, LinesCodec::new()), ended.clone()));
    Ends { sender: Sender { queue: tx, ended }, frames }
}

/// The next frame from the other end.
pub async fn next(frames: &mut Frames) -> Result<Frame, LinkError> {
    match frames.next().await {
        Some(Ok(line)) => Ok(serde_json::from_str(&line)?),
        Some(Err(LinesCodecError::MaxLineLengthExceeded)) => Err(LinkError::TooLong(frames.decoder().max_length())),
        Some(Err(LinesCodecError::Io(e))) => Err(LinkError::Io(e)),
        None => Err(LinkError::Closed),
    }
}

/// Most frames written in one flush.
const BATCH: usize = 256;

async fn write_frames(queue: mpsc::Receiver<Arc<str>>, out: FramedWrite<tokio::io::WriteHalf<Deflated<Socket>>, LinesCodec>, ended: CancellationToken) {
    tokio::select! {
        () = write_all(queue, out) => {},
        () = ended.cancelled() => {},
    }
    ended.cancel();
}

async fn write_all(mut queue: mpsc::Receiver<Arc<str>>, mut out: FramedWrite<tokio::io::WriteHalf<Deflated<Socket>>, LinesCodec>) {
    while let Some(first) = queue.recv().await {
        let mut line = Some(first);
        let mut written = 0;
        while let Some(l) = line.take() {
            if out.feed(l).await.is_err() {
                return;
            }
            written += 1;
            if written < BATCH {
                line = queue.try_recv().ok();
            }
        }
        // One flush: one compressed block, one write, for all of them.
        if SinkExt::<Arc<str>>::flush(&mut out).await.is_err() {
            return;
        }
    }
    let _ = SinkExt::<Arc<str>>::close(&mut out).await;
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[test]
    fn frames_are_one_json_object_a_line() {
        let cases = [
            (Frame::Hello { node: "b".into() }, r#"{"t":"hello","node":"b"}"#),
            (Frame::Followed { app: "chat".into(), room: "lobby".into(), last: 0, trimmed: 0, history: vec![], names: vec![], topic: None }, r#"{"t":"followed","app":"chat","room":"lobby"}"#),
            (
                Frame::Followed {
                    app: "chat".into(),
                    room: "lobby".into(),
                    last: 0,
                    trimmed: 0,
                    history: vec![],
                    names: vec![],
                    topic: Some(Item::Event { e: Event::Topic { name: "al".into(), text: "plans".into() }, id: None, tags: None, account: None, cuts: None, bot: false, at: Some(1_700_000_000_000), offset: None }),
                },
                r#"{"t":"followed","app":"chat","room":"lobby","topic":{"k":"event","e":{"event":"topic","name":"al","text":"plans"},"at":1700000000000}}"#,
            ),
            (Frame::Follow { app: "chat".into(), room: "lobby".into() }, r#"{"t":"follow","app":"chat","room":"lobby"}"#),
            (
                Frame::Claim { id: 7, app: "chat".into(), room: "lobby".into(), key: "bob".into(), name: "Bob".into(), speaks: "irc".into() },
                r#"{"t":"claim","id":7,"app":"chat","room":"lobby","key":"bob","name":"Bob","speaks":"irc"}"#,
            ),
            (Frame::Claimed { id: 7, ok: false }, r#"{"t":"claimed","id":7,"ok":false}"#),
            (
                Frame::Event {
                    app: "chat".into(),
                    room: "lobby".into(),
                    node: None,
                    item: Item::Event { e: Event::Message { name: "al".into(), text: "hi".into() }, id: Some("01".into()), tags: None, account: Some("al".into()), cuts: Some("2".into()), bot: true, at: None, offset: None },
                    keep: true,
                },
                r#"{"t":"event","app":"chat","room":"lobby","item":{"k":"event","e":{"event":"message","name":"al","text":"hi"},"id":"01","account":"al","cuts":"2","bot":true},"keep":true}"#,
            ),
            (
                Frame::Event { app: "chat".into(), room: "lobby".into(), node: Some("a".into()), item: Item::Event { e: Event::Join { name: "al".into(), old_name: None }, id: None, tags: None, account: None, cuts: None, bot: false, at: None, offset: None }, keep: false },
                r#"{"t":"event","app":"chat","room":"lobby","node":"a","item":{"k":"event","e":{"event":"join","name":"al"}}}"#,
            ),
            (Frame::Own { offset: None }, r#"{"t":"own"}"#),
            (Frame::Own { offset: Some(7) }, r#"{"t":"own","offset":7}"#),
            (
                Frame::Publish { app: "echo".into(), room: "r".into(), item: Item::Binary { data: "AP8=".into() }, others: false },
                r#"{"t":"publish","app":"echo","room":"r","item":{"k":"binary","data":"AP8="}}"#,
            ),
            (
                Frame::Answer { id: 1, names: vec![Name { name: "lobby".into(), speaks: None, node: None, count: Some(3) }] },
                r#"{"t":"answer","id":1,"names":[{"name":"lobby","count":3}]}"#,
            ),
            (
                Frame::Deliver { id: 0, to: vec!["b@x".into()], body: "<message to='b@x'/>".into() },
                r#"{"t":"deliver","to":["b@x"],"body":"<message to='b@x'/>"}"#,
            ),
            (Frame::Deliver { id: 3, to: vec![], body: "".into() }, r#"{"t":"deliver","id":3,"to":[],"body":""}"#),
            (Frame::Delivered { id: 3, count: 2 }, r#"{"t":"delivered","id":3,"count":2}"#),
        ];
        for (frame, line) in cases {
            assert_eq!(serde_json::to_string(&frame).unwrap(), line);
            assert_eq!(serde_json::from_str::<Frame>(line).unwrap(), frame);
        }
    }

    #[test]
    fn an_archive_id_from_the_host_holds_later_ids_here_above_it() {
        let _alone = crate::envelope::tests::STAMPING.lock();
        let (room, epoch): (Arc<str>, Arc<str>) = (Arc::from("lobby"), Arc::from("e1"));
        let theirs = crate::envelope::tests::an_id_ahead();
        let item = Item::Event { e: Event::Message { name: "al".into(), text: "hi".into() }, id: Some(Arc::from(theirs.as_str())), tags: None, account: None, cuts: None, bot: false, at: None, offset: None };
        item.payload(&room, &epoch).unwrap();
        let (_, ours) = base::archive::next_id();
        assert!(ours > theirs, "{ours} after {theirs}");
    }

    #[test]
    fn a_payload_crosses_as_it_was() {
        let room: Arc<str> = Arc::from("lobby");
        let epoch: Arc<str> = Arc::from("e1");
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_800_000_000_123);
        let kept = Payload::archived(room.clone(), RoomEvent::Message { name: "al".into(), text: "hi".into() }, at, Some("01".into())).with_client_tags(Some("+typing=active".into()))
            .with_account(Some("al".into()))
            .with_cuts(Some(Arc::from([1u32])))
            .with_bot(true);
        kept.place(Position { offset: 4, epoch: epoch.clone() });
        for payload in [kept, Payload::from("plain"), Payload::binary(vec![0u8, 255])] {
            let back = Item::of(&payload, true).payload(&room, &epoch).unwrap();
            assert_eq!(back.ws_message(), payload.ws_message());
            assert_eq!((back.id(), back.client_tags(), back.account(), back.cuts(), back.bot()), (payload.id(), payload.client_tags(), payload.account(), payload.cuts(), payload.bot()));
            if payload.as_event().is_some() {
                assert_eq!(back.at(), at);
                assert_eq!(back.position(), Some(&Position { offset: 4, epoch: epoch.clone() }), "its place, in the host's history");
            }
        }
    }

    #[tokio::test]
    async fn frames_sent_together_go_in_one_compressed_flush_and_repeats_cost_little() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let a = open(Box::pin(a), Limits { max_line: 1 << 16, queue: 64 });
        let mut b = Box::pin(b);
        let event = |text: &str, offset: u64| Frame::Event {
            app: "chat".into(),
            room: "lobby".into(),
            node: None,
            item: Item::Event { e: Event::Message { name: "alice".into(), text: text.into() }, id: Some(offset.to_string().into()), tags: None, account: None, cuts: None, bot: false, at: None, offset: None },
            keep: true,
        };
        let mut raw = vec![0u8; 4096];
        a.sender.send(event("x1", 1)).unwrap();
        let first = b.read(&mut raw).await.unwrap();
        a.sender.send(event("y2", 2)).unwrap();
        let second = b.read(&mut raw).await.unwrap();
        let line = serde_json::to_string(&event("y2", 2)).unwrap().len();
        assert!(second < 20 && first > second, "{line} bytes of JSON: {first} on the wire, then {second}");
    }

    #[tokio::test]
    async fn a_line_too_long_ends_the_link_with_an_error() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let a = open(Box::pin(a), Limits { max_line: 1 << 16, queue: 64 });
        let mut b = open(Box::pin(b), Limits { max_line: 64, queue: 64 });
        a.sender.send(Frame::Hello { node: Arc::from("n".repeat(100)) }).unwrap();
        assert!(matches!(next(&mut b.frames).await, Err(LinkError::TooLong(_))));
        a.sender.send(Frame::Hello { node: "n".into() }).unwrap();
        let (c, d) = tokio::io::duplex(1 << 16);
        drop(c);
        let mut d = open(Box::pin(d), Limits { max_line: 64, queue: 64 });
        assert!(matches!(next(&mut d.frames).await, Err(LinkError::Closed)));
        let _ = b;
    }
}
