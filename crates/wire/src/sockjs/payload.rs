//! What clients send: the bodies of `xhr_send` and `jsonp_send` requests and
//! the messages of the SockJS WebSocket transport, decoded into the list of
//! strings they carry. Errors are a small enum whose text is the reason
//! sockjs-node answers with, so the server can put it in the HTTP 500 body.

use super::json::{self, Reader};

/// Why a client payload was refused. `Display` is the reason sockjs-node
/// writes in the HTTP 500 body, which the protocol suite checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Nothing was sent (an empty body, or a form without a `d` value).
    #[error("Payload expected.")]
    Empty,
    /// Valid JSON, but not an array (`{}`, `"x"`, `null`…); sockjs-node
    /// gives the same answer as for an empty body.
    #[error("Payload expected.")]
    NotArray,
    /// Valid JSON containing something other than strings (`[1]`).
    /// sockjs-node hands such values to the application as they are;
    /// our messages are strings, and sockjs-client only ever sends strings,
    /// so we refuse rather than guess a conversion.
    #[error("Payload expected.")]
    NotStrings,
    /// Not JSON at all, or JSON cut short.
    #[error("Broken JSON encoding.")]
    BrokenJson,
}

impl PayloadError {
    /// The text for a person, as sockjs-node phrases it.
    pub fn reason(self) -> &'static str {
        match self {
            PayloadError::Empty | PayloadError::NotArray | PayloadError::NotStrings => {
                "Payload expected."
            }
            PayloadError::BrokenJson => "Broken JSON encoding.",
        }
    }

    /// True when the client sent nothing, or JSON of the wrong shape
    /// (sockjs-node: `Payload expected.`).
    pub fn is_payload_expected(self) -> bool {
        !self.is_broken_json()
    }

    /// True when what the client sent is not valid JSON
    /// (sockjs-node: `Broken JSON encoding.`).
    pub fn is_broken_json(self) -> bool {
        self == PayloadError::BrokenJson
    }
}

/// Decides, once the fast parser has failed, whether the input was broken
/// JSON or well-formed JSON of the wrong shape (`wrong_shape`).
fn classify(input: &[u8], wrong_shape: PayloadError) -> PayloadError {
    if json::is_valid_json(input) {
        wrong_shape
    } else {
        PayloadError::BrokenJson
    }
}

/// Decodes an `xhr_send` body: a JSON array of strings, possibly empty (a
/// client may send `[]` as a heartbeat). Whatever the request's content
/// type: sockjs-client and the protocol suite send several.
pub fn decode_xhr_send(body: &[u8]) -> Result<Vec<String>, PayloadError> {
    if body.is_empty() {
        return Err(PayloadError::Empty);
    }
    let mut r = Reader::new(body);
    let mut messages = Vec::new();
    let parsed = r.string_array(&mut messages).and_then(|()| r.end());
    match parsed {
        Ok(()) => Ok(messages),
        Err(_) => {
            let starts_array = Reader::new(body).peek() == Some(b'[');
            let shape = if starts_array {
                PayloadError::NotStrings
            } else {
                PayloadError::NotArray
            };
            Err(classify(body, shape))
        }
    }
}

/// Decodes one message received on the SockJS WebSocket transport. Like
/// sockjs-node: an empty message is ignored (no messages, no error), a JSON
/// array of strings gives its strings, and a single JSON string is accepted
/// as one message. On any error the server should close the socket with
/// [`BROKEN_FRAMING`](super::BROKEN_FRAMING), as sockjs-node does.
pub fn decode_websocket(message: &[u8]) -> Result<Vec<String>, PayloadError> {
    if message.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Reader::new(message);
    if r.peek() == Some(b'[') {
        return decode_xhr_send(message);
    }
    match r.string().and_then(|s| r.end().map(|()| s)) {
        Ok(s) => Ok(vec![s]),
        Err(_) => Err(classify(message, PayloadError::NotStrings)),
    }
}

/// The media type the JSONP sender (a hidden HTML form) posts with.
const FORM: &str = "application/x-www-form-urlencoded";

/// Decodes a `jsonp_send` body. With a form content type the JSON is the
/// value of the `d` field (the first one, if repeated); with any other or
/// none, the body is the JSON itself (the protocol suite sends raw JSON as
/// `text/plain`; sockjs-node refuses other types, we need not). A missing
/// or empty `d` is [`PayloadError::Empty`].
pub fn decode_jsonp_send(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Vec<String>, PayloadError> {
    let is_form = content_type
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(FORM));
    if !is_form {
        return decode_xhr_send(body);
    }
    let d = form_urlencoded::parse(body).find_map(|(k, v)| (k == "d").then_some(v));
    match d {
        Some(d) if !d.is_empty() => decode_xhr_send(d.as_bytes()),
        _ => Err(PayloadError::Empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Result<Vec<String>, PayloadError> {
        Ok(v.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn xhr_send_accepts_string_arrays() {
        assert_eq!(decode_xhr_send(br#"["a"]"#), strings(&["a"]));
        assert_eq!(decode_xhr_send(b"[]"), strings(&[]));
        assert_eq!(
            decode_xhr_send(b" [ \"a\" ,\n\"b\\u0000\" ] \r\n"),
            strings(&["a", "b\0"])
        );
        // What sockjs-client sends for an emoji and for a lone surrogate.
        assert_eq!(
            decode_xhr_send(br#"["\ud83d\ude00","\ud83d"]"#),
            strings(&["😀", "\u{fffd}"])
        );
    }

    #[test]
    fn xhr_send_errors_match_sockjs_node() {
        assert_eq!(decode_xhr_send(b""), Err(PayloadError::Empty));
        assert_eq!(decode_xhr_send(br#"["x"#), Err(PayloadError::BrokenJson));
        assert_eq!(decode_xhr_send(b" "), Err(PayloadError::BrokenJson));
        assert_eq!(decode_xhr_send(br#"["a"]]"#), Err(PayloadError::BrokenJson));
        assert_eq!(decode_xhr_send(br#"["a",]"#), Err(PayloadError::BrokenJson));
        assert_eq!(decode_xhr_send(b"[1, 2"), Err(PayloadError::BrokenJson));
        assert_eq!(decode_xhr_send(b"null"), Err(PayloadError::NotArray));
        assert_eq!(decode_xhr_send(br#"{"a":1}"#), Err(PayloadError::NotArray));
        assert_eq!(decode_xhr_send(br#""a""#), Err(PayloadError::NotArray));
        assert_eq!(
            decode_xhr_send(br#"["a",1]"#),
            Err(PayloadError::NotStrings)
        );
        assert_eq!(
            decode_xhr_send(br#"[["a"]]"#),
            Err(PayloadError::NotStrings)
        );

        assert_eq!(PayloadError::Empty.to_string(), "Payload expected.");
        assert_eq!(PayloadError::NotArray.reason(), "Payload expected.");
        assert_eq!(
            PayloadError::BrokenJson.to_string(),
            "Broken JSON encoding."
        );
        assert!(PayloadError::BrokenJson.is_broken_json());
        assert!(PayloadError::NotStrings.is_payload_expected());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert_eq!(
            decode_xhr_send(deep.as_bytes()),
            Err(PayloadError::BrokenJson)
        );
        assert_eq!(
            decode_websocket(deep.as_bytes()),
            Err(PayloadError::BrokenJson)
        );
    }

    #[test]
    fn websocket_messages() {
        assert_eq!(decode_websocket(b""), strings(&[]));
        assert_eq!(decode_websocket(b"[]"), strings(&[]));
        assert_eq!(decode_websocket(br#"["a","b"]"#), strings(&["a", "b"]));
        assert_eq!(decode_websocket(br#""a""#), strings(&["a"]));
        assert_eq!(decode_websocket(br#" "a" "#), strings(&["a"]));
        assert_eq!(decode_websocket(br#"["a"#), Err(PayloadError::BrokenJson));
        assert_eq!(decode_websocket(b" "), Err(PayloadError::BrokenJson));
        assert_eq!(decode_websocket(br#""a"#), Err(PayloadError::BrokenJson));
        assert_eq!(decode_websocket(b"1"), Err(PayloadError::NotStrings));
        assert_eq!(decode_websocket(b"{}"), Err(PayloadError::NotStrings));
    }

    /// The bodies `JsonPolling` in the protocol suite posts.
    #[test]
    fn jsonp_send_bodies_from_the_protocol_suite() {
        let form = Some("application/x-www-form-urlencoded");
        assert_eq!(decode_jsonp_send(form, b"d=%5B%22x%22%5D"), strings(&["x"]));
        assert_eq!(decode_jsonp_send(form, b"d=%5B%5D"), strings(&[]));
        assert_eq!(
            decode_jsonp_send(form, b"d=%5B%22x"),
            Err(PayloadError::BrokenJson)
        );
        for empty in [&b""[..], b"d=", b"p=p"] {
            assert_eq!(decode_jsonp_send(form, empty), Err(PayloadError::Empty));
        }
        assert_eq!(
            decode_jsonp_send(Some("text/plain"), br#"["%61bc"]"#),
            strings(&["%61bc"])
        );
        assert_eq!(decode_jsonp_send(None, br#"["a"]"#), strings(&["a"]));
    }

    #[test]
    fn jsonp_send_form_details() {
        let form = Some("Application/X-WWW-Form-Urlencoded; charset=UTF-8");
        // `+` is a space in forms; the first `d` wins.
        assert_eq!(
            decode_jsonp_send(form, b"x=1&d=%5B%22a+b%22%5D&d=junk"),
            strings(&["a b"])
        );
        // Invalid percent escapes pass through as text, as in Node's querystring.
        assert_eq!(decode_jsonp_send(form, b"d=[\"%zz\"]"), strings(&["%zz"]));
        assert_eq!(
            decode_jsonp_send(form, b"d=%5B%22%C3%A9%22%5D"),
            strings(&["é"])
        );
    }
}
