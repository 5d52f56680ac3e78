//! The report's figures, drawn by `mpiscope_plot`: calls and time per function, compute
//! and MPI time per rank (MPI split by function, in the page's function colours), the
//! compute bursts, the communication matrices.

use mpiscope_plot::bars::{self, Row};
use mpiscope_plot::line::Axis;
use mpiscope_plot::{heat, palette, Scale, Unit};

use super::page::figure;
use crate::profile::Profile;
use crate::report::Report;

/// Calls per function (log axis) and time per function, each bar in its function's colour.
pub fn functions(p: &Profile, order: &[String]) -> String {
    let colour = |name: &str| {
        palette::function(order.iter().position(|f| f == name).unwrap_or(usize::MAX)).to_owned()
    };
    let mut by_count: Vec<(&String, u64)> = p.calls.iter().map(|(n, c)| (n, c.count)).collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    by_count.truncate(30);
    let rows: Vec<Row> = by_count
        .iter()
        .map(|(n, c)| Row {
            label: n.to_string(),
            parts: vec![(*c as f64, colour(n), "calls".into())],
            note: c.to_string(),
        })
        .collect();
    let axis = Axis {
        title: "calls, all ranks".into(),
        unit: Unit::Count,
        scale: Scale::log10(by_count.iter().map(|r| r.1 as f64).chain([1.0])),
    };
    let mut s = figure(
        "fig-calls",
        "Calls per function, all ranks (log scale; [Polivanov 2012]'s Figure 2)",
        &bars::horizontal(&rows, &axis, &[]),
    );
    let rows: Vec<Row> = order
        .iter()
        .take(30)
        .filter_map(|n| p.calls.get(n).map(|c| (n, c)))
        .map(|(n, c)| Row {
            label: n.clone(),
            parts: vec![(c.time_s, colour(n), "time".into())],
            note: Unit::Seconds.format(c.time_s),
        })
        .collect();
    let axis = Axis {
        title: "time in the function, summed over ranks".into(),
        unit: Unit::Seconds,
        scale: Scale::linear(rows.iter().map(|r| r.parts[0].0)),
    };
    s += &figure(
        "fig-time",
        "Time in each function, all ranks (MPI_Init and MPI_Finalize included)",
        &bars::horizontal(&rows, &axis, &[]),
    );
    s
}

/// Ranks per bar of the per-rank chart: one bar per rank up to 64 ranks, else groups.
fn group_size(n: usize) -> usize {
    n.div_ceil(64).max(1)
}

/// Compute and MPI time per rank (or per group of ranks, their mean) within the
/// application time, MPI split into the busiest functions of the run (those named in the
/// legend) and the rest.
pub fn per_rank(p: &Profile, order: &[String], per_rank_fn: &[Vec<f64>]) -> String {
    if p.per_rank.is_empty() {
        return String::new();
    }
    let shown = order
        .iter()
        .filter(|f| !f.starts_with("MPI_Init") && *f != "MPI_Finalize")
        .take(6)
        .cloned()
        .collect::<Vec<_>>();
    let idx: Vec<usize> = shown
        .iter()
        .map(|f| order.iter().position(|o| o == f).unwrap_or(0))
        .collect();
    let g = group_size(p.per_rank.len());
    let mut rows = Vec::new();
    for (ci, chunk) in p.per_rank.chunks(g).enumerate() {
        let n = chunk.len() as f64;
        let compute = chunk.iter().map(|r| r.compute_s).sum::<f64>() / n;
        let mpi = chunk.iter().map(|r| r.mpi_s).sum::<f64>() / n;
        let mut parts = vec![(compute, palette::COMPUTE.to_owned(), "compute".to_owned())];
        let mut named = 0.0;
        for (k, f) in shown.iter().enumerate() {
            let v = (0..chunk.len())
                .map(|j| {
                    per_rank_fn
                        .get(ci * g + j)
                        .and_then(|r| r.get(idx[k]))
                        .copied()
                        .unwrap_or(0.0)
                })
                .sum::<f64>()
                / n;
            named += v;
            parts.push((v, palette::function(idx[k]).to_owned(), f.clone()));
        }
        parts.push((
            (mpi - named).max(0.0),
            palette::OTHER.to_owned(),
            "other MPI".into(),
        ));
        let pct = if compute + mpi > 0.0 {
            100.0 * mpi / (compute + mpi)
        } else {
            0.0
        };
        let label = if g == 1 {
            format!("rank {}", chunk[0].rank)
        } else {
            format!("ranks {}-{}", chunk[0].rank, chunk[chunk.len() - 1].rank)
        };
        rows.push(Row {
            label,
            parts,
            note: format!("{pct:.0}% MPI"),
        });
    }
    let mut legend = vec![("compute".to_owned(), palette::COMPUTE.to_owned())];
    for (k, f) in shown.iter().enumerate() {
        legend.push((f.clone(), palette::function(idx[k]).to_owned()));
    }
    legend.push(("other MPI".into(), palette::OTHER.into()));
    let axis = Axis {
        title: if g == 1 {
            "time within the application time".into()
        } else {
            format!("mean time per rank of each group of {g} ranks, within the application time")
        },
        unit: Unit::Seconds,
        scale: Scale::linear(
            rows.iter()
                .map(|r| r.parts.iter().map(|p| p.0).sum::<f64>()),
        ),
    };
    figure(
        "fig-ranks",
        "Compute and MPI time per rank, from the end of MPI_Init to the start of MPI_Finalize \
         (MPI split by function)",
        &bars::horizontal(&rows, &axis, &legend),
    )
}

/// The compute bursts between MPI calls, by length (powers of two).
pub fn bursts(p: &Profile) -> String {
    let b = &p.bursts.histogram;
    if b.is_empty() {
        return String::new();
    }
    let pow_of = |from: u64| 63 - u64::from(from.max(1).leading_zeros());
    let (lo, hi) = (pow_of(b[0].from), pow_of(b[b.len() - 1].from));
    let mut by_pow: Vec<(f64, f64, u64)> = (lo..=hi)
        .map(|k| {
            (
                (1u64 << k) as f64 * 1e-9,
                (1u64 << (k + 1)) as f64 * 1e-9,
                0,
            )
        })
        .collect();
    for x in b {
        by_pow[(pow_of(x.from) - lo) as usize].2 += x.count;
    }
    figure(
        "fig-bursts",
        &format!(
            "Compute bursts between MPI calls: {} bursts, mean {}, harmonic mean {}, median {}",
            p.bursts.count,
            Unit::Seconds.format(p.bursts.mean_s),
            Unit::Seconds.format(p.bursts.harmonic_mean_s),
            Unit::Seconds.format(p.bursts.median_s)
        ),
        &bars::histogram(&by_pow, "burst length", Unit::Seconds),
    )
}

/// The communication matrices (point-to-point, collective, both) as heat maps; without
/// matrices, the point-to-point pairs of the profile.
pub fn matrices(r: &Report) -> String {
    let p = &r.profile;
    let n = p.ranks as usize;
    let Some(m) = &r.matrix else {
        let cells: Vec<_> = p
            .p2p
            .iter()
            .map(|t| (t.from, t.to, t.messages, t.bytes))
            .collect();
        return figure(
            "fig-p2p",
            "Point-to-point bytes, sender (row) to receiver (column)",
            &heat::heatmap(n, &cells, palette::P2P_RGB),
        );
    };
    let mut s = figure(
        "fig-p2p",
        "Point-to-point bytes, sender (row) to receiver (column); darker is more",
        &heat::heatmap(n, &m.p2p.cells(), palette::P2P_RGB),
    );
    s += &figure(
        "fig-collective",
        "Collective bytes by MPI semantics (bcast root to members, gather members to root, \
         alltoall i to j, allreduce each to each), sender (row) to receiver (column)",
        &heat::heatmap(n, &m.collective.cells(), palette::COLLECTIVE_RGB),
    );
    s += &figure(
        "fig-total",
        "All bytes (point-to-point and collective), sender (row) to receiver (column)",
        &heat::heatmap(n, &m.total.cells(), palette::TOTAL_RGB),
    );
    s
}
