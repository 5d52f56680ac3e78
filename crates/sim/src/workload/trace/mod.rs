//! Replay of mpiscope traces (`mpiscope trace` run directories).
//!
//! Each rank's events become actions: the time between two MPI calls becomes a computation
//! (its duration times the traced host's speed, so it scales with the simulated host's
//! speed); point-to-point calls, waits, probes and collectives keep their arguments
//! (communicators, ranks, tags, sizes, roots, per-peer counts); receives use the source and
//! tag actually matched in the traced run; tests and probes that failed in the traced run are
//! skipped (the simulated run decides when messages arrive), successful ones become waits and
//! blocking probes. Calls that only work locally (`MPI_Comm_rank`, `MPI_Wtime`, datatype
//! calls...) count as computation.
//!
//! One thread per rank is replayed, the one that initialized MPI; a communication call of
//! another thread stops the replay with an error (`threads.rs`).
//!
//! `translator.rs` turns one event into actions (`collective.rs` the arguments of a
//! collective), `callsites.rs` numbers the callsites of all ranks; this file reads the rank
//! files and feeds the translator.

mod callsites;
mod collective;
mod marks;
mod translator;

use mpiscope_trace::{RankReader, RunDir};

pub use self::callsites::Callsites;
pub use self::marks::{PhaseMarks, RankDates};
pub(crate) use self::translator::{Shared, Translator};
use super::threads::{is_replayed, rest_on_main_thread, several_threads};
use super::{Action, Outcome, RankWorkload, WorkloadError};

/// Options of a trace replay.
#[derive(Debug, Clone, Default)]
pub struct TraceOptions {
    /// Speed (flop/s) of the traced hosts: compute bursts become `seconds × speed` flops.
    /// `None`: the simulated host's own speed (bursts keep their traced durations there).
    pub traced_speed: Option<f64>,
    /// Count each message size at a callsite as a callsite of its own (the replay then
    /// reports time per callsite and size, as mpiP's message-size statistics do).
    pub callsites_by_size: bool,
    /// Read the simulated clock where each rank enters and leaves a part of its record
    /// (its main loop), without changing what is replayed.
    pub marks: Option<PhaseMarks>,
    /// Replay compute bursts for their wall time even when the trace recorded their CPU
    /// time (format 1.2): the replay of traces recorded before.
    pub wall_bursts: bool,
    /// The platform's per-core speed factors with 1, 2, ... busy cores
    /// (`mpiscope/core-efficiency`; empty: 1), for bursts replayed as CPU work
    /// ([`traced_busy_cores`]).
    pub core_efficiency: Vec<f64>,
}

/// Per rank, how many cores its host had busy in the traced run: the distinct cores its
/// host's ranks started on (the manifest's placement), or their number when a core is not
/// known. Ranks busy-poll inside MPI, so every core a rank runs on counts as busy.
pub fn traced_busy_cores(run: &RunDir) -> Vec<u32> {
    let Some(m) = &run.manifest else {
        return vec![1; run.ranks() as usize];
    };
    // Per host: the distinct cores its ranks started on, its ranks, whether a core is
    // unknown.
    let mut by_host: std::collections::BTreeMap<&str, (Vec<u32>, u32, bool)> =
        std::collections::BTreeMap::new();
    let mut host_of: Vec<Option<&str>> = vec![None; run.ranks() as usize];
    for p in &m.placement {
        let e = by_host.entry(p.host.as_str()).or_default();
        e.1 += 1;
        match p.core {
            Some(c) if !e.0.contains(&c) => e.0.push(c),
            Some(_) => {}
            None => e.2 = true,
        }
        if let Some(h) = host_of.get_mut(p.rank as usize) {
            *h = Some(p.host.as_str());
        }
    }
    host_of
        .iter()
        .map(|h| {
            h.and_then(|h| by_host.get(h)).map_or(
                1,
                |(cores, n, unknown)| {
                    if *unknown {
                        *n
                    } else {
                        cores.len() as u32
                    }
                },
            )
        })
        .collect()
}

/// The per-core speed factor of `efficiency` (indexed by busy cores - 1) with `busy` cores
/// busy, as the CPU model reads it (the last entry beyond the table, 1 without one).
pub(crate) fn efficiency_at(efficiency: &[f64], busy: u32) -> f64 {
    efficiency
        .get(busy.max(1) as usize - 1)
        .or(efficiency.last())
        .copied()
        .unwrap_or(1.0)
}

/// Reads a run directory: one workload per rank.
pub fn load(
    run: &RunDir,
    options: TraceOptions,
    host_speeds: &[f64],
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    load_with_callsites(run, options, host_speeds).map(|(w, _)| w)
}

/// As [`load`], plus the table that names the callsite ids the workloads report (filled as
/// the replay reads the traces).
pub fn load_with_callsites(
    run: &RunDir,
    options: TraceOptions,
    host_speeds: &[f64],
) -> Result<(Vec<Box<dyn RankWorkload>>, Callsites), WorkloadError> {
    let shared = Shared::new();
    let n = run.ranks();
    let busy = traced_busy_cores(run);
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::with_capacity(n as usize);
    for r in 0..n {
        let reader = run.open_rank(r).map_err(|e| WorkloadError::Io {
            path: run.path.display().to_string(),
            message: e.to_string(),
        })?;
        let speed = options
            .traced_speed
            .unwrap_or_else(|| host_speeds.get(r as usize).copied().unwrap_or(1e9));
        let mut tr = shared.translator(
            r,
            reader.path().display().to_string(),
            speed,
            options.callsites_by_size,
        );
        // The recorder says in its options whether it read the CPU clock.
        let cpu_recorded = reader
            .info()
            .and_then(|i| i.options.get("cpu_time_s"))
            .is_some_and(|v| !v.is_null());
        if cpu_recorded && !options.wall_bursts {
            let traced = busy.get(r as usize).copied().unwrap_or(1);
            tr.use_cpu_time(efficiency_at(&options.core_efficiency, traced));
        }
        let marker = options.marks.as_ref().and_then(|m| m.marker(r));
        out.push(Box::new(TraceRank { reader, tr, marker }));
    }
    Ok((out, shared.callsites))
}

struct TraceRank {
    reader: RankReader<std::io::BufReader<std::fs::File>>,
    tr: Translator,
    marker: Option<marks::Marker>,
}

impl RankWorkload for TraceRank {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        if let Some(m) = &mut self.marker {
            m.outcome(last);
        }
        loop {
            if let Some(a) = self.tr.queue.pop_front() {
                if let Some(m) = &mut self.marker {
                    m.handing(&a);
                }
                return Some(Ok(a));
            }
            if self.tr.ended {
                return None;
            }
            let Some(ev) = self.reader.next_event() else {
                if let Some(e) = self.reader.stopped() {
                    if !e.is_truncation() {
                        return Some(Err(WorkloadError::Io {
                            path: self.reader.path().display().to_string(),
                            message: e.to_string(),
                        }));
                    }
                }
                self.tr.ended = true;
                if self.marker.as_mut().is_some_and(|m| m.leaves_at_end()) {
                    self.tr.queue.push_back(Action::Clock);
                    self.tr.queue.push_back(Action::Finalize);
                    continue;
                }
                return Some(Ok(Action::Finalize));
            };
            if ev.thread != 0 {
                let name = self.reader.tables().call_name(ev.call);
                if is_replayed(&name) {
                    let name = name.into_owned();
                    return Some(Err(several_threads(
                        &mut self.reader,
                        self.tr.rank,
                        self.tr.events + 1,
                        &ev,
                        &name,
                    )));
                }
                self.tr.events += 1;
                continue;
            }
            if ev.unfinished {
                // A call the rank was still inside when its record ended (a signal, a
                // hang): it never returned, so the replay ends the rank before it.
                self.tr.events += 1;
                continue;
            }
            let name = self.reader.tables().call_name(ev.call).into_owned();
            let queued = self.tr.queue.len();
            let (leaves, enters) = match &mut self.marker {
                Some(m) => (m.leaves_before(ev.t_enter), m.enters_at(ev.t_enter)),
                None => (false, false),
            };
            if leaves {
                self.tr.queue.push_back(Action::Clock);
            }
            if let Err(e) = self.tr.event(self.reader.tables(), &name, &ev) {
                return Some(Err(e));
            }
            if enters {
                // After the computation that precedes the call, if there is one.
                let at = queued
                    + usize::from(matches!(
                        self.tr.queue.get(queued),
                        Some(Action::Compute { .. })
                    ));
                self.tr.queue.insert(at, Action::Clock);
            }
            if self.tr.ended {
                // Other threads' blocks may follow the main thread's MPI_Finalize.
                let (reader, rank) = (&mut self.reader, self.tr.rank);
                if let Err(e) = rest_on_main_thread(reader, rank, &mut self.tr.events) {
                    return Some(Err(e));
                }
            }
        }
    }
}
