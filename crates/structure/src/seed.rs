//! [Grosclaude 2012]'s algorithm (its section "Algorithm"): alternately replace runs (`A` found `n`
//! times in a row becomes `A[n]`) and the most frequent digram (every `A, B` becomes
//! `A+B`), until neither applies. Ties between digrams go to the one seen first. Each pass
//! is linear; the number of passes grows with the grammar, so this is quadratic in the
//! worst case: [`crate::fold`] is the linear algorithm.

use std::collections::HashMap;

use crate::node::{Node, Stats};

/// Compresses `(symbol, value)` by [Grosclaude 2012]'s algorithm; the result in its shapes
/// (`Seq` of two for a digram, `Loop` of one for a run).
pub fn compress(seq: impl IntoIterator<Item = (u32, f64)>) -> Vec<Node> {
    let mut keys: Vec<u64> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    for (s, v) in seq {
        keys.push(u64::from(s));
        nodes.push(Node::Leaf {
            sym: s,
            stats: Stats::one(v),
        });
    }
    // New symbols live above the input's.
    let mut rules: HashMap<(u64, u64, bool), u64> = HashMap::new();
    let mut fresh = 1u64 << 32;
    let mut rule = |a: u64, b: u64, run: bool| {
        *rules.entry((a, b, run)).or_insert_with(|| {
            fresh += 1;
            fresh
        })
    };
    loop {
        let mut changed = false;
        // Runs.
        let (mut k2, mut n2) = (
            Vec::with_capacity(keys.len()),
            Vec::with_capacity(keys.len()),
        );
        let mut nodes_in = std::mem::take(&mut nodes).into_iter();
        let mut i = 0;
        while i < keys.len() {
            let mut j = i;
            while j + 1 < keys.len() && keys[j + 1] == keys[i] {
                j += 1;
            }
            let mut first = nodes_in.next().expect("one node per key");
            if j > i {
                for _ in i..j {
                    first.merge(&nodes_in.next().expect("one node per key"));
                }
                let n = (j - i + 1) as u64;
                k2.push(rule(keys[i], n, true));
                n2.push(Node::Loop {
                    body: vec![first],
                    count: n,
                });
                changed = true;
            } else {
                k2.push(keys[i]);
                n2.push(first);
            }
            i = j + 1;
        }
        keys = k2;
        nodes = n2;
        // The most frequent digram (no run is left, so occurrences cannot overlap).
        let mut count: HashMap<(u64, u64), (u64, usize)> = HashMap::new();
        for (i, w) in keys.windows(2).enumerate() {
            count.entry((w[0], w[1])).or_insert((0, i)).0 += 1;
        }
        let best = count
            .iter()
            .filter(|(_, &(c, _))| c >= 2)
            .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
            .map(|(&d, _)| d);
        if let Some((a, b)) = best {
            let r = rule(a, b, false);
            let (mut k2, mut n2) = (
                Vec::with_capacity(keys.len()),
                Vec::with_capacity(keys.len()),
            );
            let mut it = std::mem::take(&mut nodes).into_iter();
            let mut i = 0;
            while i < keys.len() {
                let x = it.next().expect("one node per key");
                if i + 1 < keys.len() && keys[i] == a && keys[i + 1] == b {
                    let y = it.next().expect("one node per key");
                    k2.push(r);
                    n2.push(Node::Seq { items: vec![x, y] });
                    i += 2;
                } else {
                    k2.push(keys[i]);
                    n2.push(x);
                    i += 1;
                }
            }
            keys = k2;
            nodes = n2;
            changed = true;
        }
        if !changed {
            return nodes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_seeds_ep_shape() {
        // CPU0 Bcast0 CPU1 Barrier1 (CPU2 Allreduce2)x4, as 0 1 2 3 (4 5)x4.
        let seq = [0, 1, 2, 3, 4, 5, 4, 5, 4, 5, 4, 5].map(|s| (s, 1.0));
        let out = compress(seq);
        let shapes: Vec<String> = out.iter().map(Node::shape).collect();
        assert_eq!(shapes, ["0", "1", "2", "3", "((4+5))[4]"]);
        let names = |s: u32| format!("S{s}");
        assert_eq!(
            out[4].notation(&names, &|v| format!("{v}")),
            "(S4: 1 + S5: 1)[4]"
        );
    }

    proptest! {
        #[test]
        fn lossless(seq in proptest::collection::vec(0u32..3, 0..200)) {
            let out = compress(seq.iter().map(|&s| (s, 1.0)));
            let mut e = Vec::new();
            out.iter().for_each(|n| n.expand_into(&mut e));
            prop_assert_eq!(e, seq);
        }
    }
}
