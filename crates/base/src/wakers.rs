//! Wakers kept each in a slot of its own, so that a waiter holds an index
//! (8 bytes or fewer) instead of a future, and lets go of its slot when it
//! is dropped: shutdown's list ([`crate::shutdown::Waiter`]) and each of the
//! alarms' buckets ([`crate::alarm`]).

use std::task::Waker;

/// The slots; a freed one is reused by the next waker kept.
#[derive(Debug, Default)]
pub(crate) struct WakerSlots {
    wakers: Vec<Option<Waker>>,
    free: Vec<usize>,
}

impl WakerSlots {
    /// Keeps `waker`; its slot.
    pub(crate) fn insert(&mut self, waker: Waker) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.wakers[slot] = Some(waker);
                slot
            }
            None => {
                self.wakers.push(Some(waker));
                self.wakers.len() - 1
            }
        }
    }

    /// Drops the waker in `slot`, if one is there, and frees the slot.
    pub(crate) fn remove(&mut self, slot: usize) {
        if let Some(waker) = self.wakers.get_mut(slot)
            && waker.take().is_some()
        {
            self.free.push(slot);
        }
    }

    /// Takes every waker kept, leaving their slots taken but empty: a
    /// waiter that drops then frees nothing.
    pub(crate) fn take_all(&mut self) -> Vec<Waker> {
        self.wakers.iter_mut().filter_map(Option::take).collect()
    }

    /// Whether no waker is kept (every slot is free).
    pub(crate) fn is_empty(&self) -> bool {
        self.free.len() == self.wakers.len()
    }

    /// Whether a waker is kept in `slot`.
    #[cfg(test)]
    pub(crate) fn holds(&self, slot: usize) -> bool {
        self.wakers.get(slot).is_some_and(Option::is_some)
    }

    /// How many slots there are, taken or free.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.wakers.len()
    }
}
