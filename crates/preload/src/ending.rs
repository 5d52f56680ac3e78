//! How the record ends, however the process ends: `MPI_Finalize`, `exit`, `MPI_Abort`, a
//! signal ([`crate::signals`]), or a hang the user asked to end ([`crate::keeper`]).
//!
//! The end happens once: every thread's events are written (after `MPI_Finalize` threads are
//! outside MPI and their buffers are written directly; otherwise each thread is asked, with
//! the call it is inside, see [`crate::collect`]), then the trailer with the reason and the
//! per-call totals, then the file is closed. Everything here may run in a signal handler.

use std::fmt::Write as _;
use std::os::raw::c_int;

use crate::collect::{self, Scope};
use crate::fixed::FixedBuf;
use crate::sink;
use crate::status::{self, State};

/// How the record ends.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// `MPI_Finalize` returned: threads are outside MPI; their buffers are written directly.
    Finalize,
    /// The process ends (exit, a signal, `MPI_Abort`): every thread is asked.
    Final {
        /// This thread's state may be inconsistent (a fault in the recorder's own code).
        skip_self: bool,
    },
}

/// Ends the record once: every thread's events, the calls in progress (unless finalized),
/// the trailer with `reason`, and the file closed.
pub(crate) fn end(reason: &str, how: Ending) {
    if !status::is_tracing() || !sink::claim_end() {
        return;
    }
    crate::calls::stop_recording();
    match how {
        Ending::Finalize => crate::threads::for_each_state(|t| {
            if !t.is_busy() {
                t.flush();
            }
        }),
        Ending::Final { skip_self } => {
            let missing = collect::collect(Scope::Final, skip_self);
            sink::count_lost(missing);
        }
    }
    sink::write_trailer(reason);
    status::set_state(State::Stopped);
    sink::close();
}

/// Before `MPI_Finalize`: everything recorded so far reaches the file, in case finalization
/// never returns.
pub fn before_finalize() {
    if status::is_tracing() {
        crate::threads::for_each_state(|t| {
            if !t.is_busy() {
                t.flush();
            }
        });
    }
}

/// After `MPI_Finalize` (and its event): the end. Skipped inside another recorded call (MPICH's
/// Fortran `mpi_finalize_` calls the C `MPI_Finalize`): the outer wrapper ends after its own
/// event is committed.
pub fn after_finalize() {
    if crate::threads::inside_recorded_call() {
        return;
    }
    end("finalize", Ending::Finalize);
}

/// Registered with `atexit` once tracing starts.
pub(crate) extern "C" fn on_exit() {
    end("exit", Ending::Final { skip_self: false });
}

/// `MPI_Abort(comm, errorcode)` is about to end the job: the record ends first, with the
/// aborting call as a call in progress.
pub fn on_abort(errorcode: c_int) {
    let mut buf = [0u8; 64];
    let mut w = FixedBuf {
        buf: &mut buf,
        len: 0,
    };
    let _ = write!(w, "MPI_Abort (error code {errorcode})");
    let n = w.len;
    let reason = std::str::from_utf8(&buf[..n]).unwrap_or("MPI_Abort");
    end(reason, Ending::Final { skip_self: false });
}

/// A signal the program handles: this thread's events are written and a note records it.
pub(crate) fn note_signal(thread: u16, name: &str, message: &str) {
    if status::is_tracing() && !sink::ended() {
        sink::note_raw("signal", thread, Some(name), message, crate::clock::ticks());
    }
}
