//! The comparison page of `mpiscope compare --html` ([Polivanov 2012]'s scaling study, its
//! Figure 4): a table of the runs, then against the rank count: wall and application time,
//! speedup and parallel efficiency (over the application time, relative to the run with
//! fewest ranks, beside the ideal), the harmonic mean and the mean of the compute bursts
//! with their spread across ranks as error bars, the calls per rank and the bytes per call
//! of the busiest functions, and the MPI share. The page says which phase (the whole run or
//! the main loops) and which bursts it counts.

use std::collections::BTreeMap;

use mpiscope_plot::line::{Axis, Bars, LineChart, Series};
use mpiscope_plot::{Scale, Unit};

use super::page::{self, figure, int, num, text, Cell};
use crate::compare::{Comparison, RunSummary, Spread};
use crate::window::Phase;

/// Functions drawn per figure.
const TOP_FUNCTIONS: usize = 6;

/// A chart against the rank counts of `c`'s runs.
fn chart(c: &Comparison, y_title: &str, unit: Unit, log: bool, series: Vec<Series>) -> LineChart {
    let xs: Vec<f64> = c.runs.iter().map(|r| f64::from(r.ranks)).collect();
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect::<Vec<_>>();
    let scale = if log {
        Scale::log10(values)
    } else {
        Scale::linear(values)
    };
    LineChart::new(
        Axis {
            title: "ranks".into(),
            unit: Unit::Count,
            scale: Scale::log2_at(&xs),
        },
        Axis {
            title: y_title.into(),
            unit,
            scale,
        },
        series,
    )
}

/// A series of one value per run.
fn per_run(c: &Comparison, name: &str, f: impl Fn(&RunSummary) -> Option<f64>) -> Series {
    Series {
        name: name.into(),
        points: c
            .runs
            .iter()
            .filter_map(|r| f(r).map(|v| (f64::from(r.ranks), v)))
            .collect(),
    }
}

/// The page.
pub fn scaling(title: &str, c: &Comparison) -> String {
    let mut s = page::start(title);
    s += &runs_table(c);
    s += &time_figures(c);
    s += &activity_figures(c);
    s += page::end();
    s
}

/// The table of the runs.
fn runs_table(c: &Comparison) -> String {
    let mut s = String::new();
    let rows: Vec<Vec<Cell>> = c
        .runs
        .iter()
        .map(|r| {
            vec![
                text(r.run.clone()),
                int(u64::from(r.ranks)),
                num(r.wall_s, Unit::Seconds),
                num(r.app_s, Unit::Seconds),
                Cell::Num(r.speedup, format!("{:.2}", r.speedup)),
                Cell::Num(
                    100.0 * r.parallel_efficiency,
                    format!("{:.1}%", 100.0 * r.parallel_efficiency),
                ),
                Cell::Num(
                    100.0 * r.mpi_fraction,
                    format!("{:.1}%", 100.0 * r.mpi_fraction),
                ),
                Cell::Num(r.bursts_per_rank, format!("{:.0}", r.bursts_per_rank)),
                num(r.burst_mean_s, Unit::Seconds),
                num(r.burst_harmonic_mean_s, Unit::Seconds),
                num(r.burst_harmonic_mean_ranks.min_s, Unit::Seconds),
                num(r.burst_harmonic_mean_ranks.max_s, Unit::Seconds),
            ]
        })
        .collect();
    s += "<p>Wall: the longest rank's, first call to last. App: the longest rank's application \
          time (end of MPI_Init to start of MPI_Finalize). Speedup and efficiency are over the \
          application time, relative to the run with fewest ranks.</p>";
    s += &scope_note(c);
    s += &page::table(
        "t-runs",
        &[
            "Run",
            "Ranks",
            "Wall",
            "App",
            "Speedup",
            "Parallel efficiency",
            "MPI",
            "Bursts per rank",
            "Burst mean",
            "Burst harmonic mean",
            "Smallest rank's burst harmonic mean",
            "Largest rank's burst harmonic mean",
        ],
        &rows,
        None,
    );
    s
}

/// Wall and application time, speedup and parallel efficiency against the rank count.
fn time_figures(c: &Comparison) -> String {
    let mut s = String::new();
    let base = c.runs.first().map_or(1.0, |r| f64::from(r.ranks.max(1)));
    let mut time = chart(
        c,
        "time",
        Unit::Seconds,
        true,
        vec![
            per_run(c, "wall time", |r| Some(r.wall_s)),
            per_run(c, "application time", |r| Some(r.app_s)),
        ],
    );
    time.y.title = "time of the longest rank".into();
    s += &figure(
        "fig-time",
        "Wall time and application time vs ranks",
        &time.svg(),
    );
    let mut speedup = chart(
        c,
        "speedup",
        Unit::Plain,
        false,
        vec![per_run(c, "speedup", |r| Some(r.speedup))],
    );
    let ideal = Series {
        name: "ideal (ranks / fewest ranks)".into(),
        points: c
            .runs
            .iter()
            .map(|r| (f64::from(r.ranks), f64::from(r.ranks) / base))
            .collect(),
    };
    speedup.y.scale = Scale::linear(
        ideal
            .points
            .iter()
            .map(|p| p.1)
            .chain(c.runs.iter().map(|r| r.speedup)),
    );
    speedup.reference = Some(ideal);
    speedup.y.title = "speedup over the fewest ranks (application time)".into();
    s += &figure("fig-speedup", "Speedup vs ranks", &speedup.svg());
    let mut eff = chart(
        c,
        "parallel efficiency",
        Unit::Percent,
        false,
        vec![per_run(c, "parallel efficiency", |r| {
            Some(100.0 * r.parallel_efficiency)
        })],
    );
    eff.reference = Some(Series {
        name: "ideal (100%)".into(),
        points: c.runs.iter().map(|r| (f64::from(r.ranks), 100.0)).collect(),
    });
    eff.y.scale = Scale::linear(
        c.runs
            .iter()
            .map(|r| 100.0 * r.parallel_efficiency)
            .chain([100.0]),
    );
    s += &figure(
        "fig-efficiency",
        "Parallel efficiency vs ranks (speedup x fewest ranks / ranks)",
        &eff.svg(),
    );
    s
}

/// What the runs count: the phase, the bursts left out (a paragraph; none for whole runs
/// with every burst).
fn scope_note(c: &Comparison) -> String {
    let Some(r) = c.runs.first() else {
        return String::new();
    };
    let mut s = String::new();
    if r.phase == Phase::Loop {
        s += "<p>Phase: the main loop of each rank, from the first call of its first iteration \
              to the last call of its last (found in the loop structure): times, the MPI share \
              and the bursts are those within it.</p>";
    }
    if r.burst_min_gap_s > 0.0 {
        s += &format!(
            "<p>Bursts shorter than {} are left out of the burst statistics.</p>",
            mpiscope_plot::svg::esc(&Unit::Seconds.format(r.burst_min_gap_s))
        );
    }
    s
}

/// The burst figure: harmonic mean and mean against the rank count, each with the spread of
/// the per-rank values (smallest to largest rank) as error bars.
fn burst_figure(c: &Comparison) -> String {
    let mut ch = chart(
        c,
        "burst length",
        Unit::Seconds,
        true,
        vec![
            per_run(c, "harmonic mean", |r| Some(r.burst_harmonic_mean_s)),
            per_run(c, "mean", |r| Some(r.burst_mean_s)),
        ],
    );
    let bars = |series: usize, name: &str, spread: &dyn Fn(&RunSummary) -> Spread| Bars {
        series,
        name: name.into(),
        bars: c
            .runs
            .iter()
            .map(|r| (f64::from(r.ranks), spread(r)))
            .filter(|(_, sp)| sp.ranks > 0)
            .map(|(x, sp)| (x, sp.min_s, sp.max_s))
            .collect(),
    };
    ch.bars = vec![
        bars(0, "harmonic mean: rank min to max", &|r| {
            r.burst_harmonic_mean_ranks
        }),
        bars(1, "mean: rank min to max", &|r| r.burst_mean_ranks),
    ];
    let values = ch
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(
            ch.bars
                .iter()
                .flat_map(|b| b.bars.iter().flat_map(|&(_, lo, hi)| [lo, hi])),
        )
        .collect::<Vec<_>>();
    ch.y.scale = Scale::log10(values);
    ch.y.title = "compute burst between MPI calls".into();
    let phase = match c.runs.first().map(|r| r.phase) {
        Some(Phase::Loop) => ", main loop",
        _ => "",
    };
    figure(
        "fig-bursts",
        &format!(
            "Compute bursts between MPI calls vs ranks{phase}: harmonic mean ([Polivanov 2012]) \
             and mean over all ranks' bursts, bars from the smallest to the largest rank's"
        ),
        &ch.svg(),
    )
}

/// The bursts, the calls and bytes of the busiest functions, the MPI share, against the
/// rank count.
fn activity_figures(c: &Comparison) -> String {
    let mut s = burst_figure(c);
    let top = c.top_functions(TOP_FUNCTIONS);
    let by_function = |map: &dyn Fn(&RunSummary) -> &BTreeMap<String, f64>| -> Vec<Series> {
        top.iter()
            .filter(|f| c.runs.iter().any(|r| map(r).contains_key(**f)))
            .map(|f| per_run(c, f, |r| map(r).get(*f).copied()))
            .collect()
    };
    s += &figure(
        "fig-calls",
        "Calls per rank of the busiest functions vs ranks",
        &chart(
            c,
            "calls per rank",
            Unit::Count,
            true,
            by_function(&|r| &r.calls_per_rank),
        )
        .svg(),
    );
    s += &figure(
        "fig-bytes",
        "Bytes per call (sent plus received) of the busiest functions vs ranks",
        &chart(
            c,
            "bytes per call",
            Unit::Bytes,
            true,
            by_function(&|r| &r.bytes_per_call),
        )
        .svg(),
    );
    s += &figure(
        "fig-mpi",
        "MPI time over application time, all ranks, vs ranks",
        &chart(
            c,
            "MPI share of the application time",
            Unit::Percent,
            false,
            vec![per_run(c, "MPI time fraction", |r| {
                Some(100.0 * r.mpi_fraction)
            })],
        )
        .svg(),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_of_the_runs() {
        let run = |ranks: u32, app_s: f64, mpi: f64| RunSummary {
            ranks,
            app_s,
            wall_s: app_s + 1.0,
            mpi_fraction: mpi,
            burst_harmonic_mean_s: 1e-5 / f64::from(ranks),
            burst_mean_s: 2e-5,
            ..RunSummary::default()
        };
        let mut c = Comparison {
            runs: vec![run(2, 8.0, 0.5), run(4, 5.0, 0.25)],
        };
        crate::compare::scale(&mut c);
        let page = scaling("s", &c);
        assert!(page.contains("MPI time fraction at 4 ranks: 25%"), "{page}");
        assert!(page.contains("speedup at 4 ranks: 1.6<"), "{page}");
        assert!(
            page.contains("parallel efficiency at 4 ranks: 80%<"),
            "{page}"
        );
        assert!(
            page.contains("harmonic mean at 2 ranks: 5.000 us"),
            "{page}"
        );
        assert!(page.contains(">ideal (ranks / fewest ranks)<"));
        assert!(page.contains(">ranks (count, log scale)<"));
    }
}
