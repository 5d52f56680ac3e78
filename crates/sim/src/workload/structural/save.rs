//! Saving a structural form from a run directory. Exact (format 1): every distinct call (all
//! its recorded arguments) is a symbol and the symbols are folded losslessly. Approximate
//! (format 2): a call's shape (every argument but its message sizes) is its symbol and its
//! sizes follow it as values of symbols of their own, like its times; the symbols are folded
//! into approximate loops ([`mpiscope_structure::approx`]), whose differences keep the
//! sequence of calls exact: only times and sizes become means, per position of a loop body.

use std::collections::HashMap;

use mpiscope_structure::approx::{self, Part};
use mpiscope_structure::Node;
use mpiscope_trace::RunDir;

use super::{
    is_size, map_requests, saved_call, CommDef, SavedCall, StructuralRank, StructuralRun,
    WorkloadError, FORMAT, FORMAT_APPROXIMATE,
};

/// Computations per loop body kept iteration by iteration: the time a slow iteration
/// costs one rank is what others wait for, and means alone hide it.
const SERIES: usize = 64;

/// The structural form of every rank of `run` (ranks read one after the other): exact, or
/// with `approximate` loops (see the module's documentation).
pub fn save(
    run: &RunDir,
    approximate: Option<&approx::Options>,
) -> Result<StructuralRun, WorkloadError> {
    let ranks = (0..run.ranks())
        .map(|r| save_rank(run, r, approximate))
        .collect::<Result<Vec<_>, _>>()?;
    let format = if approximate.is_some() {
        FORMAT_APPROXIMATE
    } else {
        FORMAT
    };
    Ok(StructuralRun {
        format: format.into(),
        ranks,
    })
}

/// A rank's calls and symbols as they are read.
#[derive(Default)]
struct Symbols {
    ids: HashMap<SavedCall, u32>,
    calls: Vec<SavedCall>,
    /// Format 2: each call's first symbol; which symbols are calls.
    first: Vec<u32>,
    is_call: Vec<bool>,
    seq: Vec<(u32, f64)>,
    folder: mpiscope_structure::fold::Folder,
}

impl Symbols {
    /// Adds a call after a computation of `gap` ns, lasting `duration` ns.
    fn push(&mut self, mut call: SavedCall, gap: f64, duration: f64, approximate: bool) {
        let next = self.calls.len() as u32;
        if !approximate {
            let calls = &mut self.calls;
            let id = *self.ids.entry(call).or_insert_with_key(|c| {
                calls.push(c.clone());
                next
            });
            self.folder.push(2 * id, gap);
            self.folder.push(2 * id + 1, duration);
            return;
        }
        // The call's shape (sizes apart) is its symbol; its sizes follow as values.
        let sizes: Vec<i64> = call
            .args
            .iter_mut()
            .filter(|(s, _)| is_size(*s))
            .map(|(_, v)| std::mem::take(v))
            .collect();
        let (calls, first, is_call) = (&mut self.calls, &mut self.first, &mut self.is_call);
        let id = *self.ids.entry(call).or_insert_with_key(|c| {
            calls.push(c.clone());
            first.push(is_call.len() as u32);
            is_call.extend([false, true]);
            is_call.extend(sizes.iter().map(|_| false));
            next
        });
        let f = self.first[id as usize];
        self.seq.push((f, gap));
        self.seq.push((f + 1, duration));
        for (j, &v) in sizes.iter().enumerate() {
            self.seq.push((f + 2 + j as u32, v as f64));
        }
    }

    /// The tree (exact) or the parts (approximate).
    fn finish(
        self,
        approximate: Option<&approx::Options>,
    ) -> (Vec<SavedCall>, Vec<Node>, Vec<Part>) {
        match approximate {
            None => (self.calls, self.folder.finish(), Vec::new()),
            Some(o) => {
                let is_call = &self.is_call;
                let calls_only = |s: u32| is_call.get(s as usize).copied().unwrap_or(false);
                // A computation is the first symbol of its call's.
                let first = &self.first;
                let computations = |s: u32| first.binary_search(&s).is_ok();
                let o = approx::Options {
                    series: o.series.max(SERIES),
                    ..*o
                };
                let parts =
                    approx::approximate_with_series(&self.seq, &calls_only, &computations, &o);
                (self.calls, Vec::new(), parts)
            }
        }
    }
}

/// The structural form of rank `r`.
fn save_rank(
    run: &RunDir,
    r: u32,
    approximate: Option<&approx::Options>,
) -> Result<StructuralRank, WorkloadError> {
    let io = |e: &dyn std::fmt::Display| WorkloadError::Io {
        path: run.path.display().to_string(),
        message: e.to_string(),
    };
    let mut reader = run.open_rank(r).map_err(|e| io(&e))?;
    // Bursts with a recorded CPU time are saved as that (the replay of the trace takes them
    // so); the form says so, with the traced run's busy cores.
    let cpu_bursts = reader
        .info()
        .and_then(|i| i.options.get("cpu_time_s"))
        .is_some_and(|v| !v.is_null())
        .then(|| {
            crate::workload::trace::traced_busy_cores(run)
                .get(r as usize)
                .copied()
                .unwrap_or(1)
        });
    let mut symbols = Symbols::default();
    let mut base = 0i64;
    let mut prev_exit: Option<u64> = None;
    let mut events = 0u64;
    // Events of every thread read so far (numbers events in errors).
    let mut read = 0u64;
    while let Some(mut ev) = reader.next_event() {
        read += 1;
        // Calls still in progress when the record ended never returned: left out.
        if ev.unfinished {
            continue;
        }
        if ev.thread != 0 {
            let name = reader.tables().call_name(ev.call).into_owned();
            if crate::workload::threads::is_replayed(&name) {
                return Err(crate::workload::threads::several_threads(
                    &mut reader,
                    r,
                    read,
                    &ev,
                    &name,
                ));
            }
            continue;
        }
        events += 1;
        let name = reader.tables().call_name(ev.call).into_owned();
        map_requests(&name, &mut ev, &mut base, true);
        let mut gap = prev_exit.map_or(0, |p| ev.t_enter.saturating_sub(p));
        if cpu_bursts.is_some() {
            gap = ev.cpu_ns.map_or(gap, |c| c.min(gap));
        }
        symbols.push(
            saved_call(&name, &ev),
            gap as f64,
            ev.duration() as f64,
            approximate.is_some(),
        );
        prev_exit = Some(ev.t_exit);
    }
    if let Some(e) = reader.stopped().filter(|e| !e.is_truncation()) {
        return Err(io(e));
    }
    let t = reader.tables();
    let mut comms: Vec<CommDef> = t.comms.values().cloned().collect();
    comms.sort_by_key(|c| c.id);
    let mut callsites: Vec<(u32, Vec<(String, u64)>)> = t
        .callsites
        .values()
        .map(|c| {
            let frames = c
                .frames
                .iter()
                .map(|f| {
                    let path = t.modules.get(&f.module).map(|m| m.path.clone());
                    (path.unwrap_or_default(), f.offset)
                })
                .collect();
            (c.id, frames)
        })
        .collect();
    callsites.sort_by_key(|c| c.0);
    let (calls, tree, parts) = symbols.finish(approximate);
    Ok(StructuralRank {
        rank: r,
        events,
        calls,
        tree,
        parts,
        comms,
        callsites,
        cpu_bursts,
    })
}
