//! The keeper: a thread that keeps each rank's record current while the program runs.
//!
//! * A thread that has been inside one MPI call for longer than the flush interval
//!   (`MPISCOPE_FLUSH_EVERY`, 1 s by default) is asked to write its buffered events and the
//!   call it is in. A rank that is then killed with SIGKILL (MPICH's launcher ends the other
//!   ranks of a failed job that way) keeps everything it did before it blocked, and its
//!   record shows where it waited. Busy threads write their buffers at that interval
//!   themselves (see `CallGuard::commit`).
//! * With `MPISCOPE_HANG_AFTER`, a call longer than that is reported as a hang: a note, a
//!   line on stderr, and the record of every thread inside MPI written, so `mpiscope report`
//!   can say where each rank waits, on whom, and for how long, while the job still hangs.
//!   With `MPISCOPE_HANG_ACTION=kill` the rank then ends its record and kills itself, which
//!   makes the launcher end the job; otherwise the program goes on undisturbed.
//!
//! Only threads inside MPI calls are ever asked (MPI libraries expect interrupted system
//! calls); threads computing or in their own system calls are left alone.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::collect::{self, Scope};
use crate::ending::{self, Ending};
use crate::state::Phase;
use crate::threads;

/// What the keeper watches for.
pub struct Keeper {
    /// Calls longer than this have their thread's record written (ticks; 0: never).
    pub flush_ticks: u64,
    /// Calls longer than this are reported as hangs (ticks).
    pub hang_ticks: Option<u64>,
    /// End the rank after reporting a hang.
    pub kill: bool,
    /// Clock ticks per ns.
    pub ticks_per_ns: f64,
}

/// Starts the keeper thread (nothing to do: no thread).
pub fn start(k: Keeper) {
    if k.flush_ticks == 0 && k.hang_ticks.is_none() {
        return;
    }
    let shortest = [Some(k.flush_ticks).filter(|&t| t > 0), k.hang_ticks]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(0);
    let poll_ns = ((shortest as f64 / k.ticks_per_ns) / 4.0) as u64;
    let poll = Duration::from_nanos(poll_ns.clamp(1_000_000, 250_000_000));
    let spawned = std::thread::Builder::new()
        .name("mpiscope-keeper".into())
        .spawn(move || {
            // This thread never receives the process's signals: they are for the program.
            // SAFETY: a full set, applied to this thread only.
            unsafe {
                let mut all: libc::sigset_t = core::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, core::ptr::null_mut());
            }
            run(&k, poll);
        });
    if spawned.is_err() {
        crate::status::warn("cannot start the keeper thread; records are written only when buffers fill, and hangs are not reported");
    }
}

fn run(k: &Keeper, poll: Duration) {
    loop {
        std::thread::sleep(poll);
        if !crate::status::is_tracing() {
            return;
        }
        let now = crate::clock::ticks();
        let mut flush = false;
        let mut hung = Vec::new();
        threads::for_each_state(|st| {
            if st.phase.get() != Phase::InCall {
                return;
            }
            let seq = st.watch.t_enter.load(Ordering::Relaxed);
            let long = now.saturating_sub(seq);
            if k.flush_ticks > 0 && long >= k.flush_ticks && st.kept.load(Ordering::Relaxed) != seq
            {
                st.kept.store(seq, Ordering::Relaxed);
                flush = true;
            }
            if k.hang_ticks.is_some_and(|h| long >= h)
                && st.hang_reported.load(Ordering::Relaxed) != seq
            {
                st.hang_reported.store(seq, Ordering::Relaxed);
                hung.push((st.index, st.watch.call.load(Ordering::Relaxed), long));
            }
        });
        if !hung.is_empty() {
            report(k, &hung, now);
            flush = true;
        }
        if flush {
            collect::collect(Scope::InMpi, false);
        }
        if k.kill && !hung.is_empty() {
            let (_, call, long) = hung[0];
            let reason = format!(
                "hang: inside {} for {:.1} s (--hang-action kill)",
                crate::calls::name(call),
                long as f64 / k.ticks_per_ns / 1e9
            );
            ending::end(&reason, Ending::Final { skip_self: false });
            // SAFETY: ending this process, as the user asked.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
}

fn report(k: &Keeper, hung: &[(u16, u32, u64)], now: u64) {
    for &(thread, call, long) in hung {
        let secs = long as f64 / k.ticks_per_ns / 1e9;
        let msg = format!("inside {} for {secs:.1} s", crate::calls::name(call));
        crate::sink::note_raw("hang", thread, None, &msg, now);
        crate::status::warn(&format!(
            "thread {thread} has been {msg}: a hang? The record of every thread inside MPI is written (mpiscope report shows where each rank waits){}",
            if k.kill {
                "; ending the rank (--hang-action kill)"
            } else {
                ""
            }
        ));
    }
}
