//! The intercepted entry points: MPI calls (through PMPI) and libc calls that hand user buffers
//! to the kernel. Every call that could observe a buffer of an overlapped operation completes
//! all of them first.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::{self, complete_all, ACTIVE, INSIDE, MIN_BYTES};
use crate::ffi::consts;
use crate::mpi::*;
use crate::op::MAX_BLOCK;
use crate::policy;
use mpiscope_overlap_core::uffd;

unsafe fn init_common(provided: c_int) {
    let disabled =
        std::env::var("MPISCOPE_OVERLAP_DISABLE").is_ok_and(|v| v != "0" && !v.is_empty());
    if disabled {
        return;
    }
    if std::env::var_os("MPISCOPE_OVERLAP_ACCESS").is_some() {
        engine::start_access_tracing();
    } else if provided == consts().thread_multiple {
        engine::start();
        crate::service::start();
    }
}

/// MPI_Init, turned into MPI_Init_thread(MPI_THREAD_MULTIPLE).
#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let mut provided = 0;
    let rc = PMPI_Init_thread(argc, argv, consts().thread_multiple, &mut provided);
    if rc == consts().success {
        init_common(provided);
    }
    rc
}

/// MPI_Init_thread, asking for MPI_THREAD_MULTIPLE whatever was required.
#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    _required: c_int,
    provided: *mut c_int,
) -> c_int {
    let mut got = 0;
    let rc = PMPI_Init_thread(argc, argv, consts().thread_multiple, &mut got);
    if rc == consts().success {
        init_common(got);
    }
    if !provided.is_null() {
        *provided = got;
    }
    rc
}

/// MPI_Finalize: completes everything and stops the progress thread first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    engine::stop();
    crate::service::stop();
    uffd::drain();
    if engine::ACCESS_MODE.load(Ordering::Relaxed) {
        engine::write_access_log();
    }
    if std::env::var("MPISCOPE_OVERLAP_STATS").is_ok_and(|v| v == "1") {
        // One write, so the lines of ranks sharing a terminal do not interleave.
        let n = engine::OVERLAPPED.load(Ordering::Relaxed);
        let us =
            |i: usize| engine::INIT_NS[i].load(Ordering::Relaxed) as f64 / 1e3 / n.max(1) as f64;
        let line = format!(
            "mpiscope-overlap: active {} overlapped {} faults {} nodes {} init_us prepare {:.1} agree {:.1} commit {:.1} edges {:.1} guard {}{}\n",
            engine::WAS_ACTIVE.load(Ordering::Relaxed),
            n,
            mpiscope_overlap_core::guard::FAULTS.load(Ordering::Relaxed)
                + uffd::FAULTS.load(Ordering::Relaxed),
            engine::nodes_seen(),
            us(0),
            us(1),
            us(2),
            us(3),
            uffd::current().map_or("none", uffd::Mechanism::name),
            match uffd::REFUSED.load(Ordering::Relaxed) {
                0 => String::new(),
                r => format!(" ({r} ranges refused by userfaultfd, protected instead)"),
            },
        );
        let line = line + &policy::stats_lines(engine::world_rank() as i32);
        libc::write(2, line.as_ptr() as *const c_void, line.len());
    }
    PMPI_Finalize()
}

unsafe fn contiguous(t: MPI_Datatype, count: c_int) -> Option<usize> {
    let mut size = 0;
    let (mut lb, mut ext, mut tlb, mut text): (MPI_Aint, MPI_Aint, MPI_Aint, MPI_Aint) =
        (0, 0, 0, 0);
    if PMPI_Type_size(t, &mut size) != consts().success
        || PMPI_Type_get_extent(t, &mut lb, &mut ext) != consts().success
        || PMPI_Type_get_true_extent(t, &mut tlb, &mut text) != consts().success
    {
        return None;
    }
    (size > 0
        && lb == 0
        && tlb == 0
        && ext == size as MPI_Aint
        && text == size as MPI_Aint
        && count > 0)
        .then_some(size as usize * count as usize)
}

unsafe fn comm_size(comm: MPI_Comm) -> c_int {
    let mut size = 0;
    PMPI_Comm_size(comm, &mut size);
    size
}

/// Whether this call is access-traced (tracing mode, not from inside the library).
fn tracing() -> bool {
    engine::ACCESS_MODE.load(Ordering::Relaxed) && !INSIDE.with(|c| c.get())
}

/// The range `subs` tile without gap or overlap (empty ones ignored), if they do.
fn tiling(subs: &[(usize, usize)]) -> Option<(usize, usize)> {
    let mut r: Vec<(usize, usize)> = subs.iter().copied().filter(|s| s.0 < s.1).collect();
    r.sort_unstable();
    (!r.is_empty() && r.windows(2).all(|w| w[0].1 == w[1].0)).then(|| (r[0].0, r[r.len() - 1].1))
}

/// Whether the overlapped path may be taken on `comm` from this thread.
unsafe fn eligible_comm(comm: MPI_Comm) -> bool {
    if !ACTIVE.load(Ordering::Acquire) || INSIDE.with(|c| c.get()) {
        return false;
    }
    let mut inter = 1;
    PMPI_Comm_test_inter(comm, &mut inter);
    inter == 0
}

fn big_enough(bytes: usize) -> bool {
    bytes >= MIN_BYTES.load(Ordering::Relaxed) && bytes > 0
}

/// The bytes `count` elements of `t` carry (the same on every rank, by type matching, unlike
/// their layout).
unsafe fn type_bytes(t: MPI_Datatype, count: c_int) -> Option<usize> {
    let mut size = 0;
    (count >= 0 && PMPI_Type_size(t, &mut size) == consts().success && size >= 0)
        .then(|| size as usize * count as usize)
}

/// MPI_Alltoall: overlapped when eligible, otherwise the blocking collective. The size test
/// uses what every rank computes alike; what may differ between ranks (datatype layouts,
/// local resources) is agreed on inside the engine.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    complete_all();
    if tracing() {
        let pc = policy::caller_pc();
        let site = engine::wants_site().then(|| policy::site_name(pc));
        let rc = PMPI_Alltoall(
            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
        );
        let size = comm_size(comm);
        match (site, contiguous(recvtype, recvcount)) {
            (Some(site), Some(b)) => {
                let base = recvbuf as usize;
                let subs: Vec<(usize, usize)> = (0..size as usize)
                    .map(|j| (base + j * b, base + (j + 1) * b))
                    .collect();
                engine::access_arm("alltoall", site, &subs, (base, base + b * size as usize));
            }
            (Some(site), None) => engine::access_uncovered("alltoall", site, size as u32),
            _ => {}
        }
        return rc;
    }
    if eligible_comm(comm) && !std::ptr::eq(sendbuf, consts().in_place) {
        let size = comm_size(comm);
        if let Some(block) = type_bytes(recvtype, recvcount) {
            if block <= MAX_BLOCK && big_enough(block * size as usize) {
                // The call site only for calls that may overlap: unwinding the stack costs
                // a microsecond or two, a large share of a small collective.
                let pc = policy::caller_pc();
                policy::enter_site(pc);
                engine::set_site(engine::wants_site().then(|| policy::site_name(pc)));
                let s = contiguous(sendtype, sendcount);
                let local =
                    (s == contiguous(recvtype, recvcount) && s == Some(block)).then_some(block);
                if engine::inside(|| {
                    engine::alltoall(sendbuf as *const u8, recvbuf as *mut u8, local, comm)
                })
                .is_some()
                {
                    return consts().success;
                }
            }
        }
    }
    let rc = PMPI_Alltoall(
        sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
    );
    policy::left();
    rc
}

/// Per-peer `(displacement, length)` in bytes from MPI counts and displacements of a
/// contiguous datatype of `tsize` bytes; `None` for negative values or oversized blocks.
unsafe fn byte_layout(
    counts: *const c_int,
    displs: *const c_int,
    n: usize,
    tsize: usize,
) -> Option<Vec<(usize, usize)>> {
    if counts.is_null() || displs.is_null() {
        return None;
    }
    (0..n)
        .map(|j| {
            let (c, d) = (*counts.add(j), *displs.add(j));
            (c >= 0 && d >= 0 && c as usize * tsize <= MAX_BLOCK)
                .then(|| (d as usize * tsize, c as usize * tsize))
        })
        .collect()
}

/// MPI_Alltoallv: overlapped when eligible (contiguous datatypes, blocks tiling each buffer
/// without gaps or overlaps), otherwise the blocking collective.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    complete_all();
    let pc = policy::caller_pc();
    policy::enter_site(pc);
    let site = engine::wants_site().then(|| policy::site_name(pc));
    if tracing() {
        let rc = PMPI_Alltoallv(
            sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
        );
        let size = comm_size(comm);
        let layout = contiguous(recvtype, 1)
            .and_then(|t| byte_layout(recvcounts, rdispls, size as usize, t));
        if let Some(site) = site {
            let base = recvbuf as usize;
            let subs: Option<Vec<(usize, usize)>> =
                layout.map(|l| l.iter().map(|&(d, n)| (base + d, base + d + n)).collect());
            // Only a buffer the blocks tile: a gap's pages may hold other data.
            match subs.as_ref().and_then(|s| tiling(s).map(|r| (s, r))) {
                Some((subs, region)) => engine::access_arm("alltoallv", site, subs, region),
                None => engine::access_uncovered("alltoallv", site, size as u32),
            }
        }
        return rc;
    }
    engine::set_site(site);
    // Counts differ from rank to rank: every rank enters the engine, which agrees on whether
    // all of them can overlap this call (one MPI_Allreduce).
    if eligible_comm(comm) && !std::ptr::eq(sendbuf, consts().in_place) {
        let size = comm_size(comm);
        let n = size as usize;
        let layouts = match (contiguous(sendtype, 1), contiguous(recvtype, 1)) {
            (Some(ts), Some(tr)) => byte_layout(sendcounts, sdispls, n, ts)
                .zip(byte_layout(recvcounts, rdispls, n, tr))
                .filter(|(_, r)| big_enough(r.iter().map(|b| b.1).sum())),
            _ => None,
        };
        if engine::inside(|| {
            engine::alltoallv(sendbuf as *const u8, recvbuf as *mut u8, layouts, comm)
        })
        .is_some()
        {
            return consts().success;
        }
    }
    let rc = PMPI_Alltoallv(
        sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
    );
    policy::left();
    rc
}

/// MPI_Bcast: overlapped when eligible, otherwise the blocking collective.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    complete_all();
    if tracing() {
        let pc = policy::caller_pc();
        let site = engine::wants_site().then(|| policy::site_name(pc));
        let rc = PMPI_Bcast(buf, count, datatype, root, comm);
        let mut rank = 0;
        PMPI_Comm_rank(comm, &mut rank);
        // The root receives nothing: no record.
        match (site, contiguous(datatype, count), rank != root) {
            (Some(site), Some(n), true) => {
                let base = buf as usize;
                let subs: Vec<(usize, usize)> = crate::op::pieces_of(n)
                    .iter()
                    .map(|&(o, l)| (base + o, base + o + l))
                    .collect();
                engine::access_arm("bcast", site, &subs, (base, base + n));
            }
            (Some(site), None, true) => engine::access_uncovered("bcast", site, 0),
            _ => {}
        }
        return rc;
    }
    if eligible_comm(comm) && root >= 0 {
        if let Some(n) = type_bytes(datatype, count) {
            if n <= MAX_BLOCK && big_enough(n) {
                let pc = policy::caller_pc();
                policy::enter_site(pc);
                engine::set_site(engine::wants_site().then(|| policy::site_name(pc)));
                let local = (contiguous(datatype, count) == Some(n)).then_some(n);
                if engine::inside(|| engine::bcast(buf as *mut u8, local, root as usize, comm))
                    .is_some()
                {
                    return consts().success;
                }
            }
        }
    }
    let rc = PMPI_Bcast(buf, count, datatype, root, comm);
    policy::left();
    rc
}

/// Declares MPI entry points that only complete outstanding operations and pass through.
macro_rules! complete_then {
    ($($name:ident => $pmpi:ident ( $($arg:ident : $ty:ty),* );)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: completes outstanding overlapped operations first.")]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            complete_all();
            $pmpi($($arg),*)
        }
    )*};
}

complete_then! {
    MPI_Barrier => PMPI_Barrier(comm: MPI_Comm);
    MPI_Allreduce => PMPI_Allreduce(s: *const c_void, r: *mut c_void, count: c_int, t: MPI_Datatype, op: MPI_Op, comm: MPI_Comm);
    MPI_Reduce => PMPI_Reduce(s: *const c_void, r: *mut c_void, count: c_int, t: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm);
    MPI_Send => PMPI_Send(buf: *const c_void, count: c_int, t: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm);
    MPI_Recv => PMPI_Recv(buf: *mut c_void, count: c_int, t: MPI_Datatype, src: c_int, tag: c_int, comm: MPI_Comm, st: *mut MPI_Status);
    MPI_Isend => PMPI_Isend(buf: *const c_void, count: c_int, t: MPI_Datatype, dest: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request);
    MPI_Irecv => PMPI_Irecv(buf: *mut c_void, count: c_int, t: MPI_Datatype, src: c_int, tag: c_int, comm: MPI_Comm, req: *mut MPI_Request);
    MPI_Sendrecv => PMPI_Sendrecv(sb: *const c_void, sc: c_int, st: MPI_Datatype, dest: c_int, stag: c_int, rb: *mut c_void, rc: c_int, rt: MPI_Datatype, src: c_int, rtag: c_int, comm: MPI_Comm, status: *mut MPI_Status);
    MPI_Wait => PMPI_Wait(req: *mut MPI_Request, st: *mut MPI_Status);
    MPI_Waitall => PMPI_Waitall(n: c_int, reqs: *mut MPI_Request, sts: *mut MPI_Status);
    MPI_Ialltoall => PMPI_Ialltoall(s: *const c_void, sc: c_int, st: MPI_Datatype, r: *mut c_void, rc: c_int, rt: MPI_Datatype, comm: MPI_Comm, req: *mut MPI_Request);
    MPI_Comm_split => PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, out: *mut MPI_Comm);
}

/// MPI_Comm_free: completes outstanding operations and frees our duplicate of the communicator.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut MPI_Comm) -> c_int {
    complete_all();
    if !comm.is_null() {
        engine::forget(*comm);
    }
    PMPI_Comm_free(comm)
}

/// Resolves the next definition of a libc symbol (cached in `cell`).
unsafe fn next(cell: &AtomicUsize, name: &[u8]) -> usize {
    let mut f = cell.load(Ordering::Relaxed);
    if f == 0 {
        f = libc::dlsym(libc::RTLD_NEXT, name.as_ptr() as *const c_char) as usize;
        cell.store(f, Ordering::Relaxed);
    }
    f
}

/// Declares libc entry points that hand user memory to the kernel: when that memory overlaps
/// the buffers of an outstanding overlapped operation (`$touched` names the ranges), the
/// operation is completed first, since the kernel returns EFAULT on a protected page; then the
/// next definition is called. Calls on other memory (an MPI library's own sockets and pipes,
/// from its own threads) pass straight through.
macro_rules! libc_guard {
    ($($name:ident ($($arg:ident : $ty:ty),*) -> $ret:ty, touches $touched:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: completes an outstanding overlapped operation whose buffers it touches first (the kernel would return EFAULT on a protected page).")]
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let touched: &dyn Fn(&mut dyn FnMut(usize, usize)) = &$touched;
            touched(&mut |start, len| complete_if_touching(start, len));
            let f: unsafe extern "C" fn($($ty),*) -> $ret =
                std::mem::transmute(next(&NEXT, concat!(stringify!($name), "\0").as_bytes()));
            f($($arg),*)
        }
    )*};
}

/// Calls `each(start, len)` for every buffer of an iovec array.
unsafe fn each_iov(iov: *const libc::iovec, n: c_int, each: &mut dyn FnMut(usize, usize)) {
    if iov.is_null() {
        return;
    }
    for i in 0..n.max(0) as usize {
        let v = &*iov.add(i);
        each(v.iov_base as usize, v.iov_len);
    }
}

libc_guard! {
    write(fd: c_int, buf: *const c_void, n: libc::size_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    read(fd: c_int, buf: *mut c_void, n: libc::size_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    send(fd: c_int, buf: *const c_void, n: libc::size_t, flags: c_int) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    recv(fd: c_int, buf: *mut c_void, n: libc::size_t, flags: c_int) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    sendto(fd: c_int, buf: *const c_void, n: libc::size_t, flags: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    recvfrom(fd: c_int, buf: *mut c_void, n: libc::size_t, flags: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    pwrite(fd: c_int, buf: *const c_void, n: libc::size_t, off: libc::off_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    pread(fd: c_int, buf: *mut c_void, n: libc::size_t, off: libc::off_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    pwrite64(fd: c_int, buf: *const c_void, n: libc::size_t, off: libc::off64_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    pread64(fd: c_int, buf: *mut c_void, n: libc::size_t, off: libc::off64_t) -> libc::ssize_t,
        touches |f| f(buf as usize, n);
    writev(fd: c_int, iov: *const libc::iovec, n: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    readv(fd: c_int, iov: *const libc::iovec, n: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> libc::ssize_t,
        touches |f| if !msg.is_null() { each_iov((*msg).msg_iov, (*msg).msg_iovlen as c_int, f) };
    recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> libc::ssize_t,
        touches |f| if !msg.is_null() { each_iov((*msg).msg_iov, (*msg).msg_iovlen as c_int, f) };
    pwritev(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off_t) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    preadv(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off_t) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    pwritev64(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off64_t) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    preadv64(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off64_t) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    pwritev2(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off_t, flags: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    preadv2(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off_t, flags: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    pwritev64v2(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off64_t, flags: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    preadv64v2(fd: c_int, iov: *const libc::iovec, n: c_int, off: libc::off64_t, flags: c_int) -> libc::ssize_t,
        touches |f| each_iov(iov, n, f);
    fwrite(p: *const c_void, size: libc::size_t, n: libc::size_t, stream: *mut libc::FILE) -> libc::size_t,
        touches |f| f(p as usize, size.saturating_mul(n));
    fread(p: *mut c_void, size: libc::size_t, n: libc::size_t, stream: *mut libc::FILE) -> libc::size_t,
        touches |f| f(p as usize, size.saturating_mul(n));
    fwrite_unlocked(p: *const c_void, size: libc::size_t, n: libc::size_t, stream: *mut libc::FILE) -> libc::size_t,
        touches |f| f(p as usize, size.saturating_mul(n));
    fread_unlocked(p: *mut c_void, size: libc::size_t, n: libc::size_t, stream: *mut libc::FILE) -> libc::size_t,
        touches |f| f(p as usize, size.saturating_mul(n));
    getrandom(p: *mut c_void, n: libc::size_t, flags: libc::c_uint) -> libc::ssize_t,
        touches |f| f(p as usize, n);
    fstat(fd: c_int, st: *mut libc::stat) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat>());
    fstat64(fd: c_int, st: *mut libc::stat64) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat64>());
    stat(path: *const c_char, st: *mut libc::stat) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat>());
    stat64(path: *const c_char, st: *mut libc::stat64) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat64>());
    lstat(path: *const c_char, st: *mut libc::stat) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat>());
    fstatat(dir: c_int, path: *const c_char, st: *mut libc::stat, flags: c_int) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::stat>());
    statx(dir: c_int, path: *const c_char, flags: c_int, mask: libc::c_uint, st: *mut libc::statx) -> c_int,
        touches |f| f(st as usize, std::mem::size_of::<libc::statx>());
    sendmmsg(fd: c_int, v: *mut libc::mmsghdr, n: libc::c_uint, flags: c_int) -> c_int,
        touches |f| for i in 0..if v.is_null() { 0 } else { n as usize } {
            let m = &(*v.add(i)).msg_hdr;
            each_iov(m.msg_iov, m.msg_iovlen as c_int, f);
        };
    recvmmsg(fd: c_int, v: *mut libc::mmsghdr, n: libc::c_uint, flags: c_int, t: *mut libc::timespec) -> c_int,
        touches |f| for i in 0..if v.is_null() { 0 } else { n as usize } {
            let m = &(*v.add(i)).msg_hdr;
            each_iov(m.msg_iov, m.msg_iovlen as c_int, f);
        };
}

extern "C" {
    fn __libc_free(p: *mut c_void);
    fn __libc_realloc(p: *mut c_void, n: libc::size_t) -> *mut c_void;
}

/// Set while this library looks up the next `free`/`realloc`/`munmap` (the lookup itself may
/// release memory): those calls go to glibc directly.
static RESOLVING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The next definition of `name`, or `None` while a lookup is under way.
unsafe fn next_release(cell: &AtomicUsize, name: &[u8]) -> Option<usize> {
    let f = cell.load(Ordering::Acquire);
    if f != 0 {
        return Some(f);
    }
    if RESOLVING.swap(true, Ordering::AcqRel) {
        return None;
    }
    let f = next(cell, name);
    RESOLVING.store(false, Ordering::Release);
    (f != 0).then_some(f)
}

/// Completes the outstanding operation if `[start, start + len)` overlaps its buffers (or the
/// pages an access trace watches): memory must not be released under a message in flight,
/// nor reused before received pages move in, nor handed to the kernel while protected.
unsafe fn complete_if_touching(start: usize, len: usize) {
    if INSIDE.with(|c| c.get()) {
        return;
    }
    let traced = mpiscope_overlap_core::access::ACCESS
        .protected()
        .is_some_and(|(lo, hi)| start < hi && lo < start.saturating_add(len.max(1)));
    if traced || engine::overlaps_outstanding(start, len) {
        complete_all();
    }
}

/// `free`: completes an outstanding overlapped operation whose buffers the block overlaps.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    if !p.is_null() {
        complete_if_touching(p as usize, libc::malloc_usable_size(p));
    }
    match next_release(&NEXT, b"free\0") {
        Some(f) => std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(f)(p),
        None => __libc_free(p),
    }
}

/// `realloc`: completes an outstanding overlapped operation whose buffers the block overlaps.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, n: libc::size_t) -> *mut c_void {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    if !p.is_null() {
        complete_if_touching(p as usize, libc::malloc_usable_size(p));
    }
    match next_release(&NEXT, b"realloc\0") {
        Some(f) => std::mem::transmute::<
            usize,
            unsafe extern "C" fn(*mut c_void, libc::size_t) -> *mut c_void,
        >(f)(p, n),
        None => __libc_realloc(p, n),
    }
}

/// `munmap`: completes an outstanding overlapped operation whose buffers the range overlaps.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: libc::size_t) -> c_int {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    complete_if_touching(addr as usize, len);
    match next_release(&NEXT, b"munmap\0") {
        Some(f) => std::mem::transmute::<
            usize,
            unsafe extern "C" fn(*mut c_void, libc::size_t) -> c_int,
        >(f)(addr, len),
        None => libc::syscall(libc::SYS_munmap, addr, len) as c_int,
    }
}
