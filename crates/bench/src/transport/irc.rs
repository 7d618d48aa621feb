//! IRC client transport (RFC 1459/2812 over TCP, `irc://host:port` targets). A client
//! registers as plain IRC clients do, with `NICK` and `USER` and no capabilities, so
//! every IRC server is measured the same way; it is connected once the server
//! welcomes it (001). Its application messages are `PRIVMSG`s to the channel
//! `Sender::address` set, and `recv` yields the text of each `PRIVMSG` that comes,
//! passing over every other line.
//!
//! IRC servers end a client that does not answer their `PING`, so the receiving half
//! answers each one as it reads it: both halves share the socket's writing side.
//!
//! Without the IRCv3 `echo-message` capability (which most IRC servers lack) a
//! sender never receives its own message: the scenarios count one delivery fewer per
//! message and measure latency at another member (`Connection::echoes`).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::Mutex;
use wire::irc::Message;

use super::Text;
use crate::{Error, Target};

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 16 * 1024;

/// Longest line taken from a server: 512 bytes and the tags IRCv3 allows before them.
const MAX_LINE: usize = wire::irc::MAX_LINE + wire::irc::MAX_TAGS;

/// Nicknames tried when the first one is taken (433), before giving up.
const NICK_TRIES: u32 = 5;

/// The writing side, shared by both halves (the receiver answers `PING`s).
type Writer = Arc<Mutex<OwnedWriteHalf>>;

pub struct Sender {
    out: Writer,
    place: String,
    /// `PRIVMSG <channel> :`, set by `address`.
    head: Option<String>,
    buf: Vec<u8>,
    nick: String,
}

pub struct Receiver {
    input: OwnedReadHalf,
    out: Writer,
    buf: BytesMut,
    place: String,
}

/// Connects to `target` and registers as client `index`: nickname `b<index>` (with a
/// suffix if it is taken), until the server's welcome.
pub(super) async fn connect(target: &Target, index: u32) -> Result<super::Connection, Error> {
    let place = format!("irc://{}", target.authority());
    let tcp = target.dial().await.map_err(|e| Error::connect(format!("{place}: {e}")))?;
    let (input, output) = tcp.into_split();
    let out = Arc::new(Mutex::new(output));
    let mut tx = Sender { out: out.clone(), place: place.clone(), head: None, buf: Vec::with_capacity(128), nick: format!("b{index}") };
    let mut rx = Receiver { input, out, buf: BytesMut::with_capacity(READ_CHUNK), place };
    register(&mut tx, &mut rx).await?;
    Ok(super::Connection { sender: super::Sender::Irc(tx), receiver: super::Receiver::Irc(rx) })
}

/// `NICK` and `USER`, then lines until 001; a nickname in use is tried again with a suffix.
async fn register(tx: &mut Sender, rx: &mut Receiver) -> Result<(), Error> {
    let base = tx.nick.clone();
    tx.line(&format!("NICK {base}\r\nUSER {base} 0 * :switchboard bench\r\n")).await?;
    let mut tries = 1;
    loop {
        let Some(line) = rx.line().await? else {
            return Err(Error::closed(format!("{}: the server closed the connection during registration", rx.place)));
        };
        let Ok(m) = Message::parse(&line) else { continue };
        match m.command {
            "001" => {
                // The server may have shortened or changed the nickname: take the one it names.
                if let Some(nick) = m.param(0) {
                    tx.nick = nick.to_string();
                }
                return Ok(());
            }
            "433" | "436" if tries < NICK_TRIES => {
                tx.nick = format!("{base}_{tries}");
                tries += 1;
                tx.line(&format!("NICK {}\r\n", tx.nick)).await?;
            }
            "ERROR" => {
                let why = m.params.last().copied().unwrap_or_default();
                return Err(Error::refused(format!("{}: the server refused the registration: ERROR {why}", rx.place)));
            }
            "432" | "433" | "436" | "437" | "461" | "462" | "463" | "464" | "465" => {
                let why = m.params.join(" ");
                return Err(Error::refused(format!("{}: registering as {} was refused: {} {why}", rx.place, tx.nick, m.command)));
            }
            _ => {}
        }
    }
}

/// Joins `channel` and waits for the end of its names list (366): from then on the
/// member is in the channel. Its messages go there.
pub(crate) async fn join(tx: &mut Sender, rx: &mut Receiver, channel: &str) -> Result<(), Error> {
    join_seeing(tx, rx, channel, None).await
}

/// Joins `channel` as `join` does, then waits until the member `other` is seen there:
/// in the names list, or by the `JOIN` the server shows when it comes. A member of
/// another server of the same network shows up once the two servers have exchanged
/// what they hold, so this is also how a client knows the servers are linked.
pub(crate) async fn meet(tx: &mut Sender, rx: &mut Receiver, channel: &str, other: &str) -> Result<(), Error> {
    join_seeing(tx, rx, channel, Some(other)).await
}

/// Reads and passes over what the server sends, answering its `PING`s, until the
/// connection ends (an error): a client that waits on something else stays alive.
pub(crate) async fn idle(rx: &mut Receiver) -> Error {
    loop {
        match rx.line().await {
            Ok(Some(_)) => continue,
            Ok(None) => return Error::closed(format!("{}: the server closed the connection", rx.place)),
            Err(e) => return e,
        }
    }
}

async fn join_seeing(tx: &mut Sender, rx: &mut Receiver, channel: &str, other: Option<&str>) -> Result<(), Error> {
    tx.line(&format!("JOIN {channel}\r\n")).await?;
    let mut listed = false;
    let mut seen = other.is_none();
    while !(listed && seen) {
        let Some(line) = rx.line().await? else {
            let what = if listed { format!("waited for {} in {channel}", other.unwrap_or_default()) } else { format!("joined {channel}") };
            return Err(Error::closed(format!("{}: the server closed the connection while {} {what}", rx.place, tx.nick)));
        };
        let Ok(m) = Message::parse(&line) else { continue };
        let is = |nick: &str| other.is_some_and(|o| o.eq_ignore_ascii_case(nick));
        match m.command {
            "353" if m.param(2).is_some_and(|c| c.eq_ignore_ascii_case(channel)) => {
                // Names, each after its status prefixes (@, +, …).
                let names = m.param(3).unwrap_or_default();
                seen |= names.split(' ').any(|n| is(n.trim_start_matches(['~', '&', '@', '%', '+', '!'])));
            }
            "366" if m.param(1).is_some_and(|c| c.eq_ignore_ascii_case(channel)) => listed = true,
            "JOIN" if m.param(0).is_some_and(|c| c.eq_ignore_ascii_case(channel)) => {
                seen |= m.source.is_some_and(|s| is(s.split('!').next().unwrap_or(s)));
            }
            "403" | "405" | "471" | "473" | "474" | "475" | "476" | "477" if m.param(1).is_some_and(|c| c.eq_ignore_ascii_case(channel)) => {
                let why = m.params.last().copied().unwrap_or_default();
                return Err(Error::refused(format!("{}: {} may not join {channel}: {} {why}", rx.place, tx.nick, m.command)));
            }
            _ => {}
        }
    }
    tx.address(channel);
    Ok(())
}

impl Sender {
    /// Where `send` sends to from now on: a channel (or a nickname).
    pub fn address(&mut self, to: &str) {
        self.head = Some(format!("PRIVMSG {to} :"));
    }

    /// The nickname the server knows this client by.
    pub fn nick(&self) -> &str {
        &self.nick
    }

    /// One application message as a `PRIVMSG` to the addressed channel. The text must
    /// fit one line and hold no CR, LF or NUL (a stamp does).
    pub async fn send(&mut self, text: &str) -> Result<(), Error> {
        let Some(head) = &self.head else {
            return Err(Error::usage(format!("{}: an IRC client sends to a channel it joined; this one joined none", self.place)));
        };
        if text.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(Error::usage("an IRC message cannot hold CR, LF or NUL"));
        }
        self.buf.clear();
        self.buf.extend_from_slice(head.as_bytes());
        self.buf.extend_from_slice(text.as_bytes());
        self.buf.extend_from_slice(b"\r\n");
        let mut out = self.out.lock().await;
        out.write_all(&self.buf).await.map_err(|e| Error::closed(format!("{}: send failed: {e}", self.place)))
    }

    /// Writes `lines` (each ending in CR LF) as they are.
    pub async fn line(&mut self, lines: &str) -> Result<(), Error> {
        let mut out = self.out.lock().await;
        out.write_all(lines.as_bytes()).await.map_err(|e| Error::closed(format!("{}: send failed: {e}", self.place)))
    }

    /// `QUIT`, then closes the writing side (best effort).
    pub async fn close(&mut self) {
        let mut out = self.out.lock().await;
        let _ = out.write_all(b"QUIT :bench done\r\n").await;
        let _ = out.shutdown().await;
    }
}

impl Receiver {
    /// The next line the server sent, without its CR LF, answering a `PING` on the
    /// way; `None` once the server closed the connection.
    pub async fn line(&mut self) -> Result<Option<Bytes>, Error> {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let mut line = self.buf.split_to(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                let line = line.freeze();
                if let Some(token) = ping(&line) {
                    let pong = format!("PONG :{token}\r\n");
                    let mut out = self.out.lock().await;
                    out.write_all(pong.as_bytes()).await.map_err(|e| Error::closed(format!("{}: answering PING failed: {e}", self.place)))?;
                    continue;
                }
                return Ok(Some(line));
            }
            if self.buf.len() > MAX_LINE {
                return Err(Error::unexpected(format!("{}: the server sent a line longer than {MAX_LINE} bytes", self.place)));
            }
            self.buf.reserve(READ_CHUNK);
            let n = self.input.read_buf(&mut self.buf).await.map_err(|e| Error::closed(format!("{}: read failed: {e}", self.place)))?;
            if n == 0 {
                return Ok(None);
            }
        }
    }

    /// The text of the next `PRIVMSG`; `None` once the server closed the connection. An
    /// `ERROR` line ends the connection with the server's reason.
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        loop {
            let Some(line) = self.line().await? else { return Ok(None) };
            match privmsg_text(&line) {
                Some(at) => {
                    let text = line.slice(at..);
                    return Text::try_from(text).map(Some).map_err(|_| Error::unexpected(format!("{}: a PRIVMSG that is not UTF-8", self.place)));
                }
                None if line.starts_with(b"ERROR ") => {
                    let why = String::from_utf8_lossy(&line[6..]).trim_start_matches(':').to_string();
                    return Err(Error::closed(format!("{}: the server ended the connection: {why}", self.place)));
                }
                None => continue,
            }
        }
    }

    /// The host and port, for messages.
    pub fn place(&self) -> &str {
        &self.place
    }
}

/// The token of a `PING` line (`PING :token`, `PING token`, with or without a source).
fn ping(line: &[u8]) -> Option<&str> {
    let token = line[command_at(line)..].strip_prefix(b"PING ")?;
    let token = token.strip_prefix(b":").unwrap_or(token);
    std::str::from_utf8(token).ok()
}

/// Where a server's line's command starts, past its tags and its source.
/// Read by hand on the bytes: the receivers of a broadcast read a million
/// lines a second, and `Message::parse` makes a vector of every line's
/// parameters.
fn command_at(line: &[u8]) -> usize {
    let mut at = 0;
    for mark in [b'@', b':'] {
        if line.get(at) == Some(&mark) {
            at = line[at..].iter().position(|&b| b == b' ').map_or(line.len(), |p| at + p + 1);
        }
    }
    at
}

/// Where the text of a `PRIVMSG` line starts, if it is one: after `PRIVMSG <to> :`.
fn privmsg_text(line: &[u8]) -> Option<usize> {
    let rest = line[command_at(line)..].strip_prefix(b"PRIVMSG ")?;
    let after_target = rest.iter().position(|&b| b == b' ')? + 1;
    let text = rest.get(after_target..)?;
    let colon = usize::from(text.first() == Some(&b':'));
    Some(line.len() - text.len() + colon)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privmsg_text_is_found_with_and_without_a_source() {
        fn at(l: &str) -> Option<&str> {
            privmsg_text(l.as_bytes()).map(|i| &l[i..])
        }
        assert_eq!(at(":b1!b1@127.0.0.1 PRIVMSG #bench :hello there"), Some("hello there"));
        assert_eq!(at("@time=2026-11-28T00:00:00.000Z :b1 PRIVMSG #bench :x"), Some("x"));
        assert_eq!(at(":b1 PRIVMSG #bench word"), Some("word"));
        assert_eq!(at(":b1 PRIVMSG #bench :"), Some(""));
        assert_eq!(at(":b1 NOTICE #bench :hello"), None);
        assert_eq!(at(":server 001 b1 :Welcome"), None);
        assert_eq!(at(":b1 PRIVMSG"), None);
    }

    #[test]
    fn pings_name_their_token() {
        assert_eq!(ping(b"PING :irc.localhost"), Some("irc.localhost"));
        assert_eq!(ping(b"PING 12345"), Some("12345"));
        assert_eq!(ping(b":irc.localhost PING :abc"), Some("abc"));
        assert_eq!(ping(b":irc.localhost PONG :abc"), None);
    }
}
