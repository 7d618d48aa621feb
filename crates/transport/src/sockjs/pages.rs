//! The SockJS URLs that are not sessions: the greeting at the mount's
//! root, `/info` (what the client needs before it picks a transport), the
//! iframe page (for transports that cannot go cross-domain), and the
//! sockjs-client script that page loads — ours, installed from npm at build
//! time and embedded, never a CDN.

use std::sync::OnceLock;

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use super::headers::{self, Echo};
use crate::SockjsOptions;
use base::http::{Body, bytes_response, empty, method_not_allowed};

/// sockjs-client's `dist/sockjs.min.js` from `web/node_modules`, embedded by
/// `build.rs`.
const CLIENT_SCRIPT: &[u8] = include_bytes!(env!("SWITCHBOARD_SOCKJS_CLIENT"));

/// Where the iframe page (and the chat page) load sockjs-client from.
pub const CLIENT_SCRIPT_PATH: &str = "/sockjs.min.js";

/// The iframe page. Its text is fixed by the protocol (the suite matches it
/// exactly, bar the script URL): it loads sockjs-client from this server and
/// lets the parent page drive a same-origin transport through it.
const IFRAME_PAGE: &str = concat!(
    "<!DOCTYPE html>\n",
    "<html>\n",
    "<head>\n",
    "  <meta http-equiv=\"X-UA-Compatible\" content=\"IE=edge\" />\n",
    "  <meta http-equiv=\"Content-Type\" content=\"text/html; charset=UTF-8\" />\n",
    "  <script src=\"/sockjs.min.js\"></script>\n",
    "  <script>\n",
    "    document.domain = document.domain;\n",
    "    SockJS.bootstrap_iframe();\n",
    "  </script>\n",
    "</head>\n",
    "<body>\n",
    "  <h2>Don't panic!</h2>\n",
    "  <p>This is a SockJS hidden iframe. It's used for cross domain magic.</p>\n",
    "</body>\n",
    "</html>\n",
);

/// `GET /<app>` and `/<app>/`.
pub fn greeting<B>(req: &Request<B>) -> Response<Body> {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    bytes_response(StatusCode::OK, headers::TEXT, "Welcome to SockJS!\n")
}

/// `/<app>/info`: whether WebSocket is offered, whether the cookie is
/// needed, the allowed origins, and fresh entropy for the client's random
/// numbers (browsers used to lack a good source). Never cached; CORS.
pub fn info<B>(req: &Request<B>, options: &SockjsOptions) -> Response<Body> {
    let echo = Echo::new(req, false);
    match *req.method() {
        Method::GET => {
            let body = serde_json::json!({
                "websocket": options.websocket,
                "cookie_needed": options.cookie_needed,
                "origins": options.origins,
                "entropy": rand::random::<u32>(),
            });
            let mut res = bytes_response(StatusCode::OK, headers::JSON, body.to_string());
            headers::no_cache(res.headers_mut());
            echo.cors(res.headers_mut());
            res
        }
        Method::OPTIONS => headers::preflight(&echo, "OPTIONS, GET"),
        _ => method_not_allowed("OPTIONS, GET"),
    }
}

/// Whether `rest` (the path after the mount's prefix) names the iframe
/// page: `/iframe.html` or a versioned `/iframe-<version>.html`.
pub fn is_iframe(rest: &str) -> bool {
    rest.strip_prefix("/iframe")
        .and_then(|r| r.strip_suffix(".html"))
        .is_some_and(|version| {
            version.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_'))
        })
}

/// The iframe page: the same bytes whatever the version in its name, so
/// browsers cache it for a year and revalidate by ETag.
pub fn iframe<B>(req: &Request<B>) -> Response<Body> {
    static ETAG: OnceLock<HeaderValue> = OnceLock::new();
    cached_asset(req, IFRAME_PAGE.as_bytes(), headers::HTML, &ETAG, true)
}

/// `GET /sockjs.min.js`. Revalidated by ETag on each use rather than cached
/// for a year, so an upgraded server never pairs an old script with a new
/// page.
pub fn client_script<B>(req: &Request<B>) -> Response<Body> {
    static ETAG: OnceLock<HeaderValue> = OnceLock::new();
    cached_asset(req, CLIENT_SCRIPT, "application/javascript; charset=UTF-8", &ETAG, false)
}

fn cached_asset<B>(
    req: &Request<B>,
    body: &'static [u8],
    content_type: &'static str,
    etag: &OnceLock<HeaderValue>,
    for_a_year: bool,
) -> Response<Body> {
    if req.method() != Method::GET {
        return method_not_allowed("GET");
    }
    let etag = etag.get_or_init(|| entity_tag(body));
    let mut res = if matches(req.headers(), etag) {
        let mut res = Response::new(empty());
        *res.status_mut() = StatusCode::NOT_MODIFIED;
        res
    } else {
        bytes_response(StatusCode::OK, content_type, body)
    };
    let h = res.headers_mut();
    if for_a_year {
        headers::cache_for_a_year(h);
    } else {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, no-cache"));
    }
    h.insert(header::ETAG, etag.clone());
    res
}

/// A strong ETag from the content: FNV-1a, 64 bits, which is plenty to tell
/// versions of one file apart.
fn entity_tag(body: &[u8]) -> HeaderValue {
    let hash = body.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    // Hex digits and quotes are always a valid header value.
    HeaderValue::from_str(&format!("\"{hash:016x}\"")).unwrap_or(HeaderValue::from_static("\"0\""))
}

/// Whether `If-None-Match` names `etag` (or is `*`).
fn matches(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let Ok(etag) = etag.to_str() else { return false };
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iframe_names() {
        for ok in ["/iframe.html", "/iframe-a.html", "/iframe-.html", "/iframe-0.1.2.html", "/iframe-0.1.2abc-dirty.2144.html"] {
            assert!(is_iframe(ok), "{ok}");
        }
        for bad in ["/iframe.htm", "/iframe", "/IFRAME.HTML", "/IFRAME", "/iframe.HTML", "/iframe.xml", "/iframe-/.html"] {
            assert!(!is_iframe(bad), "{bad}");
        }
    }

    #[test]
    fn the_client_script_is_embedded() {
        assert!(CLIENT_SCRIPT.len() > 10_000);
        assert!(IFRAME_PAGE.contains(CLIENT_SCRIPT_PATH));
    }

    #[test]
    fn etags_are_stable_and_distinct() {
        assert_eq!(entity_tag(b"a"), entity_tag(b"a"));
        assert_ne!(entity_tag(b"a"), entity_tag(b"b"));
    }
}
