//! Where the bench points: an app's base URL (`http://127.0.0.1:8080/echo`), from which
//! each transport derives its own URL, or a `ws://` URL that is used exactly as given so
//! servers with other URL layouts can be measured too. XMPP transports use the target's
//! host: its XMPP client port, and paths on its HTTP port (`XmppEndpoints`). An
//! `irc://host:port` target is an IRC server, for the IRC transport alone.

use crate::Error;

/// A parsed `--target`.
#[derive(Debug, Clone)]
pub struct Target {
    raw: String,
    /// `ws://…` targets are used verbatim by the websocket transport and nothing else.
    exact_websocket: bool,
    /// `irc://host:port`: an IRC server.
    irc: bool,
    host: String,
    port: u16,
    /// The app prefix without a trailing slash, e.g. `/echo` (empty for the root).
    path: String,
    /// Where TCP connections go instead of host:port (an emulated link in front of the
    /// target); URLs and the Host header still name the target.
    connect_to: Option<std::net::SocketAddr>,
    /// Where the server takes XMPP clients, when the scenario has XMPP flags.
    xmpp: Option<XmppEndpoints>,
}

/// Where a server takes XMPP clients: a TCP port on the target's host, and absolute paths
/// on its HTTP port (not under the target's app path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmppEndpoints {
    pub tcp_port: u16,
    pub websocket_path: String,
    pub sockjs_path: String,
    pub bosh_path: String,
}

impl Target {
    /// Parses `http://host[:port]/app`, `ws://host[:port]/any/path` or `irc://host[:port]`.
    pub fn parse(raw: &str) -> Result<Target, Error> {
        let uri: http::Uri = raw
            .parse()
            .map_err(|e| Error::usage(format!("--target {raw:?} is not a URL: {e}")))?;
        let (exact_websocket, irc, default_port) = match uri.scheme_str() {
            Some("http") => (false, false, 80),
            Some("ws") => (true, false, 80),
            Some("irc") => (false, true, 6667),
            Some("https" | "wss" | "ircs") => {
                return Err(Error::usage(format!("--target {raw}: TLS targets are not supported; measure the server behind plain http/ws")));
            }
            _ => return Err(Error::usage(format!("--target {raw:?} must start with http://, ws:// or irc://"))),
        };
        let host = uri
            .host()
            .ok_or_else(|| Error::usage(format!("--target {raw:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(default_port);
        let path = uri.path().trim_end_matches('/').to_string();
        Ok(Target { raw: raw.to_string(), exact_websocket, irc, host, port, path, connect_to: None, xmpp: None })
    }

    /// The URL exactly as the user gave it.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether the target was a `ws://` URL (only the native websocket transport applies).
    pub fn is_exact_websocket(&self) -> bool {
        self.exact_websocket
    }

    /// Whether the target is an IRC server (`irc://`).
    pub fn is_irc(&self) -> bool {
        self.irc
    }

    /// Host name or address without brackets, for `TcpStream::connect`.
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port` for the HTTP `Host` header.
    pub fn authority(&self) -> String {
        self.host_and(self.port)
    }

    /// `host:port` with an IPv6 host in brackets.
    fn host_and(&self, port: u16) -> String {
        if self.host.contains(':') { format!("[{}]:{port}", self.host) } else { format!("{}:{port}", self.host) }
    }

    /// The native WebSocket URL: `<target>/websocket`, or the `ws://` target as given.
    pub fn websocket_url(&self) -> String {
        if self.exact_websocket {
            self.raw.clone()
        } else {
            self.ws_url("/websocket")
        }
    }

    /// A path below the app prefix, e.g. `path("/info")` → `/echo/info`.
    pub fn path(&self, suffix: &str) -> String {
        format!("{}{}", self.path, suffix)
    }

    /// A full `ws://` URL below the app prefix (SockJS raw websocket transport).
    pub fn ws_url(&self, suffix: &str) -> String {
        format!("ws://{}{}{}", self.authority(), self.path, suffix)
    }

    /// The same target, taking XMPP clients at `endpoints`.
    pub fn with_xmpp(self, endpoints: XmppEndpoints) -> Target {
        Target { xmpp: Some(endpoints), ..self }
    }

    /// Where the target takes XMPP clients; a usage error for scenarios without XMPP flags.
    pub(crate) fn xmpp(&self) -> Result<&XmppEndpoints, crate::Error> {
        self.xmpp.as_ref().ok_or_else(|| crate::Error::usage("this scenario has no XMPP transports"))
    }

    /// The same server with `path` as its app prefix (the SockJS mount that carries XMPP).
    pub(crate) fn at_path(&self, path: &str) -> Target {
        Target { path: path.trim_end_matches('/').to_string(), ..self.clone() }
    }

    /// The same target reached over TCP at `addr` (e.g. a `--link` proxy in front of it).
    pub fn via(&self, addr: std::net::SocketAddr) -> Target {
        Target { connect_to: Some(addr), ..self.clone() }
    }

    /// Opens a TCP connection to the target (or to where `via` sends it), Nagle off: a
    /// latency benchmark must not wait 40 ms for a delayed ACK. Every transport connects
    /// through here.
    pub(crate) async fn dial(&self) -> std::io::Result<tokio::net::TcpStream> {
        let stream = match self.connect_to {
            Some(addr) => tokio::net::TcpStream::connect(addr).await?,
            None => tokio::net::TcpStream::connect((self.host.as_str(), self.port)).await?,
        };
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// Opens a TCP connection to the target's XMPP client port, Nagle off. A `--link` in
    /// front of the target carries its HTTP port only, so this refuses to go around it.
    pub(crate) async fn dial_xmpp(&self) -> std::io::Result<tokio::net::TcpStream> {
        let port = self.xmpp.as_ref().map_or(0, |x| x.tcp_port);
        if self.connect_to.is_some() {
            return Err(std::io::Error::other("--link carries the target's HTTP port only, not its XMPP port"));
        }
        let stream = tokio::net::TcpStream::connect((self.host.as_str(), port)).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// `host:port` of the XMPP client port, for messages.
    pub(crate) fn xmpp_authority(&self) -> String {
        self.host_and(self.xmpp.as_ref().map_or(0, |x| x.tcp_port))
    }

    /// Whether the target is on this machine, so its pid can be found from the port.
    pub fn is_local(&self) -> bool {
        match self.host.parse::<std::net::IpAddr>() {
            Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
            Err(_) => self.host == "localhost",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_base_url_derives_websocket_url() {
        let t = Target::parse("http://127.0.0.1:8080/echo/").expect("valid");
        assert_eq!(t.websocket_url(), "ws://127.0.0.1:8080/echo/websocket");
        assert_eq!(t.path("/info"), "/echo/info");
        assert!(t.is_local());
    }

    #[test]
    fn ws_target_is_used_exactly() {
        let t = Target::parse("ws://example.org/socket?x=1").expect("valid");
        assert_eq!(t.websocket_url(), "ws://example.org/socket?x=1");
        assert_eq!(t.port(), 80);
        assert!(t.is_exact_websocket());
        assert!(!t.is_local());
    }

    #[test]
    fn ipv6_and_bad_schemes() {
        let t = Target::parse("http://[::1]:9000/chat").expect("valid");
        assert_eq!(t.host(), "::1");
        assert_eq!(t.websocket_url(), "ws://[::1]:9000/chat/websocket");
        assert!(Target::parse("https://x/echo").expect_err("tls").is_usage());
        assert!(Target::parse("ftp://x/echo").expect_err("scheme").is_usage());
        let irc = Target::parse("irc://127.0.0.1").expect("irc");
        assert!(irc.is_irc() && !irc.is_exact_websocket());
        assert_eq!((irc.port(), irc.authority()), (6667, "127.0.0.1:6667".to_string()));
        assert!(Target::parse("ircs://x").expect_err("tls").is_usage());
    }
}
