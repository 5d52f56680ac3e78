//! The structure tree and the statistics its leaves carry.

use serde::{Deserialize, Serialize};

/// Statistics of the values that fell on one leaf position (over all iterations). Equal
/// when their count, sum, minimum and maximum are: the sum of squares is scratch for the
/// spread while a structure is built, never written out.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Stats {
    /// Values.
    pub n: u64,
    /// Their sum.
    pub sum: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Sum of the squares, for the spread while a structure is built (not written out:
    /// 0 when read back).
    #[serde(skip)]
    pub sq: f64,
}

impl PartialEq for Stats {
    fn eq(&self, o: &Stats) -> bool {
        (self.n, self.sum, self.min, self.max) == (o.n, o.sum, o.min, o.max)
    }
}

impl Stats {
    /// One value.
    pub fn one(v: f64) -> Stats {
        Stats {
            n: 1,
            sum: v,
            min: v,
            max: v,
            sq: v * v,
        }
    }

    /// Adds `o`'s values.
    pub fn merge(&mut self, o: &Stats) {
        self.n += o.n;
        self.sum += o.sum;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.sq += o.sq;
    }

    /// Mean value.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum / self.n as f64
        }
    }
}

/// A node of the structure: a symbol, a sequence ([Grosclaude 2012]'s digram `A+B`), or a loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Node {
    /// One symbol; `stats` over every time it occurred at this position.
    Leaf {
        /// The symbol.
        sym: u32,
        /// Its values.
        stats: Stats,
    },
    /// Items one after the other.
    Seq {
        /// The items.
        items: Vec<Node>,
    },
    /// `body` repeated `count` times; the body's statistics cover all iterations.
    Loop {
        /// One iteration.
        body: Vec<Node>,
        /// Iterations.
        count: u64,
    },
}

impl Node {
    /// Adds the statistics of `o`, a node of the same shape, position by position.
    pub fn merge(&mut self, o: &Node) {
        match (self, o) {
            (Node::Leaf { stats, .. }, Node::Leaf { stats: s, .. }) => stats.merge(s),
            (Node::Seq { items: a }, Node::Seq { items: b })
            | (Node::Loop { body: a, .. }, Node::Loop { body: b, .. }) => {
                for (x, y) in a.iter_mut().zip(b) {
                    x.merge(y);
                }
            }
            // Shapes are equal by construction; a mismatch would be a bug upstream.
            _ => debug_assert!(false, "merging nodes of different shapes"),
        }
    }

    /// Sum of every value below.
    pub fn total(&self) -> f64 {
        match self {
            Node::Leaf { stats, .. } => stats.sum,
            Node::Seq { items } | Node::Loop { body: items, .. } => {
                items.iter().map(Node::total).sum()
            }
        }
    }

    /// Symbols this node stands for (the length of its expansion).
    pub fn expanded_len(&self) -> u64 {
        match self {
            Node::Leaf { .. } => 1,
            Node::Seq { items } => items.iter().map(Node::expanded_len).sum(),
            Node::Loop { body, count } => count * body.iter().map(Node::expanded_len).sum::<u64>(),
        }
    }

    /// Appends the symbols of the expansion to `out` (for checks; can be long).
    pub fn expand_into(&self, out: &mut Vec<u32>) {
        match self {
            Node::Leaf { sym, .. } => out.push(*sym),
            Node::Seq { items } => items.iter().for_each(|i| i.expand_into(out)),
            Node::Loop { body, count } => {
                for _ in 0..*count {
                    body.iter().for_each(|i| i.expand_into(out));
                }
            }
        }
    }

    /// The shape without values, as text (`3`, `(1 2)[4]`): equal shapes, equal strings.
    pub fn shape(&self) -> String {
        let mut s = String::new();
        self.write_shape(&mut s);
        s
    }

    fn write_shape(&self, s: &mut String) {
        match self {
            Node::Leaf { sym, .. } => s.push_str(&sym.to_string()),
            Node::Seq { items } => {
                s.push('(');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        s.push('+');
                    }
                    x.write_shape(s);
                }
                s.push(')');
            }
            Node::Loop { body, count } => {
                s.push('(');
                for (i, x) in body.iter().enumerate() {
                    if i > 0 {
                        s.push(' ');
                    }
                    x.write_shape(s);
                }
                s.push_str(&format!(")[{count}]"));
            }
        }
    }

    /// [Grosclaude 2012]'s notation (Figures 2-4): a leaf is `Name: mean`, a sequence `(a + b)`, a
    /// loop `(body)[n]`; `name` names a symbol, `value` formats a number.
    pub fn notation(&self, name: &dyn Fn(u32) -> String, value: &dyn Fn(f64) -> String) -> String {
        let mut s = String::new();
        self.write_notation(&mut s, name, value);
        s
    }

    fn write_notation(
        &self,
        s: &mut String,
        name: &dyn Fn(u32) -> String,
        value: &dyn Fn(f64) -> String,
    ) {
        let join = |s: &mut String, items: &[Node]| {
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(" + ");
                }
                x.write_notation(s, name, value);
            }
        };
        match self {
            Node::Leaf { sym, stats } => {
                s.push_str(&name(*sym));
                s.push_str(": ");
                s.push_str(&value(stats.mean()));
            }
            Node::Seq { items } => {
                s.push('(');
                join(s, items);
                s.push(')');
            }
            Node::Loop { body, count } => {
                match body.as_slice() {
                    [one @ Node::Seq { .. }] => one.write_notation(s, name, value),
                    [one @ Node::Loop { .. }] => {
                        s.push('(');
                        one.write_notation(s, name, value);
                        s.push(')');
                    }
                    _ => {
                        s.push('(');
                        join(s, body);
                        s.push(')');
                    }
                }
                s.push_str(&format!("[{count}]"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(sym: u32, v: f64) -> Node {
        Node::Leaf {
            sym,
            stats: Stats::one(v),
        }
    }

    #[test]
    fn notation_of_the_seeds_ep_example() {
        // (CPU2: 1308792.75 + Allreduce2: 128.75)[4]
        let mut cpu = leaf(0, 1308792.0);
        cpu.merge(&leaf(0, 1308793.5));
        cpu.merge(&leaf(0, 1308792.0));
        cpu.merge(&leaf(0, 1308793.5));
        let mut red = leaf(1, 128.0);
        for v in [129.0, 128.0, 130.0] {
            red.merge(&leaf(1, v));
        }
        let l = Node::Loop {
            body: vec![cpu, red],
            count: 4,
        };
        let names = |s: u32| ["CPU2", "Allreduce2"][s as usize].to_string();
        let text = l.notation(&names, &|v| format!("{v:.2}"));
        assert_eq!(text, "(CPU2: 1308792.75 + Allreduce2: 128.75)[4]");
        assert_eq!(l.total(), 4.0 * 1308792.75 + 515.0);
        assert_eq!(l.expanded_len(), 8);
        assert_eq!(l.shape(), "(0 1)[4]");
        let mut e = Vec::new();
        l.expand_into(&mut e);
        assert_eq!(e, [0, 1, 0, 1, 0, 1, 0, 1]);
        let seq = Node::Loop {
            body: vec![Node::Seq {
                items: vec![leaf(0, 1.0), leaf(1, 2.0)],
            }],
            count: 3,
        };
        assert_eq!(
            seq.notation(&names, &|v| format!("{v}")),
            "(CPU2: 1 + Allreduce2: 2)[3]"
        );
    }
}
