//! The fault servicer: a thread at the application's own priority that completes the data an
//! application thread is waiting for.
//!
//! The progress thread runs at the lowest priority so that it never takes a core from the
//! program; on a machine whose cores are all busy with other work it may get almost none,
//! and a program thread waiting on a page (in the kernel under userfaultfd, in the fault
//! handler under page protection) would wait as long. This thread sleeps in `poll` on the
//! userfaultfd (readable when a thread faults on a registered page) and on the fault
//! handler's eventfd; woken, it drives the operations itself until the pages it was told
//! about are published, and sleeps again. It runs only while a program thread is blocked,
//! on the core that thread left idle.

use std::sync::atomic::Ordering;

use mpiscope_overlap_core::guard::{self, TABLE};
use mpiscope_overlap_core::pending::Cover;
use mpiscope_overlap_core::uffd;

use crate::engine::{progress_all, INSIDE, STOP};

/// The servicer's thread, while it runs.
static SERVICER: std::sync::Mutex<Option<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(None);

/// Starts the servicer (after [`crate::engine::start`], when T-NBC is active).
pub fn start() {
    if !crate::engine::ACTIVE.load(Ordering::Acquire) {
        return;
    }
    *SERVICER.lock().unwrap_or_else(|e| e.into_inner()) = spawn();
}

/// Stops the servicer (after [`crate::engine::stop`], which sets the flag it polls).
pub fn stop() {
    guard::poke();
    if let Some(h) = SERVICER.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = h.join();
    }
}

/// Spawns the servicer; `None` when there is nothing to wait on (no userfaultfd and no
/// eventfd).
fn spawn() -> Option<std::thread::JoinHandle<()>> {
    let fds: Vec<i32> = [uffd::poll_fd(), guard::notify_fd()]
        .into_iter()
        .flatten()
        .collect();
    if fds.is_empty() {
        return None;
    }
    std::thread::Builder::new()
        .name("mpiscope-faults".into())
        .spawn(move || {
            INSIDE.with(|c| c.set(true));
            let page = guard::page_size();
            let mut polled: Vec<libc::pollfd> = fds
                .iter()
                .map(|&fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let mut addrs = Vec::new();
            while !STOP.load(Ordering::Acquire) {
                // SAFETY: the array holds `polled.len()` entries.
                let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as _, 100) };
                if n <= 0 {
                    continue;
                }
                addrs.clear();
                uffd::read_faults(&mut addrs);
                guard::take_waiting(&mut addrs);
                while addrs
                    .iter()
                    .any(|&a| TABLE.cover(a, page) == Cover::Pending)
                {
                    if !progress_all() {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        })
        .ok()
}
