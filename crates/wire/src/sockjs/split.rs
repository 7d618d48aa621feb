//! Turns the body of a streaming SockJS response back into frames, for the
//! bench client. Bodies arrive in chunks cut anywhere, so [`Splitter`] keeps
//! what it has not yet used and yields each frame once it is complete;
//! "need more bytes" is a plain variant, and nothing is scanned twice.

use bytes::{Buf, Bytes, BytesMut};

use super::json;

/// Which transport's wrapping a [`Splitter`] takes off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wrapping {
    /// `xhr` and `xhr_streaming`: one frame per `\n`-terminated line. The
    /// streaming prelude comes out as a frame of 2048 `h` (a heartbeat).
    Xhr,
    /// `eventsource`: the `data:` of each event, `%XX` decoded as
    /// sockjs-client decodes it.
    EventSource,
    /// `htmlfile`: the string in each `p("...")` call; the page before the
    /// first one is skipped.
    HtmlFile,
    /// `jsonp`: the string in `callback("...")`.
    Jsonp,
}

/// One step of splitting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Split {
    /// A complete frame, unwrapped, ready for [`parse_frame`](super::parse_frame).
    Frame(Bytes),
    /// Every complete frame has been taken; push more bytes.
    NeedMore,
}

/// Why a stream cannot be split. The splitter stays failed afterwards: the
/// bench should count the error and drop the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// One frame grew past the splitter's limit without ending.
    #[error("SockJS frame longer than {0} bytes")]
    TooLong(usize),
    /// The wrapping is broken: a bad escape in a JS string or event, or a
    /// string not followed by `)`.
    #[error("malformed SockJS transport wrapping")]
    Malformed,
}

/// Where an htmlfile/JSONP splitter is.
#[derive(Debug, Clone, Copy)]
enum CallState {
    /// Looking for the call that starts the next string; `buf[..scanned]`
    /// holds no start of it.
    Seek,
    /// Inside the JS string that starts at `buf[0]`; `buf[..pos]` has been
    /// read, and `escaped` says whether the byte at `pos - 1` was an
    /// unfinished backslash.
    InString { pos: usize, escaped: bool },
}

/// Incremental splitter for one response body. Push bytes as they arrive,
/// then call [`next_frame`](Self::next_frame) until it says
/// [`Split::NeedMore`].
#[derive(Debug)]
pub struct Splitter {
    wrapping: Wrapping,
    buf: BytesMut,
    /// Bytes at the front of `buf` known not to hold what we look for next.
    scanned: usize,
    call: CallState,
    /// EventSource: the data lines of the event being read, joined with LF.
    data: BytesMut,
    /// EventSource: whether the current event has had a `data` line.
    has_data: bool,
    max_frame_len: usize,
    failed: Option<SplitError>,
}

impl Splitter {
    /// Default for [`with_max_frame_len`](Self::with_max_frame_len): 16 MiB,
    /// far above any frame a sane server sends (sockjs-node closes a
    /// streaming response after 128 KiB), low enough to stop a runaway.
    pub const DEFAULT_MAX_FRAME_LEN: usize = 16 << 20;

    /// A splitter for one response body wrapped as `wrapping`.
    pub fn new(wrapping: Wrapping) -> Self {
        Splitter {
            wrapping,
            buf: BytesMut::new(),
            scanned: 0,
            call: CallState::Seek,
            data: BytesMut::new(),
            has_data: false,
            max_frame_len: Self::DEFAULT_MAX_FRAME_LEN,
            failed: None,
        }
    }

    /// Caps the size of one frame as it arrives on the wire (wrapping and
    /// escapes included); default [`DEFAULT_MAX_FRAME_LEN`](Self::DEFAULT_MAX_FRAME_LEN).
    pub fn with_max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// Adds bytes from the body.
    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Takes the next complete frame out, if there is one.
    pub fn next_frame(&mut self) -> Result<Split, SplitError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let step = match self.wrapping {
            Wrapping::Xhr => self.next_line_frame(),
            Wrapping::EventSource => self.next_event_frame(),
            Wrapping::HtmlFile => self.next_call_frame(b"p(\""),
            Wrapping::Jsonp => self.next_call_frame(b"(\""),
        };
        if let Err(e) = step {
            self.failed = Some(e);
        }
        step
    }

    fn too_long(&self, len: usize) -> Result<(), SplitError> {
        if len > self.max_frame_len {
            Err(SplitError::TooLong(self.max_frame_len))
        } else {
            Ok(())
        }
    }

    fn next_line_frame(&mut self) -> Result<Split, SplitError> {
        loop {
            let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                self.too_long(self.buf.len())?;
                return Ok(Split::NeedMore);
            };
            let line = self.buf.split_to(self.scanned + at);
            self.buf.advance(1);
            self.scanned = 0;
            if !line.is_empty() {
                return Ok(Split::Frame(line.freeze()));
            }
        }
    }

    /// Reads event-stream lines (ended by CRLF, LF or CR, per the HTML
    /// spec) until an empty line ends an event that had data.
    fn next_event_frame(&mut self) -> Result<Split, SplitError> {
        loop {
            let found = self.buf[self.scanned..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r');
            let Some(at) = found.map(|i| self.scanned + i) else {
                self.scanned = self.buf.len();
                self.too_long(self.buf.len() + self.data.len())?;
                return Ok(Split::NeedMore);
            };
            let ending = match (self.buf[at], self.buf.get(at + 1)) {
                (b'\r', Some(b'\n')) => 2,
                // A CR at the end of what we have may be half of a CRLF.
                (b'\r', None) => {
                    self.scanned = at;
                    return Ok(Split::NeedMore);
                }
                _ => 1,
            };
            let line = self.buf.split_to(at);
            self.buf.advance(ending);
            self.scanned = 0;
            if line.is_empty() {
                if std::mem::take(&mut self.has_data) {
                    let data = self.data.split();
                    return percent_decode(data).map(Split::Frame);
                }
                continue;
            }
            let (field, value) = match line.iter().position(|&b| b == b':') {
                Some(colon) => {
                    let value = &line[colon + 1..];
                    (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (&line[..], &b""[..]),
            };
            // Comments (empty field) and `event`, `id`, `retry` are not ours.
            if field == b"data" {
                if self.has_data {
                    self.data.extend_from_slice(b"\n");
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
        }
    }

    /// htmlfile and JSONP: skips to `marker` (which ends with the string's
    /// opening quote), reads the JS string and its closing `)`.
    fn next_call_frame(&mut self, marker: &[u8]) -> Result<Split, SplitError> {
        if let CallState::Seek = self.call {
            let from = self.scanned;
            let found = self.buf[from..]
                .windows(marker.len())
                .position(|w| w == marker);
            let Some(at) = found.map(|i| from + i) else {
                // Keep only a tail that might be the start of the marker.
                let keep = (marker.len() - 1).min(self.buf.len());
                self.buf.advance(self.buf.len() - keep);
                self.scanned = 0;
                return Ok(Split::NeedMore);
            };
            // Keep the opening quote: the string starts at buf[0].
            self.buf.advance(at + marker.len() - 1);
            self.scanned = 0;
            self.call = CallState::InString {
                pos: 1,
                escaped: false,
            };
        }
        let CallState::InString {
            mut pos,
            mut escaped,
        } = self.call
        else {
            return Ok(Split::NeedMore);
        };
        let mut end = None;
        while let Some(&b) = self.buf.get(pos) {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                end = Some(pos);
                break;
            }
            pos += 1;
        }
        let Some(end) = end else {
            self.call = CallState::InString { pos, escaped };
            self.too_long(self.buf.len())?;
            return Ok(Split::NeedMore);
        };
        // Stay on the closing quote until we can see what follows it.
        self.call = CallState::InString {
            pos: end,
            escaped: false,
        };
        match self.buf.get(end + 1) {
            None => return Ok(Split::NeedMore),
            Some(b')') => {}
            Some(_) => return Err(SplitError::Malformed),
        }
        let frame = json::parse_string(&self.buf[..=end]).map_err(|_| SplitError::Malformed)?;
        self.buf.advance(end + 2);
        self.call = CallState::Seek;
        Ok(Split::Frame(Bytes::from(frame.into_bytes())))
    }
}

/// Undoes the eventsource `%XX` escaping the way sockjs-client does
/// (`decodeURI`, after turning every `%` not followed by a digit and a hex
/// digit into `%25`): `%XX` with X a digit decodes, except to one of the
/// characters `decodeURI` keeps escaped (`;/?:@&=+$,#`); a decoded byte
/// of 0x80 or more makes `decodeURI` throw, so it is an error; any other
/// `%` is literal.
fn percent_decode(data: BytesMut) -> Result<Bytes, SplitError> {
    if !data.contains(&b'%') {
        return Ok(data.freeze());
    }
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while let Some(&b) = data.get(i) {
        i += 1;
        if b != b'%' {
            out.push(b);
            continue;
        }
        let (Some(&hi @ b'0'..=b'9'), Some(&lo)) = (data.get(i), data.get(i + 1)) else {
            out.push(b);
            continue;
        };
        let Some(lo) = char::from(lo).to_digit(16) else {
            out.push(b);
            continue;
        };
        let byte = (hi - b'0') << 4 | lo as u8;
        if byte >= 0x80 {
            return Err(SplitError::Malformed);
        }
        if b";/?:@&=+$,#".contains(&byte) {
            out.push(b'%');
        } else {
            out.push(byte);
            i += 2;
        }
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sockjs::{
        Callback, EVENTSOURCE_PRELUDE, Framing, XHR_STREAMING_PRELUDE, htmlfile_prelude_into,
        jsonp_into,
    };

    /// Feeds `body` cut at every `cuts` position and collects the frames.
    fn split_with_cuts(
        stream: Wrapping,
        body: &[u8],
        cuts: &[usize],
    ) -> Result<Vec<Bytes>, SplitError> {
        let mut s = Splitter::new(stream);
        let mut frames = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
            s.push(&body[start..cut]);
            start = cut;
            while let Split::Frame(f) = s.next_frame()? {
                frames.push(f);
            }
        }
        Ok(frames)
    }

    /// Every way of cutting `body` once, and many of cutting it twice, give `want`.
    fn assert_splits(stream: Wrapping, body: &[u8], want: &[&[u8]]) {
        let whole = split_with_cuts(stream, body, &[]).expect("splits");
        assert_eq!(whole, want, "{stream:?} whole");
        for a in 0..=body.len() {
            assert_eq!(
                split_with_cuts(stream, body, &[a]).expect("splits"),
                want,
                "{stream:?} cut at {a}"
            );
        }
        // Every pair of cuts on short bodies; a grid of pairs on long ones.
        let step = (body.len() / 60).max(1);
        for a in (0..=body.len()).step_by(step) {
            for b in (a..=body.len()).step_by(step) {
                assert_eq!(
                    split_with_cuts(stream, body, &[a, b]).expect("splits"),
                    want,
                    "{stream:?} cuts {a},{b}"
                );
            }
        }
        // Byte by byte.
        let every: Vec<usize> = (0..=body.len()).collect();
        assert_eq!(
            split_with_cuts(stream, body, &every).expect("splits"),
            want,
            "{stream:?} bytewise"
        );
    }

    fn frames() -> Vec<&'static [u8]> {
        vec![
            b"o",
            b"h",
            br#"a["x","%41 100%","<\/script>","\"q\\\"","\u2028"]"#,
            br#"c[3000,"Go away!"]"#,
        ]
    }

    #[test]
    fn xhr_streaming_body() {
        let mut body = XHR_STREAMING_PRELUDE[..].to_vec();
        for f in frames() {
            Framing::Xhr.wrap(f, &mut body);
        }
        let mut want = vec![&XHR_STREAMING_PRELUDE[..2048]];
        want.extend(frames());
        assert_splits(Wrapping::Xhr, &body, &want);
    }

    #[test]
    fn eventsource_body() {
        let mut body = EVENTSOURCE_PRELUDE.to_vec();
        for f in frames() {
            Framing::EventSource.wrap(f, &mut body);
        }
        assert_splits(Wrapping::EventSource, &body, &frames());
    }

    #[test]
    fn eventsource_follows_the_event_stream_rules() {
        let body = b": comment\nid: 1\ndata:o\r\rdata: a\ndata\r\ndata:  b\nevent: x\n\ndata: %2 %0G %41%2F\n\n";
        assert_splits(
            Wrapping::EventSource,
            body,
            &[b"o", b"a\n\n b", b"%2 %0G A%2F"],
        );
        // sockjs-client only decodes `%` + digit + hex: `%C3` stays text,
        // `%85` (a lone UTF-8 continuation byte) makes decodeURI throw.
        assert_splits(Wrapping::EventSource, b"data: %C3%A9\n\n", &[b"%C3%A9"]);
        let mut s = Splitter::new(Wrapping::EventSource);
        s.push(b"data: %85\n\n");
        assert_eq!(s.next_frame(), Err(SplitError::Malformed));
        assert_eq!(s.next_frame(), Err(SplitError::Malformed), "stays failed");
    }

    #[test]
    fn htmlfile_body() {
        let mut body = Vec::new();
        htmlfile_prelude_into(Callback::parse(Some("callback")).expect("valid"), &mut body);
        for f in frames() {
            Framing::HtmlFile.wrap(f, &mut body);
        }
        assert_splits(Wrapping::HtmlFile, &body, &frames());
    }

    #[test]
    fn jsonp_body() {
        for f in frames() {
            let mut body = Vec::new();
            jsonp_into(
                Callback::parse(Some("_jp.a1b2c3")).expect("valid"),
                f,
                &mut body,
            );
            assert_splits(Wrapping::Jsonp, &body, &[f]);
        }
        // As sockjs-node writes it, with JSON.stringify.
        assert_splits(
            Wrapping::Jsonp,
            b"/**/x(\"a[\\\"b\\\"]\");\r\n",
            &[br#"a["b"]"#],
        );
    }

    #[test]
    fn broken_wrappings() {
        let mut s = Splitter::new(Wrapping::Jsonp);
        s.push(b"x(\"o\";");
        assert_eq!(s.next_frame(), Err(SplitError::Malformed));
        let mut s = Splitter::new(Wrapping::HtmlFile);
        s.push(b"<script>\np(\"\\q\");");
        assert_eq!(s.next_frame(), Err(SplitError::Malformed));
    }

    #[test]
    fn frame_length_limit() {
        for stream in [
            Wrapping::Xhr,
            Wrapping::EventSource,
            Wrapping::HtmlFile,
            Wrapping::Jsonp,
        ] {
            let mut s = Splitter::new(stream).with_max_frame_len(8);
            s.push(b"data: p(\"");
            s.push(&[b'x'; 8]);
            assert_eq!(s.next_frame(), Err(SplitError::TooLong(8)), "{stream:?}");
        }
        // Junk before the first call is dropped, not buffered.
        let mut s = Splitter::new(Wrapping::HtmlFile).with_max_frame_len(8);
        for _ in 0..100 {
            s.push(&[b' '; 100]);
            assert_eq!(s.next_frame(), Ok(Split::NeedMore));
        }
        assert!(s.buf.len() < 3);
    }
}
