//! Sans-I/O codecs shared by the server and the bench: the application message
//! formats (`app`), the names people choose (`nickname`) and the SockJS framing
//! and JSON escaping (`sockjs`). Nothing
//! here touches a socket, so tests and fuzzers drive it with plain bytes.

pub mod app;
pub mod nickname;
pub mod sockjs;
pub mod xmpp;
