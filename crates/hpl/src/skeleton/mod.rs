//! HPL 2.3's communication and computation, rank by rank, without the matrix.
//!
//! Each rank is a [`RankWorkload`] that generates one panel step at a time (HPL_pdgesv0 for
//! depth 0, HPL_pdgesvK2 for depth 1): the panel factorization in the owning process column
//! (one HPL_pdmxswp pivot exchange per panel column, flops at the host speed), the panel
//! broadcast along the process row (the six HPL_bcast variants, non-roots polling with
//! `Iprobe` between update chunks exactly where HPL calls HPL_bcast), the row swaps and U
//! broadcast (HPL_pdlaswp00T binary exchange, HPL_pdlaswp01T spread-roll, or the mix by
//! threshold) and the trailing update (dtrsm + dgemm with the local shapes of HPL_numroc).
//!
//! Modelling choices (pivot positions are data-dependent):
//! * the jb pivot rows of a panel are spread evenly over the process rows, in distance
//!   order from the current row (`share`), which fixes the swap messages' sizes;
//! * the broadcast panel holds `mp*jb + jb*jb + jb + 1` doubles (L2, L1, pivots, as
//!   HPL_pdpanel_init), `mp` the local trailing rows;
//! * zero-length swap messages of the binary exchange are sent (both sides agree on them);
//! * with `mpiscope/laswp`, the row swaps of a grid of several process rows copy rows: the
//!   current row gathers the `jb` rows of U (HPL_dlaswp01T) before sending, and after
//!   the spread of HPL_pdlaswp01T each other row exchanges its share with the matrix
//!   (HPL_dlaswp06T); the permutation of U (HPL_dlaswp10N), the binary exchange's other
//!   copies and the in-place swaps of a single process row (HPL_dlaswp00N) are neglected,
//!   as are idamax and the panel's packing; the panel factorization costs
//!   `2*mp*(jb-i-1) + mp` flops for column `i`, whatever PFACT/RFACT/NBMIN/NDIV (they change
//!   HPL's blocking, not its flop count or its per-column pivot exchanges).
//!
//! Here are the entry points ([`workloads`]); `rank` holds the rank state machine, `plans`
//! the message patterns of the broadcasts, pivot exchanges and swaps, `grid` the
//! block-cyclic and ring arithmetic, `kernels` the compute-cost models and [`phase`] the
//! phases' callsites.

mod grid;
mod kernels;
mod op;
pub mod phase;
mod plans;
mod rank;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use mpiscope_sim::workload::RankWorkload;

use crate::dat::Run;

pub use grid::{local, numroc};
pub use kernels::Kernels;
pub use plans::{bcast_plan, pivot_plan, share, swap00_plan, swap01_plan, BcastPlan, Msg};

use rank::{HplRank, Setup};

/// The name of a [`phase`], for timelines.
pub fn phase_name(callsite: u32) -> Option<&'static str> {
    match callsite {
        phase::FACTOR => Some("panel factorization"),
        phase::BCAST => Some("panel broadcast"),
        phase::SWAP => Some("row swaps"),
        phase::UPDATE => Some("update"),
        _ => None,
    }
}

/// The workloads of one run, rank by rank (world rank order); `speeds[i]` is rank i's
/// host speed (flop/s), which turns modelled kernel times into flops.
pub fn workloads(run: &Run, kernels: Kernels, speeds: &[f64]) -> Vec<Box<dyn RankWorkload>> {
    workloads_with_progress(run, kernels, speeds, None)
}

/// As [`workloads`]; `progress`, if given, counts the panels rank (0, 0) has started (out of
/// N / NB, rounded up).
pub fn workloads_with_progress(
    run: &Run,
    kernels: Kernels,
    speeds: &[f64],
    progress: Option<Arc<AtomicU64>>,
) -> Vec<Box<dyn RankWorkload>> {
    let npanels = run.n.div_ceil(run.nb);
    let s = Arc::new(Setup {
        run: run.clone(),
        kernels,
        npanels,
        progress,
    });
    let mut out: Vec<Box<dyn RankWorkload>> = Vec::new();
    for w in 0..run.p * run.q {
        let (row, col) = if run.row_major {
            (w / run.q, w % run.q)
        } else {
            (w % run.p, w / run.p)
        };
        let speed = speeds.get(w as usize).copied().unwrap_or(1e9);
        out.push(Box::new(HplRank::new(s.clone(), row, col, speed)));
    }
    out
}

#[cfg(test)]
mod tests;
