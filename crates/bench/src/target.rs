//! Where the bench points: an app's base URL (`http://127.0.0.1:8080/echo`), from which
//! each transport derives its own URL, or a `ws://` URL that is used exactly as given so
//! servers with other URL layouts can be measured too.

use crate::Error;

/// A parsed `--target`.
#[derive(Debug, Clone)]
pub struct Target {
    raw: String,
    /// `ws://…` targets are used verbatim by the websocket transport and nothing else.
    exact_websocket: bool,
    host: String,
    port: u16,
    /// The app prefix without a trailing slash, e.g. `/echo` (empty for the root).
    path: String,
    /// Where TCP connections go instead of host:port (an emulated link in front of the
    /// target); URLs and the Host header still name the target.
    connect_to: Option<std::net::SocketAddr>,
}

impl Target {
    /// Parses `http://host[:port]/app` or `ws://host[:port]/any/path`.
    pub fn parse(raw: &str) -> Result<Target, Error> {
        let uri: http::Uri = raw
            .parse()
            .map_err(|e| Error::usage(format!("--target {raw:?} is not a URL: {e}")))?;
        let (exact_websocket, default_port) = match uri.scheme_str() {
            Some("http") => (false, 80),
            Some("ws") => (true, 80),
            Some("https" | "wss") => {
                return Err(Error::usage(format!("--target {raw}: TLS targets are not supported; measure the server behind plain http/ws")));
            }
            _ => return Err(Error::usage(format!("--target {raw:?} must start with http:// or ws://"))),
        };
        let host = uri
            .host()
            .ok_or_else(|| Error::usage(format!("--target {raw:?} has no host")))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(default_port);
        let path = uri.path().trim_end_matches('/').to_string();
        Ok(Target { raw: raw.to_string(), exact_websocket, host, port, path, connect_to: None })
    }

    /// The URL exactly as the user gave it.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// Whether the target was a `ws://` URL (only the native websocket transport applies).
    pub fn is_exact_websocket(&self) -> bool {
        self.exact_websocket
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
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
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
    }
}
