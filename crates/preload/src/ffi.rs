//! The glue to the MPI library's C side that the bindings leave out: the values of `mpi.h`
//! macro constants (`MPI_COMM_WORLD`, `MPI_STATUS_IGNORE`, ...), which bindgen cannot
//! evaluate and the C shim reports, and the one way the recorder reads what MPI wrote
//! through an output argument.
//!
//! The constants are read by the library constructor, before any wrapper runs, and again
//! once MPI is initialized (some libraries fill their handles only then); wrappers read
//! them with one load, no lock.

use crate::consts::Consts;

static mut CONSTS: core::mem::MaybeUninit<Consts> = core::mem::MaybeUninit::zeroed();

/// Values of `mpi.h` macro constants.
#[inline(always)]
pub fn consts() -> &'static Consts {
    // SAFETY: filled by the library constructor before any wrapper runs; plain data.
    unsafe { &*(core::ptr::addr_of!(CONSTS) as *const Consts) }
}

/// Reads the constants from the C shim.
pub(crate) fn load_consts() {
    // SAFETY: the shim writes every field of the struct.
    unsafe { crate::consts::mpiscope_get_consts(core::ptr::addr_of_mut!(CONSTS) as *mut Consts) };
}

/// Reads a value MPI wrote through an output argument.
///
/// A volatile read behind `black_box`: with plain reads, rustc 1.95 (LLVM) compiled the
/// MPICH build of `post_MPI_Test` so that the recorded flag was the constant 0 while the
/// branch on it used the real value (MPI_Test recorded flag=0 next to a completion; caught
/// by the end-to-end tests, and dependent on the build). Outputs are read once per call,
/// so this costs nothing measurable.
///
/// # Safety
/// `p` is valid for reads and MPI initialized it.
#[inline(always)]
pub unsafe fn read_output<T: Copy>(p: *const T) -> T {
    // SAFETY: the caller's contract.
    core::hint::black_box(unsafe { p.read_volatile() })
}
