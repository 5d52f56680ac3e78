//! An HPL skeleton on mpiscope's simulator.
//!
//! * [`dat`]: the standard `HPL.dat` input file, expanded into the runs HPL would do;
//! * [`skeleton`]: one [`mpiscope_sim::workload::RankWorkload`] per rank generating HPL
//!   2.3's messages (pivot exchanges, panel broadcasts, row swaps) and kernel times
//!   (dgemm, dtrsm, panel factorization) step by step, without any matrix data.
//!
//! Memory is O(ranks): a rank holds at most one step's actions.

pub mod dat;
pub mod skeleton;

pub use dat::{Bcast, Fact, HplDat, Pivots, Polls, Run, Swap};
pub use skeleton::{phase, phase_name, workloads, workloads_with_progress, Kernels};

use std::time::Instant;

use mpiscope_sim::platform::{self, Mapping, Platform};
use mpiscope_sim::report::Report;
use mpiscope_sim::{SimConfig, SimError, Simulation};

/// What a simulated HPL run gives.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct HplResult {
    /// Simulated time of the factorization and solve, seconds (HPL's `Time`).
    pub time_s: f64,
    /// HPL's Gflops: (2/3 N^3 + 3/2 N^2) / time.
    pub gflops: f64,
    /// Energy of the hosts used, joules.
    pub energy_j: f64,
    /// Point-to-point messages simulated.
    pub messages: u64,
    /// Wall-clock time of the simulation, seconds.
    pub sim_wall_s: f64,
    /// Per-rank timeline (empty unless the configuration's `timeline` was set).
    #[serde(skip)]
    pub timeline: Vec<mpiscope_sim::result::Span>,
}

/// Why a run could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// The platform's kernel models are malformed.
    #[error("{0}")]
    Kernels(String),
    /// The ranks cannot be placed.
    #[error("cannot place {ranks} ranks: {source}")]
    Placement {
        /// P x Q.
        ranks: u32,
        /// Why.
        source: mpiscope_sim::platform::PlatformError,
    },
    /// The simulation failed (deadlock, routing).
    #[error("simulating {code}: {source}")]
    Simulation {
        /// The run's `WR..` code.
        code: String,
        /// Why.
        source: SimError,
    },
}

/// Simulates `run` on `platform` (kernel models from its `mpiscope/dgemm`, `mpiscope/dtrsm`
/// and `mpiscope/panel` options, else flop counts at the host speed; with `mpiscope/pack`
/// and `mpiscope/laswp`, strided copies and row gathers), ranks placed by `mapping`.
pub fn simulate(
    run: &Run,
    platform: &Platform,
    config: SimConfig,
    mapping: &Mapping,
) -> Result<HplResult, SimulateError> {
    simulate_with_progress(run, platform, config, mapping, None)
}

/// As [`simulate`]; `progress`, if given, counts the panels started (of N / NB, rounded up)
/// as the simulation goes, for a progress display.
pub fn simulate_with_progress(
    run: &Run,
    platform: &Platform,
    config: SimConfig,
    mapping: &Mapping,
    progress: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
) -> Result<HplResult, SimulateError> {
    let kernels = Kernels::from_config(&platform.config).map_err(SimulateError::Kernels)?;
    // Aggregated polls keep the per-chunk dates only when probes are free: a probe's cost
    // (`smpi/iprobe`) delays the chunks after it and moves a counter that all ranks share,
    // which one computation standing for the chunks cannot interleave with the other
    // ranks' probes. With a cost, every chunk is probed as HPL does.
    let chunked;
    let run = if run.polls == Polls::Aggregated && config.costs.iprobe > 0.0 {
        chunked = Run {
            polls: Polls::Chunks,
            ..run.clone()
        };
        &chunked
    } else {
        run
    };
    let ranks = run.p * run.q;
    let hosts = platform::map_ranks(platform, ranks, mapping)
        .map_err(|source| SimulateError::Placement { ranks, source })?;
    let speeds: Vec<f64> = hosts
        .iter()
        .map(|&h| platform.hosts[h as usize].speed)
        .collect();
    let sim_error = |source| SimulateError::Simulation {
        code: run.code(),
        source,
    };
    let started = Instant::now();
    let sim = Simulation::new(
        platform,
        config,
        hosts.clone(),
        workloads_with_progress(run, kernels, &speeds, progress),
    )
    .map_err(sim_error)?;
    let result = sim.run().map_err(sim_error)?;
    let wall = started.elapsed().as_secs_f64();
    let report = Report::new(platform, &result, &hosts, wall);
    let time = result.makespan_s;
    Ok(HplResult {
        time_s: time,
        gflops: if time > 0.0 {
            run.flops() / time / 1e9
        } else {
            0.0
        },
        energy_j: report.energy_j,
        messages: result.messages,
        sim_wall_s: wall,
        timeline: result.timeline,
    })
}
