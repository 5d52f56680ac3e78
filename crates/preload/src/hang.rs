//! Hang diagnosis: a watchdog thread notices a thread that has been inside one MPI call for
//! longer than `MPISCOPE_HANG_AFTER`, gets the record of every thread inside MPI written with
//! the call it is in (so `mpiscope report` can say where each rank waits, on whom, and for
//! how long, even while the job hangs), notes the hang, and says so on stderr. With
//! `MPISCOPE_HANG_ACTION=kill` the rank then ends its record and kills itself, which makes
//! the launcher end the job; otherwise the program goes on undisturbed.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::threads::{self, Phase};

/// Starts the watchdog: calls longer than `after_ns` are reported; `ticks_per_ns` converts
/// the recorder's clock.
pub fn start(after_ns: u64, kill: bool, ticks_per_ns: f64) {
    let poll = Duration::from_nanos((after_ns / 4).clamp(1_000_000, 1_000_000_000));
    let after_ticks = (after_ns as f64 * ticks_per_ns) as u64;
    let spawned = std::thread::Builder::new()
        .name("mpiscope-hang".into())
        .spawn(move || {
            // This thread never receives the process's signals: they are for the program.
            // SAFETY: a full set, applied to this thread only.
            unsafe {
                let mut all: libc::sigset_t = core::mem::zeroed();
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, core::ptr::null_mut());
            }
            watch(poll, after_ticks, ticks_per_ns, kill);
        });
    if spawned.is_err() {
        crate::session::warn("cannot start the hang watchdog; hangs will not be reported");
    }
}

fn watch(poll: Duration, after_ticks: u64, ticks_per_ns: f64, kill: bool) {
    loop {
        std::thread::sleep(poll);
        if !crate::session::is_tracing() {
            return;
        }
        let now = crate::clock::ticks();
        let mut hung = Vec::new();
        threads::for_each_state(|st| {
            if st.phase.get() != Phase::InCall {
                return;
            }
            let seq = st.watch.seq.load(Ordering::Relaxed);
            let since = st.watch.t_enter.load(Ordering::Relaxed);
            if now.saturating_sub(since) >= after_ticks
                && st.hang_reported.load(Ordering::Relaxed) != seq
            {
                st.hang_reported.store(seq, Ordering::Relaxed);
                let call = st.watch.call.load(Ordering::Relaxed);
                hung.push((st.index, call, now.saturating_sub(since)));
            }
        });
        if hung.is_empty() {
            continue;
        }
        let mut first = String::new();
        for &(thread, call, ticks) in &hung {
            let name = crate::wrappers::CALL_NAMES
                .get(crate::rt::c_id(call) as usize)
                .copied()
                .unwrap_or("?");
            let secs = ticks as f64 / ticks_per_ns / 1e9;
            let msg = format!("inside {name} for {secs:.1} s");
            crate::sink::note_raw("hang", thread, None, &msg, now);
            if first.is_empty() {
                first = format!("{name} for {secs:.1} s");
            }
            crate::session::warn(&format!(
                "thread {thread} has been {msg}; the record of every thread inside MPI is written{}",
                if kill { "; ending the rank (--hang-action kill)" } else { "" }
            ));
        }
        crate::signals::collect(crate::signals::Scope::InMpi, false);
        if kill {
            let reason = format!("hang: inside {first} (--hang-action kill)");
            crate::sink::end(&reason, crate::sink::Ending::Final { skip_self: false });
            // SAFETY: ending this process, as asked.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        }
    }
}
