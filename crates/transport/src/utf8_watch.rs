//! Fails a WebSocket connection at the first byte that makes a text message
//! invalid UTF-8, as RFC 6455 §8.1 asks, rather than when the whole frame has
//! arrived.
//!
//! tungstenite reads a frame in full before it checks its text, so a client
//! can trickle a huge invalid frame and be found out only at its end.
//! [`Utf8Watch`] sits under tungstenite on the read side and watches the
//! bytes go by: it follows the client's frame headers, unmasks text payloads
//! and checks them incrementally across frames and reads. The bytes pass
//! through untouched; tungstenite still parses and checks everything. At the
//! first invalid byte the read fails with [`InvalidData`](io::ErrorKind::InvalidData),
//! which the connection answers with close 1007 ([`is_invalid_text`]).
//! After that it watches no more.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

use wire::websocket::frame_header::FrameHeader;

/// The message of the read error raised at the first invalid byte.
const INVALID_TEXT: &str = "invalid UTF-8 in a text message";

/// Whether a read error is the one [`Utf8Watch`] raises.
pub fn is_invalid_text(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidData && error.to_string() == INVALID_TEXT
}

/// An I/O stream whose read side is watched; see the module docs.
#[derive(Debug)]
pub struct Utf8Watch<S> {
    inner: S,
    /// Made on the first bytes read: a client that never speaks holds none.
    frames: Option<Box<Frames>>,
}

impl<S> Utf8Watch<S> {
    pub fn new(inner: S) -> Utf8Watch<S> {
        Utf8Watch { inner, frames: None }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Utf8Watch<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let read = &buf.filled()[before..];
                if read.is_empty() || this.frames.get_or_insert_default().watch(read) {
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, INVALID_TEXT)))
                }
            }
            other => other,
        }
    }
}

super::write_through!(Utf8Watch);

/// Where the client's byte stream is: in a frame header, or in a payload.
#[derive(Debug, Default)]
struct Frames {
    /// The header read so far (at most 14 bytes: 2, 8 of length, 4 of mask).
    header: Vec<u8>,
    /// Payload bytes left in the current frame.
    left: u64,
    mask: [u8; 4],
    /// Offset of the next payload byte, for the mask.
    at: usize,
    /// Whether the current frame's payload is text to check.
    checking: bool,
    /// Whether the message under way (its first frame and continuations) is text.
    in_text: bool,
    text: Utf8Stream,
    /// Set once something was found (or the framing is beyond us): watch no more.
    done: bool,
}

impl Frames {
    /// Follows `bytes`; false at the first invalid byte of a text message.
    fn watch(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() && !self.done {
            if self.left == 0 {
                bytes = self.read_header(bytes);
                continue;
            }
            let n = usize::try_from(self.left).unwrap_or(usize::MAX).min(bytes.len());
            let (payload, rest) = bytes.split_at(n);
            if self.checking && !self.check(payload) {
                self.done = true;
                return false;
            }
            self.at += n;
            self.left -= n as u64;
            bytes = rest;
        }
        true
    }

    /// Takes header bytes from `bytes`, and sets up the payload once the
    /// header is whole; returns the rest.
    fn read_header<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let mut taken = 0;
        while taken < bytes.len() {
            self.header.push(bytes[taken]);
            taken += 1;
            if let Some(header) = FrameHeader::parse(&self.header) {
                self.start_payload(header);
                break;
            }
        }
        &bytes[taken..]
    }

    fn start_payload(&mut self, header: FrameHeader) {
        let FrameHeader { fin, opcode, .. } = header;
        self.mask = header.mask.unwrap_or([0; 4]);
        self.left = header.payload;
        self.at = 0;
        self.header.clear();
        if header.rsv1 || header.rsv23 {
            // A reserved bit no extension claimed (permessage-deflate's are
            // cleared below us): a protocol error for tungstenite to report,
            // before any of the payload is taken for text.
            self.done = true;
            return;
        }
        match opcode {
            // A text frame starts a text message; a binary one, a message not checked.
            0x1 => {
                self.in_text = true;
                self.text = Utf8Stream::default();
            }
            0x2 => self.in_text = false,
            // Continuations carry on the message under way; control frames
            // (0x8 and up) sit between its frames and are tungstenite's to check.
            0x0 | 0x8..=0xf => {}
            // A reserved opcode is a protocol error tungstenite reports; stop following.
            _ => self.done = true,
        }
        let data = opcode <= 0x2;
        self.checking = data && self.in_text;
        if data && fin {
            // The message ends with this frame, whose bytes are still checked
            // as they come; a character left unfinished at the very end is
            // tungstenite's to find.
            self.in_text = false;
        }
    }

    /// Unmasks `payload` (a slice of the current frame) and checks it.
    fn check(&mut self, payload: &[u8]) -> bool {
        let mut chunk = [0u8; 256];
        for (i, part) in payload.chunks(chunk.len()).enumerate() {
            let offset = self.at + i * chunk.len();
            for (j, &b) in part.iter().enumerate() {
                chunk[j] = b ^ self.mask[(offset + j) % 4];
            }
            if !self.text.push(&chunk[..part.len()]) {
                return false;
            }
        }
        true
    }
}

/// Incremental UTF-8 validation: bytes arrive in pieces, and a piece may end
/// inside a character.
#[derive(Debug, Default)]
struct Utf8Stream {
    /// The start of a character cut off at the end of the last piece.
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Takes the next piece; false if the text so far cannot be UTF-8.
    fn push(&mut self, mut piece: &[u8]) -> bool {
        // First finish the character the last piece cut off, a byte at a time.
        while !self.pending.is_empty() {
            let Some((&b, rest)) = piece.split_first() else { return true };
            self.pending.push(b);
            piece = rest;
            match std::str::from_utf8(&self.pending) {
                Ok(_) => self.pending.clear(),
                Err(e) if e.error_len().is_some() => return false,
                Err(_) => {}
            }
        }
        match std::str::from_utf8(piece) {
            Ok(_) => true,
            Err(e) if e.error_len().is_some() => false,
            Err(e) => {
                self.pending.extend_from_slice(&piece[e.valid_up_to()..]);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A masked client frame.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        crate::client_frame(fin, false, opcode, payload, [0x37, 0xfa, 0x21, 0x3d])
    }

    /// Feeds `stream` in pieces of `size` bytes; the index of the piece that
    /// failed, if one did.
    fn feed(stream: &[u8], size: usize) -> Option<usize> {
        let mut frames = Frames::default();
        stream.chunks(size).position(|piece| !frames.watch(piece))
    }

    #[test]
    fn valid_text_passes_in_any_pieces() {
        let text = "κόσμε ünï 𝄞 ok".repeat(20);
        let mut stream = frame(false, 0x1, &text.as_bytes()[..7]);
        stream.extend(frame(false, 0x0, &text.as_bytes()[7..300]));
        stream.extend(frame(true, 0x9, b"ping"));
        stream.extend(frame(true, 0x0, &text.as_bytes()[300..]));
        stream.extend(frame(true, 0x2, &[0xff, 0xfe, 0x80]));
        stream.extend(frame(true, 0x1, &vec![b'a'; 70_000]));
        for size in [1, 2, 3, 5, 13, 4096, stream.len()] {
            assert_eq!(feed(&stream, size), None, "pieces of {size}");
        }
    }

    #[test]
    fn the_first_invalid_byte_fails_the_read_that_brings_it() {
        // Autobahn 6.4.3: one frame, sent in three pieces; the second holds
        // the invalid sequence (a code point past U+10FFFF).
        let valid = "κόσμε".as_bytes();
        let invalid = [0xf4, 0x90, 0x80, 0x80];
        let mut payload = valid.to_vec();
        payload.extend_from_slice(&invalid);
        payload.extend_from_slice(b"edited");
        let stream = frame(true, 0x1, &payload);
        let header = 6;
        let mut frames = Frames::default();
        assert!(frames.watch(&stream[..header + valid.len()]));
        assert!(!frames.watch(&stream[header + valid.len()..header + valid.len() + 4]));
        // Invalid across a frame boundary, and in a continuation frame.
        let mut split = frame(false, 0x1, &[b'a', 0xf4]);
        split.extend(frame(true, 0x0, &[0x90, 0x80, 0x80]));
        assert_eq!(feed(&split, 1), Some(split.len() - 3));
    }

    #[test]
    fn binary_and_control_payloads_are_not_text() {
        let mut stream = frame(true, 0x2, &[0xff; 300]);
        stream.extend(frame(false, 0x2, &[0xc0]));
        stream.extend(frame(true, 0xa, &[0xff]));
        stream.extend(frame(true, 0x0, &[0x80, 0xff]));
        assert_eq!(feed(&stream, 7), None);
    }

    #[test]
    fn a_frame_with_a_reserved_bit_is_left_to_tungstenite() {
        // Compressed "Hello" with RSV1 on a connection without the extension:
        // not valid UTF-8, but the answer is tungstenite's protocol error (1002).
        let mut stream = frame(true, 0x1, &[0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00]);
        stream[0] |= 0x40;
        assert_eq!(feed(&stream, 1), None);
    }
}
