//! Transports: each adapts a wire format to an app client. A transport reads
//! requests and writes frames; it never knows what a room is.

pub mod bosh;
pub mod deflate;
pub mod frame_header;
pub mod lazy_ws;
pub mod send_queue;
pub mod session;
pub mod shared_tcp;
pub mod sockjs;
pub mod utf8_watch;
pub mod websocket;
pub mod ws_task;

/// Implements `AsyncWrite` for a layer that works on the read side only (its
/// stream is in the field `inner`) by handing every write to that stream.
macro_rules! write_through {
    ($layer:ident) => {
        impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for $layer<S> {
            fn poll_write(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                data: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.inner).poll_write(cx, data)
            }

            fn poll_write_vectored(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                self.inner.is_write_vectored()
            }

            fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.inner).poll_flush(cx)
            }

            fn poll_shutdown(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
            }
        }
    };
}
use write_through;

/// A client's WebSocket frame for the read-side layers' tests: FIN, RSV1,
/// opcode, the payload masked with `key`.
#[cfg(test)]
pub(crate) fn client_frame(fin: bool, rsv1: bool, opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::new();
    frame_header::put_header(&mut f, fin, rsv1, opcode, Some(key), payload.len());
    f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    f
}
