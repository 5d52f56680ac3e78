//! The program's loop structure, recovered from a trace ([Grosclaude 2012]): each rank's
//! communication calls and the compute bursts between them become symbols, compressed
//! losslessly into nested loops (`mpiscope_structure`), printed in [Grosclaude 2012]'s notation
//! (`(CPU2: 1308792.75 + Allreduce2: 128.75)[4]: 5235686`, times in microseconds), and
//! ranks with the same structure are grouped (SPMD classes, master/worker roles).
//!
//! Symbols: an MPI call of the point-to-point, collective, completion or probe groups is
//! `Name` + callsite number (callsites numbered across ranks in order of first use), its
//! value the call's duration; the time since the previous such call (computation and local
//! MPI calls such as `MPI_Comm_rank`) is `CPU` + the callsite of the call it precedes. With
//! [`Detail::High`] the peer, relative to the rank, and the message size class (power of
//! two) are part of a call's symbol.

use std::collections::HashMap;

use mpiscope_mpispec::Group;
pub use mpiscope_structure::approx::Options as ApproxOptions;
use mpiscope_structure::approx::{self, Part};
use mpiscope_structure::Node;
use mpiscope_trace::{RunDir, Slot};
use serde::Serialize;

use crate::symbols::Symbolizer;
use crate::AnalyzeError;

/// How much of a call goes into its symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Call and callsite ([Grosclaude 2012]'s choice: "destination processes or data sizes are
    /// pruned").
    Low,
    /// Also the peer relative to the rank and the size class.
    High,
}

/// Which compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Online loop folding, linear time ([`mpiscope_structure::fold`]).
    Fold,
    /// [Grosclaude 2012]'s runs-and-digrams algorithm ([`mpiscope_structure::seed`]).
    Seed,
}

/// What a symbol stands for.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SymbolInfo {
    /// Id used in the structure's leaves.
    pub id: u32,
    /// Printed name (`Allreduce2`, `CPU2`, `Send1(+1, 4KiB)`).
    pub name: String,
    /// The MPI function (`None` for a compute burst).
    pub function: Option<String>,
    /// Callsite number.
    pub callsite: u32,
}

/// A callsite: its number, the function called there and where it is.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallsiteInfo {
    /// Number used in symbol names.
    pub callsite: u32,
    /// MPI function called there.
    pub function: String,
    /// `function file:line`, or object file and offset, when known.
    pub location: Option<String>,
}

/// Ranks that have the same structure, and that structure (times merged over them).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RankClass {
    /// World ranks.
    pub ranks: Vec<u32>,
    /// Top-level items, in order.
    pub nodes: Vec<Node>,
}

/// The structure of a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Structure {
    /// Ranks read.
    pub ranks: u32,
    /// Symbols read over all ranks (calls and bursts).
    pub symbols_read: u64,
    /// Top-level items over all ranks after compression.
    pub items: u64,
    /// The symbols.
    pub symbols: Vec<SymbolInfo>,
    /// The callsites.
    pub callsites: Vec<CallsiteInfo>,
    /// Classes of ranks, by first rank.
    pub classes: Vec<RankClass>,
    /// The approximate structure (loops whose iterations differ slightly), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approximate: Option<Approximate>,
}

/// The approximate structure of a run ([`mpiscope_structure::approx`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Approximate {
    /// Most edits an iteration may differ from its loop's body by, as a fraction of the
    /// body's length.
    pub tolerance: f64,
    /// Classes of ranks with the same approximate structure, by first rank.
    pub classes: Vec<ApproxClass>,
}

/// Ranks whose approximate structures have the same shape, and that structure (values and
/// differences merged over them).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ApproxClass {
    /// World ranks.
    pub ranks: Vec<u32>,
    /// Stretches of the run in order: folded exactly, or approximate loops.
    pub parts: Vec<Part>,
    /// The ranks whose stretches outside the main loops are merged into `parts` (the others
    /// differ there, and only their main loops are).
    pub outside_loops: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SymKey {
    cpu: bool,
    function: String,
    callsite: u32,
    peer: Option<i64>,
    size_class: Option<u32>,
}

/// Is `name` a call that shapes the communication structure?
fn structural(name: &str) -> bool {
    matches!(
        mpiscope_mpispec::group(name),
        Group::P2p | Group::Collective | Group::Completion | Group::Probe
    )
}

fn short(function: &str) -> &str {
    function.strip_prefix("MPI_").unwrap_or(function)
}

fn size_label(class: u32) -> String {
    // Class c holds sizes in [2^(c-1), 2^c); 0 is empty messages.
    match class {
        0 => "0B".into(),
        c if c <= 10 => format!("{}B", 1u64 << (c - 1)),
        c if c <= 20 => format!("{}KiB", 1u64 << (c - 11)),
        c => format!("{}MiB", 1u64 << (c.min(50) - 21)),
    }
}

/// Recovers the structure of `run`, ranks in `ranks` (all when `None`); with `approximate`,
/// also the approximate loops of each rank.
pub fn structure(
    run: &RunDir,
    ranks: Option<&[u32]>,
    detail: Detail,
    algorithm: Algorithm,
    approximate: Option<&approx::Options>,
) -> Result<Structure, AnalyzeError> {
    let all: Vec<u32> = (0..run.ranks()).collect();
    let ranks = ranks.unwrap_or(&all);
    let mut alphabet = Alphabet::default();
    let mut per_rank: Vec<(u32, Vec<Node>)> = Vec::new();
    let mut per_rank_parts: Vec<(u32, Vec<Part>)> = Vec::new();
    for &rank in ranks {
        let (nodes, seq) = alphabet.rank(run, rank, detail, algorithm, approximate.is_some())?;
        per_rank.push((rank, nodes));
        if let Some(o) = approximate {
            let calls = |s: u32| {
                alphabet
                    .symbols
                    .get(s as usize)
                    .is_some_and(|x| x.function.is_some())
            };
            per_rank_parts.push((rank, approx::approximate(&seq, &calls, o)));
        }
    }
    alphabet.name_callsites();
    let items = per_rank.iter().map(|(_, n)| n.len() as u64).sum();
    Ok(Structure {
        ranks: ranks.len() as u32,
        symbols_read: alphabet.symbols_read,
        items,
        symbols: alphabet.symbols,
        callsites: alphabet.callsites,
        classes: classes_of(per_rank),
        approximate: approximate.map(|o| Approximate {
            tolerance: o.tolerance,
            classes: approx_classes(per_rank_parts),
        }),
    })
}

/// A rank's symbols with their values (microseconds), in order.
type Sequence = Vec<(u32, f64)>;

/// The call a symbol stands for or precedes (a compute burst): its place in the rank's record
/// (0-based, over every thread's events) and its times, ns since the run's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Event number.
    pub event: u64,
    /// Entry.
    pub enter: u64,
    /// Exit.
    pub exit: u64,
}

/// One rank's symbols (low detail), with the call each stands for or precedes, and which
/// symbol ids are calls (the others are compute bursts): what [`crate::phase`] searches for
/// the main loop.
pub(crate) fn rank_symbols<R: std::io::Read>(
    reader: &mut mpiscope_trace::RankReader<R>,
    rank: u32,
) -> (Sequence, Vec<Stamp>, Vec<bool>) {
    let mut alphabet = Alphabet::default();
    let mut seq = Vec::new();
    let mut stamps = Vec::new();
    alphabet.symbolize(reader, rank, Detail::Low, |s, v, stamp| {
        seq.push((s, v));
        stamps.push(stamp);
    });
    let calls = alphabet
        .symbols
        .iter()
        .map(|x| x.function.is_some())
        .collect();
    (seq, stamps, calls)
}

/// The symbols and callsites met so far, numbered across ranks.
#[derive(Default)]
struct Alphabet {
    syms: HashMap<SymKey, u32>,
    symbols: Vec<SymbolInfo>,
    sites: HashMap<Vec<(String, u64)>, u32>,
    callsites: Vec<CallsiteInfo>,
    /// The innermost frame of each callsite.
    site_frames: Vec<(String, u64)>,
    symbols_read: u64,
}

impl Alphabet {
    /// The loop tree of `rank`'s first thread: its structural calls and the compute bursts
    /// between them, as symbols.
    fn rank(
        &mut self,
        run: &RunDir,
        rank: u32,
        detail: Detail,
        algorithm: Algorithm,
        keep: bool,
    ) -> Result<(Vec<Node>, Sequence), AnalyzeError> {
        let mut reader = run.open_rank(rank)?;
        let mut seq: Vec<(u32, f64)> = Vec::new();
        let mut folder = mpiscope_structure::fold::Folder::new();
        self.symbolize(&mut reader, rank, detail, |s, v, _| {
            if algorithm == Algorithm::Fold {
                folder.push(s, v);
            }
            if keep || algorithm == Algorithm::Seed {
                seq.push((s, v));
            }
        });
        Ok(match algorithm {
            Algorithm::Fold => (folder.finish(), seq),
            Algorithm::Seed => (mpiscope_structure::seed::compress(seq.clone()), seq),
        })
    }

    /// Reads `rank`'s first thread and gives `push` each symbol with its value and the call
    /// it is (a compute burst: the call it precedes).
    fn symbolize<R: std::io::Read>(
        &mut self,
        reader: &mut mpiscope_trace::RankReader<R>,
        rank: u32,
        detail: Detail,
        mut push: impl FnMut(u32, f64, Stamp),
    ) {
        let mut prev_exit: Option<u64> = None;
        let mut local_callsites: HashMap<u32, u32> = HashMap::new();
        let mut index = 0u64;
        while let Some(ev) = reader.next_event() {
            index += 1;
            if ev.thread != 0 {
                continue;
            }
            let tables = reader.tables();
            let function = tables.call_name(ev.call).into_owned();
            if !structural(&function) {
                // The first burst counts from the first call (MPI_Init) on, as in the seed.
                prev_exit.get_or_insert(ev.t_exit);
                continue;
            }
            let stamp = Stamp {
                event: index - 1,
                enter: ev.t_enter,
                exit: ev.t_exit,
            };
            let cs = *local_callsites
                .entry(ev.callsite)
                .or_insert_with(|| self.callsite(tables, ev.callsite, &function));
            if let Some(p) = prev_exit {
                let gap = ev.t_enter.saturating_sub(p) as f64 * 1e-3;
                let s = self.intern(SymKey {
                    cpu: true,
                    function: String::new(),
                    callsite: cs,
                    peer: None,
                    size_class: None,
                });
                push(s, gap, stamp);
                self.symbols_read += 1;
            }
            prev_exit = Some(ev.t_exit);
            let (peer, size_class) = match detail {
                Detail::Low => (None, None),
                Detail::High => {
                    let peer = ev
                        .args
                        .get(Slot::Peer)
                        .filter(|&p| p >= 0)
                        .map(|p| p - i64::from(rank));
                    let size = ev.args.get(Slot::Bytes).map(|b| {
                        let b = b.max(0) as u64;
                        64 - b.leading_zeros()
                    });
                    (peer, size)
                }
            };
            let s = self.intern(SymKey {
                cpu: false,
                function,
                callsite: cs,
                peer,
                size_class,
            });
            push(s, ev.duration() as f64 * 1e-3, stamp);
            self.symbols_read += 1;
        }
    }

    /// The number of a rank's callsite `id` (a call of `function`), across ranks by its
    /// frames.
    fn callsite(&mut self, tables: &mpiscope_trace::Tables, id: u32, function: &str) -> u32 {
        let frames = crate::symbols::callsite_frames(tables, id);
        let next = self.sites.len() as u32;
        *self.sites.entry(frames.clone()).or_insert_with(|| {
            self.callsites.push(CallsiteInfo {
                callsite: next,
                function: function.to_owned(),
                location: None,
            });
            self.site_frames
                .push(frames.first().cloned().unwrap_or_default());
            next
        })
    }

    /// The number of the symbol `key`, named on first use.
    fn intern(&mut self, key: SymKey) -> u32 {
        let next = self.symbols.len() as u32;
        *self.syms.entry(key.clone()).or_insert_with(|| {
            let mut name = if key.cpu {
                format!("CPU{}", key.callsite)
            } else {
                format!("{}{}", short(&key.function), key.callsite)
            };
            if let (Some(p), Some(c)) = (key.peer, key.size_class) {
                name += &format!("({p:+}, {})", size_label(c));
            } else if let Some(c) = key.size_class {
                name += &format!("({})", size_label(c));
            }
            self.symbols.push(SymbolInfo {
                id: next,
                name,
                function: (!key.cpu).then(|| key.function.clone()),
                callsite: key.callsite,
            });
            next
        })
    }

    /// Locates the callsites in the binaries' debug information.
    fn name_callsites(&mut self) {
        let mut symbolizer = Symbolizer::new();
        for (c, (path, offset)) in self.callsites.iter_mut().zip(&self.site_frames) {
            if !path.is_empty() {
                c.location = Some(match symbolizer.resolve(path, *offset) {
                    Some(l) => l.to_string(),
                    None => format!("{path}+{offset:#x}"),
                });
            }
        }
    }
}

/// Ranks grouped by the shape of their trees, in order of first appearance; the times of
/// a class merged.
fn classes_of(per_rank: Vec<(u32, Vec<Node>)>) -> Vec<RankClass> {
    let mut classes: Vec<(String, RankClass)> = Vec::new();
    for (rank, nodes) in per_rank {
        let shape: Vec<String> = nodes.iter().map(Node::shape).collect();
        let shape = shape.join(" ");
        match classes.iter_mut().find(|(s, _)| *s == shape) {
            Some((_, c)) => {
                c.ranks.push(rank);
                for (a, b) in c.nodes.iter_mut().zip(&nodes) {
                    a.merge(b);
                }
            }
            None => classes.push((
                shape,
                RankClass {
                    ranks: vec![rank],
                    nodes,
                },
            )),
        }
    }
    classes.into_iter().map(|(_, c)| c).collect()
}

/// The shape of a rank's approximate structure, and of its main loops alone (the loops that
/// hold a tenth of its symbols or more).
fn approx_shapes(parts: &[Part]) -> (String, String) {
    let all: u64 = parts.iter().map(Part::expanded_len).sum();
    let main: Vec<String> = parts
        .iter()
        .filter(|p| matches!(p, Part::Loop(_)) && p.expanded_len() * 10 >= all)
        .map(Part::shape)
        .collect();
    let shape: Vec<String> = parts.iter().map(Part::shape).collect();
    (shape.join(" | "), main.join(" | "))
}

/// Ranks grouped by the shape of their main loops (SPMD classes with a tolerance: their setup
/// and teardown may differ), in order of first appearance. Ranks whose whole structure has the
/// class's shape are merged part by part; the others only in the main loops.
fn approx_classes(per_rank: Vec<(u32, Vec<Part>)>) -> Vec<ApproxClass> {
    let mut classes: Vec<(String, String, ApproxClass)> = Vec::new();
    for (rank, parts) in per_rank {
        let (shape, main) = approx_shapes(&parts);
        match classes.iter_mut().find(|(_, m, _)| *m == main) {
            Some((s, _, c)) => {
                c.ranks.push(rank);
                if *s == shape {
                    c.outside_loops.push(rank);
                    c.parts.iter_mut().zip(&parts).for_each(|(a, b)| a.merge(b));
                } else {
                    let all: u64 = parts.iter().map(Part::expanded_len).sum();
                    let theirs = parts
                        .iter()
                        .filter(|p| matches!(p, Part::Loop(_)) && p.expanded_len() * 10 >= all);
                    let total: u64 = c.parts.iter().map(Part::expanded_len).sum::<u64>();
                    let ours = c
                        .parts
                        .iter_mut()
                        .filter(|p| matches!(p, Part::Loop(_)) && p.expanded_len() * 10 >= total);
                    ours.zip(theirs).for_each(|(a, b)| a.merge(b));
                }
            }
            None => classes.push((
                shape,
                main,
                ApproxClass {
                    ranks: vec![rank],
                    outside_loops: vec![rank],
                    parts,
                },
            )),
        }
    }
    classes.into_iter().map(|(_, _, c)| c).collect()
}

/// `0-3,5,7-8`.
fn rank_list(r: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < r.len() {
        let mut j = i;
        while j + 1 < r.len() && r[j + 1] == r[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", r[i], r[j])
        } else {
            r[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

fn value(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl Structure {
    /// A symbol's printed name by its id (`?` for an unknown id).
    fn namer(&self) -> impl Fn(u32) -> String + '_ {
        let names: HashMap<u32, &str> = self
            .symbols
            .iter()
            .map(|x| (x.id, x.name.as_str()))
            .collect();
        move |id| names.get(&id).copied().unwrap_or("?").to_string()
    }

    /// [Grosclaude 2012]'s text: per class of ranks, one numbered line per top-level item; a loop or
    /// sequence line ends with its total. Times in microseconds, averaged over the ranks of
    /// the class.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# {} ranks, {} symbols folded into {} items; times in microseconds (mean per \
             element over iterations and over the ranks of a class); loop totals after `:`",
            self.ranks, self.symbols_read, self.items
        );
        let name = self.namer();
        for c in &self.classes {
            let n = c.ranks.len() as f64;
            let _ = writeln!(
                s,
                "\nranks {} ({} rank{}):",
                rank_list(&c.ranks),
                c.ranks.len(),
                if c.ranks.len() == 1 { "" } else { "s" }
            );
            for (i, node) in c.nodes.iter().enumerate() {
                // Per-rank means: the merged statistics count every rank's values.
                let per_rank = |v: f64| value(v);
                let mut line = node.notation(&name, &per_rank);
                if !matches!(node, Node::Leaf { .. }) {
                    line += &format!(": {}", value((node.total() / n).round()));
                }
                let _ = writeln!(s, "{:>4}. {line}", i + 1);
            }
        }
        if !self.callsites.is_empty() {
            let _ = writeln!(s, "\ncallsites:");
            for c in &self.callsites {
                let _ = writeln!(
                    s,
                    "{:>4}  {} at {}",
                    c.callsite,
                    c.function,
                    c.location.as_deref().unwrap_or("?")
                );
            }
        }
        s
    }
}

mod layout;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        assert_eq!(rank_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(rank_list(&[4]), "4");
        assert_eq!(
            (size_label(0), size_label(4), size_label(13)),
            ("0B".into(), "8B".into(), "4KiB".into())
        );
        assert_eq!(
            (value(720.0), value(1308792.75)),
            ("720".into(), "1308792.75".into())
        );
        assert!(structural("MPI_Allreduce") && structural("MPI_Wait") && structural("MPI_Isend"));
        assert!(
            !structural("MPI_Comm_rank") && !structural("MPI_Wtime") && !structural("MPI_Init")
        );
    }

    /// A rank's sequence: a setup call, then 400 steps (burst, Sendrecv, burst, Alltoall) with
    /// an Allreduce every tenth step and, on rank 1, an extra Send in step 207.
    fn md_like(rank: u32) -> Vec<(u32, f64)> {
        let mut seq = vec![(4, 100.0), (5, 1.0)];
        for t in 0..400 {
            seq.extend([(0, 10.0), (1, 2.0), (2, 5.0), (3, 1.0)]);
            if t % 10 == 9 {
                seq.extend([(6, 1.0), (7, 3.0)]);
            }
            if rank == 1 && t == 207 {
                seq.extend([(8, 1.0), (9, 3.0)]);
            }
        }
        seq
    }

    #[test]
    fn approximate_text_states_loops_and_differences_on_short_lines() {
        let names = ["Sendrecv", "Alltoall", "Bcast", "Allreduce", "Send"];
        let symbols: Vec<SymbolInfo> = (0..10u32)
            .map(|id| SymbolInfo {
                id,
                name: if id % 2 == 0 {
                    format!("CPU{}", id / 2)
                } else {
                    format!("{}{}", names[id as usize / 2], id / 2)
                },
                function: (id % 2 == 1).then(|| format!("MPI_{}", names[id as usize / 2])),
                callsite: id / 2,
            })
            .collect();
        let o = ApproxOptions::default();
        let calls = |s: u32| s % 2 == 1;
        let per_rank: Vec<(u32, Vec<Part>)> = (0..2)
            .map(|r| (r, approx::approximate(&md_like(r), &calls, &o)))
            .collect();
        let s = Structure {
            ranks: 2,
            symbols_read: 0,
            items: 0,
            symbols,
            callsites: (0..5)
                .map(|c| CallsiteInfo {
                    callsite: c,
                    function: format!("MPI_{}", names[c as usize]),
                    location: Some(format!("step() md.c:{}", 10 + c)),
                })
                .collect(),
            classes: Vec::new(),
            approximate: Some(Approximate {
                tolerance: o.tolerance,
                classes: approx_classes(per_rank),
            }),
        };
        let text = s.to_approx_text(false).unwrap();
        let a = s.approximate.as_ref().unwrap();
        assert_eq!(a.classes.len(), 1, "{text}");
        assert_eq!(a.classes[0].ranks, [0, 1]);
        assert!(text.contains("ranks 0-1 (2 ranks"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
        assert!(text.contains("loop ["), "{text}");
        assert!(text.contains("Send4: 3 before"), "{text}");
        assert!(text.contains("callsites in loops:"), "{text}");
        assert!(
            !text.contains("md.c:12"),
            "Bcast's callsite is outside loops: {text}"
        );
    }
}
