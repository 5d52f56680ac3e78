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

pub use dat::{Bcast, Fact, HplDat, Run, Swap};
pub use skeleton::{workloads, Kernels};
