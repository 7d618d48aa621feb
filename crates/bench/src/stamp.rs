//! The timestamp a sender puts in every measured message, and the run's one clock.
//!
//! Latency is only ever computed on this host, from `Clock` readings taken in this
//! process, so no clock sync is involved. The stamp carries the *intended* send time
//! (from the open-loop schedule) and the *actual* one, so a receiver can report both
//! the coordinated-omission-corrected latency and the naive one.

use std::time::{Duration, Instant};

/// Microseconds since the start of the run, from a monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { start: Instant::now() }
    }
    pub fn now_us(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }
    /// The instant that is `us` microseconds after the start.
    pub fn instant(&self, us: u64) -> Instant {
        self.start + Duration::from_micros(us)
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::new()
    }
}

/// `sb:<step>:<sender>:<seq>:<intended_us>:<sent_us>;` — compact ASCII that needs no
/// escaping inside JSON strings or SockJS frames, and is cheap to find and parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Which step of the scenario (rate step, run) the message belongs to.
    pub step: u32,
    /// Which virtual client sent it.
    pub sender: u32,
    /// Per-sender sequence number, from 0.
    pub seq: u64,
    /// When the schedule wanted it sent (µs on the run's clock).
    pub intended_us: u64,
    /// When it was really handed to the transport.
    pub sent_us: u64,
}

const PREFIX: &str = "sb:";

impl Stamp {
    /// Appends the stamp to `out`.
    pub fn write(&self, out: &mut String) {
        use std::fmt::Write;
        let _ = write!(
            out,
            "{PREFIX}{}:{}:{}:{}:{};",
            self.step, self.sender, self.seq, self.intended_us, self.sent_us
        );
    }

    pub fn to_text(&self) -> String {
        let mut s = String::with_capacity(48);
        self.write(&mut s);
        s
    }

    /// Finds and parses the first stamp in `text` (it may sit inside a JSON envelope).
    /// Every received message goes through here, so it is one pass over the bytes: a
    /// message that starts with the stamp (broadcast) needs no search at all.
    pub fn find(text: &str) -> Option<Stamp> {
        let bytes = text.as_bytes();
        let start = if bytes.starts_with(PREFIX.as_bytes()) { 0 } else { text.find(PREFIX)? };
        let mut fields = [0u64; 5];
        let mut at = start + PREFIX.len();
        for (i, field) in fields.iter_mut().enumerate() {
            let end = if i == 4 { b';' } else { b':' };
            let digits = bytes[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            // At most 19 digits: never overflows a u64.
            if digits == 0 || digits > 19 || bytes.get(at + digits) != Some(&end) {
                return None;
            }
            *field = bytes[at..at + digits].iter().fold(0, |n, d| n * 10 + u64::from(d - b'0'));
            at += digits + 1;
        }
        let [step, sender, seq, intended_us, sent_us] = fields;
        Some(Stamp {
            step: u32::try_from(step).ok()?,
            sender: u32::try_from(sender).ok()?,
            seq,
            intended_us,
            sent_us,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_inside_an_envelope() {
        let s = Stamp { step: 3, sender: 17, seq: 42, intended_us: 1_000_000, sent_us: 1_000_250 };
        assert_eq!(s.to_text(), "sb:3:17:42:1000000:1000250;");
        let envelope = format!(r#"{{"name":"u1","room":"r0","message":"{}"}}"#, s.to_text());
        assert_eq!(Stamp::find(&envelope), Some(s));
    }

    #[test]
    fn rejects_garbage() {
        assert_eq!(Stamp::find("hello"), None);
        assert_eq!(Stamp::find("sb:1:2:3;"), None);
        assert_eq!(Stamp::find("sb:1:2:3:4:5"), None);
        assert_eq!(Stamp::find("sb:1:2:3:4:x;"), None);
        assert_eq!(Stamp::find("sb:1:2:3:4:5:6;"), None);
        assert_eq!(Stamp::find("sb:4294967296:2:3:4:5;"), None);
        assert_eq!(Stamp::find("sb:1:2:3:4:99999999999999999999;"), None);
        assert_eq!(Stamp::find("sb::2:3:4:5;"), None);
        assert_eq!(Stamp::find("sb:1:2:3:4:5").map(|s| s.seq), None);
        assert_eq!(Stamp::find("x sb:1:2:3:4:5;").map(|s| s.seq), Some(3));
    }
}
