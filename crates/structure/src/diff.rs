//! The shortest edit script between two symbol sequences, bounded ([Myers 1986]'s greedy
//! O((n + m) D) algorithm): how an iteration differs from the loop's usual one.
//!
//! Only short scripts are wanted (iterations that differ slightly), so the search stops at
//! `max_d` edits and memory stays O(`max_d`²).

/// One difference: at position `at` of the first sequence, `del` of its symbols are missing
/// from the second and the second's symbols `ins` (a range of its positions) come instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Position in the first sequence.
    pub at: usize,
    /// Symbols of the first sequence from `at` on that the second lacks.
    pub del: usize,
    /// Positions of the second sequence's symbols added here.
    pub ins: std::ops::Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Del,
    Ins,
}

/// The edits that turn `a` into `b`, grouped into hunks, if there are at most `max_d`
/// insertions and deletions; `None` otherwise.
pub fn hunks(a: &[u32], b: &[u32], max_d: usize) -> Option<Vec<Hunk>> {
    let ops = script(a, b, max_d)?;
    let mut out: Vec<Hunk> = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    let mut open: Option<Hunk> = None;
    for op in ops {
        match op {
            Op::Same => {
                out.extend(open.take());
                i += 1;
                j += 1;
            }
            Op::Del => {
                open.get_or_insert(Hunk {
                    at: i,
                    del: 0,
                    ins: j..j,
                })
                .del += 1;
                i += 1;
            }
            Op::Ins => {
                let h = open.get_or_insert(Hunk {
                    at: i,
                    del: 0,
                    ins: j..j,
                });
                h.ins.end = j + 1;
                j += 1;
            }
        }
    }
    out.extend(open);
    Some(out)
}

/// Pairs `(i, j)` of positions of `a` and `b` the hunks leave matched, in order.
pub fn matched(a_len: usize, b_len: usize, hunks: &[Hunk]) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(a_len.min(b_len));
    let (mut i, mut j) = (0usize, 0usize);
    for h in hunks {
        while i < h.at {
            out.push((i, j));
            i += 1;
            j += 1;
        }
        i += h.del;
        j = h.ins.end;
    }
    while i < a_len && j < b_len {
        out.push((i, j));
        i += 1;
        j += 1;
    }
    out
}

/// The edit operations, in order, or `None` beyond `max_d` edits.
fn script(a: &[u32], b: &[u32], max_d: usize) -> Option<Vec<Op>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = (max_d as isize).min(n + m);
    let off = max + 1;
    let mut v = vec![0isize; (2 * max + 3) as usize];
    // `trace[d]` holds v[-d..=d] as it was before step d.
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=max {
        trace.push(v[(off - d) as usize..=(off + d) as usize].to_vec());
        let mut k = -d;
        while k <= d {
            let down = k == -d || (k != d && v[(off + k - 1) as usize] < v[(off + k + 1) as usize]);
            let mut x = if down {
                v[(off + k + 1) as usize]
            } else {
                v[(off + k - 1) as usize] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[(off + k) as usize] = x;
            if x >= n && y >= m {
                return Some(backtrack(&trace, n, m, d));
            }
            k += 2;
        }
    }
    None
}

/// Walks the recorded frontiers back from `(n, m)` after `d` edits.
fn backtrack(trace: &[Vec<isize>], n: isize, m: isize, d: isize) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=d).rev() {
        let prev = &trace[d as usize];
        // `prev` covers diagonals -d..=d of the frontier after step d - 1.
        let at = |k: isize| prev[(k + d) as usize];
        let k = x - y;
        let down = k == -d || (k != d && at(k - 1) < at(k + 1));
        let pk = if down { k + 1 } else { k - 1 };
        let px = at(pk);
        let py = px - pk;
        let (sx, sy) = if down { (px, py + 1) } else { (px + 1, py) };
        while x > sx && y > sy {
            ops.push(Op::Same);
            x -= 1;
            y -= 1;
        }
        ops.push(if down { Op::Ins } else { Op::Del });
        x = px;
        y = py;
    }
    while x > 0 && y > 0 {
        ops.push(Op::Same);
        x -= 1;
        y -= 1;
    }
    ops.reverse();
    ops
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Applies hunks to `a`, taking inserted symbols from `b`.
    fn apply(a: &[u32], b: &[u32], hs: &[Hunk]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = 0;
        for h in hs {
            out.extend_from_slice(&a[i..h.at]);
            out.extend_from_slice(&b[h.ins.clone()]);
            i = h.at + h.del;
        }
        out.extend_from_slice(&a[i..]);
        out
    }

    fn edits(hs: &[Hunk]) -> usize {
        hs.iter().map(|h| h.del + h.ins.len()).sum()
    }

    #[test]
    fn an_insertion_a_deletion_and_a_replacement() {
        let a = [1, 2, 3, 4, 5];
        let b = [1, 2, 9, 3, 4, 5];
        assert_eq!(
            hunks(&a, &b, 4).unwrap(),
            vec![Hunk {
                at: 2,
                del: 0,
                ins: 2..3
            }]
        );
        let c = [1, 3, 4, 5];
        assert_eq!(
            hunks(&a, &c, 4).unwrap(),
            vec![Hunk {
                at: 1,
                del: 1,
                ins: 1..1
            }]
        );
        let e = [1, 2, 7, 4, 5];
        let h = hunks(&a, &e, 4).unwrap();
        assert_eq!((h.len(), edits(&h), h[0].at, h[0].del), (1, 2, 2, 1));
        assert_eq!(hunks(&a, &a, 0).unwrap(), vec![]);
        assert!(hunks(&a, &[9, 9, 9], 3).is_none());
        assert_eq!(hunks(&[], &[1, 2], 2).unwrap()[0].ins, 0..2);
        assert_eq!(
            matched(5, 6, &hunks(&a, &b, 4).unwrap()),
            vec![(0, 0), (1, 1), (2, 3), (3, 4), (4, 5)]
        );
    }

    /// Edit distance by dynamic programming (insertions and deletions only).
    fn distance(a: &[u32], b: &[u32]) -> usize {
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, &x) in a.iter().enumerate() {
            let mut next = vec![i + 1; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                next[j + 1] = if x == y {
                    row[j]
                } else {
                    1 + row[j + 1].min(next[j])
                };
            }
            row = next;
        }
        row[b.len()]
    }

    proptest! {
        #[test]
        fn scripts_are_shortest_and_correct(
            a in proptest::collection::vec(0u32..4, 0..40),
            b in proptest::collection::vec(0u32..4, 0..40),
        ) {
            let d = distance(&a, &b);
            let hs = hunks(&a, &b, 80).unwrap();
            prop_assert_eq!(edits(&hs), d);
            prop_assert_eq!(apply(&a, &b, &hs), b.clone());
            for (i, j) in matched(a.len(), b.len(), &hs) {
                prop_assert_eq!(a[i], b[j]);
            }
            if d > 0 {
                prop_assert!(hunks(&a, &b, d - 1).is_none());
            }
        }
    }
}
