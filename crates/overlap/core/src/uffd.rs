//! Userfaultfd guarding: the kernel makes an access to an in-flight page wait, system calls
//! included.
//!
//! A buffer whose pages were moved aside (`MREMAP_DONTUNMAP` in [`crate::guard`]) leaves an
//! empty range. Registered here for missing-page faults, any access to that range, by the
//! application or by the kernel copying to or from it inside a system call (`write` from
//! stdio's `fwrite`, `pwritev2`, `getrandom`, `fstat` into the buffer...), blocks in the
//! kernel until [`wake`] after the data's pages were moved back in. With page protection the
//! kernel answers such a system call with EFAULT instead, and no list of interposed library
//! functions can be complete, so this is the mechanism of choice; page protection and the
//! SIGSEGV handler remain the fallback where userfaultfd is unavailable (an unprivileged
//! process with `vm.unprivileged_userfaultfd = 0` and no access to `/dev/userfaultfd`), or
//! where a range cannot be registered (memory that is neither private anonymous nor shared
//! memory).
//!
//! Nothing reads the descriptor's fault messages to resolve faults: a publication moves the
//! data's pages over the waiting range with one `mremap`, then wakes the waiters, which retry
//! the access on the new pages. The messages are read only to count faults ([`drain`]).
//! A fault that the kernel queues after the range was published finds the page present on
//! retry; one queued before is woken by [`wake`] (the kernel checks the page table under the
//! same lock `mremap` takes, so there is no lost wake-up).

use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};

/// `UFFD_API` of `linux/userfaultfd.h`.
const UFFD_API: u64 = 0xAA;
/// `UFFDIO_API`: `_IOWR(0xAA, 0x3F, struct uffdio_api)`.
const UFFDIO_API: libc::c_ulong = 0xC018_AA3F;
/// `UFFDIO_REGISTER`: `_IOWR(0xAA, 0x00, struct uffdio_register)`.
const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00;
/// `UFFDIO_UNREGISTER`: `_IOR(0xAA, 0x01, struct uffdio_range)`.
const UFFDIO_UNREGISTER: libc::c_ulong = 0x8010_AA01;
/// `UFFDIO_WAKE`: `_IOR(0xAA, 0x02, struct uffdio_range)`.
const UFFDIO_WAKE: libc::c_ulong = 0x8010_AA02;
/// `USERFAULTFD_IOC_NEW` of `/dev/userfaultfd`: `_IO(0xAA, 0x00)`.
const USERFAULTFD_IOC_NEW: libc::c_ulong = 0xAA00;
/// `UFFDIO_REGISTER_MODE_MISSING`.
const MODE_MISSING: u64 = 1;
/// The `ioctls` bits `UFFDIO_API` must report: register and unregister.
const NEEDED_IOCTLS: u64 = (1 << 0x00) | (1 << 0x01);
/// The `ioctls` bit of a registered range that allows `UFFDIO_WAKE`.
const WAKE_IOCTL: u64 = 1 << 0x02;
/// `sizeof(struct uffd_msg)`.
const MSG_BYTES: usize = 32;
/// `UFFD_EVENT_PAGEFAULT`, the first byte of a fault message.
const EVENT_PAGEFAULT: u8 = 0x12;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

/// How in-flight pages are guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// Userfaultfd: every access waits in the kernel, system calls included.
    Userfaultfd,
    /// Page protection and a SIGSEGV handler: the application's own accesses wait; a system
    /// call on a protected page fails with EFAULT unless an interposed function completed
    /// the operation first.
    Mprotect,
}

impl Mechanism {
    /// The name `--stats` prints and `MPISCOPE_OVERLAP_GUARD` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Userfaultfd => "userfaultfd",
            Mechanism::Mprotect => "mprotect",
        }
    }
}

/// What `MPISCOPE_OVERLAP_GUARD` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Userfaultfd when the kernel grants it, else page protection.
    Auto,
    /// Userfaultfd (page protection, with a warning, when the kernel refuses it).
    Userfaultfd,
    /// Page protection only.
    Mprotect,
}

impl Choice {
    /// Parses `auto`, `userfaultfd` or `mprotect` (case-insensitive, surrounding blanks
    /// ignored); `None` for anything else.
    pub fn parse(s: &str) -> Option<Choice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(Choice::Auto),
            "userfaultfd" | "uffd" => Some(Choice::Userfaultfd),
            "mprotect" => Some(Choice::Mprotect),
            _ => None,
        }
    }
}

/// The process's userfaultfd descriptor, or -1.
static FD: AtomicI32 = AtomicI32::new(-1);
/// 0 until [`init`], then 1 + the index of the [`Mechanism`] in use.
static STATE: AtomicU8 = AtomicU8::new(0);
/// Faults the kernel reported on registered ranges (read by [`drain`]).
pub static FAULTS: AtomicUsize = AtomicUsize::new(0);
/// Ranges that could not be registered (guarded by page protection instead).
pub static REFUSED: AtomicUsize = AtomicUsize::new(0);

/// Opens the descriptor: the system call first, then `/dev/userfaultfd` (Linux 6.1), both
/// without `UFFD_USER_MODE_ONLY`, since faults taken inside system calls are the point.
fn open() -> Result<i32, String> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: plain system calls on values we own.
    unsafe {
        let mut fd = libc::syscall(libc::SYS_userfaultfd, flags) as i32;
        let first = std::io::Error::last_os_error();
        if fd < 0 {
            let dev = libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if dev >= 0 {
                fd = libc::ioctl(dev, USERFAULTFD_IOC_NEW, flags);
                libc::close(dev);
            }
        }
        if fd < 0 {
            return Err(format!(
                "userfaultfd refused ({first}; /dev/userfaultfd: {})",
                std::io::Error::last_os_error()
            ));
        }
        let mut api = UffdioApi {
            api: UFFD_API,
            features: 0,
            ioctls: 0,
        };
        if libc::ioctl(fd, UFFDIO_API, &mut api) != 0 || api.ioctls & NEEDED_IOCTLS != NEEDED_IOCTLS
        {
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            return Err(format!("UFFDIO_API failed ({e})"));
        }
        Ok(fd)
    }
}

/// Chooses the mechanism once per process (later calls return the first choice). With
/// [`Choice::Userfaultfd`], a refusal is returned as a message for the caller to print.
pub fn init(choice: Choice) -> (Mechanism, Option<String>) {
    if let Some(m) = current() {
        return (m, None);
    }
    let (m, warning) = match choice {
        Choice::Mprotect => (Mechanism::Mprotect, None),
        Choice::Auto | Choice::Userfaultfd => match open() {
            Ok(fd) => {
                FD.store(fd, Ordering::Release);
                (Mechanism::Userfaultfd, None)
            }
            Err(e) => (
                Mechanism::Mprotect,
                (choice == Choice::Userfaultfd)
                    .then(|| format!("{e}: in-flight pages are guarded by page protection")),
            ),
        },
    };
    let code = match m {
        Mechanism::Userfaultfd => 1,
        Mechanism::Mprotect => 2,
    };
    if STATE
        .compare_exchange(0, code, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // Another thread chose first: keep its choice, give back our descriptor.
        let fd = FD.load(Ordering::Acquire);
        if m == Mechanism::Userfaultfd && current() != Some(Mechanism::Userfaultfd) && fd >= 0 {
            FD.store(-1, Ordering::Release);
            // SAFETY: closing the descriptor opened above, published to no one else.
            unsafe { libc::close(fd) };
        }
        return (current().unwrap_or(Mechanism::Mprotect), None);
    }
    (m, warning)
}

/// The mechanism chosen by [`init`], if it ran.
pub fn current() -> Option<Mechanism> {
    match STATE.load(Ordering::Acquire) {
        1 => Some(Mechanism::Userfaultfd),
        2 => Some(Mechanism::Mprotect),
        _ => None,
    }
}

fn fd() -> Option<i32> {
    let fd = FD.load(Ordering::Acquire);
    (fd >= 0 && current() == Some(Mechanism::Userfaultfd)).then_some(fd)
}

/// Registers the page-aligned range `[start, start + len)` for missing-page faults: from now
/// on an access to a page not present there waits until [`wake`]. False (nothing changed)
/// without userfaultfd or when the kernel refuses the range (a file mapping, say).
pub fn register_missing(start: usize, len: usize) -> bool {
    let Some(fd) = fd() else { return false };
    if len == 0 {
        return true;
    }
    let mut r = UffdioRegister {
        range: UffdioRange {
            start: start as u64,
            len: len as u64,
        },
        mode: MODE_MISSING,
        ioctls: 0,
    };
    // SAFETY: an ioctl on our descriptor with a valid argument.
    let ok = unsafe { libc::ioctl(fd, UFFDIO_REGISTER, &mut r) } == 0;
    if ok && r.ioctls & WAKE_IOCTL == 0 {
        unregister(start, len);
        REFUSED.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    if !ok {
        REFUSED.fetch_add(1, Ordering::Relaxed);
    }
    ok
}

/// Wakes every thread waiting for a page of `[start, start + len)` (they retry the access).
pub fn wake(start: usize, len: usize) {
    range_ioctl(UFFDIO_WAKE, start, len);
}

/// Unregisters `[start, start + len)` (pages of it no longer registered are skipped) and
/// wakes its waiters.
pub fn unregister(start: usize, len: usize) {
    range_ioctl(UFFDIO_UNREGISTER, start, len);
}

/// An ioctl of ours that takes a `struct uffdio_range` (nothing without userfaultfd or for an
/// empty range).
fn range_ioctl(request: libc::c_ulong, start: usize, len: usize) {
    let Some(fd) = fd() else { return };
    if len == 0 {
        return;
    }
    let r = UffdioRange {
        start: start as u64,
        len: len as u64,
    };
    // SAFETY: an ioctl on our descriptor with a valid argument.
    unsafe { libc::ioctl(fd, request, &r) };
}

/// The descriptor to poll for fault messages (readable when a thread waits on a page).
pub fn poll_fd() -> Option<i32> {
    fd()
}

/// Reads the fault messages queued so far, counts them in [`FAULTS`] and appends the
/// faulting addresses to `out`; returns how many.
pub fn read_faults(out: &mut Vec<usize>) -> usize {
    let Some(fd) = fd() else { return 0 };
    let mut buf = [0u8; MSG_BYTES * 16];
    let mut n = 0;
    loop {
        // SAFETY: reading into a buffer we own; the descriptor is non-blocking. The system
        // call, not libc's `read`, which the preload library interposes.
        let got = unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
        if got <= 0 {
            break;
        }
        let got = got as usize;
        for m in buf[..got].chunks_exact(MSG_BYTES) {
            if m[0] == EVENT_PAGEFAULT {
                // struct uffd_msg: event (1 byte), 7 reserved, then the fault's flags (u64)
                // and address (u64).
                let mut a = [0u8; 8];
                a.copy_from_slice(&m[16..24]);
                out.push(u64::from_ne_bytes(a) as usize);
                n += 1;
            }
        }
        if got < buf.len() {
            break;
        }
    }
    FAULTS.fetch_add(n, Ordering::Relaxed);
    n
}

/// Reads the fault messages queued so far and counts them in [`FAULTS`]; returns how many.
pub fn drain() -> usize {
    let Some(fd) = fd() else { return 0 };
    let mut buf = [0u8; MSG_BYTES * 16];
    let mut n = 0;
    loop {
        // SAFETY: reading into a buffer we own; the descriptor is non-blocking. The system
        // call, not libc's `read`, which the preload library interposes.
        let got = unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
        if got <= 0 {
            break;
        }
        let got = got as usize;
        n += buf[..got]
            .chunks_exact(MSG_BYTES)
            .filter(|m| m[0] == EVENT_PAGEFAULT)
            .count();
        if got < buf.len() {
            break;
        }
    }
    FAULTS.fetch_add(n, Ordering::Relaxed);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!(Choice::parse(" Auto "), Some(Choice::Auto));
        assert_eq!(Choice::parse("userfaultfd"), Some(Choice::Userfaultfd));
        assert_eq!(Choice::parse("MPROTECT"), Some(Choice::Mprotect));
        assert_eq!(Choice::parse("signals"), None);
        assert_eq!(Mechanism::Userfaultfd.name(), "userfaultfd");
    }
}
