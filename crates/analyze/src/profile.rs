//! Per-function and per-rank statistics of a run (the `mpiscope report` numbers).
//!
//! Every rank file is streamed once; ranks are read in parallel. Counts come from each
//! rank's trailer when it has one (exact, including calls not recorded because of sampling
//! or filters), else from the events and their `skipped` counters. Times are those of the
//! recorded calls. Calls made through the Fortran bindings are counted under their C name.

use std::collections::{BTreeMap, HashMap};

use mpiscope_mpispec::Family;
use mpiscope_trace::{CommKind, Event, RankReader, RunDir, Slot, Tables};
use serde::Serialize;

use crate::histogram::LogHistogram;
pub use crate::stats::{Bursts, CallStats, CallsiteStats, PairTraffic, RankStats};
use crate::volume::{self, Volume};
pub use crate::window::Window;
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
    /// Problems met (cut files, missing ranks).
    pub warnings: Vec<String>,
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
        if self.sizes.len() < a.sizes.len() {
            self.sizes.resize(a.sizes.len(), 0);
        }
        for (x, n) in self.sizes.iter_mut().zip(&a.sizes) {
            *x += n;
        }
    }
}

/// A callsite's frames: (module path, offset), innermost first.
type Frames = Vec<(String, u64)>;

#[derive(Default)]
struct SiteAcc {
    function: String,
    count: u64,
    time_ns: u64,
    max_ns: u64,
    bytes: u64,
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
    /// Per callsite, by its frames (module path, offset), innermost first.
    sites: Vec<(Frames, SiteAcc)>,
    /// Point-to-point sends: receiver's world rank -> (messages, bytes).
    sent_to: BTreeMap<u32, (u64, u64)>,
}

/// Reads one rank.
pub fn profile_rank<R: std::io::Read>(
    mut reader: RankReader<R>,
    rank: u32,
    window: &Window,
) -> RankProfile {
    let mut pass = RankPass::new(rank, reader.info().map(|i| i.host.clone()));
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
    /// The first thread's time in MPI, its last exit, and its time between calls.
    mpi0: u64,
    prev_exit0: Option<u64>,
    compute0: u64,
    bursts: LogHistogram,
    burst_recip: f64,
    sites: ById<SiteAcc>,
    sent_to: ById<(u64, u64)>,
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
            bursts: LogHistogram::default(),
            burst_recip: 0.0,
            sites: ById::default(),
            sent_to: ById::default(),
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
        if ev.thread == 0 {
            self.mpi0 += d;
            if let Some(p) = self.prev_exit0 {
                let gap = ev.t_enter.saturating_sub(p);
                self.compute0 += gap;
                self.bursts.add(gap);
                if gap > 0 {
                    self.burst_recip += 1e9 / gap as f64;
                }
            }
            self.prev_exit0 = Some(ev.t_exit);
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
            let c = size_class(b.max(0) as u64) as usize;
            if acc.sizes.len() <= c {
                acc.sizes.resize(c + 1, 0);
            }
            acc.sizes[c] += 1;
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
            }
        }
    }

    /// The rank's statistics once its events are read: times, bursts, and how its record
    /// ends; counts from its trailer when it has one and the window is the whole run.
    fn finish<R: std::io::Read>(self, reader: &RankReader<R>, window: &Window) -> RankProfile {
        let rank = self.rank;
        let mut stats = self.stats;
        let bursts = self.bursts;
        let mut by_id: HashMap<u32, Acc> =
            self.calls.into_iter().map(|(id, c)| (id, c.acc)).collect();
        let sites: HashMap<u32, SiteAcc> = self.sites.into_iter().collect();
        let sent_to: BTreeMap<u32, (u64, u64)> = self.sent_to.into_iter().collect();
        stats.threads = self.threads.len() as u32;
        if self.first != u64::MAX {
            stats.wall_s = (self.last - self.first) as f64 * 1e-9;
            stats.first_ns = self.first;
            stats.last_ns = self.last;
        }
        stats.mpi_s = self.mpi0 as f64 * 1e-9;
        stats.compute_s = self.compute0 as f64 * 1e-9;
        stats.bursts = bursts.len();
        if stats.bursts > 0 {
            stats.burst_mean_s = stats.compute_s / stats.bursts as f64;
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
            sites: by_frames(tables, sites),
            sent_to,
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

/// What the statistics need of one call id, worked out at its first event, and its totals.
struct CallInfo {
    name: String,
    rule: volume::Rule,
    start: Start,
    /// Sends one point-to-point message when called.
    send: bool,
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
        CallInfo {
            rule: volume::Rule::of(&class),
            start,
            send: is_send(&name),
            name,
            acc: Acc::default(),
        }
    }
}

/// Values by a small integer id from the trace (call, callsite, communicator, rank): a
/// vector for ids below 2^16, a hash map above, so a corrupt id cannot allocate gigabytes.
struct ById<T> {
    dense: Vec<Option<T>>,
    sparse: HashMap<u32, T>,
}

impl<T> Default for ById<T> {
    fn default() -> Self {
        ById {
            dense: Vec::new(),
            sparse: HashMap::new(),
        }
    }
}

impl<T> ById<T> {
    const DENSE: u32 = 1 << 16;

    #[inline]
    fn get(&self, id: u32) -> Option<&T> {
        if id < Self::DENSE {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }

    #[inline]
    fn get_or_insert_with(&mut self, id: u32, make: impl FnOnce() -> T) -> &mut T {
        if id >= Self::DENSE {
            return self.sparse.entry(id).or_insert_with(make);
        }
        let i = id as usize;
        if self.dense.len() <= i {
            self.dense.resize_with(i + 1, || None);
        }
        self.dense[i].get_or_insert_with(make)
    }

    fn into_iter(self) -> impl Iterator<Item = (u32, T)> {
        self.dense
            .into_iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i as u32, v)))
            .chain(self.sparse)
    }
}

/// Computes the statistics of a run, reading ranks on all cores.
pub fn profile(run: &RunDir) -> Result<Profile, AnalyzeError> {
    profile_window(run, &Window::ALL)
}

/// Computes the statistics of the calls that entered within `window`. Counts then come from the
/// events (the trailers' exact counts cover the whole run).
pub fn profile_window(run: &RunDir, window: &Window) -> Result<Profile, AnalyzeError> {
    let results = crate::parallel::per_rank(run, |rd, rank| Ok(profile_rank(rd, rank, window)));
    let mut p = Profile {
        ranks: run.ranks(),
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
    p.p2p.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then((a.from, a.to).cmp(&(b.from, b.to)))
    });
    p.bursts = bursts_of(&m.bursts, m.burst_sum, m.burst_recip);
    p.callsites = callsite_rows(m.sites);
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
    /// Per callsite: (number, ranks, totals).
    sites: HashMap<Frames, (u32, u32, SiteAcc)>,
}

impl Merged {
    /// Adds one rank's profile; its per-rank row, pairs and warning go to `p`.
    fn add(&mut self, p: &mut Profile, rank: u32, rp: RankProfile) {
        p.events += rp.stats.events;
        for (name, a) in rp.calls {
            self.acc.entry(name).or_default().merge(&a);
        }
        self.bursts.merge(&rp.bursts);
        self.burst_sum += rp.stats.compute_s;
        self.burst_recip += rp.burst_recip;
        for (frames, a) in rp.sites {
            let next = self.sites.len() as u32;
            let e = self.sites.entry(frames).or_insert_with(|| {
                (
                    next,
                    0,
                    SiteAcc {
                        function: a.function.clone(),
                        ..SiteAcc::default()
                    },
                )
            });
            e.1 += 1;
            e.2.count += a.count;
            e.2.time_ns += a.time_ns;
            e.2.max_ns = e.2.max_ns.max(a.max_ns);
            e.2.bytes += a.bytes;
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

/// The callsites, busiest first; the fifty busiest located in the binaries' debug
/// information.
fn callsite_rows(sites: HashMap<Frames, (u32, u32, SiteAcc)>) -> Vec<CallsiteStats> {
    let mut symbolizer = crate::symbols::Symbolizer::new();
    let mut sites: Vec<(Frames, (u32, u32, SiteAcc))> = sites.into_iter().collect();
    sites.sort_by(|a, b| {
        b.1 .2
            .time_ns
            .cmp(&a.1 .2.time_ns)
            .then(a.1 .0.cmp(&b.1 .0))
    });
    let mut rows = Vec::with_capacity(sites.len());
    for (i, (frames, (number, ranks, a))) in sites.into_iter().enumerate() {
        // Debug information is read for the busiest callsites only.
        let location = frames
            .first()
            .filter(|(path, _)| !path.is_empty() && i < 50)
            .map(|(path, offset)| match symbolizer.resolve(path, *offset) {
                Some(l) => l.to_string(),
                None => format!("{path}+{offset:#x}"),
            });
        rows.push(CallsiteStats {
            callsite: number,
            function: a.function,
            location,
            ranks,
            count: a.count,
            time_s: ns(a.time_ns),
            mean_s: if a.count > 0 {
                ns(a.time_ns) / a.count as f64
            } else {
                0.0
            },
            max_s: ns(a.max_ns),
            bytes: a.bytes,
        });
    }
    rows
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
