//! Fuzz bodies for the XML stream parser and the BOSH bodies built on it,
//! run by `cargo test` over a few thousand deterministic inputs and by
//! libFuzzer (`crates/wire/fuzz`) over more. None may panic on input alone.

use super::{Limits, StreamEvent, StreamParser};
use crate::bosh::Body;

/// A BOSH body from arbitrary bytes: parsing never panics, and a body that
/// parses can be written out again.
pub fn bosh_body(data: &[u8]) {
    let limits = Limits { max_stanza_bytes: 512, max_depth: 8, max_attributes: 8 };
    if let Ok(body) = Body::parse(data, limits) {
        let _ = body.to_xml();
    }
}

/// A stream from arbitrary bytes, fed whole and fed in pieces (the first
/// byte says how big): the parser never panics, and it reads the same
/// events, or fails on the same condition, however the bytes arrive. What
/// it holds never passes the stanza bound by more than one piece.
pub fn stream(data: &[u8]) {
    let Some((&piece, data)) = data.split_first() else { return };
    let limits = Limits { max_stanza_bytes: 512, max_depth: 8, max_attributes: 8 };
    let whole = run(data, data.len().max(1), limits);
    let pieces = run(data, usize::from(piece % 16) + 1, limits);
    assert_eq!(whole, pieces, "the same bytes in other pieces read differently: {:?}", String::from_utf8_lossy(data));
}

/// The events read, and the condition that ended the stream if one did.
fn run(data: &[u8], piece: usize, limits: Limits) -> (Vec<StreamEvent>, Option<&'static str>) {
    let mut parser = StreamParser::new(limits);
    let mut events = Vec::new();
    for chunk in data.chunks(piece) {
        parser.feed(chunk);
        loop {
            match parser.next_event() {
                Ok(Some(event)) => events.push(event),
                Ok(None) => break,
                Err(e) => return (events, Some(e.condition())),
            }
        }
        assert!(parser.buffered() <= limits.max_stanza_bytes + piece + 1, "held {} bytes", parser.buffered());
    }
    (events, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator: xorshift.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }

        /// A stream of plausible stanzas, sometimes damaged.
        fn stream(&mut self) -> Vec<u8> {
            const PARTS: [&str; 12] = [
                "<message to='a@b'><body>hi &amp; &#x41;</body></message>",
                "<presence/>",
                "<iq type='get' id='1'><ping xmlns='urn:xmpp:ping'/></iq>",
                " \n",
                "<x:y xmlns:x='urn:x'><x:z a='&quot;'/></x:y>",
                "<![CDATA[<a>]]>",
                "<!-- c -->",
                "&lol;",
                "</stream:stream>",
                "<a><b><c><d><e><f><g><h><i/></h></g></f></e></d></c></b></a>",
                "<message>",
                "</message>",
            ];
            let mut out = vec![u8::try_from(self.below(256)).unwrap_or(0)];
            out.extend_from_slice(b"<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>");
            for _ in 0..self.below(8) {
                out.extend_from_slice(PARTS[self.below(PARTS.len())].as_bytes());
            }
            for _ in 0..self.below(3) {
                let at = self.below(out.len());
                out[at] = u8::try_from(self.below(256)).unwrap_or(0);
            }
            out
        }
    }

    #[test]
    fn stream_on_generated_inputs() {
        let mut rng = Rng(0x5EED_0004);
        for _ in 0..3000 {
            stream(&rng.stream());
            let noise: Vec<u8> = (0..rng.below(64)).map(|_| u8::try_from(rng.below(256)).unwrap_or(0)).collect();
            stream(&noise);
        }
    }

    #[test]
    fn bosh_body_on_generated_inputs() {
        let mut rng = Rng(0x5EED_0005);
        let mut parsed = 0;
        for _ in 0..3000 {
            // The generated stream, its header made a body's.
            let stream = rng.stream();
            let text = String::from_utf8_lossy(&stream[1..])
                .replacen("<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>", "<body xmlns='http://jabber.org/protocol/httpbind' rid='1'>", 1)
                .replace("</stream:stream>", "</body>");
            let body = format!("{text}</body>");
            parsed += usize::from(Body::parse(body.as_bytes(), Limits::default()).is_ok());
            bosh_body(body.as_bytes());
        }
        assert!(parsed > 100, "only {parsed} generated bodies parsed: the generator no longer makes bodies");
    }
}
