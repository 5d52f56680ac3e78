//! Whether a call overlaps: always (`MPISCOPE_OVERLAP_POLICY=always`, the benchmark's and the
//! correctness tests' setting) or, by default, when the call site's own measurements say the
//! program finishes sooner (`mpiscope_overlap_core::decide`). This rank's wish is its vote in
//! the agreement every call runs; the path taken is recorded against the site.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use mpiscope_overlap_core::decide::{Mode, Sites, State};

/// Whether sites decide (`adaptive`) or every eligible call overlaps (`always`).
static ADAPTIVE: AtomicBool = AtomicBool::new(true);
static SITES: Mutex<Option<Sites>> = Mutex::new(None);
static ORIGIN: OnceLock<Instant> = OnceLock::new();

thread_local! {
    /// The call site (return address) of the collective this thread is in.
    static SITE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Entry time of that collective, seconds since the origin.
    static ENTRY: std::cell::Cell<f64> = const { std::cell::Cell::new(0.0) };
    /// Whether that collective runs blocking and its return is to be timed ([`left`]).
    static TIMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// T-NBC's cost of a call before a site has measured one: a fixed part (agreement, waking
/// the progress thread, publication) and a part per byte of the call's send and receive
/// regions (moving pages aside and registering them, a transfer slower than the MPI's own),
/// [`mpiscope_overlap_core::model::DEFAULT_COST_US`] unless `MPISCOPE_OVERLAP_COST_US` says
/// otherwise; f64 bits, seconds.
static COST_FIXED_S: AtomicU64 = AtomicU64::new(0);
static COST_PER_BYTE_S: AtomicU64 = AtomicU64::new(0);

fn prior(bytes: usize) -> f64 {
    f64::from_bits(COST_FIXED_S.load(Ordering::Relaxed))
        + f64::from_bits(COST_PER_BYTE_S.load(Ordering::Relaxed)) * bytes as f64
}

fn set_prior((fixed_us, per_mib_us): (f64, f64)) {
    COST_FIXED_S.store((fixed_us * 1e-6).to_bits(), Ordering::Relaxed);
    COST_PER_BYTE_S.store(
        (per_mib_us * 1e-6 / (1 << 20) as f64).to_bits(),
        Ordering::Relaxed,
    );
}

/// The cost the model charges an overlapped call of `bytes`: the starting estimate, or what
/// this process's overlapped calls measured for their initiation per byte when that is more
/// (the initiation is only part of the cost: the site's probe measures the rest).
fn cost_estimate(bytes: usize, (ns, moved): (u64, usize)) -> f64 {
    let prior = prior(bytes);
    if moved == 0 {
        prior
    } else {
        prior.max(ns as f64 * 1e-9 * bytes as f64 / moved as f64)
    }
}

extern "C" {
    fn backtrace(buffer: *mut *mut libc::c_void, size: libc::c_int) -> libc::c_int;
}

/// Reads `MPISCOPE_OVERLAP_POLICY` (`adaptive`, the default, or `always`) and
/// `MPISCOPE_OVERLAP_COST_US` (`FIXED[,PER_MIB]`, the model's starting estimate of T-NBC's
/// cost per call in microseconds); a message for anything malformed.
pub fn init() -> Vec<String> {
    ORIGIN.get_or_init(Instant::now);
    let mut warnings = Vec::new();
    let v = std::env::var("MPISCOPE_OVERLAP_POLICY").unwrap_or_default();
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "adaptive" => {}
        "always" => ADAPTIVE.store(false, Ordering::Relaxed),
        _ => warnings.push(format!(
            "MPISCOPE_OVERLAP_POLICY={v}: expected adaptive or always; using adaptive"
        )),
    }
    set_prior(mpiscope_overlap_core::model::DEFAULT_COST_US);
    if let Ok(v) = std::env::var("MPISCOPE_OVERLAP_COST_US") {
        match mpiscope_overlap_core::model::parse_cost_us(&v) {
            Some(cost) => set_prior(cost),
            None => warnings.push(format!(
                "MPISCOPE_OVERLAP_COST_US={v}: expected FIXED[,PER_MIB] microseconds (two \
                 non-negative numbers); using the starting estimate"
            )),
        }
    }
    warnings
}

/// The return address in the application of the intercepted MPI function that called this
/// one (call it directly from that function).
#[inline(never)]
pub fn caller_pc() -> usize {
    let mut frames = [std::ptr::null_mut::<libc::c_void>(); 3];
    // SAFETY: backtrace writes at most 3 frames into the array.
    let n = unsafe { backtrace(frames.as_mut_ptr(), 3) };
    if n < 3 {
        0
    } else {
        frames[2] as usize
    }
}

/// A return address as `module+0xoffset` (the same in every process, whatever the
/// address-space layout).
pub fn site_name(pc: usize) -> String {
    if pc == 0 {
        return "unknown".into();
    }
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0
        || info.dli_fname.is_null()
    {
        return format!("{pc:#x}");
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    let name = path.rsplit('/').next().unwrap_or("?").to_string();
    format!("{name}+{:#x}", pc - info.dli_fbase as usize)
}

fn now() -> f64 {
    ORIGIN.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Records the site of the collective this thread enters (before its eligibility is known).
pub fn enter_site(pc: usize) {
    SITE.with(|s| s.set(pc));
}

/// Whether this rank wants the current call, moving `bytes` (send and receive regions),
/// overlapped (its vote); starts the site's iteration clock. `initiated` is what this
/// process's overlapped calls took to start (nanoseconds) for how many bytes.
pub fn wants(bytes: usize, initiated: (u64, usize)) -> bool {
    if !ADAPTIVE.load(Ordering::Relaxed) {
        return true;
    }
    let t = now();
    ENTRY.with(|e| e.set(t));
    let pc = SITE.with(|s| s.get());
    let cost = cost_estimate(bytes, initiated);
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(Sites::default).site(pc).enter(t, cost)
}

/// The blocking collective the current call ran returned (call after the MPI library's
/// collective; nothing when the call was not timed).
pub fn left() {
    if !TIMED.with(|t| t.replace(false)) {
        return;
    }
    let t = now();
    let pc = SITE.with(|s| s.get());
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(Sites::default).site(pc).left(t);
}

/// The path the current call took, as the ranks agreed.
pub fn took(overlapped: bool) {
    if !ADAPTIVE.load(Ordering::Relaxed) {
        return;
    }
    let t = ENTRY.with(|e| e.get());
    let pc = SITE.with(|s| s.get());
    let mode = if overlapped {
        Mode::Overlapped
    } else {
        Mode::Blocking
    };
    TIMED.with(|c| c.set(!overlapped));
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(Sites::default).site(pc).took(mode, t);
}

/// The current call ran blocking inside a window the ranks agreed to skip (see
/// `engine::agree`).
pub fn took_forced() {
    if !ADAPTIVE.load(Ordering::Relaxed) {
        return;
    }
    let t = ENTRY.with(|e| e.get());
    let pc = SITE.with(|s| s.get());
    TIMED.with(|c| c.set(true));
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(Sites::default).site(pc).took_forced(t);
}

/// This rank's vote for skipping the agreement: its current site has settled on blocking
/// (never under the `always` policy).
pub fn settled_blocking() -> bool {
    if !ADAPTIVE.load(Ordering::Relaxed) {
        return false;
    }
    let pc = SITE.with(|s| s.get());
    let mut g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(Sites::default).site(pc).is_blocking()
}

/// One line per site for `MPISCOPE_OVERLAP_STATS`: calls, overlapped calls, the decision and
/// the median iterations it rests on.
pub fn stats_lines(rank: i32) -> String {
    if !ADAPTIVE.load(Ordering::Relaxed) {
        return format!("mpiscope-overlap: rank {rank} policy always\n");
    }
    let g = SITES.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = String::new();
    for (pc, r) in g.as_ref().map(Sites::reports).unwrap_or_default() {
        let state = match r.state {
            State::Probing => "measuring",
            State::Overlap => "overlap",
            State::Blocking { .. } => "blocking",
        };
        let us = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{:.1}", s * 1e6));
        out.push_str(&format!(
            "mpiscope-overlap: rank {rank} site {} calls {} overlapping {} decision {state} iteration_us blocking {} overlapping {} collective_us {} model_gain_us {} ruled_out {}\n",
            site_name(pc),
            r.calls,
            r.overlapped,
            us(r.blocking_s),
            us(r.overlapped_s),
            us(r.collective_s),
            us(r.predicted_gain_s),
            r.ruled_out,
        ));
    }
    out
}
