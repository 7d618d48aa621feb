//! Shutdown as a value every connection holds: the server starts it once,
//! and each connection's task notices and closes its client with 1001.
//!
//! Tasks written with async blocks wait with [`Shutdown::wait`]. A
//! WebSocket connection's hand-written future holds a [`Waiter`] instead: a
//! slot in a list of wakers, 16 bytes in the connection where a waiting
//! future takes 72, since every idle connection holds one.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use parking_lot::Mutex;

use crate::wakers::WakerSlots;
use tokio_util::sync::CancellationToken;

/// A handle on the server's shutdown; cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    token: CancellationToken,
    /// The wakers of the [`Waiter`]s.
    waiters: Mutex<WakerSlots>,
}

impl Shutdown {
    /// Starts the shutdown; idempotent.
    pub fn trigger(&self) {
        self.0.token.cancel();
        // After the cancel: a waiter that registers from now on sees it.
        let wakers = self.0.waiters.lock().take_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Resolves once shutdown has started.
    pub async fn wait(&self) {
        self.0.token.cancelled().await;
    }

    /// Whether shutdown has started.
    pub fn has_begun(&self) -> bool {
        self.0.token.is_cancelled()
    }

    /// A waiter, registered on its first poll.
    pub fn waiter(&self) -> Waiter {
        Waiter { shutdown: self.clone(), slot: UNREGISTERED }
    }
}

const UNREGISTERED: usize = usize::MAX;

/// Waits for shutdown by polling; see the module docs.
#[derive(Debug)]
pub struct Waiter {
    shutdown: Shutdown,
    slot: usize,
}

impl Waiter {
    /// Ready once shutdown has started. The waker is registered on the first
    /// poll only: it must be the waker of the one task that polls this for
    /// its whole life, as a task's own waker is.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.shutdown.has_begun() {
            return Poll::Ready(());
        }
        if self.slot == UNREGISTERED {
            self.slot = self.shutdown.0.waiters.lock().insert(cx.waker().clone());
            // Started between the check above and the registration.
            if self.shutdown.has_begun() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.slot != UNREGISTERED {
            self.shutdown.0.waiters.lock().remove(self.slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Wakes;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_waiter_is_woken_once_shutdown_starts_and_its_slot_is_reused() {
        let shutdown = Shutdown::default();
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let (mut a, mut b) = (shutdown.waiter(), shutdown.waiter());
        assert!(a.poll(&mut cx).is_pending());
        assert!(b.poll(&mut cx).is_pending());
        assert!(a.poll(&mut cx).is_pending(), "polled again, it registers nothing more");
        drop(a);
        let mut c = shutdown.waiter();
        assert!(c.poll(&mut cx).is_pending());
        assert_eq!(shutdown.0.waiters.lock().len(), 2, "c took a's slot");
        shutdown.trigger();
        assert_eq!(wakes.0.load(Ordering::Relaxed), 2, "b and c, not a");
        assert!(b.poll(&mut cx).is_ready() && c.poll(&mut cx).is_ready());
        assert!(shutdown.waiter().poll(&mut cx).is_ready(), "a waiter made after is ready at once");
    }
}
