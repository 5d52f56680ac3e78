//! The HPL phase of an action, as its callsite when
//! [`Run::phases`](crate::dat::Run::phases) is set.

/// The panel factorization (HPL_pdfact and its pivot exchanges, HPL_pdmxswp).
pub const FACTOR: u32 = 1;
/// The panel broadcast (HPL_bcast), its probes included.
pub const BCAST: u32 = 2;
/// The row swaps and U broadcast (HPL_pdlaswp00T / 01T), their row copies included.
pub const SWAP: u32 = 3;
/// The trailing update (dtrsm and dgemm of HPL_pdupdate).
pub const UPDATE: u32 = 4;
