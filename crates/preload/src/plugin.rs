//! User plugins: PRE and POST callbacks around every recorded call (`MPISCOPE_PLUGIN`).
//!
//! A plugin is a shared object exporting any of:
//!
//! ```c
//! #include "mpiscope_plugin.h"
//! void mpiscope_plugin_pre(const struct mpiscope_call *call);
//! int  mpiscope_plugin_post(const struct mpiscope_call *call, int64_t *user_value);
//! ```
//!
//! `post` returning non-zero stores `*user_value` in the event's `user` slot. Callbacks run
//! inside the wrapper with recording of the thread suspended: MPI calls they make are not
//! traced. See `include/mpiscope_plugin.h`.

use std::os::raw::{c_char, c_int};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::calls::{self, CALL_NAMES, FORTRAN_BASE};

/// ABI version of `struct mpiscope_call`.
pub const ABI_VERSION: u32 = 1;

/// What a callback is told about a call (`struct mpiscope_call` in C).
#[repr(C)]
pub struct CallInfo {
    /// [`ABI_VERSION`].
    pub abi_version: u32,
    /// Call id (as in the trace).
    pub call_id: u32,
    /// C name of the function, NUL-terminated.
    pub name: *const c_char,
    /// 1 for a Fortran binding.
    pub fortran: c_int,
    /// World rank (-1 before MPI_Init).
    pub rank: c_int,
    /// Entry clock ticks (0 in `pre`).
    pub t_enter: u64,
    /// Exit clock ticks (0 in `pre`).
    pub t_exit: u64,
}

type PreFn = unsafe extern "C" fn(*const CallInfo);
type PostFn = unsafe extern "C" fn(*const CallInfo, *mut i64) -> c_int;

static PRE: AtomicUsize = AtomicUsize::new(0);
static POST: AtomicUsize = AtomicUsize::new(0);

/// NUL-terminated names, built once.
static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();

/// Loads a plugin.
pub fn load(path: &str) -> Result<(), String> {
    let c = std::ffi::CString::new(path).map_err(|_| "path contains a NUL byte".to_string())?;
    // SAFETY: NUL-terminated path.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if h.is_null() {
        // SAFETY: dlerror returns a NUL-terminated message.
        let e = unsafe { std::ffi::CStr::from_ptr(libc::dlerror()) }
            .to_string_lossy()
            .into_owned();
        return Err(e);
    }
    NAMES.get_or_init(|| {
        CALL_NAMES
            .iter()
            .map(|n| std::ffi::CString::new(*n).unwrap_or_default())
            .collect()
    });
    // SAFETY: NUL-terminated symbol names.
    let pre = unsafe { libc::dlsym(h, c"mpiscope_plugin_pre".as_ptr()) };
    let post = unsafe { libc::dlsym(h, c"mpiscope_plugin_post".as_ptr()) };
    if pre.is_null() && post.is_null() {
        return Err("exports neither mpiscope_plugin_pre nor mpiscope_plugin_post".into());
    }
    PRE.store(pre as usize, Ordering::Release);
    POST.store(post as usize, Ordering::Release);
    Ok(())
}

/// What the callbacks are told of call `id`, entered and left at `times` (0 before).
fn info(id: u32, times: (u64, u64)) -> CallInfo {
    let c = calls::c_id(id) as usize;
    let name = NAMES
        .get()
        .and_then(|n| n.get(c))
        .map(|s| s.as_ptr())
        .unwrap_or(core::ptr::null());
    let (t_enter, t_exit) = times;
    CallInfo {
        abi_version: ABI_VERSION,
        call_id: id,
        name,
        fortran: (id >= FORTRAN_BASE) as c_int,
        rank: crate::status::world_rank(),
        t_enter,
        t_exit,
    }
}

/// Runs the PRE callback for call `id` (before its entry time is read).
#[inline(always)]
pub fn pre(id: u32) {
    let f = PRE.load(Ordering::Relaxed);
    if f != 0 {
        pre_slow(id, f);
    }
}

#[cold]
fn pre_slow(id: u32, f: usize) {
    let i = info(id, (0, 0));
    // SAFETY: a function with the documented signature.
    unsafe { core::mem::transmute::<usize, PreFn>(f)(&i) };
}

/// Runs the POST callback for call `id` entered and left at `times`; returns the value for
/// the event's `user` slot, when the callback gives one.
#[inline(always)]
pub fn post(id: u32, times: (u64, u64)) -> Option<i64> {
    let f = POST.load(Ordering::Relaxed);
    if f != 0 {
        post_slow(id, times, f)
    } else {
        None
    }
}

#[cold]
fn post_slow(id: u32, times: (u64, u64), f: usize) -> Option<i64> {
    let i = info(id, times);
    let mut v: i64 = 0;
    // SAFETY: a function with the documented signature.
    (unsafe { core::mem::transmute::<usize, PostFn>(f)(&i, &mut v) } != 0).then_some(v)
}
