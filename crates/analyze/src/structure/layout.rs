//! The approximate structure as text a person reads: per class of ranks, its stretches in
//! order; items packed into lines of limited width, a loop too long for one line opened on
//! indented lines of its own; an approximate loop's differences listed under it with the
//! iterations they occur in (`every 10th iteration from 9`); long exact stretches (setup,
//! teardown) summarized unless `full`; the callsites of the loops listed apart.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use mpiscope_structure::approx::{Approx, Difference, Part};
use mpiscope_structure::Node;

use super::{rank_list, value, Approximate, Structure};

/// Widest line.
const WIDTH: usize = 110;
/// Lines an exact stretch may take before it is summarized.
const EXACT_LINES: usize = 8;
/// Differences listed per loop before the rest is summarized.
const DIFFERENCES: usize = 8;

struct Writer<'a> {
    out: Vec<String>,
    name: &'a dyn Fn(u32) -> String,
    /// Ranks merged in the class (totals are per rank).
    ranks: f64,
    full: bool,
    /// Callsites named in loops.
    sites: BTreeSet<u32>,
    site_of: &'a dyn Fn(u32) -> Option<u32>,
}

impl Writer<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        self.out.push(format!("{:indent$}{text}", ""));
    }

    fn inline(&self, n: &Node) -> String {
        n.notation(self.name, &value)
    }

    fn note_sites(&mut self, n: &Node) {
        let mut syms = Vec::new();
        collect(n, &mut syms);
        for s in syms {
            if let Some(c) = (self.site_of)(s) {
                self.sites.insert(c);
            }
        }
    }

    /// `nodes` packed into lines at `indent`; a node too long for a line opened.
    fn nodes(&mut self, nodes: &[Node], indent: usize, sites: bool) {
        let mut cur = String::new();
        for n in nodes {
            if sites {
                self.note_sites(n);
            }
            let text = self.inline(n);
            if indent + text.len() > WIDTH && !matches!(n, Node::Leaf { .. }) {
                if !cur.is_empty() {
                    self.line(indent, &std::mem::take(&mut cur));
                }
                self.open(n, indent, sites);
                continue;
            }
            if !cur.is_empty() && indent + cur.len() + 3 + text.len() > WIDTH {
                self.line(indent, &std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push_str(" + ");
            }
            cur.push_str(&text);
        }
        if !cur.is_empty() {
            self.line(indent, &cur);
        }
    }

    /// A loop or sequence on lines of its own.
    fn open(&mut self, n: &Node, indent: usize, sites: bool) {
        let total = value((n.total() / self.ranks).round());
        match n {
            Node::Loop { body, count } => {
                self.line(indent, &format!("[{count}] {{"));
                self.nodes(body, indent + 2, sites);
                self.line(indent, &format!("}}[{count}]: {total}"));
            }
            Node::Seq { items } => {
                self.line(indent, "{");
                self.nodes(items, indent + 2, sites);
                self.line(indent, &format!("}}: {total}"));
            }
            Node::Leaf { .. } => {
                let t = self.inline(n);
                self.line(indent, &t);
            }
        }
    }

    fn exact(&mut self, nodes: &[Node], indent: usize) {
        let start = self.out.len();
        self.nodes(nodes, indent, false);
        let lines = self.out.len() - start;
        if self.full || lines <= EXACT_LINES {
            return;
        }
        let tail: Vec<String> = self.out.split_off(self.out.len() - 2);
        let hidden = self.out.split_off(start + 3);
        let total: f64 = nodes.iter().map(Node::total).sum::<f64>() / self.ranks;
        let len: u64 = nodes.iter().map(Node::expanded_len).sum();
        self.line(
            indent,
            &format!(
                "… {} more lines ({len} symbols in this stretch, {} us; `--full` shows them)",
                hidden.len(),
                value(total.round())
            ),
        );
        self.out.extend(tail);
    }

    fn approx(&mut self, l: &Approx, share: f64, indent: usize) {
        let per_rank = l.merged.max(1) as f64;
        let total = l.total() / self.ranks;
        let differ: BTreeSet<u64> = l
            .differences
            .iter()
            .flat_map(|d| d.iterations.iter().copied())
            .collect();
        let on = if l.merged > 1 { " on some rank" } else { "" };
        self.line(
            indent,
            &format!(
                "loop [{}] from {}: {} us ({:.1}% of the time), {} us per iteration; {}",
                l.count,
                (self.name)(l.anchor),
                value(total.round()),
                share * 100.0,
                value((total / l.count.max(1) as f64 * 100.0).round() / 100.0),
                if l.differences.is_empty() {
                    "all alike".to_string()
                } else {
                    format!("{} of {} differ{on}", differ.len(), l.count)
                }
            ),
        );
        self.nodes(&l.body, indent + 4, true);
        if l.differences.is_empty() {
            return;
        }
        let mut body = Vec::new();
        for n in &l.body {
            n.expand_into(&mut body);
        }
        self.line(indent + 2, "differences from the iteration above:");
        let mut order: Vec<&Difference> = l.differences.iter().collect();
        order.sort_by_key(|d| std::cmp::Reverse(d.occurrences));
        let shown = if self.full { order.len() } else { DIFFERENCES };
        for d in order.iter().take(shown) {
            let text = self.difference(d, &body, per_rank);
            self.line(indent + 4, &text);
            for &s in &d.added {
                if let Some(c) = (self.site_of)(s) {
                    self.sites.insert(c);
                }
            }
        }
        if order.len() > shown {
            let rest: u64 = order[shown..].iter().map(|d| d.occurrences).sum();
            self.line(
                indent + 4,
                &format!(
                    "… {} more differences ({rest} occurrences{}; `--full` lists them)",
                    order.len() - shown,
                    if per_rank > 1.0 {
                        format!(" over {} ranks", value(per_rank))
                    } else {
                        String::new()
                    }
                ),
            );
        }
    }

    fn difference(&self, d: &Difference, body: &[u32], per_rank: f64) -> String {
        let at = d.at as usize;
        let mut what = Vec::new();
        if d.missing > 0 {
            let end = at.saturating_add(d.missing as usize).min(body.len());
            let gone: Vec<String> = body
                .get(at.min(end)..end)
                .unwrap_or_default()
                .iter()
                .map(|&s| (self.name)(s))
                .collect();
            what.push(format!("without {}", gone.join(" ")));
        }
        if !d.added.is_empty() {
            let added: Vec<String> = d
                .added
                .iter()
                .zip(&d.stats)
                .map(|(&s, st)| format!("{}: {}", (self.name)(s), value(st.mean())))
                .collect();
            let place = match body.get(at + d.missing as usize) {
                Some(&s) => format!("before {}", (self.name)(s)),
                None => "at the end".into(),
            };
            what.push(format!("+ {} {place}", added.join(" + ")));
        }
        let mut text = what.join(", ");
        // Per rank when every rank of the class has it alike, else over the ranks.
        let times = if d.occurrences as f64 == per_rank * d.iterations.len() as f64 {
            format!("{}", d.iterations.len())
        } else {
            format!("{} times over {} ranks", d.occurrences, value(per_rank))
        };
        let when = match d.period() {
            Some((first, step)) => format!("every {step}th iteration from {first} ({times})"),
            None if d.iterations.len() <= 6 => {
                let it: Vec<String> = d.iterations.iter().map(u64::to_string).collect();
                format!("iteration{} {}", plural(d.iterations.len()), it.join(", "))
            }
            None => {
                let it: Vec<String> = d.iterations[..4].iter().map(u64::to_string).collect();
                format!(
                    "{} iterations ({times}: {}, …)",
                    d.iterations.len(),
                    it.join(", ")
                )
            }
        };
        if text.chars().count() + when.len() + 3 > WIDTH {
            text = text
                .chars()
                .take(WIDTH.saturating_sub(when.len() + 6))
                .collect();
            text.push('…');
        }
        format!("{text}: {when}")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn collect(n: &Node, out: &mut Vec<u32>) {
    match n {
        Node::Leaf { sym, .. } => out.push(*sym),
        Node::Seq { items } | Node::Loop { body: items, .. } => {
            items.iter().for_each(|x| collect(x, out));
        }
    }
}

impl Structure {
    /// The approximate structure as text (see the module's documentation); `None` when it was
    /// not computed or found no approximate loop (the exact listing, [`Structure::to_text`],
    /// then says it all).
    pub fn to_approx_text(&self, full: bool) -> Option<String> {
        let a: &Approximate = self.approximate.as_ref()?;
        // Nothing folded approximately: the exact listing says it all.
        if a.classes
            .iter()
            .all(|c| c.parts.iter().all(|p| matches!(p, Part::Exact { .. })))
        {
            return None;
        }
        let name = self.namer();
        let site_of = |id: u32| {
            self.symbols
                .get(id as usize)
                .filter(|x| x.function.is_some())
                .map(|x| x.callsite)
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# {} ranks, {} symbols; loops whose iterations differ by up to {:.0}% folded \
             approximately\n# times in microseconds (mean per element), totals per rank after `:`",
            self.ranks,
            self.symbols_read,
            a.tolerance * 100.0
        );
        let mut w = Writer {
            out: Vec::new(),
            name: &name,
            ranks: 1.0,
            full,
            sites: BTreeSet::new(),
            site_of: &site_of,
        };
        for c in &a.classes {
            w.ranks = c.ranks.len() as f64;
            w.line(0, "");
            let outside = if c.outside_loops.len() < c.ranks.len() {
                let others: Vec<u32> = c
                    .ranks
                    .iter()
                    .copied()
                    .filter(|r| !c.outside_loops.contains(r))
                    .collect();
                format!(
                    "; outside the main loops ranks {} shown, ranks {} differ there",
                    rank_list(&c.outside_loops),
                    rank_list(&others)
                )
            } else {
                String::new()
            };
            w.line(
                0,
                &format!(
                    "ranks {} ({} rank{}{outside}):",
                    rank_list(&c.ranks),
                    c.ranks.len(),
                    plural(c.ranks.len())
                ),
            );
            let shown = c.outside_loops.len().max(1) as f64;
            let per_rank = |p: &Part| match p {
                Part::Loop(l) => p.total() / l.merged.max(1) as f64,
                Part::Exact { .. } => p.total() / shown,
            };
            let all: f64 = c
                .parts
                .iter()
                .map(per_rank)
                .sum::<f64>()
                .max(f64::MIN_POSITIVE);
            for p in &c.parts {
                match p {
                    Part::Exact { nodes } => {
                        w.ranks = shown;
                        w.exact(nodes, 2);
                    }
                    Part::Loop(l) => {
                        w.ranks = l.merged.max(1) as f64;
                        w.approx(l, per_rank(p) / all, 2);
                    }
                }
            }
        }
        for line in &w.out {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s, "\ncallsites in loops:");
        for c in self
            .callsites
            .iter()
            .filter(|c| full || w.sites.contains(&c.callsite))
        {
            let mut line = format!(
                "{:>4}  {} at {}",
                c.callsite,
                c.function,
                c.location.as_deref().unwrap_or("?")
            );
            if !full && line.chars().count() > WIDTH {
                line = line.chars().take(WIDTH - 1).collect::<String>() + "…";
            }
            let _ = writeln!(s, "{line}");
        }
        let others = self.callsites.len() - w.sites.len().min(self.callsites.len());
        if !full && others > 0 {
            let _ = writeln!(
                s,
                "      ({others} more callsites outside loops: `--full` lists them)"
            );
        }
        Some(s)
    }
}
