//! The report's sections as sortable tables, with the same numbers as `mpiscope report`'s
//! text: functions, callsites and their spread across ranks, message sizes, the busiest
//! pairs, collective traffic per function, ranks, balance (wait states, imbalance,
//! placement), how the records end.

use std::fmt::Write as _;

use mpiscope_plot::svg::esc;
use mpiscope_plot::Unit;

use super::page::{int, num, table, text, Cell};
use crate::balance::Balance;
use crate::profile::Profile;
use crate::report::Report;

/// The summary lines: application time, MPI and compute within it, bursts.
pub fn summary(p: &Profile) -> String {
    let t = &p.totals;
    let mut s = String::from("<p id=\"summary\">");
    let _ = write!(
        s,
        "Application time (end of MPI_Init to start of MPI_Finalize), all ranks: \
         <b data-key=\"app_s\" data-v=\"{:e}\">{}</b>, MPI <b data-key=\"mpi_s\" data-v=\"{:e}\">{}</b> \
         (<b data-key=\"mpi_pct\" data-v=\"{:e}\">{:.1}%</b>), compute {}; apart: MPI_Init {}, MPI_Finalize {}.",
        t.app_s,
        Unit::Seconds.format(t.app_s),
        t.mpi_s,
        Unit::Seconds.format(t.mpi_s),
        t.mpi_pct,
        t.mpi_pct,
        Unit::Seconds.format(t.compute_s),
        Unit::Seconds.format(t.init_s),
        Unit::Seconds.format(t.finalize_s)
    );
    let b = &p.bursts;
    if b.count > 0 {
        let _ = write!(
            s,
            " Compute bursts: {} between MPI calls; mean {}, harmonic mean {}, median {}, p90 {}, p99 {}.",
            b.count,
            Unit::Seconds.format(b.mean_s),
            Unit::Seconds.format(b.harmonic_mean_s),
            Unit::Seconds.format(b.median_s),
            Unit::Seconds.format(b.p90_s),
            Unit::Seconds.format(b.p99_s)
        );
    }
    s += "</p>";
    s
}

/// Every function: calls, recorded, time, mean, median, p99, max, bytes.
pub fn functions(p: &Profile, order: &[String]) -> String {
    let rows: Vec<Vec<Cell>> = order
        .iter()
        .filter_map(|n| p.calls.get(n).map(|c| (n, c)))
        .map(|(n, c)| {
            vec![
                text(n.clone()),
                int(c.count),
                int(c.recorded),
                num(c.time_s, Unit::Seconds),
                num(c.mean_s, Unit::Seconds),
                num(c.median_s, Unit::Seconds),
                num(c.p99_s, Unit::Seconds),
                num(c.max_s, Unit::Seconds),
                num(c.bytes as f64, Unit::Bytes),
            ]
        })
        .collect();
    let mut s = String::from("<h2 id=\"functions\">Functions</h2>");
    s += &table(
        "t-functions",
        &[
            "Function", "Calls", "Recorded", "Time", "Mean", "Median", "p99", "Max", "Bytes",
        ],
        &rows,
        None,
    );
    let _ = write!(
        s,
        "<p>Median and p99 come from log histograms: within {:.2}% of the exact value, never \
         outside [min, max].</p>",
        100.0 * p.percentile_rel_error
    );
    s
}

/// Callsites: totals and the spread of their time across the ranks that called there (min,
/// mean, max per rank, COV), mpiP's callsite statistics.
pub fn callsites(p: &Profile) -> String {
    if p.callsites.is_empty() {
        return String::new();
    }
    let shown = p.callsites.len().min(500);
    let rows: Vec<Vec<Cell>> = p.callsites[..shown]
        .iter()
        .map(|c| {
            vec![
                int(u64::from(c.callsite)),
                text(c.function.clone()),
                text(c.location.clone().unwrap_or_else(|| "?".into())),
                int(u64::from(c.ranks)),
                int(c.count),
                num(c.time_s, Unit::Seconds),
                num(c.mean_s, Unit::Seconds),
                num(c.rank_min_s, Unit::Seconds),
                num(c.rank_mean_s, Unit::Seconds),
                num(c.rank_max_s, Unit::Seconds),
                Cell::Num(c.rank_cov, format!("{:.3}", c.rank_cov)),
            ]
        })
        .collect();
    let mut s = String::from(
        "<h2 id=\"callsites\">Callsites across ranks</h2><p>Time per rank over the ranks that \
         called there (min, mean, max); COV: standard deviation over mean of the time per rank \
         (0 when every rank spends the same).</p>",
    );
    s += &table(
        "t-callsites",
        &[
            "Site",
            "Function",
            "Location",
            "Ranks",
            "Calls",
            "Time",
            "Mean per call",
            "Min per rank",
            "Mean per rank",
            "Max per rank",
            "COV",
        ],
        &rows,
        None,
    );
    if shown < p.callsites.len() {
        let _ = write!(
            s,
            "<p>{} more callsites in <code>report --json</code>.</p>",
            p.callsites.len() - shown
        );
    }
    s
}

/// Messages by size class, and the busiest point-to-point pairs.
pub fn messages(p: &Profile) -> String {
    let mut s = String::new();
    if !p.message_sizes.is_empty() {
        s += "<h2 id=\"sizes\">Message sizes</h2><p>Point-to-point: messages sent; collective: \
              calls by buffer size. A class holds sizes from its bound up to twice it.</p>";
        let rows: Vec<Vec<Cell>> = p
            .message_sizes
            .iter()
            .map(|b| {
                vec![
                    Cell::Num(b.from_bytes as f64, b.label.clone()),
                    int(b.p2p),
                    int(b.collective),
                ]
            })
            .collect();
        s += &table(
            "t-sizes",
            &["From", "Point-to-point", "Collective"],
            &rows,
            None,
        );
    }
    if !p.p2p.is_empty() {
        let shown = p.p2p.len().min(100);
        s += "<h2 id=\"pairs\">Point-to-point, busiest pairs</h2>";
        let rows: Vec<Vec<Cell>> = p.p2p[..shown]
            .iter()
            .map(|t| {
                vec![
                    int(u64::from(t.from)),
                    int(u64::from(t.to)),
                    int(t.messages),
                    num(t.bytes as f64, Unit::Bytes),
                ]
            })
            .collect();
        s += &table(
            "t-pairs",
            &["Sender", "Receiver", "Messages", "Bytes"],
            &rows,
            None,
        );
        if shown < p.p2p.len() {
            let _ = write!(
                s,
                "<p>{} more pairs in <code>report --json</code>.</p>",
                p.p2p.len() - shown
            );
        }
    }
    s
}

/// Collective traffic per function (from the matrices).
pub fn collectives(r: &Report) -> String {
    let Some(m) = &r.matrix else {
        return String::new();
    };
    if m.collective_by_function.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<Cell>> = m
        .collective_by_function
        .iter()
        .map(|(f, t)| {
            vec![
                text(f.clone()),
                int(t.messages),
                num(t.bytes as f64, Unit::Bytes),
            ]
        })
        .collect();
    let mut s = String::from(
        "<h2 id=\"collective-traffic\">Collective traffic by function</h2><p>Transfers and \
         bytes by MPI semantics, as in the collective matrix.</p>",
    );
    s += &table(
        "t-collectives",
        &["Function", "Transfers", "Bytes"],
        &rows,
        None,
    );
    s
}

/// The ranks: host, wall, application, MPI, compute, MPI%, init, finalize, granularity,
/// burst harmonic mean, how the record ends; the sums below.
pub fn ranks(p: &Profile) -> String {
    let rows: Vec<Vec<Cell>> = p
        .per_rank
        .iter()
        .map(|r| {
            vec![
                int(u64::from(r.rank)),
                text(r.host.clone()),
                num(r.wall_s, Unit::Seconds),
                num(r.app_s, Unit::Seconds),
                num(r.mpi_s, Unit::Seconds),
                num(r.compute_s, Unit::Seconds),
                Cell::Num(r.mpi_pct, format!("{:.1}%", r.mpi_pct)),
                num(r.init_s, Unit::Seconds),
                num(r.finalize_s, Unit::Seconds),
                Cell::Num(r.granularity, format!("{:.3}", r.granularity)),
                num(r.burst_harmonic_mean_s, Unit::Seconds),
                text(r.end.clone()),
            ]
        })
        .collect();
    let t = &p.totals;
    let foot = [
        text("all"),
        text(""),
        text(""),
        num(t.app_s, Unit::Seconds),
        num(t.mpi_s, Unit::Seconds),
        num(t.compute_s, Unit::Seconds),
        Cell::Num(t.mpi_pct, format!("{:.1}%", t.mpi_pct)),
        num(t.init_s, Unit::Seconds),
        num(t.finalize_s, Unit::Seconds),
        text(""),
        text(""),
        text(""),
    ];
    let mut s = String::from(
        "<h2 id=\"ranks\">Ranks</h2><p>App: from the end of MPI_Init to the start of \
         MPI_Finalize; MPI, compute and MPI% are within it (MPI_Init and MPI_Finalize apart).</p>",
    );
    s += &table(
        "t-ranks",
        &[
            "Rank",
            "Host",
            "Wall",
            "App",
            "MPI",
            "Compute",
            "MPI%",
            "MPI_Init",
            "MPI_Finalize",
            "Granularity",
            "Burst harmonic mean",
            "End",
        ],
        &rows,
        Some(&foot),
    );
    s
}

/// Imbalance, wait states (totals, per rank, the largest waits, collectives), placement.
pub fn balance(b: &Balance) -> String {
    let mut s = String::from("<h2 id=\"balance\">Balance and wait states</h2>");
    let _ = write!(
        s,
        "<p id=\"balance-summary\">Compute imbalance <b data-key=\"compute_imbalance_pct\">{:.1}%</b>, \
         MPI imbalance <b data-key=\"mpi_imbalance_pct\">{:.1}%</b> ((max / mean - 1) over ranks). \
         Waiting: late sender <b data-key=\"late_sender_s\">{}</b>, late receiver {}, in collectives {}.</p>",
        b.compute_imbalance_pct,
        b.mpi_imbalance_pct,
        Unit::Seconds.format(b.late_sender_s),
        Unit::Seconds.format(b.late_receiver_s),
        Unit::Seconds.format(b.collective_wait_s)
    );
    if !b.waits.is_empty() {
        let rows: Vec<Vec<Cell>> = b
            .waits
            .iter()
            .take(100)
            .map(|w| {
                vec![
                    int(u64::from(w.waiter)),
                    int(u64::from(w.on)),
                    text(w.kind.clone()),
                    int(w.messages),
                    num(w.seconds, Unit::Seconds),
                ]
            })
            .collect();
        s += "<h3>Largest waits between ranks</h3>";
        s += &table(
            "t-waits",
            &["Rank", "Waited on rank", "Kind", "Messages", "Time"],
            &rows,
            None,
        );
    }
    if !b.collectives.is_empty() {
        let rows: Vec<Vec<Cell>> = b
            .collectives
            .iter()
            .map(|c| {
                vec![
                    text(c.function.clone()),
                    int(c.instances),
                    num(c.seconds, Unit::Seconds),
                ]
            })
            .collect();
        s += "<h3>Waiting in collectives for the last rank</h3>";
        s += &table(
            "t-collective-waits",
            &["Function", "Calls", "Time waiting"],
            &rows,
            None,
        );
    }
    if !b.per_rank.is_empty() {
        let rows: Vec<Vec<Cell>> = b
            .per_rank
            .iter()
            .map(|r| {
                vec![
                    int(u64::from(r.rank)),
                    num(r.late_sender_s, Unit::Seconds),
                    num(r.late_receiver_s, Unit::Seconds),
                    num(r.collective_wait_s, Unit::Seconds),
                ]
            })
            .collect();
        s += "<h3>Waiting per rank</h3>";
        s += &table(
            "t-rank-waits",
            &["Rank", "Late sender", "Late receiver", "In collectives"],
            &rows,
            None,
        );
    }
    match &b.placement {
        Some(p) => {
            let _ = write!(
                s,
                "<h3>Placement hint</h3><p id=\"placement\">With {} ranks per node: {} between \
                 nodes in rank order, {} with the suggested nodes. Node of each rank: <code>{}</code></p>",
                p.ranks_per_node,
                Unit::Bytes.format(p.in_order_inter_node_bytes as f64),
                Unit::Bytes.format(p.suggested_inter_node_bytes as f64),
                esc(&format!("{:?}", p.node_of_rank))
            );
        }
        None => {
            s += "<p>Placement hint: run <code>mpiscope report --ranks-per-node K</code> for a \
                  placement of ranks on nodes of K ranks that lowers the bytes between nodes.</p>";
        }
    }
    s
}
