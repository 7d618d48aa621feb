//! permessage-deflate (RFC 7692), both ends of it: [`compress`], which
//! compresses one message on its own, and [`Inflating`], which inflates the
//! peer's compressed messages under tungstenite (which has no extension
//! support and rejects RSV1). The server negotiates the extension itself; the
//! bench offers it as a client.
//!
//! [`Inflating`] sits on the read side and rewrites the peer's byte stream: a
//! compressed message becomes an uncompressed one, sent on as fragments (an
//! empty first frame, a continuation per inflated chunk, an empty final one),
//! masked with a zero key on the server (tungstenite there wants every client
//! frame masked) and unmasked on a client; every other frame passes
//! untouched. tungstenite then checks, reassembles and limits the inflated
//! message as any other, so a message that inflates past its limit is closed
//! as it grows, with at most one chunk held here.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use tokio::io::{AsyncRead, ReadBuf};

use super::frame_header::{FrameHeader, put_header};

/// Messages shorter than this go uncompressed: deflate's block header and
/// Huffman tables make short texts longer, and RFC 7692 lets each message
/// choose.
pub const COMPRESS_FROM: usize = 64;

/// The largest window, 32 KiB: the server's when the client sets no
/// `server_max_window_bits`, and the bench's own.
pub const FULL_WINDOW: u8 = 15;

/// The four bytes every compressed message ends with on the wire's inside
/// (an empty stored block after a sync flush), which RFC 7692 §7.2.1 removes
/// from the frame and the receiver puts back.
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Which end of the connection reads through [`Inflating`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads a client's frames, which are masked; passes fragments up masked
    /// with a zero key.
    Server,
    /// Reads a server's frames, which are not; passes fragments up unmasked.
    /// The stream starts with the server's HTTP response to the upgrade,
    /// which passes untouched.
    Client,
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

/// Where the peer's byte stream is.
#[derive(Debug, Clone, Copy)]
enum At {
    /// In a client's stream, before the end of the server's HTTP response
    /// head: `matched` bytes of its closing CR LF CR LF seen.
    Head { matched: u8 },
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

/// How an [`Inflating`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inflate {
    pub role: Role,
    /// The peer compresses each message on its own (`client_no_context_takeover`
    /// from a client, `server_no_context_takeover` from a server), so no
    /// inflater is kept between messages. Keeping one is always correct, as
    /// RFC 7692 §7.1.1 notes; dropping it saves its memory.
    pub peer_no_context_takeover: bool,
    /// Largest compressed frame accepted, in bytes.
    pub max_frame: u64,
}

/// An I/O stream whose read side inflates compressed messages; see the module docs.
pub struct Inflating<S> {
    inner: S,
    /// What `reading` is made with.
    config: Inflate,
    /// The read side's state, made on the first read: a connection whose
    /// peer never speaks holds none of it.
    reading: Option<Box<Reading>>,
}

struct Reading {
    config: Inflate,
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
    pub fn new(inner: S, config: Inflate) -> Inflating<S> {
        Inflating { inner, config, reading: None }
    }
}

impl Reading {
    fn new(config: Inflate) -> Reading {
        Reading {
            config,
            raw: BytesMut::new(),
            out: BytesMut::new(),
            at: if config.role == Role::Client { At::Head { matched: 0 } } else { At::Header },
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
                At::Head { matched } => {
                    if self.raw.is_empty() {
                        return Ok(());
                    }
                    let (n, at) = match head_end(&self.raw, matched) {
                        Ok(n) => (n, At::Header),
                        Err(matched) => (self.raw.len(), At::Head { matched }),
                    };
                    self.out.extend_from_slice(&self.raw[..n]);
                    self.raw.advance(n);
                    self.at = at;
                }
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
        let masked = header.mask.is_some() == (self.config.role == Role::Server);
        if (starts || continues) && masked && !rsv23 {
            let mask = header.mask.unwrap_or([0; 4]);
            if payload > self.config.max_frame {
                return Err(io::Error::new(io::ErrorKind::InvalidData, TOO_BIG));
            }
            self.raw.advance(len);
            if starts {
                // An empty first fragment opens the message above at once, so a
                // data frame the client sends before this one ends is refused there.
                fragment(&mut self.out, self.config.role, opcode, false, &[]);
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
            fragment(&mut self.out, self.config.role, 0x0, false, &inflater.chunk[..produced]);
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
        fragment(&mut self.out, self.config.role, 0x0, true, &[]);
        self.in_message = false;
        self.compressed = false;
        if self.config.peer_no_context_takeover {
            self.inflater = None;
        }
        Ok(())
    }
}

/// Scans `bytes` for the end of an HTTP head (CR LF CR LF), `matched` bytes
/// of which ended what came before: the bytes up to and including it, or how
/// many of it end `bytes`.
fn head_end(bytes: &[u8], mut matched: u8) -> Result<usize, u8> {
    const END: &[u8; 4] = b"\r\n\r\n";
    for (i, &b) in bytes.iter().enumerate() {
        matched = if b == END[usize::from(matched)] { matched + 1 } else { u8::from(b == b'\r') };
        if matched == 4 {
            return Ok(i + 1);
        }
    }
    Err(matched)
}

/// Appends one frame to `out`: masked with a zero key for a server's reader,
/// unmasked for a client's.
fn fragment(out: &mut BytesMut, role: Role, opcode: u8, fin: bool, payload: &[u8]) {
    out.reserve(14 + payload.len());
    put_header(out, fin, false, opcode, (role == Role::Server).then_some([0; 4]), payload.len());
    out.extend_from_slice(payload);
}

impl<S: AsyncRead + Unpin> AsyncRead for Inflating<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let Inflating { inner, config, reading } = &mut *self;
        let this = reading.get_or_insert_with(|| Box::new(Reading::new(*config)));
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

crate::write_through!(Inflating);

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::frame_header::{client_frame, server_frame};
    use tokio::io::AsyncReadExt;

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
    async fn through(input: Vec<u8>, config: Inflate) -> io::Result<Vec<u8>> {
        let mut layer = Inflating::new(&input[..], config);
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

    /// Splits a server's passed-up bytes into (FIN, opcode, payload) frames (all masked with a zero key).
    fn frames(bytes: &[u8]) -> Vec<(bool, u8, Vec<u8>)> {
        frames_as(Role::Server, bytes)
    }

    /// Splits passed-up bytes into (FIN, opcode, payload) frames, masked as `role` passes them up.
    fn frames_as(role: Role, mut bytes: &[u8]) -> Vec<(bool, u8, Vec<u8>)> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let h = FrameHeader::parse(bytes).expect("a whole header");
            assert_eq!(h.mask.is_some(), role == Role::Server, "masked only for a server's reader");
            let key = h.mask.unwrap_or([0; 4]);
            let len = h.payload as usize;
            let payload: Vec<u8> = bytes[h.len..h.len + len].iter().enumerate().map(|(i, b)| b ^ key[i % 4]).collect();
            out.push((h.fin, h.opcode, payload));
            bytes = &bytes[h.len + len..];
        }
        out
    }

    const FULL: Inflate = Inflate { role: Role::Server, peer_no_context_takeover: false, max_frame: 1 << 16 };

    #[tokio::test]
    async fn rfc_7692s_example_hello_inflates_into_fragments_around_control_frames() {
        // RFC 7692 §7.2.3.1: "Hello" compressed is f2 48 cd c9 c9 07 00; here
        // split over two frames, with a ping between them.
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let mut input = client_frame(false, true, 0x1, &[0xf2, 0x48, 0xcd], key);
        input.extend(client_frame(true, false, 0x9, b"ping", key));
        input.extend(client_frame(true, false, 0x0, &[0xc9, 0xc9, 0x07, 0x00], key));
        input.extend(client_frame(true, false, 0x1, b"plain", key));
        let out = frames(&through(input, FULL).await.expect("reads"));
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
        let reset = Inflate { peer_no_context_takeover: true, ..FULL };
        assert!(is_corrupt(&text_of(input, reset).await.expect_err("no window to refer to")));
    }

    /// The payloads `Inflating` passes up for `input`, joined.
    async fn text_of(input: Vec<u8>, config: Inflate) -> io::Result<Vec<u8>> {
        Ok(frames(&through(input, config).await?).into_iter().flat_map(|f| f.2).collect())
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
        let out = frames(&through(client_frame(true, true, 0x2, &c, [9, 9, 9, 9]), FULL).await.expect("reads"));
        assert!(out.iter().all(|f| f.2.len() <= CHUNK), "no fragment over {CHUNK} bytes");
        assert_eq!(out.iter().map(|f| f.2.len()).sum::<usize>(), 1 << 20);
        assert_eq!(out[0].1, 0x2, "binary stays binary");

        let err = through(client_frame(true, true, 0x1, &[0u8; 200], [0; 4]), Inflate { max_frame: 100, ..FULL }).await.expect_err("too big");
        assert!(is_too_big(&err));
        let err = through(client_frame(true, true, 0x1, &[0xff; 16], [0; 4]), Inflate { max_frame: 100, ..FULL }).await.expect_err("corrupt");
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
            assert_eq!(through(input.clone(), FULL).await.expect("reads"), input);
        }
    }

    #[tokio::test]
    async fn a_client_passes_the_response_head_then_inflates_unmasked_server_frames() {
        let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
        let text = "the same words again and again, ".repeat(20);
        let c = compress(text.as_bytes(), FULL_WINDOW).expect("compressed");
        let mut input = head.to_vec();
        input.extend_from_slice(&server_frame(0x1, true, &c));
        input.extend_from_slice(&server_frame(0x1, true, &compress(b"Hello", FULL_WINDOW).expect("compressed")));
        input.extend_from_slice(&server_frame(0x1, false, b"plain"));
        let client = Inflate { role: Role::Client, peer_no_context_takeover: false, max_frame: 1 << 16 };
        let out = through(input, client).await.expect("reads");
        assert_eq!(&out[..head.len()], head, "the head passes untouched");
        let frames = frames_as(Role::Client, &out[head.len()..]);
        let messages: Vec<Vec<u8>> = frames
            .split_inclusive(|f| f.0)
            .map(|m| m.iter().flat_map(|f| f.2.clone()).collect())
            .collect();
        assert_eq!(messages, [text.as_bytes(), b"Hello", b"plain"]);
        // A masked frame from a server is not inflated here: it passes up, for
        // tungstenite to refuse.
        let mut input = head.to_vec();
        let masked = client_frame(true, true, 0x1, &c, [1, 2, 3, 4]);
        input.extend_from_slice(&masked);
        assert_eq!(through(input, client).await.expect("reads")[head.len()..], masked[..]);
    }

    #[test]
    fn the_end_of_a_head_is_found_across_reads() {
        assert_eq!(head_end(b"HTTP/1.1 101\r\n\r\n\x81", 0), Ok(16));
        assert_eq!(head_end(b"a\r\n\r", 0), Err(3));
        assert_eq!(head_end(b"\n\x81", 3), Ok(1));
        assert_eq!(head_end(b"\r\r\n\r\n", 0), Ok(5), "a CR that starts over");
        assert_eq!(head_end(b"\r\nx\r\n", 0), Err(2));
    }
}
