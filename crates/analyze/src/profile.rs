//! Per-function and per-rank statistics of a run (the `mpiscope report` numbers).
//!
//! Every rank file is streamed once; ranks are read in parallel. Counts come from each
//! rank's trailer when it has one (exact, including calls not recorded because of sampling
//! or filters), else from the events and their `skipped` counters. Times are those of the
//! recorded calls. Calls made through the Fortran bindings are counted under their C name.
//!
//! A rank's MPI and compute time are measured as mpiP does, between the end of `MPI_Init`
//! (or `MPI_Init_thread`) and the start of `MPI_Finalize` (the *application time*,
//! `app_s`): the start-up and the tear-down of the library are reported apart (`init_s`,
//! `finalize_s`), so a short run is not "99% MPI" because of `MPI_Init`. A rank whose record
//! (or report window) holds no `MPI_Init` starts at its first call; one without
//! `MPI_Finalize` ends at its last. The per-function table still lists both functions.

use std::collections::{BTreeMap, HashMap};

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommKind, Event, RankReader, RunDir, Slot, Tables};
use serde::Serialize;

use crate::byid::ById;
use crate::histogram::LogHistogram;
use crate::sites::{Frames, SiteAcc, Sites};
pub use crate::stats::{Bursts, CallStats, CallsiteStats, PairTraffic, RankStats, SizeBin, Totals};
use crate::volume::{self, Volume};
pub use crate::window::Window;
use crate::window::{Phase, RankRange, RankWindows};
use crate::AnalyzeError;

/// The statistics of a run: per function, per rank, per callsite, per pair of ranks (the
/// report's numbers; [`crate::report`] adds the matrices, the balance and the endings).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Profile {
    /// Number of ranks.
    pub ranks: u32,
    /// Events read over all ranks.
    pub events: u64,
    /// Per function (C name), summed over ranks.
    pub calls: BTreeMap<String, CallStats>,
    /// Per rank, in rank order.
    pub per_rank: Vec<RankStats>,
    /// Compute bursts over all ranks.
    pub bursts: Bursts,
    /// Per callsite (stack and function), busiest first.
    pub callsites: Vec<CallsiteStats>,
    /// Point-to-point traffic by (sender, receiver) world ranks, most bytes first.
    pub p2p: Vec<PairTraffic>,
    /// Sums over ranks of the per-rank times (application, MPI, compute, init, finalize).
    pub totals: Totals,
    /// Messages by size, powers of two: point-to-point messages sent (to a real process)
    /// and collective calls by their buffer's size.
    pub message_sizes: Vec<SizeBin>,
    /// The largest error of a percentile (`median_s`, `p90_s`, `p99_s`) relative to the exact
    /// one: they come from log-scale histograms (see [`crate::histogram::REL_ERROR`]) and are
    /// clamped into the range of the values.
    pub percentile_rel_error: f64,
    /// Problems met (cut files, missing ranks).
    pub warnings: Vec<String>,
    /// The part of the run counted (`--phase`).
    pub phase: Phase,
    /// Where that part lies on each rank (empty for the whole run).
    pub phase_ranges: Vec<RankRange>,
    /// Bursts shorter than this were left out of the burst statistics (not of the compute
    /// time), seconds.
    pub burst_min_gap_s: f64,
}

/// What a profile counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileOptions {
    /// The calls counted: on each rank, those entering within its window.
    pub windows: RankWindows,
    /// The phase the windows come from, and its ranges (recorded in the profile).
    pub phase: crate::window::Resolved,
    /// Bursts shorter than this (ns) are left out of the burst statistics: the gaps between
    /// calls made back to back (`MPI_Comm_rank` then `MPI_Allreduce`) are no computation.
    pub min_gap_ns: u64,
}

#[derive(Default)]
struct Acc {
    count: u64,
    recorded: u64,
    fortran: u64,
    time_ns: u64,
    max_ns: u64,
    vol: Volume,
    durations: LogHistogram,
    /// Calls by message size class ([`size_class`]).
    sizes: Vec<u64>,
}

impl Acc {
    fn merge(&mut self, a: &Acc) {
        self.count += a.count;
        self.recorded += a.recorded;
        self.fortran += a.fortran;
        self.time_ns += a.time_ns;
        self.max_ns = self.max_ns.max(a.max_ns);
        self.vol.sent += a.vol.sent;
        self.vol.received += a.vol.received;
        self.durations.merge(&a.durations);
        add_counts(&mut self.sizes, &a.sizes);
    }
}

/// Size class of `b` bytes: 0 for 0, else `k` for `2^(k-1) <= b < 2^k`.
fn size_class(b: u64) -> u32 {
    64 - b.leading_zeros()
}

/// `"0B"`, `"1B"`, `"512B"`, `"1KiB"`, ...: the smallest size of class `c`.
pub fn size_class_label(c: u32) -> String {
    if c == 0 {
        return "0B".into();
    }
    let lo = 1u64 << (c - 1).min(63);
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut i = 0;
    let mut v = lo;
    while v >= 1024 && i < U.len() - 1 {
        v /= 1024;
        i += 1;
    }
    format!("{v}{}", U[i])
}

/// Does a call of `name` send one point-to-point message when it is called? (`family`
/// folds the non-blocking forms in; persistent inits send nothing until started.)
fn is_send(name: &str) -> bool {
    let family = Family::of(name);
    !mpiscope_mpispec::is_persistent(name)
        && (family.is_send() || matches!(family, Family::Sendrecv | Family::SendrecvReplace))
}

/// Statistics of one rank file.
pub struct RankProfile {
    calls: HashMap<String, Acc>,
    stats: RankStats,
    warning: Option<String>,
    bursts: LogHistogram,
    burst_recip: f64,
    /// The bursts' sum, seconds.
    burst_s: f64,
    /// Per callsite, by its frames (module path, offset), innermost first.
    sites: Vec<(Frames, SiteAcc)>,
    /// Point-to-point sends: receiver's world rank -> (messages, bytes).
    sent_to: BTreeMap<u32, (u64, u64)>,
    /// Messages by size class ([`size_class`]): point-to-point sends, collective calls.
    sizes: [Vec<u64>; 2],
}

/// Reads one rank.
pub fn profile_rank<R: std::io::Read>(
    reader: RankReader<R>,
    rank: u32,
    window: &Window,
) -> RankProfile {
    profile_rank_gaps(reader, rank, window, 0)
}

/// As [`profile_rank`], leaving the bursts shorter than `min_gap_ns` out of the burst
/// statistics.
pub fn profile_rank_gaps<R: std::io::Read>(
    mut reader: RankReader<R>,
    rank: u32,
    window: &Window,
    min_gap_ns: u64,
) -> RankProfile {
    let mut pass = RankPass::new(rank, reader.info().map(|i| i.host.clone()));
    pass.min_gap_ns = min_gap_ns;
    // Only MPI_Startall's list (of requests) counts here: the others are skipped over.
    reader.lists_only_for(&["MPI_Startall"]);
    while let Some((ev, tables)) = reader.next_with_tables() {
        if window.contains(ev.t_enter) {
            pass.event(ev, tables);
        }
    }
    pass.finish(&reader, window)
}

/// The running totals of one rank's pass over its events.
struct RankPass {
    rank: u32,
    stats: RankStats,
    /// Volumes of the persistent requests created, by request id.
    persistent: HashMap<i64, Volume>,
    /// The first entry and the last exit.
    first: u64,
    last: u64,
    /// The first thread's time in MPI, its last exit, and its time between calls, from the
    /// end of MPI_Init to the start of MPI_Finalize.
    mpi0: u64,
    prev_exit0: Option<u64>,
    compute0: u64,
    /// The first thread has entered MPI_Finalize: its later calls are not counted.
    finalized0: bool,
    /// Time in MPI_Init(_thread) and in MPI_Finalize.
    init_ns: u64,
    finalize_ns: u64,
    /// The end of MPI_Init and the start of MPI_Finalize, when seen.
    app_start: Option<u64>,
    app_end: Option<u64>,
    bursts: LogHistogram,
    burst_recip: f64,
    /// The bursts' sum, ns, and the shortest counted.
    burst_ns: u64,
    min_gap_ns: u64,
    sites: ById<SiteAcc>,
    sent_to: ById<(u64, u64)>,
    /// Messages by size class: point-to-point sends, collective calls.
    sizes: [Vec<u64>; 2],
    /// Per call id: what its events need, worked out at the first one, and its totals.
    calls: ById<CallInfo>,
    /// Per communicator id: the processes a per-process count applies to.
    comm_peers: ById<u32>,
    threads: Vec<u16>,
}

impl RankPass {
    fn new(rank: u32, host: Option<String>) -> Self {
        RankPass {
            rank,
            stats: RankStats {
                rank,
                host: host.unwrap_or_default(),
                ..RankStats::default()
            },
            persistent: HashMap::new(),
            first: u64::MAX,
            last: 0,
            mpi0: 0,
            prev_exit0: None,
            compute0: 0,
            finalized0: false,
            init_ns: 0,
            finalize_ns: 0,
            app_start: None,
            app_end: None,
            bursts: LogHistogram::default(),
            burst_recip: 0.0,
            burst_ns: 0,
            min_gap_ns: 0,
            sites: ById::default(),
            sent_to: ById::default(),
            sizes: Default::default(),
            calls: ById::default(),
            comm_peers: ById::default(),
            threads: Vec::new(),
        }
    }

    /// Counts one event of the window.
    #[inline]
    fn event(&mut self, ev: &Event, tables: &Tables) {
        self.stats.events += 1;
        self.first = self.first.min(ev.t_enter);
        self.last = self.last.max(ev.t_exit);
        if !self.threads.contains(&ev.thread) {
            self.threads.push(ev.thread);
        }
        let d = ev.duration();
        let phase = self
            .calls
            .get_or_insert_with(ev.call, || CallInfo::new(tables, ev.call))
            .phase;
        match phase {
            Stage::Init => {
                self.init_ns += d;
                self.app_start = Some(ev.t_exit);
                if ev.thread == 0 {
                    // What came before MPI_Init is outside the application's time.
                    self.mpi0 = 0;
                    self.compute0 = 0;
                    self.bursts = LogHistogram::default();
                    self.burst_recip = 0.0;
                    self.burst_ns = 0;
                    self.finalized0 = false;
                    self.prev_exit0 = Some(ev.t_exit);
                }
            }
            Stage::Finalize => {
                self.finalize_ns += d;
                self.app_end.get_or_insert(ev.t_enter);
                if ev.thread == 0 && !self.finalized0 {
                    // The computation before it counts; its own time does not.
                    self.gap0(ev.t_enter);
                    self.finalized0 = true;
                }
            }
            Stage::Other if ev.thread == 0 && !self.finalized0 => {
                self.mpi0 += d;
                self.gap0(ev.t_enter);
                self.prev_exit0 = Some(ev.t_exit);
            }
            Stage::Other => {}
        }
        let info = self
            .calls
            .get_or_insert_with(ev.call, || CallInfo::new(tables, ev.call));
        let acc = &mut info.acc;
        acc.count += 1 + ev.skipped;
        acc.recorded += 1;
        acc.time_ns += d;
        acc.max_ns = acc.max_ns.max(d);
        acc.durations.add(d);
        if let Some(b) = ev.args.get(Slot::Bytes) {
            count_size(&mut acc.sizes, b.max(0) as u64);
        }
        let peers = match ev.args.get(Slot::Comm) {
            None => 1,
            Some(id) => match self.comm_peers.get(id as u32) {
                Some(&n) => n,
                None => match peers_of(tables, id as u32) {
                    // Cached once defined (definitions come before their first use).
                    Some(n) => *self.comm_peers.get_or_insert_with(id as u32, || n),
                    None => 1,
                },
            },
        };
        let v = volume_of(info, &mut self.persistent, ev, self.rank, peers);
        let acc = &mut info.acc;
        acc.vol.sent += v.sent;
        acc.vol.received += v.received;
        if ev.callsite != 0 {
            let site = self.sites.get_or_insert_with(ev.callsite, || SiteAcc {
                function: info.name.clone(),
                ..SiteAcc::default()
            });
            site.count += 1;
            site.time_ns += d;
            site.max_ns = site.max_ns.max(d);
            site.bytes += v.total();
        }
        if info.send {
            if let Some(peer) = ev.args.get(Slot::Peer).filter(|&p| p >= 0) {
                let e = self
                    .sent_to
                    .get_or_insert_with(peer as u32, Default::default);
                e.0 += 1;
                e.1 += v.sent;
                count_size(&mut self.sizes[0], v.sent);
            }
        } else if info.collective {
            if let Some(b) = ev.args.get(Slot::Bytes) {
                count_size(&mut self.sizes[1], b.max(0) as u64);
            }
        }
    }

    /// Counts the first thread's computation from its last exit to `enter`, a compute burst.
    #[inline]
    fn gap0(&mut self, enter: u64) {
        if let Some(p) = self.prev_exit0 {
            let gap = enter.saturating_sub(p);
            self.compute0 += gap;
            if gap >= self.min_gap_ns {
                self.bursts.add(gap);
                self.burst_ns += gap;
                if gap > 0 {
                    self.burst_recip += 1e9 / gap as f64;
                }
            }
        }
    }

    /// The rank's times and bursts once its events are read.
    fn times(&self) -> RankStats {
        let mut stats = self.stats.clone();
        let bursts = &self.bursts;
        stats.threads = self.threads.len() as u32;
        if self.first != u64::MAX {
            stats.wall_s = (self.last - self.first) as f64 * 1e-9;
            stats.first_ns = self.first;
            stats.last_ns = self.last;
            let start = self.app_start.unwrap_or(self.first);
            let end = self.app_end.unwrap_or(self.last);
            stats.app_s = end.saturating_sub(start) as f64 * 1e-9;
        }
        stats.mpi_s = self.mpi0 as f64 * 1e-9;
        stats.compute_s = self.compute0 as f64 * 1e-9;
        stats.init_s = self.init_ns as f64 * 1e-9;
        stats.finalize_s = self.finalize_ns as f64 * 1e-9;
        stats.mpi_pct = percent(stats.mpi_s, stats.app_s);
        stats.bursts = bursts.len();
        if stats.bursts > 0 {
            stats.burst_mean_s = self.burst_ns as f64 * 1e-9 / stats.bursts as f64;
        }
        if self.burst_recip > 0.0 {
            let nonzero = bursts.len()
                - bursts
                    .buckets()
                    .first()
                    .filter(|b| b.from == 0)
                    .map_or(0, |b| b.count);
            stats.burst_harmonic_mean_s = nonzero as f64 / self.burst_recip;
        }
        if stats.mpi_s > 0.0 {
            stats.granularity = stats.compute_s / stats.mpi_s;
        }
        stats
    }

    /// The rank's statistics once its events are read: times, bursts, and how its record
    /// ends; counts from its trailer when it has one and the window is the whole run.
    fn finish<R: std::io::Read>(self, reader: &RankReader<R>, window: &Window) -> RankProfile {
        let rank = self.rank;
        let mut stats = self.times();
        let bursts = self.bursts;
        let mut by_id: HashMap<u32, Acc> =
            self.calls.into_iter().map(|(id, c)| (id, c.acc)).collect();
        let sites: HashMap<u32, SiteAcc> = self.sites.into_iter().collect();
        let sent_to: BTreeMap<u32, (u64, u64)> = self.sent_to.into_iter().collect();
        let mut warning = None;
        let mut trailer_names: HashMap<u32, (String, bool)> = HashMap::new();
        if let Some(t) = reader.trailer() {
            stats.complete = true;
            stats.end = t.reason.clone();
            // Exact counts from the trailer (which covers the whole run, not a window).
            for c in t.calls.iter().filter(|_| window.is_all()) {
                by_id.entry(c.id).or_default().count = c.count;
                if !c.name.is_empty() {
                    trailer_names.insert(c.id, (c.name.clone(), c.fortran));
                }
            }
        } else if let Some(e) = reader.stopped() {
            stats.end = format!("cut: {e}");
            warning = Some(format!(
                "rank {rank}: read up to the last complete block ({e})"
            ));
        } else {
            stats.end = "no trailer (the rank did not finish tracing)".into();
            warning = Some(format!(
                "rank {rank}: the trace has no trailer; the rank did not end normally"
            ));
        }
        let tables = reader.tables();
        RankProfile {
            calls: by_name(tables, by_id, &trailer_names),
            stats,
            warning,
            bursts,
            burst_recip: self.burst_recip,
            burst_s: self.burst_ns as f64 * 1e-9,
            sites: by_frames(tables, sites),
            sent_to,
            sizes: self.sizes,
        }
    }
}

/// The volume of `ev`, a call of `info`: from its arguments, or through the persistent
/// requests it creates (their volume kept in `persistent`) or starts.
#[inline]
fn volume_of(
    info: &CallInfo,
    persistent: &mut HashMap<i64, Volume>,
    ev: &Event,
    rank: u32,
    peers: u32,
) -> Volume {
    match info.start {
        Start::Creates => {
            if let Some(req) = ev.args.get(Slot::Request) {
                persistent.insert(req, volume::persistent_volume(&info.name, ev, rank, peers));
            }
            Volume::default()
        }
        Start::One => ev
            .args
            .get(Slot::Request)
            .and_then(|r| persistent.get(&r).copied())
            .unwrap_or_default(),
        Start::All => ev
            .list(mpiscope_trace::ListKind::Requests)
            .unwrap_or(&[])
            .iter()
            .filter_map(|r| persistent.get(r))
            .fold(Volume::default(), |a, v| Volume {
                sent: a.sent + v.sent,
                received: a.received + v.received,
            }),
        Start::No => info.rule.volume(ev, rank, peers),
    }
}

/// Callsites in the order the recorder numbered them (first use), by their frames.
fn by_frames(tables: &Tables, sites: HashMap<u32, SiteAcc>) -> Vec<(Frames, SiteAcc)> {
    let mut sites: Vec<(u32, SiteAcc)> = sites.into_iter().collect();
    sites.sort_by_key(|(id, _)| *id);
    sites
        .into_iter()
        .map(|(id, acc)| (crate::symbols::callsite_frames(tables, id), acc))
        .collect()
}

/// Totals by C name (a Fortran call counted under its C function too), from the
/// definitions, else the trailer's names.
fn by_name(
    tables: &Tables,
    by_id: HashMap<u32, Acc>,
    trailer_names: &HashMap<u32, (String, bool)>,
) -> HashMap<String, Acc> {
    let mut calls: HashMap<String, Acc> = HashMap::new();
    for (id, a) in by_id {
        let (name, fortran) = match (tables.calls.get(&id), trailer_names.get(&id)) {
            (Some(c), _) => (c.name.clone(), c.lang == mpiscope_trace::Lang::Fortran),
            (None, Some((n, f))) => (n.clone(), *f),
            (None, None) => (format!("?{id}"), false),
        };
        let e = calls.entry(name).or_default();
        if fortran {
            e.fortran += a.count;
        }
        e.merge(&Acc { fortran: 0, ..a });
    }
    calls
}

/// The processes a per-process count of communicator `id` applies to (its size, or its
/// remote group's for an intercommunicator), if it is defined.
fn peers_of(tables: &mpiscope_trace::Tables, id: u32) -> Option<u32> {
    tables.comms.get(&id).map(|c| match c.kind {
        CommKind::Inter => c.remote.len() as u32,
        _ => c.size,
    })
}

/// How a call's volume is found: from its arguments ([`volume::Rule`]), or through the
/// persistent requests it creates or starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// An ordinary call.
    No,
    /// Creates a persistent request (credited when started).
    Creates,
    /// MPI_Start.
    One,
    /// MPI_Startall.
    All,
}

/// Where a call stands in the library's life: it starts it, ends it, or is in between.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// MPI_Init, MPI_Init_thread.
    Init,
    /// MPI_Finalize.
    Finalize,
    /// Any other.
    Other,
}

/// `100 part / whole`, 0 when `whole` is 0.
fn percent(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    }
}

/// What the statistics need of one call id, worked out at its first event, and its totals.
struct CallInfo {
    name: String,
    phase: Stage,
    rule: volume::Rule,
    start: Start,
    /// Sends one point-to-point message when called.
    send: bool,
    /// A collective (not a persistent one's creation): one message by its buffer's size.
    collective: bool,
    acc: Acc,
}

impl CallInfo {
    fn new(tables: &mpiscope_trace::Tables, id: u32) -> Self {
        let name = tables.call_name(id).into_owned();
        let class = mpiscope_mpispec::classify(&name);
        let start = match class.family {
            _ if class.persistent => Start::Creates,
            Family::Start => Start::One,
            Family::Startall => Start::All,
            _ => Start::No,
        };
        let phase = match class.family {
            Family::Init | Family::InitThread => Stage::Init,
            Family::Finalize => Stage::Finalize,
            _ => Stage::Other,
        };
        CallInfo {
            phase,
            rule: volume::Rule::of(&class),
            start,
            send: is_send(&name),
            collective: class.collective && !class.persistent,
            name,
            acc: Acc::default(),
        }
    }
}

/// Computes the statistics of a run, reading ranks on all cores.
pub fn profile(run: &RunDir) -> Result<Profile, AnalyzeError> {
    profile_window(run, &Window::ALL)
}

/// Computes the statistics of the calls that entered within `window`. Counts then come from the
/// events (the trailers' exact counts cover the whole run).
pub fn profile_window(run: &RunDir, window: &Window) -> Result<Profile, AnalyzeError> {
    profile_with(
        run,
        &ProfileOptions {
            windows: RankWindows::same(*window),
            ..ProfileOptions::default()
        },
    )
}

/// Computes the statistics of the calls that entered within each rank's window, the bursts
/// shorter than the minimum gap left out of the burst statistics.
pub fn profile_with(run: &RunDir, o: &ProfileOptions) -> Result<Profile, AnalyzeError> {
    let results = crate::parallel::per_rank(run, |rd, rank| {
        Ok(profile_rank_gaps(
            rd,
            rank,
            &o.windows.of(rank),
            o.min_gap_ns,
        ))
    });
    let mut p = Profile {
        ranks: run.ranks(),
        percentile_rel_error: crate::histogram::REL_ERROR,
        phase: o.phase.phase,
        phase_ranges: o.phase.ranges.clone(),
        burst_min_gap_s: o.min_gap_ns as f64 / 1e9,
        ..Profile::default()
    };
    let mut m = Merged::default();
    for (rank, r) in results {
        match r {
            Ok(rp) => m.add(&mut p, rank, rp),
            Err(e) => p.warnings.push(format!("rank {rank}: {e}")),
        }
    }
    missing_ranks(run, &mut p);
    p.totals = Totals::of(&p.per_rank);
    p.p2p.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then((a.from, a.to).cmp(&(b.from, b.to)))
    });
    p.bursts = bursts_of(&m.bursts, m.burst_sum, m.burst_recip);
    p.callsites = m.sites.rows();
    p.message_sizes = size_bins(&m.sizes);
    p.calls = m
        .acc
        .into_iter()
        .map(|(name, a)| (name, call_row(a)))
        .collect();
    Ok(p)
}

/// What the ranks' profiles add up to before it becomes rows.
#[derive(Default)]
struct Merged {
    acc: BTreeMap<String, Acc>,
    bursts: LogHistogram,
    burst_sum: f64,
    burst_recip: f64,
    /// Per callsite, over ranks.
    sites: Sites,
    /// Messages by size class: point-to-point, collective.
    sizes: [Vec<u64>; 2],
}

impl Merged {
    /// Adds one rank's profile; its per-rank row, pairs and warning go to `p`.
    fn add(&mut self, p: &mut Profile, rank: u32, rp: RankProfile) {
        p.events += rp.stats.events;
        for (name, a) in rp.calls {
            self.acc.entry(name).or_default().merge(&a);
        }
        self.bursts.merge(&rp.bursts);
        self.burst_sum += rp.burst_s;
        self.burst_recip += rp.burst_recip;
        self.sites.add(rp.sites);
        for (into, from) in self.sizes.iter_mut().zip(&rp.sizes) {
            add_counts(into, from);
        }
        for (to, (m, b)) in rp.sent_to {
            p.p2p.push(PairTraffic {
                from: rank,
                to,
                messages: m,
                bytes: b,
            });
        }
        if let Some(w) = rp.warning {
            p.warnings.push(w);
        }
        p.per_rank.push(rp.stats);
    }
}

/// Warns of the ranks whose file is not a regular file, and of those with no readable trace.
fn missing_ranks(run: &RunDir, p: &mut Profile) {
    for (r, kind) in &run.not_files {
        p.warnings.push(format!(
            "rank {r}: {} is {kind}: not read",
            mpiscope_trace::rank_file_name(*r)
        ));
    }
    let expected = run.ranks();
    if (p.per_rank.len() as u32) < expected {
        let have: Vec<u32> = p.per_rank.iter().map(|r| r.rank).collect();
        let missing: Vec<String> = (0..expected)
            .filter(|r| !have.contains(r))
            .map(|r| r.to_string())
            .collect();
        p.warnings.push(format!(
            "no readable trace for rank(s) {}",
            missing.join(", ")
        ));
    }
}

fn ns(v: u64) -> f64 {
    v as f64 * 1e-9
}

/// The compute bursts of every rank: `sum` their total seconds, `recip` the sum of the
/// reciprocals of the non-zero ones.
fn bursts_of(bursts: &LogHistogram, sum: f64, recip: f64) -> Bursts {
    let nonzero = bursts.len()
        - bursts
            .buckets()
            .first()
            .filter(|b| b.from == 0)
            .map_or(0, |b| b.count);
    Bursts {
        count: bursts.len(),
        mean_s: if bursts.is_empty() {
            0.0
        } else {
            sum / bursts.len() as f64
        },
        harmonic_mean_s: if recip > 0.0 {
            nonzero as f64 / recip
        } else {
            0.0
        },
        median_s: ns(bursts.quantile(0.5)),
        p90_s: ns(bursts.quantile(0.9)),
        p99_s: ns(bursts.quantile(0.99)),
        histogram: bursts.buckets(),
    }
}

/// Counts one message of `bytes` in `counts`, by size class.
fn count_size(counts: &mut Vec<u64>, bytes: u64) {
    let c = size_class(bytes) as usize;
    if counts.len() <= c {
        counts.resize(c + 1, 0);
    }
    counts[c] += 1;
}

/// Adds counts by class.
fn add_counts(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (x, n) in into.iter_mut().zip(from) {
        *x += n;
    }
}

/// The size bins from the smallest to the largest class holding a message (empty ones
/// between them included), from counts by class (point-to-point, collective).
fn size_bins(sizes: &[Vec<u64>; 2]) -> Vec<SizeBin> {
    let at = |k: usize, c: usize| sizes[k].get(c).copied().unwrap_or(0);
    let n = sizes[0].len().max(sizes[1].len());
    let used: Vec<usize> = (0..n).filter(|&c| at(0, c) + at(1, c) > 0).collect();
    let (Some(&lo), Some(&hi)) = (used.first(), used.last()) else {
        return Vec::new();
    };
    (lo..=hi)
        .map(|c| SizeBin {
            from_bytes: if c == 0 { 0 } else { 1u64 << (c - 1).min(63) },
            label: size_class_label(c as u32),
            p2p: at(0, c),
            collective: at(1, c),
        })
        .collect()
}

/// The row of one function.
fn call_row(a: Acc) -> CallStats {
    CallStats {
        count: a.count,
        recorded: a.recorded,
        fortran: a.fortran,
        time_s: a.time_ns as f64 * 1e-9,
        mean_s: if a.recorded > 0 {
            a.time_ns as f64 * 1e-9 / a.recorded as f64
        } else {
            0.0
        },
        max_s: a.max_ns as f64 * 1e-9,
        bytes: a.vol.total(),
        bytes_sent: a.vol.sent,
        bytes_received: a.vol.received,
        median_s: ns(a.durations.quantile(0.5)),
        p90_s: ns(a.durations.quantile(0.9)),
        p99_s: ns(a.durations.quantile(0.99)),
        sizes: a
            .sizes
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(c, &n)| (size_class_label(c as u32), n))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpiscope_trace::{CallDef, Lang};

    /// Calls by id 1.. in `names` order.
    fn tables(names: &[&str]) -> Tables {
        let mut t = Tables::default();
        for (i, n) in names.iter().enumerate() {
            let id = i as u32 + 1;
            t.calls.insert(
                id,
                CallDef {
                    id,
                    name: n.to_string(),
                    lang: Lang::C,
                },
            );
        }
        t
    }

    /// An event of call `call` from `enter` to `exit` (us) on `thread`, with `args`.
    fn ev(call: u32, enter: u64, exit: u64, thread: u16, args: &[(Slot, i64)]) -> Event {
        let mut e = crate::testutil::event(args, &[]);
        e.call = call;
        e.thread = thread;
        e.t_enter = enter * 1000;
        e.t_exit = exit * 1000;
        e
    }

    /// The halo example's shape: 300 ms in MPI_Init, 10 ms of application with 4 ms in
    /// MPI, 50 ms in MPI_Finalize. MPI% is 40% of the application time, not 98% of the
    /// wall time.
    #[test]
    fn mpi_time_is_between_init_and_finalize() {
        let t = tables(&["MPI_Init", "MPI_Send", "MPI_Finalize", "MPI_Initialized"]);
        let mut p = RankPass::new(0, None);
        // Before MPI_Init (outside the application time), MPI_Init, then 2 x (2 ms compute,
        // 2 ms MPI_Send), 2 ms compute, MPI_Finalize, a call after it.
        let events = [
            ev(4, 0, 1_000, 0, &[]),
            ev(1, 2_000, 302_000, 0, &[]),
            ev(2, 304_000, 306_000, 0, &[(Slot::Peer, 1), (Slot::Bytes, 8)]),
            ev(2, 308_000, 310_000, 0, &[(Slot::Peer, 1), (Slot::Bytes, 8)]),
            ev(3, 312_000, 362_000, 0, &[]),
            ev(4, 363_000, 364_000, 0, &[]),
        ];
        for e in &events {
            p.event(e, &t);
        }
        let s = p.times();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(s.wall_s, 0.364), "{s:?}");
        assert!(close(s.app_s, 0.010), "{s:?}");
        assert!(close(s.mpi_s, 0.004), "{s:?}");
        assert!(close(s.compute_s, 0.006), "{s:?}");
        assert!(close(s.mpi_pct, 40.0), "{s:?}");
        assert!(close(s.init_s, 0.300), "{s:?}");
        assert!(close(s.finalize_s, 0.050), "{s:?}");
        // The bursts are the three computations inside the application time.
        assert_eq!(s.bursts, 3);
        assert!(close(s.granularity, 1.5), "{s:?}");
        let totals = Totals::of(&[s.clone(), s]);
        assert!(close(totals.app_s, 0.020) && close(totals.mpi_pct, 40.0));
        assert!(close(totals.init_s, 0.600) && close(totals.finalize_s, 0.100));
    }

    /// A record (or a report window) without MPI_Init or MPI_Finalize: the application time
    /// is from the first entry to the last exit, and calls on other threads do not count.
    #[test]
    fn without_init_or_finalize_the_record_bounds_the_time() {
        let t = tables(&["MPI_Send", "MPI_Recv"]);
        let mut p = RankPass::new(3, None);
        for e in [
            ev(1, 100, 103, 0, &[(Slot::Peer, 1), (Slot::Bytes, 8)]),
            ev(2, 101, 140, 1, &[(Slot::Peer, 1), (Slot::Bytes, 8)]),
            ev(
                1,
                110,
                111,
                0,
                &[(Slot::Peer, mpiscope_trace::PEER_NULL), (Slot::Bytes, 8)],
            ),
        ] {
            p.event(&e, &t);
        }
        let s = p.times();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(s.app_s, 40e-6) && close(s.wall_s, 40e-6), "{s:?}");
        assert!(close(s.mpi_s, 4e-6) && close(s.compute_s, 7e-6), "{s:?}");
        assert_eq!((s.init_s, s.finalize_s, s.threads), (0.0, 0.0, 2));
        // One message to a real process, none to the null one.
        assert_eq!(p.sizes[0].iter().sum::<u64>(), 1);
        assert_eq!(size_bins(&p.sizes)[0].label, "8B");
    }

    #[test]
    fn size_bins_span_the_classes_used() {
        let mut sizes: [Vec<u64>; 2] = Default::default();
        for b in [0, 8, 15, 1024] {
            count_size(&mut sizes[0], b);
        }
        count_size(&mut sizes[1], 64);
        let bins = size_bins(&sizes);
        let labels: Vec<&str> = bins.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            ["0B", "1B", "2B", "4B", "8B", "16B", "32B", "64B", "128B", "256B", "512B", "1KiB"]
        );
        assert_eq!(
            (bins[4].from_bytes, bins[4].p2p, bins[4].collective),
            (8, 2, 0)
        );
        assert_eq!((bins[7].p2p, bins[7].collective), (0, 1));
        assert_eq!((bins[11].from_bytes, bins[11].p2p), (1024, 1));
        assert!(size_bins(&Default::default()).is_empty());
    }
}
