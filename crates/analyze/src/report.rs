//! The whole report of a run (`mpiscope report`): the statistics ([`crate::profile`]), the
//! communication matrices ([`crate::matrix`]), and, for the whole run, the endings of the
//! records ([`crate::ending`]) and the load balance ([`crate::balance`]).
//!
//! [`report`] runs the passes in that order: the matrices and the balance reuse the
//! point-to-point pairs and the per-rank times the statistics found. The endings and the
//! balance describe the whole run, so they are left out when a time window or a phase
//! (`phase`: each rank's main loop) is asked for.
//!
//! The JSON form keeps the order of its keys: the statistics, then `balance`, `matrix` and
//! `endings` (each when computed), then the phase (`phase`, `phase_ranges` when it is not
//! the whole run, `burst_min_gap_s` when bursts were left out), then `warnings`.

use std::fmt::Write;

use mpiscope_trace::RunDir;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::balance::Balance;
use crate::ending::Endings;
use crate::matrix::Matrix;
use crate::profile::{Profile, ProfileOptions};
use crate::stats::CallStats;
use crate::window::Resolved;
use crate::window::Window;
use crate::AnalyzeError;

/// What a report covers.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// The calls counted: those entering within this window.
    pub window: Window,
    /// With `Some(k)`, the balance suggests a placement of ranks on nodes of `k` ranks.
    pub ranks_per_node: Option<u32>,
    /// The phase counted, within the window (`phase::resolve`).
    pub phase: Resolved,
    /// Bursts shorter than this (ns) are left out of the burst statistics.
    pub min_gap_ns: u64,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            window: Window::ALL,
            ranks_per_node: None,
            phase: Resolved::default(),
            min_gap_ns: 0,
        }
    }
}

/// The report of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Per-function, per-rank, per-callsite and per-pair statistics, and the problems met.
    pub profile: Profile,
    /// Load balance and wait states, for whole runs.
    pub balance: Option<Balance>,
    /// Rank x rank communication matrices, when computed.
    pub matrix: Option<Matrix>,
    /// How each rank's record ends and where ranks were waiting, for whole runs.
    pub endings: Option<Endings>,
}

/// Builds the report of `run`.
pub fn report(run: &RunDir, options: &ReportOptions) -> Result<Report, AnalyzeError> {
    let windows = options.phase.windows(options.window);
    let profile = crate::profile::profile_with(
        run,
        &ProfileOptions {
            windows: windows.clone(),
            phase: options.phase.clone(),
            min_gap_ns: options.min_gap_ns,
        },
    )?;
    let matrix = crate::matrix::matrix_in(run, &profile.p2p, &windows)?;
    let (endings, balance) = if windows.is_all() {
        let endings = crate::ending::endings(run)?;
        let balance =
            crate::balance::balance(run, &profile.per_rank, &profile.p2p, options.ranks_per_node)?;
        (Some(endings), Some(balance))
    } else {
        (None, None)
    };
    Ok(Report {
        profile,
        balance,
        matrix,
        endings,
    })
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let p = &self.profile;
        let optional = [
            self.balance.is_some(),
            self.matrix.is_some(),
            self.endings.is_some(),
        ];
        let len = 12
            + optional.iter().filter(|&&b| b).count()
            + usize::from(!p.phase_ranges.is_empty())
            + usize::from(p.burst_min_gap_s > 0.0);
        let mut s = serializer.serialize_struct("Report", len)?;
        s.serialize_field("ranks", &p.ranks)?;
        s.serialize_field("events", &p.events)?;
        s.serialize_field("calls", &p.calls)?;
        s.serialize_field("per_rank", &p.per_rank)?;
        s.serialize_field("bursts", &p.bursts)?;
        s.serialize_field("callsites", &p.callsites)?;
        s.serialize_field("p2p", &p.p2p)?;
        s.serialize_field("totals", &p.totals)?;
        s.serialize_field("message_sizes", &p.message_sizes)?;
        s.serialize_field("percentile_rel_error", &p.percentile_rel_error)?;
        match &self.balance {
            Some(b) => s.serialize_field("balance", b)?,
            None => s.skip_field("balance")?,
        }
        match &self.matrix {
            Some(m) => s.serialize_field("matrix", m)?,
            None => s.skip_field("matrix")?,
        }
        match &self.endings {
            Some(e) => s.serialize_field("endings", e)?,
            None => s.skip_field("endings")?,
        }
        s.serialize_field("phase", &p.phase)?;
        if p.phase_ranges.is_empty() {
            s.skip_field("phase_ranges")?;
        } else {
            s.serialize_field("phase_ranges", &p.phase_ranges)?;
        }
        if p.burst_min_gap_s > 0.0 {
            s.serialize_field("burst_min_gap_s", &p.burst_min_gap_s)?;
        } else {
            s.skip_field("burst_min_gap_s")?;
        }
        s.serialize_field("warnings", &p.warnings)?;
        s.end()
    }
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

impl Report {
    /// The report as terminal tables.
    pub fn to_text(&self) -> String {
        let p = &self.profile;
        let mut s = Resolved {
            phase: p.phase,
            ranges: p.phase_ranges.clone(),
        }
        .to_text();
        functions(&mut s, p);
        bursts_and_callsites(&mut s, p);
        callsite_spread(&mut s, p);
        message_sizes(&mut s, p);
        pairs(&mut s, p);
        if let Some(m) = &self.matrix {
            s += &m.to_text();
        }
        ranks(&mut s, p);
        if let Some(b) = &self.balance {
            s += &b.to_text();
        }
        if let Some(e) = &self.endings {
            s.push_str(&e.to_text());
        }
        for w in &p.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
}

/// The totals and the table of functions, most time first.
fn functions(s: &mut String, p: &Profile) {
    let total_calls: u64 = p.calls.values().map(|c| c.count).sum();
    let _ = writeln!(
        s,
        "{} ranks, {} calls ({} recorded events)\n",
        p.ranks, total_calls, p.events
    );
    let _ = writeln!(
        s,
        "{:<28} {:>12} {:>12} {:>11} {:>11} {:>11} {:>11} {:>11} {:>12}",
        "Function",
        "Calls",
        "Recorded",
        "Time (s)",
        "Mean (us)",
        "Median (us)",
        "p99 (us)",
        "Max (us)",
        "Bytes"
    );
    let mut rows: Vec<(&String, &CallStats)> = p.calls.iter().collect();
    rows.sort_by(|a, b| {
        b.1.time_s
            .total_cmp(&a.1.time_s)
            .then(b.1.count.cmp(&a.1.count))
    });
    for (name, c) in rows {
        let _ = writeln!(
            s,
            "{:<28} {:>12} {:>12} {:>11.6} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>12}",
            name,
            c.count,
            c.recorded,
            c.time_s,
            c.mean_s * 1e6,
            c.median_s * 1e6,
            c.p99_s * 1e6,
            c.max_s * 1e6,
            human_bytes(c.bytes)
        );
    }
    let _ = writeln!(
        s,
        "(median and p99 from log histograms: within {:.2}% of the exact value, never outside \
         [min, max])",
        100.0 * p.percentile_rel_error
    );
    let t = &p.totals;
    if t.app_s > 0.0 || t.init_s > 0.0 {
        let _ = writeln!(
            s,
            "\nApplication time (end of MPI_Init to start of MPI_Finalize), all ranks: {:.6} s, \
             MPI {:.6} s ({:.1}%), compute {:.6} s; apart: MPI_Init {:.6} s, MPI_Finalize {:.6} s",
            t.app_s, t.mpi_s, t.mpi_pct, t.compute_s, t.init_s, t.finalize_s
        );
    }
}

/// The compute bursts, and the ten busiest callsites.
fn bursts_and_callsites(s: &mut String, p: &Profile) {
    let b = &p.bursts;
    if b.count > 0 {
        let _ = writeln!(
            s,
            "\nCompute bursts: {} between MPI calls; mean {:.3} us, harmonic mean {:.3} us, \
             median {:.3} us, p90 {:.3} us, p99 {:.3} us{}",
            b.count,
            b.mean_s * 1e6,
            b.harmonic_mean_s * 1e6,
            b.median_s * 1e6,
            b.p90_s * 1e6,
            b.p99_s * 1e6,
            if p.burst_min_gap_s > 0.0 {
                format!(" (bursts under {:.3} us left out)", p.burst_min_gap_s * 1e6)
            } else {
                String::new()
            }
        );
    }
    if p.callsites.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n{:>4} {:<22} {:>6} {:>11} {:>11} {:>11}  Location",
        "Site", "Function", "Ranks", "Calls", "Time (s)", "Mean (us)"
    );
    for c in p.callsites.iter().take(10) {
        let _ = writeln!(
            s,
            "{:>4} {:<22} {:>6} {:>11} {:>11.6} {:>11.3}  {}",
            c.callsite,
            c.function,
            c.ranks,
            c.count,
            c.time_s,
            c.mean_s * 1e6,
            c.location.as_deref().unwrap_or("?")
        );
    }
    if p.callsites.len() > 10 {
        let _ = writeln!(
            s,
            "     ({} more callsites in --json)",
            p.callsites.len() - 10
        );
    }
}

/// The ten busiest point-to-point pairs.
fn pairs(s: &mut String, p: &Profile) {
    if p.p2p.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nPoint-to-point, busiest pairs (sender -> receiver):");
    for t in p.p2p.iter().take(10) {
        let _ = writeln!(
            s,
            "  {:>6} -> {:<6} {:>10} messages {:>12}",
            t.from,
            t.to,
            t.messages,
            human_bytes(t.bytes)
        );
    }
    if p.p2p.len() > 10 {
        let _ = writeln!(s, "  ({} more pairs in --json)", p.p2p.len() - 10);
    }
}

/// The table of ranks: wall time, the application time (end of MPI_Init to start of
/// MPI_Finalize) and the MPI and compute time within it, MPI_Init and MPI_Finalize apart,
/// granularity, and how each record ends; then the sums over ranks.
fn ranks(s: &mut String, p: &Profile) {
    let _ = writeln!(
        s,
        "\n{:>6} {:<16} {:>10} {:>10} {:>10} {:>11} {:>6} {:>10} {:>10} {:>11} {:>12}  End",
        "Rank",
        "Host",
        "Wall (s)",
        "App (s)",
        "MPI (s)",
        "Compute (s)",
        "MPI%",
        "Init (s)",
        "Final (s)",
        "Granularity",
        "Burst hm (us)"
    );
    for r in &p.per_rank {
        let _ = writeln!(
            s,
            "{:>6} {:<16} {:>10.6} {:>10.6} {:>10.6} {:>11.6} {:>5.1}% {:>10.6} {:>10.6} {:>11.3} {:>12.3}  {}",
            r.rank,
            r.host,
            r.wall_s,
            r.app_s,
            r.mpi_s,
            r.compute_s,
            r.mpi_pct,
            r.init_s,
            r.finalize_s,
            r.granularity,
            r.burst_harmonic_mean_s * 1e6,
            r.end
        );
    }
    let t = &p.totals;
    if p.per_rank.len() > 1 {
        let _ = writeln!(
            s,
            "{:>6} {:<16} {:>10} {:>10.6} {:>10.6} {:>11.6} {:>5.1}% {:>10.6} {:>10.6}",
            "*",
            "(all ranks)",
            "",
            t.app_s,
            t.mpi_s,
            t.compute_s,
            t.mpi_pct,
            t.init_s,
            t.finalize_s
        );
    }
    let _ = writeln!(
        s,
        "  App: from the end of MPI_Init to the start of MPI_Finalize; MPI and compute time \
         and MPI% are within it (MPI_Init and MPI_Finalize are apart)."
    );
}

/// Callsites across ranks: the busiest ten by time, with the time per rank (over the ranks
/// that called there) and its coefficient of variation.
fn callsite_spread(s: &mut String, p: &Profile) {
    if p.callsites.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nCallsites across ranks, time per rank (over the ranks that called there):\n\
         {:>4} {:<22} {:>11} {:>12} {:>12} {:>12} {:>6}  Location",
        "Site", "Function", "Calls", "Min (ms)", "Mean (ms)", "Max (ms)", "COV"
    );
    for c in p.callsites.iter().take(10) {
        let _ = writeln!(
            s,
            "{:>4} {:<22} {:>11} {:>12.3} {:>12.3} {:>12.3} {:>6.3}  {}",
            c.callsite,
            c.function,
            c.count,
            c.rank_min_s * 1e3,
            c.rank_mean_s * 1e3,
            c.rank_max_s * 1e3,
            c.rank_cov,
            c.location.as_deref().unwrap_or("?")
        );
    }
}

/// Messages by size class: point-to-point sends and collective calls.
fn message_sizes(s: &mut String, p: &Profile) {
    if p.message_sizes.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\nMessage sizes (point-to-point: messages sent; collective: calls by buffer size):\n\
         {:>22} {:>12} {:>12}",
        "Size", "P2P", "Collective"
    );
    for b in &p.message_sizes {
        let range = if b.from_bytes == 0 {
            "0B".to_string()
        } else {
            let class = 64 - b.from_bytes.leading_zeros();
            format!(
                "[{}, {})",
                b.label,
                crate::profile::size_class_label(class + 1)
            )
        };
        let _ = writeln!(s, "{:>22} {:>12} {:>12}", range, b.p2p, b.collective);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top-level keys of `r`'s JSON, in order.
    fn keys(r: &Report) -> Vec<String> {
        let v: serde_json::Value = serde_json::to_value(r).expect("serializes");
        let text = serde_json::to_string(r).expect("serializes");
        let mut found: Vec<(usize, String)> = v
            .as_object()
            .expect("an object")
            .keys()
            .map(|k| {
                let at = text.find(&format!("\"{k}\":")).expect("a key");
                (at, k.clone())
            })
            .collect();
        found.sort();
        found.into_iter().map(|(_, k)| k).collect()
    }

    #[test]
    fn json_keys_keep_their_order() {
        let mut r = Report::default();
        r.profile.warnings.push("w".into());
        let plain = [
            "ranks",
            "events",
            "calls",
            "per_rank",
            "bursts",
            "callsites",
            "p2p",
            "totals",
            "message_sizes",
            "percentile_rel_error",
            "phase",
            "warnings",
        ];
        assert_eq!(keys(&r), plain);
        r.balance = Some(Balance::default());
        r.endings = Some(Endings::default());
        let mut all: Vec<&str> = plain[..10].to_vec();
        all.extend(["balance", "endings", "phase", "warnings"]);
        assert_eq!(keys(&r), all);
        // A phase adds its ranges, a minimum gap its value, before the warnings.
        let mut phased = r.clone();
        phased.profile.phase_ranges = vec![crate::window::RankRange {
            rank: 0,
            kind: crate::window::RangeKind::Calls,
            start_ns: 1,
            end_ns: 2,
            last_enter_ns: 1,
            first_event: 0,
            last_event: 1,
            iterations: 4,
            symbols: 8,
            symbol_share: 1.0,
        }];
        phased.profile.burst_min_gap_s = 1e-6;
        let mut with: Vec<&str> = all[..all.len() - 1].to_vec();
        with.extend(["phase_ranges", "burst_min_gap_s", "warnings"]);
        assert_eq!(keys(&phased), with);
        // The statistics are written as they are on their own, the extra sections before
        // the warnings.
        let text = serde_json::to_string(&r).expect("serializes");
        let stats = serde_json::to_string(&r.profile).expect("serializes");
        let head = stats.split(",\"warnings\"").next().expect("a head");
        assert!(text.starts_with(head), "{text}");
        assert!(text.ends_with(",\"warnings\":[\"w\"]}"), "{text}");
    }

    /// One call of a random run: what it is, its peers (other ranks, as offsets), the
    /// compute before it and its length, ns.
    #[derive(Debug, Clone)]
    enum Op {
        Send(u32),
        Recv(u32),
        Sendrecv(u32, u32),
        /// Irecv from each peer, Isend to the first, one Waitall.
        Exchange(Vec<u32>),
        Barrier,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = (Op, u64, u64)> {
        use proptest::prelude::*;
        let kind = prop_oneof![
            (1u32..4).prop_map(Op::Send),
            (1u32..4).prop_map(Op::Recv),
            (1u32..4, 1u32..4).prop_map(|(a, b)| Op::Sendrecv(a, b)),
            proptest::collection::vec(1u32..4, 1..4).prop_map(Op::Exchange),
            Just(Op::Barrier),
        ];
        (kind, 0u64..5_000, 0u64..5_000)
    }

    /// Writes `op` on `rank` of `size` ranks, after `gap` ns of compute, lasting `dur`.
    fn record(
        r: &mut crate::testutil::RankFile,
        rank: u32,
        size: u32,
        o: &(Op, u64, u64),
        t: &mut u64,
        req: &mut i64,
    ) {
        use mpiscope_trace::{ListKind, Slot};
        let peer = |k: u32| i64::from((rank + k) % size);
        let from = |k: u32| i64::from((rank + size - k % size) % size);
        let (op, gap, dur) = o;
        let enter = *t + gap;
        let exit = enter + dur;
        match op {
            Op::Send(k) => r.call(
                "MPI_Send",
                enter,
                exit,
                &[(Slot::Peer, peer(*k)), (Slot::Tag, 0)],
                &[],
            ),
            Op::Recv(k) => {
                let args = [
                    (Slot::Peer, from(*k)),
                    (Slot::Tag, 0),
                    (Slot::StatusSource, from(*k)),
                ];
                r.call("MPI_Recv", enter, exit, &args, &[]);
            }
            Op::Sendrecv(a, b) => {
                let args = [
                    (Slot::Peer, peer(*a)),
                    (Slot::Tag, 0),
                    (Slot::RecvPeer, from(*b)),
                    (Slot::RecvTag, 0),
                    (Slot::StatusSource, from(*b)),
                    (Slot::StatusTag, 0),
                ];
                r.call("MPI_Sendrecv", enter, exit, &args, &[]);
            }
            Op::Exchange(ks) => {
                let mut done = Vec::new();
                let mut at = enter;
                for k in ks {
                    *req += 1;
                    let args = [
                        (Slot::Peer, from(*k)),
                        (Slot::Tag, 0),
                        (Slot::Request, *req),
                    ];
                    r.call("MPI_Irecv", at, at + 10, &args, &[]);
                    done.extend([*req, from(*k), 0, 0]);
                    at += 10;
                }
                let args = [
                    (Slot::Peer, peer(ks[0])),
                    (Slot::Tag, 0),
                    (Slot::Request, -1),
                ];
                r.call("MPI_Isend", at, at + 10, &args, &[]);
                let lists = [(ListKind::Completions, done.as_slice())];
                r.call("MPI_Waitall", at + 10, at + 10 + dur, &[], &lists);
                *t = at + 10 + dur;
                return;
            }
            Op::Barrier => r.call("MPI_Barrier", enter, exit, &[], &[]),
        }
        *t = exit;
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Whatever the calls and their times, the waiting attributed to a rank (late
        /// sender, late receiver and in collectives) never exceeds its time in MPI.
        #[test]
        fn no_rank_waits_longer_than_it_spent_in_mpi(
            size in 2u32..5,
            ops in proptest::collection::vec(proptest::collection::vec(op(), 0..24), 4),
        ) {
            let dir = tempfile::tempdir().expect("a temporary directory");
            crate::testutil::write_run(dir.path(), size, |rank, r| {
                let (mut t, mut req) = (0, 0);
                for o in &ops[rank as usize] {
                    record(r, rank, size, o, &mut t, &mut req);
                }
            });
            let run = RunDir::open(dir.path()).expect("a run");
            let rep = report(&run, &ReportOptions::default()).expect("a report");
            let balance = rep.balance.expect("a balance");
            for w in &balance.per_rank {
                let mpi = rep.profile.per_rank.iter().find(|s| s.rank == w.rank).map_or(0.0, |s| s.mpi_s);
                let waited = w.late_sender_s + w.late_receiver_s + w.collective_wait_s;
                proptest::prop_assert!(waited <= mpi + 1e-12, "rank {} waited {} s of {} s in MPI: {:?}", w.rank, waited, mpi, balance);
            }
        }
    }
}
