//! A raw HTTP/1.x client on a plain `TcpStream`, for the tests that state
//! exact bytes: chunk boundaries of streaming responses, headers as sent,
//! HTTP/1.0 framing. It writes requests by hand and parses only what it must.

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::PATIENCE;

/// One TCP connection speaking HTTP/1.x by hand.
pub struct Raw {
    stream: BufReader<TcpStream>,
    host: String,
}

/// A response's status line and headers.
#[derive(Debug, Clone)]
pub struct Head {
    /// `1.0` or `1.1`.
    pub version: String,
    pub status: u16,
    /// Names lowercased, in the order sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The value of header `name` (any case), if sent once or more (the first).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }

    /// Whether the body is chunked.
    pub fn is_chunked(&self) -> bool {
        self.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    }
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Reply {
    pub head: Head,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn status(&self) -> u16 {
        self.head.status
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.header(name)
    }

    /// The body as text; panics if it is not UTF-8.
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("UTF-8 body")
    }
}

async fn patient<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, f).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

impl Raw {
    pub async fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).await.unwrap();
        Raw { stream: BufReader::new(stream), host: addr.to_string() }
    }

    /// Connects from the loopback address `from` (any 127.x).
    pub async fn connect_from(addr: SocketAddr, from: std::net::IpAddr) -> Raw {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::new(from, 0)).unwrap();
        Raw { stream: BufReader::new(socket.connect(addr).await.unwrap()), host: addr.to_string() }
    }

    /// Sends a request: `version` is `1.0` or `1.1`; a body gets a
    /// Content-Length, and so does a POST without one (as browsers send it).
    pub async fn send(&mut self, method: &str, path: &str, version: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut req = format!("{method} {path} HTTP/{version}\r\nHost: {}\r\n", self.host);
        for (name, value) in headers {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.stream.get_mut().write_all(&bytes).await.unwrap();
    }

    /// Reads a status line and headers.
    pub async fn head(&mut self) -> Head {
        let line = self.line().await;
        let mut parts = line.splitn(3, ' ');
        let version = parts.next().and_then(|v| v.strip_prefix("HTTP/")).expect("status line").to_owned();
        let status = parts.next().and_then(|s| s.parse().ok()).expect("status code");
        let mut headers = Vec::new();
        loop {
            let line = self.line().await;
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("header line");
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        Head { version, status, headers }
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        let n = patient("a line", self.stream.read_line(&mut line)).await.unwrap();
        assert!(n > 0, "connection closed before a full line");
        line.trim_end_matches(['\r', '\n']).to_owned()
    }

    /// The next chunk of a chunked body, exactly; `None` for the last (empty) chunk.
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        let size = self.line().await;
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).expect("chunk size");
        let mut data = vec![0; size + 2];
        patient("a chunk", self.stream.read_exact(&mut data)).await.unwrap();
        assert_eq!(&data[size..], b"\r\n", "chunk ends with CRLF");
        data.truncate(size);
        (size > 0).then_some(data)
    }

    /// The next chunk as text; panics on the last chunk.
    pub async fn chunk_text(&mut self) -> String {
        let chunk = self.chunk().await.expect("a chunk, not the end of the body");
        String::from_utf8(chunk).unwrap()
    }

    /// Exactly `n` bytes.
    pub async fn exact(&mut self, n: usize) -> Vec<u8> {
        let mut data = vec![0; n];
        patient("bytes", self.stream.read_exact(&mut data)).await.unwrap();
        data
    }

    /// Everything until the server closes the connection.
    pub async fn read_to_end(&mut self) -> Vec<u8> {
        let mut data = Vec::new();
        patient("the connection to close", self.stream.read_to_end(&mut data)).await.unwrap();
        data
    }

    /// The whole body of a response whose head was read.
    pub async fn body(&mut self, head: &Head) -> Vec<u8> {
        if head.is_chunked() {
            let mut body = Vec::new();
            while let Some(chunk) = self.chunk().await {
                body.extend(chunk);
            }
            body
        } else if let Some(len) = head.header("content-length") {
            self.exact(len.parse().unwrap()).await
        } else if matches!(head.status, 204 | 304) {
            Vec::new()
        } else {
            self.read_to_end().await
        }
    }

    /// Sends a request and reads the whole response.
    pub async fn exchange(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        self.send(method, path, "1.1", headers, body).await;
        let head = self.head().await;
        let body = self.body(&head).await;
        Reply { head, body }
    }
}

/// One request on a fresh connection.
pub async fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    Raw::connect(addr).await.exchange(method, path, headers, body).await
}
