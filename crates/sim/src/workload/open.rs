//! One way into the simulator for recorded workloads: [`open`] takes a path and tells what
//! it is, an mpiscope run directory, a structural form (`mpiscope structure --save`) or a
//! SimGrid time-independent trace index, and reads it the way that kind is read.
//!
//! Opening is two steps, because the rank count decides the placement and the placement
//! the host speeds that mpiscope traces' compute bursts are scaled by: [`open`] reads what
//! says how many ranks there are (the run's manifest, the structural form, the TI index and
//! files), and [`Input::load`] makes the workloads for the speeds of the hosts the ranks are
//! placed on. TI traces count flops, not time, so their workloads are made at once and the
//! speeds are not used.
//!
//! Which kind a path is ([`InputKind::of`]): a directory is a run, a file whose first
//! non-blank byte is `{` or that starts as gzip is a structural form, anything else a TI
//! index. A lenient reading ([`TiOptions::lenient`]) applies to TI traces only; callers
//! check [`InputKind`] first to say so in their own words.

use std::path::{Path, PathBuf};

use mpiscope_trace::RunDir;

use super::structural::{self, StructuralRun};
use super::ti::{self, TiOptions};
use super::trace::{self, Callsites, TraceOptions};
use super::{RankWorkload, WorkloadError};

/// The kinds of recorded workload [`open`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// An mpiscope run directory (`mpiscope trace -o DIR`).
    RunDir,
    /// A structural form (`mpiscope structure --save FILE`).
    Structural,
    /// A SimGrid time-independent trace index.
    Ti,
}

impl InputKind {
    /// The kind of `path`, guessed from what it is and its first bytes (see the module
    /// documentation); reading it checks.
    pub fn of(path: &Path) -> InputKind {
        if path.is_dir() {
            InputKind::RunDir
        } else if structural::sniff(path) {
            InputKind::Structural
        } else {
            InputKind::Ti
        }
    }

    /// What the kind is called in messages (`a run directory`).
    pub fn describe(self) -> &'static str {
        match self {
            InputKind::RunDir => "a run directory",
            InputKind::Structural => "a structural form",
            InputKind::Ti => "a TI trace",
        }
    }
}

/// How recorded workloads are read.
#[derive(Debug, Clone, Default)]
pub struct OpenOptions {
    /// For run directories and structural forms.
    pub trace: TraceOptions,
    /// For TI traces.
    pub ti: TiOptions,
}

/// A recorded workload, opened: its kind and rank count are known, its workloads not made
/// yet (see [`Input::load`]).
pub struct Input {
    path: PathBuf,
    opened: Opened,
    trace: TraceOptions,
}

enum Opened {
    /// Boxed: a run directory's manifest is much larger than the other kinds.
    Run(Box<RunDir>),
    Structural(StructuralRun),
    Ti(Vec<Box<dyn RankWorkload>>),
}

/// The workloads of an [`Input`], one per rank.
pub struct Loaded {
    /// One workload per rank, in rank order.
    pub workloads: Vec<Box<dyn RankWorkload>>,
    /// The table naming the callsite ids the workloads report (mpiscope traces and
    /// structural forms; TI traces have no callsites).
    pub callsites: Option<Callsites>,
}

/// Opens the recorded workload at `path`, whatever its kind ([`InputKind::of`]).
pub fn open(path: &Path, options: &OpenOptions) -> Result<Input, WorkloadError> {
    let opened = match InputKind::of(path) {
        InputKind::RunDir => {
            let run = RunDir::open(path).map_err(|e| WorkloadError::Open {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            Opened::Run(Box::new(run))
        }
        InputKind::Structural => Opened::Structural(structural::read_file(path)?),
        InputKind::Ti => Opened::Ti(ti::load(path, options.ti.clone())?),
    };
    Ok(Input {
        path: path.to_path_buf(),
        opened,
        trace: options.trace.clone(),
    })
}

impl Input {
    /// What was opened.
    pub fn kind(&self) -> InputKind {
        match self.opened {
            Opened::Run(_) => InputKind::RunDir,
            Opened::Structural(_) => InputKind::Structural,
            Opened::Ti(_) => InputKind::Ti,
        }
    }

    /// The path opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ranks of the workload.
    pub fn ranks(&self) -> u32 {
        match &self.opened {
            Opened::Run(run) => run.ranks(),
            Opened::Structural(form) => form.ranks.len() as u32,
            Opened::Ti(w) => w.len() as u32,
        }
    }

    /// The run directory, when the input is one (for what its manifest and endings say).
    pub fn run_dir(&self) -> Option<&RunDir> {
        match &self.opened {
            Opened::Run(run) => Some(run),
            _ => None,
        }
    }

    /// The workloads, rank `i`'s compute bursts at `host_speeds[i]` flop/s unless
    /// [`TraceOptions::traced_speed`] says otherwise (unused for TI traces, which count
    /// flops).
    pub fn load(self, host_speeds: &[f64]) -> Result<Loaded, WorkloadError> {
        let (workloads, callsites) = match self.opened {
            Opened::Run(run) => {
                let (w, sites) = trace::load_with_callsites(&run, self.trace, host_speeds)?;
                (w, Some(sites))
            }
            Opened::Structural(form) => {
                let (w, sites) = structural::load(&form, self.trace, host_speeds)?;
                (w, Some(sites))
            }
            Opened::Ti(w) => (w, None),
        };
        Ok(Loaded {
            workloads,
            callsites,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Action, Outcome};

    fn drain(loaded: Loaded) -> Vec<Vec<Action>> {
        loaded
            .workloads
            .into_iter()
            .map(|mut w| {
                let mut out = Vec::new();
                while let Some(a) = w.next(Outcome::None) {
                    out.push(a.unwrap());
                }
                out
            })
            .collect()
    }

    #[test]
    fn a_ti_index_opens_as_ti_and_keeps_its_flops() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.txt"),
            "0 init\n1 init\n0 compute 5\n0 send 1 0 8\n1 recv 0 0 8\n0 finalize\n1 finalize\n",
        )
        .unwrap();
        let index = dir.path().join("index.txt");
        std::fs::write(&index, "t.txt\n").unwrap();
        assert_eq!(InputKind::of(&index), InputKind::Ti);
        let input = open(&index, &OpenOptions::default()).unwrap();
        assert_eq!((input.kind(), input.ranks()), (InputKind::Ti, 2));
        assert!(input.run_dir().is_none());
        // Speeds do not apply to flops.
        let loaded = input.load(&[1.0, 2.0]).unwrap();
        assert!(loaded.callsites.is_none());
        let actions = drain(loaded);
        assert_eq!(actions[0][0], Action::Compute { flops: 5.0 });
    }

    #[test]
    fn kinds_are_told_apart_and_errors_name_the_input() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(InputKind::of(dir.path()), InputKind::RunDir);
        let e = open(dir.path(), &OpenOptions::default())
            .err()
            .expect("a directory without a manifest")
            .to_string();
        assert!(
            e.starts_with(&format!("cannot open the trace {}: ", dir.path().display())),
            "{e}"
        );
        let form = dir.path().join("form.json");
        std::fs::write(&form, "  {\"format\": \"x\"}").unwrap();
        assert_eq!(InputKind::of(&form), InputKind::Structural);
        assert!(open(&form, &OpenOptions::default()).is_err());
        let missing = dir.path().join("nothing.txt");
        assert_eq!(InputKind::of(&missing), InputKind::Ti);
        let e = open(&missing, &OpenOptions::default())
            .err()
            .expect("no such file")
            .to_string();
        assert!(e.contains("nothing.txt"), "{e}");
    }
}
