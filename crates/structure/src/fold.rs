//! Online loop folding in linear time.
//!
//! The folded sequence `S` is a stack of items, each a symbol or a loop (a body of items
//! and a count). After each push, while one applies:
//!
//! 1. **extend**: the item before the last `k` items is a loop whose body is exactly those
//!    `k` items: they become one more iteration (`(A B)[n] A B` → `(A B)[n+1]`);
//! 2. **fold**: the last `k` items repeat the `k` before them: both become a loop of two
//!    iterations (`A B A B` → `(A B)[2]`).
//!
//! Candidates for `k` come from where the last item occurred before (for a fold) and from
//! the loops whose body ends with it (for an extension): at most [`Folder::candidates`] of
//! each, compared in O(1) by polynomial hashes of the stack's prefixes and verified item by
//! item on a hash match. A successful step removes `k` items, so the verification is paid
//! for by the pushes that built them: the whole run is linear in the number of symbols.
//! Items are compared by identity (`kind`, `count`), kinds being interned, so nested loops
//! compare in O(1) too.

use std::collections::HashMap;

use crate::node::{Node, Stats};

/// An item's identity: what it is (a symbol, or a loop body) and how many times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    kind: u32,
    count: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Kind {
    Symbol(u32),
    Body(Vec<Key>),
}

/// Multiplier of the prefix hashes.
const P: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(k: Key) -> u64 {
    // splitmix64 of the packed identity.
    let mut z = (u64::from(k.kind) << 40) ^ k.count.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Builds the structure of a sequence one symbol at a time.
#[derive(Debug)]
pub struct Folder {
    kinds: HashMap<Kind, u32>,
    /// Per kind: the body of a loop kind (empty for symbols) and its hash.
    bodies: Vec<(Vec<Key>, u64)>,
    keys: Vec<Key>,
    nodes: Vec<Node>,
    /// `prefix[i]` hashes `keys[..i]`.
    prefix: Vec<u64>,
    pow: Vec<u64>,
    /// Positions of each key on the stack, increasing.
    at: HashMap<Key, Vec<u32>>,
    /// Positions of loop items, by the last key of their body, increasing.
    loops_ending_with: HashMap<Key, Vec<u32>>,
    /// Most candidate periods tried per step, for each rule.
    pub candidates: usize,
    pushed: u64,
}

impl Default for Folder {
    fn default() -> Self {
        Folder::new()
    }
}

impl Folder {
    /// An empty sequence.
    pub fn new() -> Folder {
        Folder {
            kinds: HashMap::new(),
            bodies: Vec::new(),
            keys: Vec::new(),
            nodes: Vec::new(),
            prefix: vec![0],
            pow: vec![1],
            at: HashMap::new(),
            loops_ending_with: HashMap::new(),
            candidates: 8,
            pushed: 0,
        }
    }

    /// Symbols pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// Items on the folded stack now (the compressed length).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Nothing pushed yet.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn intern(&mut self, kind: Kind) -> u32 {
        if let Some(&k) = self.kinds.get(&kind) {
            return k;
        }
        let id = self.bodies.len() as u32;
        let body = match &kind {
            Kind::Body(b) => b.clone(),
            Kind::Symbol(_) => Vec::new(),
        };
        let h = body
            .iter()
            .fold(0u64, |h, &k| h.wrapping_mul(P).wrapping_add(mix(k)));
        self.bodies.push((body, h));
        self.kinds.insert(kind, id);
        id
    }

    /// Hash of `keys[i..j]`.
    fn window(&self, i: usize, j: usize) -> u64 {
        self.prefix[j].wrapping_sub(self.prefix[i].wrapping_mul(self.pow[j - i]))
    }

    fn append(&mut self, key: Key, node: Node) {
        let pos = self.keys.len();
        self.keys.push(key);
        self.nodes.push(node);
        let h = self.prefix[pos].wrapping_mul(P).wrapping_add(mix(key));
        self.prefix.push(h);
        if self.pow.len() <= self.keys.len() {
            let last = *self.pow.last().unwrap_or(&1);
            self.pow.push(last.wrapping_mul(P));
        }
        self.at.entry(key).or_default().push(pos as u32);
        if let Some(&last) = self.bodies[key.kind as usize].0.last() {
            self.loops_ending_with
                .entry(last)
                .or_default()
                .push(pos as u32);
        }
    }

    fn forget(map: &mut HashMap<Key, Vec<u32>>, key: Key, pos: usize) {
        if let Some(v) = map.get_mut(&key) {
            debug_assert_eq!(v.last().copied(), Some(pos as u32));
            v.pop();
            if v.is_empty() {
                map.remove(&key);
            }
        }
    }

    /// Removes the items from `to` on and returns their nodes.
    fn split_off(&mut self, to: usize) -> Vec<Node> {
        for pos in (to..self.keys.len()).rev() {
            let key = self.keys[pos];
            Self::forget(&mut self.at, key, pos);
            if let Some(&last) = self.bodies[key.kind as usize].0.last() {
                Self::forget(&mut self.loops_ending_with, last, pos);
            }
        }
        self.keys.truncate(to);
        self.prefix.truncate(to + 1);
        self.nodes.split_off(to)
    }

    /// Appends `sym` with value `value` and folds the tail.
    pub fn push(&mut self, sym: u32, value: f64) {
        self.push_stats(sym, Stats::one(value));
    }

    /// Appends `sym` standing for several values already summed up in `stats` (one position
    /// of iterations folded elsewhere) and folds the tail.
    pub fn push_stats(&mut self, sym: u32, stats: Stats) {
        self.pushed += 1;
        let kind = self.intern(Kind::Symbol(sym));
        self.append(Key { kind, count: 1 }, Node::Leaf { sym, stats });
        while self.extend() || self.fold() {}
    }

    /// Rule 1: one more iteration of the loop before the last `k` items.
    fn extend(&mut self) -> bool {
        let n = self.keys.len();
        let x = self.keys[n - 1];
        let Some(cands) = self.loops_ending_with.get(&x) else {
            return false;
        };
        let found = cands
            .iter()
            .rev()
            .map(|&p| p as usize)
            .filter(|&p| p < n - 1)
            .take(self.candidates)
            .find(|&p| {
                let (body, h) = &self.bodies[self.keys[p].kind as usize];
                body.len() == n - 1 - p
                    && *h == self.window(p + 1, n)
                    && body[..] == self.keys[p + 1..n]
            });
        let Some(p) = found else {
            return false;
        };
        let iteration = self.split_off(p + 1);
        let old = self.keys[p];
        if let Node::Loop { body, count } = &mut self.nodes[p] {
            for (b, i) in body.iter_mut().zip(&iteration) {
                b.merge(i);
            }
            *count += 1;
        }
        // Re-key the loop, now the last item.
        let node = self.nodes.pop().expect("the loop item");
        self.split_off(p);
        self.append(
            Key {
                kind: old.kind,
                count: old.count + 1,
            },
            node,
        );
        true
    }

    /// Rule 2: the last `k` items repeat the `k` before them.
    fn fold(&mut self) -> bool {
        let n = self.keys.len();
        let x = self.keys[n - 1];
        let Some(prev) = self.at.get(&x) else {
            return false;
        };
        let found = prev
            .iter()
            .rev()
            .map(|&q| q as usize)
            .filter(|&q| q < n - 1)
            .take(self.candidates)
            .map(|q| n - 1 - q)
            .take_while(|&k| 2 * k <= n)
            .find(|&k| {
                self.window(n - 2 * k, n - k) == self.window(n - k, n)
                    && self.keys[n - 2 * k..n - k] == self.keys[n - k..n]
            });
        let Some(k) = found else {
            return false;
        };
        let body_keys = self.keys[n - k..n].to_vec();
        let kind = self.intern(Kind::Body(body_keys));
        let second = self.split_off(n - k);
        let mut body = self.split_off(n - 2 * k);
        for (b, s) in body.iter_mut().zip(&second) {
            b.merge(s);
        }
        self.append(Key { kind, count: 2 }, Node::Loop { body, count: 2 });
        true
    }

    /// The folded sequence: top-level items in order.
    pub fn finish(self) -> Vec<Node> {
        self.nodes
    }
}

/// Folds a whole sequence of `(symbol, value)`.
pub fn fold(seq: impl IntoIterator<Item = (u32, f64)>) -> Vec<Node> {
    let mut f = Folder::new();
    for (s, v) in seq {
        f.push(s, v);
    }
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn syms(s: &str) -> Vec<(u32, f64)> {
        s.bytes().map(|b| (u32::from(b - b'A'), 1.0)).collect()
    }

    fn shapes(nodes: &[Node]) -> String {
        nodes.iter().map(Node::shape).collect::<Vec<_>>().join(" ")
    }

    fn expand(nodes: &[Node]) -> Vec<u32> {
        let mut v = Vec::new();
        nodes.iter().for_each(|n| n.expand_into(&mut v));
        v
    }

    #[test]
    fn loops_nested_loops_and_counts() {
        assert_eq!(shapes(&fold(syms("ABABAB"))), "(0 1)[3]");
        assert_eq!(shapes(&fold(syms("XAAAAB"))), "23 (0)[4] 1");
        // for i in 0..3 { for j in 0..4 { X }; Y }
        assert_eq!(shapes(&fold(syms("XXXXYXXXXYXXXXY"))), "((23)[4] 24)[3]");
        // An irregular inner count is kept as it is.
        assert_eq!(shapes(&fold(syms("XXXYXXXXY"))), "(23)[3] 24 (23)[4] 24");
        // A body in which the last symbol occurs twice.
        assert_eq!(shapes(&fold(syms("AXBXAXBXAXBX"))), "(0 23 1 23)[3]");
        // A loop of one loop is one loop: the counts multiply.
        assert_eq!(shapes(&fold(syms("CAAAAAAD"))), "2 (0)[6] 3");
        // 2-D: a loop of two different loops.
        assert_eq!(shapes(&fold(syms("AABBBAABBB"))), "((0)[2] (1)[3])[2]");
    }

    #[test]
    fn statistics_per_position() {
        let seq = [
            (0, 1.0),
            (1, 10.0),
            (0, 3.0),
            (1, 20.0),
            (0, 5.0),
            (1, 30.0),
        ];
        let f = fold(seq);
        let Node::Loop { body, count } = &f[0] else {
            panic!("{f:?}")
        };
        assert_eq!(*count, 3);
        let Node::Leaf { stats, .. } = &body[0] else {
            panic!()
        };
        assert_eq!(
            (stats.n, stats.mean(), stats.min, stats.max),
            (3, 3.0, 1.0, 5.0)
        );
        assert_eq!(f[0].total(), 69.0);
    }

    /// A random program: nested loops over leaves with symbols unique in the program.
    fn program() -> impl Strategy<Value = Node> {
        let leaf = (0u32..1).prop_map(|_| Node::Leaf {
            sym: 0,
            stats: Stats::one(0.0),
        });
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                (proptest::collection::vec(inner.clone(), 1..5), 2u64..6)
                    .prop_map(|(body, count)| Node::Loop { body, count }),
                proptest::collection::vec(inner, 1..5).prop_map(|items| Node::Seq { items }),
            ]
        })
    }

    /// Numbers the leaves 0, 1, 2, ... and flattens sequences into their parent; a loop
    /// whose body is one loop becomes that loop with the counts multiplied (the sequence
    /// cannot tell them apart).
    fn number(n: &Node, next: &mut u32) -> Vec<Node> {
        match n {
            Node::Leaf { stats, .. } => {
                *next += 1;
                vec![Node::Leaf {
                    sym: *next - 1,
                    stats: *stats,
                }]
            }
            Node::Seq { items } => items.iter().flat_map(|i| number(i, next)).collect(),
            Node::Loop { body, count } => {
                let body: Vec<Node> = body.iter().flat_map(|i| number(i, next)).collect();
                match body.as_slice() {
                    [Node::Loop {
                        body: inner,
                        count: c,
                    }] => vec![Node::Loop {
                        body: inner.clone(),
                        count: c * count,
                    }],
                    _ => vec![Node::Loop {
                        body,
                        count: *count,
                    }],
                }
            }
        }
    }

    proptest! {
        /// Lossless on any sequence over a small alphabet.
        #[test]
        fn folding_is_lossless(seq in proptest::collection::vec(0u32..4, 0..400)) {
            let f = fold(seq.iter().map(|&s| (s, 1.0)));
            prop_assert_eq!(expand(&f), seq.clone());
            let n: u64 = f.iter().map(Node::expanded_len).sum();
            prop_assert_eq!(n, seq.len() as u64);
        }

        /// A program whose leaves are all different is recovered exactly: every loop with
        /// its body and its count.
        #[test]
        fn programs_are_recovered(p in program()) {
            let mut next = 0;
            let want = number(&p, &mut next);
            let mut seq = Vec::new();
            want.iter().for_each(|n| n.expand_into(&mut seq));
            let got = fold(seq.iter().map(|&s| (s, 0.0)));
            prop_assert_eq!(shapes(&got), shapes(&want));
        }
    }
}
