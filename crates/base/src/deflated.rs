//! A byte stream deflated each way (zlib, RFC 1950), for links declared
//! trusted: XMPP's zero-handshake federation and the link between nodes.

use std::pin::Pin;
use std::task::{Context, Poll};

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A socket whose bytes are deflated each way: each write is compressed and
/// flushed whole, one zlib stream per direction for the connection's life,
/// so that what the stanzas repeat (names, namespaces) costs a few bytes
/// after the first time. The flush is `Z_PARTIAL_FLUSH`: the other end can
/// inflate everything written so far, as after `Z_SYNC_FLUSH`, for an empty
/// block of 10 bits instead of the 4 bytes and alignment of an empty stored
/// one (on a 2400 bit/s link, 10 ms a write).
pub struct Deflated<S> {
    inner: S,
    deflate: Compress,
    inflate: Decompress,
    /// Compressed bytes not yet written.
    out: Vec<u8>,
    /// Compressed bytes read and not yet inflated.
    input: Vec<u8>,
    /// How much of `input` is inflated.
    taken: usize,
}

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 4096;

/// Compressed bytes held that have not yet inflated to anything, at most.
const MAX_PENDING: usize = 64 * 1024;

impl<S> Deflated<S> {
    pub fn new(inner: S) -> Deflated<S> {
        Deflated { inner, deflate: Compress::new(Compression::default(), true), inflate: Decompress::new(true), out: Vec::new(), input: Vec::new(), taken: 0 }
    }
}

impl<S: AsyncWrite + Unpin> Deflated<S> {
    /// Writes what is compressed and waiting.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while !self.out.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.out) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.out.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deflated<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        // What an earlier write left goes first: order is kept.
        if this.poll_drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        let mut input = data;
        loop {
            this.out.reserve(input.len() / 2 + 64);
            let before = this.deflate.total_in();
            let status = this.deflate.compress_vec(input, &mut this.out, FlushCompress::Partial).map_err(std::io::Error::other)?;
            input = &input[usize::try_from(this.deflate.total_in() - before).unwrap_or(input.len())..];
            // Done once all is taken and the flush had room to finish, or
            // zlib says nothing more can come (there was room: it was reserved).
            if input.is_empty() && (this.out.len() < this.out.capacity() || status == Status::BufError) {
                break;
            }
        }
        // The write is taken whole; what the socket does not take now goes
        // with the next write or flush.
        let _ = this.poll_drain(cx)?;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.poll_drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.poll_drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Deflated<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.taken < this.input.len() {
                let (in_before, out_before) = (this.inflate.total_in(), this.inflate.total_out());
                let unfilled = buf.initialize_unfilled();
                let status = this.inflate.decompress(&this.input[this.taken..], unfilled, FlushDecompress::Sync).map_err(std::io::Error::other)?;
                // The peer ended its zlib stream: nothing after it can be read.
                if status == Status::StreamEnd {
                    return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the peer ended its compressed stream")));
                }
                let took = usize::try_from(this.inflate.total_in() - in_before).unwrap_or(0);
                let made = usize::try_from(this.inflate.total_out() - out_before).unwrap_or(0);
                this.taken += took;
                if this.taken == this.input.len() {
                    this.input.clear();
                    this.taken = 0;
                }
                if made > 0 {
                    buf.advance(made);
                    return Poll::Ready(Ok(()));
                }
                if took > 0 {
                    continue;
                }
            }
            // Nothing more to inflate from what was read: read more. A peer
            // whose bytes inflate to nothing for this long is not deflating.
            if this.input.len() > MAX_PENDING {
                return Poll::Ready(Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "compressed bytes that inflate to nothing")));
            }
            let mut chunk = [0u8; READ_CHUNK];
            let mut raw = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut raw) {
                Poll::Ready(Ok(())) if raw.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => this.input.extend_from_slice(raw.filled()),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn each_write_arrives_whole_and_repeats_cost_little() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (mut a, b) = (Deflated::new(a), Counting(b, 0));
        let mut b = Deflated::new(b);
        let stanza = "<message from='alice@a.test/phone' to='bob@b.test' type='chat' id='m1'><body>hi</body></message>";
        let mut got = vec![0u8; stanza.len()];
        a.write_all(stanza.as_bytes()).await.unwrap();
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(got, stanza.as_bytes(), "the first write, whole, without a flush");
        let first = b.inner.1;
        a.write_all(stanza.replace("m1", "m2").as_bytes()).await.unwrap();
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&got), stanza.replace("m1", "m2"));
        let second = b.inner.1 - first;
        assert!(second < 30 && first < stanza.len(), "{} bytes, then {first} on the line, then {second}", stanza.len());
    }

    #[tokio::test]
    async fn a_write_bigger_than_any_buffer_arrives_whole() {
        let (a, b) = tokio::io::duplex(1 << 10);
        let (mut a, mut b) = (Deflated::new(a), Deflated::new(b));
        // Little that repeats: the compressed form is about as long.
        let text: String = (0..200_000u32).map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26)).collect();
        let sent = text.clone();
        let writer = tokio::spawn(async move {
            a.write_all(sent.as_bytes()).await.unwrap();
            a.flush().await.unwrap();
            a
        });
        let mut got = vec![0u8; text.len()];
        b.read_exact(&mut got).await.unwrap();
        assert!(got == text.as_bytes());
        drop(writer.await.unwrap());
    }

    /// A reader that counts the bytes it reads.
    struct Counting<S>(S, usize);

    impl<S: AsyncRead + Unpin> AsyncRead for Counting<S> {
        fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
            let before = buf.filled().len();
            let polled = Pin::new(&mut self.0).poll_read(cx, buf);
            self.1 += buf.filled().len() - before;
            polled
        }
    }
}
