//! Running a launched command (`mpirun ...`) so that signals meant for the job reach it and
//! mpiscope outlives it to complete the run.
//!
//! * SIGINT (the terminal's Ctrl-C, sent to the whole foreground process group) is the
//!   command's to act on: mpiscope only notes it.
//! * SIGTERM and SIGHUP sent to mpiscope alone (`kill`, a batch system, a closed terminal)
//!   are passed on to the command, once each.
//!
//! In both cases mpiscope waits for the command to end and then finishes its own work
//! (moving the trace into place, the manifest). The handlers are functions, not SIG_IGN:
//! handlers are reset at exec, so the command gets each signal's default action.

use std::process::Command;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use anyhow::{Context, Result};

/// The command's process id while it runs (0 otherwise).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// The first signal mpiscope received while the command ran (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// When it came: Unix time in ns (0: unknown).
static RECEIVED_AT_NS: AtomicU64 = AtomicU64::new(0);

extern "C" fn note_and_pass_on(sig: libc::c_int) {
    if RECEIVED
        .compare_exchange(0, sig, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime is async-signal-safe and writes only `ts`.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } == 0 {
            let ns = (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64);
            RECEIVED_AT_NS.store(ns, Ordering::Release);
        }
    }
    let child = CHILD.load(Ordering::Acquire);
    if child > 0 && sig != libc::SIGINT {
        // SAFETY: kill is async-signal-safe; the pid is our own child's.
        unsafe { libc::kill(child, sig) };
    }
}

const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Our handlers, installed while the command runs; the previous ones come back at drop.
struct Handlers([libc::sighandler_t; 3]);

impl Handlers {
    fn install() -> Handlers {
        let h = note_and_pass_on as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: installs an async-signal-safe handler.
        Handlers(HANDLED.map(|s| unsafe { libc::signal(s, h) }))
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        for (s, old) in HANDLED.iter().zip(self.0) {
            // SAFETY: restores the disposition found at `install`.
            unsafe { libc::signal(*s, old) };
        }
    }
}

/// How the command ended.
pub struct Ended {
    /// Its exit code (128 + the signal's number when a signal ended it, as shells say).
    pub code: i32,
    /// A signal mpiscope received while it ran (`SIGTERM`, ...).
    pub received: Option<&'static str>,
    /// When mpiscope received it, Unix seconds.
    pub received_unix_s: Option<f64>,
}

fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Runs `cmd` to its end.
pub fn run(mut cmd: Command, what: &str) -> Result<Ended> {
    let _h = Handlers::install();
    RECEIVED.store(0, Ordering::Release);
    RECEIVED_AT_NS.store(0, Ordering::Release);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run `{what}`"))?;
    CHILD.store(child.id() as i32, Ordering::Release);
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| format!("waiting for `{what}`")),
        }
    };
    CHILD.store(0, Ordering::Release);
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let received = match RECEIVED.load(Ordering::Acquire) {
        0 => None,
        s => Some(name(s)),
    };
    let received_unix_s = match RECEIVED_AT_NS.load(Ordering::Acquire) {
        0 => None,
        ns => Some(ns as f64 / 1e9),
    };
    Ok(Ended {
        code,
        received,
        received_unix_s,
    })
}
