//! The shared writer (`--shared-writer`): a task (one per thread of the
//! runtime, each client always the same one's) that writes the messages of
//! idle WebSocket clients, so that a broadcast wakes one task per thread,
//! not one per recipient.
//!
//! A client's own writer, when it waits with nothing in hand, leaves what
//! is pushed to it here (`hub::Outbox::poll_drain_direct`): the first push
//! into its empty outbox schedules the client ([`DirectFrames`]), and this
//! task, once woken, first lets every task already runnable run (a yield),
//! so that the messages published in that round gather; then it writes
//! each scheduled client's queue in one vectored write
//! ([`SendQueue::try_send`]), if the socket takes it then. What the socket
//! does not take is left to the client's own writer, which is woken for it,
//! and the outbox's bound closes a slow reader as before. uWebSockets
//! gathers a loop iteration's publishes before writing ("corking"); this
//! is the same for a runtime of tasks.
//!
//! The clients are spread over as many tasks as the runtime has threads
//! (by their outbox's address), so that the writes of a large room are
//! spread over the threads as the clients' own tasks' would be; on one
//! core there is one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use base::metrics::Sends;
use bytes::Bytes;
use hub::{Direct, Outbox, Payload, Sent};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::send_queue::SendQueue;

/// How a client's messages are framed: each message's frame, given the
/// window bits of permessage-deflate if agreed, and those bits.
pub type Framing = (fn(&Payload, Option<u8>) -> Bytes, Option<u8>);

/// The shared writer; see the module docs.
#[derive(Debug)]
pub struct SharedWriter {
    tasks: Box<[Arc<Task>]>,
}

/// One of its tasks.
struct Task {
    /// Clients with something queued since the task last ran.
    scheduled: Mutex<Vec<Arc<DirectFrames>>>,
    ready: Notify,
    /// Its task has been spawned.
    started: AtomicBool,
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task").field("scheduled", &self.scheduled.lock().len()).finish()
    }
}

impl SharedWriter {
    /// A writer of `tasks` tasks (at least one): as many as the runtime
    /// has threads.
    pub fn new(tasks: usize) -> Arc<SharedWriter> {
        let task = || Arc::new(Task { scheduled: Mutex::default(), ready: Notify::new(), started: AtomicBool::new(false) });
        Arc::new(SharedWriter { tasks: (0..tasks.max(1)).map(|_| task()).collect() })
    }

    fn schedule(&self, client: Arc<DirectFrames>) {
        let task = &self.tasks[client.outbox.as_ptr().addr() / 64 % self.tasks.len()];
        let first = {
            let mut scheduled = task.scheduled.lock();
            scheduled.push(client);
            scheduled.len() == 1
        };
        if !task.started.load(Ordering::Acquire) {
            // Pushes come from the server's tasks, in its runtime; one from
            // outside a runtime before the task exists is written at once.
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                let clients = std::mem::take(&mut *task.scheduled.lock());
                clients.iter().for_each(|client| client.flush(&mut Vec::new()));
                return;
            };
            if !task.started.swap(true, Ordering::AcqRel) {
                runtime.spawn(run(task.clone()));
            }
        }
        if first {
            task.ready.notify_one();
        }
    }
}

/// A task: woken by the first client scheduled, it yields once, then
/// writes every client scheduled by then.
async fn run(writer: Arc<Task>) {
    let (mut clients, mut frames) = (Vec::new(), Vec::new());
    loop {
        writer.ready.notified().await;
        tokio::task::yield_now().await;
        std::mem::swap(&mut clients, &mut *writer.scheduled.lock());
        for client in clients.drain(..) {
            client.flush(&mut frames);
        }
    }
}

/// A WebSocket client's socket as the shared writer writes to it: its
/// outbox, its send queue, its framing, and its counters.
pub struct DirectFrames {
    outbox: Weak<Outbox>,
    queue: SendQueue,
    sends: Sends,
    framing: Framing,
    writer: Arc<SharedWriter>,
}

impl DirectFrames {
    /// The client of `outbox`, written to through `queue`.
    pub fn offer(writer: &Arc<SharedWriter>, outbox: &Arc<Outbox>, queue: &SendQueue, sends: Sends, framing: Framing) -> Arc<dyn Direct> {
        Arc::new(DirectFrames { outbox: Arc::downgrade(outbox), queue: queue.clone(), sends, framing, writer: writer.clone() })
    }

    /// Writes what the client's outbox holds, if its writer still leaves
    /// it to us; `frames` is room to frame it in.
    fn flush(&self, frames: &mut Vec<Bytes>) {
        let Some(outbox) = self.outbox.upgrade() else { return };
        outbox.flush_direct(|queued| {
            let (frame, bits) = self.framing;
            frames.clear();
            frames.extend(queued.iter().map(|payload| frame(payload, bits)));
            let sent = self.queue.try_send(frames);
            if sent != Sent::Nothing {
                self.sends.sent(queued.len(), queued.iter().map(Payload::len).sum());
            }
            sent
        });
    }
}

impl Direct for DirectFrames {
    fn schedule(self: Arc<Self>) {
        let writer = self.writer.clone();
        writer.schedule(self);
    }
}
