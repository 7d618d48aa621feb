//! Plain HTTP adapter: one keep-alive HTTP/1.1 connection per virtual user (hyper's
//! connection-level client, so pooling never hides a reconnect). A message is the query
//! string of `GET <target>/xhr?<message>`; the response body is the reply. When the
//! server ends the connection after a response (`Connection: close`, as Tomcat does
//! every 100 requests by default), the next request opens a new one, as a browser's
//! XHR would; the time that takes is part of that request's.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;

use super::Text;
use crate::{Error, Target};

pub struct Sender {
    request: http1::SendRequest<Empty<Bytes>>,
    target: Target,
    authority: String,
    path: String,
    replies: mpsc::UnboundedSender<Text>,
}

pub struct Receiver {
    replies: mpsc::UnboundedReceiver<Text>,
}

pub(super) async fn connect(target: &Target) -> Result<super::Connection, Error> {
    let request = open(target).await?;
    let (tx, rx) = mpsc::unbounded_channel();
    Ok(super::Connection {
        sender: super::Sender::Http(Sender {
            request,
            target: target.clone(),
            authority: target.authority(),
            path: target.path("/xhr"),
            replies: tx,
        }),
        receiver: super::Receiver::Http(Receiver { replies: rx }),
    })
}

/// Opens one HTTP/1.1 connection with Nagle off and drives it on its own task.
pub(crate) async fn open<B>(target: &Target) -> Result<http1::SendRequest<B>, Error>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = target.dial().await.map_err(|e| Error::connect(format!("{}: {e}", target.as_str())))?;
    over(target, stream).await
}

/// Speaks HTTP/1.1 on `io`, a connection to `target` already made, driven on its own task.
pub(crate) async fn over<B, T>(target: &Target, io: T) -> Result<http1::SendRequest<B>, Error>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (request, conn) = http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| Error::connect(format!("{}: {e}", target.as_str())))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(request)
}

impl Sender {
    /// Sends the request and waits for its whole response, which the receiver then yields.
    pub async fn send(&mut self, query: &str) -> Result<(), Error> {
        let uri = format!("{}?{}", self.path, query);
        let req = hyper::Request::get(&uri)
            .header(hyper::header::HOST, &self.authority)
            .body(Empty::new())
            .map_err(|e| Error::usage(format!("bad request {uri}: {e}")))?;
        // hyper hands a request to the connection only once it is idle again, and
        // reports it closed once the server has ended it after the last response.
        if self.request.ready().await.is_err() {
            self.request = open(&self.target).await?;
        }
        let resp = self
            .request
            .send_request(req)
            .await
            .map_err(|e| Error::closed(format!("GET {uri}: {e}")))?;
        let status = resp.status();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| Error::closed(format!("GET {uri}: {e}")))?
            .to_bytes();
        if status == hyper::StatusCode::NOT_FOUND {
            return Err(Error::not_found(format!("GET http://{}{uri} answered 404 Not Found", self.authority)));
        }
        if !status.is_success() {
            return Err(Error::unexpected(format!("GET http://{}{uri} answered HTTP {status}", self.authority)));
        }
        let text = String::from_utf8(body.to_vec())
            .map_err(|_| Error::unexpected(format!("GET {uri}: response body is not UTF-8")))?;
        // The receiver may already be gone when a scenario stops; nothing to report then.
        let _ = self.replies.send(Text::from(text));
        Ok(())
    }
}

impl Receiver {
    pub async fn recv(&mut self) -> Result<Option<Text>, Error> {
        Ok(self.replies.recv().await)
    }
}

/// One GET on a fresh connection: status and body.
pub(crate) async fn get(target: &Target, path: &str) -> Result<(hyper::StatusCode, Bytes), Error> {
    let mut request = open::<Empty<Bytes>>(target).await?;
    let req = hyper::Request::get(path)
        .header(hyper::header::HOST, target.authority())
        .body(Empty::new())
        .map_err(|e| Error::usage(format!("bad request {path}: {e}")))?;
    let resp = request.send_request(req).await.map_err(|e| Error::closed(format!("GET {path}: {e}")))?;
    let status = resp.status();
    let body = resp.into_body().collect().await.map_err(|e| Error::closed(format!("GET {path}: {e}")))?.to_bytes();
    Ok((status, body))
}
