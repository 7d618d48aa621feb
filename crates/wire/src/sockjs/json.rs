//! JSON string literals as SockJS puts them on the wire, in both directions.
//!
//! Going out, a message becomes a JSON string literal that browsers survive
//! (`quote`); this runs once per published message in the server's hot path,
//! so it scans eight bytes at a time and copies clean runs in bulk. Coming in,
//! a small hand-written parser reads a JSON string, or an array of strings,
//! into Rust `String`s. It is hand-written rather than serde_json because
//! sockjs-client sends every surrogate as a `\uXXXX` escape, and a lone one
//! (a JavaScript string cut in the middle of an emoji) must cost one
//! character, not the whole batch: it becomes U+FFFD.

use std::borrow::Cow;

use bytes::{BufMut, Bytes, BytesMut};

/// Hex digits for `\uXXXX` escapes; lowercase, as `JSON.stringify` and
/// sockjs-node write them.
const HEX: &[u8; 16] = b"0123456789abcdef";

/// What the escaper must do with a byte of UTF-8 text.
const PASS: u8 = 0;
/// `"`, `\` or a C0 control: always escaped.
const ASCII: u8 = 1;
/// First byte of a three-byte sequence that may be in an escapable range:
/// 0xE2 starts U+2000..U+2FFF, 0xEF starts U+F000..U+FFFF.
const LEAD3: u8 = 2;
/// First byte of a four-byte sequence (U+10000 and up): written as a
/// surrogate pair of escapes.
const LEAD4: u8 = 3;

const fn escape_classes() -> [u8; 256] {
    let mut t = [PASS; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = ASCII;
        b += 1;
    }
    t[b'"' as usize] = ASCII;
    t[b'\\' as usize] = ASCII;
    t[0xE2] = LEAD3;
    t[0xEF] = LEAD3;
    // Only 0xF0..=0xF4 occur in UTF-8; the rest of the range is marked
    // too so the table and the word scan agree on every byte.
    let mut b = 0xF0;
    while b <= 0xFF {
        t[b] = LEAD4;
        b += 1;
    }
    t
}

static CLASS: [u8; 256] = escape_classes();

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` that equals `byte`. Bytes above the
/// first match may be flagged falsely (a borrow), never the first one, so
/// the lowest flag is exact.
#[inline]
fn eq_mask(w: u64, byte: u8) -> u64 {
    let x = w ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Flags (high bit per byte, little-endian order) the bytes of an 8-byte
/// word the escaper must look at: C0 controls, `"`, `\`, 0xE2 and 0xEF
/// (leads of U+2000..U+2FFF and U+F000..U+FFFF) and 0xF0.. (leads of astral
/// characters). The lowest flag is exact, so `trailing_zeros / 8` is the
/// offset of the first such byte; Latin, Cyrillic, most CJK and all other
/// text the escaper leaves alone passes eight bytes at a time.
#[inline]
fn attention_mask(w: u64) -> u64 {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    let astral_lead = w & (w << 1) & (w << 2) & (w << 3) & HIGHS;
    below_space
        | eq_mask(w, b'"')
        | eq_mask(w, b'\\')
        | eq_mask(w, 0xE2)
        | eq_mask(w, 0xEF)
        | astral_lead
}

/// Offset of the first byte at or after `from` the escaper must look at,
/// or `None` if the rest is clean.
#[inline]
fn next_candidate(bytes: &[u8], mut from: usize) -> Option<usize> {
    while let Some(word) = bytes.get(from..).and_then(<[u8]>::first_chunk::<8>) {
        let mask = attention_mask(u64::from_le_bytes(*word));
        if mask != 0 {
            return Some(from + (mask.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    let tail = bytes.get(from..)?;
    tail.iter()
        .position(|&b| CLASS[usize::from(b)] != PASS)
        .map(|at| from + at)
}

/// Offset of the first byte at or after `from` that ends a run of plain
/// characters inside a JSON string (`"`, `\\` or a raw control, which is an
/// error), eight bytes at a time; `None` if the input ends first.
#[inline]
fn next_in_string_special(bytes: &[u8], mut from: usize) -> Option<usize> {
    while let Some(word) = bytes.get(from..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*word);
        let mask =
            (w.wrapping_sub(ONES * 0x20) & !w & HIGHS) | eq_mask(w, b'"') | eq_mask(w, b'\\');
        if mask != 0 {
            return Some(from + (mask.trailing_zeros() / 8) as usize);
        }
        from += 8;
    }
    let tail = bytes.get(from..)?;
    tail.iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|at| from + at)
}

/// True for the code points SockJS sends as `\uXXXX` although JSON allows
/// them raw: browsers drop or rewrite them on some transports. This is the
/// set in sockjs-node's `quote` (`lib/utils.js`), which the protocol suite's
/// `escapable_by_server` checks (it adds the surrogate range, handled
/// separately since a Rust `str` holds none).
#[inline]
fn is_mangled_by_browsers(cp: u32) -> bool {
    matches!(cp, 0x200C..=0x200F | 0x2028..=0x202F | 0x2060..=0x206F | 0xFFF0..=0xFFFF)
}

#[inline]
fn put_u_escape(out: &mut (impl BufMut + ?Sized), unit: u32) {
    out.put_slice(&[
        b'\\',
        b'u',
        HEX[((unit >> 12) & 0xF) as usize],
        HEX[((unit >> 8) & 0xF) as usize],
        HEX[((unit >> 4) & 0xF) as usize],
        HEX[(unit & 0xF) as usize],
    ]);
}

/// The escape `JSON.stringify` writes for `"`, `\` and C0 controls: the
/// two-character forms where JSON has one (`\n`, `\t`, ...), else `\u00xx`.
/// The protocol suite's EventSource test pins this: it expects
/// `a["  \u0000\n\r "]`.
#[inline]
fn put_ascii_escape(out: &mut (impl BufMut + ?Sized), b: u8) {
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x09 => b't',
        0x0A => b'n',
        0x0C => b'f',
        0x0D => b'r',
        _ => return put_u_escape(out, u32::from(b)),
    };
    out.put_slice(&[b'\\', short]);
}

/// Appends `s` as a JSON string literal, quotes included, escaped exactly as
/// sockjs-node's `quote` does, byte for byte:
///
/// - `"` and `\` as `\"` and `\\`;
/// - C0 controls as `JSON.stringify` writes them: `\b \t \n \f \r`, the rest
///   `\u00xx` (lowercase hex);
/// - U+200C..U+200F, U+2028..U+202F, U+2060..U+206F and U+FFF0..U+FFFF as
///   lowercase `\uxxxx`, because browsers mangle them;
/// - characters above U+FFFF as a pair of surrogate escapes
///   (`😀` → `\ud83d\ude00`), because sockjs-node escapes every UTF-16
///   surrogate. This costs 12 bytes per emoji instead of 4, and buys
///   byte-identical frames with the reference server.
///
/// Everything else (DEL, `/`, `<`, other non-ASCII) is copied as is.
pub fn quote_into(s: &str, out: &mut (impl BufMut + ?Sized)) {
    let bytes = s.as_bytes();
    out.put_u8(b'"');
    // `run` is where the not-yet-copied clean run starts.
    let mut run = 0;
    let mut i = 0;
    while let Some(at) = next_candidate(bytes, i) {
        i = at;
        let b = bytes[i];
        match CLASS[usize::from(b)] {
            ASCII => {
                out.put_slice(&bytes[run..i]);
                put_ascii_escape(out, b);
                i += 1;
                run = i;
            }
            LEAD3 => {
                // A `str` is valid UTF-8, so the two continuation bytes exist.
                let Some(&[b1, b2]) = bytes.get(i + 1..).and_then(<[u8]>::first_chunk::<2>) else {
                    break;
                };
                let cp = (u32::from(b & 0x0F) << 12)
                    | (u32::from(b1 & 0x3F) << 6)
                    | u32::from(b2 & 0x3F);
                if is_mangled_by_browsers(cp) {
                    out.put_slice(&bytes[run..i]);
                    put_u_escape(out, cp);
                    run = i + 3;
                }
                i += 3;
            }
            _ => {
                let Some(&[b1, b2, b3]) = bytes.get(i + 1..).and_then(<[u8]>::first_chunk::<3>)
                else {
                    break;
                };
                let cp = (u32::from(b & 0x07) << 18)
                    | (u32::from(b1 & 0x3F) << 12)
                    | (u32::from(b2 & 0x3F) << 6)
                    | u32::from(b3 & 0x3F);
                let v = cp.wrapping_sub(0x1_0000);
                out.put_slice(&bytes[run..i]);
                put_u_escape(out, 0xD800 | (v >> 10));
                put_u_escape(out, 0xDC00 | (v & 0x3FF));
                i += 4;
                run = i;
            }
        }
    }
    out.put_slice(&bytes[run..]);
    out.put_u8(b'"');
}

/// `s` quoted as by [`quote_into`], as shareable bytes: the form the hub
/// caches once per published message and hands to
/// [`encode_messages`](super::encode_messages).
pub fn quote(s: &str) -> Bytes {
    // Most messages need no escapes: 2 quotes and a little slack.
    let mut out = BytesMut::with_capacity(s.len() + 8);
    quote_into(s, &mut out);
    out.freeze()
}

/// Appends `raw` as a JavaScript string literal the way `JSON.stringify`
/// would (escaping only `"`, `\` and C0 controls), for wrapping a whole
/// frame into a `p("...")` or `callback("...")` call. When `in_html` is set,
/// `<` is also written as `\u003c`, so that a message containing
/// `</script>` cannot end the htmlfile transport's script block (sockjs-node
/// does not do this; the browser decodes both to the same string).
pub(crate) fn js_string_into(raw: &[u8], in_html: bool, out: &mut (impl BufMut + ?Sized)) {
    out.put_u8(b'"');
    let mut run = 0;
    for (i, &b) in raw.iter().enumerate() {
        if CLASS[usize::from(b)] == ASCII {
            out.put_slice(&raw[run..i]);
            put_ascii_escape(out, b);
            run = i + 1;
        } else if in_html && b == b'<' {
            out.put_slice(&raw[run..i]);
            put_u_escape(out, u32::from(b'<'));
            run = i + 1;
        }
    }
    out.put_slice(&raw[run..]);
    out.put_u8(b'"');
}

/// Why the JSON string parser stopped. Callers map this onto the error of
/// the layer they serve; it never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonError {
    /// Not JSON at all, or JSON cut short.
    Syntax,
    /// Well-formed up to a value that is not a string (a number, `null`, an
    /// object…). Whether the whole input is valid JSON is decided later.
    NotString,
}

/// A cursor over JSON text, for the few shapes SockJS uses.
pub(crate) struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Reader { input, pos: 0 }
    }

    /// Skips JSON whitespace (space, tab, LF, CR; nothing else, as in
    /// `JSON.parse`) and returns the next byte without consuming it.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.input.get(self.pos) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Consumes `b` (after whitespace) or fails.
    pub(crate) fn expect(&mut self, b: u8) -> Result<(), JsonError> {
        if self.peek() == Some(b) {
            self.pos += 1;
            Ok(())
        } else {
            Err(JsonError::Syntax)
        }
    }

    /// Succeeds when only whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(JsonError::Syntax),
        }
    }

    /// Reads `[ "…", "…" ]` (possibly empty) and pushes each string.
    pub(crate) fn string_array(&mut self, out: &mut Vec<String>) -> Result<(), JsonError> {
        self.expect(b'[')?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            out.push(self.string()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(JsonError::Syntax),
            }
        }
    }

    /// Reads a non-negative integer that fits in `u16` (a close code).
    pub(crate) fn u16(&mut self) -> Result<u16, JsonError> {
        let start = match self.peek() {
            Some(b'0'..=b'9') => self.pos,
            _ => return Err(JsonError::Syntax),
        };
        let mut value: u32 = 0;
        while let Some(&d @ b'0'..=b'9') = self.input.get(self.pos) {
            value = value * 10 + u32::from(d - b'0');
            if value > u32::from(u16::MAX) || (self.pos > start && self.input[start] == b'0') {
                return Err(JsonError::Syntax);
            }
            self.pos += 1;
        }
        u16::try_from(value).map_err(|_| JsonError::Syntax)
    }

    /// Reads one JSON string literal. Invalid UTF-8 inside it becomes U+FFFD
    /// (as Node's `buffer.toString('utf8')` does before `JSON.parse`); an
    /// escaped lone surrogate becomes U+FFFD (a Rust `String` cannot hold
    /// one); a raw control character is a syntax error, as in `JSON.parse`.
    pub(crate) fn string(&mut self) -> Result<String, JsonError> {
        match self.peek() {
            Some(b'"') => self.pos += 1,
            Some(b'[' | b'{' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
                return Err(JsonError::NotString);
            }
            _ => return Err(JsonError::Syntax),
        }
        let input = self.input;
        let mut out = String::new();
        let mut run = self.pos;
        loop {
            let Some(at) = next_in_string_special(input, self.pos) else {
                return Err(JsonError::Syntax);
            };
            self.pos = at;
            match input[at] {
                b'"' => {
                    push_lossy(&mut out, &input[run..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    push_lossy(&mut out, &input[run..self.pos]);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    run = self.pos;
                }
                _ => return Err(JsonError::Syntax),
            }
        }
    }

    /// Decodes the escape after a backslash.
    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let Some(&b) = self.input.get(self.pos) else {
            return Err(JsonError::Syntax);
        };
        self.pos += 1;
        let c = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => self.unicode_escape()?,
            _ => return Err(JsonError::Syntax),
        };
        out.push(c);
        Ok(())
    }

    /// Decodes the hex of `\uXXXX` (the `\u` already read), joining a
    /// surrogate pair written as two escapes.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let unit = self.hex4()?;
        match unit {
            0xD800..=0xDBFF => {
                // Only a following `\uDC00..\uDFFF` completes the pair; if
                // anything else follows, leave it for the caller to read.
                let rest = &self.input[self.pos..];
                if let [b'\\', b'u', ..] = rest {
                    let save = self.pos;
                    self.pos += 2;
                    let low = self.hex4()?;
                    if (0xDC00..=0xDFFF).contains(&low) {
                        let cp = 0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                        return Ok(char::from_u32(cp).unwrap_or(char::REPLACEMENT_CHARACTER));
                    }
                    self.pos = save;
                }
                Ok(char::REPLACEMENT_CHARACTER)
            }
            _ => Ok(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER)),
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .input
            .get(self.pos..self.pos + 4)
            .ok_or(JsonError::Syntax)?;
        let mut unit = 0;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return Err(JsonError::Syntax),
            };
            unit = unit << 4 | u32::from(v);
        }
        self.pos += 4;
        Ok(unit)
    }
}

fn push_lossy(out: &mut String, raw: &[u8]) {
    match String::from_utf8_lossy(raw) {
        Cow::Borrowed(s) => out.push_str(s),
        Cow::Owned(s) => out.push_str(&s),
    }
}

/// True when `input` is one complete JSON value of any kind. Used only on
/// the error path, to tell "not JSON" from "JSON of the wrong shape".
pub(crate) fn is_valid_json(input: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(input).is_ok()
}

/// Parses a single JSON string literal (surrounding whitespace allowed).
pub(crate) fn parse_string(input: &[u8]) -> Result<String, JsonError> {
    let mut r = Reader::new(input);
    let s = r.string()?;
    r.end()?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> String {
        String::from_utf8(quote(s).to_vec()).expect("quote writes UTF-8")
    }

    #[test]
    fn plain_text_is_only_wrapped_in_quotes() {
        assert_eq!(q(""), r#""""#);
        assert_eq!(q("hello, world / <b>"), r#""hello, world / <b>""#);
        assert_eq!(q("\u{7f}é€"), "\"\u{7f}é€\"");
    }

    #[test]
    fn quote_and_backslash() {
        assert_eq!(q(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    #[test]
    fn control_characters_as_json_stringify_writes_them() {
        assert_eq!(
            q("\u{0}\u{1}\u{8}\t\n\u{b}\u{c}\r\u{1f} "),
            r#""\u0000\u0001\b\t\n\u000b\f\r\u001f ""#
        );
    }

    #[test]
    fn every_escapable_range_boundary() {
        let cases = [
            ('\u{200b}', "\u{200b}"),
            ('\u{200c}', r"\u200c"),
            ('\u{200f}', r"\u200f"),
            ('\u{2010}', "\u{2010}"),
            ('\u{2027}', "\u{2027}"),
            ('\u{2028}', r"\u2028"),
            ('\u{202f}', r"\u202f"),
            ('\u{2030}', "\u{2030}"),
            ('\u{205f}', "\u{205f}"),
            ('\u{2060}', r"\u2060"),
            ('\u{206f}', r"\u206f"),
            ('\u{2070}', "\u{2070}"),
            ('\u{ffef}', "\u{ffef}"),
            ('\u{fff0}', r"\ufff0"),
            ('\u{fffd}', r"\ufffd"),
            ('\u{ffff}', r"\uffff"),
            ('\u{10000}', r"\ud800\udc00"),
            ('\u{1f600}', r"\ud83d\ude00"),
            ('\u{10ffff}', r"\udbff\udfff"),
        ];
        for (c, want) in cases {
            assert_eq!(
                q(&c.to_string()),
                format!("\"{want}\""),
                "U+{:04X}",
                c as u32
            );
            // The same character between clean text must not disturb the runs.
            assert_eq!(
                q(&format!("abcdefghij{c}klmnopqrs")),
                format!("\"abcdefghij{want}klmnopqrs\"")
            );
        }
    }

    /// The exact string `test_xhr_server_encodes` sends and expects back.
    #[test]
    fn protocol_suite_server_killer_string() {
        let mut raw = String::new();
        let mut want = String::from("\"");
        for cp in 255..=0xFFFF_u32 {
            if is_mangled_by_browsers(cp) {
                raw.push(char::from_u32(cp).expect("not a surrogate"));
                want.push_str(&format!("\\u{cp:04x}"));
            }
        }
        want.push('"');
        assert_eq!(q(&raw), want);
    }

    /// Every character U+0000..U+FFFF (bar surrogates) survives
    /// quote → parse, alone and inside clean text, and agrees with serde_json.
    #[test]
    fn round_trip_every_bmp_character() {
        for cp in (0..=0xFFFF_u32).filter_map(char::from_u32) {
            for s in [cp.to_string(), format!("01234567{cp}89abcdefg")] {
                let quoted = quote(&s);
                assert_eq!(parse_string(&quoted), Ok(s.clone()), "U+{:04X}", cp as u32);
                let via_serde: String = serde_json::from_slice(&quoted).expect("valid JSON");
                assert_eq!(via_serde, s);
            }
        }
    }

    #[test]
    fn round_trip_astral_sample() {
        for cp in (0x1_0000..=0x10_FFFF_u32)
            .step_by(997)
            .chain([0x1F600, 0x10FFFF])
        {
            let c = char::from_u32(cp).expect("astral scalar");
            let s = format!("x{c}y{c}{c}");
            assert_eq!(parse_string(&quote(&s)), Ok(s));
        }
    }

    #[test]
    fn round_trip_large_message() {
        let s: String = "héllo \"wörld\"\n\u{2028}😀 ".repeat(5 * 1024 / 20);
        assert!(s.len() >= 5 * 1024);
        assert_eq!(parse_string(&quote(&s)), Ok(s));
    }

    /// Covers `test_xhr_server_decodes`: sockjs-client may send any BMP
    /// character as `\uXXXX`, in either case of hex.
    #[test]
    fn decodes_every_bmp_escape() {
        for unit in 0..=0xFFFF_u32 {
            let want = char::from_u32(unit)
                .unwrap_or(char::REPLACEMENT_CHARACTER)
                .to_string();
            for literal in [format!("\"\\u{unit:04x}\""), format!("\"\\u{unit:04X}\"")] {
                assert_eq!(
                    parse_string(literal.as_bytes()),
                    Ok(want.clone()),
                    "{literal}"
                );
            }
        }
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(parse_string(br#""a\ud800b""#).as_deref(), Ok("a\u{fffd}b"));
        assert_eq!(parse_string(br#""\udc00""#).as_deref(), Ok("\u{fffd}"));
        assert_eq!(
            parse_string(br#""\ud800\u0041""#).as_deref(),
            Ok("\u{fffd}A")
        );
        assert_eq!(
            parse_string(br#""\ud800\ud800\udc00""#).as_deref(),
            Ok("\u{fffd}\u{10000}")
        );
        assert_eq!(parse_string(br#""\uD83D\uDE00""#).as_deref(), Ok("😀"));
        assert_eq!(parse_string(br#""\ud800""#).as_deref(), Ok("\u{fffd}"));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(parse_string(b"\"a\xffb\"").as_deref(), Ok("a\u{fffd}b"));
    }

    #[test]
    fn malformed_strings_are_syntax_errors() {
        for bad in [
            &b"\"abc"[..],
            b"\"a\\",
            b"\"\\x\"",
            b"\"\\u12\"",
            b"\"\\u12g4\"",
            b"\"a\nb\"",
            b"\"a\" x",
            b"",
            b"'a'",
        ] {
            assert_eq!(
                parse_string(bad),
                Err(JsonError::Syntax),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse_string(b"12"), Err(JsonError::NotString));
        assert_eq!(parse_string(b" null"), Err(JsonError::NotString));
    }

    #[test]
    fn js_string_escapes_like_json_stringify() {
        let mut out = Vec::new();
        js_string_into(br#"a["x\"</script>\n"]"#, false, &mut out);
        assert_eq!(out, br#""a[\"x\\\"</script>\\n\"]""#);
        out.clear();
        js_string_into(b"a[\"</script>\"]\x01", true, &mut out);
        assert_eq!(out, br#""a[\"\u003c/script>\"]\u0001""#);
    }

    /// The word scan finds the first candidate byte exactly where the byte
    /// table does: every byte value, in every lane, among fillers that
    /// must pass and fillers that must not, on the word path and the tail.
    #[test]
    fn word_scan_agrees_with_byte_table() {
        let reference = |bytes: &[u8]| bytes.iter().position(|&x| CLASS[usize::from(x)] != PASS);
        let fillers = [
            b'a', 0x7F, 0x80, 0xBF, 0xC3, 0xD0, 0xE1, 0xE3, 0xEE, 0x00, b'"', 0xF4,
        ];
        for b in 0..=255u8 {
            for filler in fillers {
                for lane in 0..8 {
                    let mut w = [filler; 8];
                    w[lane] = b;
                    let mask = attention_mask(u64::from_le_bytes(w));
                    let found = (mask != 0).then(|| (mask.trailing_zeros() / 8) as usize);
                    assert_eq!(
                        found,
                        reference(&w),
                        "byte {b:#x} lane {lane} filler {filler:#x}"
                    );
                    let mut long = [b'z'; 19];
                    long[3 + lane] = b;
                    long[11 + lane] = filler;
                    assert_eq!(next_candidate(&long, 0), reference(&long));
                    assert_eq!(
                        next_candidate(&long, 5),
                        reference(&long[5..]).map(|at| at + 5)
                    );
                    assert_eq!(next_candidate(&w[lane..], 0), reference(&w[lane..]));
                }
            }
        }
    }

    /// Same check for the decoder's scan inside a string.
    #[test]
    fn string_scan_agrees_with_byte_check() {
        let reference = |bytes: &[u8]| {
            bytes
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        };
        for b in 0..=255u8 {
            for filler in [b'a', 0x7F, 0x80, 0xE2, 0xFF, b'"', 0x00] {
                for lane in 0..8 {
                    let mut long = [b'z'; 19];
                    long[3 + lane] = b;
                    long[11 + lane] = filler;
                    for from in [0, 5, 13] {
                        let want = reference(&long[from..]).map(|at| at + from);
                        assert_eq!(
                            next_in_string_special(&long, from),
                            want,
                            "{b:#x} {filler:#x} {lane}"
                        );
                    }
                }
            }
        }
    }
}
