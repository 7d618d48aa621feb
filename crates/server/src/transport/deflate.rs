//! permessage-deflate (RFC 7692) on the native WebSocket endpoints: the
//! negotiation, the server's compression of outgoing messages, and
//! [`Inflating`], which inflates the client's compressed messages under
//! tungstenite (which has no extension support and rejects RSV1).
//!
//! The server always answers with `server_no_context_takeover`: each message
//! it sends is compressed on its own, so the compressed bytes of a message do
//! not depend on the connection, and a broadcast is compressed once and the
//! same frame is shared by every member that agreed the same window
//! ([`hub::Payload::deflated`]).
//!
//! [`Inflating`] sits on the read side, below [`super::utf8_watch`], and
//! rewrites the client's byte stream: a compressed message becomes an
//! uncompressed one, sent on as fragments (an empty first frame, a
//! continuation per inflated chunk, an empty final one) masked with a zero
//! key; every other frame passes untouched. tungstenite then checks,
//! reassembles and limits the inflated message as any other, so a message
//! that inflates past `--max-message-size` is closed with 1009 as it grows,
//! with at most one chunk held here.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use hyper::header::{HeaderMap, HeaderValue, SEC_WEBSOCKET_EXTENSIONS};
use tokio::io::{AsyncRead, ReadBuf};

use crate::transport::frame_header::{FrameHeader, put_header};

/// Messages shorter than this go uncompressed: deflate's block header and
/// Huffman tables make short texts longer, and RFC 7692 lets each message
/// choose.
pub const COMPRESS_FROM: usize = 64;

/// The window the server compresses with when the client sets no
/// `server_max_window_bits`: the largest, 32 KiB.
pub const FULL_WINDOW: u8 = 15;

/// The four bytes every compressed message ends with on the wire's inside
/// (an empty stored block after a sync flush), which RFC 7692 §7.2.1 removes
/// from the frame and the receiver puts back.
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What was agreed with one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreed {
    /// The window the server may compress with (`server_max_window_bits`), or
    /// `None` when the client allowed only 8, which zlib cannot compress with
    /// raw: the server then sends every message uncompressed.
    pub server_window_bits: Option<u8>,
    /// The client compresses each message on its own
    /// (`client_no_context_takeover`), so no inflater is kept between messages.
    pub client_no_context_takeover: bool,
}

impl Agreed {
    /// The `Sec-WebSocket-Extensions` value of the 101 response.
    pub fn response(&self, offered_window: Option<u8>) -> HeaderValue {
        let mut v = String::from("permessage-deflate; server_no_context_takeover");
        if self.client_no_context_takeover {
            v.push_str("; client_no_context_takeover");
        }
        if let Some(bits) = offered_window {
            v.push_str(&format!("; server_max_window_bits={bits}"));
        }
        HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("permessage-deflate"))
    }
}

/// The first permessage-deflate offer in the request's
/// `Sec-WebSocket-Extensions` that the server can accept, with the value of
/// the response header; `None` when there is none (then no extension is
/// used). An offer with an unknown or repeated parameter, or a value out of
/// range, is declined, as RFC 7692 §7.1 asks.
pub fn negotiate(headers: &HeaderMap) -> Option<(Agreed, HeaderValue)> {
    for value in headers.get_all(SEC_WEBSOCKET_EXTENSIONS) {
        let Ok(value) = value.to_str() else { continue };
        for offer in value.split(',') {
            if let Some((agreed, window)) = accept(offer) {
                return Some((agreed, agreed.response(window)));
            }
        }
    }
    None
}

/// One offer (`permessage-deflate; param[=value]…`): what the server agrees
/// to, and the `server_max_window_bits` it must answer with, if asked.
fn accept(offer: &str) -> Option<(Agreed, Option<u8>)> {
    let mut parts = offer.split(';').map(str::trim);
    if !parts.next()?.eq_ignore_ascii_case("permessage-deflate") {
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    let (mut server_window, mut client_no_context_takeover) = (None, false);
    for param in parts {
        let (name, value) = match param.split_once('=') {
            Some((n, v)) => (n.trim().to_ascii_lowercase(), Some(v.trim().trim_matches('"'))),
            None => (param.to_ascii_lowercase(), None),
        };
        if seen.contains(&name) {
            return None;
        }
        let bits = |v: Option<&str>| -> Option<u8> {
            let v = v?;
            // 1*DIGIT without leading zeros, 8 to 15.
            if v.starts_with('0') || !v.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            v.parse().ok().filter(|b| (8..=15).contains(b))
        };
        match (name.as_str(), value) {
            ("server_no_context_takeover", None) => {}
            ("client_no_context_takeover", None) => client_no_context_takeover = true,
            ("server_max_window_bits", v) => server_window = Some(bits(v)?),
            // The client's own window is its business: the inflater takes any.
            ("client_max_window_bits", None) => {}
            ("client_max_window_bits", v) => {
                bits(v)?;
            }
            _ => return None,
        }
        seen.push(name);
    }
    let agreed = Agreed {
        server_window_bits: match server_window {
            None => Some(FULL_WINDOW),
            Some(8) => None,
            Some(b) => Some(b),
        },
        client_no_context_takeover,
    };
    Some((agreed, server_window))
}

/// How hard the server compresses: zlib's fastest level. Echoing the Autobahn
/// suite's 128 KiB messages (case 12.2.10, release build), the client waited
/// 4.1 ms a round trip for the server at the default level (6) and 2.6 ms at
/// level 1. A broadcast is compressed once, but an echo or a chat reply is
/// compressed for its one recipient, so the cheaper level is the default.
const LEVEL: u32 = 1;

/// `data` compressed as one permessage-deflate message with a window of
/// `window_bits` (9 to 15), the trailing `00 00 ff ff` removed; `None` if the
/// compressor refuses (the message then goes uncompressed). Each thread keeps
/// one compressor per window and resets it after every message, as
/// `server_no_context_takeover` requires: zlib's state is a quarter of a
/// megabyte, too much to make for every message.
pub fn compress(data: &[u8], window_bits: u8) -> Option<Bytes> {
    thread_local! {
        static COMPRESSORS: std::cell::RefCell<[Option<Compress>; 16]> = const { std::cell::RefCell::new([const { None }; 16]) };
    }
    if !(9..=15).contains(&window_bits) {
        return None;
    }
    COMPRESSORS.with_borrow_mut(|all| {
        let c = all[usize::from(window_bits)]
            .get_or_insert_with(|| Compress::new_with_window_bits(Compression::new(LEVEL), false, window_bits));
        c.reset();
        let mut out = Vec::with_capacity(data.len() + data.len() / 16 + 64);
        loop {
            let taken = usize::try_from(c.total_in()).ok()?;
            c.compress_vec(&data[taken..], &mut out, FlushCompress::Sync).ok()?;
            // The flush is complete when all is taken and there was room to spare.
            if usize::try_from(c.total_in()).ok()? == data.len() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity());
        }
        if !out.ends_with(&TAIL) {
            return None;
        }
        out.truncate(out.len() - TAIL.len());
        Some(Bytes::from(out))
    })
}

/// Inflated bytes produced per step, and so the largest fragment passed up.
const CHUNK: usize = 16 * 1024;

/// Compressed bytes unmasked and fed to the inflater per step.
const FEED: usize = 4 * 1024;

/// The read error for compressed data that does not inflate.
const CORRUPT: &str = "invalid permessage-deflate data";
/// The read error for a compressed frame longer than the largest message.
const TOO_BIG: &str = "compressed frame too big";

/// Whether a read error is [`Inflating`]'s for data that does not inflate.
pub fn is_corrupt(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidData && error.to_string() == CORRUPT
}

/// Whether a read error is [`Inflating`]'s for a compressed frame over the limit.
pub fn is_too_big(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidData && error.to_string() == TOO_BIG
}

/// Where the client's byte stream is.
#[derive(Debug, Clone, Copy)]
enum At {
    /// Before a frame header.
    Header,
    /// In a frame passed on as it is.
    Pass { left: u64 },
    /// In a frame of a compressed message.
    Inflate { left: u64, fin: bool, mask: [u8; 4], at: usize },
}

/// zlib's inflate state and the chunk it inflates into.
struct Inflater {
    z: Decompress,
    chunk: Box<[u8]>,
}

/// An I/O stream whose read side inflates compressed messages; see the module docs.
pub struct Inflating<S> {
    inner: S,
    /// What `reading` is made with.
    agreed: Agreed,
    max_frame: u64,
    /// The read side's state, made on the first read: a connection whose
    /// client never speaks holds none of it.
    reading: Option<Box<Reading>>,
}

struct Reading {
    agreed: Agreed,
    /// Largest compressed frame accepted, in bytes.
    max_frame: u64,
    /// Read from `inner`, not yet taken apart.
    raw: BytesMut,
    /// Ready for the reader above.
    out: BytesMut,
    at: At,
    /// A data message is under way (its first frame seen, not its last).
    in_message: bool,
    /// ...and it is compressed.
    compressed: bool,
    /// Kept between messages only with context takeover.
    inflater: Option<Box<Inflater>>,
}

impl<S> Inflating<S> {
    pub fn new(inner: S, agreed: Agreed, max_frame: usize) -> Inflating<S> {
        Inflating { inner, agreed, max_frame: max_frame as u64, reading: None }
    }
}

impl Reading {
    fn new(agreed: Agreed, max_frame: u64) -> Reading {
        Reading {
            agreed,
            max_frame,
            raw: BytesMut::new(),
            out: BytesMut::new(),
            at: At::Header,
            in_message: false,
            compressed: false,
            inflater: None,
        }
    }

    /// Takes apart what `raw` holds, into `out`, until `raw` runs out, a
    /// header is cut short, or a chunk's worth is ready.
    fn process(&mut self) -> io::Result<()> {
        while self.out.len() < CHUNK {
            match self.at {
                At::Header => {
                    if !self.header()? {
                        return Ok(());
                    }
                }
                At::Pass { left } => {
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(self.raw.len());
                    if n == 0 && left > 0 {
                        return Ok(());
                    }
                    self.out.extend_from_slice(&self.raw[..n]);
                    self.raw.advance(n);
                    self.at = if left == n as u64 { At::Header } else { At::Pass { left: left - n as u64 } };
                }
                At::Inflate { left, fin, mask, at } => {
                    if left == 0 {
                        if fin {
                            self.finish_message()?;
                        }
                        self.at = At::Header;
                        continue;
                    }
                    let n = usize::try_from(left).unwrap_or(usize::MAX).min(self.raw.len()).min(FEED);
                    if n == 0 {
                        return Ok(());
                    }
                    let mut input = [0u8; FEED];
                    for (i, b) in self.raw[..n].iter().enumerate() {
                        input[i] = b ^ mask[(at + i) % 4];
                    }
                    let taken = self.inflate(&input[..n], FlushDecompress::None)?;
                    self.raw.advance(taken);
                    self.at = At::Inflate { left: left - taken as u64, fin, mask, at: at + taken };
                }
            }
        }
        Ok(())
    }

    /// Reads the header at the front of `raw`, if it is whole; false if not.
    fn header(&mut self) -> io::Result<bool> {
        let Some(header) = FrameHeader::parse(&self.raw) else { return Ok(false) };
        let FrameHeader { fin, rsv1, rsv23, opcode, payload, len, .. } = header;
        let starts = rsv1 && matches!(opcode, 0x1 | 0x2) && !self.in_message;
        let continues = !rsv1 && opcode == 0x0 && self.compressed;
        if let (true, Some(mask), false) = (starts || continues, header.mask, rsv23) {
            if payload > self.max_frame {
                return Err(io::Error::new(io::ErrorKind::InvalidData, TOO_BIG));
            }
            self.raw.advance(len);
            if starts {
                // An empty first fragment opens the message above at once, so a
                // data frame the client sends before this one ends is refused there.
                fragment(&mut self.out, opcode, false, &[]);
                self.in_message = true;
                self.compressed = true;
            }
            self.at = At::Inflate { left: payload, fin, mask, at: 0 };
            return Ok(true);
        }
        // Anything else goes up untouched, for tungstenite to take or refuse
        // (RSV bits it does not know, a data frame inside another message).
        if matches!(opcode, 0x1 | 0x2) && !self.in_message {
            self.in_message = !fin;
        } else if opcode == 0x0 && fin {
            self.in_message = false;
        }
        self.out.extend_from_slice(&self.raw[..len]);
        self.raw.advance(len);
        self.at = At::Pass { left: payload };
        Ok(true)
    }

    /// Feeds `input` to the inflater and passes what comes out up as a
    /// continuation fragment; returns how much of `input` was taken.
    fn inflate(&mut self, input: &[u8], flush: FlushDecompress) -> io::Result<usize> {
        let inflater = self.inflater.get_or_insert_with(|| {
            Box::new(Inflater { z: Decompress::new(false), chunk: vec![0u8; CHUNK].into_boxed_slice() })
        });
        let (in0, out0) = (inflater.z.total_in(), inflater.z.total_out());
        let status = inflater
            .z
            .decompress(input, &mut inflater.chunk, flush)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, CORRUPT))?;
        let taken = (inflater.z.total_in() - in0) as usize;
        let produced = (inflater.z.total_out() - out0) as usize;
        if status == Status::StreamEnd {
            // A final block (BFINAL) ends the deflate stream: what follows,
            // the tail included, starts a new one.
            inflater.z.reset(false);
        }
        if produced > 0 {
            fragment(&mut self.out, 0x0, false, &inflater.chunk[..produced]);
        }
        if taken == 0 && produced == 0 && !input.is_empty() && status != Status::StreamEnd {
            return Err(io::Error::new(io::ErrorKind::InvalidData, CORRUPT));
        }
        Ok(taken)
    }

    /// The end of a compressed message: the tail goes in, the rest comes out,
    /// and an empty final fragment closes the message above.
    fn finish_message(&mut self) -> io::Result<()> {
        let mut tail: &[u8] = &TAIL;
        while !tail.is_empty() {
            let taken = self.inflate(tail, FlushDecompress::Sync)?;
            tail = &tail[taken..];
        }
        // What the inflater still holds, when its chunk filled up.
        loop {
            let before = self.out.len();
            self.inflate(&[], FlushDecompress::Sync)?;
            if self.out.len() == before {
                break;
            }
        }
        fragment(&mut self.out, 0x0, true, &[]);
        self.in_message = false;
        self.compressed = false;
        if self.agreed.client_no_context_takeover {
            self.inflater = None;
        }
        Ok(())
    }
}

/// Appends one masked (zero key) frame to `out`.
fn fragment(out: &mut BytesMut, opcode: u8, fin: bool, payload: &[u8]) {
    out.reserve(14 + payload.len());
    put_header(out, fin, false, opcode, Some([0; 4]), payload.len());
    out.extend_from_slice(payload);
}

impl<S: AsyncRead + Unpin> AsyncRead for Inflating<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let Inflating { inner, agreed, max_frame, reading } = &mut *self;
        let this = reading.get_or_insert_with(|| Box::new(Reading::new(*agreed, *max_frame)));
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                buf.put_slice(&this.out[..n]);
                this.out.advance(n);
                if this.out.is_empty() {
                    // Nothing held while the connection is idle.
                    this.out = BytesMut::new();
                }
                return Poll::Ready(Ok(()));
            }
            let held = this.raw.len();
            this.process()?;
            if !this.out.is_empty() {
                continue;
            }
            if this.raw.is_empty() {
                this.raw = BytesMut::new();
            } else if this.raw.len() < held {
                continue;
            }
            let mut bytes = [0u8; 4096];
            let mut read = ReadBuf::new(&mut bytes);
            ready!(Pin::new(&mut *inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                return Poll::Ready(Ok(())); // end of stream: tungstenite sees it as such
            }
            this.raw.extend_from_slice(read.filled());
        }
    }
}

super::write_through!(Inflating);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::client_frame;
    use tokio::io::AsyncReadExt;

    fn offer(value: &str) -> Option<(Agreed, HeaderValue)> {
        let mut headers = HeaderMap::new();
        headers.insert(SEC_WEBSOCKET_EXTENSIONS, HeaderValue::from_str(value).expect("header"));
        negotiate(&headers)
    }

    #[test]
    fn the_first_acceptable_offer_is_taken_and_answered() {
        let (agreed, response) = offer("permessage-deflate; client_max_window_bits").expect("accepted");
        assert_eq!(agreed, Agreed { server_window_bits: Some(15), client_no_context_takeover: false });
        assert_eq!(response, "permessage-deflate; server_no_context_takeover");

        let (agreed, response) =
            offer("permessage-deflate; client_no_context_takeover; server_max_window_bits=9").expect("accepted");
        assert_eq!(agreed, Agreed { server_window_bits: Some(9), client_no_context_takeover: true });
        assert_eq!(response, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=9");

        // Declined offers are skipped, in order; the first good one wins.
        let (agreed, _) = offer("x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=16, permessage-deflate; server_max_window_bits=12")
            .expect("the third");
        assert_eq!(agreed.server_window_bits, Some(12));

        // 8 bits: agreed, answered, and every message then goes uncompressed.
        let (agreed, response) = offer("permessage-deflate; server_max_window_bits=8").expect("accepted");
        assert_eq!(agreed.server_window_bits, None);
        assert_eq!(response, "permessage-deflate; server_no_context_takeover; server_max_window_bits=8");
    }

    #[test]
    fn bad_offers_are_declined() {
        for bad in [
            "permessage-deflate; unknown",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=7",
            "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; client_max_window_bits=99",
            "permessage-deflate; client_no_context_takeover=1",
            "deflate-frame",
        ] {
            assert!(offer(bad).is_none(), "{bad}");
        }
        assert!(negotiate(&HeaderMap::new()).is_none());
    }

    fn inflate_all(data: &[u8]) -> Vec<u8> {
        let mut d = Decompress::new(false);
        let mut input = data.to_vec();
        input.extend_from_slice(&TAIL);
        let mut out = Vec::with_capacity(1 << 20);
        d.decompress_vec(&input, &mut out, FlushDecompress::Sync).expect("inflates");
        out
    }

    #[test]
    fn compressed_messages_inflate_to_the_original_with_any_window() {
        let text = "the same words again and again, ".repeat(200);
        for bits in 9..=15 {
            let c = compress(text.as_bytes(), bits).expect("compressed");
            assert!(c.len() < text.len() / 5, "{bits} bits: {} bytes", c.len());
            assert!(!c.ends_with(&TAIL), "the tail is removed");
            assert_eq!(inflate_all(&c), text.as_bytes());
        }
        assert_eq!(compress(b"", 15).as_deref(), Some(&[0x00][..]), "an empty message (RFC 7692 §7.2.3.6)");
        assert!(compress(b"x", 8).is_none(), "zlib cannot compress raw with 8 bits");
        // Each message on its own: the second compresses exactly as the first.
        assert_eq!(compress(text.as_bytes(), 15), compress(text.as_bytes(), 15));
    }


    /// What `Inflating` passes up for `input`, read in small pieces.
    async fn through(input: Vec<u8>, agreed: Agreed, max_frame: usize) -> io::Result<Vec<u8>> {
        let mut layer = Inflating::new(&input[..], agreed, max_frame);
        let mut out = Vec::new();
        let mut buf = [0u8; 7];
        loop {
            let n = layer.read(&mut buf).await?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Splits passed-up bytes into (FIN, opcode, payload) frames (all masked with a zero key).
    fn frames(mut bytes: &[u8]) -> Vec<(bool, u8, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let h = FrameHeader::parse(bytes).expect("a whole header");
            let key = h.mask.expect("masked");
            let len = h.payload as usize;
            let payload: Vec<u8> = bytes[h.len..h.len + len].iter().enumerate().map(|(i, b)| b ^ key[i % 4]).collect();
            out.push((h.fin, h.opcode, payload));
            bytes = &bytes[h.len + len..];
        }
        out
    }

    const FULL: Agreed = Agreed { server_window_bits: Some(15), client_no_context_takeover: false };

    #[tokio::test]
    async fn rfc_7692s_example_hello_inflates_into_fragments_around_control_frames() {
        // RFC 7692 §7.2.3.1: "Hello" compressed is f2 48 cd c9 c9 07 00; here
        // split over two frames, with a ping between them.
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let mut input = client_frame(false, true, 0x1, &[0xf2, 0x48, 0xcd], key);
        input.extend(client_frame(true, false, 0x9, b"ping", key));
        input.extend(client_frame(true, false, 0x0, &[0xc9, 0xc9, 0x07, 0x00], key));
        input.extend(client_frame(true, false, 0x1, b"plain", key));
        let out = frames(&through(input, FULL, 1 << 16).await.expect("reads"));
        assert_eq!(out.first(), Some(&(false, 0x1, Vec::new())), "an empty first fragment opens the message");
        let text: Vec<u8> = out.iter().take_while(|f| f.1 != 0x9).flat_map(|f| f.2.clone()).collect();
        let after: Vec<_> = out.iter().skip_while(|f| f.1 != 0x9).collect();
        assert_eq!(after[0], &(true, 0x9, b"ping".to_vec()), "the ping passes as it came");
        let rest: Vec<u8> = after[1..after.len() - 1].iter().flat_map(|f| f.2.clone()).collect();
        assert_eq!([text, rest].concat(), b"Hello");
        assert!(after[1..after.len() - 1].iter().all(|f| f.1 == 0x0), "continuations");
        assert_eq!(after[after.len() - 2], &(true, 0x0, Vec::new()), "an empty final fragment ends it");
        assert_eq!(after[after.len() - 1], &(true, 0x1, b"plain".to_vec()), "an uncompressed message passes untouched");
    }

    #[tokio::test]
    async fn the_window_carries_over_between_messages_unless_agreed_otherwise() {
        let key = [1, 2, 3, 4];
        // "Hello" twice with context takeover: the second refers back to the first (RFC 7692 §7.2.3.2).
        let mut input = client_frame(true, true, 0x1, &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00], key);
        input.extend(client_frame(true, true, 0x1, &[0xf2, 0x00, 0x11, 0x00, 0x00], key));
        assert_eq!(text_of(input.clone(), FULL).await.expect("inflates"), b"HelloHello");
        let reset = Agreed { client_no_context_takeover: true, ..FULL };
        assert!(is_corrupt(&text_of(input, reset).await.expect_err("no window to refer to")));
    }

    /// The payloads `Inflating` passes up for `input`, joined.
    async fn text_of(input: Vec<u8>, agreed: Agreed) -> io::Result<Vec<u8>> {
        Ok(frames(&through(input, agreed, 1 << 16).await?).into_iter().flat_map(|f| f.2).collect())
    }

    #[tokio::test]
    async fn a_bomb_comes_up_in_bounded_fragments_and_a_huge_frame_is_refused() {
        // A client compresses as hard as it likes: zlib's best level makes a
        // megabyte of one letter about a kilobyte.
        let big = vec![b'a'; 1 << 20];
        let mut z = Compress::new(Compression::best(), false);
        let mut c = Vec::with_capacity(1 << 16);
        z.compress_vec(&big, &mut c, FlushCompress::Sync).expect("compresses");
        c.truncate(c.len() - TAIL.len());
        assert!(c.len() < 2048, "a megabyte of one letter compresses to {} bytes", c.len());
        let out = frames(&through(client_frame(true, true, 0x2, &c, [9, 9, 9, 9]), FULL, 1 << 16).await.expect("reads"));
        assert!(out.iter().all(|f| f.2.len() <= CHUNK), "no fragment over {CHUNK} bytes");
        assert_eq!(out.iter().map(|f| f.2.len()).sum::<usize>(), 1 << 20);
        assert_eq!(out[0].1, 0x2, "binary stays binary");

        let err = through(client_frame(true, true, 0x1, &[0u8; 200], [0; 4]), FULL, 100).await.expect_err("too big");
        assert!(is_too_big(&err));
        let err = through(client_frame(true, true, 0x1, &[0xff; 16], [0; 4]), FULL, 100).await.expect_err("corrupt");
        assert!(is_corrupt(&err));
    }

    #[tokio::test]
    async fn rsv1_where_it_does_not_belong_passes_up_for_tungstenite_to_refuse() {
        let key = [5, 6, 7, 8];
        for input in [
            client_frame(true, true, 0x9, b"ping", key),            // on a control frame
            client_frame(true, true, 0x0, b"cont", key),            // on a continuation
            [client_frame(false, false, 0x1, b"a", key), client_frame(true, true, 0x1, b"b", key)].concat(), // inside a message
        ] {
            assert_eq!(through(input.clone(), FULL, 1 << 16).await.expect("reads"), input);
        }
    }
}
