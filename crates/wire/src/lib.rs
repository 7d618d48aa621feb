//! Sans-I/O codecs shared by the server and the bench: the application message
//! formats (`app`), BOSH bodies (`bosh`), the names people choose
//! (`nickname`), the SockJS framing and JSON escaping (`sockjs`) and XMPP's
//! XML stream (`xmpp`). Nothing
//! here touches a socket, so tests and fuzzers drive it with plain bytes.

pub mod app;
pub mod bosh;
pub mod nickname;
pub mod sockjs;
pub mod xmpp;
