//! Saving a structural form from a run directory. Exact (format 1): every distinct call (all
//! its recorded arguments) is a symbol and the symbols are folded losslessly. Approximate
//! (format 2): a call's shape (every argument but its message sizes) is its symbol and its
//! sizes follow it as values of symbols of their own, like its times; the symbols are folded
//! into approximate loops ([`mpiscope_structure::approx`]), whose differences keep the
//! sequence of calls exact: only times and sizes become means, per position of a loop body.

use std::collections::HashMap;

use mpiscope_structure::approx;
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
    let mut ranks = Vec::new();
    for r in 0..run.ranks() {
        let io = |e: &dyn std::fmt::Display| WorkloadError::Io {
            path: run.path.display().to_string(),
            message: e.to_string(),
        };
        let mut reader = run.open_rank(r).map_err(|e| io(&e))?;
        let mut ids: HashMap<SavedCall, u32> = HashMap::new();
        let mut calls = Vec::new();
        // Format 2: each call's first symbol; which symbols are calls.
        let mut first: Vec<u32> = Vec::new();
        let mut is_call: Vec<bool> = Vec::new();
        let mut seq: Vec<(u32, f64)> = Vec::new();
        let mut folder = mpiscope_structure::fold::Folder::new();
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
            let mut call = saved_call(&name, &ev);
            let gap = prev_exit.map_or(0, |p| ev.t_enter.saturating_sub(p));
            if approximate.is_none() {
                let next = calls.len() as u32;
                let id = *ids.entry(call).or_insert_with_key(|c| {
                    calls.push(c.clone());
                    next
                });
                folder.push(2 * id, gap as f64);
                folder.push(2 * id + 1, ev.duration() as f64);
            } else {
                // The call's shape (sizes apart) is its symbol; its sizes follow as values.
                let sizes: Vec<i64> = call
                    .args
                    .iter_mut()
                    .filter(|(s, _)| is_size(*s))
                    .map(|(_, v)| std::mem::take(v))
                    .collect();
                let next = calls.len() as u32;
                let id = *ids.entry(call).or_insert_with_key(|c| {
                    calls.push(c.clone());
                    first.push(is_call.len() as u32);
                    is_call.extend([false, true]);
                    is_call.extend(sizes.iter().map(|_| false));
                    next
                });
                let f = first[id as usize];
                seq.push((f, gap as f64));
                seq.push((f + 1, ev.duration() as f64));
                for (j, &v) in sizes.iter().enumerate() {
                    seq.push((f + 2 + j as u32, v as f64));
                }
            }
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
        let (tree, parts) = match approximate {
            None => (folder.finish(), Vec::new()),
            Some(o) => {
                let calls_only = |s: u32| is_call.get(s as usize).copied().unwrap_or(false);
                // A computation is the first symbol of its call's.
                let computations = |s: u32| first.binary_search(&s).is_ok();
                let o = approx::Options {
                    series: o.series.max(SERIES),
                    ..*o
                };
                let parts = approx::approximate_with_series(&seq, &calls_only, &computations, &o);
                (Vec::new(), parts)
            }
        };
        ranks.push(StructuralRank {
            rank: r,
            events,
            calls,
            tree,
            parts,
            comms,
            callsites,
        });
    }
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
