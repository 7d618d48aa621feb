//! A value split into independently locked shards, picked by hashing a key,
//! so that work on different keys rarely meets on one lock. The hub's rooms
//! and the server's SockJS session registry are both kept this way.

use std::hash::{BuildHasher, Hash, RandomState};

use parking_lot::Mutex;

/// `T` in `n` shards, each behind its own lock.
#[derive(Debug)]
pub struct Shards<T> {
    shards: Box<[Mutex<T>]>,
    hasher: RandomState,
}

impl<T: Default> Shards<T> {
    /// `n` shards (at least one), each holding `T::default()`.
    pub fn new(n: usize) -> Shards<T> {
        Shards { shards: (0..n.max(1)).map(|_| Mutex::default()).collect(), hasher: RandomState::new() }
    }
}

impl<T> Shards<T> {
    /// The shard that holds `key`.
    pub fn get<K: Hash + ?Sized>(&self, key: &K) -> &Mutex<T> {
        // The modulo keeps the index below the shard count, so the cast
        // back to usize cannot truncate it.
        let i = (self.hasher.hash_one(key) % self.shards.len() as u64) as usize;
        &self.shards[i]
    }

    /// Every shard, for whole-collection questions (counts, tests).
    pub fn iter(&self) -> impl Iterator<Item = &Mutex<T>> {
        self.shards.iter()
    }
}
