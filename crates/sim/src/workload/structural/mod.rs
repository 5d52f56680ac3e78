//! Structural form of a trace: per rank, the loop tree of its calls (found by
//! `mpiscope-structure`'s folder) and a table of the distinct calls, with the mean time of
//! each position; its size follows the program's structure, not its iteration count. It
//! replays on the simulator like the trace it came from.
//!
//! Each event of a rank's first thread becomes two symbols (a communication call of another
//! thread is an error, as in trace replay): the computation before it
//! (value: the gap since the previous call, ns; its CPU time when the trace recorded it, as
//! the trace's replay takes it) and the call (value: its duration, ns). A
//! call symbol is everything the replay reads of the event ([`SavedCall`]: function,
//! callsite, every recorded argument and list), so two events share a symbol only when they
//! replay the same way: the form is lossless for replay but for times, which become the
//! mean of their position in the tree. Request ids, which grow with every iteration, are
//! stored relative to the last request the rank created, so an iteration's calls look the
//! same as the previous one's.
//!
//! Replay ([`load`]) walks the tree with a stack of loop counters (memory in the size of the
//! tree, not of the run), rebuilds each event with synthetic times (the mean gap, then the
//! mean duration) and hands it to the same translation as [`super::trace`] replay.

use std::collections::HashMap;

use mpiscope_structure::approx::Part;
use mpiscope_structure::Node;
use mpiscope_trace::{
    Args, CallsiteDef, CommDef, Event, Frame, List, ListKind, ModuleDef, Slot, Tables,
};
use serde::{Deserialize, Serialize};

use super::trace::{Callsites, Shared, TraceOptions, Translator};
use super::{Action, Outcome, RankWorkload, WorkloadError};
use walk::PartsWalk;

mod save;
mod walk;

pub use save::save;

/// The `format` field of an exact structural file.
pub const FORMAT: &str = "mpiscope-structure-replay/1";

/// The `format` field of a structural file with approximate loops (`parts`).
pub const FORMAT_APPROXIMATE: &str = "mpiscope-structure-replay/2";

/// What every structural file's `format` starts with.
pub const FORMAT_FAMILY: &str = "mpiscope-structure-replay/";

/// The argument slots that hold message sizes.
const SIZE_SLOTS: [Slot; 5] = [
    Slot::Count,
    Slot::Bytes,
    Slot::RecvCount,
    Slot::RecvBytes,
    Slot::StatusBytes,
];

fn is_size(slot: u8) -> bool {
    SIZE_SLOTS.iter().any(|&s| s as u8 == slot)
}

/// How a rank's symbols stand for its calls. Format 1: symbol `2 k` is the computation
/// before call `k`, `2 k + 1` the call. Format 2: call `k` owns consecutive symbols, in call
/// order: the computation, the call, then one per size argument it has (in argument order),
/// whose values are the sizes, so that sizes are means per position like times.
struct Layout {
    /// Per symbol: its call and role (0 computation, 1 call, 2 + j the j-th size).
    owner: Vec<(u32, u32)>,
    /// Per call: the indices in its `args` of its size arguments (format 2).
    sizes: Vec<Vec<usize>>,
}

impl Layout {
    fn new(calls: &[SavedCall], with_sizes: bool) -> Layout {
        let mut owner = Vec::new();
        let mut sizes = Vec::with_capacity(calls.len());
        for (k, c) in calls.iter().enumerate() {
            let idx: Vec<usize> = if with_sizes {
                (0..c.args.len())
                    .filter(|&i| is_size(c.args[i].0))
                    .collect()
            } else {
                Vec::new()
            };
            for role in 0..2 + idx.len() as u32 {
                owner.push((k as u32, role));
            }
            sizes.push(idx);
        }
        Layout { owner, sizes }
    }
}

/// A call as the replay needs it; request ids relative (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SavedCall {
    /// C name of the function.
    pub function: String,
    /// Rank-local callsite id (0: none).
    pub callsite: u32,
    /// Recorded argument slots, `(slot number, value)`.
    pub args: Vec<(u8, i64)>,
    /// Recorded lists, `(list kind number, values)`.
    pub lists: Vec<(u8, Vec<i64>)>,
}

/// One rank's structural form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuralRank {
    /// World rank.
    pub rank: u32,
    /// Events of the first thread.
    pub events: u64,
    /// Distinct calls: symbol `2 i` is the computation before call `i`, `2 i + 1` the call.
    pub calls: Vec<SavedCall>,
    /// The loop tree of the symbols, with per-position time statistics (ns); empty when
    /// `parts` holds them.
    pub tree: Vec<Node>,
    /// The symbols as exact stretches and approximate loops (format 2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Communicators used.
    pub comms: Vec<CommDef>,
    /// Callsites used: id and frames as (object file, file-relative address).
    pub callsites: Vec<(u32, Vec<(String, u64)>)>,
    /// Set when the trace recorded the CPU time of bursts (format 1.2): the computations are
    /// then their CPU times (wall times where not recorded), replayed as CPU work measured
    /// with this many cores busy on the rank's host (see [`super::trace::TraceOptions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_bursts: Option<u32>,
}

/// A run's structural form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuralRun {
    /// [`FORMAT`].
    pub format: String,
    /// Per rank, in rank order.
    pub ranks: Vec<StructuralRank>,
}

/// Does `name` create a request (whose id later calls refer to)?
fn creates_request(name: &str) -> bool {
    mpiscope_mpispec::is_nonblocking(name) || mpiscope_mpispec::is_persistent(name)
}

/// Rewrites request ids between absolute and relative (to the last created id), in the
/// `Request` slot, the `Requests` list and the first value of each `Completions` entry.
/// `to_relative` picks the direction; `base` is the last created id, updated.
fn map_requests(name: &str, ev: &mut Event, base: &mut i64, to_relative: bool) {
    // Null requests (0) stay 0 in the absolute form and `i64::MIN` in the relative one.
    let conv = |v: i64, base: i64| -> i64 {
        match (to_relative, v) {
            (true, 0) => i64::MIN,
            (true, v) => v.wrapping_sub(base),
            (false, i64::MIN) => 0,
            (false, v) => base.wrapping_add(v),
        }
    };
    let b = *base;
    let creates = creates_request(name);
    if let Some(r) = ev.args.get(Slot::Request) {
        let c = conv(r, b);
        ev.args.set(Slot::Request, c);
        if creates {
            *base = if to_relative { r } else { c };
        }
    }
    for l in &mut ev.lists {
        match l.kind {
            ListKind::Requests => l.values.iter_mut().for_each(|v| *v = conv(*v, b)),
            ListKind::Completions => l
                .values
                .iter_mut()
                .step_by(4)
                .for_each(|v| *v = conv(*v, b)),
            _ => {}
        }
    }
}

fn saved_call(name: &str, ev: &Event) -> SavedCall {
    SavedCall {
        function: name.to_string(),
        callsite: ev.callsite,
        args: Slot::ALL
            .iter()
            .filter_map(|&s| ev.args.get(s).map(|v| (s as u8, v)))
            .collect(),
        lists: ev
            .lists
            .iter()
            .map(|l| (l.kind as u8, l.values.clone()))
            .collect(),
    }
}

/// The two bytes every gzip stream starts with.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Writes `form` to `path` as JSON, gzip-compressed when the name ends in `.gz` (iterative
/// programs repeat the same calls with the same arguments: the JSON compresses some 7x);
/// returns the bytes written.
pub fn write_file(form: &StructuralRun, path: &std::path::Path) -> Result<u64, WorkloadError> {
    let io = |e: &dyn std::fmt::Display| WorkloadError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let json = serde_json::to_vec(form).map_err(|e| io(&e))?;
    let bytes = if path.extension().is_some_and(|x| x == "gz") {
        use std::io::Write;
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&json).map_err(|e| io(&e))?;
        z.finish().map_err(|e| io(&e))?
    } else {
        json
    };
    mpiscope_files::write_atomic(path, &bytes).map_err(|e| io(&e))?;
    Ok(bytes.len() as u64)
}

/// Whether `path` looks like a structural form: JSON (its first non-blank byte `{`) or gzip.
/// A guess from the first bytes, for telling it from other inputs; [`read_file`] checks.
pub fn sniff(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n].starts_with(&GZIP_MAGIC)
        || head[..n]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b'{')
}

/// Reads a structural form written by [`write_file`]; [`load`] checks its [`FORMAT`].
pub fn read_file(path: &std::path::Path) -> Result<StructuralRun, WorkloadError> {
    let raw = std::fs::read(path).map_err(|e| WorkloadError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    from_bytes(&raw, &path.display().to_string())
}

/// Parses a structural form from the bytes of a file called `name` (for messages): plain or
/// gzip JSON, told apart by the gzip magic, whatever the file is called.
pub fn from_bytes(raw: &[u8], name: &str) -> Result<StructuralRun, WorkloadError> {
    let bad = |message: String| WorkloadError::Syntax {
        path: name.to_string(),
        line: 1,
        message,
    };
    let inflated;
    let json = if raw.starts_with(&GZIP_MAGIC) {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(raw)
            .read_to_end(&mut out)
            .map_err(|e| bad(format!("gzip stream broken after {} bytes: {e}", out.len())))?;
        inflated = out;
        &inflated[..]
    } else {
        raw
    };
    serde_json::from_slice(json).map_err(|e| bad(format!("not a structural form: {e}")))
}

fn tables_of(r: &StructuralRank) -> Tables {
    let mut t = Tables::default();
    for c in &r.comms {
        t.comms.insert(c.id, c.clone());
    }
    let mut modules: HashMap<String, u32> = HashMap::new();
    for (id, frames) in &r.callsites {
        let frames = frames
            .iter()
            .map(|(path, offset)| {
                let next = modules.len() as u32 + 1;
                let m = *modules.entry(path.clone()).or_insert(next);
                Frame {
                    module: m,
                    offset: *offset,
                }
            })
            .collect();
        t.callsites.insert(*id, CallsiteDef { id: *id, frames });
    }
    for (path, id) in modules {
        t.modules.insert(id, ModuleDef { id, base: 0, path });
    }
    t
}

/// One rank replaying its structural form.
struct StructuralReplay {
    calls: Vec<SavedCall>,
    layout: Layout,
    tables: Tables,
    walk: PartsWalk,
    tr: Translator,
    /// Synthetic clock, ns.
    clock: f64,
    base: i64,
}

/// The event `call` stands for, entered at `enter` and left at `exit` (ns).
fn rebuild(call: &SavedCall, enter: u64, exit: u64) -> Event {
    let mut args = Args::EMPTY;
    for &(s, v) in &call.args {
        if let Some(&slot) = Slot::ALL.get(s as usize) {
            args.set(slot, v);
        }
    }
    Event {
        thread: 0,
        call: 0,
        t_enter: enter,
        t_exit: exit,
        callsite: call.callsite,
        core: None,
        ret: 0,
        skipped: 0,
        args,
        // The structural form keeps wall times only.
        cpu_ns: None,
        lists: call
            .lists
            .iter()
            .filter_map(|(k, v)| {
                Some(List {
                    kind: ListKind::from_u8(*k)?,
                    values: v.clone(),
                })
            })
            .collect(),
        unfinished: false,
    }
}

impl RankWorkload for StructuralReplay {
    fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
        loop {
            if let Some(a) = self.tr.queue.pop_front() {
                return Some(Ok(a));
            }
            if self.tr.ended {
                return None;
            }
            // A computation symbol, then its call (and its sizes).
            let (Some((cpu, gap)), Some((sym, dur))) = (self.walk.next(), self.walk.next()) else {
                self.tr.ended = true;
                return Some(Ok(Action::Finalize));
            };
            let owner = |s: u32| self.layout.owner.get(s as usize).copied();
            let bad = |message: String| {
                Some(Err(WorkloadError::Syntax {
                    path: "structural form".into(),
                    line: self.tr.events,
                    message,
                }))
            };
            let (k, call) = match (owner(cpu), owner(sym)) {
                (Some((k, 0)), Some((j, 1))) if j == k => (k as usize, &self.calls[k as usize]),
                _ => {
                    self.tr.ended = true;
                    return bad(format!(
                        "symbol {sym} after {cpu}: not a computation and its call"
                    ));
                }
            };
            let mut sized;
            let call = if self.layout.sizes[k].is_empty() {
                call
            } else {
                sized = call.clone();
                for (j, &i) in self.layout.sizes[k].iter().enumerate() {
                    match self.walk.next() {
                        Some((s, v)) if owner(s) == Some((k as u32, 2 + j as u32)) => {
                            sized.args[i].1 = v.mean().round() as i64;
                        }
                        _ => {
                            self.tr.ended = true;
                            return bad(format!("call symbol {sym}: size {j} missing"));
                        }
                    }
                }
                &sized
            };
            let enter = (self.clock + gap.mean()).round();
            let exit = (enter + dur.mean()).round();
            self.clock = exit;
            let mut ev = rebuild(call, enter as u64, exit as u64);
            let name = call.function.clone();
            map_requests(&name, &mut ev, &mut self.base, false);
            if let Err(e) = self.tr.event(&self.tables, &name, &ev) {
                return Some(Err(e));
            }
        }
    }
}

/// One workload per rank of `run`, as [`super::trace::load_with_callsites`] does for the
/// traces themselves (same options, same callsite table).
pub fn load(
    run: &StructuralRun,
    options: TraceOptions,
    host_speeds: &[f64],
) -> Result<(Vec<Box<dyn RankWorkload>>, Callsites), WorkloadError> {
    if run.format != FORMAT && run.format != FORMAT_APPROXIMATE {
        return Err(WorkloadError::Syntax {
            path: "structural form".into(),
            line: 0,
            message: format!(
                "format `{}`, expected `{FORMAT}` or `{FORMAT_APPROXIMATE}`",
                run.format
            ),
        });
    }
    let shared = Shared::new();
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::with_capacity(run.ranks.len());
    for (i, r) in run.ranks.iter().enumerate() {
        let speed = options
            .traced_speed
            .unwrap_or_else(|| host_speeds.get(i).copied().unwrap_or(1e9));
        let mut tr = shared.translator(
            r.rank,
            format!("structural form, rank {}", r.rank),
            speed,
            options.callsites_by_size,
        );
        if let Some(busy) = r.cpu_bursts {
            if options.wall_bursts {
                return Err(WorkloadError::Unsupported {
                    path: "structural form".into(),
                    message: format!(
                        "--wall-bursts: rank {}'s computations were saved as CPU times (its \
                         trace recorded them); replay the trace for its wall times",
                        r.rank
                    ),
                });
            }
            tr.use_cpu_time(super::trace::efficiency_at(&options.core_efficiency, busy));
        }
        let exact;
        let parts = if r.parts.is_empty() {
            exact = [Part::Exact {
                nodes: r.tree.clone(),
            }];
            &exact[..]
        } else {
            &r.parts[..]
        };
        out.push(Box::new(StructuralReplay {
            calls: r.calls.clone(),
            layout: Layout::new(&r.calls, run.format == FORMAT_APPROXIMATE),
            tables: tables_of(r),
            walk: PartsWalk::new(parts),
            tr,
            clock: 0.0,
            base: 0,
        }));
    }
    Ok((out, shared.callsites))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_expands_nested_loops() {
        // (a (b)[3])[2] c
        let leaf = |sym| Node::Leaf {
            sym,
            stats: mpiscope_structure::Stats::one(f64::from(sym)),
        };
        let tree = vec![
            Node::Loop {
                body: vec![
                    leaf(1),
                    Node::Loop {
                        body: vec![leaf(2)],
                        count: 3,
                    },
                ],
                count: 2,
            },
            Node::Loop {
                body: vec![leaf(9)],
                count: 0,
            },
            leaf(3),
        ];
        let mut steps = Vec::new();
        walk::flatten(&tree, &mut steps);
        let w = walk::Walk::new(steps.into());
        let syms: Vec<u32> = w.map(|x| x.0).collect();
        assert_eq!(syms, vec![1, 2, 2, 2, 1, 2, 2, 2, 3]);
    }

    proptest::proptest! {
        /// Approximate loops walk back to the recorded sequence, symbol for symbol.
        #[test]
        fn approximate_parts_walk_back_to_the_sequence(
            body in proptest::collection::vec(0u32..6, 1..8),
            noise in proptest::collection::vec((0usize..30, 0u32..9, 0usize..8), 0..20),
            reps in 4usize..30,
        ) {
            let mut seq: Vec<(u32, f64)> = vec![(7, 1.0)];
            for r in 0..reps {
                for (i, &s) in body.iter().enumerate() {
                    if !noise.iter().any(|&(at, _, pos)| at == r && pos == i + 100) {
                        seq.push((s, i as f64));
                    }
                    for &(at, s, pos) in &noise {
                        if at == r && pos == i {
                            seq.push((s, 0.5));
                        }
                    }
                }
            }
            let parts = mpiscope_structure::approx::approximate(
                &seq,
                &|_| true,
                &mpiscope_structure::approx::Options::default(),
            );
            let back: Vec<u32> = walk::PartsWalk::new(&parts).map(|x| x.0).collect();
            let orig: Vec<u32> = seq.iter().map(|x| x.0).collect();
            proptest::prop_assert_eq!(back, orig);
            // Kept series give each iteration its own value back.
            let o = mpiscope_structure::approx::Options {
                series: usize::MAX,
                ..Default::default()
            };
            let parts =
                mpiscope_structure::approx::approximate_with_series(&seq, &|_| true, &|_| true, &o);
            let back: Vec<(u32, f64)> =
                walk::PartsWalk::new(&parts).map(|x| (x.0, x.1.mean())).collect();
            for (a, b) in back.iter().zip(&seq) {
                proptest::prop_assert_eq!(a.0, b.0);
                // Exact stretches and added symbols keep means; body positions their value.
                proptest::prop_assert!(a.1 >= 0.0);
            }
        }
    }

    #[test]
    fn request_ids_round_trip_relative() {
        let mk = |req: Option<i64>, list: Option<Vec<i64>>| {
            let call = SavedCall {
                function: String::new(),
                callsite: 0,
                args: req.map(|r| (Slot::Request as u8, r)).into_iter().collect(),
                lists: list
                    .map(|v| (ListKind::Requests as u8, v))
                    .into_iter()
                    .collect(),
            };
            rebuild(&call, 0, 0)
        };
        // Two iterations of Irecv, Isend, Waitall: the relative forms are equal.
        let it = |a: i64| {
            vec![
                ("MPI_Irecv", mk(Some(a), None)),
                ("MPI_Isend", mk(Some(a + 1), None)),
                ("MPI_Waitall", mk(None, Some(vec![a, 0, a + 1]))),
            ]
        };
        let mut base = 0;
        let mut rel = Vec::new();
        for (n, mut e) in it(1).into_iter().chain(it(3)) {
            map_requests(n, &mut e, &mut base, true);
            rel.push((n, e));
        }
        assert_eq!(rel[0..3], rel[3..6]);
        assert_eq!(rel[2].1.lists[0].values, vec![-1, i64::MIN, 0]);
        let mut base = 0;
        let back: Vec<Event> = rel
            .into_iter()
            .map(|(n, mut e)| {
                map_requests(n, &mut e, &mut base, false);
                e
            })
            .collect();
        let orig: Vec<Event> = it(1).into_iter().chain(it(3)).map(|x| x.1).collect();
        assert_eq!(back, orig);
    }

    fn small_form() -> StructuralRun {
        let leaf = |sym| Node::Leaf {
            sym,
            stats: mpiscope_structure::Stats::one(1000.0 + f64::from(sym)),
        };
        StructuralRun {
            format: FORMAT.into(),
            ranks: vec![StructuralRank {
                rank: 0,
                events: 40,
                calls: vec![SavedCall {
                    function: "MPI_Barrier".into(),
                    callsite: 0,
                    args: vec![(Slot::Comm as u8, 0)],
                    lists: Vec::new(),
                }],
                tree: vec![Node::Loop {
                    body: vec![leaf(0), leaf(1)],
                    count: 20,
                }],
                parts: Vec::new(),
                comms: Vec::new(),
                callsites: Vec::new(),
                cpu_bursts: None,
            }],
        }
    }

    #[test]
    fn compressed_and_plain_files_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let form = small_form();
        let (plain, packed) = (dir.path().join("f.json"), dir.path().join("f.json.gz"));
        let n_plain = write_file(&form, &plain).unwrap();
        let n_packed = write_file(&form, &packed).unwrap();
        assert!(std::fs::read(&packed).unwrap().starts_with(&GZIP_MAGIC));
        assert!(!std::fs::read(&plain).unwrap().starts_with(&GZIP_MAGIC));
        assert!(n_packed < n_plain, "{n_packed} vs {n_plain}");
        assert_eq!(read_file(&plain).unwrap(), form);
        assert_eq!(read_file(&packed).unwrap(), form);
        assert!(sniff(&plain) && sniff(&packed));
    }

    proptest::proptest! {
        /// A damaged compressed form (cut or with a byte changed) reads back as the form or
        /// as an error naming the file, never a panic.
        #[test]
        fn damaged_compressed_form_is_an_error(cut in 0usize..400, at in 0usize..400, byte: u8) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f.json.gz");
            write_file(&small_form(), &path).unwrap();
            let mut raw = std::fs::read(&path).unwrap();
            raw.truncate(cut.max(2));
            if at < raw.len() {
                raw[at] = byte;
            }
            match from_bytes(&raw, "f.json.gz") {
                Ok(form) => proptest::prop_assert_eq!(form.format, FORMAT),
                Err(e) => proptest::prop_assert!(e.to_string().starts_with("f.json.gz"), "{}", e),
            }
        }
    }
}
