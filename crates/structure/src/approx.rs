//! Approximate loops for real codes: iterations that differ slightly are folded into one
//! loop, and the differences are stated.
//!
//! Exact folding ([`crate::fold`]) finds a loop only where iterations repeat symbol for
//! symbol. A production code's time step rarely does: every tenth step computes energies,
//! every fortieth searches neighbours, and a data-dependent exchange runs 5 or 6 times.
//! This module cuts the sequence at the occurrences of an *anchor* symbol, so that each cut
//! is one iteration; takes the most common iteration as the loop's body; and describes every
//! other iteration by its shortest edit script against the body ([`crate::diff`]), as long
//! as that script is at most `tolerance` times the body's length. The anchor chosen is the
//! one whose loop covers the most symbols with the fewest edits. What comes before and after
//! the loop is searched the same way (a code may have an equilibration loop, then a
//! production loop), down to `depth` levels, then folded exactly. The body is folded exactly,
//! so the periods inside an iteration (a loop of nine plain steps between energy steps)
//! appear as nested loops.
//!
//! Every value of the sequence lands somewhere: on the body position it was matched with, or
//! on the difference that added it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::diff::{self, Hunk};
use crate::fold::{self, Folder};
use crate::node::{Node, Stats};

/// How approximate the loops may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Most edits (symbols added or missing) an iteration may differ from the loop's body
    /// by, as a fraction of the body's length; at most 0.5.
    pub tolerance: f64,
    /// Fewest iterations of a loop.
    pub min_iterations: usize,
    /// Most anchor symbols tried per sequence.
    pub candidates: usize,
    /// How many times what comes before and after a loop is searched again.
    pub depth: u32,
    /// Most body positions per loop whose values are kept iteration by iteration
    /// ([`Approx::series`]; 0: none): those whose values vary most.
    pub series: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tolerance: 0.25,
            min_iterations: 4,
            candidates: 24,
            depth: 4,
            series: 0,
        }
    }
}

/// Most values kept in the series of one loop (bounds the size of a saved form whatever
/// the iteration count).
const MAX_SERIES_VALUES: usize = 1 << 16;

/// Most edits looked for between an iteration and the body (bounds time and memory).
const MAX_EDITS: usize = 512;

/// A stretch of the sequence: folded exactly, or an approximate loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    /// Items folded exactly.
    Exact {
        /// The items.
        nodes: Vec<Node>,
    },
    /// A loop whose iterations may differ slightly.
    Loop(Approx),
}

/// A loop whose iterations differ slightly from its body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approx {
    /// The symbol every iteration starts with.
    pub anchor: u32,
    /// Iterations.
    pub count: u64,
    /// Iterations equal to the body (summed over merged sequences).
    pub exact: u64,
    /// Sequences merged into this one (ranks of a class).
    pub merged: u64,
    /// The most common iteration, folded exactly; each leaf's statistics cover the values
    /// matched with its positions in every iteration.
    pub body: Vec<Node>,
    /// Symbols of one body iteration.
    pub body_len: u64,
    /// How the other iterations differ, by position in the body.
    pub differences: Vec<Difference>,
    /// Values of some body positions iteration by iteration (see [`Options::series`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
}

/// The values of one body position, iteration by iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Position in the body's expansion.
    pub at: u64,
    /// Per iteration its value, or -1 where the iteration lacks the position.
    pub values: Vec<f32>,
}

/// Symbols that some iterations add or lack at one place of the body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Position in the body's expansion (0-based) where the difference is.
    pub at: u64,
    /// Body symbols from `at` on that these iterations lack.
    pub missing: u64,
    /// Symbols these iterations have instead, in order.
    pub added: Vec<u32>,
    /// Values of the added symbols, one statistics per symbol.
    pub stats: Vec<Stats>,
    /// The iterations (0-based, the union over merged sequences).
    pub iterations: Vec<u64>,
    /// Occurrences (iterations summed over merged sequences).
    pub occurrences: u64,
}

impl Difference {
    /// Sum of the added values.
    pub fn total(&self) -> f64 {
        self.stats.iter().map(|s| s.sum).sum()
    }

    /// `(first, step)` when the iterations are every `step`-th from `first` (at least three
    /// of them, `step` at least 2).
    pub fn period(&self) -> Option<(u64, u64)> {
        let it = &self.iterations;
        if it.len() < 3 {
            return None;
        }
        let step = it[1] - it[0];
        (step >= 2 && it.windows(2).all(|w| w[1] - w[0] == step)).then_some((it[0], step))
    }
}

impl Part {
    /// The shape without values: equal shapes can be merged.
    pub fn shape(&self) -> String {
        match self {
            Part::Exact { nodes } => nodes.iter().map(Node::shape).collect::<Vec<_>>().join(" "),
            Part::Loop(l) => {
                let body: Vec<String> = l.body.iter().map(Node::shape).collect();
                format!("~{}[{}]{{{}}}", l.anchor, l.count, body.join(" "))
            }
        }
    }

    /// Adds the values of `o`, a part of the same shape.
    pub fn merge(&mut self, o: &Part) {
        match (self, o) {
            (Part::Exact { nodes: a }, Part::Exact { nodes: b }) => {
                a.iter_mut().zip(b).for_each(|(x, y)| x.merge(y));
            }
            (Part::Loop(a), Part::Loop(b)) => a.merge(b),
            _ => debug_assert!(false, "merging parts of different shapes"),
        }
    }

    /// Sum of every value in the part.
    pub fn total(&self) -> f64 {
        match self {
            Part::Exact { nodes } => nodes.iter().map(Node::total).sum(),
            Part::Loop(l) => l.total(),
        }
    }

    /// Symbols the part stands for.
    pub fn expanded_len(&self) -> u64 {
        match self {
            Part::Exact { nodes } => nodes.iter().map(Node::expanded_len).sum(),
            Part::Loop(l) => {
                let added: u64 = l
                    .differences
                    .iter()
                    .map(|d| d.occurrences * d.added.len() as u64)
                    .sum();
                let missing: u64 = l
                    .differences
                    .iter()
                    .map(|d| d.occurrences * d.missing)
                    .sum();
                (l.count * l.merged.max(1) * l.body_len + added).saturating_sub(missing)
                    / l.merged.max(1)
            }
        }
    }
}

impl Approx {
    /// Sum of every value of every iteration.
    pub fn total(&self) -> f64 {
        self.body.iter().map(Node::total).sum::<f64>()
            + self.differences.iter().map(Difference::total).sum::<f64>()
    }

    fn merge(&mut self, o: &Approx) {
        self.body
            .iter_mut()
            .zip(&o.body)
            .for_each(|(x, y)| x.merge(y));
        self.exact += o.exact;
        self.merged += o.merged;
        for d in &o.differences {
            match self
                .differences
                .iter_mut()
                .find(|x| x.at == d.at && x.missing == d.missing && x.added == d.added)
            {
                Some(x) => {
                    x.stats
                        .iter_mut()
                        .zip(&d.stats)
                        .for_each(|(s, t)| s.merge(t));
                    x.occurrences += d.occurrences;
                    x.iterations.extend_from_slice(&d.iterations);
                    x.iterations.sort_unstable();
                    x.iterations.dedup();
                }
                None => self.differences.push(d.clone()),
            }
        }
        self.differences.sort_by(order);
    }
}

/// Differences in the order they are kept: by place, the most frequent first, then by content
/// (a total order, so that the output never depends on a hash map's order).
fn order(a: &Difference, b: &Difference) -> std::cmp::Ordering {
    (a.at, std::cmp::Reverse(a.occurrences), a.missing, &a.added).cmp(&(
        b.at,
        std::cmp::Reverse(b.occurrences),
        b.missing,
        &b.added,
    ))
}

/// The parts of `seq` (symbols with values); `anchor_ok` says which symbols may start an
/// iteration (say, calls rather than the computations between them).
pub fn approximate(seq: &[(u32, f64)], anchor_ok: &dyn Fn(u32) -> bool, o: &Options) -> Vec<Part> {
    approximate_with_series(seq, anchor_ok, &|_| false, o)
}

/// As [`approximate`], keeping the values of up to [`Options::series`] body positions per
/// loop iteration by iteration, among the symbols `series_ok` accepts.
pub fn approximate_with_series(
    seq: &[(u32, f64)],
    anchor_ok: &dyn Fn(u32) -> bool,
    series_ok: &dyn Fn(u32) -> bool,
    o: &Options,
) -> Vec<Part> {
    let syms: Vec<u32> = seq.iter().map(|x| x.0).collect();
    let mut o = *o;
    o.tolerance = o.tolerance.clamp(0.0, 0.5);
    o.min_iterations = o.min_iterations.max(2);
    let mut out = Vec::new();
    let preds = Preds {
        anchor: anchor_ok,
        series: series_ok,
    };
    split(seq, &syms, &preds, &o, o.depth, &mut out);
    out
}

/// What the caller says of symbols.
struct Preds<'a> {
    anchor: &'a dyn Fn(u32) -> bool,
    series: &'a dyn Fn(u32) -> bool,
}

fn split(
    seq: &[(u32, f64)],
    syms: &[u32],
    ok: &Preds,
    o: &Options,
    depth: u32,
    out: &mut Vec<Part>,
) {
    if seq.is_empty() {
        return;
    }
    let best = if depth > 0 && o.tolerance > 0.0 {
        best_loop(syms, ok.anchor, o)
    } else {
        None
    };
    match best {
        None => out.push(Part::Exact {
            nodes: fold::fold(seq.iter().copied()),
        }),
        Some(c) => {
            let (start, end) = (c.iters[0].0, c.iters[c.iters.len() - 1].1);
            split(&seq[..start], &syms[..start], ok, o, depth - 1, out);
            out.push(Part::Loop(c.build(seq, syms, ok.series, o.series)));
            split(&seq[end..], &syms[end..], ok, o, depth - 1, out);
        }
    }
}

/// A loop found at one anchor.
struct Candidate {
    anchor: u32,
    /// Each iteration's range in the sequence and its edits against the body.
    iters: Vec<(usize, usize, usize)>,
    /// Edit scripts of the variants (indexed by the third field of `iters`).
    scripts: Vec<Vec<Hunk>>,
    /// The body's range in the sequence.
    body: (usize, usize),
    /// Symbols covered less edits less the body's length.
    score: i64,
}

fn best_loop(syms: &[u32], ok: &dyn Fn(u32) -> bool, o: &Options) -> Option<Candidate> {
    let mut counts: HashMap<u32, (usize, usize)> = HashMap::new();
    for (i, &s) in syms.iter().enumerate() {
        counts.entry(s).or_insert((0, i)).0 += 1;
    }
    let mut cands: Vec<(u32, usize, usize)> = counts
        .into_iter()
        .filter(|&(s, (n, _))| n >= o.min_iterations && ok(s))
        .map(|(s, (n, first))| (s, n, first))
        .collect();
    cands.sort_by_key(|&(_, n, first)| (std::cmp::Reverse(n), first));
    // Symbols with the same count likely mark the same loop: two of each are enough.
    let mut per_count: HashMap<usize, u32> = HashMap::new();
    cands.retain(|&(_, n, _)| {
        let seen = per_count.entry(n).or_insert(0);
        *seen += 1;
        *seen <= 2
    });
    cands.truncate(o.candidates);
    cands
        .into_iter()
        .filter_map(|(a, _, _)| evaluate(syms, a, o))
        .filter(|c| c.score > 0)
        .max_by_key(|c| (c.score, std::cmp::Reverse(c.iters.len())))
}

/// The best loop whose iterations start with `a`.
fn evaluate(syms: &[u32], a: u32, o: &Options) -> Option<Candidate> {
    let pos: Vec<usize> = (0..syms.len()).filter(|&i| syms[i] == a).collect();
    let mut variants: HashMap<&[u32], usize> = HashMap::new();
    let mut first: Vec<(usize, usize)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    let mut segs: Vec<(usize, usize, usize)> = Vec::with_capacity(pos.len());
    for w in pos.windows(2) {
        let v = *variants.entry(&syms[w[0]..w[1]]).or_insert_with(|| {
            first.push((w[0], w[1]));
            seen.push(0);
            first.len() - 1
        });
        seen[v] += 1;
        segs.push((w[0], w[1], v));
    }
    // Iterations nearly all different are no loop (and would cost a diff each).
    if first.len() > 256.max(segs.len() / 2) {
        return None;
    }
    let dom = (0..seen.len()).max_by_key(|&v| (seen[v], std::cmp::Reverse(v)))?;
    let body = &syms[first[dom].0..first[dom].1];
    let len = body.len();
    let max_d = ((o.tolerance * len as f64) as usize).clamp(1, MAX_EDITS);
    let mut scripts: Vec<Option<Vec<Hunk>>> = first
        .iter()
        .map(|&(s, e)| diff::hunks(body, &syms[s..e], max_d))
        .collect();
    if let Some((end, h)) = last_iteration(syms, pos[pos.len() - 1], body, max_d) {
        scripts.push(Some(h));
        segs.push((pos[pos.len() - 1], end, scripts.len() - 1));
    }
    // The run of consecutive iterations within tolerance that gains most.
    let gain = |&(s, e, v): &(usize, usize, usize)| -> Option<i64> {
        let h = scripts[v].as_ref()?;
        let edits: usize = h.iter().map(|h| h.del + h.ins.len()).sum();
        Some((e - s) as i64 - edits as i64)
    };
    let (mut best, mut best_run) = (i64::MIN, 0..0);
    let (mut sum, mut from) = (0i64, 0usize);
    for (i, seg) in segs.iter().enumerate() {
        match gain(seg) {
            Some(g) => {
                sum += g;
                if sum > best && i + 1 - from >= o.min_iterations {
                    best = sum;
                    best_run = from..i + 1;
                }
            }
            None => {
                sum = 0;
                from = i + 1;
            }
        }
    }
    if best_run.is_empty() {
        return None;
    }
    Some(Candidate {
        anchor: a,
        iters: segs[best_run].to_vec(),
        scripts: scripts.into_iter().map(Option::unwrap_or_default).collect(),
        body: first[dom],
        score: best - len as i64,
    })
}

/// Where the iteration starting at `last` (after which the anchor does not come again) ends,
/// and its edits: the end closest to the body's length whose edits are fewest, among the ends
/// after a symbol equal to the body's last; else where it stops following the body.
fn last_iteration(
    syms: &[u32],
    last: usize,
    body: &[u32],
    max_d: usize,
) -> Option<(usize, Vec<Hunk>)> {
    let len = body.len();
    let tail = body[len - 1];
    let mut ends: Vec<usize> = (last + len.saturating_sub(max_d).max(1)
        ..=(last + len + max_d).min(syms.len()))
        .filter(|&e| syms[e - 1] == tail)
        .collect();
    ends.sort_by_key(|&e| e.abs_diff(last + len));
    let best = ends
        .into_iter()
        .take(16)
        .filter_map(|e| Some((e, diff::hunks(body, &syms[last..e], max_d)?)))
        .min_by_key(|(e, h)| {
            (
                h.iter().map(|h| h.del + h.ins.len()).sum::<usize>(),
                e.abs_diff(last + len),
            )
        });
    if best.is_some() {
        return best;
    }
    let lcp = syms[last..]
        .iter()
        .zip(body)
        .take_while(|(x, y)| x == y)
        .count();
    (len - lcp <= max_d).then(|| {
        let h = (lcp < len).then_some(Hunk {
            at: lcp,
            del: len - lcp,
            ins: lcp..lcp,
        });
        (last + lcp, h.into_iter().collect())
    })
}

/// `v` to three significant digits (a series is for the shape of the variation; the
/// statistics keep the exact sums).
fn three_digits(v: f64) -> f32 {
    if v <= 0.0 || !v.is_finite() {
        return v.max(0.0) as f32;
    }
    let scale = 10f64.powi(v.log10().floor() as i32 - 2);
    ((v / scale).round() * scale) as f32
}

impl Candidate {
    fn build(
        self,
        seq: &[(u32, f64)],
        syms: &[u32],
        series_ok: &dyn Fn(u32) -> bool,
        series: usize,
    ) -> Approx {
        let body = &syms[self.body.0..self.body.1];
        let mut stats: Vec<Option<Stats>> = vec![None; body.len()];
        let mut diffs: HashMap<(usize, usize, &[u32]), Difference> = HashMap::new();
        let mut exact = 0;
        for (it, &(s, e, v)) in self.iters.iter().enumerate() {
            let hunks = &self.scripts[v];
            exact += u64::from(hunks.is_empty());
            for (i, j) in diff::matched(body.len(), e - s, hunks) {
                let x = Stats::one(seq[s + j].1);
                match &mut stats[i] {
                    Some(st) => st.merge(&x),
                    None => stats[i] = Some(x),
                }
            }
            for h in hunks {
                let added = &syms[s + h.ins.start..s + h.ins.end];
                let d = diffs
                    .entry((h.at, h.del, added))
                    .or_insert_with(|| Difference {
                        at: h.at as u64,
                        missing: h.del as u64,
                        added: added.to_vec(),
                        stats: Vec::new(),
                        iterations: Vec::new(),
                        occurrences: 0,
                    });
                let values = seq[s + h.ins.start..s + h.ins.end].iter();
                if d.stats.is_empty() {
                    d.stats = values.map(|x| Stats::one(x.1)).collect();
                } else {
                    d.stats
                        .iter_mut()
                        .zip(values)
                        .for_each(|(st, x)| st.merge(&Stats::one(x.1)));
                }
                d.iterations.push(it as u64);
                d.occurrences += 1;
            }
        }
        let mut folder = Folder::new();
        for (i, &sym) in body.iter().enumerate() {
            let st = stats[i].unwrap_or(Stats {
                n: 0,
                sum: 0.0,
                min: 0.0,
                max: 0.0,
                sq: 0.0,
            });
            folder.push_stats(sym, st);
        }
        let mut differences: Vec<Difference> = diffs.into_values().collect();
        differences.sort_by(order);
        let series = series.min(MAX_SERIES_VALUES / self.iters.len().max(1));
        let series = self.series(seq, body, &stats, series_ok, series);
        Approx {
            anchor: self.anchor,
            count: self.iters.len() as u64,
            exact,
            merged: 1,
            body: folder.finish(),
            body_len: body.len() as u64,
            differences,
            series,
        }
    }

    /// The values, iteration by iteration, of the `most` body positions whose values vary
    /// most (sum of squared deviations), among those `ok` accepts.
    fn series(
        &self,
        seq: &[(u32, f64)],
        body: &[u32],
        stats: &[Option<Stats>],
        ok: &dyn Fn(u32) -> bool,
        most: usize,
    ) -> Vec<Series> {
        let mut spread: Vec<(f64, usize)> = stats
            .iter()
            .enumerate()
            .filter(|&(i, _)| ok(body[i]))
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                let dev = s.sq - s.sum * s.sum / s.n.max(1) as f64;
                (dev > 0.0).then_some((dev, i))
            })
            .collect();
        spread.sort_by(|a, b| b.0.total_cmp(&a.0));
        spread.truncate(most);
        let mut slot: Vec<Option<usize>> = vec![None; body.len()];
        for (k, &(_, i)) in spread.iter().enumerate() {
            slot[i] = Some(k);
        }
        let mut out: Vec<Series> = spread
            .iter()
            .map(|&(_, i)| Series {
                at: i as u64,
                values: vec![-1.0; self.iters.len()],
            })
            .collect();
        for (it, &(s, e, v)) in self.iters.iter().enumerate() {
            for (i, j) in diff::matched(body.len(), e - s, &self.scripts[v]) {
                if let Some(k) = slot[i] {
                    out[k].values[it] = three_digits(seq[s + j].1);
                }
            }
        }
        out.sort_by_key(|x| x.at);
        out
    }
}

#[cfg(test)]
mod tests;
