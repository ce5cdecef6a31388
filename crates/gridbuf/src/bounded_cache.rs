//! A small cache that empties itself when full: for caches whose keys repeat (the layouts a
//! program uses are few), where a miss only costs recomputing the value, and where an eviction
//! policy would cost more than the rare refill.

use rustc_hash::FxHashMap;
use std::hash::Hash;

/// A map with at most `capacity` entries; inserting into a full cache first empties it.
///
/// FxHash: keys are hashed on every lookup, and SipHash's flood resistance buys nothing for
/// caches of the caller's own layouts.
#[derive(Clone, Debug)]
pub struct BoundedCache<K, V> {
    map: FxHashMap<K, V>,
    capacity: usize,
}

impl<K: Hash + Eq, V> BoundedCache<K, V> {
    /// An empty cache holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> BoundedCache<K, V> {
        BoundedCache {
            map: FxHashMap::default(),
            capacity: capacity.max(1),
        }
    }

    /// The value cached under `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    /// Caches `value` under `key`, emptying the cache first when it is full.
    pub fn insert(&mut self, key: K, value: V) {
        if self.map.len() >= self.capacity && !self.map.contains_key(&key) {
            self.map.clear();
        }
        self.map.insert(key, value);
    }

    /// Number of cached entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empties_itself_when_full() {
        let mut c = BoundedCache::new(2);
        c.insert(1, "a");
        c.insert(2, "b");
        c.insert(2, "B"); // replacing does not empty it
        assert_eq!((c.len(), c.get(&1), c.get(&2)), (2, Some(&"a"), Some(&"B")));
        c.insert(3, "c");
        assert_eq!((c.len(), c.get(&1), c.get(&3)), (1, None, Some(&"c")));
        c.clear();
        assert!(c.is_empty());
    }
}
