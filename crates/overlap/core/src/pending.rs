//! The table of sub-message address ranges a SIGSEGV handler consults (async-signal-safe).
//!
//! A fixed array of slots, each an address range and a state, read and written with atomics only:
//! no allocation and no lock, so the handler can search it while the progress thread updates it.
//! Protocol: the progress thread `insert`s a range before protecting its pages, marks it
//! `release`d only after the range is copied and every page it touches is unprotected, and the
//! application thread `free`s the slots of an operation when it completes it. A fault is ours
//! when some slot (pending or released) covers its page; the handler waits while a pending slot
//! covers it and then returns so the access is retried.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::Error;

const FREE: u32 = 0;
const CLAIMED: u32 = 1;
const PENDING: u32 = 2;
const RELEASED: u32 = 3;

struct Slot {
    start: AtomicUsize,
    end: AtomicUsize,
    state: AtomicU32,
}

/// What covers a faulting address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cover {
    /// No slot: the fault is not ours.
    NotOurs,
    /// A pending sub-message shares the page: wait.
    Pending,
    /// Only released sub-messages cover it: the page is accessible again, retry.
    Released,
}

/// A fixed-capacity table of `N` slots.
pub struct Table<const N: usize> {
    slots: [Slot; N],
    /// Bumped by every release: the futex word faulting threads sleep on.
    generation: AtomicU32,
    /// Threads asleep in [`Table::wait_while_pending`].
    sleepers: AtomicU32,
}

impl<const N: usize> Default for Table<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Table<N> {
    /// An empty table (usable in a `static`).
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const EMPTY: Slot = Slot {
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            state: AtomicU32::new(FREE),
        };
        Self {
            slots: [EMPTY; N],
            generation: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
        }
    }

    /// Records the pending range `[start, end)`; returns its slot.
    pub fn insert(&self, start: usize, end: usize) -> Result<usize, Error> {
        for (i, s) in self.slots.iter().enumerate() {
            // A plain load first: a failed compare-exchange still takes the cache line.
            if s.state.load(Ordering::Relaxed) == FREE
                && s.state
                    .compare_exchange(FREE, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                s.start.store(start, Ordering::Relaxed);
                s.end.store(end, Ordering::Relaxed);
                s.state.store(PENDING, Ordering::Release);
                return Ok(i);
            }
        }
        Err(Error::TableFull(N))
    }

    /// Marks slot `i` released: its data is in place and its pages are accessible.
    pub fn release(&self, i: usize) {
        self.slots[i].state.store(RELEASED, Ordering::Release);
        self.generation.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            futex(
                &self.generation,
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX as u32,
                None,
            );
        }
    }

    /// Blocks the calling thread while a pending slot covers the page of `addr` (the fault
    /// handler's wait): first `spins` yields of the core, then asleep on a futex that every
    /// release wakes, so a progress thread of lower priority gets the core at once and the
    /// waiter resumes as soon as the data is in place. Async-signal-safe: atomics and raw
    /// system calls only.
    pub fn wait_while_pending(&self, addr: usize, page: usize, spins: u32) {
        for _ in 0..spins {
            if self.cover(addr, page) != Cover::Pending {
                return;
            }
            // SAFETY: sched_yield has no preconditions and is async-signal-safe.
            unsafe { libc::sched_yield() };
        }
        // A bounded sleep: a release between the check and the sleep changes the word, so the
        // kernel returns at once; the timeout only guards against a release missed otherwise.
        let timeout = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        loop {
            let seen = self.generation.load(Ordering::SeqCst);
            if self.cover(addr, page) != Cover::Pending {
                return;
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            futex(
                &self.generation,
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                seen,
                Some(&timeout),
            );
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Frees slot `i` for reuse.
    pub fn free(&self, i: usize) {
        self.slots[i].state.store(FREE, Ordering::Release);
    }

    /// Whether slot `i` is still pending.
    pub fn is_pending(&self, i: usize) -> bool {
        self.slots[i].state.load(Ordering::Acquire) == PENDING
    }

    /// What covers the page (of size `page`, a power of two) holding `addr`. Async-signal-safe.
    pub fn cover(&self, addr: usize, page: usize) -> Cover {
        let pg = addr & !(page - 1);
        let mut found = Cover::NotOurs;
        for s in &self.slots {
            let st = s.state.load(Ordering::Acquire);
            if st != PENDING && st != RELEASED {
                continue;
            }
            let start = s.start.load(Ordering::Relaxed) & !(page - 1);
            let end = s.end.load(Ordering::Relaxed);
            if pg >= start && pg < end {
                if st == PENDING {
                    return Cover::Pending;
                }
                found = Cover::Released;
            }
        }
        found
    }
}

/// The futex system call on `word` (wait while it holds `val`, or wake up to `val` sleepers).
fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    // SAFETY: `word` is a live, aligned u32; the timeout, if any, outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    const P: usize = 4096;

    #[test]
    fn cover_states() {
        let t: Table<4> = Table::new();
        assert_eq!(t.cover(5 * P, P), Cover::NotOurs);
        let a = t.insert(P + 100, 2 * P + 10).unwrap();
        let b = t.insert(2 * P + 10, 4 * P).unwrap();
        assert_eq!(t.cover(P, P), Cover::Pending); // same page as a's first byte
        assert_eq!(t.cover(2 * P + 5, P), Cover::Pending);
        t.release(a);
        assert_eq!(t.cover(P + 200, P), Cover::Released);
        assert_eq!(t.cover(2 * P, P), Cover::Pending); // shared with b
        t.release(b);
        assert_eq!(t.cover(2 * P, P), Cover::Released);
        assert_eq!(t.cover(4 * P, P), Cover::NotOurs);
        t.free(a);
        t.free(b);
        assert_eq!(t.cover(2 * P, P), Cover::NotOurs);
    }

    #[test]
    fn sleeper_wakes_on_release() {
        static T: Table<8> = Table::new();
        let i = T.insert(20 * P, 21 * P).unwrap();
        let woke = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                T.wait_while_pending(20 * P + 7, P, 0);
                woke.store(true, Ordering::Release);
            });
            std::thread::sleep(std::time::Duration::from_millis(30));
            assert!(!woke.load(Ordering::Acquire), "woke before the release");
            T.release(i);
            h.join().unwrap();
        });
        assert!(woke.load(Ordering::Acquire));
        T.free(i);
    }

    #[test]
    fn full_table_reports() {
        let t: Table<2> = Table::new();
        let a = t.insert(0, 1).unwrap();
        t.insert(1, 2).unwrap();
        assert_eq!(t.insert(2, 3), Err(Error::TableFull(2)));
        t.free(a);
        assert_eq!(t.insert(2, 3), Ok(a));
    }

    /// A waiter spinning on `cover` sees the release made by another thread.
    #[test]
    fn waiter_sees_release() {
        static T: Table<8> = Table::new();
        let i = T.insert(10 * P, 11 * P).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                while T.cover(10 * P + 1, P) == Cover::Pending {
                    std::hint::spin_loop();
                }
                stop.store(true, Ordering::Release);
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!stop.load(Ordering::Acquire));
            T.release(i);
            h.join().unwrap();
        });
        assert!(T.cover(10 * P, P) == Cover::Released);
        T.free(i);
    }
}
