//! The run manifest (`manifest.json`) and the run directory that holds it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::reader::{RankReader, ReadError};

/// Name of the manifest file in a run directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// File name of rank `r`'s trace.
pub fn rank_file_name(rank: u32) -> String {
    format!("rank-{rank:05}.mpst")
}

/// Where one rank ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankPlacement {
    /// World rank.
    pub rank: u32,
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// CPU core at initialization, when known.
    pub core: Option<u32>,
    /// Trace file name, relative to the run directory.
    pub file: String,
}

/// The MPI library a run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MpiLibrary {
    /// `openmpi` or `mpich`.
    pub flavour: String,
    /// The library's own version string (`MPI_Get_library_version`).
    pub version: String,
    /// MPI standard version (`MPI_Get_version`), as `major.minor`.
    pub standard: String,
}

/// Clock used by the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSummary {
    /// `tsc` or `monotonic`.
    pub source: String,
    /// Nominal tick rate.
    pub ticks_per_second: f64,
    /// Smallest observed difference between two clock reads, in ns.
    pub resolution_ns: f64,
    /// How ranks on other hosts were aligned with rank 0.
    pub alignment: String,
}

/// Everything about a run that is not an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Trace format version (`major.minor`).
    pub format_version: String,
    /// The mpiscope version that recorded the run.
    pub recorder_version: String,
    /// The full command line (launcher included when known).
    pub command: Vec<String>,
    /// The traced executable.
    pub executable: String,
    /// MPI library.
    pub mpi: MpiLibrary,
    /// Number of ranks.
    pub ranks: u32,
    /// Distinct hosts, in order of first rank.
    pub hosts: Vec<String>,
    /// Rank to host and core.
    pub placement: Vec<RankPlacement>,
    /// Clock.
    pub clock: ClockSummary,
    /// Start of the run (rank 0's initialization), Unix time in ns.
    pub start_unix_ns: u64,
    /// Start of the run as RFC 3339 UTC text.
    pub start_time: String,
    /// Recorder options in effect.
    pub options: serde_json::Value,
    /// Filled in by `mpiscope trace` when the run ends: the launcher's exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// Filled in by `mpiscope trace` when it ran inside a batch job: the job, and whether
    /// the batch system ended the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchJob>,
}

/// The batch job a traced run was part of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchJob {
    /// The batch system: `slurm`.
    pub system: String,
    /// The job's id (`SLURM_JOB_ID`).
    pub job_id: String,
    /// The job's time limit in seconds, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_s: Option<u64>,
    /// When the batch system was to end the job (its start plus its time limit), Unix
    /// seconds, as known when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_unix_s: Option<i64>,
    /// How the batch system ended the run; absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<BatchEnd>,
}

/// Why a batch system ended a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchEndCause {
    /// The job reached its time limit.
    TimeLimit,
    /// The job was cancelled (`scancel`).
    Cancelled,
}

/// How a batch system ended a run: the signal `mpiscope trace` received and why it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchEnd {
    /// Why the job was ended.
    pub cause: BatchEndCause,
    /// The signal `mpiscope trace` received (`SIGTERM`).
    pub signal: String,
    /// When it received it, Unix seconds.
    pub signal_unix_s: f64,
    /// How the cause is known: the job's state and reason as the batch system reported
    /// them, or the signal's time against the job's end time.
    pub evidence: String,
}

impl Manifest {
    /// Checks what JSON cannot: a known major version, and a rank count that is at least 1
    /// and backed by data present (the placement entries, or rank files up to
    /// `last_rank_file`), so that nobody sizes a table by a number nothing supports.
    pub fn validate(&self, last_rank_file: Option<u32>) -> Result<(), String> {
        let major = self.format_version.split('.').next().unwrap_or("");
        if major != crate::block::VERSION_MAJOR.to_string() {
            return Err(format!(
                "format_version {:?} is not supported (this reader reads {}.x)",
                self.format_version,
                crate::block::VERSION_MAJOR
            ));
        }
        if self.ranks == 0 {
            return Err("ranks is 0: a run has at least one rank".into());
        }
        let backed = self
            .placement
            .len()
            .max(last_rank_file.map_or(0, |r| r as usize + 1));
        if self.ranks as usize > backed {
            return Err(format!(
                "ranks is {} but the manifest places {} and the directory holds rank files up to rank {}",
                self.ranks,
                self.placement.len(),
                last_rank_file.map_or(-1, i64::from)
            ));
        }
        if let Some(p) = self.placement.iter().find(|p| p.rank >= self.ranks) {
            return Err(format!(
                "placement names rank {} of a {}-rank run",
                p.rank, self.ranks
            ));
        }
        Ok(())
    }
}

impl BatchJob {
    /// The time limit as SLURM writes it: `0:01:00` (hours:minutes:seconds), `2-00:00:00`
    /// with days.
    pub fn time_limit_text(&self) -> Option<String> {
        let t = self.time_limit_s?;
        let (d, h, m, s) = (t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
        Some(if d > 0 {
            format!("{d}-{h:02}:{m:02}:{s:02}")
        } else {
            format!("{h}:{m:02}:{s:02}")
        })
    }

    /// How the batch system ended the run, in one sentence (`None` when it did not):
    /// `The job was ended by SLURM at its time limit (job 12, 0:01:00)`.
    pub fn describe_end(&self) -> Option<String> {
        let end = self.ended.as_ref()?;
        let system = if self.system == "slurm" {
            "SLURM"
        } else {
            self.system.as_str()
        };
        Some(match end.cause {
            BatchEndCause::TimeLimit => format!(
                "The job was ended by {system} at its time limit (job {}{})",
                self.job_id,
                self.time_limit_text()
                    .map(|t| format!(", {t}"))
                    .unwrap_or_default()
            ),
            BatchEndCause::Cancelled => format!(
                "The job was ended by {system}: cancelled (scancel; job {})",
                self.job_id
            ),
        })
    }

    /// What the end is known from (`None` when the batch system did not end the run):
    /// `SIGTERM to mpiscope trace 14 s after the job's end time; job state COMPLETING,
    /// reason TimeLimit`.
    pub fn end_details(&self) -> Option<String> {
        let end = self.ended.as_ref()?;
        let when = match self.end_unix_s {
            Some(t) if end.signal_unix_s >= t as f64 => {
                format!(
                    " {:.0} s after the job's end time",
                    end.signal_unix_s - t as f64
                )
            }
            Some(t) => format!(
                " {:.0} s before the job's end time",
                t as f64 - end.signal_unix_s
            ),
            None => String::new(),
        };
        Some(format!(
            "{} to mpiscope trace{when}; {}",
            end.signal, end.evidence
        ))
    }
}

/// A problem with a run directory.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// The manifest could not be read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The system error (in the message only, so that it is printed once).
        error: std::io::Error,
    },
    /// The manifest is not valid JSON of the expected shape, or its values are impossible
    /// (line and column 0: the whole file).
    #[error("{path}: {}{message}", if *line > 0 { format!("line {line}, column {column}: ") } else { String::new() })]
    BadManifest {
        /// The file.
        path: PathBuf,
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A rank file could not be opened.
    #[error(transparent)]
    Rank(#[from] ReadError),
    /// The directory has no manifest and no rank files.
    #[error("{0}: not an mpiscope run directory (no manifest.json and no rank-*.mpst files)")]
    Empty(PathBuf),
}

/// A run directory: the manifest and one trace file per rank.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The directory.
    pub path: PathBuf,
    /// The manifest, when present.
    pub manifest: Option<Manifest>,
    /// Rank files found, sorted by rank.
    pub rank_files: Vec<(u32, PathBuf)>,
    /// Entries named like rank files that are not regular files (never opened), with what
    /// they are.
    pub not_files: Vec<(u32, String)>,
}

impl RunDir {
    /// Opens a run directory: reads the manifest (if any) and lists rank files.
    pub fn open(path: impl AsRef<Path>) -> Result<RunDir, RunDirError> {
        let path = path.as_ref().to_path_buf();
        let mpath = path.join(MANIFEST_FILE);
        let read = |p: &Path| -> std::io::Result<Vec<u8>> {
            let mut f = crate::input::open_regular(p)?;
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut v)?;
            Ok(v)
        };
        let manifest = match read(&mpath) {
            Ok(bytes) => Some(serde_json::from_slice::<Manifest>(&bytes).map_err(|e| {
                RunDirError::BadManifest {
                    path: mpath.clone(),
                    line: e.line(),
                    column: e.column(),
                    message: e.to_string(),
                }
            })?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(RunDirError::Io {
                    path: mpath,
                    error: source,
                })
            }
        };
        let entries = std::fs::read_dir(&path).map_err(|source| RunDirError::Io {
            path: path.clone(),
            error: source,
        })?;
        let mut rank_files = Vec::new();
        let mut not_files = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(num) = name
                .strip_prefix("rank-")
                .and_then(|s| s.strip_suffix(".mpst"))
            {
                if let Ok(r) = num.parse::<u32>() {
                    // Never open a named pipe or a device where a rank file is expected.
                    match std::fs::metadata(e.path()) {
                        Ok(m) if m.is_file() => rank_files.push((r, e.path())),
                        Ok(m) => not_files.push((r, crate::input::kind_of(&m).to_owned())),
                        Err(err) => not_files.push((r, err.to_string())),
                    }
                }
            }
        }
        rank_files.sort();
        if manifest.is_none() && rank_files.is_empty() {
            return Err(RunDirError::Empty(path));
        }
        if let Some(m) = &manifest {
            m.validate(rank_files.last().map(|(r, _)| *r))
                .map_err(|message| RunDirError::BadManifest {
                    path: mpath.clone(),
                    line: 0,
                    column: 0,
                    message,
                })?;
        }
        not_files.sort();
        Ok(RunDir {
            path,
            manifest,
            rank_files,
            not_files,
        })
    }

    /// Number of ranks: from the manifest, else the rank files found.
    pub fn ranks(&self) -> u32 {
        self.manifest
            .as_ref()
            .map(|m| m.ranks)
            .unwrap_or(self.rank_files.len() as u32)
    }

    /// Opens the reader of one rank (a file that holds another rank's record is refused).
    pub fn open_rank(
        &self,
        rank: u32,
    ) -> Result<RankReader<std::io::BufReader<std::fs::File>>, ReadError> {
        let path = self
            .rank_files
            .iter()
            .find(|(r, _)| *r == rank)
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| self.path.join(rank_file_name(rank)));
        RankReader::open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(limit: Option<u64>, cause: Option<BatchEndCause>) -> BatchJob {
        BatchJob {
            system: "slurm".into(),
            job_id: "12".into(),
            time_limit_s: limit,
            end_unix_s: Some(1_795_694_295),
            ended: cause.map(|cause| BatchEnd {
                cause,
                signal: "SIGTERM".into(),
                signal_unix_s: 1_795_694_299.5,
                evidence: "job state COMPLETING, reason TimeLimit".into(),
            }),
        }
    }

    #[test]
    fn batch_endings_are_told_in_one_sentence() {
        let j = job(Some(60), Some(BatchEndCause::TimeLimit));
        assert_eq!(
            j.describe_end().unwrap(),
            "The job was ended by SLURM at its time limit (job 12, 0:01:00)"
        );
        assert_eq!(
            job(Some(93_784), None).time_limit_text().unwrap(),
            "1-02:03:04"
        );
        assert_eq!(
            j.end_details().unwrap(),
            "SIGTERM to mpiscope trace 4 s after the job's end time; job state COMPLETING, reason TimeLimit"
        );
        assert_eq!(job(Some(60), None).describe_end(), None);
        assert_eq!(job(Some(60), None).end_details(), None);
        assert_eq!(
            job(None, Some(BatchEndCause::Cancelled))
                .describe_end()
                .unwrap(),
            "The job was ended by SLURM: cancelled (scancel; job 12)"
        );
    }

    #[test]
    fn the_batch_entry_is_optional_and_round_trips() {
        let j = job(Some(60), Some(BatchEndCause::TimeLimit));
        let text = serde_json::to_string(&j).unwrap();
        assert!(text.contains(r#""cause":"time_limit""#), "{text}");
        assert_eq!(serde_json::from_str::<BatchJob>(&text).unwrap(), j);
        let bare = r#"{"system":"slurm","job_id":"7"}"#;
        let b: BatchJob = serde_json::from_str(bare).unwrap();
        assert_eq!((b.time_limit_s, b.ended), (None, None));
        assert!(serde_json::from_str::<BatchEndCause>(r#""preempted""#).is_err());
    }
}
