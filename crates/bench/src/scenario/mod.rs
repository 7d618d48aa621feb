//! The workloads, each written once against the `transport` module, plus the context
//! they share (target, clock, resource monitor, Ctrl-C, progress).

pub(crate) mod broadcast;
pub(crate) mod chat;
pub(crate) mod countdown;
pub(crate) mod pingpong;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::progress::Progress;
use crate::resources::Monitor;
use crate::stamp::Clock;
use crate::transport::{self, Connection, Receiver, Text, TransportKind};
use crate::{Error, Target};

/// A send that leaves later than this after its scheduled time is counted as late.
/// Tokio timers have 1 ms granularity, so anything below 2 ms is timer noise.
pub(crate) const LATE_US: u64 = 2_000;

pub(crate) struct Ctx {
    pub target: Target,
    pub clock: Clock,
    pub monitor: Monitor,
    pub cancel: CancellationToken,
    pub progress: Progress,
    /// Longest wait for a connection or an expected reply.
    pub timeout: Duration,
}

impl Ctx {
    /// Opens a connection and returns it with its connect time in µs.
    pub async fn connect(&self, kind: TransportKind) -> Result<(Connection, u64), Error> {
        let t0 = Instant::now();
        let conn = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Error::cancelled()),
            c = transport::connect(&self.target, kind, self.timeout) => c?,
        };
        Ok((conn, t0.elapsed().as_micros() as u64))
    }

    /// The next message, or a clear error if the server closes, stalls or Ctrl-C is hit.
    pub async fn recv(&self, rx: &mut Receiver, what: &str) -> Result<Text, Error> {
        tokio::select! {
            _ = self.cancel.cancelled() => Err(Error::cancelled()),
            r = tokio::time::timeout(self.timeout, rx.recv()) => match r {
                Err(_) => Err(Error::timeout(format!(
                    "no {what} from {} within {:?}", self.target.as_str(), self.timeout
                ))),
                Ok(Ok(Some(text))) => Ok(text),
                Ok(Ok(None)) => Err(Error::closed(format!(
                    "{} closed the connection while waiting for {what}", self.target.as_str()
                ))),
                Ok(Err(e)) => Err(e),
            },
        }
    }

    pub fn check_cancel(&self) -> Result<(), Error> {
        if self.cancel.is_cancelled() { Err(Error::cancelled()) } else { Ok(()) }
    }
}

/// Shortens a peer's reply for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 120;
    if text.len() <= MAX {
        return format!("{text:?}");
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}…", &text[..end])
}
