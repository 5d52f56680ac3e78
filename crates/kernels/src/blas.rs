//! OpenBLAS, opened at run time ([`openblas`]): the handful of CBLAS routines the kernels
//! call, and OpenBLAS's thread-count setter, resolved once into [`OpenBlas`], a table of
//! function pointers. Nothing links OpenBLAS, so the `mpiscope` binary starts on a machine
//! without it (and without the Fortran runtime OpenBLAS needs); only the commands that time
//! kernels ask for it, and get an error that says what to install when it is missing.
//!
//! The declarations are those of OpenBLAS's `cblas.h` with 32-bit integers (`blasint` is
//! `int` in Debian's `libopenblas0`, not the 64-bit-index `libopenblas64-0`); the CBLAS
//! enums are C `int`s with the values below.

use std::ffi::c_int;
use std::sync::OnceLock;

use mpiscope_dynlib::{Library, LoadError, Wanted};

/// `CblasColMajor`.
pub(crate) const COL_MAJOR: c_int = 102;
/// `CblasNoTrans`.
pub(crate) const NO_TRANS: c_int = 111;
/// `CblasTrans`.
pub(crate) const TRANS: c_int = 112;
/// `CblasLower`.
pub(crate) const LOWER: c_int = 122;
/// `CblasUnit`.
pub(crate) const UNIT: c_int = 132;
/// `CblasLeft`.
pub(crate) const LEFT: c_int = 141;

/// `cblas_dgemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
pub(crate) type Dgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f64,
    *const f64,
    c_int,
    *const f64,
    c_int,
    f64,
    *mut f64,
    c_int,
);
/// `cblas_dtrsm(order, side, uplo, transa, diag, m, n, alpha, a, lda, b, ldb)`.
pub(crate) type Dtrsm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    f64,
    *const f64,
    c_int,
    *mut f64,
    c_int,
);
/// `cblas_dger(order, m, n, alpha, x, incx, y, incy, a, lda)`.
pub(crate) type Dger = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    f64,
    *const f64,
    c_int,
    *const f64,
    c_int,
    *mut f64,
    c_int,
);
/// `cblas_dscal(n, alpha, x, incx)`.
pub(crate) type Dscal = unsafe extern "C" fn(c_int, f64, *mut f64, c_int);
/// `cblas_dswap(n, x, incx, y, incy)`.
pub(crate) type Dswap = unsafe extern "C" fn(c_int, *mut f64, c_int, *mut f64, c_int);
/// `cblas_idamax(n, x, incx)`: the 0-based index of the largest magnitude (`size_t`).
pub(crate) type Idamax = unsafe extern "C" fn(c_int, *const f64, c_int) -> usize;
/// `openblas_set_num_threads(n)`.
type SetNumThreads = unsafe extern "C" fn(c_int);

/// Debian's OpenBLAS and where else to find it.
pub const OPENBLAS: Wanted = Wanted {
    library: "OpenBLAS",
    needed_by: "mpiscope calibrate (BLAS kernel timings)",
    sonames: &["libopenblas.so.0", "libopenblas.so"],
    install: "libopenblas0 (Debian, Ubuntu) or openblas (Fedora; EPEL), or load an OpenBLAS \
              module",
    env: "MPISCOPE_OPENBLAS",
};

/// The opened OpenBLAS: its routines as function pointers, valid while `_lib` is open (for
/// the life of the process: the one value lives in a `static`).
#[derive(Debug)]
pub struct OpenBlas {
    pub(crate) dgemm: Dgemm,
    pub(crate) dtrsm: Dtrsm,
    pub(crate) dger: Dger,
    pub(crate) dscal: Dscal,
    pub(crate) dswap: Dswap,
    pub(crate) idamax: Idamax,
    set_num_threads: SetNumThreads,
    _lib: Library,
}

impl OpenBlas {
    /// Opens `wanted` and resolves every routine (any missing one is an error).
    pub fn open(wanted: Wanted) -> Result<OpenBlas, LoadError> {
        let lib = Library::open(wanted)?;
        // SAFETY: each type is the routine's `cblas.h` declaration (32-bit `blasint`); the
        // pointers are kept beside `lib`, so they are never called after it closes.
        unsafe {
            Ok(OpenBlas {
                dgemm: lib.get("cblas_dgemm")?,
                dtrsm: lib.get("cblas_dtrsm")?,
                dger: lib.get("cblas_dger")?,
                dscal: lib.get("cblas_dscal")?,
                dswap: lib.get("cblas_dswap")?,
                idamax: lib.get("cblas_idamax")?,
                set_num_threads: lib.get("openblas_set_num_threads")?,
                _lib: lib,
            })
        }
    }

    /// Runs the kernels on one thread, as one MPI rank per core does (what
    /// `OPENBLAS_NUM_THREADS=1` sets for a whole process).
    pub fn use_one_thread(&self) {
        // SAFETY: plain setter of OpenBLAS's global thread count, called before any kernel.
        unsafe { (self.set_num_threads)(1) }
    }
}

/// OpenBLAS, opened on the first call (later calls return the same library, or the same
/// error).
pub fn openblas() -> Result<&'static OpenBlas, LoadError> {
    static BLAS: OnceLock<Result<OpenBlas, LoadError>> = OnceLock::new();
    BLAS.get_or_init(|| OpenBlas::open(OPENBLAS))
        .as_ref()
        .map_err(Clone::clone)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where OpenBLAS is missing, the error names the command, the library and the package.
    #[test]
    fn a_missing_openblas_says_what_to_install() {
        let nowhere = Wanted {
            sonames: &["libopenblas-mpiscope-absent.so.0"],
            ..OPENBLAS
        };
        let msg = OpenBlas::open(nowhere).unwrap_err().to_string();
        for part in [
            "mpiscope calibrate",
            "needs OpenBLAS (libopenblas-mpiscope-absent.so.0)",
            "install libopenblas0 (Debian",
        ] {
            assert!(msg.contains(part), "`{part}` not in: {msg}");
        }
    }

    /// The versioned soname opens here (Debian's libopenblas0) and every routine resolves.
    #[test]
    fn openblas_opens_by_its_versioned_soname() {
        let blas = openblas().unwrap();
        assert_eq!(blas._lib.soname(), "libopenblas.so.0");
    }
}
