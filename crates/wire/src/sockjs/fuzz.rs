//! Fuzz bodies for the SockJS codec. They live in the library, not in the
//! fuzz crate, so that `cargo test` runs them too, over a few thousand
//! deterministic inputs, and a libFuzzer run (`crates/wire/fuzz`) only adds
//! more inputs. Each one panics on a broken property; none may panic on
//! input alone.

use bytes::BytesMut;

use super::json;
use super::{
    Callback, Frame, Framing, PayloadError, Split, SplitError, Splitter, Wrapping,
    decode_jsonp_send, decode_websocket, decode_xhr_send, encode_strings, jsonp_into, parse_frame,
    quote,
};

/// Client payloads and server frames from arbitrary bytes: whatever the
/// decoders accept re-encodes to the same messages, serde_json agrees on
/// what both can represent, and errors are classified consistently.
pub fn client_payload(data: &[u8]) {
    let ours = decode_xhr_send(data);
    // serde_json reads exactly the inputs that are valid UTF-8 arrays of
    // strings without lone surrogates; on those we must agree.
    if let Ok(theirs) = serde_json::from_slice::<Vec<String>>(data) {
        assert_eq!(ours.as_ref(), Ok(&theirs), "disagrees with serde_json");
    }
    match &ours {
        Ok(messages) => {
            let mut frame = BytesMut::new();
            encode_strings(messages, &mut frame);
            assert_eq!(
                parse_frame(&frame).as_ref(),
                Ok(&Frame::Messages(messages.clone()))
            );
            assert_eq!(decode_xhr_send(&frame[1..]).as_ref(), Ok(messages));
            assert_eq!(decode_websocket(data).as_ref(), Ok(messages));
        }
        Err(PayloadError::BrokenJson) => assert!(!json::is_valid_json(data)),
        Err(PayloadError::NotArray | PayloadError::NotStrings) => {
            assert!(json::is_valid_json(data))
        }
        Err(_) => assert!(data.is_empty()),
    }
    let _ = decode_websocket(data);
    let _ = decode_jsonp_send(Some("application/x-www-form-urlencoded"), data);
    let _ = decode_jsonp_send(Some("text/plain"), data);
    if let Ok(frame) = parse_frame(data) {
        let mut again = BytesMut::new();
        frame.encode(&mut again);
        assert_eq!(parse_frame(&again), Ok(frame));
    }
}

/// Everything a splitter yields for `body` pushed in the given pieces: the
/// frames, then `Ok(())` if it ended wanting more or the error it hit.
fn split_all<'a>(
    stream: Wrapping,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> (Vec<bytes::Bytes>, Result<(), SplitError>) {
    let mut s = Splitter::new(stream);
    let mut frames = Vec::new();
    for piece in pieces {
        s.push(piece);
        loop {
            match s.next_frame() {
                Ok(Split::Frame(f)) => frames.push(f),
                Ok(Split::NeedMore) => break,
                Err(e) => return (frames, Err(e)),
            }
        }
    }
    (frames, Ok(()))
}

/// Splitting: the first byte picks the transport, the second how to cut the
/// rest into chunks. Cutting must not change what comes out, and every
/// frame must parse or fail without panicking.
pub fn split(data: &[u8]) {
    let [kind, cut_seed, body @ ..] = data else {
        return;
    };
    let stream = [
        Wrapping::Xhr,
        Wrapping::EventSource,
        Wrapping::HtmlFile,
        Wrapping::Jsonp,
    ][usize::from(kind % 4)];
    let whole = split_all(stream, [body]);
    let step = usize::from(cut_seed % 16) + 1;
    let chunked = split_all(stream, body.chunks(step));
    assert_eq!(whole, chunked, "{stream:?} cut every {step}");
    for frame in &whole.0 {
        let _ = parse_frame(frame);
    }
}

/// Round trip from text: quote → parse gives the text back (serde_json
/// agrees), nothing browsers mangle is left raw, and messages made from the
/// text survive every transport wrapping and the splitter.
pub fn round_trip(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let quoted = quote(&text);
    assert_eq!(json::parse_string(&quoted).as_deref(), Ok(&*text));
    assert_eq!(
        serde_json::from_slice::<String>(&quoted).ok().as_deref(),
        Some(&*text)
    );
    let quoted_text = std::str::from_utf8(&quoted).expect("quote writes UTF-8");
    assert!(
        quoted_text.chars().all(|c| {
            let cp = u32::from(c);
            (0x20..=0xFFFF).contains(&cp)
                && !matches!(cp, 0x200C..=0x200F | 0x2028..=0x202F | 0x2060..=0x206F | 0xFFF0..=0xFFFF)
        }),
        "raw escapable character in {quoted_text:?}"
    );

    let messages: Vec<&str> = text.split('|').collect();
    let mut frame = BytesMut::new();
    encode_strings(&messages, &mut frame);
    let want = Frame::Messages(messages.iter().map(|m| (*m).to_owned()).collect());
    let streams = [
        (Framing::Xhr, Wrapping::Xhr),
        (Framing::EventSource, Wrapping::EventSource),
        (Framing::HtmlFile, Wrapping::HtmlFile),
    ];
    for (framing, stream) in streams {
        let mut body = BytesMut::new();
        framing.wrap(&frame, &mut body);
        framing.wrap(b"h", &mut body);
        let (frames, end) = split_all(stream, body.chunks(7));
        assert_eq!(end, Ok(()), "{stream:?}");
        assert_eq!(frames.len(), 2, "{stream:?}");
        assert_eq!(parse_frame(&frames[0]).as_ref(), Ok(&want), "{stream:?}");
    }
    let mut body = BytesMut::new();
    if let Ok(callback) = Callback::parse(Some("cb")) {
        jsonp_into(callback, &frame, &mut body);
    }
    let (frames, _) = split_all(Wrapping::Jsonp, [&body[..]]);
    assert_eq!(frames.first().map(|f| parse_frame(f)), Some(Ok(want)));
}

/// Deterministic inputs for the fuzz bodies under `cargo test`: no clock,
/// no OS randomness, the same bytes on every run.
#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: tiny, deterministic, good enough to pick bytes.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % n as u64).unwrap_or(0)
        }

        /// Bytes biased towards what the parsers branch on.
        fn bytes(&mut self, max_len: usize) -> Vec<u8> {
            const PIECES: &[&[u8]] = &[
                b"[",
                b"]",
                b"\"",
                b",",
                b" ",
                b"\\",
                b"\\u",
                b"d8",
                b"dc",
                b"00",
                b"20",
                b"28",
                b"ff",
                b"\\ud83d",
                b"\\ude00",
                b"\\ud800",
                b"a",
                b"x",
                b"1",
                b"null",
                b"{}",
                b"\n",
                b"\r",
                b"\0",
                b"%",
                b"%25",
                b"%0A",
                b"%2F",
                b"%C3",
                b"d=",
                b"&",
                b"+",
                b"data:",
                b"data: ",
                b":",
                b"p(\"",
                b"(\"",
                b")",
                b";",
                b"<script>",
                "é".as_bytes(),
                "\u{2028}".as_bytes(),
                "\u{ffff}".as_bytes(),
                "😀".as_bytes(),
                b"\xff",
                b"\xed\xa0\x80",
                b"o",
                b"h",
                b"a[",
                b"c[3000,",
            ];
            let len = self.below(max_len + 1);
            let mut out = Vec::new();
            while out.len() < len {
                if self.below(4) == 0 {
                    out.push(u8::try_from(self.below(256)).unwrap_or(0));
                } else {
                    out.extend_from_slice(PIECES[self.below(PIECES.len())]);
                }
            }
            out
        }

        /// A valid `xhr_send` body, sometimes with one byte changed.
        fn payload(&mut self) -> Vec<u8> {
            let n = self.below(4);
            let messages: Vec<String> = (0..n)
                .map(|_| String::from_utf8_lossy(&self.bytes(12)).into_owned())
                .collect();
            let mut body = BytesMut::new();
            encode_strings(&messages, &mut body);
            let mut body = body[1..].to_vec();
            if self.below(2) == 0 && !body.is_empty() {
                let at = self.below(body.len());
                body[at] = u8::try_from(self.below(256)).unwrap_or(0);
            }
            body
        }

        /// A wrapped stream body for `split`, sometimes damaged.
        fn stream_body(&mut self) -> Vec<u8> {
            let kind = u8::try_from(self.below(4)).unwrap_or(0);
            let mut body = vec![kind, u8::try_from(self.below(256)).unwrap_or(0)];
            let framing =
                [Framing::Xhr, Framing::EventSource, Framing::HtmlFile][usize::from(kind % 3)];
            for _ in 0..self.below(4) {
                let frame = self.payload();
                if kind == 3 {
                    if let Ok(cb) = Callback::parse(Some("x")) {
                        jsonp_into(cb, &frame, &mut body);
                    }
                } else {
                    framing.wrap(&frame, &mut body);
                }
                if self.below(3) == 0 {
                    body.extend(self.bytes(6));
                }
            }
            body
        }
    }

    const CASES: usize = 3000;

    #[test]
    fn client_payload_on_generated_inputs() {
        let mut rng = Rng(0x5EED_0001);
        for _ in 0..CASES {
            client_payload(&rng.bytes(40));
            client_payload(&rng.payload());
        }
    }

    #[test]
    fn split_on_generated_inputs() {
        let mut rng = Rng(0x5EED_0002);
        for _ in 0..CASES {
            split(&rng.bytes(60));
            split(&rng.stream_body());
        }
    }

    #[test]
    fn round_trip_on_generated_inputs() {
        let mut rng = Rng(0x5EED_0003);
        for _ in 0..CASES {
            round_trip(&rng.bytes(40));
        }
    }
}
