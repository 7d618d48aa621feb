//! A TCP stream that counts the bytes that cross it each way. Under TLS it counts
//! TLS's bytes too, as a link would carry them.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What crossed one stream; shared, so that it can be read once the stream is wrapped.
#[derive(Debug, Default)]
pub struct Counts {
    pub sent: AtomicU64,
    pub received: AtomicU64,
}

impl Counts {
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

pub struct Counted<S> {
    inner: S,
    counts: Arc<Counts>,
}

impl<S> Counted<S> {
    pub fn new(inner: S) -> (Counted<S>, Arc<Counts>) {
        let counts = Arc::new(Counts::default());
        (Counted { inner, counts: counts.clone() }, counts)
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            self.counts.received.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &polled
            && *n > 0
        {
            self.counts.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn bytes_each_way() {
        let (client, mut server) = tokio::io::duplex(64);
        let (mut client, counts) = Counted::new(client);
        let mut buf = [0u8; 16];
        client.write_all(b"abc").await.ok();
        client.write_all(b"de").await.ok();
        server.write_all(b"12345678").await.ok();
        let n = client.read(&mut buf[..4]).await.unwrap_or(0);
        let m = client.read(&mut buf[..8]).await.unwrap_or(0);
        assert_eq!((n + m, counts.sent(), counts.received()), (8, 5, 8));
    }
}
