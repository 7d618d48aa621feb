//! SockJS frames, the unit every transport carries: `o` (open), `h`
//! (heartbeat), `a[...]` (a batch of messages) and `c[code,"reason"]`
//! (close). The server builds them from messages it has already quoted once
//! (so a batch is a cheap join); the bench parses them back.

use bytes::BufMut;

use super::json::{self, JsonError, Reader};

/// The open frame, sent once when a session starts.
pub const OPEN: &[u8] = b"o";

/// The heartbeat frame, sent when nothing else has been for a while
/// (sockjs-node: every 25 s) so proxies keep the connection.
pub const HEARTBEAT: &[u8] = b"h";

/// Close sent to a second receiving request on a session that already has
/// one; the protocol suite expects exactly this code and reason.
pub const ANOTHER_CONNECTION_STILL_OPEN: (u16, &str) = (2010, "Another connection still open");

/// Close for a WebSocket client whose message is not valid SockJS JSON;
/// sockjs-node closes the socket with this code and reason.
pub const BROKEN_FRAMING: (u16, &str) = (3000, "Broken framing.");

/// Appends an `a[...]` frame joining messages that are each already a
/// quoted JSON string (from [`quote`](super::quote)). No escaping happens
/// here: the hub quotes a published message once and every batch that
/// carries it only copies those bytes.
pub fn encode_messages<I>(quoted: I, out: &mut (impl BufMut + ?Sized))
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    out.put_slice(b"a[");
    for (i, m) in quoted.into_iter().enumerate() {
        let m = m.as_ref();
        debug_assert!(
            m.first() == Some(&b'"'),
            "encode_messages wants quoted strings"
        );
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(m);
    }
    out.put_u8(b']');
}

/// Appends an `a[...]` frame for plain strings, quoting each: for one-off
/// frames (an echo reply) where there is nothing to share.
pub fn encode_strings<I>(messages: I, out: &mut (impl BufMut + ?Sized))
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    out.put_slice(b"a[");
    for (i, m) in messages.into_iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        json::quote_into(m.as_ref(), out);
    }
    out.put_u8(b']');
}

/// Appends `c[code,"reason"]`. sockjs-node writes the reason with plain
/// `JSON.stringify`; this quotes it like a message, which is the same bytes
/// for any ASCII reason and safer for the rest.
pub fn encode_close(code: u16, reason: &str, out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(b"c[");
    let mut digits = [0u8; 5];
    let mut n = code;
    let mut i = digits.len();
    loop {
        i -= 1;
        // `n % 10` < 10, so the cast cannot truncate.
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&digits[i..]);
    out.put_u8(b',');
    json::quote_into(reason, out);
    out.put_u8(b']');
}

/// A frame as the server sent it, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// `o`: the session is open.
    Open,
    /// `h`: nothing to say. A run of `h` (the xhr_streaming prelude) also
    /// reads as one heartbeat, as sockjs-client treats it.
    Heartbeat,
    /// `a[...]`, or the obsolete single-message `m"..."`.
    Messages(Vec<String>),
    /// `c[code,"reason"]`: the server closed the session.
    Close {
        /// SockJS close code (e.g. 3000, 2010).
        code: u16,
        /// A short text for people.
        reason: String,
    },
}

impl Frame {
    /// Appends this frame's bytes, as a server would send it.
    pub fn encode(&self, out: &mut (impl BufMut + ?Sized)) {
        match self {
            Frame::Open => out.put_slice(OPEN),
            Frame::Heartbeat => out.put_slice(HEARTBEAT),
            Frame::Messages(messages) => encode_strings(messages, out),
            Frame::Close { code, reason } => encode_close(*code, reason, out),
        }
    }
}

/// Why a frame could not be parsed. A cheap value; the bench counts these
/// as protocol errors of the server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame was empty.
    #[error("empty SockJS frame")]
    Empty,
    /// The first byte is not one of `o h a m c`.
    #[error("unknown SockJS frame type {0:?}")]
    UnknownType(u8),
    /// The type is known but what follows is not what it needs.
    #[error("malformed SockJS {0:?} frame")]
    Malformed(char),
}

/// Parses one frame (no transport wrapping: what a WebSocket message holds,
/// or what a [`Splitter`](super::Splitter) yields).
pub fn parse_frame(frame: &[u8]) -> Result<Frame, FrameError> {
    let Some((&kind, body)) = frame.split_first() else {
        return Err(FrameError::Empty);
    };
    let malformed = |_: JsonError| FrameError::Malformed(char::from(kind));
    match kind {
        b'o' if body.is_empty() => Ok(Frame::Open),
        b'h' if body.iter().all(|&b| b == b'h') => Ok(Frame::Heartbeat),
        b'a' => {
            let mut r = Reader::new(body);
            let mut messages = Vec::new();
            r.string_array(&mut messages).map_err(malformed)?;
            r.end().map_err(malformed)?;
            Ok(Frame::Messages(messages))
        }
        b'm' => Ok(Frame::Messages(vec![
            json::parse_string(body).map_err(malformed)?,
        ])),
        b'c' => {
            let mut r = Reader::new(body);
            r.expect(b'[').map_err(malformed)?;
            let code = r.u16().map_err(malformed)?;
            r.expect(b',').map_err(malformed)?;
            let reason = r.string().map_err(malformed)?;
            r.expect(b']').map_err(malformed)?;
            r.end().map_err(malformed)?;
            Ok(Frame::Close { code, reason })
        }
        b'o' | b'h' => Err(FrameError::Malformed(char::from(kind))),
        _ => Err(FrameError::UnknownType(kind)),
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use super::*;
    use crate::sockjs::quote;

    #[test]
    fn message_batch_joins_quoted_strings() {
        let cached = [quote("a"), quote("b\"c"), quote("\u{2028}")];
        let mut out = BytesMut::new();
        encode_messages(&cached, &mut out);
        assert_eq!(&out[..], br#"a["a","b\"c","\u2028"]"#);

        out.clear();
        encode_messages(cached.iter().take(1), &mut out);
        assert_eq!(&out[..], br#"a["a"]"#);

        out.clear();
        encode_messages(std::iter::empty::<&[u8]>(), &mut out);
        assert_eq!(&out[..], b"a[]");

        let mut v = Vec::new();
        encode_strings(["x", "y"], &mut v);
        assert_eq!(v, br#"a["x","y"]"#);
    }

    #[test]
    fn close_frame_bytes() {
        let mut out = Vec::new();
        encode_close(3000, "Go away!", &mut out);
        assert_eq!(out, br#"c[3000,"Go away!"]"#);
        out.clear();
        let (code, reason) = ANOTHER_CONNECTION_STILL_OPEN;
        encode_close(code, reason, &mut out);
        assert_eq!(out, br#"c[2010,"Another connection still open"]"#);
        for (code, text) in [(0, "c[0,\"\"]"), (7, "c[7,\"\"]"), (65535, "c[65535,\"\"]")] {
            out.clear();
            encode_close(code, "", &mut out);
            assert_eq!(out, text.as_bytes());
        }
    }

    #[test]
    fn parses_every_frame_type() {
        assert_eq!(parse_frame(b"o"), Ok(Frame::Open));
        assert_eq!(parse_frame(b"h"), Ok(Frame::Heartbeat));
        assert_eq!(parse_frame(&[b'h'; 2048]), Ok(Frame::Heartbeat));
        assert_eq!(parse_frame(b"a[]"), Ok(Frame::Messages(vec![])));
        assert_eq!(
            parse_frame(br#"a["x", "y\u2028"]"#),
            Ok(Frame::Messages(vec!["x".into(), "y\u{2028}".into()]))
        );
        assert_eq!(
            parse_frame(br#"m"x""#),
            Ok(Frame::Messages(vec!["x".into()]))
        );
        assert_eq!(
            parse_frame(br#"c[3000,"Go away!"]"#),
            Ok(Frame::Close {
                code: 3000,
                reason: "Go away!".into()
            })
        );
    }

    #[test]
    fn rejects_malformed_frames() {
        assert_eq!(parse_frame(b""), Err(FrameError::Empty));
        assert_eq!(parse_frame(b"x"), Err(FrameError::UnknownType(b'x')));
        for (bad, kind) in [
            (&b"ox"[..], 'o'),
            (b"hx", 'h'),
            (b"a", 'a'),
            (b"a[", 'a'),
            (b"a[1]", 'a'),
            (b"a[\"x\"]x", 'a'),
            (b"m", 'm'),
            (b"c[]", 'c'),
            (b"c[3000]", 'c'),
            (b"c[70000,\"x\"]", 'c'),
            (b"c[03,\"x\"]", 'c'),
            (b"c[-1,\"x\"]", 'c'),
            (b"c[3000,\"x\",1]", 'c'),
        ] {
            assert_eq!(
                parse_frame(bad),
                Err(FrameError::Malformed(kind)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn encode_then_parse_is_identity() {
        for frame in [
            Frame::Open,
            Frame::Heartbeat,
            Frame::Messages(vec![]),
            Frame::Messages(vec!["".into(), "a\"\\\n😀\u{ffff}".into()]),
            Frame::Close {
                code: 1002,
                reason: "Connection interrupted".into(),
            },
        ] {
            let mut out = Vec::new();
            frame.encode(&mut out);
            assert_eq!(parse_frame(&out), Ok(frame));
        }
    }
}
