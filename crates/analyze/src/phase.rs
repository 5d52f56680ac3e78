//! Phases of a run (`--phase loop|all`): where each rank's main loop lies, so that an
//! analysis can leave set-up and tear-down out.
//!
//! A rank's main loop is found in its loop structure ([`crate::structure`]): its
//! communication calls and the compute bursts between them become symbols, cut into
//! approximate loops ([`mpiscope_structure::approx`], iterations that differ slightly, as a
//! time step that computes energies every tenth step), and the loop covering the most
//! symbols is the main one, if it covers a tenth of them or more. A loop is cut at its anchor,
//! the call every iteration starts with, and that call may come late in a time step (a
//! collective every tenth step): the steps before the first anchor that repeat the end of
//! the first iteration, symbol for symbol, are the loop's too. It spans from the entry of the
//! first call of its first iteration to the exit of the last call of its last: each rank has
//! its own range (ranks enter and leave the loop at different times).
//!
//! A rank whose calls hold no such loop, but one of whose compute bursts holds half or more
//! of the time between its first and last communication call, has a loop that makes no MPI
//! call (a code run on one rank, whose time step needs no exchange): its main loop is that
//! burst, with the calls before and after it. Any other rank has no main loop, and resolving
//! the phase is an error naming the run and the rank, never silently the whole run.
//!
//! The search reads each rank once (ranks in parallel) and costs what `mpiscope structure
//! --approximate` costs on it.

use mpiscope_structure::approx::{self, Part};
use mpiscope_trace::RunDir;

use crate::structure::{rank_symbols, Stamp};
pub use crate::window::{Phase, RangeKind, RankRange, RankWindows, Resolved, Window};
use crate::AnalyzeError;

/// A loop is the main one when it covers at least this share of the rank's symbols.
pub const MIN_LOOP_SHARE: f64 = 0.1;

/// A burst is a loop without calls when it holds at least this share of the time between
/// the rank's first and last communication call.
pub const MIN_BURST_SHARE: f64 = 0.5;

/// Where `phase` lies on each rank of `run`. An error when a rank has no main loop, or its
/// file cannot be read.
pub fn resolve(run: &RunDir, phase: Phase) -> Result<Resolved, AnalyzeError> {
    if phase == Phase::All {
        return Ok(Resolved::default());
    }
    let results = crate::parallel::per_rank(run, |mut rd, rank| {
        let (seq, stamps, calls) = rank_symbols(&mut rd, rank);
        Ok(main_loop(rank, &seq, &stamps, &|s| {
            calls.get(s as usize).copied().unwrap_or(false)
        }))
    });
    let mut ranges = Vec::with_capacity(results.len());
    for (_, r) in results {
        ranges.push(r?.map_err(|reason| AnalyzeError::NoMainLoop {
            dir: run.path.display().to_string(),
            reason,
        })?);
    }
    Ok(Resolved { phase, ranges })
}

/// The main loop of one rank's symbols (`seq`, each with the call it is or precedes in
/// `stamps`; `is_call` tells calls from bursts), or why there is none.
fn main_loop(
    rank: u32,
    seq: &[(u32, f64)],
    stamps: &[Stamp],
    is_call: &dyn Fn(u32) -> bool,
) -> Result<RankRange, String> {
    let calls = seq.iter().filter(|x| is_call(x.0)).count();
    if calls == 0 {
        return Err(format!(
            "rank {rank} makes no communication call (point-to-point, collective, completion \
             or probe)"
        ));
    }
    let parts = approx::approximate(seq, is_call, &approx::Options::default());
    // The longest loop: (first symbol, symbols, iterations, anchor).
    let mut best: Option<(usize, usize, u64, u32)> = None;
    let mut at = 0usize;
    for p in &parts {
        let n = p.expanded_len() as usize;
        if let Part::Loop(l) = p {
            if best.is_none_or(|b| n > b.1) {
                best = Some((at, n, l.count, l.anchor));
            }
        }
        at += n;
    }
    if at != seq.len() {
        // The loops are lossless (the structure crate's invariant): never seen.
        return Err(format!(
            "rank {rank}: the loop search covered {at} of {} symbols",
            seq.len()
        ));
    }
    let share = |n: usize| n as f64 / seq.len() as f64;
    if let Some((from, n, count, anchor)) = best.filter(|b| share(b.1) >= MIN_LOOP_SHARE) {
        let lead = leading_part(seq, from, n, anchor);
        let (from, n) = (from - lead, n + lead);
        let body = &stamps[from..from + n];
        let sym = &seq[from..from + n];
        let first = sym.iter().position(|x| is_call(x.0));
        let last = sym.iter().rposition(|x| is_call(x.0));
        if let (Some(f), Some(l)) = (first, last) {
            return Ok(range(
                rank,
                RangeKind::Calls,
                body[f],
                body[l],
                count,
                n,
                share(n),
            ));
        }
    }
    if let Some(r) = burst_loop(rank, seq, stamps, is_call) {
        return Ok(r);
    }
    Err(match best {
        Some((_, n, _, _)) => format!(
            "rank {rank}: its longest loop holds {:.1}% of its {} communication calls and \
             compute bursts (a main loop holds {:.0}% or more), and no compute burst holds \
             {:.0}% of its time between communication calls",
            100.0 * share(n),
            seq.len(),
            100.0 * MIN_LOOP_SHARE,
            100.0 * MIN_BURST_SHARE
        ),
        None => format!(
            "rank {rank}: its {calls} communication calls repeat no pattern {} times or more, \
             and no compute burst holds {:.0}% of its time between communication calls",
            approx::Options::default().min_iterations,
            100.0 * MIN_BURST_SHARE
        ),
    })
}

/// How many symbols before the loop at `from` (`n` symbols, iterations starting with
/// `anchor`) repeat the end of its first iteration, symbol for symbol: the part of a first
/// iteration that came before the first anchor (fewer symbols than an iteration).
fn leading_part(seq: &[(u32, f64)], from: usize, n: usize, anchor: u32) -> usize {
    let loop_ = &seq[from..from + n];
    let len = loop_
        .iter()
        .skip(1)
        .position(|x| x.0 == anchor)
        .map_or(n, |p| p + 1);
    let first = &loop_[..len];
    first
        .iter()
        .rev()
        .zip(seq[..from].iter().rev())
        .take(len.saturating_sub(1))
        .take_while(|(a, b)| a.0 == b.0)
        .count()
}

/// The loop without calls of a rank: its longest compute burst, with the calls around it,
/// when it holds [`MIN_BURST_SHARE`] of the time from the first call to the last.
fn burst_loop(
    rank: u32,
    seq: &[(u32, f64)],
    stamps: &[Stamp],
    is_call: &dyn Fn(u32) -> bool,
) -> Option<RankRange> {
    let first = stamps[seq.iter().position(|x| is_call(x.0))?];
    let last = stamps[seq.iter().rposition(|x| is_call(x.0))?];
    let span = last.exit.saturating_sub(first.enter);
    // A burst is followed by its call; the call before it is the previous call symbol.
    let (i, _) = seq
        .iter()
        .enumerate()
        .filter(|(i, x)| !is_call(x.0) && *i > 0)
        .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?;
    let before = stamps[..i]
        .iter()
        .zip(&seq[..i])
        .rev()
        .find(|(_, x)| is_call(x.0))?
        .0;
    let after = stamps[i];
    let gap = after.enter.saturating_sub(before.exit);
    (span > 0 && gap as f64 >= MIN_BURST_SHARE * span as f64).then(|| {
        range(
            rank,
            RangeKind::Burst,
            *before,
            after,
            1,
            3,
            3.0 / seq.len() as f64,
        )
    })
}

fn range(
    rank: u32,
    kind: RangeKind,
    first: Stamp,
    last: Stamp,
    iterations: u64,
    symbols: usize,
    share: f64,
) -> RankRange {
    RankRange {
        rank,
        kind,
        start_ns: first.enter,
        end_ns: last.exit,
        last_enter_ns: last.enter,
        first_event: first.event,
        last_event: last.event,
        iterations,
        symbols: symbols as u64,
        symbol_share: share,
    }
}

#[cfg(test)]
mod tests;
