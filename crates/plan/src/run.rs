//! Running a study: this process's share of the points, in parallel, resumable.
//!
//! Every finished point is a file `points/point-NNNNN.json` in the output directory holding
//! its axis values, its exact configuration, the command that reruns it alone, a key (a hash
//! of what determines the result) and its measures. A point whose file exists with the same
//! key is not run again, so an interrupted study resumes where it stopped and a changed
//! study reruns only the points it changed. Under `mpirun` (or `srun`) each process takes
//! the points whose index modulo the number of processes is its rank: the launcher is the
//! distributed engine, and processes share nothing but the output directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::point::{Measure, PointConfig, WorkloadRunner};
use crate::study::{value_text, Point, Study};
use crate::PlanError;

/// Which points this process runs: those with `index % size == rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// This process.
    pub rank: usize,
    /// Processes.
    pub size: usize,
}

impl Share {
    /// Every point.
    pub const ALL: Share = Share { rank: 0, size: 1 };

    /// The share a launcher gives this process: Open MPI (`OMPI_COMM_WORLD_RANK`/`_SIZE`),
    /// MPICH's Hydra (`PMI_RANK`/`PMI_SIZE`) or Slurm's `srun` (`SLURM_PROCID`/`SLURM_NTASKS`);
    /// every point when none is set.
    pub fn from_launcher(env: impl Fn(&str) -> Option<String>) -> Share {
        for (r, s) in [
            ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
            ("PMI_RANK", "PMI_SIZE"),
            ("SLURM_PROCID", "SLURM_NTASKS"),
        ] {
            let num = |k: &str| env(k).and_then(|v| v.trim().parse::<usize>().ok());
            if let (Some(rank), Some(size)) = (num(r), num(s)) {
                if size >= 1 && rank < size {
                    return Share { rank, size };
                }
            }
        }
        Share::ALL
    }

    /// Whether this process runs point `index`.
    pub fn owns(&self, index: usize) -> bool {
        index % self.size == self.rank
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory (point files, results, figures).
    pub out: PathBuf,
    /// Points simulated at once.
    pub threads: usize,
    /// This process's share.
    pub share: Share,
    /// Run only this point.
    pub only: Option<usize>,
    /// The command that runs the study (recorded per point, with `--point N`).
    pub command: String,
}

/// A finished point, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    /// The study's name.
    pub study: String,
    /// Point index.
    pub point: usize,
    /// Hash of what determines the result (workload, configuration).
    pub key: String,
    /// Axis name and value, in axis order.
    pub settings: Vec<(String, String)>,
    /// One-at-a-time: the axis varied here.
    pub varied: Option<String>,
    /// The exact configuration.
    pub config: serde_json::Value,
    /// The command that reruns this point alone.
    pub command: String,
    /// The simulated configurations and their results.
    pub measures: Vec<Measure>,
}

/// Progress of a run, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Points of this share finished (including those found done).
    pub done: usize,
    /// Points of this share.
    pub total: usize,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// Points simulated now.
    pub simulated: usize,
    /// Points found finished in the output directory.
    pub reused: usize,
    /// Points that failed, with why.
    pub failed: Vec<(usize, String)>,
}

/// The file of point `index`.
pub fn point_path(out: &Path, index: usize) -> PathBuf {
    out.join("points").join(format!("point-{index:05}.json"))
}

/// FNV-1a, 64 bits: a stable hash (the standard library's is not stable across releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The record of `point` without measures, and its key.
fn describe(study: &Study, point: &Point, command: &str) -> Result<PointRecord, PlanError> {
    let config = PointConfig::of(study, point)?;
    let config = serde_json::to_value(&config).map_err(|e| PlanError::Workload(e.to_string()))?;
    let key_text = format!("{}\n{config}", workload_fingerprint(study));
    Ok(PointRecord {
        study: study.name.clone(),
        point: point.index,
        key: format!("{:016x}", fnv1a(key_text.as_bytes())),
        settings: study
            .axes
            .iter()
            .zip(&point.values)
            .map(|(a, v)| (a.name.clone(), value_text(v)))
            .collect(),
        varied: point.varied.map(|i| study.axes[i].name.clone()),
        config,
        command: format!("{command} --point {}", point.index),
        measures: Vec::new(),
    })
}

/// The workload's path and the contents of its main file (the HPL.dat, the run's manifest,
/// the structural form, the TI index): a re-recorded trace or an edited HPL.dat invalidates
/// finished points.
fn workload_fingerprint(study: &Study) -> String {
    use crate::study::WorkloadSpec;
    let (path, main) = match &study.workload {
        None => return "no workload".into(),
        Some(WorkloadSpec::Hpl(p)) => (p, p.clone()),
        Some(WorkloadSpec::Ti(p)) => (p, p.clone()),
        Some(WorkloadSpec::Trace(p)) if p.is_dir() => (p, p.join("manifest.json")),
        Some(WorkloadSpec::Trace(p)) => (p, p.clone()),
    };
    let contents = std::fs::read(&main).unwrap_or_default();
    format!("{:?} {}", study.workload, fnv1a(&contents)) + &format!(" {}", path.display())
}

/// Reads the record of a finished point if it matches `key`.
pub fn finished(out: &Path, index: usize, key: &str) -> Option<PointRecord> {
    let mut f = mpiscope_files::open_regular(&point_path(out, index)).ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut f, &mut text).ok()?;
    let r: PointRecord = serde_json::from_str(&text).ok()?;
    (r.key == key && r.point == index).then_some(r)
}

/// Writes `bytes` to `path` (creating its directory) through a temporary file and a
/// rename, so readers (other processes of the same study) never see half a file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), PlanError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| PlanError::Io {
            path: dir.display().to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(mpiscope_files::write_atomic(path, bytes)?)
}

/// Runs this process's share of `study`'s points with `runner`, skipping finished ones.
pub fn run(
    study: &Study,
    runner: &dyn WorkloadRunner,
    options: &RunOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<RunSummary, PlanError> {
    let points: Vec<Point> = study
        .points()
        .into_iter()
        .filter(|p| options.share.owns(p.index))
        .filter(|p| options.only.is_none_or(|i| i == p.index))
        .collect();
    if let Some(i) = options.only {
        if points.is_empty() {
            return Err(PlanError::Study {
                path: study.path.display().to_string(),
                message: format!(
                    "--point {i}: no such point in this share ({} points)",
                    study.points().len()
                ),
            });
        }
    }
    let mut todo = Vec::new();
    let mut summary = RunSummary::default();
    for p in &points {
        let record = describe(study, p, &options.command)?;
        if options.only.is_none() && finished(&options.out, p.index, &record.key).is_some() {
            summary.reused += 1;
        } else {
            todo.push((p.clone(), record));
        }
    }
    let total = points.len();
    let done = AtomicUsize::new(summary.reused);
    progress(Progress {
        done: summary.reused,
        total,
    });
    let next = AtomicUsize::new(0);
    let failed = Mutex::new(Vec::new());
    let simulated = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..options.threads.max(1).min(todo.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((point, record)) = todo.get(i) else {
                    break;
                };
                let started = Instant::now();
                let outcome = PointConfig::of(study, point)
                    .and_then(|c| c.build(study, point.index))
                    .and_then(|setup| runner.run(&setup))
                    .and_then(|measures| {
                        let mut r = record.clone();
                        r.measures = measures;
                        let text = serde_json::to_string_pretty(&r)
                            .map_err(|e| PlanError::Workload(e.to_string()))?;
                        write_atomically(&point_path(&options.out, point.index), text.as_bytes())
                    });
                match outcome {
                    Ok(()) => {
                        simulated.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => failed.lock().unwrap_or_else(|p| p.into_inner()).push((
                        point.index,
                        format!("{e} (after {:.1} s)", started.elapsed().as_secs_f64()),
                    )),
                }
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress { done: d, total });
            });
        }
    });
    summary.simulated = simulated.into_inner();
    summary.failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    summary.failed.sort();
    Ok(summary)
}

/// The records of every point of `study` found finished in `out`, in point order, and the
/// indices of the points still missing.
pub fn collect(study: &Study, out: &Path) -> Result<(Vec<PointRecord>, Vec<usize>), PlanError> {
    let mut records = Vec::new();
    let mut missing = Vec::new();
    for p in study.points() {
        let key = describe(study, &p, "")?.key;
        match finished(out, p.index, &key) {
            Some(r) => records.push(r),
            None => missing.push(p.index),
        }
    }
    Ok((records, missing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_come_from_the_launcher_and_partition_the_points() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(Share::from_launcher(env(&[])), Share::ALL);
        let s = Share::from_launcher(env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
        ]));
        assert_eq!(s, Share { rank: 1, size: 3 });
        let s = Share::from_launcher(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "2")]));
        assert_eq!(s, Share { rank: 0, size: 2 });
        // Nonsense is ignored.
        let s = Share::from_launcher(env(&[("PMI_RANK", "5"), ("PMI_SIZE", "2")]));
        assert_eq!(s, Share::ALL);
        let shares: Vec<Share> = (0..3).map(|rank| Share { rank, size: 3 }).collect();
        for i in 0..20 {
            assert_eq!(shares.iter().filter(|s| s.owns(i)).count(), 1);
        }
    }

    #[test]
    fn fnv_is_the_published_function() {
        // FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
