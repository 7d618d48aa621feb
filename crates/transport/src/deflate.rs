//! permessage-deflate (RFC 7692) on the native WebSocket endpoints: the
//! negotiation. The codec, shared with the bench, is
//! [`wire::websocket::deflate`]: [`compress`] for the server's messages and
//! [`Inflating`] for the client's.
//!
//! The server always answers with `server_no_context_takeover`: each message
//! it sends is compressed on its own, so the compressed bytes of a message do
//! not depend on the connection, and a broadcast is compressed once and the
//! same frame is shared by every member that agreed the same window
//! ([`hub::Payload::deflated`]).

use hyper::header::{HeaderMap, HeaderValue, SEC_WEBSOCKET_EXTENSIONS};
pub use wire::websocket::deflate::{COMPRESS_FROM, FULL_WINDOW, Inflate, Inflating, Role, compress, is_corrupt, is_too_big};

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

impl Agreed {
    /// How the client's messages are read: by a server, keeping the inflater
    /// between messages unless the client resets its own.
    pub fn inflate(&self, max_frame: usize) -> Inflate {
        Inflate { role: Role::Server, peer_no_context_takeover: self.client_no_context_takeover, max_frame: max_frame as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
