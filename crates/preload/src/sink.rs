//! The rank file: writing blocks, notes and the trailer, and stopping cleanly when the file
//! system refuses (how the record ends is [`crate::ending`]'s).
//!
//! Everything here may run in a signal handler: no allocation (messages and JSON blocks are
//! formatted into fixed buffers), only async-signal-safe calls.
//!
//! A write that fails (a full disk, a quota, a file size limit, an I/O error) never ends the
//! program: the file is cut back to its last complete block, a note and the trailer say why
//! and when tracing stopped (when there is room for them), one line on stderr says the same,
//! and recording stops. `SIGXFSZ`, which the kernel sends for a write beyond the file size
//! limit, is blocked around our writes and consumed, so it is never delivered for them.

use std::fmt::Write as _;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Mutex;

use mpiscope_trace::block;

use crate::calls::{self, Counter, FORTRAN_BASE, NCALLS};
use crate::clock;
use crate::fixed::FixedBuf;
use crate::status::warn_args;

static FD: AtomicI32 = AtomicI32::new(-1);
static WRITE_LOCK: Mutex<()> = Mutex::new(());
/// Bytes of the file that hold complete blocks.
static FILE_LEN: AtomicU64 = AtomicU64::new(0);
static EVENTS: AtomicU64 = AtomicU64::new(0);
static LOST: AtomicU64 = AtomicU64::new(0);
static ENDED: AtomicBool = AtomicBool::new(false);
/// Starts writing to `fd`, which holds `len` bytes of complete blocks.
pub(crate) fn open(fd: c_int, len: u64) {
    FILE_LEN.store(len, Ordering::Release);
    FD.store(fd, Ordering::Release);
}

/// Is the rank file open?
pub(crate) fn is_open() -> bool {
    FD.load(Ordering::Acquire) >= 0
}

fn write_all(fd: c_int, mut buf: &[u8]) -> Result<(), c_int> {
    while !buf.is_empty() {
        // SAFETY: valid buffer.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            // SAFETY: errno is thread-local.
            let e = unsafe { *libc::__errno_location() };
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(libc::EIO);
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// Writes with `SIGXFSZ` blocked on this thread; a `SIGXFSZ` our write raised is consumed.
fn write_guarded(fd: c_int, buf: &[u8]) -> Result<(), c_int> {
    // SAFETY: signal mask operations on local sets.
    unsafe {
        let mut set: libc::sigset_t = core::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGXFSZ);
        let mut old: libc::sigset_t = core::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = write_all(fd, buf);
        if r == Err(libc::EFBIG) {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let mut info: libc::siginfo_t = core::mem::zeroed();
            libc::sigtimedwait(&set, &mut info, &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
        r
    }
}

/// Appends a sealed block of `events` events to the rank file.
pub fn write_block(bytes: &[u8], events: u64) {
    if !is_open() {
        LOST.fetch_add(events, Ordering::Relaxed);
        return;
    }
    let failed = {
        let _g = WRITE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let fd = FD.load(Ordering::Acquire);
        if fd < 0 {
            Some(0)
        } else {
            match write_guarded(fd, bytes) {
                Ok(()) => {
                    FILE_LEN.fetch_add(bytes.len() as u64, Ordering::AcqRel);
                    None
                }
                Err(e) => Some(e),
            }
        }
    };
    match failed {
        None => {
            EVENTS.fetch_add(events, Ordering::Relaxed);
        }
        Some(0) => {
            LOST.fetch_add(events, Ordering::Relaxed);
        }
        Some(e) => {
            LOST.fetch_add(events, Ordering::Relaxed);
            stop_on_error(e);
        }
    }
}

/// The file system refused a write: cut the file back to its last complete block, say why
/// in a note and the trailer (if they fit), stop recording, and let the program go on.
fn stop_on_error(errno: c_int) {
    if ENDED.swap(true, Ordering::AcqRel) {
        return;
    }
    calls::stop_recording();
    let fd = FD.load(Ordering::Acquire);
    let len = FILE_LEN.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: our descriptor; a partial block after `len` is removed.
        unsafe { libc::ftruncate(fd, len as libc::off_t) };
    }
    let mut reason = [0u8; 160];
    let mut w = FixedBuf {
        buf: &mut reason,
        len: 0,
    };
    let what = error_text(errno);
    let _ = write!(w, "tracing stopped: cannot write the trace: {what}");
    let (t, ns) = clock::pair();
    let secs = ns.saturating_sub(crate::status::epoch_ns()) as f64 / 1e9;
    note_raw(
        "stopped",
        0,
        None,
        &w.as_str()["tracing stopped: ".len()..],
        t,
    );
    write_trailer(w.as_str());
    warn_args(format_args!(
        "cannot write the trace: {what}; tracing stopped at {secs:.3} s with {} events in the file ({len} bytes); the program continues",
        EVENTS.load(Ordering::Relaxed)
    ));
    close();
}

fn error_text(errno: c_int) -> &'static str {
    match errno {
        libc::ENOSPC => "No space left on device",
        libc::EDQUOT => "Disk quota exceeded",
        libc::EFBIG => "File too large (the file size limit, ulimit -f)",
        libc::EIO => "Input/output error",
        libc::EBADF => "Bad file descriptor",
        libc::EROFS => "Read-only file system",
        libc::ENOMEM => "Cannot allocate memory",
        _ => "write error",
    }
}

/// Closes the rank file: nothing is written after this.
pub(crate) fn close() {
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
    }
}

/// Writes a small JSON block (a note) built in a fixed buffer.
fn write_json_block(kind: block::BlockKind, thread: u16, json: &[u8], sync: (u64, u64)) {
    let mut buf = [0u8; 1024];
    let n = json.len().min(buf.len() - block::BLOCK_HEADER_LEN);
    let hdr = block::BlockHeader {
        kind,
        thread,
        payload_len: n as u32,
        records: 1,
        base_ticks: sync.0,
        sync_ticks: sync.0,
        sync_ns: sync.1,
        crc: 0,
    };
    hdr.write_fields(&mut buf[..block::BLOCK_HEADER_LEN]);
    buf[block::BLOCK_HEADER_LEN..block::BLOCK_HEADER_LEN + n].copy_from_slice(&json[..n]);
    let crc = block::block_crc(
        &buf[..40],
        &buf[block::BLOCK_HEADER_LEN..block::BLOCK_HEADER_LEN + n],
    );
    buf[40..44].copy_from_slice(&crc.to_le_bytes());
    let all = &buf[..block::BLOCK_HEADER_LEN + n];
    if let Some(fd) = (FD.load(Ordering::Acquire) >= 0).then(|| FD.load(Ordering::Acquire)) {
        let _g = WRITE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if write_guarded(fd, all).is_ok() {
            FILE_LEN.fetch_add(all.len() as u64, Ordering::AcqRel);
        }
    }
}

/// Writes `s` as a JSON string body (quotes and control characters escaped).
fn json_str(w: &mut FixedBuf<'_>, s: &str) {
    for c in s.chars() {
        let _ = match c {
            '"' => w.write_str("\\\""),
            '\\' => w.write_str("\\\\"),
            c if (c as u32) < 0x20 => write!(w, "\\u{:04x}", c as u32),
            c => w.write_char(c),
        };
    }
}

/// Writes a note block (`kind`: `signal`, `hang`, `stopped`) at clock `ticks`.
pub(crate) fn note_raw(kind: &str, thread: u16, signal: Option<&str>, message: &str, ticks: u64) {
    let mut buf = [0u8; 900];
    let mut w = FixedBuf {
        buf: &mut buf,
        len: 0,
    };
    let _ = write!(
        w,
        "{{\"kind\":\"{kind}\",\"ticks\":{ticks},\"thread\":{thread}"
    );
    if let Some(s) = signal {
        let _ = write!(w, ",\"signal\":\"{s}\"");
    }
    let _ = w.write_str(",\"message\":\"");
    json_str(&mut w, message);
    let _ = w.write_str("\"}");
    let n = w.len;
    write_json_block(block::BlockKind::Note, thread, &buf[..n], clock::pair());
}

/// The trailer, built into a fixed buffer (no allocation: used from signal handlers).
pub(crate) fn write_trailer(reason: &str) {
    let fd = FD.load(Ordering::Acquire);
    if fd < 0 {
        return;
    }
    static mut TOTALS: [Counter; NCALLS] = [Counter::ZERO; NCALLS];
    static mut BUF: [u8; 1 << 18] = [0; 1 << 18];
    // SAFETY: the end happens once (guarded by ENDED); these statics are used only here.
    let totals = unsafe { &mut *core::ptr::addr_of_mut!(TOTALS) };
    let buf = unsafe { &mut *core::ptr::addr_of_mut!(BUF) };
    for c in totals.iter_mut() {
        *c = Counter::default();
    }
    calls::add_totals(totals);
    let (sync_t, sync_ns) = clock::pair();
    let mut w = FixedBuf {
        buf: &mut buf[block::BLOCK_HEADER_LEN..],
        len: 0,
    };
    let _ = w.write_str("{\"reason\":\"");
    json_str(&mut w, reason);
    let _ = write!(
        w,
        "\",\"sync_ticks\":{sync_t},\"sync_ns\":{sync_ns},\"events\":{},\"lost\":{},\"calls\":[",
        EVENTS.load(Ordering::Relaxed),
        LOST.load(Ordering::Relaxed)
    );
    let mut first = true;
    for (id, c) in totals.iter().enumerate() {
        if c.count == 0 {
            continue;
        }
        let _ = write!(
            w,
            "{}{{\"id\":{id},\"name\":\"{}\",\"fortran\":{},\"count\":{},\"recorded\":{},\"ticks\":{}}}",
            if first { "" } else { "," },
            calls::name(id as u32),
            id as u32 >= FORTRAN_BASE,
            c.count,
            c.recorded,
            c.ticks
        );
        first = false;
    }
    let _ = write!(w, "]}}");
    let n = w.len;
    let hdr = block::BlockHeader {
        kind: block::BlockKind::Trailer,
        thread: 0,
        payload_len: n as u32,
        records: 1,
        base_ticks: sync_t,
        sync_ticks: sync_t,
        sync_ns,
        crc: 0,
    };
    hdr.write_fields(&mut buf[..block::BLOCK_HEADER_LEN]);
    let crc = block::block_crc(
        &buf[..40],
        &buf[block::BLOCK_HEADER_LEN..block::BLOCK_HEADER_LEN + n],
    );
    buf[40..44].copy_from_slice(&crc.to_le_bytes());
    let _g = WRITE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let _ = write_guarded(fd, &buf[..block::BLOCK_HEADER_LEN + n]);
}

/// Counts `events` as lost (threads that did not answer before the end).
pub(crate) fn count_lost(events: u64) {
    LOST.fetch_add(events, Ordering::Relaxed);
}

/// Claims the end of the record: true for the first caller only (an ending, or a write
/// that failed), who then writes the trailer.
pub(crate) fn claim_end() -> bool {
    !ENDED.swap(true, Ordering::AcqRel)
}

/// Has the record ended?
pub(crate) fn ended() -> bool {
    ENDED.load(Ordering::Acquire)
}
