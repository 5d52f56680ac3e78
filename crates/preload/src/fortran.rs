//! The Fortran bindings' views: the C handles, statuses and indices a Fortran call's
//! arguments stand for (converted before the real call, so the argument helpers read C
//! values), the status the wrapper substitutes when the program ignores it, and the real
//! Fortran functions of the MPI library, looked up on first use.
//!
//! A Fortran request is an INTEGER the program keeps; the recorder's C view of it is a copy,
//! so requests are identified by the address of the Fortran variable (or array element),
//! which [`CallGuard::fortran_handles_at`] records.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::calls::FORTRAN_BASE;
use crate::ffi::{consts, read_output};
use crate::mpi::*;
use crate::state::CallGuard;

impl CallGuard {
    /// Where the program keeps a handle: the address it passed, for C calls; for Fortran
    /// calls (whose C views are the recorder's copies) the Fortran variable's address.
    pub(crate) fn handle_addr<T>(&self, p: *mut T) -> usize {
        if self.call >= FORTRAN_BASE {
            self.fortran_handles
        } else {
            p as usize
        }
    }

    /// Records where a Fortran call keeps its request handle(s) (the INTEGER or the array).
    pub fn fortran_handles_at(&mut self, f: *mut core::ffi::c_void) {
        self.fortran_handles = f as usize;
    }

    // ------------------------------------------------------------ Fortran views

    /// Fortran status array buffer when the caller passes `MPI_STATUSES_IGNORE`.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_statuses_or_scratch(
        &mut self,
        f: *mut core::ffi::c_void,
        n: c_int,
    ) -> *mut core::ffi::c_void {
        // SAFETY: reading an extern static pointer.
        let ignore = unsafe { MPI_F_STATUSES_IGNORE } as *mut core::ffi::c_void;
        if f != ignore || n <= 0 {
            return f;
        }
        let per = fortran_status_ints();
        let t = self.ts();
        t.fstatuses.resize(n as usize * per, 0);
        t.fstatuses.as_mut_ptr().cast()
    }

    /// C views of `n` Fortran statuses.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_statuses(&mut self, f: *const MPI_Fint, n: c_int) -> *mut MPI_Status {
        let n = n.max(0) as usize;
        let per = fortran_status_ints();
        let t = self.ts();
        // SAFETY: MPI_Status is plain data.
        t.c_statuses.resize(n, unsafe { core::mem::zeroed() });
        if f.is_null() {
            return t.c_statuses.as_mut_ptr();
        }
        for i in 0..n {
            // SAFETY: the Fortran array holds n statuses of `per` integers.
            unsafe { PMPI_Status_f2c(f.add(i * per), t.c_statuses.as_mut_ptr().add(i)) };
        }
        t.c_statuses.as_mut_ptr()
    }

    /// C handles of `n` Fortran requests.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_requests(&mut self, f: *const MPI_Fint, n: c_int) -> *mut MPI_Request {
        let n = n.max(0) as usize;
        let t = self.ts();
        t.c_requests.clear();
        for i in 0..n {
            // SAFETY: the Fortran array holds n requests.
            t.c_requests
                .push(unsafe { crate::consts::mpiscope_f2c_request(*f.add(i)) });
        }
        t.c_requests.as_mut_ptr()
    }

    /// C (0-based) views of Fortran (1-based) indices.
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn fortran_indices(&mut self, f: *const MPI_Fint, n: c_int) -> *mut c_int {
        let n = n.max(0) as usize;
        let t = self.ts();
        t.c_indices.clear();
        for i in 0..n {
            // SAFETY: MPI wrote n indices.
            t.c_indices.push(unsafe { read_output(f.add(i)) } - 1);
        }
        t.c_indices.as_mut_ptr()
    }
}

/// Number of Fortran integers in a status.
pub fn fortran_status_ints() -> usize {
    (consts().status_size_bytes as usize / core::mem::size_of::<MPI_Fint>()).max(1)
}

/// Room for one Fortran status on the stack.
pub const FORTRAN_STATUS_MAX: usize = 16;

/// A Fortran status pointer, or `local` when the caller passes `MPI_STATUS_IGNORE`.
pub fn fortran_status_or(
    f: *mut core::ffi::c_void,
    local: *mut MPI_Fint,
) -> *mut core::ffi::c_void {
    // SAFETY: reading an extern static pointer.
    let ignore = unsafe { MPI_F_STATUS_IGNORE } as *mut core::ffi::c_void;
    if f == ignore || f.is_null() {
        local.cast()
    } else {
        f
    }
}

/// Converts a Fortran status.
pub unsafe fn fortran_status(f: *const MPI_Fint, c: *mut MPI_Status) {
    if !f.is_null() {
        PMPI_Status_f2c(f, c);
    }
}

/// Reads a Fortran INTEGER argument.
#[inline(always)]
pub fn fortran_int(p: *mut core::ffi::c_void) -> c_int {
    if p.is_null() {
        0
    } else {
        // SAFETY: Fortran passes a pointer to an INTEGER.
        unsafe { *(p as *const MPI_Fint) as c_int }
    }
}

/// A Fortran index output, converted from 1-based.
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn fortran_index(p: *const MPI_Fint) -> c_int {
    if p.is_null() {
        return consts().undefined;
    }
    // SAFETY: MPI wrote it.
    let v = unsafe { read_output(p) };
    if v == consts().undefined {
        v
    } else {
        v - 1
    }
}

/// A Fortran function of the real library, found on first use.
pub struct FortranTarget {
    names: &'static [&'static str],
    ptr: AtomicPtr<core::ffi::c_void>,
}

impl FortranTarget {
    /// A target looked up by any of `names` (NUL-terminated).
    pub const fn new(names: &'static [&'static str]) -> Self {
        FortranTarget {
            names,
            ptr: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// The function's address.
    #[inline]
    /// # Safety: pointers as the program passed them to (or got them from) MPI.
    pub unsafe fn get(&self) -> Option<*mut core::ffi::c_void> {
        let p = self.ptr.load(Ordering::Relaxed);
        if !p.is_null() {
            return Some(p);
        }
        for n in self.names {
            // SAFETY: NUL-terminated name; RTLD_NEXT finds the MPI library's definition.
            let p = unsafe { libc::dlsym(libc::RTLD_NEXT, n.as_ptr().cast()) };
            if !p.is_null() {
                self.ptr.store(p, Ordering::Relaxed);
                return Some(p);
            }
        }
        None
    }
}

/// The real Fortran function is missing: report once and fail the call.
/// # Safety: pointers as the program passed them to (or got them from) MPI.
pub unsafe fn fortran_missing(ierr: *mut MPI_Fint, name: &str) {
    crate::status::warn_once(&format!(
        "cannot find {name} in the MPI library; the call was not made"
    ));
    if !ierr.is_null() {
        // SAFETY: Fortran passes a valid ierr.
        unsafe { *ierr = consts().err_other };
    }
}
