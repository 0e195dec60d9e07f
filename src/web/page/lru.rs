//! A store with a cap on its entries and on their bytes that lets the least
//! recently used entries go first: the page keeps what the user browsed
//! (directory listings of the tree, xattr values) in these, as asking the
//! worker again for an entry that went is cheap. Plain Rust, tested natively.
//!
//! The stores are small (a few hundred entries): the least recently used
//! are found by going through them when the store is over its cap, rather
//! than kept in a second map by time (one map type fewer in the wasm).

use std::collections::BTreeMap;

/// The most a store holds: entries, and bytes of them (as the caller
/// weighs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    pub entries: usize,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq)]
struct Slot<V> {
    value: V,
    bytes: u64,
    /// When it was last put or used (higher is later).
    used: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lru<K: Ord, V> {
    slots: BTreeMap<K, Slot<V>>,
    clock: u64,
    bytes: u64,
    cap: Cap,
}

impl<K: Ord + Clone, V> Lru<K, V> {
    pub fn new(cap: Cap) -> Self {
        Lru {
            slots: BTreeMap::new(),
            clock: 0,
            bytes: 0,
            cap,
        }
    }

    pub fn cap(&self) -> Cap {
        self.cap
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The bytes of every entry, as they were weighed when put.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.slots.get(k).map(|s| &s.value)
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.slots.contains_key(k)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.slots.iter().map(|(k, s)| (k, &s.value))
    }

    pub fn clear(&mut self) {
        self.slots.clear();
        self.bytes = 0;
    }

    fn tick(&mut self) -> u64 {
        self.clock = self.clock.saturating_add(1);
        self.clock
    }

    /// Mark `k` as used now (it goes last).
    pub fn touch(&mut self, k: &K) {
        let now = self.tick();
        if let Some(s) = self.slots.get_mut(k) {
            s.used = now;
        }
    }

    fn remove(&mut self, k: &K) -> Option<V> {
        let s = self.slots.remove(k)?;
        self.bytes = self.bytes.saturating_sub(s.bytes);
        Some(s.value)
    }

    /// Put `value` (weighing `bytes`) under `k`, replacing what was there,
    /// then let the least recently used entries go until the store is
    /// within its cap. The entry just put stays, and so do those `keep`
    /// says to (the store is over its cap only when these alone are).
    /// Returns the keys that went, oldest first.
    pub fn put(&mut self, k: K, value: V, bytes: u64, keep: impl Fn(&K) -> bool) -> Vec<K> {
        self.remove(&k);
        let now = self.tick();
        self.bytes = self.bytes.saturating_add(bytes);
        self.slots.insert(
            k.clone(),
            Slot {
                value,
                bytes,
                used: now,
            },
        );
        let over = |l: &Self| l.slots.len() > l.cap.entries || l.bytes > l.cap.bytes;
        if !over(self) {
            return Vec::new();
        }
        let mut by_age: Vec<(u64, &K)> = self
            .slots
            .iter()
            .filter(|(c, _)| **c != k && !keep(c))
            .map(|(c, s)| (s.used, c))
            .collect();
        crate::xfs::sort::by_key(&mut by_age, |&(used, _)| u128::from(used));
        let candidates: Vec<K> = by_age.into_iter().map(|(_, c)| c.clone()).collect();
        let mut gone = Vec::new();
        for c in candidates {
            if !over(self) {
                break;
            }
            self.remove(&c);
            gone.push(c);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru(entries: usize, bytes: u64) -> Lru<u32, &'static str> {
        Lru::new(Cap { entries, bytes })
    }

    #[test]
    fn the_least_recently_used_go_first_at_the_entry_cap() {
        let mut l = lru(3, 1000);
        for k in 1..=3 {
            assert!(l.put(k, "v", 1, |_| false).is_empty());
        }
        // 1 is used again: 2 is now the oldest.
        l.touch(&1);
        assert_eq!(l.put(4, "v", 1, |_| false), vec![2]);
        assert_eq!(l.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [1, 3, 4]);
        assert_eq!(l.put(5, "v", 1, |_| false), vec![3]);
        assert_eq!(l.len(), 3);
        assert_eq!(l.bytes(), 3);
    }

    #[test]
    fn the_byte_cap_lets_as_many_go_as_needed() {
        let mut l = lru(100, 10);
        l.put(1, "a", 4, |_| false);
        l.put(2, "b", 4, |_| false);
        assert_eq!(l.bytes(), 8);
        // 9 bytes more: both older entries go.
        assert_eq!(l.put(3, "c", 9, |_| false), vec![1, 2]);
        assert_eq!(l.bytes(), 9);
        assert_eq!(l.get(&3), Some(&"c"));
        // One entry over the cap by itself stays (it is what is shown).
        assert!(l.put(4, "d", 50, |_| false) == vec![3]);
        assert_eq!((l.len(), l.bytes()), (1, 50));
        // and goes for the next.
        assert_eq!(l.put(5, "e", 1, |_| false), vec![4]);
        assert_eq!((l.len(), l.bytes()), (1, 1));
    }

    #[test]
    fn putting_a_key_again_replaces_its_bytes_and_makes_it_new() {
        let mut l = lru(2, 100);
        l.put(1, "a", 10, |_| false);
        l.put(2, "b", 10, |_| false);
        l.put(1, "a2", 30, |_| false);
        assert_eq!((l.len(), l.bytes()), (2, 40));
        assert_eq!(l.get(&1), Some(&"a2"));
        assert_eq!(l.put(3, "c", 1, |_| false), vec![2]);
    }

    #[test]
    fn kept_entries_stay_and_the_next_oldest_go() {
        let mut l = lru(2, 100);
        l.put(1, "a", 1, |_| false);
        l.put(2, "b", 1, |_| false);
        assert_eq!(l.put(3, "c", 1, |k| *k == 1), vec![2]);
        // Only kept ones besides the new one: over the cap, nothing goes.
        assert!(l.put(4, "d", 1, |k| *k <= 3).is_empty());
        assert_eq!(l.len(), 3);
        l.clear();
        assert!(l.is_empty());
        assert_eq!(l.bytes(), 0);
    }

    #[test]
    fn touching_a_missing_key_changes_nothing() {
        let mut l = lru(1, 10);
        l.touch(&7);
        assert!(l.is_empty());
        l.put(1, "a", 1, |_| false);
        l.touch(&7);
        assert_eq!(l.put(2, "b", 1, |_| false), vec![1]);
        assert!(!l.contains_key(&1));
    }
}
