//! Reading the ranks of a run on all cores: one rank file per task, each read by one thread
//! in constant memory, results in rank order.

use std::fs::File;
use std::io::BufReader;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mpiscope_trace::{RankReader, RunDir};

use crate::AnalyzeError;

/// `f(reader, rank)` for every rank file of `run`, on as many threads as cores (at most one
/// per rank), returned sorted by rank. A rank that cannot be opened gives its error.
pub fn per_rank<T: Send>(
    run: &RunDir,
    f: impl Fn(RankReader<BufReader<File>>, u32) -> Result<T, AnalyzeError> + Sync,
) -> Vec<(u32, Result<T, AnalyzeError>)> {
    let files = &run.rank_files;
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(files.len()));
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((rank, path)) = files.get(i) else {
                    break;
                };
                let r = RankReader::open(path)
                    .map_err(AnalyzeError::from)
                    .and_then(|rd| f(rd, *rank));
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((*rank, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(r, _)| *r);
    results
}
