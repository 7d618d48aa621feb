//! The streaming receivers: `xhr_streaming` (POST), `eventsource` and
//! `htmlfile` (GET). A response starts with its transport's prelude, then
//! carries one frame per HTTP chunk as the session produces them, with a
//! heartbeat `h` whenever it has been silent for the heartbeat interval. It
//! ends after the close frame, or once it has carried the mount's response
//! limit in frame bytes (the prelude not counted), so the browser can free
//! what it has buffered; the client then opens a new one on the same session.
//!
//! Over HTTP/1.1 the body is chunked; an HTTP/1.0 client gets the same bytes
//! delimited by the connection's close (hyper chooses which).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use wire::sockjs::{Callback, EVENTSOURCE_PRELUDE, Framing, OPEN, XHR_STREAMING_PRELUDE, htmlfile_prelude_into};

use super::headers::{self, Echo};
use super::{Receiver, Wrote, next_frame};
use crate::Protocol;
use super::{Receiving, another_connection_still_open, callback_param};
use base::http::Body;

/// `POST /<server>/<session>/xhr_streaming`: frames each followed by `\n`,
/// after 2 KiB of `h` (old browsers show nothing of a streamed response
/// before that much).
pub fn xhr_streaming<P: Protocol>(echo: &Echo, receiving: Receiving<'_, P>) -> Response<Body> {
    stream(echo, receiving, Framing::Xhr, Bytes::from_static(XHR_STREAMING_PRELUDE), headers::JAVASCRIPT)
}

/// `GET /<server>/<session>/eventsource`: one `data:` event per frame.
pub fn eventsource<P: Protocol>(echo: &Echo, receiving: Receiving<'_, P>) -> Response<Body> {
    stream(echo, receiving, Framing::EventSource, Bytes::from_static(EVENTSOURCE_PRELUDE), headers::EVENT_STREAM)
}

/// `GET /<server>/<session>/htmlfile?c=<callback>`: a page that hands each
/// frame, in its own `<script>` block, to `parent.<callback>`. The callback
/// is checked before the session is touched.
pub fn htmlfile<B, P: Protocol>(req: &Request<B>, echo: &Echo, receiving: Receiving<'_, P>) -> Response<Body> {
    let name = callback_param(req);
    let callback = match Callback::parse(name.as_deref()) {
        Ok(callback) => callback,
        Err(e) => return echo.session_response(StatusCode::INTERNAL_SERVER_ERROR, headers::TEXT, e.to_string()),
    };
    let mut prelude = Vec::with_capacity(1100);
    htmlfile_prelude_into(callback, &mut prelude);
    stream(echo, receiving, Framing::HtmlFile, Bytes::from(prelude), headers::HTML)
}

fn stream<P: Protocol>(echo: &Echo, receiving: Receiving<'_, P>, framing: Framing, prelude: Bytes, content_type: &'static str) -> Response<Body> {
    let mut frames = Frames {
        chunks: VecDeque::from([prelude]),
        receiver: None,
        framing,
        heartbeat: receiving.heartbeat(),
        left: receiving.mount.sockjs.response_limit,
        frame: Vec::new(),
    };
    match receiving.attach(echo) {
        Err(refused) => return refused,
        Ok(None) => {
            let mut busy = Vec::new();
            another_connection_still_open(&mut busy);
            frames.push(&busy);
        }
        Ok(Some(receiver)) => {
            if receiver.opening() {
                frames.push(OPEN);
            }
            frames.receiver = Some(receiver);
        }
    }
    let body = futures_util::stream::unfold(frames, |mut frames| async move {
        let chunk = frames.next().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), frames))
    });
    let mut res = Response::new(StreamBody::new(body).boxed());
    *res.status_mut() = StatusCode::OK;
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    echo.decorate(h);
    res
}

/// A streaming response's body, one chunk at a time. Holding the receiver
/// here means that if hyper drops the body (the client went away), the
/// session is closed as interrupted.
struct Frames {
    /// Chunks decided before the first wait: the prelude, `o` or the 2010 close.
    chunks: VecDeque<Bytes>,
    /// `None` once the response is to end after `chunks`.
    receiver: Option<Receiver>,
    framing: Framing,
    heartbeat: Duration,
    /// Frame bytes still allowed before the response limit ends the response.
    left: usize,
    /// Scratch space for the unwrapped frame.
    frame: Vec<u8>,
}

impl Frames {
    /// Queues `frame`, wrapped for the transport, as the next chunk.
    fn push(&mut self, frame: &[u8]) {
        let mut chunk = Vec::with_capacity(frame.len() + 16);
        self.framing.wrap(frame, &mut chunk);
        self.left = self.left.saturating_sub(chunk.len());
        self.chunks.push_back(Bytes::from(chunk));
    }

    async fn next(&mut self) -> Option<Bytes> {
        if self.left == 0 {
            // Past the limit (the open frame alone can get there with a
            // tiny one): end after what is decided.
            if let Some(receiver) = self.receiver.take() {
                receiver.finish();
            }
        }
        if let Some(chunk) = self.chunks.pop_front() {
            return Some(chunk);
        }
        let receiver = self.receiver.as_mut()?;
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        let step = next_frame(receiver, self.heartbeat, &mut frame).await;
        self.push(&frame);
        self.frame = frame;
        if step == Wrote::Close || self.left == 0 {
            // The last frame: detach before it is written, so the session's
            // disconnect delay starts now.
            if let Some(receiver) = self.receiver.take() {
                receiver.finish();
            }
        }
        self.chunks.pop_front()
    }
}
