//! A value split into independently locked shards, picked by hashing a key,
//! so that work on different keys rarely meets on one lock. The hub's rooms
//! and the server's SockJS session registry are both kept this way.

use std::collections::HashMap;
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

/// Gives back a map's spare room once it is at most a quarter full, keeping
/// twice what it holds. A flood of keys (sessions, rooms) would otherwise leave
/// its table at the high-water mark for good, since a map never shrinks by
/// itself. Shrinking only at a quarter keeps the cost of a removal amortised
/// constant: the map must lose half of what it keeps before it shrinks again.
pub fn shrink_when_sparse<K: Eq + Hash, V, S: BuildHasher>(map: &mut HashMap<K, V, S>) {
    const SMALL: usize = 64;
    if map.capacity() > SMALL && map.len() < map.capacity() / 4 {
        map.shrink_to((map.len() * 2).max(SMALL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_emptied_after_a_flood_gives_its_room_back() {
        let mut map = HashMap::new();
        for k in 0..100_000 {
            map.insert(k, k);
        }
        let flooded = map.capacity();
        for k in 100..100_000 {
            map.remove(&k);
            shrink_when_sparse(&mut map);
        }
        assert_eq!(map.len(), 100);
        assert!(map.capacity() <= 512, "{} of {flooded} kept", map.capacity());
        assert!((0..100).all(|k| map[&k] == k));
    }

    #[test]
    fn a_small_map_is_left_alone() {
        let mut map: HashMap<u32, u32> = HashMap::with_capacity(64);
        let room = map.capacity();
        shrink_when_sparse(&mut map);
        assert_eq!(map.capacity(), room);
    }
}
