//! Load shedding at the accept loop: what a new client gets when the server
//! is at `--max-connections` or out of file descriptors.
//!
//! Either way the client is accepted and answered at once with
//! `503 Service Unavailable` and `Connection: close`, instead of waiting
//! unseen in the listen backlog. Open connections keep being served. For
//! the descriptor case the loop keeps one descriptor in reserve (an open
//! `/dev/null`): when accept fails with `EMFILE`, the reserve is closed so
//! the waiting client can be accepted and told, then reopened. If that is not
//! possible, accepting backs off (10 ms doubling to 1 s) rather than spin.
//! Each episode is logged once when it starts and once when it ends, with
//! how many clients it shed, never once per client.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use base::metrics::Metrics;

/// What a shed client reads.
pub const BUSY_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
Content-Type: text/plain; charset=UTF-8\r\n\
Content-Length: 33\r\n\
Retry-After: 1\r\n\
Connection: close\r\n\
\r\n\
server busy: too many connections";

/// Shed clients being answered at once; past this they are just closed.
const MAX_ANSWERING: usize = 256;

/// How long a shed client's answer may take, and how long its request is
/// read and discarded afterwards (so closing does not reset the connection
/// before the answer is read).
const ANSWER_TIME: Duration = Duration::from_secs(1);

const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The accept loop's shedding state; see the module docs.
#[derive(Debug)]
pub struct Shedder {
    max_connections: usize,
    at_capacity: Option<Episode>,
    out_of_files: Option<Episode>,
    reserve: Option<std::fs::File>,
    backoff: Duration,
    answering: Arc<Semaphore>,
}

#[derive(Debug)]
struct Episode {
    since: Instant,
    shed: u64,
}

impl Episode {
    fn start(episode: &mut Option<Episode>, message: impl FnOnce() -> String) -> &mut Episode {
        episode.get_or_insert_with(|| {
            tracing::warn!("{}", message());
            Episode { since: Instant::now(), shed: 0 }
        })
    }

    fn end(episode: &mut Option<Episode>, what: &str) {
        if let Some(e) = episode.take() {
            tracing::warn!("{what} after {:.1} s; {} new connections were shed", e.since.elapsed().as_secs_f64(), e.shed);
        }
    }
}

impl Shedder {
    pub fn new(max_connections: usize) -> Shedder {
        Shedder {
            max_connections,
            at_capacity: None,
            out_of_files: None,
            reserve: open_reserve(),
            backoff: FIRST_BACKOFF,
            answering: Arc::new(Semaphore::new(MAX_ANSWERING)),
        }
    }

    /// A connection was accepted and given a slot: any episode is over.
    pub fn accepted(&mut self, free_slots: usize) {
        if free_slots > 0 {
            Episode::end(&mut self.at_capacity, "below the connection limit again");
        }
        if self.out_of_files.is_some() {
            Episode::end(&mut self.out_of_files, "file descriptors available again");
            self.backoff = FIRST_BACKOFF;
        }
        if self.reserve.is_none() {
            self.reserve = open_reserve();
        }
    }

    /// Every slot is taken: answer this client 503 and close it.
    pub fn at_capacity(&mut self, stream: TcpStream, metrics: &Metrics, tracker: &TaskTracker) {
        let max = self.max_connections;
        Episode::start(&mut self.at_capacity, || {
            format!("connection limit ({max}) reached: new connections are answered 503 until some close")
        })
        .shed += 1;
        metrics.shed("max_connections");
        let Ok(answering) = self.answering.clone().try_acquire_owned() else { return };
        tracker.spawn(async move {
            answer_busy(stream).await;
            drop(answering);
        });
    }

    /// Accepting failed: shed the waiting client if the process is out of
    /// descriptors, else carry on (the client gave up before we took it).
    pub async fn accept_failed(&mut self, listener: &TcpListener, error: &std::io::Error, metrics: &Metrics) {
        if !is_out_of_files(error) {
            tracing::debug!("accept failed: {error}");
            return;
        }
        Episode::start(&mut self.out_of_files, || {
            format!("out of file descriptors ({error}): new connections are answered 503 and closed until some close")
        })
        .shed += 1;
        metrics.shed("out_of_file_descriptors");
        if self.reserve.take().is_some() {
            // The freed descriptor takes the waiting client, just long enough to tell it.
            if let Ok(Ok((stream, _))) = tokio::time::timeout(FIRST_BACKOFF, listener.accept()).await {
                let _ = stream.try_write(BUSY_RESPONSE);
            }
            self.reserve = open_reserve();
            if self.reserve.is_some() {
                return;
            }
        }
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }
}

fn open_reserve() -> Option<std::fs::File> {
    std::fs::File::open("/dev/null").ok()
}

fn is_out_of_files(error: &std::io::Error) -> bool {
    // EMFILE (this process) and ENFILE (the whole system).
    matches!(error.raw_os_error(), Some(24 | 23)) || error.kind() == ErrorKind::OutOfMemory
}

/// Writes the 503, then reads and drops what the client sends until it
/// closes or the answer's time is up.
async fn answer_busy(mut stream: TcpStream) {
    let answer = async {
        stream.write_all(BUSY_RESPONSE).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<(), std::io::Error>(())
    };
    let _ = tokio::time::timeout(ANSWER_TIME, answer).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_response_says_its_own_length() {
        let text = std::str::from_utf8(BUSY_RESPONSE).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())), "{head}");
    }
}
