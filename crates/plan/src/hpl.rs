//! The HPL skeleton as a study's workload: every configuration of an `HPL.dat` at each point.

use std::path::Path;

use mpiscope_hpl::{HplDat, Run};

use crate::point::{Measure, PointSetup, WorkloadRunner};
use crate::PlanError;

/// Runs every configuration of an `HPL.dat` (one result row each: `n`, `nb`, `p`, `q`,
/// `tv` labels, HPL's time and Gflops).
pub struct HplRunner {
    runs: Vec<Run>,
}

impl HplRunner {
    /// Reads `path`.
    pub fn from_path(path: &Path) -> Result<HplRunner, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let dat = HplDat::parse(&text, &path.display().to_string())
            .map_err(|e| PlanError::Workload(e.to_string()))?;
        Ok(HplRunner { runs: dat.runs() })
    }
}

impl WorkloadRunner for HplRunner {
    fn run(&self, setup: &PointSetup) -> Result<Vec<Measure>, PlanError> {
        self.runs
            .iter()
            .map(|run| {
                let r = mpiscope_hpl::simulate(
                    run,
                    &setup.platform,
                    setup.config.clone(),
                    &setup.mapping,
                )
                .map_err(|e| PlanError::Simulation(e.to_string()))?;
                Ok(Measure {
                    labels: vec![
                        ("n".into(), run.n.to_string()),
                        ("nb".into(), run.nb.to_string()),
                        ("p".into(), run.p.to_string()),
                        ("q".into(), run.q.to_string()),
                        ("tv".into(), run.code()),
                    ],
                    time_s: r.time_s,
                    gflops: Some(r.gflops),
                    energy_j: r.energy_j,
                    sim_wall_s: r.sim_wall_s,
                })
            })
            .collect()
    }
}
