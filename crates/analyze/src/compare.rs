//! Runs of one program side by side ([Polivanov 2012]'s scaling study, its Figure 4): per run the
//! rank count, wall time, MPI share, compute bursts (mean and harmonic mean: how closely
//! MPI calls follow each other), speedup and parallel efficiency over the application time,
//! and per function the calls and bytes per rank, so one sees
//! how counts, sizes and bursts change with the number of ranks.
//!
//! The runs may be restricted to their main loops ([`crate::phase`]): the set-up of a short
//! run (reading input, building the decomposition) otherwise weighs on every figure, most on
//! the bursts. The spread of the per-rank burst means across ranks (minimum, quartiles,
//! maximum) shows whether one mean stands for every rank. Bursts shorter than a minimum gap
//! may be left out: calls made back to back (`MPI_Comm_rank` then `MPI_Allreduce`) leave
//! gaps of a microsecond that are no computation, and the harmonic mean is made of its
//! smallest values.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::profile::Profile;
use crate::window::{Phase, RankRange};

/// How a per-rank value spreads across ranks.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Ranks counted (those with a value).
    pub ranks: u32,
    /// Smallest, seconds.
    pub min_s: f64,
    /// First quartile, seconds.
    pub q1_s: f64,
    /// Median, seconds.
    pub median_s: f64,
    /// Third quartile, seconds.
    pub q3_s: f64,
    /// Largest, seconds.
    pub max_s: f64,
}

impl Spread {
    /// The spread of the positive `values` (quartiles interpolated between the values).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let mut v: Vec<f64> = values
            .into_iter()
            .filter(|x| *x > 0.0 && x.is_finite())
            .collect();
        v.sort_by(f64::total_cmp);
        let Some((&min, &max)) = v.first().zip(v.last()) else {
            return Spread::default();
        };
        let q = |f: f64| {
            let at = f * (v.len() - 1) as f64;
            let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
            v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
        };
        Spread {
            ranks: v.len() as u32,
            min_s: min,
            q1_s: q(0.25),
            median_s: q(0.5),
            q3_s: q(0.75),
            max_s: max,
        }
    }
}

/// One run's summary.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RunSummary {
    /// The run directory as given.
    pub run: String,
    /// Ranks.
    pub ranks: u32,
    /// Longest rank's wall time, seconds.
    pub wall_s: f64,
    /// Longest rank's application time (end of `MPI_Init` to start of `MPI_Finalize`),
    /// seconds.
    pub app_s: f64,
    /// Application time of the run with fewest ranks over this run's.
    pub speedup: f64,
    /// `speedup` times the fewest ranks over this run's ranks (1 is ideal scaling).
    pub parallel_efficiency: f64,
    /// MPI time over application time (end of `MPI_Init` to start of `MPI_Finalize`),
    /// summed over ranks. It was over wall time, `MPI_Init` and `MPI_Finalize` included,
    /// before the report measured MPI time within the application time.
    pub mpi_fraction: f64,
    /// Compute bursts per rank.
    pub bursts_per_rank: f64,
    /// Mean burst, seconds.
    pub burst_mean_s: f64,
    /// Harmonic mean of the bursts, seconds.
    pub burst_harmonic_mean_s: f64,
    /// Bursts, all ranks.
    pub bursts: u64,
    /// The spread across ranks of each rank's burst harmonic mean.
    pub burst_harmonic_mean_ranks: Spread,
    /// The spread across ranks of each rank's burst mean.
    pub burst_mean_ranks: Spread,
    /// The part of the run counted (`all`, `loop`).
    pub phase: Phase,
    /// Where it lies on each rank (empty for the whole run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phase_ranges: Vec<RankRange>,
    /// Bursts shorter than this were left out of the burst statistics, seconds.
    pub burst_min_gap_s: f64,
    /// Per function: calls per rank.
    pub calls_per_rank: BTreeMap<String, f64>,
    /// Per function: bytes per call (sent plus received), where the function moves data.
    pub bytes_per_call: BTreeMap<String, f64>,
}

/// The comparison.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Comparison {
    /// Runs, by increasing rank count.
    pub runs: Vec<RunSummary>,
}

/// Summarizes `(name, profile)` pairs, ordered by rank count.
pub fn compare(runs: &[(String, Profile)]) -> Comparison {
    let mut out: Vec<RunSummary> = runs
        .iter()
        .map(|(name, p)| {
            let n = f64::from(p.ranks.max(1));
            let app: f64 = p.per_rank.iter().map(|r| r.app_s).sum();
            let mpi: f64 = p.per_rank.iter().map(|r| r.mpi_s).sum();
            RunSummary {
                run: name.clone(),
                ranks: p.ranks,
                wall_s: p.per_rank.iter().map(|r| r.wall_s).fold(0.0, f64::max),
                app_s: p.per_rank.iter().map(|r| r.app_s).fold(0.0, f64::max),
                speedup: 0.0,
                parallel_efficiency: 0.0,
                mpi_fraction: if app > 0.0 { mpi / app } else { 0.0 },
                bursts_per_rank: p.bursts.count as f64 / n,
                burst_mean_s: p.bursts.mean_s,
                burst_harmonic_mean_s: p.bursts.harmonic_mean_s,
                bursts: p.bursts.count,
                burst_harmonic_mean_ranks: Spread::of(
                    p.per_rank.iter().map(|r| r.burst_harmonic_mean_s),
                ),
                burst_mean_ranks: Spread::of(p.per_rank.iter().map(|r| r.burst_mean_s)),
                phase: p.phase,
                phase_ranges: p.phase_ranges.clone(),
                burst_min_gap_s: p.burst_min_gap_s,
                calls_per_rank: p
                    .calls
                    .iter()
                    .map(|(f, c)| (f.clone(), c.count as f64 / n))
                    .collect(),
                bytes_per_call: p
                    .calls
                    .iter()
                    .filter(|(_, c)| c.bytes > 0 && c.recorded > 0)
                    .map(|(f, c)| (f.clone(), c.bytes as f64 / c.recorded as f64))
                    .collect(),
            }
        })
        .collect();
    out.sort_by_key(|r| r.ranks);
    let mut c = Comparison { runs: out };
    scale(&mut c);
    c
}

/// Fills in speedup and parallel efficiency, relative to the first run (the fewest ranks):
/// over the application time (`MPI_Init` is not the program's work), zero when a run has
/// none.
pub fn scale(c: &mut Comparison) {
    let Some(base) = c.runs.first().cloned() else {
        return;
    };
    for r in &mut c.runs {
        r.speedup = if r.app_s > 0.0 {
            base.app_s / r.app_s
        } else {
            0.0
        };
        r.parallel_efficiency = if r.ranks > 0 {
            r.speedup * f64::from(base.ranks) / f64::from(r.ranks)
        } else {
            0.0
        };
    }
}

impl Comparison {
    /// The `k` functions with the most calls per rank, summed over runs, most first
    /// (ties by name).
    pub fn top_functions(&self, k: usize) -> Vec<&str> {
        let mut functions: BTreeMap<&str, f64> = BTreeMap::new();
        for r in &self.runs {
            for (f, c) in &r.calls_per_rank {
                *functions.entry(f).or_default() += c;
            }
        }
        let mut top: Vec<(&str, f64)> = functions.into_iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        top.truncate(k);
        top.into_iter().map(|(f, _)| f).collect()
    }

    /// Tables: one row per run, then calls per rank and bytes per call of the busiest
    /// functions across runs.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if let Some(r) = self.runs.first() {
            if r.phase == Phase::Loop {
                s += "phase: the main loop of each rank (times, MPI share and bursts within it)\n";
            }
            if r.burst_min_gap_s > 0.0 {
                let _ = writeln!(
                    s,
                    "bursts under {:.3} us left out of the burst statistics",
                    r.burst_min_gap_s * 1e6
                );
            }
        }
        let _ = writeln!(
            s,
            "{:>6} {:>10} {:>10} {:>8} {:>10} {:>6} {:>12} {:>14} {:>16} {:>23}  run",
            "ranks",
            "wall (s)",
            "app (s)",
            "speedup",
            "efficiency",
            "MPI%",
            "bursts/rank",
            "burst mean (us)",
            "burst hmean (us)",
            "hmean over ranks (us)"
        );
        for r in &self.runs {
            let _ = writeln!(
                s,
                "{:>6} {:>10.4} {:>10.4} {:>8.2} {:>9.1}% {:>5.1}% {:>12.0} {:>14.3} {:>16.3} {:>23}  {}",
                r.ranks,
                r.wall_s,
                r.app_s,
                r.speedup,
                100.0 * r.parallel_efficiency,
                100.0 * r.mpi_fraction,
                r.bursts_per_rank,
                r.burst_mean_s * 1e6,
                r.burst_harmonic_mean_s * 1e6,
                format!(
                    "{:.3}-{:.3}",
                    r.burst_harmonic_mean_ranks.min_s * 1e6,
                    r.burst_harmonic_mean_ranks.max_s * 1e6
                ),
                r.run
            );
        }
        let top = self.top_functions(12);
        let head: String = self
            .runs
            .iter()
            .map(|r| format!(" {:>14}", format!("{} ranks", r.ranks)))
            .collect();
        let _ = writeln!(s, "\ncalls per rank\n{:<24}{head}", "function");
        for f in &top {
            let row: String = self
                .runs
                .iter()
                .map(|r| {
                    format!(
                        " {:>14.1}",
                        r.calls_per_rank.get(*f).copied().unwrap_or(0.0)
                    )
                })
                .collect();
            let _ = writeln!(s, "{f:<24}{row}");
        }
        let _ = writeln!(s, "\nbytes per call\n{:<24}{head}", "function");
        for f in &top {
            if self.runs.iter().all(|r| !r.bytes_per_call.contains_key(*f)) {
                continue;
            }
            let row: String = self
                .runs
                .iter()
                .map(|r| {
                    format!(
                        " {:>14.0}",
                        r.bytes_per_call.get(*f).copied().unwrap_or(0.0)
                    )
                })
                .collect();
            let _ = writeln!(s, "{f:<24}{row}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{CallStats, RankStats};

    fn profile(ranks: u32, sends: u64, hmean: f64) -> Profile {
        let mut p = Profile {
            ranks,
            ..Profile::default()
        };
        p.calls.insert(
            "MPI_Send".into(),
            CallStats {
                count: sends,
                recorded: sends,
                bytes: sends * 1024,
                ..CallStats::default()
            },
        );
        p.per_rank = (0..ranks)
            .map(|rank| RankStats {
                rank,
                wall_s: 2.0,
                app_s: 1.0,
                mpi_s: 0.5,
                ..RankStats::default()
            })
            .collect();
        p.bursts.harmonic_mean_s = hmean;
        p
    }

    #[test]
    fn spread_across_ranks() {
        let s = Spread::of([4.0, 1.0, 0.0, 3.0, 2.0, 5.0, f64::NAN]);
        // Ranks without bursts (0) or a value are not counted.
        assert_eq!(s.ranks, 5);
        assert_eq!(
            (s.min_s, s.q1_s, s.median_s, s.q3_s, s.max_s),
            (1.0, 2.0, 3.0, 4.0, 5.0)
        );
        let two = Spread::of([1.0, 2.0]);
        assert_eq!((two.q1_s, two.median_s, two.q3_s), (1.25, 1.5, 1.75));
        assert_eq!(Spread::of([]), Spread::default());
        let mut p = profile(4, 8, 1e-6);
        for (r, h) in p.per_rank.iter_mut().zip([2e-6, 1e-6, 4e-6, 3e-6]) {
            r.burst_harmonic_mean_s = h;
        }
        let c = compare(&[("a".into(), p.clone()), ("b".into(), profile(8, 8, 1e-6))]);
        assert_eq!(c.runs[0].burst_harmonic_mean_ranks.max_s, 4e-6);
        assert_eq!(c.runs[0].burst_harmonic_mean_ranks.min_s, 1e-6);
        assert!(c.to_text().contains("1.000-4.000"), "{}", c.to_text());
        let json = serde_json::to_value(&c).expect("json");
        assert_eq!(json["runs"][0]["phase"], "all");
        assert_eq!(json["runs"][0]["burst_harmonic_mean_ranks"]["ranks"], 4);
        assert!(json["runs"][0].get("phase_ranges").is_none());
    }

    #[test]
    fn runs_by_rank_count() {
        let c = compare(&[
            ("b".into(), profile(8, 80, 1e-6)),
            ("a".into(), profile(4, 80, 2e-6)),
        ]);
        assert_eq!(c.runs[0].ranks, 4);
        assert_eq!(c.runs[0].calls_per_rank["MPI_Send"], 20.0);
        assert_eq!(c.runs[1].calls_per_rank["MPI_Send"], 10.0);
        assert_eq!(c.runs[1].bytes_per_call["MPI_Send"], 1024.0);
        // Over the application time (1 s), not the wall time (2 s, MPI_Init included).
        assert!((c.runs[0].mpi_fraction - 0.5).abs() < 1e-12);
        // The same application time on twice the ranks: no speedup, half the efficiency.
        assert_eq!(c.runs[1].speedup, 1.0);
        assert_eq!(c.runs[1].parallel_efficiency, 0.5);
        let t = c.to_text();
        assert!(
            t.contains("4 ranks") && t.contains("MPI_Send") && t.contains("50.0%"),
            "{t}"
        );
    }
}
