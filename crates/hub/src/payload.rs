//! A published message, shared by every recipient.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use tokio_tungstenite::tungstenite::Utf8Bytes;

/// One application message on its way out, cheap to clone (one pointer).
///
/// The text is kept in the form the WebSocket writer sends as-is; other
/// framings (SockJS's escaped JSON string) are encoded the first time a
/// recipient needs them and cached, so each framing is encoded once per
/// message however many members receive it.
#[derive(Clone, Debug)]
pub struct Payload(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    text: Utf8Bytes,
    sockjs: OnceLock<Bytes>,
}

impl Payload {
    /// Wraps application text.
    pub fn new(text: impl Into<Utf8Bytes>) -> Payload {
        Payload(Arc::new(Inner { text: text.into(), sockjs: OnceLock::new() }))
    }

    /// The application text.
    pub fn as_str(&self) -> &str {
        self.0.text.as_str()
    }

    /// Length of the application text in bytes.
    pub fn len(&self) -> usize {
        self.0.text.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.0.text.is_empty()
    }

    /// The text as a WebSocket text payload (shares the bytes).
    pub fn ws_text(&self) -> Utf8Bytes {
        self.0.text.clone()
    }

    /// The text as a SockJS JSON string literal, escaped the way browsers
    /// need it; computed by `encode` on first use and cached.
    pub fn sockjs_json(&self, encode: impl FnOnce(&str) -> Bytes) -> &Bytes {
        self.0.sockjs.get_or_init(|| encode(self.as_str()))
    }
}

impl From<String> for Payload {
    fn from(text: String) -> Payload {
        Payload::new(text)
    }
}

impl From<&'static str> for Payload {
    fn from(text: &'static str) -> Payload {
        Payload::new(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framings_are_encoded_once_and_shared() {
        let p = Payload::from("hi");
        let q = p.clone();
        let mut calls = 0;
        let a = p.sockjs_json(|s| {
            calls += 1;
            Bytes::from(format!("\"{s}\""))
        });
        assert_eq!(a.as_ref(), b"\"hi\"");
        let b = q.sockjs_json(|_| unreachable!("cached"));
        assert_eq!(b.as_ptr(), a.as_ptr());
        assert_eq!(calls, 1);
        assert_eq!(p.ws_text().as_str(), "hi");
    }
}
