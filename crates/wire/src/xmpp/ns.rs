//! The namespaces XMPP clients and servers speak, named once for both sides.

/// Stanzas of a client stream (RFC 6120 §4.8.3).
pub const CLIENT: &str = "jabber:client";
/// Stanzas of a stream between servers (RFC 6120 §4.8.3).
pub const SERVER: &str = "jabber:server";
/// Server Dialback's elements, `db:result` and `db:verify` (XEP-0220).
pub const DIALBACK: &str = "jabber:server:dialback";
/// The stream feature that says a server takes streams both ways (XEP-0288).
pub const BIDI_FEATURE: &str = "urn:xmpp:features:bidi";
/// What asks for a stream both ways (XEP-0288).
pub const BIDI: &str = "urn:xmpp:bidi";
/// The stream feature that says a server speaks Server Dialback (XEP-0220 §2.4).
pub const DIALBACK_FEATURE: &str = "urn:xmpp:features:dialback";
/// The stream's own elements: `<stream:stream/>`, `<stream:features/>`, `<stream:error/>`.
pub const STREAMS: &str = super::STREAMS_NS;
/// XMPP over WebSocket's `<open/>` and `<close/>` (RFC 7395 §3.3).
pub const FRAMING: &str = "urn:ietf:params:xml:ns:xmpp-framing";
pub const STREAM_ERRORS: &str = "urn:ietf:params:xml:ns:xmpp-streams";
pub const STANZA_ERRORS: &str = "urn:ietf:params:xml:ns:xmpp-stanzas";
pub const SASL: &str = "urn:ietf:params:xml:ns:xmpp-sasl";
/// The Extensible SASL Profile, SASL2 (XEP-0388).
pub const SASL2: &str = "urn:xmpp:sasl:2";
/// Bind 2, resource binding inside SASL2 (XEP-0386).
pub const BIND2: &str = "urn:xmpp:bind:0";
/// FAST tokens (XEP-0484).
pub const FAST: &str = "urn:xmpp:fast:0";
pub const TLS: &str = "urn:ietf:params:xml:ns:xmpp-tls";
pub const SM: &str = "urn:xmpp:sm:3";
pub const BIND: &str = "urn:ietf:params:xml:ns:xmpp-bind";
/// RFC 3921's session establishment, which older servers still ask for.
pub const SESSION: &str = "urn:ietf:params:xml:ns:xmpp-session";
pub const PING: &str = "urn:xmpp:ping";
pub const DISCO_INFO: &str = "http://jabber.org/protocol/disco#info";
pub const DISCO_ITEMS: &str = "http://jabber.org/protocol/disco#items";
pub const ROSTER: &str = "jabber:iq:roster";
/// Roster versioning's stream feature (RFC 6121 §2.6.1).
pub const ROSTER_VERSIONING: &str = "urn:xmpp:features:rosterver";
/// Chat state notifications (XEP-0085): typing, and having stopped.
pub const CHATSTATES: &str = "http://jabber.org/protocol/chatstates";
pub const MUC: &str = "http://jabber.org/protocol/muc";
pub const MUC_USER: &str = "http://jabber.org/protocol/muc#user";
pub const MUC_ADMIN: &str = "http://jabber.org/protocol/muc#admin";
pub const MUC_OWNER: &str = "http://jabber.org/protocol/muc#owner";
pub const DELAY: &str = "urn:xmpp:delay";
pub const DATA: &str = "jabber:x:data";
pub const REGISTER: &str = "jabber:iq:register";
pub const RSM: &str = "http://jabber.org/protocol/rsm";
/// Switchboard's own: the nicknames of an IRC private message kept in an
/// account's archive (`<irc from="…" to="…"/>`), which only the server writes.
pub const IRC: &str = "urn:switchboard:irc";
