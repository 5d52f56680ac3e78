//! The runtime as the generated wrappers call it (`rt::enter`, `rt::Snap`, `rt::fortran_int`,
//! the hooks around initialization and finalization, ...): one name space over the modules
//! that implement it, so the generator names one module whatever the recorder's layout.
//!
//! Nothing is implemented here. The call path is [`crate::guard`], the thread's recording
//! state and the guard type [`crate::state`], the argument helpers [`crate::args`],
//! request completion [`crate::completions`], the Fortran views [`crate::fortran`]; the
//! hooks belong to [`crate::session`] (start, `MPI_Pcontrol`), [`crate::ending`] (the
//! ends) and [`crate::handles`] (datatypes and operations that change).

pub use crate::args::{is_in_place, status_or, Snap};
pub use crate::caller_address;
pub use crate::ending::{after_finalize, before_finalize, on_abort};
pub use crate::fortran::{
    fortran_index, fortran_int, fortran_missing, fortran_status, fortran_status_or, FortranTarget,
    FORTRAN_STATUS_MAX,
};
pub use crate::guard::enter;
pub use crate::handles::{datatypes_changed, ops_changed};
pub use crate::session::{pcontrol, start as after_init};
pub use crate::state::{CallGuard, PeekFn, PEEK_RET};
