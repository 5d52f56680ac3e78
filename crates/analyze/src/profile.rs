//! Per-function and per-rank statistics of a run (the `mpiscope report` numbers).
//!
//! Every rank file is streamed once; ranks are read in parallel. Counts come from each
//! rank's trailer when it has one (exact, including calls not recorded because of sampling
//! or filters), else from the events and their `skipped` counters. Times are those of the
//! recorded calls. Calls made through the Fortran bindings are counted under their C name.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mpiscope_trace::{CommKind, Event, RankReader, RunDir, Slot};
use serde::Serialize;

use crate::volume::{self, Volume};
use crate::AnalyzeError;

/// Statistics of one MPI function over the run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CallStats {
    /// Calls made.
    pub count: u64,
    /// Calls recorded as events (fewer than `count` under sampling).
    pub recorded: u64,
    /// Calls made through a Fortran binding.
    pub fortran: u64,
    /// Total time in recorded calls, seconds.
    pub time_s: f64,
    /// Mean time per recorded call, seconds.
    pub mean_s: f64,
    /// Longest recorded call, seconds.
    pub max_s: f64,
    /// Payload bytes sent plus received (see [`crate::volume`]).
    pub bytes: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
}

/// Statistics of one rank.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RankStats {
    /// World rank.
    pub rank: u32,
    /// Host it ran on.
    pub host: String,
    /// Events read.
    pub events: u64,
    /// From the first call's entry to the last call's exit, seconds.
    pub wall_s: f64,
    /// Time inside recorded MPI calls of the first thread, seconds.
    pub mpi_s: f64,
    /// Time between MPI calls of the first thread, seconds.
    pub compute_s: f64,
    /// Threads that made MPI calls.
    pub threads: u32,
    /// Did the rank end tracing normally (trailer present)?
    pub complete: bool,
    /// How tracing ended, or where the file stops.
    pub end: String,
}

/// The whole report.
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
}

/// Statistics of one rank file.
pub struct RankProfile {
    calls: HashMap<String, Acc>,
    stats: RankStats,
    warning: Option<String>,
}

/// Reads one rank.
pub fn profile_rank<R: std::io::Read>(
    mut reader: RankReader<R>,
    rank: u32,
    window: &Window,
) -> RankProfile {
    let mut by_id: HashMap<u32, Acc> = HashMap::new();
    let mut persistent: HashMap<i64, Volume> = HashMap::new();
    let mut stats = RankStats {
        rank,
        ..RankStats::default()
    };
    if let Some(i) = reader.info() {
        stats.host = i.host.clone();
    }
    let (mut first, mut last) = (u64::MAX, 0u64);
    let (mut mpi0, mut prev_exit0, mut compute0) = (0u64, None::<u64>, 0u64);
    let mut threads: Vec<u16> = Vec::new();
    let mut names: HashMap<u32, String> = HashMap::new();
    while let Some(ev) = reader.next_event() {
        if !window.contains(ev.t_enter) {
            continue;
        }
        stats.events += 1;
        first = first.min(ev.t_enter);
        last = last.max(ev.t_exit);
        if !threads.contains(&ev.thread) {
            threads.push(ev.thread);
        }
        let d = ev.duration();
        if ev.thread == 0 {
            mpi0 += d;
            if let Some(p) = prev_exit0 {
                compute0 += ev.t_enter.saturating_sub(p);
            }
            prev_exit0 = Some(ev.t_exit);
        }
        let name = names
            .entry(ev.call)
            .or_insert_with(|| reader.tables().call_name(ev.call).into_owned())
            .clone();
        let acc = by_id.entry(ev.call).or_default();
        acc.count += 1 + ev.skipped;
        acc.recorded += 1;
        acc.time_ns += d;
        acc.max_ns = acc.max_ns.max(d);
        let peers = peers_of(&reader, &ev);
        let v = event_volume(&name, &ev, rank, peers, &mut persistent);
        acc.vol.sent += v.sent;
        acc.vol.received += v.received;
    }
    stats.threads = threads.len() as u32;
    if first != u64::MAX {
        stats.wall_s = (last - first) as f64 * 1e-9;
    }
    stats.mpi_s = mpi0 as f64 * 1e-9;
    stats.compute_s = compute0 as f64 * 1e-9;
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
    let mut calls: HashMap<String, Acc> = HashMap::new();
    for (id, a) in by_id {
        let (name, fortran) = match (tables.calls.get(&id), trailer_names.get(&id)) {
            (Some(c), _) => (c.name.clone(), c.lang == mpiscope_trace::Lang::Fortran),
            (None, Some((n, f))) => (n.clone(), *f),
            (None, None) => (format!("?{id}"), false),
        };
        let e = calls.entry(name).or_default();
        e.count += a.count;
        e.recorded += a.recorded;
        if fortran {
            e.fortran += a.count;
        }
        e.time_ns += a.time_ns;
        e.max_ns = e.max_ns.max(a.max_ns);
        e.vol.sent += a.vol.sent;
        e.vol.received += a.vol.received;
    }
    RankProfile {
        calls,
        stats,
        warning,
    }
}

fn peers_of<R: std::io::Read>(reader: &RankReader<R>, ev: &Event) -> u32 {
    let Some(id) = ev.args.get(Slot::Comm) else {
        return 1;
    };
    match reader.tables().comms.get(&(id as u32)) {
        Some(c) if c.kind == CommKind::Inter => c.remote.len() as u32,
        Some(c) => c.size,
        None => 1,
    }
}

fn event_volume(
    name: &str,
    ev: &Event,
    rank: u32,
    peers: u32,
    persistent: &mut HashMap<i64, Volume>,
) -> Volume {
    if mpiscope_mpispec::is_persistent(name) {
        if let Some(req) = ev.args.get(Slot::Request) {
            persistent.insert(req, volume::persistent_volume(name, ev, rank, peers));
        }
        return Volume::default();
    }
    match name {
        "MPI_Start" => ev
            .args
            .get(Slot::Request)
            .and_then(|r| persistent.get(&r).copied())
            .unwrap_or_default(),
        "MPI_Startall" => ev
            .list(mpiscope_trace::ListKind::Requests)
            .unwrap_or(&[])
            .iter()
            .filter_map(|r| persistent.get(r))
            .fold(Volume::default(), |a, v| Volume {
                sent: a.sent + v.sent,
                received: a.received + v.received,
            }),
        _ => volume::volume(name, ev, rank, peers),
    }
}

/// A time window: events entering in `[start, end)` ns since the run's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First ns included.
    pub start: u64,
    /// First ns excluded.
    pub end: u64,
}

impl Window {
    /// The whole run.
    pub const ALL: Window = Window {
        start: 0,
        end: u64::MAX,
    };

    /// Parses `FROM:TO` in seconds since the run's epoch; either side may be empty.
    pub fn parse(text: &str) -> Result<Window, String> {
        let (a, b) = text
            .split_once(':')
            .ok_or_else(|| format!("window `{text}`: expected FROM:TO in seconds"))?;
        let secs = |s: &str, default: u64| -> Result<u64, String> {
            if s.trim().is_empty() {
                return Ok(default);
            }
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("window `{text}`: `{s}` is not a number of seconds"))?;
            if !(0.0..1e9).contains(&v) {
                return Err(format!("window `{text}`: `{s}` is out of range"));
            }
            Ok((v * 1e9) as u64)
        };
        let w = Window {
            start: secs(a, 0)?,
            end: secs(b, u64::MAX)?,
        };
        if w.end <= w.start {
            return Err(format!("window `{text}`: it ends before it starts"));
        }
        Ok(w)
    }

    /// Does the window hold time `t`?
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start && t < self.end
    }

    /// Is it the whole run?
    pub fn is_all(&self) -> bool {
        *self == Window::ALL
    }
}

/// Builds the report of a run, reading ranks on all cores.
pub fn profile(run: &RunDir) -> Result<Profile, AnalyzeError> {
    profile_window(run, &Window::ALL)
}

/// Builds the report of the calls that entered within `window`. Counts then come from the
/// events (the trailers' exact counts cover the whole run).
pub fn profile_window(run: &RunDir, window: &Window) -> Result<Profile, AnalyzeError> {
    let files = run.rank_files.clone();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(u32, Result<RankProfile, AnalyzeError>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(files.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((rank, path)) = files.get(i) else {
                    break;
                };
                let r = RankReader::open(path)
                    .map(|rd| profile_rank(rd, *rank, window))
                    .map_err(AnalyzeError::from);
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((*rank, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.sort_by_key(|(r, _)| *r);
    let mut p = Profile {
        ranks: run.ranks(),
        ..Profile::default()
    };
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    for (rank, r) in results {
        let rp = match r {
            Ok(rp) => rp,
            Err(e) => {
                p.warnings.push(format!("rank {rank}: {e}"));
                continue;
            }
        };
        p.events += rp.stats.events;
        for (name, a) in rp.calls {
            let e = acc.entry(name).or_default();
            e.count += a.count;
            e.recorded += a.recorded;
            e.fortran += a.fortran;
            e.time_ns += a.time_ns;
            e.max_ns = e.max_ns.max(a.max_ns);
            e.vol.sent += a.vol.sent;
            e.vol.received += a.vol.received;
        }
        if let Some(w) = rp.warning {
            p.warnings.push(w);
        }
        p.per_rank.push(rp.stats);
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
    for (name, a) in acc {
        p.calls.insert(
            name,
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
            },
        );
    }
    Ok(p)
}

fn human_bytes(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", U[i])
    }
}

impl Profile {
    /// The report as a terminal table.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let total_calls: u64 = self.calls.values().map(|c| c.count).sum();
        let _ = writeln!(
            s,
            "{} ranks, {} calls ({} recorded events)\n",
            self.ranks, total_calls, self.events
        );
        let _ = writeln!(
            s,
            "{:<28} {:>12} {:>12} {:>11} {:>11} {:>11} {:>12}",
            "Function", "Calls", "Recorded", "Time (s)", "Mean (us)", "Max (us)", "Bytes"
        );
        let mut rows: Vec<(&String, &CallStats)> = self.calls.iter().collect();
        rows.sort_by(|a, b| {
            b.1.time_s
                .total_cmp(&a.1.time_s)
                .then(b.1.count.cmp(&a.1.count))
        });
        for (name, c) in rows {
            let _ = writeln!(
                s,
                "{:<28} {:>12} {:>12} {:>11.6} {:>11.3} {:>11.3} {:>12}",
                name,
                c.count,
                c.recorded,
                c.time_s,
                c.mean_s * 1e6,
                c.max_s * 1e6,
                human_bytes(c.bytes)
            );
        }
        let _ = writeln!(
            s,
            "\n{:>6} {:<16} {:>10} {:>10} {:>11} {:>6}  End",
            "Rank", "Host", "Wall (s)", "MPI (s)", "Compute (s)", "MPI%"
        );
        for r in &self.per_rank {
            let pct = if r.wall_s > 0.0 {
                100.0 * r.mpi_s / r.wall_s
            } else {
                0.0
            };
            let _ = writeln!(
                s,
                "{:>6} {:<16} {:>10.6} {:>10.6} {:>11.6} {:>5.1}%  {}",
                r.rank, r.host, r.wall_s, r.mpi_s, r.compute_s, pct, r.end
            );
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
}
