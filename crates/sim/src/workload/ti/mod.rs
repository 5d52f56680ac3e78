//! SimGrid time-independent traces (`smpirun -trace-ti`, replayed by `smpirun -replay`).
//!
//! An index file lists one trace file per rank (or, with a single line, one shared file whose
//! lines start with the rank). Each line is `<rank> <action> <args>`; sizes are counts of a
//! datatype (`MPI_BYTE` unless `init` has an argument, then `MPI_DOUBLE`, or an explicit
//! datatype id), computations are in flops. Every action SimGrid 3.32 replays is read:
//! `init`, `finalize`, `compute`, `sleep`, `location`, `send`, `isend`, `recv`, `irecv`,
//! `test`, `wait`, `waitall`, `sendRecv`, `barrier`, `bcast`, `reduce`, `allreduce`,
//! `alltoall`, `alltoallv`, `gather`, `gatherv`, `scatter`, `scatterv`, `allgather`,
//! `allgatherv`, `reducescatter`, `scan`, `exscan`, `comm_size`, `comm_split`, `comm_dup`.
//! Non-blocking requests are found again by `(source, destination, tag)`, oldest first, as
//! SimGrid does; a successful `test` leaves a null request in its place, which the next
//! `wait` or `test` of the key takes without doing anything (SimGrid's "the comm might have
//! been caught by an MPI_test"). What a `test` costs is the engine's (`smpi/test`). Unlike SimGrid 3.32, a last line without a newline is not dropped.
//!
//! Every line must be one of these actions with the fields it needs: flops, seconds,
//! sizes and counts finite and non-negative (a receive's negative size means "probe for
//! it", as in SimGrid), ranks among the trace's ranks, send tags non-negative. A line that
//! is not (garbage, an unknown action, a missing or bad field, a line of another rank in a
//! per-rank file, a line after `finalize`) is an error naming the file and the line, or,
//! with [`TiOptions::lenient`], skipped and counted in a [`SkippedLines`].
//!
//! Files are read in chunks and closed in between, so any number of ranks can be replayed
//! without holding a file open per rank (`source.rs`). Each line's fields are checked by
//! `fields.rs` and turned into actions by `parse.rs`; this file reads the index, splits a
//! shared file by rank and hands each rank's actions to the engine.

mod fields;
mod parse;
mod source;

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use self::fields::syntax;
use self::parse::Parser;
use self::source::{LineSource, Source};
use super::{Action, Outcome, RankWorkload, WorkloadError};

/// Options for reading TI traces.
#[derive(Debug, Clone, Default)]
pub struct TiOptions {
    /// Skip the lines that are not valid actions of their rank, counting them in this log
    /// (shared by the ranks, and by several readings of one trace); `None`: such a line is
    /// an error.
    pub lenient: Option<SkippedLines>,
}

/// The lines a lenient reading skipped (see [`TiOptions::lenient`]): a handle shared by
/// the ranks' readers. A line skipped by several readings of the same trace (the points of
/// a study) counts once.
#[derive(Debug, Clone, Default)]
pub struct SkippedLines(Arc<Mutex<Skips>>);

#[derive(Debug, Default)]
struct Skips {
    /// (file, line) of every line skipped.
    seen: std::collections::BTreeSet<(String, u64)>,
    /// The first ones' messages, in the order they were met.
    first: Vec<String>,
}

impl SkippedLines {
    /// How many messages [`SkippedLines::first`] keeps.
    pub const KEPT: usize = 5;

    /// Records a line skipped because of `error`.
    fn record(&self, error: WorkloadError) {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = match &error {
            WorkloadError::Syntax { path, line, .. } => (path.clone(), *line),
            WorkloadError::Io { path, .. }
            | WorkloadError::Open { path, .. }
            | WorkloadError::Unsupported { path, .. } => (path.clone(), 0),
        };
        if s.seen.insert(key) && s.first.len() < Self::KEPT {
            s.first.push(error.to_string());
        }
    }

    /// Lines skipped so far.
    pub fn count(&self) -> u64 {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).seen.len() as u64
    }

    /// The messages of the first lines skipped (at most [`SkippedLines::KEPT`]), each
    /// naming its file and line.
    pub fn first(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first
            .clone()
    }
}

/// One rank of a TI trace.
pub struct TiRank {
    lines: LineSource,
    parser: Parser,
    /// See [`TiOptions::lenient`].
    lenient: Option<SkippedLines>,
}

/// Reads a TI trace: one workload per rank.
pub fn load(index: &Path, options: TiOptions) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    let ipath = index.display().to_string();
    let text = std::fs::read_to_string(index).map_err(|e| WorkloadError::Io {
        path: ipath.clone(),
        message: e.to_string(),
    })?;
    let base = index.parent().unwrap_or(Path::new("."));
    let entries: Vec<(u64, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if entries.is_empty() {
        return Err(syntax(&ipath, 1, "the index lists no trace file"));
    }
    let resolve = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() || p.exists() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::new();
    if entries.len() == 1 {
        // One shared file: split its lines by rank.
        let path = resolve(entries[0].1);
        let shared = std::fs::read_to_string(&path).map_err(|e| WorkloadError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        out = split_shared(&shared, &path.display().to_string(), &options)?;
    } else {
        let n = entries.len() as u32;
        for (r, (_, p)) in entries.iter().enumerate() {
            let path = resolve(p);
            if !path.is_file() {
                return Err(WorkloadError::Io {
                    path: path.display().to_string(),
                    message: format!("trace of rank {r} (listed in {ipath}) not found"),
                });
            }
            let name = path.display().to_string();
            out.push(Box::new(TiRank::new(
                r as u32,
                n,
                Source::File {
                    path,
                    offset: 0,
                    eof: false,
                },
                VecDeque::new(),
                name,
                options.clone(),
            )));
        }
    }
    Ok(out)
}

/// Reads a TI trace held in memory, in the shared-file form (every line starts with its
/// rank); `name` is used in error messages.
pub fn from_str(
    text: &str,
    name: &str,
    options: TiOptions,
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    split_shared(text, name, &options)
}

/// One workload per rank from the lines of a shared file.
fn split_shared(
    shared: &str,
    name: &str,
    options: &TiOptions,
) -> Result<Vec<Box<dyn RankWorkload>>, WorkloadError> {
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::new();
    let mut per: BTreeMap<usize, VecDeque<(u64, String)>> = BTreeMap::new();
    for (i, line) in shared.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let first = t.split_whitespace().next().unwrap_or("");
        let Ok(r) = first.parse::<u32>() else {
            let e = syntax(
                name,
                i as u64 + 1,
                format!("`{first}` is not a rank: expected `<rank> <action> ...`"),
            );
            match &options.lenient {
                Some(log) => {
                    log.record(e);
                    continue;
                }
                None => return Err(e),
            }
        };
        let r = r as usize;
        per.entry(r)
            .or_default()
            .push_back((i as u64 + 1, t.to_owned()));
    }
    // Ranks are 0..n-1, each with lines (a typo must not make millions of empty ranks).
    if let Some((k, _)) = per.keys().enumerate().find(|&(k, &r)| k != r) {
        let (&r, lines) = per.range(k..).next().expect("a rank past the gap");
        return Err(syntax(
            name,
            lines.front().map_or(0, |l| l.0),
            format!("rank {r} appears but rank {k} has no line (ranks must be 0..N-1)"),
        ));
    }
    let per: Vec<VecDeque<(u64, String)>> = per.into_values().collect();
    let n = per.len() as u32;
    for (r, lines) in per.into_iter().enumerate() {
        out.push(Box::new(TiRank::new(
            r as u32,
            n,
            Source::Lines,
            lines,
            name.to_owned(),
            options.clone(),
        )));
    }
    Ok(out)
}

impl TiRank {
    fn new(
        rank: u32,
        size: u32,
        source: Source,
        lines: VecDeque<(u64, String)>,
        name: String,
        options: TiOptions,
    ) -> TiRank {
        TiRank {
            lines: LineSource::new(source, lines, size),
            parser: Parser::new(rank, size, name),
            lenient: options.lenient,
        }
    }
}

impl RankWorkload for TiRank {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        self.parser.outcome(last);
        loop {
            if let Some(a) = self.parser.queue.pop_front() {
                return Some(Ok(a));
            }
            if self.parser.finished {
                return None;
            }
            match self.lines.next_line() {
                Err(e) => return Some(Err(e)),
                Ok(None) => {
                    self.parser.finished = true;
                    return Some(Ok(Action::Finalize));
                }
                Ok(Some((no, line))) => {
                    if let Err(e) = self.parser.parse(no, line) {
                        if let Some(e) = self.unless_lenient(e) {
                            return Some(Err(e));
                        }
                    }
                    if self.parser.finished {
                        if let Err(e) = self.nothing_after_finalize() {
                            return Some(Err(e));
                        }
                    }
                }
            }
        }
    }
}

impl TiRank {
    /// `error` back, unless the reading is lenient: then the line is counted as skipped.
    fn unless_lenient(&self, error: WorkloadError) -> Option<WorkloadError> {
        match &self.lenient {
            Some(log) => {
                log.record(error);
                None
            }
            None => Some(error),
        }
    }

    /// After `finalize`, no line may follow (a lenient reading skips them all).
    fn nothing_after_finalize(&mut self) -> Result<(), WorkloadError> {
        while let Some((no, line)) = self.lines.next_line()? {
            let e = syntax(self.parser.name(), no, format!("`{line}` after `finalize`"));
            if let Some(e) = self.unless_lenient(e) {
                return Err(e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod strict_tests;

#[cfg(test)]
mod tests;
