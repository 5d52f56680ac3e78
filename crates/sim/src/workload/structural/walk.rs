//! Walking a structural form: the symbols of a rank in order, with their values' statistics. Exact
//! trees are flattened into a program of leaves and loop markers walked with a stack of loop
//! counters; an approximate loop replays its body once per iteration with the differences
//! of that iteration applied (symbols added before a body position, body symbols skipped),
//! so the symbol sequence is the recorded one and only values are means. Memory follows the
//! form's size, never the run's length.

use std::collections::VecDeque;
use std::sync::Arc;

use mpiscope_structure::approx::Part;
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
                        body: steps_of(&l.body),
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
