//! The T-NBC engine: the operation in flight ([`crate::op::Op`]), the progress thread, and
//! completion. Each overlapped collective runs on a private duplicate of the application's
//! communicator (made once per communicator, freed with it), so its messages never match the
//! application's. At most one operation is outstanding: every intercepted MPI call, and every
//! libc call that hands memory to the kernel or releases it, completes it first.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use std::collections::BTreeMap;

use mpiscope_overlap_core::access::{self, SiteOrder, ACCESS};
use mpiscope_overlap_core::pages::{self, Range};
use mpiscope_overlap_core::{guard, uffd};

use crate::op::{Block, Call, Kind, Op};
use crate::policy;

use crate::ffi::consts;
use crate::mpi::*;

/// Whether T-NBC is active (MPI_THREAD_MULTIPLE granted and not disabled).
pub static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Smallest overlapped receive buffer in bytes.
pub static MIN_BYTES: AtomicUsize =
    AtomicUsize::new(mpiscope_overlap_core::DEFAULT_MIN_BYTES as usize);
/// Whether T-NBC was ever activated in this process (for `MPISCOPE_OVERLAP_STATS`).
pub static WAS_ACTIVE: AtomicBool = AtomicBool::new(false);
/// Collectives that took the overlapped path.
pub static OVERLAPPED: AtomicUsize = AtomicUsize::new(0);
/// Their send and receive bytes.
static OVERLAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);
/// Duplicates of the application's communicators, by handle (dropped in MPI_Comm_free).
static DUPS: Mutex<Vec<Dup>> = Mutex::new(Vec::new());
/// The private duplicate of an application communicator and the node of each of its ranks.
struct Dup {
    /// The application's handle, as a number.
    key: usize,
    comm: MPI_Comm,
    /// Node label of each rank of the communicator.
    nodes: Vec<usize>,
}
// SAFETY: MPI handles are usable from any thread under MPI_THREAD_MULTIPLE.
unsafe impl Send for Dup {}

fn key(comm: MPI_Comm) -> usize {
    let mut k = 0usize;
    // SAFETY: copies the handle's bytes (a pointer or an int) into a usize.
    unsafe {
        std::ptr::copy_nonoverlapping(
            &comm as *const MPI_Comm as *const u8,
            &mut k as *mut usize as *mut u8,
            std::mem::size_of::<MPI_Comm>().min(8),
        )
    };
    k
}

/// The private duplicate of `comm` and the node of each of its ranks, found (collectively:
/// a duplication and an allgather) on first use.
unsafe fn dup_of(comm: MPI_Comm) -> (MPI_Comm, Vec<usize>) {
    let k = key(comm);
    let mut d = DUPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(x) = d.iter().find(|x| x.key == k) {
        return (x.comm, x.nodes.clone());
    }
    let c = consts();
    let mut dup = c.comm_null;
    PMPI_Comm_dup(comm, &mut dup);
    let (_, size) = rank_size(dup);
    let mine = node_label();
    let mut all = vec![0u64; size];
    let rc = PMPI_Allgather(
        &mine as *const u64 as *const _,
        1,
        c.uint64,
        all.as_mut_ptr() as *mut _,
        1,
        c.uint64,
        dup,
    );
    // Labels as small numbers in order of first appearance (one node if the gather failed).
    let mut labels: Vec<u64> = Vec::new();
    let nodes = all
        .iter()
        .map(|&l| match labels.iter().position(|&x| x == l) {
            _ if rc != c.success => 0,
            Some(i) => i,
            None => {
                labels.push(l);
                labels.len() - 1
            }
        })
        .collect::<Vec<usize>>();
    d.push(Dup {
        key: k,
        comm: dup,
        nodes: nodes.clone(),
    });
    (dup, nodes)
}

/// The most nodes any overlapped communicator spans (for the statistics line).
pub fn nodes_seen() -> usize {
    let d = DUPS.lock().unwrap_or_else(|e| e.into_inner());
    d.iter()
        .map(|x| x.nodes.iter().max().map_or(0, |m| m + 1))
        .max()
        .unwrap_or(0)
}

/// This process's node: `MPISCOPE_OVERLAP_RANKS_PER_NODE=k` groups world ranks by `k` (for a
/// launcher whose node names do not tell, or to emulate nodes); otherwise a hash of the host
/// name.
fn node_label() -> u64 {
    if let Some(k) = std::env::var("MPISCOPE_OVERLAP_RANKS_PER_NODE")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&k| k > 0)
    {
        return u64::from(world_rank()) / k;
    }
    let mut name = [0u8; 256];
    // SAFETY: gethostname writes at most `name.len()` bytes.
    unsafe { libc::gethostname(name.as_mut_ptr() as *mut libc::c_char, name.len()) };
    // FNV-1a over the name up to its NUL.
    name.iter()
        .take_while(|&&b| b != 0)
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Forgets (and frees) the duplicate of `comm`; call before the application frees `comm`.
pub unsafe fn forget(comm: MPI_Comm) {
    let k = key(comm);
    let mut d = DUPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = d.iter().position(|x| x.key == k) {
        let mut x = d.swap_remove(i);
        PMPI_Comm_free(&mut x.comm);
    }
}

/// Time spent returning from overlapped collectives, summed over calls, in nanoseconds:
/// preparing (staging map, pending table), agreeing with the other ranks, committing
/// (protections, priority pieces) and waiting for the pieces of the unaligned edge pages.
pub static INIT_NS: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// The initiation time of every overlapped call so far (nanoseconds, [`INIT_NS`] summed)
/// and their bytes.
fn initiation_per_bytes() -> (u64, usize) {
    let ns = INIT_NS.iter().map(|a| a.load(Ordering::Relaxed)).sum();
    (ns, OVERLAPPED_BYTES.load(Ordering::Relaxed))
}

pub static STOP: AtomicBool = AtomicBool::new(false);
static OUTSTANDING: AtomicUsize = AtomicUsize::new(0);
/// The user buffers of the outstanding operation (there is at most one: every collective
/// completes the previous one first): send start and end, receive start and end. Read
/// without locking by the memory-release interceptions.
static BUFFERS: [AtomicUsize; 4] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

/// Whether `[start, start + len)` overlaps a buffer of an outstanding operation (for free,
/// realloc and munmap: memory must not be released under a message in flight, nor reused
/// before received pages are moved into it).
pub fn overlaps_outstanding(start: usize, len: usize) -> bool {
    if OUTSTANDING.load(Ordering::Acquire) == 0 {
        return false;
    }
    // No allocation here: this runs inside free().
    let end = start.saturating_add(len.max(1));
    let b = |i: usize| BUFFERS[i].load(Ordering::Acquire);
    (start < b(1) && b(0) < end) || (start < b(3) && b(2) < end)
}
static OPS: Mutex<Vec<Op>> = Mutex::new(Vec::new());
static THREAD: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

thread_local! {
    /// Set while this thread runs library code (the progress thread always), so libc and MPI
    /// calls made from inside pass through instead of recursing into completion.
    pub static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the library's re-entrancy flag set.
pub fn inside<T>(f: impl FnOnce() -> T) -> T {
    let was = INSIDE.with(|c| c.replace(true));
    let r = f();
    INSIDE.with(|c| c.set(was));
    r
}

/// One pass of progress over every outstanding operation; true while one is unfinished.
pub fn progress_all() -> bool {
    let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    // Busy only while an operation is unfinished: a finished one waits for the next MPI call
    // to be retired, and the thread sleeps meanwhile instead of polling through the
    // computation that follows (with as many ranks as cores, those polls cost the
    // computation a third of its speed).
    let mut busy = false;
    for op in ops.iter_mut() {
        busy |= !op.progress(true);
    }
    busy
}

/// Completes every outstanding operation (call before anything that could observe buffers);
/// in access-tracing mode, closes the traced call instead.
pub fn complete_all() {
    if INSIDE.with(|c| c.get()) {
        return;
    }
    if ACCESS_MODE.load(Ordering::Relaxed) {
        access_flush();
    }
    if OUTSTANDING.load(Ordering::Acquire) == 0 {
        return;
    }
    inside(|| loop {
        let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = true;
        for op in ops.iter_mut() {
            done &= op.progress(true);
        }
        if done {
            let finished: Vec<Op> = ops.drain(..).collect();
            OUTSTANDING.store(0, Ordering::Release);
            for a in &BUFFERS {
                a.store(0, Ordering::Release);
            }
            drop(ops);
            drop(finished);
            return;
        }
        drop(ops);
        std::thread::yield_now();
    })
}

/// Whether this process traces access orders (`MPISCOPE_OVERLAP_ACCESS`) instead of
/// overlapping.
pub static ACCESS_MODE: AtomicBool = AtomicBool::new(false);
/// The traced calls, one JSON line each, written at MPI_Finalize.
static ACCESS_LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// The call being traced: (index, kind, call site, sub-messages).
static ACCESS_CALL: Mutex<Option<(u64, &'static str, String, u32)>> = Mutex::new(None);
static ACCESS_CALLS: AtomicUsize = AtomicUsize::new(0);
/// Access orders to run with (`MPISCOPE_OVERLAP_ORDER`), by call site.
static ORDERS: OnceLock<BTreeMap<String, SiteOrder>> = OnceLock::new();

/// Traces the first touches of the sub-messages `subs` (user address ranges inside the
/// region `[lo, hi)`) of a completed collective until the next MPI call.
pub fn access_arm(kind: &'static str, site: String, subs: &[Range], region: Range) {
    let page = guard::page_size();
    let n = subs.len().min(access::CAPACITY) as u32;
    let Ok(Some((lo, hi))) = pages::protectable(region.0, region.1 - region.0, page) else {
        return access_uncovered(kind, site, n);
    };
    ACCESS.arm(subs, lo, hi);
    if guard::protect(lo, hi, false).is_err() {
        ACCESS.drain();
        return access_uncovered(kind, site, n);
    }
    let call = ACCESS_CALLS.fetch_add(1, Ordering::Relaxed) as u64;
    *ACCESS_CALL.lock().unwrap_or_else(|e| e.into_inner()) = Some((call, kind, site, n));
}

/// Records a traced call whose received data cannot be watched (no whole page, not
/// contiguous), so that the rank's records still number every call.
pub fn access_uncovered(kind: &'static str, site: String, subs: u32) {
    let rec = access::Record {
        rank: world_rank(),
        call: ACCESS_CALLS.fetch_add(1, Ordering::Relaxed) as u64,
        kind: kind.into(),
        callsite: site,
        subs,
        touches: Vec::new(),
        covered: false,
    };
    ACCESS_LOG
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(rec.to_line());
}

/// Closes the traced call: records its first touches and reopens its pages.
pub fn access_flush() {
    if ACCESS.protected().is_none() {
        return;
    }
    let (touches, prot) = ACCESS.drain();
    if let Some((lo, hi)) = prot {
        let _ = guard::protect(lo, hi, true);
    }
    if let Some((call, kind, callsite, subs)) =
        ACCESS_CALL.lock().unwrap_or_else(|e| e.into_inner()).take()
    {
        let rec = access::Record {
            rank: world_rank(),
            call,
            kind: kind.into(),
            callsite,
            subs,
            touches,
            covered: true,
        };
        ACCESS_LOG
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rec.to_line());
    }
}

pub fn world_rank() -> u32 {
    let mut r = 0;
    // SAFETY: MPI is initialized while collectives are traced.
    unsafe { PMPI_Comm_rank(consts().comm_world, &mut r) };
    r as u32
}

/// Writes this rank's traced calls to `DIR/access-<rank>.jsonl` (MPI_Finalize).
pub fn write_access_log() {
    access_flush();
    let Ok(dir) = std::env::var("MPISCOPE_OVERLAP_ACCESS") else {
        return;
    };
    let lines = std::mem::take(&mut *ACCESS_LOG.lock().unwrap_or_else(|e| e.into_inner()));
    let path = std::path::Path::new(&dir).join(format!("access-{}.jsonl", world_rank()));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if let Err(e) = std::fs::write(&path, text) {
        let msg = format!("mpiscope-overlap: cannot write {}: {e}\n", path.display());
        // SAFETY: writing a message to stderr.
        unsafe { libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len()) };
    }
}

/// The access order recorded for this call site and sub-message count, if any.
pub fn order_for(subs: usize) -> Option<Vec<usize>> {
    let orders = ORDERS.get()?;
    if orders.is_empty() {
        return None;
    }
    let site = callsite_of_collective();
    let o = orders
        .get(&format!("{site}#{subs}"))
        .or_else(|| orders.get(&site))?;
    (o.subs as usize == subs).then(|| o.order.iter().map(|&i| i as usize).collect())
}

thread_local! {
    /// The call site of the collective being intercepted on this thread (set by the entry
    /// points when orders are loaded).
    static SITE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Records the call site of the collective being intercepted (named by [`policy::site_name`], only
/// when it is needed: access tracing or orders loaded).
pub fn set_site(site: Option<String>) {
    if let Some(site) = site {
        SITE.with(|s| *s.borrow_mut() = site);
    }
}

fn callsite_of_collective() -> String {
    SITE.with(|s| s.borrow().clone())
}

/// Whether call sites are needed (access tracing, or orders to run with).
pub fn wants_site() -> bool {
    ACCESS_MODE.load(Ordering::Relaxed) || ORDERS.get().is_some_and(|o| !o.is_empty())
}

fn load_orders() {
    let Ok(path) = std::env::var("MPISCOPE_OVERLAP_ORDER") else {
        let _ = ORDERS.set(BTreeMap::new());
        return;
    };
    let parsed = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|t| access::parse_orders(&t));
    match parsed {
        Ok(o) => {
            let _ = ORDERS.set(o);
        }
        Err(e) => {
            let msg = format!("mpiscope-overlap: MPISCOPE_OVERLAP_ORDER={path}: {e} (running without priorities)\n");
            // SAFETY: writing a message to stderr.
            unsafe { libc::write(2, msg.as_ptr() as *const libc::c_void, msg.len()) };
            let _ = ORDERS.set(BTreeMap::new());
        }
    }
}

/// Starts access-order tracing (no overlap): installs the fault handler.
pub fn start_access_tracing() {
    if guard::install().is_ok() {
        consts();
        ACCESS_MODE.store(true, Ordering::Release);
        WAS_ACTIVE.store(true, Ordering::Release);
    }
}

/// Starts the progress thread and installs the fault handler.
pub fn start() {
    load_orders();
    if let Ok(v) = std::env::var("MPISCOPE_OVERLAP_MIN_BYTES") {
        if let Ok(n) = v.trim().parse() {
            MIN_BYTES.store(n, Ordering::Relaxed);
        }
    }
    if guard::install().is_err() {
        return;
    }
    let choice = std::env::var("MPISCOPE_OVERLAP_GUARD").unwrap_or_default();
    let choice = uffd::Choice::parse(&choice).unwrap_or_else(|| {
        warn(&format!(
            "MPISCOPE_OVERLAP_GUARD={choice}: expected auto, userfaultfd or mprotect; using auto"
        ));
        uffd::Choice::Auto
    });
    if let (_, Some(w)) = uffd::init(choice) {
        warn(&w);
    }
    for w in policy::init() {
        warn(&w);
    }
    consts();
    let h = std::thread::Builder::new()
        .name("mpiscope-overlap".into())
        .spawn(|| {
            INSIDE.with(|c| c.set(true));
            // Sleep what is asked, not the default 50 us of timer slack more: a pass of the
            // progress loop is one step of every rendezvous in flight.
            // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
            // The lowest priority: the thread runs on a core the application leaves idle
            // (a computation that sleeps or waits), and waking it never preempts the
            // application thread it shares a core with (measured: that delayed the return
            // from the collective by 100-400 us).
            // SAFETY: changes this thread's nice value only.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19) };
            while !STOP.load(Ordering::Acquire) {
                // Yield the core between passes: on a machine with as many ranks as cores a
                // spinning progress thread steals whole scheduler quanta from the ranks. A new
                // operation wakes the thread at once (`unpark` in `run`).
                let busy = progress_all();
                if busy {
                    std::thread::park_timeout(std::time::Duration::from_micros(20));
                } else if OUTSTANDING.load(Ordering::Acquire) == 0 {
                    // Nothing in flight (a program whose calls all run blocking): sleep until
                    // `run` hands over an operation or `stop` ends the thread, instead of
                    // waking a thousand times a second for nothing.
                    std::thread::park();
                } else {
                    std::thread::park_timeout(std::time::Duration::from_micros(1000));
                }
            }
        });
    if let Ok(h) = h {
        *THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        ACTIVE.store(true, Ordering::Release);
        WAS_ACTIVE.store(true, Ordering::Release);
    }
}

/// One line on standard error, in one write (ranks share a terminal).
fn warn(message: &str) {
    let line = format!("mpiscope-overlap: {message}\n");
    // SAFETY: writing our own bytes to standard error.
    unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
}

/// Completes everything and stops the progress thread.
pub fn stop() {
    complete_all();
    ACTIVE.store(false, Ordering::Release);
    STOP.store(true, Ordering::Release);
    if let Some(h) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).take() {
        // It may sleep with nothing in flight.
        h.thread().unpark();
        let _ = h.join();
    }
}

/// Runs a collective overlapped if every rank can (`call` is this rank's part, `None` when it
/// cannot), and returns once the pieces on its receive region's unaligned edge pages are in
/// place; `None`, having changed nothing, when the ranks run the blocking collective instead.
///
/// `bytes` is what this rank's part would send and receive (0 when it cannot overlap);
/// `call` builds that part, only when this rank wants the call overlapped (a call that runs
/// blocking allocates nothing).
unsafe fn run(comm: MPI_Comm, bytes: usize, call: impl FnOnce() -> Option<Call>) -> Option<()> {
    let want = policy::wants(bytes, initiation_per_bytes());
    if skipping(comm) {
        policy::took_forced();
        return None;
    }
    let t0 = std::time::Instant::now();
    let prepared = if want {
        call().and_then(|c| Op::prepare(c))
    } else {
        None
    };
    let t1 = std::time::Instant::now();
    let op = agree(comm, prepared, policy::settled_blocking());
    policy::took(op.is_some());
    let mut op = op?;
    let t2 = std::time::Instant::now();
    op.commit();
    let t3 = std::time::Instant::now();
    let [(s0, s1), (r0, r1)] = op.regions();
    let mut ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    for (a, v) in BUFFERS.iter().zip([s0, s1, r0, r1]) {
        a.store(v, Ordering::Release);
    }
    ops.push(op);
    OUTSTANDING.store(ops.len(), Ordering::Release);
    if let Some(h) = THREAD.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
        h.thread().unpark();
    }
    loop {
        let op = ops.last_mut().expect("just pushed");
        op.progress(false);
        if op.edges_done() {
            OVERLAPPED.fetch_add(1, Ordering::Relaxed);
            OVERLAPPED_BYTES.fetch_add(bytes, Ordering::Relaxed);
            let t4 = std::time::Instant::now();
            for (slot, d) in INIT_NS.iter().zip([t1 - t0, t2 - t1, t3 - t2, t4 - t3]) {
                slot.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
            }
            return Some(());
        }
        drop(ops);
        std::thread::yield_now();
        ops = OPS.lock().unwrap_or_else(|e| e.into_inner());
    }
}

/// Whether every rank of `comm` could prepare its part, and whether all can carry interiors
/// through the MPI's non-blocking collective: the overlapped and the blocking paths (and the
/// two transfers) must not be mixed, their messages would never match. One MPI_Allreduce on
/// the private communicator; a rank that could not prepare drops its op here.
unsafe fn agree(comm: MPI_Comm, op: Option<Op>, settled: bool) -> Option<Op> {
    let c = consts();
    // Three votes, joined by their minimum: this rank can run the call overlapped; it can
    // carry interiors through the MPI's non-blocking collective; its call site has settled
    // on blocking (all of them: the next calls on this communicator skip the agreement).
    let mine: [u64; 3] = [
        op.is_some().into(),
        op.as_ref().is_some_and(|o| o.native_vote()).into(),
        settled.into(),
    ];
    let mut all = [0u64; 3];
    let rc = PMPI_Allreduce(
        mine.as_ptr() as *const _,
        all.as_mut_ptr() as *mut _,
        3,
        c.uint64,
        c.op_min,
        comm,
    );
    let ok = rc == c.success;
    settle(comm, ok && all[2] == 1);
    let mut op = op.filter(|_| ok && all[0] == 1)?;
    op.set_native(all[1] == 1);
    Some(op)
}

/// Calls of a window skipped after every rank voted blocking, doubling from the first to the
/// last: the agreement allreduce costs a few microseconds per call, a few percent of a
/// collective of a megabyte on shared memory.
const SKIP_FIRST: u32 = 16;
const SKIP_LAST: u32 = 1024;

/// Per private communicator: calls left to skip, and the next window's length. Every rank
/// counts the eligible calls of a communicator alike (collectives on it are called in the
/// same order everywhere, and eligibility is decided on what every rank computes alike), so
/// the windows are the same on all ranks without a word exchanged.
static SKIPS: Mutex<BTreeMap<usize, (u32, u32)>> = Mutex::new(BTreeMap::new());

/// Whether this call falls in a skip window of `comm` (and counts it).
fn skipping(comm: MPI_Comm) -> bool {
    let mut g = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    match g.get_mut(&key(comm)) {
        Some((left, _)) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
    }
}

/// After an agreement: open a window when every rank voted to skip, else start over.
fn settle(comm: MPI_Comm, all_settled: bool) {
    let mut g = SKIPS.lock().unwrap_or_else(|e| e.into_inner());
    let e = g.entry(key(comm)).or_insert((0, SKIP_FIRST));
    if all_settled {
        *e = (e.1, (e.1 * 2).min(SKIP_LAST));
    } else {
        *e = (0, SKIP_FIRST);
    }
}

unsafe fn rank_size(comm: MPI_Comm) -> (usize, usize) {
    let (mut rank, mut size) = (0, 0);
    PMPI_Comm_rank(comm, &mut rank);
    PMPI_Comm_size(comm, &mut size);
    (rank as usize, size as usize)
}

/// MPI_Alltoall of `block` bytes per peer (`None`: this rank's layout cannot be overlapped).
pub unsafe fn alltoall(
    sendbuf: *const u8,
    recvbuf: *mut u8,
    block: Option<usize>,
    comm: MPI_Comm,
) -> Option<()> {
    let (rank, size) = rank_size(comm);
    let (dup, nodes) = dup_of(comm);
    let bytes = block.map_or(0, |b| 2 * b * size);
    run(dup, bytes, || {
        block.map(|block| {
            let at = |base: usize| (0..size).map(move |j| Block::new(j, base + j * block, block));
            Call {
                kind: Kind::Alltoall,
                comm: dup,
                rank,
                size,
                send: at(sendbuf as usize).collect(),
                recv: at(recvbuf as usize).collect(),
                order: order_for(size),
                nodes,
            }
        })
    })
}

/// Per peer `(displacement, length)` in bytes.
pub type ByteLayout = Vec<(usize, usize)>;

/// MPI_Alltoallv: per peer `(displacement, length)` in bytes, send and receive (`None`: this
/// rank's layout cannot be overlapped).
pub unsafe fn alltoallv(
    sendbuf: *const u8,
    recvbuf: *mut u8,
    layouts: Option<(ByteLayout, ByteLayout)>,
    comm: MPI_Comm,
) -> Option<()> {
    let (rank, size) = rank_size(comm);
    let (dup, nodes) = dup_of(comm);
    let blocks = |base: usize, v: &[(usize, usize)]| -> Vec<Block> {
        v.iter()
            .enumerate()
            .map(|(j, &(d, n))| Block::new(j, base + d, n))
            .collect()
    };
    let layouts =
        layouts.filter(|(s, r)| s.len() == size && r.len() == size && s[rank].1 == r[rank].1);
    let bytes = layouts
        .as_ref()
        .map_or(0, |(s, r)| s.iter().chain(r).map(|b| b.1).sum());
    run(dup, bytes, || {
        layouts.map(|(s, r)| Call {
            kind: Kind::Alltoallv,
            comm: dup,
            rank,
            size,
            send: blocks(sendbuf as usize, &s),
            recv: blocks(recvbuf as usize, &r),
            order: order_for(size),
            nodes,
        })
    })
}

/// MPI_Bcast of `len` bytes from `root` (`None`: this rank's layout cannot be overlapped).
pub unsafe fn bcast(buf: *mut u8, len: Option<usize>, root: usize, comm: MPI_Comm) -> Option<()> {
    let (rank, size) = rank_size(comm);
    if root >= size || size < 2 {
        return None;
    }
    let (dup, nodes) = dup_of(comm);
    run(dup, len.unwrap_or(0), || {
        len.map(|len| {
            let block = vec![Block::new(root, buf as usize, len)];
            let (send, recv) = if rank == root {
                (block, Vec::new())
            } else {
                (Vec::new(), block)
            };
            Call {
                kind: Kind::Bcast { root },
                comm: dup,
                rank,
                size,
                send,
                recv,
                order: order_for(crate::op::pieces_of(len).len()),
                nodes,
            }
        })
    })
}
