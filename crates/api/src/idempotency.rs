//! Publishes already done, by their idempotency key, so that a backend
//! that retries a publish (its answer was lost) publishes once. A key is
//! kept for `--api-idempotency-window`, and at most
//! `--api-idempotency-keys` keys are kept: past it the oldest goes first,
//! so under a heavier load the window is shorter.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::Instant;

/// See the module docs.
#[derive(Debug)]
pub struct Idempotency {
    window: Duration,
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// By key: the reply once done, `None` while under way.
    done: HashMap<String, Option<Value>>,
    /// Keys, oldest first, with when each came.
    order: VecDeque<(Instant, String)>,
}

/// What to do with a publish that carries a key.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// New: publish it, then [`Idempotency::done`] or [`Idempotency::failed`].
    New,
    /// Done within the window: its reply.
    Done(Value),
    /// Under way now, in another call.
    UnderWay,
}

impl Idempotency {
    pub fn new(window: Duration, max: usize) -> Idempotency {
        Idempotency { window, max: max.max(1), state: Mutex::default() }
    }

    /// Looks `key` up, marking it under way if it is new.
    pub fn see(&self, key: &str) -> Seen {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.expire(now, self.window);
        match state.done.get(key) {
            Some(Some(reply)) => return Seen::Done(reply.clone()),
            Some(None) => return Seen::UnderWay,
            None => {}
        }
        while state.done.len() >= self.max {
            let Some((_, oldest)) = state.order.pop_front() else { break };
            state.done.remove(&oldest);
        }
        state.done.insert(key.to_owned(), None);
        state.order.push_back((now, key.to_owned()));
        Seen::New
    }

    /// The publish under `key` is done, with `reply`.
    pub fn done(&self, key: &str, reply: &Value) {
        if let Some(slot) = self.state.lock().done.get_mut(key) {
            *slot = Some(reply.clone());
        }
    }

    /// The publish under `key` failed: a retry may publish it.
    pub fn failed(&self, key: &str) {
        let mut state = self.state.lock();
        state.done.remove(key);
        state.order.retain(|(_, k)| k != key);
    }
}

impl State {
    fn expire(&mut self, now: Instant, window: Duration) {
        while let Some((at, _)) = self.order.front() {
            if now.duration_since(*at) < window {
                break;
            }
            if let Some((_, key)) = self.order.pop_front() {
                self.done.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test(start_paused = true)]
    async fn a_key_publishes_once_within_its_window_and_again_after_it() {
        let keys = Idempotency::new(Duration::from_secs(60), 10);
        assert_eq!(keys.see("k"), Seen::New);
        assert_eq!(keys.see("k"), Seen::UnderWay);
        keys.done("k", &json!({"room": "lobby"}));
        assert_eq!(keys.see("k"), Seen::Done(json!({"room": "lobby"})));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(keys.see("k"), Seen::New);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_publish_may_be_tried_again() {
        let keys = Idempotency::new(Duration::from_secs(60), 10);
        assert_eq!(keys.see("k"), Seen::New);
        keys.failed("k");
        assert_eq!(keys.see("k"), Seen::New);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_bound_the_oldest_key_goes_first() {
        let keys = Idempotency::new(Duration::from_secs(60), 2);
        for k in ["a", "b", "c"] {
            assert_eq!(keys.see(k), Seen::New);
            keys.done(k, &json!(k));
        }
        assert_eq!(keys.see("b"), Seen::Done(json!("b")));
        assert_eq!(keys.see("c"), Seen::Done(json!("c")));
        assert_eq!(keys.see("a"), Seen::New, "the oldest was forgotten");
    }
}
