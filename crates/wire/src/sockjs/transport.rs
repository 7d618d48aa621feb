//! How each SockJS HTTP transport wraps a frame on the wire, and the
//! preludes some of them send first. These are pure byte helpers: the
//! server's transports call them once per frame (or once per published
//! message and framing, when the hub shares the bytes), the tests pin the
//! exact bytes the protocol suite expects, and [`Splitter`](super::Splitter)
//! undoes them for the bench.

use bytes::BufMut;

use super::json::js_string_into;

/// Streaming transports a frame can be wrapped for without per-request
/// state. (JSONP needs the request's callback: see [`jsonp_into`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Framing {
    /// The SockJS WebSocket transport: one frame per WebSocket message, as is.
    WebSocket,
    /// `xhr` and `xhr_streaming`: the frame and a newline.
    Xhr,
    /// `eventsource`: one `data:` event per frame.
    EventSource,
    /// `htmlfile`: one `<script>` block per frame.
    HtmlFile,
}

impl Framing {
    /// Appends `frame` wrapped for this transport.
    pub fn wrap(self, frame: &[u8], out: &mut (impl BufMut + ?Sized)) {
        match self {
            Framing::WebSocket => out.put_slice(frame),
            Framing::Xhr => xhr_into(frame, out),
            Framing::EventSource => eventsource_into(frame, out),
            Framing::HtmlFile => htmlfile_into(frame, out),
        }
    }
}

/// Appends an `xhr`/`xhr_streaming` frame: the frame, then `\n`.
pub fn xhr_into(frame: &[u8], out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(frame);
    out.put_u8(b'\n');
}

/// First bytes of an `xhr_streaming` response: 2048 `h` and a newline.
/// Old IE buffers the first 2 KiB of a streamed XHR before telling the page
/// anything; sockjs-client reads the line as one heartbeat.
pub const XHR_STREAMING_PRELUDE: &[u8; 2049] = &{
    let mut p = [b'h'; 2049];
    p[2048] = b'\n';
    p
};

/// First bytes of an `eventsource` response: an empty line, because Opera
/// missed the first event without it.
pub const EVENTSOURCE_PRELUDE: &[u8] = b"\r\n";

/// Appends `data: <frame>\r\n\r\n`. In the frame, `%`, CR, LF and NUL are
/// written `%25`, `%0D`, `%0A`, `%00`: an event line cannot hold the last
/// three, and sockjs-client runs every event through `decodeURI`, so a bare
/// `%` would be misread. (Frames from this module never contain CR, LF or
/// NUL, so in practice only `%` changes.)
pub fn eventsource_into(frame: &[u8], out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(b"data: ");
    let mut run = 0;
    for (i, &b) in frame.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'%' => b"%25",
            b'\r' => b"%0D",
            b'\n' => b"%0A",
            0 => b"%00",
            _ => continue,
        };
        out.put_slice(&frame[run..i]);
        out.put_slice(escaped);
        run = i + 1;
    }
    out.put_slice(&frame[run..]);
    out.put_slice(b"\r\n\r\n");
}

/// Appends `<script>\np("<frame as a JS string>");\n</script>\r\n`. The
/// frame's `"`, `\` and controls are escaped as `JSON.stringify` does, and
/// `<` as `\u003c` so a message holding `</script>` cannot break out of the
/// script block (a deliberate difference from sockjs-node, same string once
/// the browser decodes it).
pub fn htmlfile_into(frame: &[u8], out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(b"<script>\np(");
    js_string_into(frame, true, out);
    out.put_slice(b");\n</script>\r\n");
}

/// The `htmlfile` page up to the callback name. The text is what the
/// protocol suite compares (after trimming whitespace); the
/// `document.domain` line lets the iframe talk to its parent page.
const HTMLFILE_HEAD: &str = "\n<!doctype html>\n<html><head>\n  \
<meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n  \
<meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n\
</head><body><h2>Don't panic!</h2>\n  <script>\n    \
document.domain = document.domain;\n    var c = parent.";

/// The `htmlfile` page after the callback name.
const HTMLFILE_TAIL: &str = ";\n    c.start();\n    function p(d) {c.message(d);};\n    \
window.onload = function() {c.stop();};\n  </script>\n";

/// Spaces after the page so that it is over 1 KiB even with a one-letter
/// callback: Safari renders nothing of a page until it has 1024 bytes. The
/// count is sockjs-node's, so the prelude is byte-identical to it.
const HTMLFILE_PADDING: [u8; 1023 - HTMLFILE_HEAD.len() - HTMLFILE_TAIL.len()] =
    [b' '; 1023 - HTMLFILE_HEAD.len() - HTMLFILE_TAIL.len()];

/// Appends the page an `htmlfile` response starts with, naming `callback`
/// (`parent.<callback>` receives the frames): 1027 + callback-length bytes.
pub fn htmlfile_prelude_into(callback: Callback<'_>, out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(HTMLFILE_HEAD.as_bytes());
    out.put_slice(callback.as_str().as_bytes());
    out.put_slice(HTMLFILE_TAIL.as_bytes());
    out.put_slice(&HTMLFILE_PADDING);
    out.put_slice(b"\r\n\r\n");
}

/// Appends a `jsonp` response: `/**/callback("<frame as a JS string>");\r\n`.
/// The leading comment defeats the Rosetta Flash attack on JSONP
/// (sockjs-node #163), as does the callback length limit.
pub fn jsonp_into(callback: Callback<'_>, frame: &[u8], out: &mut (impl BufMut + ?Sized)) {
    out.put_slice(b"/**/");
    out.put_slice(callback.as_str().as_bytes());
    out.put_u8(b'(');
    js_string_into(frame, false, out);
    out.put_slice(b");\r\n");
}

/// A JavaScript callback name from the `c` (or `callback`) query parameter
/// of `htmlfile` and `jsonp`, checked safe to write into a page or script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callback<'a>(&'a str);

impl<'a> Callback<'a> {
    /// Longest name accepted. sockjs-node limits JSONP callbacks to 32
    /// characters against Rosetta Flash; we apply it to htmlfile too, since
    /// sockjs-client's names (`_jp.a1b2c3d`) are far shorter.
    pub const MAX_LEN: usize = 32;

    /// Checks the query parameter's (already percent-decoded) value: `None`
    /// when neither `c` nor `callback` was given; otherwise one to
    /// [`MAX_LEN`](Self::MAX_LEN) characters from `[a-zA-Z0-9_.-]`.
    pub fn parse(param: Option<&'a str>) -> Result<Self, CallbackError> {
        let name = param.ok_or(CallbackError::Missing)?;
        let ok = !name.is_empty()
            && name.len() <= Self::MAX_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if ok {
            Ok(Callback(name))
        } else {
            Err(CallbackError::Invalid)
        }
    }

    /// The name.
    pub fn as_str(self) -> &'a str {
        self.0
    }
}

/// Why a callback parameter was refused; the server answers HTTP 500 with
/// this text, which the protocol suite checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// No `c` or `callback` query parameter.
    #[error("\"callback\" parameter required")]
    Missing,
    /// Empty, too long, or a character outside `[a-zA-Z0-9_.-]`.
    #[error("invalid \"callback\" parameter")]
    Invalid,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(framing: Framing, frame: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        framing.wrap(frame, &mut out);
        out
    }

    fn cb(name: &str) -> Callback<'_> {
        Callback::parse(Some(name)).expect("valid callback")
    }

    #[test]
    fn websocket_and_xhr_bytes() {
        assert_eq!(wrapped(Framing::WebSocket, br#"a["x"]"#), br#"a["x"]"#);
        assert_eq!(wrapped(Framing::Xhr, b"o"), b"o\n");
        assert_eq!(
            wrapped(Framing::Xhr, br#"c[2010,"Another connection still open"]"#),
            b"c[2010,\"Another connection still open\"]\n"
        );
        assert_eq!(XHR_STREAMING_PRELUDE.len(), 2049);
        assert_eq!(
            &XHR_STREAMING_PRELUDE[..],
            format!("{}\n", "h".repeat(2048)).as_bytes()
        );
    }

    #[test]
    fn eventsource_bytes() {
        assert_eq!(EVENTSOURCE_PRELUDE, b"\r\n");
        assert_eq!(wrapped(Framing::EventSource, b"o"), b"data: o\r\n\r\n");
        assert_eq!(
            wrapped(Framing::EventSource, br#"a["x"]"#),
            b"data: a[\"x\"]\r\n\r\n"
        );
        // From the protocol suite: the frame's JSON escapes pass untouched.
        assert_eq!(
            wrapped(Framing::EventSource, br#"a["  \u0000\n\r "]"#),
            b"data: a[\"  \\u0000\\n\\r \"]\r\n\r\n"
        );
        assert_eq!(
            wrapped(Framing::EventSource, b"a[\"100%\"]\r\n\0"),
            b"data: a[\"100%25\"]%0D%0A%00\r\n\r\n"
        );
    }

    #[test]
    fn htmlfile_bytes() {
        assert_eq!(
            wrapped(Framing::HtmlFile, b"o"),
            b"<script>\np(\"o\");\n</script>\r\n"
        );
        assert_eq!(
            wrapped(Framing::HtmlFile, br#"a["x"]"#),
            b"<script>\np(\"a[\\\"x\\\"]\");\n</script>\r\n"
        );
        assert_eq!(
            wrapped(Framing::HtmlFile, br#"a["</script>"]"#),
            b"<script>\np(\"a[\\\"\\u003c/script>\\\"]\");\n</script>\r\n"
        );
    }

    /// `HtmlFile.test_transport`: trimmed, the prelude is exactly the page,
    /// and it is over 1024 bytes.
    #[test]
    fn htmlfile_prelude_matches_protocol_suite() {
        let mut out = Vec::new();
        htmlfile_prelude_into(cb("callback"), &mut out);
        let text = String::from_utf8(out).expect("ASCII");
        let page = "<!doctype html>
<html><head>
  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />
  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />
</head><body><h2>Don't panic!</h2>
  <script>
    document.domain = document.domain;
    var c = parent.callback;
    c.start();
    function p(d) {c.message(d);};
    window.onload = function() {c.stop();};
  </script>";
        assert_eq!(text.trim(), page);
        // sockjs-node's padding makes the page 1027 bytes plus the name:
        // a newline, the page, a newline, spaces, then an empty line.
        assert_eq!(text.len(), 1027 + "callback".len());
        let spaces = text.len() - page.len() - 2 - 4;
        assert_eq!(text, format!("\n{page}\n{}\r\n\r\n", " ".repeat(spaces)));

        let mut short = Vec::new();
        htmlfile_prelude_into(cb("x"), &mut short);
        assert!(short.len() > 1024);
    }

    #[test]
    fn jsonp_bytes() {
        let mut out = Vec::new();
        jsonp_into(cb("callback"), b"o", &mut out);
        assert_eq!(out, b"/**/callback(\"o\");\r\n");
        out.clear();
        jsonp_into(cb("x"), br#"c[3000,"Go away!"]"#, &mut out);
        assert_eq!(out, b"/**/x(\"c[3000,\\\"Go away!\\\"]\");\r\n");
        out.clear();
        jsonp_into(cb("x"), br#"a["abc","%61bc"]"#, &mut out);
        assert_eq!(out, b"/**/x(\"a[\\\"abc\\\",\\\"%61bc\\\"]\");\r\n");
    }

    #[test]
    fn callback_validation() {
        assert_eq!(Callback::parse(None), Err(CallbackError::Missing));
        for ok in ["callback", "x", "_jp.a1b2c3d", "a-b_c.D9", &"a".repeat(32)] {
            assert_eq!(Callback::parse(Some(ok)).map(Callback::as_str), Ok(ok));
        }
        // The protocol suite's invalid names, percent-decoded, and more.
        for bad in [
            " ",
            "*",
            "abc(",
            "",
            "a b",
            "é",
            "a;alert(1)",
            &"a".repeat(33),
        ] {
            assert_eq!(
                Callback::parse(Some(bad)),
                Err(CallbackError::Invalid),
                "{bad:?}"
            );
        }
        assert_eq!(
            CallbackError::Missing.to_string(),
            "\"callback\" parameter required"
        );
        assert_eq!(
            CallbackError::Invalid.to_string(),
            "invalid \"callback\" parameter"
        );
    }
}
