//! A binary min-heap of items named by small integer ids, each present at most once, whose
//! keys can be changed or removed in place.
//!
//! The flow model keeps one completion date per flow, and the max-min solver one saturation
//! level per constraint; both change many keys between pops. A lazy heap (push a new entry,
//! skip the stale ones when popped) grows with every change, and popping through the stale
//! entries came to half a replay's time on a platform whose flows all share one backbone.
//! Here each id has one slot, found through its position, so the heap holds only the live
//! keys. Many keys changed at once ([`KeyedHeap::set_unordered`]) are put back in order by
//! one linear pass at the next use. Items come out by `(key, id)`, smallest first: the order a lazy heap of
//! `(key, id, version)` entries gives for its current entries, so replacing one with the
//! other changes no result.

/// Position of an id that is not in the heap.
const ABSENT: u32 = u32::MAX;

/// A min-heap of `(key, id)` with at most one entry per id.
#[derive(Debug, Clone)]
pub(crate) struct KeyedHeap<K> {
    /// The entries, a binary heap ordered by `(key, id)`.
    heap: Vec<(K, u32)>,
    /// Per id: its index in `heap`, or [`ABSENT`].
    pos: Vec<u32>,
    /// Keys were set by [`KeyedHeap::set_unordered`]: the order is restored before the
    /// next use.
    unordered: bool,
    /// Scratch of [`KeyedHeap::pop_group`].
    group: Vec<(K, u32)>,
}

impl<K> Default for KeyedHeap<K> {
    fn default() -> KeyedHeap<K> {
        KeyedHeap {
            heap: Vec::new(),
            pos: Vec::new(),
            unordered: false,
            group: Vec::new(),
        }
    }
}

impl<K: Ord + Copy> KeyedHeap<K> {
    /// An empty heap.
    pub(crate) fn new() -> KeyedHeap<K> {
        KeyedHeap::default()
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// The smallest entry.
    pub(crate) fn peek(&mut self) -> Option<(K, u32)> {
        self.order();
        self.heap.first().copied()
    }

    /// Takes the smallest entry out.
    pub(crate) fn pop(&mut self) -> Option<(K, u32)> {
        self.order();
        let top = *self.heap.first()?;
        self.remove_at(0);
        Some(top)
    }

    /// Takes out the smallest entry and then, as repeated pops would, each next smallest
    /// while `within(first key, its key)` holds; their ids into `out` in `(key, id)` order.
    /// Returns the first key. Right after [`KeyedHeap::set_unordered`], one linear pass
    /// picks them out (the others stay unordered) instead of ordering the whole heap.
    pub(crate) fn pop_group(
        &mut self,
        within: impl Fn(K, K) -> bool,
        out: &mut Vec<u32>,
    ) -> Option<K> {
        out.clear();
        if !self.unordered {
            let (first, id) = self.pop()?;
            out.push(id);
            while let Some(&(key, id)) = self.heap.first() {
                if !within(first, key) {
                    break;
                }
                self.remove_at(0);
                out.push(id);
            }
            return Some(first);
        }
        let first = self.heap.iter().copied().min_by(cmp)?;
        // Pops would stop at the smallest entry `within` refuses: only the accepted
        // entries below it come out.
        let refused = self
            .heap
            .iter()
            .copied()
            .filter(|e| !within(first.0, e.0))
            .min_by(cmp);
        let mut at = 0;
        let start = self.group.len();
        while at < self.heap.len() {
            let e = self.heap[at];
            if within(first.0, e.0) && refused.is_none_or(|r| less(&e, &r)) {
                self.pos[e.1 as usize] = ABSENT;
                self.group.push(e);
                let last = self.heap.pop().expect("an entry");
                if at < self.heap.len() {
                    self.heap[at] = last;
                    self.pos[last.1 as usize] = at as u32;
                }
            } else {
                at += 1;
            }
        }
        self.group[start..].sort_unstable_by(cmp);
        out.extend(self.group.drain(start..).map(|(_, id)| id));
        Some(first.0)
    }

    /// Gives `id` the key `key`, inserting it when absent, and leaves the order to be
    /// restored at the next use: for many changes at once, one pass over the heap
    /// (linear) instead of a sift per change.
    pub(crate) fn set_unordered(&mut self, id: u32, key: K) {
        let i = id as usize;
        if i >= self.pos.len() {
            self.pos.resize(i + 1, ABSENT);
        }
        match self.pos[i] {
            ABSENT => {
                self.pos[i] = self.heap.len() as u32;
                self.heap.push((key, id));
            }
            at => self.heap[at as usize].0 = key,
        }
        self.unordered = true;
    }

    /// Restores the heap order after [`KeyedHeap::set_unordered`] (bottom-up, linear).
    fn order(&mut self) {
        if !self.unordered {
            return;
        }
        self.unordered = false;
        for at in (0..self.heap.len() / 2).rev() {
            self.sift_down(at);
        }
    }

    /// Gives `id` the key `key`, inserting it when absent.
    pub(crate) fn set(&mut self, id: u32, key: K) {
        self.order();
        let i = id as usize;
        if i >= self.pos.len() {
            self.pos.resize(i + 1, ABSENT);
        }
        let at = self.pos[i];
        if at == ABSENT {
            self.heap.push((key, id));
            let last = self.heap.len() - 1;
            self.pos[i] = last as u32;
            self.sift_up(last);
        } else {
            let at = at as usize;
            let old = self.heap[at].0;
            self.heap[at].0 = key;
            if key < old {
                self.sift_up(at);
            } else {
                self.sift_down(at);
            }
        }
    }

    /// Removes `id`'s entry, if any.
    pub(crate) fn remove(&mut self, id: u32) {
        self.order();
        match self.pos.get(id as usize) {
            Some(&at) if at != ABSENT => self.remove_at(at as usize),
            _ => {}
        }
    }

    /// Removes every entry.
    pub(crate) fn clear(&mut self) {
        self.unordered = false;
        for &(_, id) in &self.heap {
            self.pos[id as usize] = ABSENT;
        }
        self.heap.clear();
    }

    fn remove_at(&mut self, at: usize) {
        let id = self.heap[at].1;
        self.pos[id as usize] = ABSENT;
        let last = self.heap.len() - 1;
        if at == last {
            self.heap.pop();
            return;
        }
        let moved = self.heap[last];
        self.heap[at] = moved;
        self.heap.pop();
        self.pos[moved.1 as usize] = at as u32;
        // The entry moved in from the end may belong above or below.
        if at > 0 && less(&moved, &self.heap[(at - 1) / 2]) {
            self.sift_up(at);
        } else {
            self.sift_down(at);
        }
    }

    fn sift_up(&mut self, mut at: usize) {
        let item = self.heap[at];
        while at > 0 {
            let parent = (at - 1) / 2;
            if !less(&item, &self.heap[parent]) {
                break;
            }
            self.heap[at] = self.heap[parent];
            self.pos[self.heap[at].1 as usize] = at as u32;
            at = parent;
        }
        self.heap[at] = item;
        self.pos[item.1 as usize] = at as u32;
    }

    fn sift_down(&mut self, mut at: usize) {
        let item = self.heap[at];
        let n = self.heap.len();
        loop {
            let left = 2 * at + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && less(&self.heap[right], &self.heap[left]) {
                right
            } else {
                left
            };
            if !less(&self.heap[child], &item) {
                break;
            }
            self.heap[at] = self.heap[child];
            self.pos[self.heap[at].1 as usize] = at as u32;
            at = child;
        }
        self.heap[at] = item;
        self.pos[item.1 as usize] = at as u32;
    }
}

/// `(key, id)` order.
fn less<K: Ord>(a: &(K, u32), b: &(K, u32)) -> bool {
    (&a.0, a.1) < (&b.0, b.1)
}

/// `(key, id)` order, as an ordering.
fn cmp<K: Ord>(a: &(K, u32), b: &(K, u32)) -> std::cmp::Ordering {
    (&a.0, a.1).cmp(&(&b.0, b.1))
}

/// An `f64` ordered by [`f64::total_cmp`] (the solver's levels).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TotalF64(pub(crate) f64);

impl PartialEq for TotalF64 {
    fn eq(&self, o: &TotalF64) -> bool {
        self.0.total_cmp(&o.0).is_eq()
    }
}
impl Eq for TotalF64 {}
impl PartialOrd for TotalF64 {
    fn partial_cmp(&self, o: &TotalF64) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for TotalF64 {
    fn cmp(&self, o: &TotalF64) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// Against a map of the current keys: every pop is the smallest `(key, id)`, after
        /// any sequence of inserts, key changes, removals and pops.
        #[test]
        fn pops_in_key_then_id_order(ops in prop::collection::vec((0u8..5, 0u32..40, 0u32..20), 1..300)) {
            let mut h = KeyedHeap::new();
            let mut model: BTreeMap<u32, u32> = BTreeMap::new();
            for (op, id, key) in ops {
                match op {
                    0 => { h.set(id, key); model.insert(id, key); }
                    1 => { h.set_unordered(id, key); model.insert(id, key); }
                    2 => { h.remove(id); model.remove(&id); }
                    3 => {
                        // Pops while the key is within `key` of the first one, or odd.
                        let within = |first: u32, k: u32| k <= first + key || k % 2 == 1;
                        let mut want = Vec::new();
                        let mut first = None;
                        while let Some((k, i)) = model.iter().map(|(&i, &k)| (k, i)).min() {
                            let f = *first.get_or_insert(k);
                            if !want.is_empty() && !within(f, k) { break; }
                            want.push(i);
                            model.remove(&i);
                        }
                        let mut got = Vec::new();
                        prop_assert_eq!(h.pop_group(within, &mut got), first);
                        prop_assert_eq!(got, want);
                    }
                    _ => {
                        let want = model.iter().map(|(&i, &k)| (k, i)).min();
                        prop_assert_eq!(h.pop(), want);
                        if let Some((_, i)) = want { model.remove(&i); }
                    }
                }
                prop_assert_eq!(h.len(), model.len());
                prop_assert_eq!(h.peek(), model.iter().map(|(&i, &k)| (k, i)).min());
            }
            h.clear();
            prop_assert_eq!(h.pop(), None);
            h.set(3, 1);
            prop_assert_eq!(h.pop(), Some((1, 3)));
        }
    }

    #[test]
    fn levels_order_as_total_cmp() {
        let mut h = KeyedHeap::new();
        h.set(2, TotalF64(1.5));
        h.set(1, TotalF64(1.5));
        h.set(0, TotalF64(f64::INFINITY));
        h.set(5, TotalF64(0.25));
        let order: Vec<u32> = std::iter::from_fn(|| h.pop().map(|(_, id)| id)).collect();
        assert_eq!(order, vec![5, 1, 2, 0]);
    }
}
