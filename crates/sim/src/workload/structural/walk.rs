//! Walking a structural form: the symbols of a rank in order, with their values' statistics. Exact
//! trees are flattened into a program of leaves and loop markers walked with a stack of loop
//! counters; an approximate loop replays its body once per iteration with the differences
//! of that iteration applied (symbols added before a body position, body symbols skipped),
//! so the symbol sequence is the recorded one and only values are means. Memory follows the
//! form's size, never the run's length.
//!
//! A body position kept iteration by iteration (a series) replays its own values; a leaf of
//! a folded body stands for several positions (each repetition of a nested loop), and
//! those of them not kept replay the mean of the leaf's other values, so that the kept
//! values are not counted twice (a slow position kept, its fast siblings given a mean that
//! includes it).

use std::collections::VecDeque;
use std::sync::Arc;

use mpiscope_structure::approx::{Part, Series};
use mpiscope_structure::{Node, Stats};

/// The tree flattened into a program: loops as `Loop` ... `End`, sequences inlined.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    /// Symbol and mean value.
    Leaf(u32, Stats),
    /// A loop of `count` iterations over the next `len` steps (then its `End`).
    Loop { count: u64, len: usize },
    /// End of the innermost loop.
    End,
}

pub(super) fn flatten(nodes: &[Node], out: &mut Vec<Step>) {
    for n in nodes {
        match n {
            Node::Leaf { sym, stats } => out.push(Step::Leaf(*sym, *stats)),
            Node::Seq { items } => flatten(items, out),
            Node::Loop { body, count } => {
                let at = out.len();
                out.push(Step::Loop {
                    count: *count,
                    len: 0,
                });
                flatten(body, out);
                let len = out.len() - at - 1;
                out[at] = Step::Loop { count: *count, len };
                out.push(Step::End);
            }
        }
    }
}

/// Walks a flattened tree: the leaves in order, loops repeated.
pub(super) struct Walk {
    steps: Arc<[Step]>,
    pc: usize,
    /// Per open loop: first step of its body and iterations left.
    stack: Vec<(usize, u64)>,
}

impl Iterator for Walk {
    type Item = (u32, Stats);

    fn next(&mut self) -> Option<(u32, Stats)> {
        loop {
            match *self.steps.get(self.pc)? {
                Step::Leaf(sym, v) => {
                    self.pc += 1;
                    return Some((sym, v));
                }
                Step::Loop { count, len } => {
                    if count == 0 {
                        self.pc += len + 2;
                    } else {
                        self.stack.push((self.pc + 1, count));
                        self.pc += 1;
                    }
                }
                Step::End => {
                    let top = self.stack.last_mut()?;
                    top.1 -= 1;
                    if top.1 > 0 {
                        self.pc = top.0;
                    } else {
                        self.stack.pop();
                        self.pc += 1;
                    }
                }
            }
        }
    }
}

impl Walk {
    /// A walk over `steps` from the start.
    pub(super) fn new(steps: Arc<[Step]>) -> Walk {
        Walk {
            steps,
            pc: 0,
            stack: Vec::new(),
        }
    }
}

/// A difference ready to apply: body position, body symbols skipped, added symbols with
/// their values, the iterations it occurs in (sorted).
type Diff = (u64, u64, Vec<(u32, Stats)>, Vec<u64>);

/// An approximate loop ready to walk.
struct LoopProgram {
    body: Arc<[Step]>,
    count: u64,
    /// Per difference: body position, body symbols skipped, added symbols with their mean
    /// values, the iterations it occurs in (sorted).
    diffs: Vec<Diff>,
    /// Body positions with their values iteration by iteration, by position.
    series: Vec<(u64, Vec<f32>)>,
}

enum Program {
    Exact(Arc<[Step]>),
    Loop(LoopProgram),
}

/// Where the walk is in an approximate loop.
struct LoopCursor {
    program: usize,
    iteration: u64,
    walk: Walk,
    /// Body position of the next body symbol.
    pos: u64,
    /// Differences of this iteration, by position, and the next one to apply.
    active: Vec<usize>,
    next: usize,
    /// Body symbols still to skip.
    skip: u64,
}

enum Cursor {
    Exact(Walk),
    Loop(LoopCursor),
}

/// The symbols of a rank's parts, in order.
pub(super) struct PartsWalk {
    programs: Vec<Program>,
    next: usize,
    cursor: Option<Cursor>,
    pending: VecDeque<(u32, Stats)>,
}

fn steps_of(nodes: &[Node]) -> Arc<[Step]> {
    let mut steps = Vec::new();
    flatten(nodes, &mut steps);
    steps.into()
}

/// Per step, the symbols it stands for: 1 for a leaf, all iterations for a loop, one
/// iteration for an `End` (saturating: a damaged form may say 10^18 iterations).
fn expanded_sizes(steps: &[Step]) -> Vec<u64> {
    let mut out = vec![0u64; steps.len()];
    // Per open loop: its step and the symbols of one iteration so far.
    let mut open: Vec<(usize, u64)> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let add = match *s {
            Step::Leaf(..) => {
                out[i] = 1;
                1
            }
            Step::Loop { .. } => {
                open.push((i, 0));
                continue;
            }
            Step::End => {
                let Some((j, once)) = open.pop() else {
                    continue;
                };
                let count = match steps[j] {
                    Step::Loop { count, .. } => count,
                    _ => 0,
                };
                out[i] = once;
                out[j] = once.saturating_mul(count);
                out[j]
            }
        };
        if let Some(o) = open.last_mut() {
            o.1 = o.1.saturating_add(add);
        }
    }
    out
}

/// The leaf step at position `at` of the expansion of `steps` (`sizes` from
/// [`expanded_sizes`]), found without expanding the loops.
fn locate(steps: &[Step], sizes: &[u64], mut at: u64) -> Option<usize> {
    let (mut i, mut end) = (0, steps.len());
    while i < end {
        match *steps.get(i)? {
            Step::Leaf(..) => {
                if at == 0 {
                    return Some(i);
                }
                at -= 1;
                i += 1;
            }
            Step::Loop { len, .. } => {
                let all = sizes[i];
                if at < all {
                    // One iteration's length, kept at the loop's `End`.
                    let once = *sizes.get(i + len + 1)?;
                    at %= once.max(1);
                    end = i + len + 1;
                    i += 1;
                } else {
                    at -= all;
                    i += len + 2;
                }
            }
            Step::End => i += 1,
        }
    }
    None
}

/// `body` with each leaf that holds kept positions (`series`) given the statistics of its
/// other values: the positions not kept replay their own mean, not one raised (or lowered)
/// by the kept ones.
fn without_kept(body: &[Step], series: &[Series]) -> Arc<[Step]> {
    let sizes = expanded_sizes(body);
    // Per step: kept values and their sum.
    let mut kept = vec![(0u64, 0.0f64); body.len()];
    for s in series {
        let Some(i) = locate(body, &sizes, s.at) else {
            continue;
        };
        for &v in s.values.iter().filter(|&&v| v >= 0.0) {
            kept[i].0 += 1;
            kept[i].1 += f64::from(v);
        }
    }
    let mut out = body.to_vec();
    for (step, &(n, sum)) in out.iter_mut().zip(&kept) {
        if let Step::Leaf(_, st) = step {
            // Every value kept: the mean is never used but where an iteration lacks one.
            if n > 0 && st.n > n {
                st.n -= n;
                st.sum = (st.sum - sum).max(0.0);
            }
        }
    }
    out.into()
}

impl PartsWalk {
    /// A walk over `parts`.
    pub(super) fn new(parts: &[Part]) -> PartsWalk {
        let programs = parts
            .iter()
            .map(|p| match p {
                Part::Exact { nodes } => Program::Exact(steps_of(nodes)),
                Part::Loop(l) => {
                    let mut diffs: Vec<_> = l
                        .differences
                        .iter()
                        .map(|d| {
                            let added = d
                                .added
                                .iter()
                                .enumerate()
                                .map(|(i, &s)| {
                                    (s, d.stats.get(i).copied().unwrap_or(Stats::one(0.0)))
                                })
                                .collect();
                            (d.at, d.missing, added, d.iterations.clone())
                        })
                        .collect();
                    diffs.sort_by_key(|d| d.0);
                    let mut series: Vec<_> =
                        l.series.iter().map(|x| (x.at, x.values.clone())).collect();
                    series.sort_by_key(|x| x.0);
                    Program::Loop(LoopProgram {
                        body: without_kept(&steps_of(&l.body), &l.series),
                        count: l.count,
                        diffs,
                        series,
                    })
                }
            })
            .collect();
        PartsWalk {
            programs,
            next: 0,
            cursor: None,
            pending: VecDeque::new(),
        }
    }

    /// The cursor at iteration `iteration` of loop program `program`.
    fn iteration(&self, program: usize, iteration: u64) -> Option<Cursor> {
        let Program::Loop(l) = &self.programs[program] else {
            return None;
        };
        // An iteration with nothing in it: the loop is over (a damaged form may say
        // 10^18 of them).
        if iteration >= l.count || (l.body.is_empty() && l.diffs.is_empty()) {
            return None;
        }
        let active = (0..l.diffs.len())
            .filter(|&i| l.diffs[i].3.binary_search(&iteration).is_ok())
            .collect();
        Some(Cursor::Loop(LoopCursor {
            program,
            iteration,
            walk: Walk::new(l.body.clone()),
            pos: 0,
            active,
            next: 0,
            skip: 0,
        }))
    }

    /// The next symbol of an approximate loop, or `None` when the loop has ended (the
    /// cursor is then cleared).
    fn loop_next(&mut self) -> Option<(u32, Stats)> {
        loop {
            let Some(Cursor::Loop(c)) = &mut self.cursor else {
                return None;
            };
            let Program::Loop(l) = &self.programs[c.program] else {
                return None;
            };
            while let Some(&d) = c.active.get(c.next) {
                if l.diffs[d].0 > c.pos {
                    break;
                }
                self.pending.extend(l.diffs[d].2.iter().copied());
                c.skip += l.diffs[d].1;
                c.next += 1;
            }
            if let Some(x) = self.pending.pop_front() {
                return Some(x);
            }
            match c.walk.next() {
                Some(mut x) => {
                    let at = c.pos;
                    c.pos += 1;
                    if c.skip > 0 {
                        c.skip -= 1;
                        continue;
                    }
                    // The value this iteration had here, when kept.
                    if let Ok(k) = l.series.binary_search_by_key(&at, |s| s.0) {
                        match l.series[k].1.get(c.iteration as usize) {
                            Some(&v) if v >= 0.0 => x.1 = Stats::one(f64::from(v)),
                            _ => {}
                        }
                    }
                    return Some(x);
                }
                None => {
                    // Differences placed at or after the body's end come last.
                    for &d in &c.active[c.next..] {
                        self.pending.extend(l.diffs[d].2.iter().copied());
                    }
                    let (program, it) = (c.program, c.iteration + 1);
                    self.cursor = self.iteration(program, it);
                    if let Some(x) = self.pending.pop_front() {
                        return Some(x);
                    }
                    self.cursor.as_ref()?;
                }
            }
        }
    }
}

impl Iterator for PartsWalk {
    type Item = (u32, Stats);

    fn next(&mut self) -> Option<(u32, Stats)> {
        loop {
            if let Some(x) = self.pending.pop_front() {
                return Some(x);
            }
            match &mut self.cursor {
                None => {
                    let p = self.next;
                    self.next += 1;
                    self.cursor = match self.programs.get(p)? {
                        Program::Exact(steps) => Some(Cursor::Exact(Walk::new(steps.clone()))),
                        Program::Loop(_) => self.iteration(p, 0),
                    };
                }
                Some(Cursor::Exact(w)) => match w.next() {
                    Some(x) => return Some(x),
                    None => self.cursor = None,
                },
                Some(Cursor::Loop(_)) => {
                    if let Some(x) = self.loop_next() {
                        return Some(x);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiscope_structure::approx::{self, Options};

    /// Sums of the values per symbol.
    fn totals(it: impl Iterator<Item = (u32, f64)>) -> Vec<f64> {
        let mut out = vec![0.0; 8];
        for (s, v) in it {
            out[s as usize] += v;
        }
        out
    }

    #[test]
    fn kept_positions_of_a_nested_loop_are_not_counted_twice() {
        // 30 iterations of: call 0, then a nested loop of six (computation 1, call 2) whose
        // even repetitions compute ~1000 (varying with the iteration) and odd ones 10; every
        // 5th iteration adds a computation 3. Only 2 positions are kept iteration by
        // iteration: the third slow one and the fast ones share leaf 1 with them.
        let mut seq = vec![(4, 7.0)];
        for r in 0..30 {
            seq.push((0, 1.0));
            for j in 0..6 {
                let v = if j % 2 == 0 {
                    1000.0 + f64::from(7 * r % 11 + j)
                } else {
                    10.0
                };
                seq.extend([(1, v), (2, 1.0)]);
            }
            if r % 5 == 0 {
                seq.push((3, 50.0));
            }
        }
        let o = Options {
            series: 2,
            ..Default::default()
        };
        let parts = approx::approximate_with_series(&seq, &|s| s != 1, &|s| s == 1, &o);
        let Some(Part::Loop(l)) = parts.iter().find(|p| matches!(p, Part::Loop(_))) else {
            panic!("no approximate loop in {parts:?}");
        };
        assert_eq!(l.series.len(), 2, "{l:?}");
        assert!(
            l.body.iter().any(|n| matches!(n, Node::Loop { .. })),
            "the body has no nested loop: {:?}",
            l.body
        );
        let walked: Vec<(u32, f64)> = PartsWalk::new(&parts).map(|x| (x.0, x.1.mean())).collect();
        let syms = |v: &[(u32, f64)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(syms(&walked), syms(&seq));
        let (got, want) = (totals(walked.into_iter()), totals(seq.into_iter()));
        for s in 0..8 {
            // Kept values have three significant digits.
            let tol = 1e-3 * want[s] + 1e-9;
            assert!(
                (got[s] - want[s]).abs() <= tol,
                "symbol {s}: walked {} recorded {}",
                got[s],
                want[s]
            );
        }
    }

    proptest::proptest! {
        /// `locate` finds the leaf that the walk gives at each position, loops unexpanded.
        #[test]
        fn locate_finds_the_walked_leaf(
            shape in proptest::collection::vec((0u8..4, 0u64..4), 1..12),
        ) {
            // Build a tree from the shape: 0 a leaf, 1 open a loop of `count`, 2 close, 3 a
            // leaf; each leaf's value is its number, so a walked value names its step.
            let mut stack: Vec<(Vec<Node>, u64)> = vec![(Vec::new(), 1)];
            let mut leaves = 0u32;
            for &(op, count) in &shape {
                match op {
                    1 => stack.push((Vec::new(), count)),
                    2 if stack.len() > 1 => {
                        let (body, count) = stack.pop().unwrap();
                        stack.last_mut().unwrap().0.push(Node::Loop { body, count });
                    }
                    _ => {
                        let stats = Stats::one(f64::from(leaves));
                        stack.last_mut().unwrap().0.push(Node::Leaf { sym: leaves, stats });
                        leaves += 1;
                    }
                }
            }
            while stack.len() > 1 {
                let (body, count) = stack.pop().unwrap();
                stack.last_mut().unwrap().0.push(Node::Loop { body, count });
            }
            let steps = steps_of(&stack[0].0);
            let sizes = expanded_sizes(&steps);
            let mut n = 0u64;
            for (at, (sym, _)) in Walk::new(steps.clone()).enumerate() {
                let i = locate(&steps, &sizes, at as u64);
                proptest::prop_assert!(
                    matches!(i.map(|i| &steps[i]), Some(Step::Leaf(s, _)) if *s == sym),
                    "position {}: {:?} in {:?}", at, i, steps
                );
                n += 1;
            }
            proptest::prop_assert_eq!(locate(&steps, &sizes, n), None);
        }
    }
}
