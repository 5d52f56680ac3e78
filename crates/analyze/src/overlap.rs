//! What T-NBC (transparent non-blocking collectives) would gain for a traced program, before
//! anyone runs it: for every MPI_Alltoall, MPI_Alltoallv and MPI_Bcast a rank made, the
//! collective's time `T_comm` and the computation that follows it until the rank's next MPI
//! call (T-NBC completes the collective there at the latest) go into [Li 2010]'s model
//! `T_overlap = min(T_comm - T_init, T_CURC + T_CRC)` ([Li 2010], formula 3), with `T_init`,
//! the cost of starting the overlapped call, linear in the bytes it receives.
//!
//! T-NBC's own collective may be slower than the MPI library's (on shared memory here, 2-3x:
//! docs/BENCHMARKS.md): with `slowdown` k, the overlapped collective takes `k T_comm`, the
//! call returns after `T_init`, the computation runs, and the next MPI call waits for what
//! is left, so the time the rank spends in the collective becomes
//! `T_init + max(0, k T_comm - T_init - T_after)` and the saving is `T_comm` minus that
//! (negative when T-NBC costs more than it hides). The model assumes the computation that
//! follows does not wait for the data (CURC) or reads it in the order it arrives (what the
//! access-order priorities aim at): it is an upper bound for programs that read the data at
//! once; `mpiscope overlap --trace-access` tells when they do. Calls below the overlap
//! threshold are left out, as the library passes them through.
//!
//! Two figures: every eligible call overlapped (`--policy always`), and the library's default,
//! adaptive policy, replayed per rank and call site with the library's own decisions
//! (`mpiscope_overlap_core::decide`, its starting cost estimate): a site's first calls run
//! blocking, the model may rule it out, a probe alternates both modes and keeps the faster
//! one, all on the timeline the rank would follow (overlapped calls end earlier by what they
//! save). The ranks' agreement (a call overlaps only where every rank wants it) is left out:
//! each rank decides on its own calls.

use mpiscope_trace::{CommKind, RunDir, Slot};
use serde::Serialize;

use mpiscope_overlap_core::decide::{Mode, Site};
use mpiscope_overlap_core::model::DEFAULT_COST_US;

use crate::parallel::per_rank;
use crate::volume;
use crate::AnalyzeError;

/// The functions T-NBC overlaps.
pub const OVERLAPPED: [&str; 3] = ["MPI_Alltoall", "MPI_Alltoallv", "MPI_Bcast"];

/// The cost of starting an overlapped call, `base_ns + ns_per_mib * received MiB`, and how
/// much longer T-NBC's collective takes than the MPI library's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct InitModel {
    /// Fixed part, ns.
    pub base_ns: f64,
    /// Per MiB received, ns.
    pub ns_per_mib: f64,
    /// T-NBC's collective time over the traced one (1: as fast).
    pub slowdown: f64,
}

impl InitModel {
    /// `T_init` for a call receiving `bytes`.
    pub fn init_ns(&self, bytes: u64) -> f64 {
        self.base_ns + self.ns_per_mib * bytes as f64 / (1u64 << 20) as f64
    }
}

/// One function's collectives on one rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FunctionGain {
    /// C name of the function.
    pub function: String,
    /// Calls at or above the threshold.
    pub calls: u64,
    /// Bytes they received (sent, for a broadcast root).
    pub bytes: u64,
    /// Their total time, ns.
    pub comm_ns: u64,
    /// Computation following them until the next MPI call, ns.
    pub after_ns: u64,
    /// Time T-NBC's collective would overlap with computation, ns (model).
    pub hidden_ns: f64,
    /// Time the rank would save in these calls, ns (negative: lose).
    pub saved_ns: f64,
    /// Calls an access trace covered (the computation hiding them ends at their data's first
    /// read).
    pub read_bounded: u64,
    /// Calls the adaptive policy (the library's default) would overlap.
    pub adaptive_calls: u64,
    /// Time the rank would save in these calls under the adaptive policy, ns.
    pub adaptive_saved_ns: f64,
}

/// One rank's prediction.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RankGain {
    /// World rank.
    pub rank: u32,
    /// From the first call's entry to the last call's exit, ns.
    pub span_ns: u64,
    /// Per overlapped function (only those called).
    pub functions: Vec<FunctionGain>,
    /// Total hidden time, ns.
    pub hidden_ns: f64,
    /// Total time saved, ns (negative: lost).
    pub saved_ns: f64,
    /// Total time in the overlapped functions, ns.
    pub comm_ns: u64,
    /// Total time saved under the adaptive policy, ns.
    pub adaptive_saved_ns: f64,
}

/// The prediction for a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverlapPrediction {
    /// The `T_init` model used.
    pub init: InitModel,
    /// Smallest overlapped call, bytes received.
    pub min_bytes: u64,
    /// Per rank.
    pub ranks: Vec<RankGain>,
    /// The least any rank would save, ns: the estimate of the run's saving, since the ranks
    /// wait for one another at the collectives (negative: the run would be longer).
    pub min_saved_ns: f64,
    /// Mean over ranks of the hidden time, ns.
    pub mean_hidden_ns: f64,
    /// The longest rank span, ns.
    pub span_ns: u64,
    /// [`Self::min_saved_ns`] under the adaptive policy (the library's default): each call
    /// site decides as the library does ([`mpiscope_overlap_core::decide`]), on the trace's
    /// iterations and the model's overlapped ones.
    pub adaptive_min_saved_ns: f64,
}

/// One call's `(hidden, saved)` ns: a collective of `comm_ns` receiving `bytes`, followed by
/// `after_ns` of computation. The call takes `T_init`; T-NBC's collective (`slowdown` times
/// longer) overlaps the computation; the next MPI call waits for what is left.
pub fn call_gain(init: &InitModel, comm_ns: u64, bytes: u64, after_ns: u64) -> (f64, f64) {
    let t_init = init.init_ns(bytes);
    let t_tnbc = comm_ns as f64 * init.slowdown;
    let hidden = mpiscope_overlap_core::model::hidden(t_tnbc, t_init, after_ns as f64, 0.0);
    let exposed = t_init + (t_tnbc - t_init - hidden).max(0.0);
    (hidden, comm_ns as f64 - exposed)
}

/// When each traced call's received data was first read, from the records of
/// `mpiscope overlap --trace-access` (a run of the same program with the same inputs): per
/// world rank and function, in call order, the delay from each call's return to its first
/// read (`Some(u64::MAX)`: nothing read before the rank's next MPI call; `None`: a call the
/// tracer could not watch). Only the computation before that read can hide a transfer that
/// arrives in one piece.
#[derive(Debug, Default, Clone)]
pub struct FirstReads {
    by_rank: std::collections::HashMap<u32, [Vec<Option<u64>>; 3]>,
}

impl FirstReads {
    /// From access records (any order; each rank's calls are put in their own order).
    pub fn from_records(records: &[mpiscope_overlap_core::access::Record]) -> Self {
        let mut recs: Vec<_> = records.iter().collect();
        recs.sort_by_key(|r| (r.rank, r.call));
        let mut by_rank = std::collections::HashMap::<u32, [Vec<Option<u64>>; 3]>::new();
        for r in recs {
            let f = match r.kind.as_str() {
                "alltoall" => 0,
                "alltoallv" => 1,
                "bcast" => 2,
                _ => continue,
            };
            let first = r
                .covered
                .then(|| r.touches.iter().map(|t| t.1).min().unwrap_or(u64::MAX));
            by_rank.entry(r.rank).or_default()[f].push(first);
        }
        Self { by_rank }
    }

    fn of(&self, rank: u32, f: usize) -> Option<&[Option<u64>]> {
        self.by_rank.get(&rank).map(|v| v[f].as_slice())
    }
}

/// One rank's walk through the first reads of an access trace, call by call.
struct ReadCursor<'a> {
    reads: Option<&'a FirstReads>,
    rank: u32,
    /// Per function: calls seen that an access trace records.
    ordinal: [usize; 3],
    mismatch: Option<String>,
}

impl<'a> ReadCursor<'a> {
    fn new(reads: Option<&'a FirstReads>, rank: u32) -> Self {
        Self {
            reads,
            rank,
            ordinal: [0; 3],
            mismatch: None,
        }
    }

    /// The first read of the next call of function `f` (`u64::MAX`: none before the next
    /// MPI call); `None` without an access trace, for a call it could not watch, or for a
    /// broadcast's root (which reads nothing it received).
    fn next(&mut self, f: usize, is_root: bool) -> Option<u64> {
        let r = self.reads.filter(|_| !is_root)?;
        let list = r.of(self.rank, f).unwrap_or(&[]);
        let k = self.ordinal[f];
        self.ordinal[f] += 1;
        match list.get(k) {
            Some(&first) => first,
            None => {
                self.mismatch.get_or_insert_with(|| {
                    format!(
                        "rank {}: the access trace has {} {} calls, the run more",
                        self.rank,
                        list.len(),
                        OVERLAPPED[f]
                    )
                });
                None
            }
        }
    }

    /// Whether every traced call of the rank was matched.
    fn finish(mut self) -> Result<(), AnalyzeError> {
        if let Some(r) = self.reads {
            for (f, &n) in self.ordinal.iter().enumerate() {
                let traced = r.of(self.rank, f).map_or(0, <[_]>::len);
                if traced != n {
                    self.mismatch.get_or_insert_with(|| {
                        format!(
                            "rank {}: the access trace has {traced} {} calls, the run {n}",
                            self.rank, OVERLAPPED[f]
                        )
                    });
                }
            }
        }
        match self.mismatch {
            Some(m) => Err(AnalyzeError::Mismatch(format!(
                "{m}: the access trace is of another run (same program, same inputs needed)"
            ))),
            None => Ok(()),
        }
    }
}

/// An overlapped function's call waiting for the rank's next MPI call (which ends the
/// computation that can hide it).
struct Pending {
    f: usize,
    bytes: u64,
    comm_ns: u64,
    exit: u64,
    /// Whether the adaptive policy overlaps it.
    adaptive: bool,
    /// Its data's first read after it returned, ns.
    read: Option<u64>,
}

impl Pending {
    /// Adds the call's gain to `acc` now that the next MPI call enters at `next`.
    fn settle(self, next: u64, init: &InitModel, acc: &mut [FunctionGain], p: &mut PolicyReplay) {
        let after = next.saturating_sub(self.exit);
        let a = &mut acc[self.f];
        a.after_ns += after;
        let hideable = self.read.map_or(after, |r| r.min(after));
        if self.read.is_some() {
            a.read_bounded += 1;
        }
        let (hidden, saved) = call_gain(init, self.comm_ns, self.bytes, hideable);
        a.hidden_ns += hidden;
        a.saved_ns += saved;
        if self.adaptive {
            a.adaptive_calls += 1;
            a.adaptive_saved_ns += saved;
            p.saved(saved);
        }
    }
}

/// The adaptive policy replayed on one rank's calls: every call site (function and
/// callsite) is a [`Site`] fed the rank's timeline as it would run, overlapped calls
/// shortened by what the model says they save.
#[derive(Default)]
struct PolicyReplay {
    sites: std::collections::HashMap<(usize, u32), Site>,
    /// How much earlier than traced the rank runs, ns (the savings of the calls overlapped).
    ahead_ns: f64,
}

impl PolicyReplay {
    /// A call at `site` entering at `enter` and returning at `exit` (traced times, ns),
    /// moving `bytes` (sent and received): whether the policy overlaps it.
    fn call(&mut self, site: (usize, u32), enter: u64, exit: u64, bytes: u64) -> bool {
        let (fixed_us, per_mib_us) = DEFAULT_COST_US;
        let cost = (fixed_us + per_mib_us * bytes as f64 / (1u64 << 20) as f64) * 1e-6;
        let shift = |t: u64| (t as f64 - self.ahead_ns) * 1e-9;
        let s = self.sites.entry(site).or_default();
        let now = shift(enter);
        let overlap = s.enter(now, cost);
        s.took(
            if overlap {
                Mode::Overlapped
            } else {
                Mode::Blocking
            },
            now,
        );
        if !overlap {
            s.left(shift(exit));
        }
        overlap
    }

    /// An overlapped call's saving, once known.
    fn saved(&mut self, saved_ns: f64) {
        self.ahead_ns += saved_ns;
    }
}

/// Predicts T-NBC's gain for `run`.
///
/// With `reads` (from an access trace), the computation that can hide a call is only what
/// runs before its data's first read; every rank's traced calls must then match the run's
/// (the same count per function), or the prediction is refused.
pub fn predict(
    run: &RunDir,
    init: InitModel,
    min_bytes: u64,
    reads: Option<&FirstReads>,
) -> Result<OverlapPrediction, AnalyzeError> {
    let results = per_rank(run, |mut reader, rank| {
        let mut cursor = ReadCursor::new(reads, rank);
        let mut g = RankGain {
            rank,
            ..RankGain::default()
        };
        let (mut first, mut last) = (u64::MAX, 0u64);
        // The last overlapped call of thread 0.
        let mut pending: Option<Pending> = None;
        let mut policy = PolicyReplay::default();
        let mut names: std::collections::HashMap<u32, Option<usize>> = Default::default();
        let mut acc: Vec<FunctionGain> = OVERLAPPED
            .iter()
            .map(|f| FunctionGain {
                function: (*f).into(),
                ..FunctionGain::default()
            })
            .collect();
        while let Some(ev) = reader.next_event() {
            first = first.min(ev.t_enter);
            last = last.max(ev.t_exit);
            if ev.thread != 0 {
                continue;
            }
            if let Some(p) = pending.take() {
                p.settle(ev.t_enter, &init, &mut acc, &mut policy);
            }
            let idx = *names.entry(ev.call).or_insert_with(|| {
                let n = reader.tables().call_name(ev.call);
                OVERLAPPED.iter().position(|f| *f == n)
            });
            let Some(f) = idx else {
                continue;
            };
            let comm = ev
                .args
                .get(Slot::Comm)
                .and_then(|c| reader.tables().comms.get(&(c as u32)));
            let peers = comm.map_or(1, |c| {
                if c.kind == CommKind::Inter {
                    c.remote.len() as u32
                } else {
                    c.size
                }
            });
            // The call's place among those the access trace recorded, counted before the
            // size threshold (the root is a rank of the call's communicator).
            let is_root = f == 2
                && ev
                    .args
                    .get(Slot::Root)
                    .and_then(|r| u32::try_from(r).ok())
                    .and_then(|r| comm.map_or(Some(r), |c| c.world_rank(r)))
                    == Some(rank);
            let read = cursor.next(f, is_root);
            let v = volume::volume(OVERLAPPED[f], &ev, rank, peers);
            let bytes = if f == 2 {
                v.received.max(v.sent)
            } else {
                v.received
            };
            if bytes < min_bytes.max(1) {
                continue;
            }
            let a = &mut acc[f];
            a.calls += 1;
            a.bytes += bytes;
            a.comm_ns += ev.duration();
            // What the library's cost estimate counts: both regions of an all-to-all.
            let moved = if f == 2 { bytes } else { v.received + v.sent };
            let adaptive = policy.call((f, ev.callsite), ev.t_enter, ev.t_exit, moved);
            pending = Some(Pending {
                f,
                bytes,
                comm_ns: ev.duration(),
                exit: ev.t_exit,
                adaptive,
                read,
            });
        }
        cursor.finish()?;
        g.span_ns = last.saturating_sub(first.min(last));
        g.functions = acc.into_iter().filter(|a| a.calls > 0).collect();
        g.hidden_ns = g.functions.iter().map(|a| a.hidden_ns).sum();
        g.saved_ns = g.functions.iter().map(|a| a.saved_ns).sum();
        g.comm_ns = g.functions.iter().map(|a| a.comm_ns).sum();
        g.adaptive_saved_ns = g.functions.iter().map(|a| a.adaptive_saved_ns).sum();
        Ok(g)
    });
    let mut ranks = Vec::new();
    for (_, r) in results {
        ranks.push(r?);
    }
    let n = ranks.len().max(1) as f64;
    let least = |f: fn(&RankGain) -> f64| {
        if ranks.is_empty() {
            0.0
        } else {
            ranks.iter().map(f).fold(f64::INFINITY, f64::min)
        }
    };
    Ok(OverlapPrediction {
        init,
        min_bytes,
        min_saved_ns: least(|r| r.saved_ns),
        adaptive_min_saved_ns: least(|r| r.adaptive_saved_ns),
        mean_hidden_ns: ranks.iter().map(|r| r.hidden_ns).sum::<f64>() / n,
        span_ns: ranks.iter().map(|r| r.span_ns).max().unwrap_or(0),
        ranks,
    })
}

impl OverlapPrediction {
    /// A terminal table: per rank and function, then the summary.
    pub fn to_text(&self) -> String {
        let ms = |ns: f64| ns / 1e6;
        let percent = |saved_ns: f64| {
            if self.span_ns > 0 {
                -100.0 * saved_ns / self.span_ns as f64
            } else {
                0.0
            }
        };
        let mut out = format!(
            "T-NBC prediction ([Li 2010]'s model; T_init = {:.0} us + {:.0} us/MiB; T-NBC collective {:.2}x the traced one; calls of at least {} bytes)\n\n",
            self.init.base_ns / 1e3,
            self.init.ns_per_mib / 1e3,
            self.init.slowdown,
            self.min_bytes
        );
        out += &format!(
            "{:>5}  {:<14} {:>7} {:>10} {:>12} {:>12} {:>11} {:>10} {:>12} {:>14}\n",
            "rank",
            "function",
            "calls",
            "MiB",
            "comm ms",
            "after ms",
            "hidden ms",
            "saved ms",
            "adapt calls",
            "adapt saved ms"
        );
        for r in &self.ranks {
            for f in &r.functions {
                out += &format!(
                    "{:>5}  {:<14} {:>7} {:>10.1} {:>12.3} {:>12.3} {:>11.3} {:>10.3} {:>12} {:>14.3}\n",
                    r.rank,
                    f.function,
                    f.calls,
                    f.bytes as f64 / (1u64 << 20) as f64,
                    ms(f.comm_ns as f64),
                    ms(f.after_ns as f64),
                    ms(f.hidden_ns),
                    ms(f.saved_ns),
                    f.adaptive_calls,
                    ms(f.adaptive_saved_ns)
                );
            }
        }
        let comm: u64 = self.ranks.iter().map(|r| r.comm_ns).max().unwrap_or(0);
        out += &format!(
            "\ntraced time in these collectives: {:.3} ms (slowest rank); overlapped with computation under T-NBC: {:.3} ms per rank (mean); saved: {:.3} ms (least over ranks) of a {:.3} ms run: the run would change by about {:+.1}% ({})\n",
            ms(comm as f64),
            ms(self.mean_hidden_ns),
            ms(self.min_saved_ns),
            ms(self.span_ns as f64),
            percent(self.min_saved_ns),
            if self.ranks.iter().flat_map(|r| &r.functions).any(|f| f.read_bounded > 0) {
                "only the computation before each call's data is first read counts, from the access trace"
            } else {
                "a bound: `--access` with an access trace counts only the computation before the data is read"
            }
        );
        out += &format!(
            "under the adaptive policy (the library's default: each call site first timed blocking, overlapped only where the model and then its own measurements say it pays): saved {:.3} ms: about {:+.1}%\n",
            ms(self.adaptive_min_saved_ns),
            percent(self.adaptive_min_saved_ns)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiscope_trace::Slot;

    const INIT: InitModel = InitModel {
        base_ns: 100.0,
        ns_per_mib: 0.0,
        slowdown: 1.0,
    };

    #[test]
    fn long_computation_hides_all_but_the_initialization() {
        let (hidden, saved) = call_gain(&INIT, 1000, 1 << 20, 5000);
        assert_eq!((hidden, saved), (900.0, 900.0));
    }

    #[test]
    fn short_computation_hides_itself_only() {
        let (hidden, saved) = call_gain(&INIT, 1000, 1 << 20, 300);
        assert_eq!((hidden, saved), (300.0, 300.0));
        // No computation: only the initialization is paid on top.
        assert_eq!(call_gain(&INIT, 1000, 1 << 20, 0), (0.0, 0.0));
    }

    /// A 2-rank run: `iters` MPI_Alltoall calls of 1 MiB per peer taking `comm_ns`, each
    /// followed by `after_ns` of computation and a cheap MPI call (the next one completes
    /// the collective).
    fn alltoall_run(iters: u64, comm_ns: u64, after_ns: u64) -> OverlapPrediction {
        let dir = tempfile::tempdir().expect("a temporary directory");
        crate::testutil::write_run(dir.path(), 2, |_, r| {
            let mut t = 1_000;
            for _ in 0..iters {
                let args = [(Slot::Bytes, 1 << 20), (Slot::RecvBytes, 1 << 20)];
                r.call("MPI_Alltoall", t, t + comm_ns, &args, &[]);
                t += comm_ns + after_ns;
                r.call("MPI_Comm_rank", t, t + 100, &[], &[]);
                t += 100;
            }
        });
        let run = RunDir::open(dir.path()).expect("a run");
        predict(&run, INIT, 1, None).expect("a prediction")
    }

    #[test]
    fn the_adaptive_policy_overlaps_where_computation_hides_the_collective() {
        // 1 ms collectives, 3 ms of computation: the model lets the site probe, the probe
        // finds the gain, the site overlaps every call after the first few.
        let p = alltoall_run(200, 1_000_000, 3_000_000);
        let f = &p.ranks[0].functions[0];
        assert!(f.adaptive_calls >= 185, "{f:?}");
        assert!(
            f.adaptive_calls < 200,
            "the first calls run blocking: {f:?}"
        );
        assert!(p.adaptive_min_saved_ns > 0.9 * p.min_saved_ns, "{p:?}");
        assert!(p.adaptive_min_saved_ns < p.min_saved_ns);
        assert!(p.to_text().contains("under the adaptive policy"));
    }

    #[test]
    fn the_adaptive_policy_leaves_out_what_nothing_hides() {
        // No computation after the collective: always-overlap saves nothing, and the
        // adaptive policy never overlaps a call (the model rules the site out).
        let p = alltoall_run(300, 1_000_000, 0);
        let f = &p.ranks[0].functions[0];
        assert_eq!(f.adaptive_calls, 0, "{f:?}");
        assert_eq!(p.adaptive_min_saved_ns, 0.0);
        // 20 us of computation against a collective T-NBC makes 3x slower: overlapping
        // every call loses, the adaptive policy loses at most its probes.
        let dir = tempfile::tempdir().expect("a temporary directory");
        crate::testutil::write_run(dir.path(), 2, |_, r| {
            let mut t = 1_000;
            for _ in 0..300 {
                let args = [(Slot::Bytes, 1 << 20), (Slot::RecvBytes, 1 << 20)];
                r.call("MPI_Alltoall", t, t + 1_000_000, &args, &[]);
                t += 1_020_000;
            }
        });
        let run = RunDir::open(dir.path()).expect("a run");
        let slow = InitModel {
            slowdown: 3.0,
            ..INIT
        };
        let p = predict(&run, slow, 1, None).expect("a prediction");
        assert!(p.min_saved_ns < -100e6, "{}", p.min_saved_ns);
        assert!(
            p.adaptive_min_saved_ns >= 0.0,
            "{}",
            p.adaptive_min_saved_ns
        );
    }

    #[test]
    fn a_slower_collective_can_lose() {
        let slow = InitModel {
            slowdown: 3.0,
            ..INIT
        };
        // 3000 ns of T-NBC collective, 500 ns of computation: 2600 ns exposed for 1000.
        let (hidden, saved) = call_gain(&slow, 1000, 1 << 20, 500);
        assert_eq!(hidden, 500.0);
        assert_eq!(saved, -1500.0);
        let per_mib = InitModel {
            ns_per_mib: 1000.0,
            ..INIT
        };
        assert_eq!(per_mib.init_ns(2 << 20), 2100.0);
    }
}
