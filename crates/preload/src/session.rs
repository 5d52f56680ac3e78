//! The life of a traced process up to its record's first event: configuration at load
//! time, and the start after `MPI_Init` (rank, hosts, clock alignment, the rank file, the
//! manifest, the signal handlers and the keeper). How the record ends is
//! [`crate::ending`]'s; `MPI_Pcontrol` pauses and resumes recording here.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use mpiscope_trace::{block, ClockInfo, RankInfo};

use crate::calls::{
    self, CALL_NAMES, CONFIGURED, FLAVOUR, FORTRAN_BASE, MODES, MODE_ALL, MODE_OFF, MODE_SAMPLED,
    SAMPLE_EVERY,
};
use crate::clock;
use crate::config::Config;
use crate::ffi::consts;
use crate::mpi::*;
use crate::sink;
use crate::status::{self, fail, warn, State};

static CONFIG: OnceLock<Config> = OnceLock::new();
static LOAD_PAIR: Mutex<(u64, u64)> = Mutex::new((0, 0));
static STARTED: AtomicBool = AtomicBool::new(false);

// ---------------------------------------------------------------- load time

/// Library constructor: reads the options and arms the wrappers.
extern "C" fn on_load() {
    crate::ffi::load_consts();
    let known: Vec<&str> = CALL_NAMES.to_vec();
    let cfg = match Config::from_lookup(|k| std::env::var(k).ok(), &known) {
        Ok(c) => c,
        Err(e) => {
            warn(&format!(
                "bad option: {e}; tracing disabled, the program continues"
            ));
            status::set_state(State::Stopped);
            return;
        }
    };
    if cfg.disabled {
        status::set_state(State::Stopped);
        let _ = CONFIG.set(cfg);
        return;
    }
    clock::choose(&cfg.clock);
    *LOAD_PAIR.lock().unwrap_or_else(|p| p.into_inner()) = clock::pair();
    crate::threads::BLOCK_SIZE.store(cfg.buffer, Ordering::Relaxed);
    crate::guard::set_core_mode(cfg.core);
    crate::callsites::DEPTH.store(cfg.stack, Ordering::Relaxed);
    for (i, name) in CALL_NAMES.iter().enumerate() {
        let (mode, every) = match cfg.mode_of(name) {
            None => (MODE_OFF, 1),
            Some(1) => (MODE_ALL, 1),
            Some(n) => (MODE_SAMPLED, u64::from(n)),
        };
        for id in [i, i + FORTRAN_BASE as usize] {
            CONFIGURED[id].store(mode, Ordering::Relaxed);
            MODES[id].store(mode, Ordering::Relaxed);
            SAMPLE_EVERY[id].store(every, Ordering::Relaxed);
        }
    }
    if let Some(p) = &cfg.plugin {
        if let Err(e) = crate::plugin::load(p) {
            warn(&format!(
                "MPISCOPE_PLUGIN={p}: {e}; running without the plugin"
            ));
        }
    }
    let _ = CONFIG.set(cfg);
    status::set_state(State::PreInit);
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

// ---------------------------------------------------------------- start

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buffer of 256 bytes.
    unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// What rank 0 learns of every rank at start.
struct Gathered {
    hosts: Vec<String>,
    pids: Vec<u32>,
    cores: Vec<Option<u32>>,
    offset_ns: i64,
    epoch_ns: u64,
    epoch_unix_ns: u64,
}

/// Exchanges host names, process ids and clocks on a private duplicate of the world
/// communicator, so no message can meet the program's own.
unsafe fn gather(
    rank: c_int,
    size: c_int,
    host: &str,
    core: Option<u32>,
    load_ns: u64,
) -> Option<Gathered> {
    let k = consts();
    let mut comm: MPI_Comm = core::mem::zeroed();
    if PMPI_Comm_dup(k.comm_world, &mut comm) != 0 {
        return None;
    }
    let n = size as usize;
    const HOST: usize = 64;
    let mut mine = [0u8; HOST + 16];
    let hb = host.as_bytes();
    mine[..hb.len().min(HOST - 1)].copy_from_slice(&hb[..hb.len().min(HOST - 1)]);
    mine[HOST..HOST + 8].copy_from_slice(&(libc::getpid() as u64).to_le_bytes());
    mine[HOST + 8..].copy_from_slice(&core.map(u64::from).unwrap_or(u64::MAX).to_le_bytes());
    let rec = HOST + 16;
    let mut all = vec![0u8; rec * n];
    let ok = PMPI_Allgather(
        mine.as_ptr().cast(),
        rec as c_int,
        k.byte,
        all.as_mut_ptr().cast(),
        rec as c_int,
        k.byte,
        comm,
    ) == 0;
    if !ok {
        PMPI_Comm_free(&mut comm);
        return None;
    }
    let mut hosts = Vec::with_capacity(n);
    let mut pids = Vec::with_capacity(n);
    let mut cores = Vec::with_capacity(n);
    for r in 0..n {
        let e = &all[r * rec..(r + 1) * rec];
        let end = e[..HOST].iter().position(|&b| b == 0).unwrap_or(HOST);
        hosts.push(String::from_utf8_lossy(&e[..end]).into_owned());
        pids.push(u64::from_le_bytes(e[HOST..HOST + 8].try_into().unwrap()) as u32);
        let c = u64::from_le_bytes(e[HOST + 8..].try_into().unwrap());
        cores.push((c != u64::MAX).then_some(c as u32));
    }
    let offset = clock_offset(rank, &hosts, comm);
    // The epoch: the earliest library load of any rank, on rank 0's clock, so that every
    // event of every rank has a non-negative time.
    let mine = (load_ns as i64 - offset).max(0) as u64;
    let mut epoch0: u64 = mine;
    PMPI_Allreduce(
        (&mine as *const u64).cast(),
        (&mut epoch0 as *mut u64).cast(),
        1,
        k.uint64,
        k.op_min,
        comm,
    );
    PMPI_Comm_free(&mut comm);
    let (mono_now, unix_now) = (clock::monotonic_ns(), clock::realtime_ns());
    Some(Gathered {
        hosts,
        pids,
        cores,
        offset_ns: offset,
        epoch_ns: (epoch0 as i64 + offset) as u64,
        epoch_unix_ns: unix_now.saturating_sub(mono_now.saturating_sub(epoch0)),
    })
}

/// This rank's clock offset to rank 0's, measured by min-RTT ping-pong with rank 0 when
/// they run on different hosts (0 on rank 0's host); rank 0 measures every other host's.
unsafe fn clock_offset(rank: c_int, hosts: &[String], comm: MPI_Comm) -> i64 {
    let k = consts();
    let n = hosts.len();
    let mut offset: i64 = 0;
    let mut st: MPI_Status = core::mem::zeroed();
    const ROUNDS: usize = 10;
    if rank == 0 {
        for r in 1..n {
            if hosts[r] == hosts[0] {
                continue;
            }
            let mut best = (u64::MAX, 0i64);
            for _ in 0..ROUNDS {
                let a = clock::monotonic_ns();
                let mut t: u64 = 0;
                PMPI_Send(core::ptr::null(), 0, k.byte, r as c_int, 1, comm);
                PMPI_Recv(
                    (&mut t as *mut u64).cast(),
                    8,
                    k.byte,
                    r as c_int,
                    2,
                    comm,
                    &mut st,
                );
                let b = clock::monotonic_ns();
                if b - a < best.0 {
                    best = (b - a, t as i64 - ((a / 2 + b / 2) as i64));
                }
            }
            PMPI_Send(
                (&best.1 as *const i64).cast(),
                8,
                k.byte,
                r as c_int,
                3,
                comm,
            );
        }
    } else if hosts[rank as usize] != hosts[0] {
        for _ in 0..ROUNDS {
            PMPI_Recv(core::ptr::null_mut(), 0, k.byte, 0, 1, comm, &mut st);
            let t = clock::monotonic_ns();
            PMPI_Send((&t as *const u64).cast(), 8, k.byte, 0, 2, comm);
        }
        PMPI_Recv(
            (&mut offset as *mut i64).cast(),
            8,
            k.byte,
            0,
            3,
            comm,
            &mut st,
        );
    }
    offset
}

fn library_version() -> String {
    let mut buf = vec![0u8; 8192];
    let mut len: c_int = 0;
    // SAFETY: MPI_MAX_LIBRARY_VERSION_STRING is at most 8192 in every implementation.
    unsafe { PMPI_Get_library_version(buf.as_mut_ptr().cast(), &mut len) };
    buf.truncate(len.max(0) as usize);
    let s = String::from_utf8_lossy(&buf).into_owned();
    s.trim_end_matches('\0').trim().to_owned()
}

fn standard_version() -> String {
    let (mut a, mut b) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { PMPI_Get_version(&mut a, &mut b) };
    format!("{a}.{b}")
}

/// Starts tracing once MPI is initialized (idempotent).
pub fn start() {
    if STARTED.swap(true, Ordering::AcqRel) || status::state() != State::PreInit {
        return;
    }
    let k = consts();
    let mut flag: c_int = 0;
    // SAFETY: allowed at any time.
    unsafe { PMPI_Initialized(&mut flag) };
    if flag == 0 {
        return;
    }
    crate::ffi::load_consts();
    let Some(cfg) = CONFIG.get() else {
        return;
    };
    let (mut rank, mut size) = (0, 0);
    // SAFETY: MPI is initialized.
    unsafe {
        PMPI_Comm_rank(k.comm_world, &mut rank);
        PMPI_Comm_size(k.comm_world, &mut size);
    }
    status::set_world_rank(rank);
    let host = hostname();
    let (_, core) = clock::ticks_and_core();
    let core = (core != u32::MAX).then_some(core);
    // SAFETY: MPI is initialized; the exchange uses a private communicator.
    let load = *LOAD_PAIR.lock().unwrap_or_else(|p| p.into_inner());
    let Some(g) = (unsafe { gather(rank, size, &host, core, load.1) }) else {
        fail("cannot exchange start-up information between ranks");
        return;
    };
    let sync = clock::pair();
    let tps = if clock::source() == "tsc" && sync.1 > load.1 + 1_000_000 {
        (sync.0 - load.0) as f64 * 1e9 / (sync.1 - load.1) as f64
    } else {
        1e9
    };
    let res_ticks = clock::resolution_ticks();
    let mut level: c_int = 0;
    // SAFETY: MPI is initialized.
    unsafe { PMPI_Query_thread(&mut level) };
    crate::handles::find_fortran_sentinels();
    crate::callsites::warm_up();
    crate::requests::reserve(4096);

    let Some((fd, path)) = create_rank_file(cfg, rank) else {
        return;
    };
    let info = RankInfo {
        rank: rank as u32,
        size: size as u32,
        pid: std::process::id(),
        host: host.clone(),
        core,
        clock: ClockInfo {
            source: clock::source().into(),
            sync_ticks: sync.0,
            sync_ns: sync.1,
            ticks_per_second: tps,
            resolution_ns: res_ticks as f64 * 1e9 / tps,
        },
        epoch_ns: g.epoch_ns,
        offset_ns: g.offset_ns,
        mpi_library: library_version(),
        thread_level: crate::handles::thread_level_name(level).into(),
        executable: std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        options: cfg.to_json(),
    };
    let Some(len) = write_header(fd, &path, &info, sync) else {
        return;
    };
    status::set_epoch_ns(g.epoch_ns);
    sink::open(fd, len);
    set_window(cfg, tps);
    status::set_state(State::Tracing);
    crate::defs::write_kept();
    crate::comms::start(rank, size);
    if rank == 0 {
        write_manifest(
            cfg,
            &info,
            &g,
            size as u32,
            tps,
            res_ticks as f64 * 1e9 / tps,
        );
    }
    if cfg.signals {
        crate::signals::install();
    }
    start_keeper(cfg, tps);
    // SAFETY: registering a plain function.
    unsafe { libc::atexit(crate::ending::on_exit) };
}

/// Creates this rank's file in the trace directory (truncating an earlier one); `None`
/// when it cannot (tracing is then disabled).
fn create_rank_file(cfg: &Config, rank: c_int) -> Option<(c_int, std::path::PathBuf)> {
    let dir = std::path::Path::new(&cfg.dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        fail(&format!(
            "cannot create the trace directory {}: {e}",
            dir.display()
        ));
        return None;
    }
    let path = dir.join(mpiscope_trace::rank_file_name(rank as u32));
    let cpath = match std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) {
        Ok(c) => c,
        Err(_) => {
            fail(&format!("bad trace path {}", path.display()));
            return None;
        }
    };
    // SAFETY: NUL-terminated path.
    let fd = unsafe {
        libc::open(
            cpath.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_APPEND | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        fail(&format!(
            "cannot create {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
        return None;
    }
    Some((fd, path))
}

/// Writes the file header and the info block to `fd`; returns their length, or `None`
/// (the file closed, tracing disabled) when they cannot be written.
fn write_header(
    fd: c_int,
    path: &std::path::Path,
    info: &RankInfo,
    sync: (u64, u64),
) -> Option<u64> {
    let json = serde_json::to_vec(info).unwrap_or_default();
    let mut head = block::file_header().to_vec();
    head.extend(block::frame(block::BlockKind::Info, 0, 1, sync, &json));
    // SAFETY: our descriptor; a file size limit below the header is a plain error here.
    let written = unsafe {
        let mut set: libc::sigset_t = core::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGXFSZ);
        let mut old: libc::sigset_t = core::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let n = libc::write(fd, head.as_ptr().cast(), head.len());
        let err = std::io::Error::last_os_error();
        if n != head.len() as isize {
            let zero = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let mut si: libc::siginfo_t = core::mem::zeroed();
            libc::sigtimedwait(&set, &mut si, &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut());
        (n == head.len() as isize).then_some(()).ok_or(err)
    };
    if let Err(e) = written {
        // SAFETY: our descriptor.
        unsafe { libc::close(fd) };
        fail(&format!("cannot write {}: {e}", path.display()));
        return None;
    }
    Some(head.len() as u64)
}

/// The recording window (`MPISCOPE_START_AFTER`, `MPISCOPE_DURATION`), in ticks from now.
fn set_window(cfg: &Config, tps: f64) {
    let to_ticks = |ns: u64| (ns as f64 * tps / 1e9) as u64;
    let now = clock::ticks();
    if cfg.start_after_ns > 0 {
        crate::guard::WINDOW_START.store(
            now.saturating_add(to_ticks(cfg.start_after_ns)),
            Ordering::Relaxed,
        );
    }
    if let Some(d) = cfg.duration_ns {
        crate::guard::WINDOW_END.store(
            now.saturating_add(to_ticks(cfg.start_after_ns + d)),
            Ordering::Relaxed,
        );
    }
}

/// The flush interval of busy threads, and the keeper for blocked ones and hangs.
fn start_keeper(cfg: &Config, tps: f64) {
    let per_ns = tps / 1e9;
    let ticks = |ns: u64| (ns as f64 * per_ns) as u64;
    if cfg.flush_every_ns > 0 {
        crate::guard::FLUSH_TICKS.store(ticks(cfg.flush_every_ns), Ordering::Relaxed);
    }
    if let Some(ns) = cfg.cpu_time_ns {
        crate::cputime::MIN_BURST_TICKS.store(ticks(ns).max(1), Ordering::Relaxed);
    }
    crate::keeper::start(crate::keeper::Keeper {
        flush_ticks: ticks(cfg.flush_every_ns),
        hang_ticks: cfg.hang_after_ns.map(ticks),
        kill: cfg.hang_kill,
        ticks_per_ns: per_ns,
    });
}

fn write_manifest(cfg: &Config, info: &RankInfo, g: &Gathered, size: u32, tps: f64, res_ns: f64) {
    let mut hosts: Vec<String> = Vec::new();
    for h in &g.hosts {
        if !hosts.contains(h) {
            hosts.push(h.clone());
        }
    }
    let command = cfg
        .command
        .clone()
        .unwrap_or_else(|| std::env::args().collect());
    let m = mpiscope_trace::Manifest {
        format_version: mpiscope_trace::format_version(),
        recorder_version: crate::VERSION.into(),
        command,
        executable: info.executable.clone(),
        mpi: mpiscope_trace::MpiLibrary {
            flavour: FLAVOUR.into(),
            version: info.mpi_library.clone(),
            standard: standard_version(),
        },
        ranks: size,
        hosts: hosts.clone(),
        placement: (0..size as usize)
            .map(|r| mpiscope_trace::RankPlacement {
                rank: r as u32,
                host: g.hosts[r].clone(),
                pid: g.pids[r],
                core: g.cores[r],
                file: mpiscope_trace::rank_file_name(r as u32),
            })
            .collect(),
        clock: mpiscope_trace::ClockSummary {
            source: info.clock.source.clone(),
            ticks_per_second: tps,
            resolution_ns: res_ns,
            alignment: if hosts.len() > 1 {
                "ranks on other hosts aligned to rank 0 by min-RTT ping-pong at MPI_Init".into()
            } else {
                "one host: shared clock".into()
            },
        },
        start_unix_ns: g.epoch_unix_ns,
        start_time: rfc3339(g.epoch_unix_ns),
        options: cfg.to_json(),
        exit_status: None,
        batch: None,
    };
    let path = std::path::Path::new(&cfg.dir).join(mpiscope_trace::MANIFEST_FILE);
    let text = serde_json::to_string_pretty(&m).unwrap_or_default();
    if let Err(e) = std::fs::write(&path, text + "\n") {
        warn(&format!("cannot write {}: {e}", path.display()));
    }
}

/// Formats Unix ns as RFC 3339 UTC.
fn rfc3339(ns: u64) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        (ns % 1_000_000_000) / 1_000_000
    )
}

// ---------------------------------------------------------------- pause

/// `MPI_Pcontrol(level)`: 0 pauses, any other level resumes.
pub fn pcontrol(level: c_int) {
    let Some(cfg) = CONFIG.get() else { return };
    if !cfg.pcontrol || status::state() == State::Stopped {
        return;
    }
    let pc = CALL_NAMES.iter().position(|n| *n == "MPI_Pcontrol");
    for (i, m) in MODES.iter().enumerate() {
        let keep = pc.is_some_and(|p| calls::c_id(i as u32) as usize == p);
        let v = if level == 0 && !keep {
            MODE_OFF
        } else {
            CONFIGURED[i].load(Ordering::Relaxed)
        };
        m.store(v, Ordering::Relaxed);
    }
}
