//! The glue to the MPI library's C side: the values of `mpi.h` macro constants (handles
//! such as `MPI_COMM_WORLD`, `MPI_BYTE`), which bindgen cannot evaluate and the C shim
//! reports, read once and shared by every thread.

use std::sync::OnceLock;

use crate::consts::Consts;

struct SyncConsts(Consts);
// SAFETY: the constants are immutable MPI handles, valid from any thread.
unsafe impl Sync for SyncConsts {}
unsafe impl Send for SyncConsts {}
static CONSTS: OnceLock<SyncConsts> = OnceLock::new();

/// The `mpi.h` macro constants.
pub fn consts() -> &'static Consts {
    &CONSTS
        .get_or_init(|| {
            let mut c = std::mem::MaybeUninit::<Consts>::uninit();
            // SAFETY: the shim fills every field.
            SyncConsts(unsafe {
                crate::consts::mpiscope_get_consts(c.as_mut_ptr());
                c.assume_init()
            })
        })
        .0
}
