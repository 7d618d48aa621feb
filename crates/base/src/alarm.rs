//! Deadlines seconds away, for many idle connections, at 8 bytes each.
//!
//! An idle connection always waits for something seconds away: its next
//! ping, its token's expiry. A tokio `Sleep` for that is 112 bytes in the
//! connection's future, and every idle connection's task holds one
//! (docs/shootout.md, "Idle memory, beside Bun"). An [`Alarm`] is 8 bytes:
//! its waker waits in the wheel's bucket for its deadline's [`TICK`], and a
//! thread of the wheel's own wakes a bucket's wakers once its tick has
//! passed. So an alarm never fires before its deadline, and at most a tick
//! (and the thread's wake-up) after it, as uWebSockets' timeouts fire on a
//! sweep every few seconds.
//!
//! The wheel's thread keeps the real clock: under tokio's paused clock (a
//! test's), an alarm still fires by real time.
//!
//! A [`Timer`] is a connection's one timer: deadlines under [`COARSE`] away
//! (a throttled reader, a closing handshake, the write delay) go on a tokio
//! `Sleep`, made on first use and kept, and farther ones on an alarm.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::time::{Instant, Sleep};

use crate::time::Ms;
use crate::wakers::WakerSlots;

/// An alarm's resolution: it fires up to this long after its deadline.
pub const TICK: Duration = Duration::from_millis(100);

/// A [`Timer`]'s deadlines this far away or more go on its alarm: late by
/// a tick at most, a tenth of the wait.
pub const COARSE: Duration = Duration::from_secs(1);

/// Waits for a deadline; see the module docs. The waker is registered
/// when the deadline is set and kept until its tick: it must be the waker
/// of the one task that polls this for its whole life, as a task's own
/// waker is.
#[derive(Debug, Default)]
pub struct Alarm {
    /// The tick whose bucket holds the waker; 0 for none.
    tick: u32,
    /// The waker's slot in that bucket.
    slot: u32,
}

impl Alarm {
    pub const fn new() -> Alarm {
        Alarm { tick: 0, slot: 0 }
    }

    /// Ready once `at` has passed. Until then the task is woken at a tick
    /// after `at`, or before it if the alarm was set for an earlier
    /// deadline (a deadline that moves later keeps the earlier tick, and
    /// the poll then sets the new one): polled again, it says which.
    pub fn poll_at(&mut self, cx: &mut Context<'_>, at: Instant) -> Poll<()> {
        if at <= Instant::now() {
            return Poll::Ready(());
        }
        let tick = tick_of(at);
        if self.wakes_by(tick) { Poll::Pending } else { self.set(cx, tick) }
    }

    /// Sets the alarm for `tick`, with the task's waker: pending, or ready
    /// if that tick has passed already.
    fn set(&mut self, cx: &mut Context<'_>, tick: u32) -> Poll<()> {
        if wheel().set(self, tick, cx.waker()) { Poll::Pending } else { Poll::Ready(()) }
    }

    /// Whether a waker waits in the wheel.
    pub fn is_set(&self) -> bool {
        self.tick != 0 && self.tick > wheel().fired.load(Ordering::Acquire)
    }

    /// Whether a waker waits in the wheel for `tick` or one before.
    fn wakes_by(&self, tick: u32) -> bool {
        self.is_set() && self.tick <= tick
    }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        if self.tick != 0 {
            wheel().unset(self);
        }
    }
}

/// The first tick at or after `at`: its bucket is woken once `at` has passed.
fn tick_of(at: Instant) -> u32 {
    let nanos = at.saturating_duration_since(Ms::base()).as_nanos();
    u32::try_from(nanos.div_ceil(TICK.as_nanos()).max(1)).unwrap_or(u32::MAX)
}

/// When `tick`'s bucket is woken.
fn due(tick: u32) -> std::time::Instant {
    (Ms::base() + TICK * tick).into_std()
}

struct Wheel {
    state: Mutex<State>,
    /// The thread waits on it for the first bucket to change.
    changed: Condvar,
    /// The last tick whose bucket was woken: an alarm set for it or before
    /// is spent.
    fired: AtomicU32,
}

#[derive(Default)]
struct State {
    /// The wakers waiting for each tick.
    buckets: BTreeMap<u32, WakerSlots>,
}


fn wheel() -> &'static Wheel {
    static WHEEL: OnceLock<Wheel> = OnceLock::new();
    let mut started = false;
    let wheel = WHEEL.get_or_init(|| {
        started = true;
        Wheel { state: Mutex::new(State::default()), changed: Condvar::new(), fired: AtomicU32::new(0) }
    });
    if started {
        std::thread::Builder::new()
            .name("alarms".into())
            .spawn(move || wheel.run())
            .expect("the alarms' thread starts");
    }
    wheel
}

impl Wheel {
    /// Moves `alarm` to `tick` with `waker`; false if that tick has passed.
    fn set(&self, alarm: &mut Alarm, tick: u32, waker: &Waker) -> bool {
        let mut state = self.state.lock();
        let fired = self.release(&mut state, alarm);
        // The thread woke that tick after this poll read the clock.
        if tick <= fired {
            return false;
        }
        let first = state.buckets.first_key_value().is_none_or(|(&first, _)| tick < first);
        let slot = state.buckets.entry(tick).or_default().insert(waker.clone());
        (alarm.tick, alarm.slot) = (tick, u32::try_from(slot).expect("fewer than 2^32 alarms a tick"));
        drop(state);
        if first {
            self.changed.notify_one();
        }
        true
    }

    fn unset(&self, alarm: &mut Alarm) {
        self.release(&mut self.state.lock(), alarm);
    }

    /// Frees `alarm`'s slot if its tick has not fired (a fired bucket is
    /// gone already) and leaves it unset; the last tick fired.
    fn release(&self, state: &mut State, alarm: &mut Alarm) -> u32 {
        let fired = self.fired.load(Ordering::Acquire);
        if alarm.tick > fired {
            state.remove(alarm.tick, alarm.slot);
        }
        alarm.tick = 0;
        fired
    }

    /// The thread: wakes each bucket once its tick has passed.
    fn run(&self) {
        let mut state = self.state.lock();
        loop {
            let Some(&tick) = state.buckets.keys().next() else {
                self.changed.wait(&mut state);
                continue;
            };
            let due = due(tick);
            if std::time::Instant::now() < due {
                self.changed.wait_until(&mut state, due);
                continue;
            }
            let wakers = state.buckets.remove(&tick).map(|mut bucket| bucket.take_all()).unwrap_or_default();
            self.fired.store(tick, Ordering::Release);
            drop(state);
            wakers.into_iter().for_each(Waker::wake);
            state = self.state.lock();
        }
    }
}

impl State {
    /// Frees `slot` of `tick`'s bucket, and the bucket once it holds no
    /// waker: alarms moved on all at once (clients answering one round of
    /// pings) would otherwise leave its room held until its tick.
    fn remove(&mut self, tick: u32, slot: u32) {
        if let Some(bucket) = self.buckets.get_mut(&tick) {
            bucket.remove(slot as usize);
            if bucket.is_empty() {
                self.buckets.remove(&tick);
            }
        }
    }
}

/// A connection's one timer; see the module docs. A deadline set on the
/// alarm stays there as it comes nearer, so a connection that is polled
/// (for a message) in the last second before its ping makes no `Sleep`.
#[derive(Debug, Default)]
pub struct Timer {
    alarm: Alarm,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Timer {
    pub const fn new() -> Timer {
        Timer { alarm: Alarm::new(), sleep: None }
    }

    /// Ready once `at` has passed; until then the task is woken for it (or,
    /// as an [`Alarm`] is, for an earlier deadline this was set for).
    pub fn poll_at(&mut self, cx: &mut Context<'_>, at: Instant) -> Poll<()> {
        let now = Instant::now();
        if at <= now {
            return Poll::Ready(());
        }
        let tick = tick_of(at);
        if self.alarm.wakes_by(tick) {
            return Poll::Pending;
        }
        if at - now >= COARSE {
            return self.alarm.set(cx, tick);
        }
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if sleep.deadline() != at {
            sleep.as_mut().reset(at);
        }
        sleep.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Wakes;
    use std::future::poll_fn;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    fn waker() -> (Arc<Wakes>, Waker) {
        let wakes = Arc::new(Wakes(AtomicUsize::new(0)));
        (wakes.clone(), Waker::from(wakes))
    }

    /// Whether the wheel holds a waker in `alarm`'s slot.
    fn held(alarm: &Alarm) -> bool {
        let state = wheel().state.lock();
        state.buckets.get(&alarm.tick).is_some_and(|b| b.holds(alarm.slot as usize))
    }

    #[tokio::test]
    async fn an_alarm_fires_after_its_deadline_and_within_a_few_ticks() {
        for wait in [Duration::from_millis(1), Duration::from_millis(150), Duration::from_millis(420)] {
            let at = Instant::now() + wait;
            let mut alarm = Alarm::new();
            poll_fn(|cx| alarm.poll_at(cx, at)).await;
            let late = Instant::now() - at;
            assert!(Instant::now() >= at);
            // A bound, not a timing: a tick, and a scheduler on a busy machine.
            assert!(late < Duration::from_secs(5), "{late:?} late");
            assert!(!alarm.is_set(), "spent once fired");
        }
    }

    #[test]
    fn a_deadline_moved_earlier_moves_its_waker_and_one_moved_later_keeps_it() {
        let (wakes, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        let far = Instant::now() + Duration::from_secs(3600);
        let mut alarm = Alarm::new();
        assert!(alarm.poll_at(&mut cx, far).is_pending());
        let first = (alarm.tick, alarm.slot);
        assert!(held(&alarm) && alarm.is_set());
        assert!(alarm.poll_at(&mut cx, far).is_pending());
        assert_eq!((alarm.tick, alarm.slot), first, "the same deadline sets nothing again");
        assert!(alarm.poll_at(&mut cx, far + Duration::from_secs(60)).is_pending());
        assert_eq!((alarm.tick, alarm.slot), first, "a later deadline keeps the earlier tick");
        assert!(alarm.poll_at(&mut cx, far - Duration::from_secs(60)).is_pending());
        assert_eq!(alarm.tick, first.0 - 600, "an earlier one moves it, a minute being 600 ticks");
        assert!(held(&alarm));
        {
            let state = wheel().state.lock();
            assert!(state.buckets.get(&first.0).is_none_or(|b| !b.holds(first.1 as usize)), "the old slot is free");
        }
        let past = Instant::now() - Duration::from_millis(1);
        assert!(alarm.poll_at(&mut cx, past).is_ready());
        let set = (alarm.tick, alarm.slot);
        drop(alarm);
        let state = wheel().state.lock();
        assert!(state.buckets.get(&set.0).is_none_or(|b| !b.holds(set.1 as usize)), "dropped, it leaves no waker");
        assert_eq!(wakes.0.load(Ordering::Relaxed), 0, "nothing was due");
    }

    #[test]
    fn a_bucket_goes_with_its_last_waker() {
        let (_, waker) = waker();
        let mut cx = Context::from_waker(&waker);
        // A tick of its own, a day away: no other test's alarm is there.
        let at = Instant::now() + Duration::from_secs(86_400) + Duration::from_millis(30);
        let mut alarms: Vec<Alarm> = (0..3).map(|_| Alarm::new()).collect();
        for alarm in &mut alarms {
            assert!(alarm.poll_at(&mut cx, at).is_pending());
        }
        let tick = alarms[0].tick;
        let bucket = || wheel().state.lock().buckets.get(&tick).map(WakerSlots::len);
        assert_eq!(bucket(), Some(3));
        alarms.truncate(1);
        assert_eq!(bucket(), Some(3), "one waker left: its slot stays where it is");
        alarms.clear();
        assert_eq!(bucket(), None, "the last waker gone, the bucket goes");
    }

    #[test]
    fn an_alarm_is_8_bytes() {
        assert_eq!(std::mem::size_of::<Alarm>(), 8);
        assert_eq!(std::mem::size_of::<Timer>(), 16);
    }

    #[tokio::test]
    async fn a_timer_waits_on_a_sleep_under_a_second_away_and_on_an_alarm_beyond() {
        let mut timer = Timer::new();
        let near = Instant::now() + Duration::from_millis(20);
        poll_fn(|cx| timer.poll_at(cx, near)).await;
        assert!(Instant::now() >= near);
        assert!(timer.sleep.is_some() && !timer.alarm.is_set());
        let far = Instant::now() + Duration::from_secs(30);
        poll_fn(|cx| {
            assert!(timer.poll_at(cx, far).is_pending());
            Poll::Ready(())
        })
        .await;
        assert!(timer.alarm.is_set());
        let mut idle = Timer::new();
        let soon = Instant::now() + COARSE + Duration::from_millis(300);
        poll_fn(|cx| idle.poll_at(cx, soon)).await;
        assert!(Instant::now() >= soon);
        assert!(idle.sleep.is_none(), "a deadline set on the alarm stays there as it comes near");
        poll_fn(|cx| {
            assert!(idle.poll_at(cx, far).is_pending());
            Poll::Ready(())
        })
        .await;
        assert!(idle.sleep.is_none(), "a far deadline makes no sleep");
    }
}
