//! Receive-buffer guarding: page protection, atomic publication of received pages, and the
//! SIGSEGV handler that makes the application wait for a sub-message instead of reading it early.
//!
//! Publication avoids the window in which a page would be readable before its data is in
//! place: received bytes are assembled in a page-aligned staging mapping laid out like the
//! user's pages, and [`publish`] moves those pages over the protected ones with one
//! `mremap(MREMAP_FIXED)`, which replaces them atomically, already readable and writable.
//!
//! The handler uses atomics, `sched_yield`, `futex` and `sigaction` only. A fault whose page
//! no slot of [`TABLE`] covers is not ours: the previous action is reinstalled (or called,
//! when it was an `SA_SIGINFO` handler) and the faulting access is retried, so genuine
//! crashes still die of SIGSEGV.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

use crate::pending::{Cover, Table};
use crate::Error;

/// Slots of pending sub-messages shared with the handler.
pub static TABLE: Table<4096> = Table::new();

/// Times a faulting thread yields its core before it sleeps until a release: a few, for data
/// about to land; yielding does not hand the core to the progress thread, which runs at the
/// lowest priority, so the wait is a futex sleep.
const YIELDS_BEFORE_SLEEP: u32 = 8;

/// Faults handled as ours (waited for or retried), for statistics.
pub static FAULTS: AtomicUsize = AtomicUsize::new(0);
static PAGE: AtomicUsize = AtomicUsize::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

struct Prev(UnsafeCell<libc::sigaction>);
// SAFETY: written once by `install` before the handler can run, read only afterwards.
unsafe impl Sync for Prev {}
static PREV: Prev = Prev(UnsafeCell::new(unsafe { std::mem::zeroed() }));

/// The system page size.
pub fn page_size() -> usize {
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    PAGE.store(p, Ordering::Relaxed);
    p
}

fn os_err(what: &'static str) -> Error {
    Error::Os(
        what,
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
    )
}

/// An eventfd the fault handler writes when a thread starts waiting for a page, or -1.
static NOTIFY: AtomicI32 = AtomicI32::new(-1);
/// The addresses threads wait on (a small ring; 0 is empty), for the servicer.
static WAITING: [AtomicUsize; 16] = [const { AtomicUsize::new(0) }; 16];
static WAITING_NEXT: AtomicUsize = AtomicUsize::new(0);

/// The descriptor the fault handler makes readable when a thread starts waiting for a page
/// (created on first call; `None` when the kernel refuses an eventfd).
pub fn notify_fd() -> Option<i32> {
    let fd = NOTIFY.load(Ordering::Acquire);
    if fd >= 0 {
        return Some(fd);
    }
    // SAFETY: eventfd has no preconditions.
    let new = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if new < 0 {
        return None;
    }
    match NOTIFY.compare_exchange(-1, new, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Some(new),
        Err(other) => {
            // SAFETY: closing the descriptor we just made and published to no one.
            unsafe { libc::close(new) };
            Some(other)
        }
    }
}

/// Records that a thread waits on `addr` and wakes the servicer (async-signal-safe: atomics
/// and a raw `write`, not the C library's, which the preload library interposes).
fn notify_waiting(addr: usize) {
    let fd = NOTIFY.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    let i = WAITING_NEXT.fetch_add(1, Ordering::AcqRel) % WAITING.len();
    WAITING[i].store(addr, Ordering::Release);
    let one: u64 = 1;
    // SAFETY: writing 8 bytes we own to our eventfd.
    unsafe { libc::syscall(libc::SYS_write, fd, &one as *const u64, 8usize) };
}

/// Wakes whoever polls [`notify_fd`] without a waiting address (to stop it, say).
pub fn poke() {
    let fd = NOTIFY.load(Ordering::Acquire);
    if fd >= 0 {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes we own to our eventfd.
        unsafe { libc::syscall(libc::SYS_write, fd, &one as *const u64, 8usize) };
    }
}

/// Takes the addresses threads started waiting on since the last call (and resets the
/// eventfd), appending them to `out`.
pub fn take_waiting(out: &mut Vec<usize>) {
    let fd = NOTIFY.load(Ordering::Acquire);
    if fd >= 0 {
        let mut v: u64 = 0;
        // SAFETY: reading 8 bytes into our own variable; the descriptor is non-blocking.
        unsafe { libc::syscall(libc::SYS_read, fd, &mut v as *mut u64, 8usize) };
    }
    for w in &WAITING {
        let a = w.swap(0, Ordering::AcqRel);
        if a != 0 {
            out.push(a);
        }
    }
}

/// Installs the SIGSEGV handler once (later calls do nothing).
pub fn install() -> Result<(), Error> {
    page_size();
    if INSTALLED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    // SAFETY: a zeroed sigaction is valid; PREV is written here only, before the handler runs.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction =
            handler as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGSEGV, &sa, PREV.0.get()) != 0 {
            INSTALLED.store(false, Ordering::Release);
            return Err(os_err("sigaction"));
        }
    }
    Ok(())
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    match TABLE.cover(addr, page) {
        Cover::Pending => {
            FAULTS.fetch_add(1, Ordering::Relaxed);
            notify_waiting(addr);
            TABLE.wait_while_pending(addr, page, YIELDS_BEFORE_SLEEP);
        }
        Cover::Released => {
            FAULTS.fetch_add(1, Ordering::Relaxed);
        }
        Cover::NotOurs => {
            // A first touch of a traced sub-message (access-order tracing): recorded, its
            // pages reopened, the access retried.
            if let Some((lo, hi)) = crate::access::ACCESS.touch(addr, page) {
                // SAFETY: mprotect is a plain system call; the range is ours (armed).
                unsafe {
                    libc::mprotect(
                        lo as *mut libc::c_void,
                        hi - lo,
                        libc::PROT_READ | libc::PROT_WRITE,
                    )
                };
                return;
            }
            // SAFETY: PREV was filled by `install`; sigaction is async-signal-safe.
            unsafe {
                let prev = &*PREV.0.get();
                let h = prev.sa_sigaction;
                if prev.sa_flags & libc::SA_SIGINFO != 0 && h > 1 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(h);
                    f(sig, info, ctx);
                } else if h > 1 {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(h);
                    f(sig);
                } else {
                    // Default or ignored: reinstate the default so the retried access kills us.
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGSEGV, &sa, std::ptr::null_mut());
                }
            }
        }
    }
}

/// Sets the protection of `[start, end)` (page-aligned) to none (`open == false`) or read/write.
pub fn protect(start: usize, end: usize, open: bool) -> Result<(), Error> {
    if start >= end {
        return Ok(());
    }
    let prot = if open {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    };
    // SAFETY: the caller owns these pages (they lie inside a buffer it was given).
    if unsafe { libc::mprotect(start as *mut libc::c_void, end - start, prot) } != 0 {
        return Err(os_err("mprotect"));
    }
    Ok(())
}

/// Makes the whole pages `[start, end)` read-only (a send buffer whose sub-messages are still
/// in flight: the application may read it, and a write waits in the fault handler until the
/// pages are reopened with [`protect`]).
pub fn write_protect(start: usize, end: usize) -> Result<(), Error> {
    if start >= end {
        return Ok(());
    }
    // SAFETY: the caller owns the pages' protection for the duration of the operation.
    if unsafe { libc::mprotect(start as *mut libc::c_void, end - start, libc::PROT_READ) } != 0 {
        return Err(os_err("mprotect"));
    }
    Ok(())
}

/// Moves the user pages `[user, user + len)` to `stage` (`MREMAP_DONTUNMAP`), then guards the
/// user range, now mapped but empty: registered with userfaultfd when it runs (an access
/// waits in the kernel), else made inaccessible. Receiving into the application's own,
/// already populated pages avoids zero-filling fresh ones, which costs more than the transfer
/// itself in shared memory, and protecting an empty range needs no TLB shootdown; [`publish`]
/// moves the pages back. Only for a receive buffer during the collective call, which the
/// application may not access until the call returns. If the kernel refuses the move (shared
/// or file mappings before Linux 5.13), the pages are protected in place instead and the
/// function returns `Ok(false)`: the caller then receives into fresh pages.
pub fn adopt(user: usize, stage: usize, len: usize) -> Result<bool, Error> {
    if move_aside(user, stage, len)? {
        return Ok(true);
    }
    protect(user, user + len, false)?;
    Ok(false)
}

/// Moves the user pages `[user, user + len)`, data and all, to `stage` (`MREMAP_DONTUNMAP`)
/// and guards the user range (userfaultfd, else page protection, as [`adopt`]): `Ok(false)`, nothing changed, when the kernel
/// refuses the move. For a send buffer this is half the page-table work of write-protecting
/// the populated pages in place (measured: 2 MiB in 17 us against 32 us), at the price of
/// making reads wait too; [`publish`] moves the pages back.
pub fn move_aside(user: usize, stage: usize, len: usize) -> Result<bool, Error> {
    if len == 0 {
        return Ok(true);
    }
    // SAFETY: `stage` is a mapping of at least `len` bytes owned by the caller; the
    // application does not access the buffer during the call.
    if !unsafe { move_keeping_source(user, stage, len) } {
        return Ok(false);
    }
    if crate::uffd::register_missing(user, len) {
        return Ok(true);
    }
    if let Err(e) = protect(user, user + len, false) {
        // Put the pages back where the application expects them, leaving `stage` mapped
        // (empty) so its owner may still use and unmap it.
        // SAFETY: both ranges were just swapped by the move above.
        unsafe { move_keeping_source(stage, user, len) };
        return Err(e);
    }
    Ok(true)
}

/// Moves the pages `[from, from + len)` over `[to, to + len)` with `MREMAP_DONTUNMAP` (the
/// source stays mapped, empty); `false` when the kernel refuses.
///
/// # Safety
/// Both ranges must be whole pages owned by the caller, and nothing may access them meanwhile.
unsafe fn move_keeping_source(from: usize, to: usize, len: usize) -> bool {
    let p = mremap_syscall(
        from as *mut libc::c_void,
        len,
        len,
        libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP,
        to as *mut libc::c_void,
    );
    p != libc::MAP_FAILED
}

/// A page-aligned anonymous mapping used to assemble received pages before publication.
pub struct Staging {
    base: usize,
    len: usize,
    /// Ranges moved out by [`Staging::publish`] (absolute addresses, sorted): holes that
    /// anyone's later `mmap` may fill, so [`Drop`] must not unmap them.
    moved: Vec<(usize, usize)>,
}

impl Staging {
    /// Maps `len` bytes (rounded up to pages).
    pub fn new(len: usize) -> Result<Self, Error> {
        let page = page_size();
        let len = len.div_ceil(page).max(1) * page;
        // SAFETY: an anonymous private mapping has no preconditions.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(os_err("mmap"));
        }
        Ok(Self {
            base: p as usize,
            len,
            moved: Vec::new(),
        })
    }

    /// Moves the staging pages at `src` (inside this mapping) over the user pages at `dst`
    /// (see [`publish`]) and remembers the hole it leaves.
    pub fn publish(&mut self, src: usize, dst: usize, len: usize) -> Result<(), Error> {
        publish(src, dst, len)?;
        if len > 0 {
            self.moved.push((src, src + len));
            self.moved.sort_unstable();
        }
        Ok(())
    }

    /// The parts of the mapping still ours (not moved out), merged.
    pub fn remaining(&self) -> Vec<(usize, usize)> {
        crate::pages::subtract(&[(self.base, self.base + self.len)], &self.moved)
    }

    /// The mapping's address.
    pub fn base(&self) -> usize {
        self.base
    }

    /// The mapping's length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Only what is still ours: a hole left by a publication may hold someone else's
        // mapping by now (an MPI library's memory pool, a malloc arena).
        for (s, e) in self.remaining() {
            // SAFETY: unmapping ranges of our own mapping.
            unsafe { libc::munmap(s as *mut libc::c_void, e - s) };
        }
    }
}

/// Moves the staging pages at `src` over the user pages at `dst` (both page-aligned, `len` a
/// multiple of the page size) in one step: afterwards `dst` is readable and writable and holds
/// the staging bytes, and `src` is unmapped (it must not be used again).
pub fn publish(src: usize, dst: usize, len: usize) -> Result<(), Error> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: both ranges are whole pages owned by the caller; MREMAP_FIXED replaces dst.
    let p = unsafe {
        mremap_syscall(
            src as *mut libc::c_void,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            dst as *mut libc::c_void,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(os_err("mremap"));
    }
    // Threads waiting in the kernel for these pages (userfaultfd) retry on the new ones.
    crate::uffd::wake(dst, len);
    Ok(())
}

/// `mremap` through the system call, not libc's symbol: MPI libraries hook the symbol to keep
/// their registration caches coherent, and UCX's hook (Debian 12's MPICH runs over UCX) drops
/// the fifth argument, the target address of `MREMAP_FIXED`.
unsafe fn mremap_syscall(
    old: *mut libc::c_void,
    old_len: usize,
    new_len: usize,
    flags: libc::c_int,
    new: *mut libc::c_void,
) -> *mut libc::c_void {
    libc::syscall(libc::SYS_mremap, old, old_len, new_len, flags, new) as *mut libc::c_void
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Dropping a staging mapping leaves alone what was mapped into its holes meanwhile.
    #[test]
    fn drop_spares_mappings_in_published_holes() {
        let page = page_size();
        let mut st = Staging::new(4 * page).unwrap();
        let user = Staging::new(page).unwrap();
        let hole = st.base() + page;
        unsafe { std::ptr::write_bytes(hole as *mut u8, 7, page) };
        st.publish(hole, user.base(), page).unwrap();
        assert_eq!(
            st.remaining(),
            vec![(st.base(), hole), (hole + page, st.base() + 4 * page)]
        );
        // Someone else maps the hole.
        let p = unsafe {
            libc::mmap(
                hole as *mut libc::c_void,
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(p as usize, hole);
        drop(st);
        unsafe { std::ptr::write_volatile(hole as *mut u8, 1) };
        assert_eq!(
            unsafe { std::ptr::read_volatile(user.base() as *const u8) },
            7
        );
        unsafe { libc::munmap(hole as *mut libc::c_void, page) };
    }

    /// With userfaultfd, a system call given pages moved aside waits in the kernel until they
    /// are published, then moves every byte (with page protection it would fail with EFAULT).
    #[test]
    fn system_call_waits_for_publication_with_userfaultfd() {
        if crate::uffd::init(crate::uffd::Choice::Auto).0 != crate::uffd::Mechanism::Userfaultfd {
            eprintln!("userfaultfd unavailable here: nothing to test");
            return;
        }
        let page = page_size();
        let user = Staging::new(4 * page).unwrap();
        let mut stage = Staging::new(2 * page).unwrap();
        let (ub, sb) = (user.base(), stage.base());
        // SAFETY: our own mappings.
        unsafe { std::ptr::write_bytes(ub as *mut u8, 0xAA, 4 * page) };
        assert!(move_aside(ub + page, sb, 2 * page).unwrap());
        let mut fds = [0; 2];
        // SAFETY: a pipe into our own array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let writer = std::thread::spawn(move || {
            // SAFETY: the pages are ours; the kernel waits on the moved-aside ones.
            let n = unsafe { libc::write(fds[1], ub as *const libc::c_void, 4 * page) };
            flag.store(true, Ordering::Release);
            n
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::Acquire), "write did not wait");
        // SAFETY: the moved pages, now at `sb`, are ours.
        unsafe { std::ptr::write_bytes(sb as *mut u8, 0x5C, 2 * page) };
        stage.publish(sb, ub + page, 2 * page).unwrap();
        assert_eq!(writer.join().unwrap(), (4 * page) as isize);
        let mut got = vec![0u8; 4 * page];
        // SAFETY: reading the pipe into our own vector.
        let n = unsafe { libc::read(fds[0], got.as_mut_ptr().cast(), got.len()) };
        assert_eq!(n, (4 * page) as isize);
        assert!(got[..page].iter().all(|&b| b == 0xAA));
        assert!(got[page..3 * page].iter().all(|&b| b == 0x5C));
        assert!(got[3 * page..].iter().all(|&b| b == 0xAA));
        // SAFETY: closing our pipe.
        unsafe { (libc::close(fds[0]), libc::close(fds[1])) };
    }

    /// The application thread reads a protected page while another thread publishes it late:
    /// the read waits and sees the published bytes, never the old ones.
    #[test]
    fn fault_waits_for_publication() {
        install().unwrap();
        let page = page_size();
        let user = Staging::new(4 * page).unwrap();
        let ub = user.base();
        // SAFETY: our own mapping.
        unsafe { std::ptr::write_bytes(ub as *mut u8, 0xAA, 4 * page) };
        let slot = TABLE.insert(ub + page, ub + 3 * page).unwrap();
        protect(ub + page, ub + 3 * page, false).unwrap();
        let publisher = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            let st = Staging::new(2 * page).unwrap();
            // SAFETY: our own mapping.
            unsafe { std::ptr::write_bytes(st.base() as *mut u8, 0x5C, 2 * page) };
            publish(st.base(), ub + page, 2 * page).unwrap();
            TABLE.release(slot);
        });
        let t0 = std::time::Instant::now();
        // SAFETY: the page is ours; the read faults until published.
        let v = unsafe { std::ptr::read_volatile((ub + page + 17) as *const u8) };
        let w = unsafe { std::ptr::read_volatile((ub + 3 * page - 1) as *const u8) };
        let edge = unsafe { std::ptr::read_volatile((ub + 3 * page) as *const u8) };
        assert!(t0.elapsed() >= Duration::from_millis(40));
        assert_eq!((v, w, edge), (0x5C, 0x5C, 0xAA));
        publisher.join().unwrap();
        TABLE.free(slot);
    }

    /// A fault on memory that is not ours still kills the process with SIGSEGV (in a child).
    #[test]
    fn foreign_fault_still_crashes() {
        install().unwrap();
        let page = page_size();
        let m = Staging::new(page).unwrap();
        protect(m.base(), m.base() + page, false).unwrap();
        // SAFETY: fork in a test; the child only touches memory and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe {
                std::ptr::read_volatile(m.base() as *const u8);
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waiting for our child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFSIGNALED(status), "status {status}");
        assert_eq!(libc::WTERMSIG(status), libc::SIGSEGV);
    }
}
