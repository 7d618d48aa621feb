//! A stream that holds what is written to it until its first read, then
//! writes it all at once: a client's whole first flight (a TLS ClientHello
//! and its early data) in one write, which is what TCP Fast Open carries in
//! the SYN. After the first read it passes everything through.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Corked<S> {
    inner: S,
    /// What was written and not yet sent; `None` once the first read let it go.
    held: Option<Vec<u8>>,
}

impl<S> Corked<S> {
    /// Holds writes until the first read.
    pub fn new(inner: S) -> Corked<S> {
        Corked { inner, held: Some(Vec::new()) }
    }

    /// Passes everything through from the start.
    pub fn open(inner: S) -> Corked<S> {
        Corked { inner, held: None }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncWrite + Unpin> Corked<S> {
    /// Sends what is held, then passes writes through.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if let Some(held) = &mut self.held {
            while !held.is_empty() {
                match Pin::new(&mut self.inner).poll_write(cx, held) {
                    Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(n)) => drop(held.drain(..n)),
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            self.held = None;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Corked<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        // Whoever reads waits for the far end, which must first have the flight.
        if self.held.is_some() {
            match self.poll_release(cx) {
                Poll::Ready(Ok(())) => {}
                other => return other,
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Corked<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        match &mut self.held {
            Some(held) => {
                held.extend_from_slice(data);
                Poll::Ready(Ok(data.len()))
            }
            None => Pin::new(&mut self.inner).poll_write(cx, data),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.held.is_some() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.poll_release(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut self.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn writes_before_the_first_read_leave_in_one_write() {
        let (client, mut server) = tokio::io::duplex(4096);
        let mut client = Corked::new(client);
        client.write_all(b"hello ").await.unwrap();
        client.flush().await.unwrap();
        client.write_all(b"world").await.unwrap();
        client.flush().await.unwrap();
        // Nothing has left yet.
        let mut buf = [0u8; 64];
        assert!(tokio::time::timeout(std::time::Duration::ZERO, server.read(&mut buf)).await.is_err());
        server.write_all(b"ok").await.unwrap();
        let n = client.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"ok");
        let n = server.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"hello world", "in one write");
        // Then writes pass through.
        client.write_all(b"again").await.unwrap();
        let n = server.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"again");
    }
}
