//! Callsites across ranks (mpiP's callsite statistics): what each rank did at a callsite
//! ([`SiteAcc`]), the ranks merged by the callsite's frames ([`Sites`]), and the rows
//! ([`CallsiteStats`]), busiest first.
//!
//! A callsite's time per rank is summarized over the ranks that called there: smallest,
//! mean, largest, and the coefficient of variation (population standard deviation over
//! mean), accumulated one rank at a time (Welford's update) so memory does not grow with
//! the number of ranks.

use std::collections::HashMap;

use crate::stats::CallsiteStats;

/// A callsite's frames: (module path, offset), innermost first.
pub type Frames = Vec<(String, u64)>;

/// What one rank did at one callsite.
#[derive(Debug, Clone, Default)]
pub struct SiteAcc {
    /// MPI function called there.
    pub function: String,
    /// Recorded calls.
    pub count: u64,
    /// Time in them, ns.
    pub time_ns: u64,
    /// Longest call, ns.
    pub max_ns: u64,
    /// Payload bytes sent plus received.
    pub bytes: u64,
}

/// The spread of one value over ranks: smallest, largest, mean and the sum of squared
/// deviations (Welford).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Values added.
    pub n: u64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    m2: f64,
}

impl Default for Spread {
    fn default() -> Self {
        Spread {
            n: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Spread {
    /// Adds one value.
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        let d = v - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (v - self.mean);
    }

    /// Population standard deviation over mean; 0 when the mean is 0 or nothing was added.
    pub fn cov(&self) -> f64 {
        if self.n == 0 || self.mean <= 0.0 {
            return 0.0;
        }
        (self.m2 / self.n as f64).max(0.0).sqrt() / self.mean
    }
}

/// One callsite merged over ranks.
struct Merged {
    /// Number, in order of first appearance.
    number: u32,
    /// Totals over ranks.
    acc: SiteAcc,
    /// Time per rank, seconds.
    per_rank: Spread,
}

/// The callsites of the ranks read so far, by frames.
#[derive(Default)]
pub struct Sites {
    by_frames: HashMap<Frames, Merged>,
}

impl Sites {
    /// Adds one rank's callsites.
    pub fn add(&mut self, sites: Vec<(Frames, SiteAcc)>) {
        for (frames, a) in sites {
            let next = self.by_frames.len() as u32;
            let e = self.by_frames.entry(frames).or_insert_with(|| Merged {
                number: next,
                acc: SiteAcc {
                    function: a.function.clone(),
                    ..SiteAcc::default()
                },
                per_rank: Spread::default(),
            });
            e.acc.count += a.count;
            e.acc.time_ns += a.time_ns;
            e.acc.max_ns = e.acc.max_ns.max(a.max_ns);
            e.acc.bytes += a.bytes;
            e.per_rank.add(ns(a.time_ns));
        }
    }

    /// The rows, busiest first; the fifty busiest located in the binaries' debug
    /// information.
    pub fn rows(self) -> Vec<CallsiteStats> {
        let mut symbolizer = crate::symbols::Symbolizer::new();
        let mut sites: Vec<(Frames, Merged)> = self.by_frames.into_iter().collect();
        sites.sort_by(|a, b| {
            b.1.acc
                .time_ns
                .cmp(&a.1.acc.time_ns)
                .then(a.1.number.cmp(&b.1.number))
        });
        let mut rows = Vec::with_capacity(sites.len());
        for (i, (frames, m)) in sites.into_iter().enumerate() {
            // Debug information is read for the busiest callsites only.
            let location = frames
                .first()
                .filter(|(path, _)| !path.is_empty() && i < 50)
                .map(|(path, offset)| match symbolizer.resolve(path, *offset) {
                    Some(l) => l.to_string(),
                    None => format!("{path}+{offset:#x}"),
                });
            rows.push(row(m, location));
        }
        rows
    }
}

fn ns(v: u64) -> f64 {
    v as f64 * 1e-9
}

/// The row of one merged callsite.
fn row(m: Merged, location: Option<String>) -> CallsiteStats {
    let a = m.acc;
    let s = m.per_rank;
    CallsiteStats {
        callsite: m.number,
        function: a.function,
        location,
        ranks: s.n as u32,
        count: a.count,
        time_s: ns(a.time_ns),
        mean_s: if a.count > 0 {
            ns(a.time_ns) / a.count as f64
        } else {
            0.0
        },
        max_s: ns(a.max_ns),
        bytes: a.bytes,
        rank_min_s: if s.n > 0 { s.min } else { 0.0 },
        rank_mean_s: s.mean,
        rank_max_s: if s.n > 0 { s.max } else { 0.0 },
        rank_cov: s.cov(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(path: &str, ns: u64, count: u64) -> (Frames, SiteAcc) {
        (
            vec![(path.to_string(), 0x10)],
            SiteAcc {
                function: "MPI_Sendrecv".into(),
                count,
                time_ns: ns,
                max_ns: ns / count.max(1),
                bytes: 8 * count,
            },
        )
    }

    #[test]
    fn time_per_rank_min_mean_max_and_cov() {
        let mut s = Sites::default();
        // Ranks spend 1, 2, 3 and 6 ms at the first callsite; one rank 5 ms at the second.
        for (r, ms) in [1u64, 2, 3, 6].into_iter().enumerate() {
            let mut sites = vec![site("", ms * 1_000_000, 100)];
            if r == 2 {
                sites.push(site("", 0, 0));
                sites[1].0 = vec![(String::new(), 0x20)];
                sites[1].1.time_ns = 5_000_000;
                sites[1].1.count = 10;
            }
            s.add(sites);
        }
        let rows = s.rows();
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!((a.callsite, a.ranks, a.count, a.bytes), (0, 4, 400, 3200));
        assert!((a.time_s - 0.012).abs() < 1e-12);
        assert!((a.rank_min_s - 0.001).abs() < 1e-12);
        assert!((a.rank_mean_s - 0.003).abs() < 1e-12);
        assert!((a.rank_max_s - 0.006).abs() < 1e-12);
        // Deviations -2, -1, 0, 3 ms: variance 14/4 ms^2, sd 1.8708 ms, over 3 ms.
        assert!(
            (a.rank_cov - (3.5f64).sqrt() / 3.0).abs() < 1e-9,
            "{}",
            a.rank_cov
        );
        let b = &rows[1];
        assert_eq!((b.callsite, b.ranks), (1, 1));
        assert_eq!(
            (b.rank_min_s, b.rank_max_s, b.rank_cov),
            (0.005, 0.005, 0.0)
        );
    }

    #[test]
    fn spread_of_nothing_and_of_zeros() {
        assert_eq!(Spread::default().cov(), 0.0);
        let mut z = Spread::default();
        z.add(0.0);
        z.add(0.0);
        assert_eq!((z.min, z.max, z.cov()), (0.0, 0.0, 0.0));
    }
}
