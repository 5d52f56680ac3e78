//! Capacity-planning studies (`mpiscope plan STUDY.toml`): sweep platform and workload
//! parameters over the simulator and write the results as CSV, JSON and SVG figures.
//!
//! * [`study`]: the study file (workload, base platform, axes, figures) and its points;
//! * [`point`]: one point's platform and configuration, and the [`WorkloadRunner`]s that
//!   simulate a workload on it (trace replay), and [`hpl`] the HPL skeleton's runner;
//! * [`run`]: this process's share of the points, in parallel, resumable (one file per
//!   finished point, keyed by what determines its result);
//! * [`table`], [`figure`]: the results as a table, CSV, JSON, and line charts;
//! * [`outdir`]: the output directory's study record, and the paths that may be written
//!   there.
//!
//! No MPI, no command line: `mpiscope plan` is a thin shell over [`run::run`] and
//! [`write_results`].

pub mod figure;
pub mod hpl;
pub mod mpi;
pub mod outdir;
pub mod point;
pub mod run;
pub mod study;
pub mod table;

use std::path::{Path, PathBuf};

pub use hpl::HplRunner;
pub use point::{Measure, PointConfig, PointSetup, ReplayRunner, WorkloadRunner};
pub use run::{run, Progress, RunOptions, RunSummary, Share};
pub use study::Study;
pub use table::Table;

/// Why a study could not run.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The study file is wrong.
    #[error("{path}: {message}")]
    Study {
        /// The study file.
        path: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A point's platform or configuration cannot be built.
    #[error("point {point}: {message}")]
    Platform {
        /// The point.
        point: usize,
        /// What is wrong.
        message: String,
    },
    /// An output may not be written where it was asked for, or could not be written.
    #[error(transparent)]
    Output(#[from] mpiscope_files::FileError),
    /// The workload cannot be loaded.
    #[error("{0}")]
    Workload(String),
    /// The simulation failed.
    #[error("simulation: {0}")]
    Simulation(String),
}

/// What [`write_results`] wrote.
#[derive(Debug, Clone)]
pub struct Written {
    /// Results table.
    pub table: Table,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Points not finished yet (the results cover the others).
    pub missing: Vec<usize>,
}

/// Writes `results.csv`, `results.json` and the study's figures into `out` from the finished
/// points found there (all of them, whichever process simulated them). Each is written
/// atomically; an existing file of another kind is replaced only with `force`.
pub fn write_results(study: &Study, out: &Path, force: bool) -> Result<Written, PlanError> {
    use outdir::{FIGURE, RESULTS_CSV, RESULTS_JSON};
    let figure_paths = outdir::figure_paths(study, out)?;
    let (records, missing) = run::collect(study, out)?;
    let table = Table::new(study, &records);
    let mut files = Vec::new();
    let csv = out.join("results.csv");
    mpiscope_files::write_output(&csv, &RESULTS_CSV, force, table.to_csv().as_bytes())?;
    files.push(csv);
    let json = out.join("results.json");
    let doc = serde_json::json!({
        "study": study.name,
        "file": study.path.display().to_string(),
        "points": study.points().len(),
        "missing": missing,
        "rows": table.to_json(),
    });
    let text =
        serde_json::to_string_pretty(&doc).map_err(|e| PlanError::Workload(e.to_string()))?;
    mpiscope_files::write_output(&json, &RESULTS_JSON, force, (text + "\n").as_bytes())?;
    files.push(json);
    let mut figures = Vec::new();
    for (f, path) in study.figures.iter().zip(figure_paths) {
        let svg = figure::render(f, &table, &study.name).map_err(|message| PlanError::Study {
            path: study.path.display().to_string(),
            message,
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| PlanError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
        }
        mpiscope_files::write_output(&path, &FIGURE, force, svg.as_bytes())?;
        figures.push(path.clone());
        files.push(path);
    }
    outdir::record_figures(study, out, &figures, force)?;
    Ok(Written {
        table,
        files,
        missing,
    })
}
