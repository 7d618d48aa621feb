//! The response headers the SockJS protocol fixes: CORS, caching, the
//! optional `JSESSIONID` cookie, content types, and the answer to a CORS
//! preflight. Every SockJS response goes through one of these helpers, so
//! each rule is written once.

use std::time::{Duration, SystemTime};

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};

use base::http::{Body, bytes_response};

/// `Cache-Control` of every response that must not be cached: sessions are
/// polled with GET (eventsource, htmlfile, jsonp) and iOS 6 caches POSTs.
pub const NO_CACHE: &str = "no-store, no-cache, no-transform, must-revalidate, max-age=0";

/// How long cacheable answers (preflights, the iframe page) may be kept:
/// one year, as the protocol recommends.
pub const ONE_YEAR: Duration = Duration::from_secs(31_536_000);

/// Content types, as the protocol suite compares them.
pub const JAVASCRIPT: &str = "application/javascript; charset=UTF-8";
pub const JSON: &str = "application/json; charset=UTF-8";
pub const TEXT: &str = "text/plain; charset=UTF-8";
pub const HTML: &str = "text/html; charset=UTF-8";
/// Exactly this: some EventSource implementations refuse a charset.
pub const EVENT_STREAM: &str = "text/event-stream";

/// What a SockJS response echoes from its request, taken before the request
/// body is consumed.
#[derive(Debug, Clone, Default)]
pub struct Echo {
    origin: Option<HeaderValue>,
    request_headers: Option<HeaderValue>,
    /// The client's `JSESSIONID`, when the mount asks for the cookie.
    jsessionid: Option<HeaderValue>,
    cookie_needed: bool,
}

impl Echo {
    /// Reads the headers a response will echo; `cookie_needed` is the
    /// mount's setting (never for `/info`, whose answer carries no cookie).
    pub fn new<B>(req: &Request<B>, cookie_needed: bool) -> Echo {
        let headers = req.headers();
        Echo {
            origin: headers.get(header::ORIGIN).cloned(),
            request_headers: headers
                .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
                .filter(|v| !v.is_empty())
                .cloned(),
            jsessionid: cookie_needed.then(|| jsessionid(headers)).flatten(),
            cookie_needed,
        }
    }

    /// Adds the CORS headers: the request's `Origin` with credentials (so the
    /// `JSESSIONID` cookie flies), or `*` without credentials when there is
    /// none. An `Origin` of `null` (a page opened from a file) is echoed too:
    /// browsers accept `null` back, where `*` would refuse credentials.
    pub fn cors(&self, headers: &mut HeaderMap) {
        match &self.origin {
            Some(origin) => {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
                headers.insert(header::ACCESS_CONTROL_ALLOW_CREDENTIALS, HeaderValue::from_static("true"));
            }
            None => {
                headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
            }
        }
        if let Some(requested) = &self.request_headers {
            headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, requested.clone());
        }
    }

    /// Sets `JSESSIONID` (the client's own, or `dummy`) when the mount asks
    /// for it, so load balancers that stick sessions by that cookie work.
    pub fn cookie(&self, headers: &mut HeaderMap) {
        if !self.cookie_needed {
            return;
        }
        let mut value = b"JSESSIONID=".to_vec();
        match &self.jsessionid {
            Some(id) => value.extend_from_slice(id.as_bytes()),
            None => value.extend_from_slice(b"dummy"),
        }
        value.extend_from_slice(b"; path=/");
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            headers.insert(header::SET_COOKIE, value);
        }
    }

    /// A response on a session URL: the body, uncacheable, with CORS and the cookie.
    pub fn session_response(&self, status: StatusCode, content_type: &'static str, body: impl Into<bytes::Bytes>) -> Response<Body> {
        let mut res = bytes_response(status, content_type, body);
        self.decorate(res.headers_mut());
        res
    }

    /// Adds no-cache, CORS and the cookie to a session URL's response.
    pub fn decorate(&self, headers: &mut HeaderMap) {
        no_cache(headers);
        self.cors(headers);
        self.cookie(headers);
    }
}

/// The `JSESSIONID` value among the request's cookies, if it is one a
/// header can carry back.
fn jsessionid(headers: &HeaderMap) -> Option<HeaderValue> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| pair.trim().strip_prefix("JSESSIONID="))
        .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b','))
        .and_then(|id| HeaderValue::from_str(id).ok())
}

/// Forbids caching.
pub fn no_cache(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_CACHE));
}

/// Allows caching for a year, by `Cache-Control` and, for old proxies,
/// `Expires`.
pub fn cache_for_a_year(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000"));
    let expires = httpdate::fmt_http_date(SystemTime::now() + ONE_YEAR);
    if let Ok(expires) = HeaderValue::from_str(&expires) {
        headers.insert(header::EXPIRES, expires);
    }
}

/// The answer to a CORS preflight (`OPTIONS`) of a URL that takes `methods`:
/// 204, cacheable for a year by browsers and proxies alike.
pub fn preflight(echo: &Echo, methods: &'static str) -> Response<Body> {
    let mut res = Response::new(base::http::empty());
    *res.status_mut() = StatusCode::NO_CONTENT;
    let headers = res.headers_mut();
    cache_for_a_year(headers);
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("31536000"));
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(methods));
    echo.cors(headers);
    echo.cookie(headers);
    res
}

/// Whether a request's `Origin` may use this mount. No `Origin` (not a
/// browser) is always allowed; otherwise its `host:port` must match one of
/// the patterns, where `*` matches any run of characters (`*:*` allows
/// every origin, the default). `null` matches only `*:*`.
pub fn origin_allowed(headers: &HeaderMap, patterns: &[String]) -> bool {
    if patterns.iter().any(|p| p == "*:*") {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let Ok(origin) = origin.to_str() else { return false };
    let Some((scheme, rest)) = origin.split_once("://") else { return false };
    let authority = rest.split('/').next().unwrap_or(rest).to_ascii_lowercase();
    let host_port = if authority.rsplit_once(':').is_some_and(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())) {
        authority
    } else {
        let port = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
        format!("{authority}:{port}")
    };
    patterns.iter().any(|p| glob(&p.to_ascii_lowercase(), &host_port))
}

/// `*`-only glob matching; linear in practice for the short patterns here.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else { return false };
            (0..=rest.len()).filter(|&i| rest.is_char_boundary(i)).any(|i| glob(tail, &rest[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ORIGIN, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn origins_match_host_port_patterns() {
        let patterns = vec!["example.com:*".to_owned(), "*.test:8080".to_owned()];
        assert!(origin_allowed(&HeaderMap::new(), &patterns));
        assert!(origin_allowed(&origin("https://example.com"), &patterns));
        assert!(origin_allowed(&origin("http://Example.com:3000"), &patterns));
        assert!(origin_allowed(&origin("http://a.b.test:8080"), &patterns));
        assert!(!origin_allowed(&origin("http://a.b.test"), &patterns));
        assert!(!origin_allowed(&origin("http://evil.com"), &patterns));
        assert!(!origin_allowed(&origin("null"), &patterns));
        assert!(origin_allowed(&origin("null"), &["*:*".to_owned()]));
    }

    #[test]
    fn jsessionid_is_found_among_cookies() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_static("a=1; JSESSIONID=abcdef; b=2"));
        assert_eq!(jsessionid(&h).unwrap(), "abcdef");
        assert!(jsessionid(&HeaderMap::new()).is_none());
    }
}
