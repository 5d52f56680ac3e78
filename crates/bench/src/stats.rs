//! Statistics of a set of timing samples: mean (MPITEST's figure), median, extremes and a
//! distribution-free 95% confidence interval of the median.

use serde::Serialize;

/// Summary of samples (seconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Lower bound of the 95% confidence interval of the median.
    pub ci_low: f64,
    /// Upper bound of the 95% confidence interval of the median.
    pub ci_high: f64,
}

impl Summary {
    /// Summarizes `samples` (empty: all zero).
    pub fn of(samples: &[f64]) -> Summary {
        let n = samples.len();
        if n == 0 {
            return Summary {
                n,
                mean: 0.0,
                median: 0.0,
                min: 0.0,
                max: 0.0,
                ci_low: 0.0,
                ci_high: 0.0,
            };
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        let (lo, hi) = median_ci_ranks(n);
        Summary {
            n,
            mean: s.iter().sum::<f64>() / n as f64,
            median,
            min: s[0],
            max: s[n - 1],
            ci_low: s[lo],
            ci_high: s[hi],
        }
    }

    /// Whether the confidence interval is wider than `fraction` of the median: the run was
    /// disturbed (or the operation is too short for the timer).
    pub fn unstable(&self, fraction: f64) -> bool {
        self.n < 6 || self.ci_high - self.ci_low > fraction * self.median.abs()
    }
}

/// 0-based order statistics bounding the median with 95% confidence, from the binomial
/// distribution of the number of samples below the median (normal approximation: 1-based
/// ranks `n/2 - 1.96 sqrt(n)/2` and `1 + n/2 + 1.96 sqrt(n)/2`); the whole range for fewer
/// than 6 samples.
pub fn median_ci_ranks(n: usize) -> (usize, usize) {
    if n < 6 {
        return (0, n.saturating_sub(1));
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64) / 2.0 - half).floor().max(1.0) as usize;
    let hi = (1.0 + (n as f64) / 2.0 + half).ceil().min(n as f64) as usize;
    (lo - 1, hi - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(
            (s.n, s.mean, s.median, s.min, s.max),
            (5, 3.0, 3.0, 1.0, 5.0)
        );
        assert_eq!((s.ci_low, s.ci_high), (1.0, 5.0));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.median, 2.5);
        assert_eq!(Summary::of(&[]).n, 0);
    }

    #[test]
    fn median_interval_has_the_textbook_ranks() {
        // n = 100: ranks 40 and 61 (1-based) by the normal approximation.
        assert_eq!(median_ci_ranks(100), (39, 60));
        for n in 6..2000 {
            let (lo, hi) = median_ci_ranks(n);
            assert!(
                lo <= (n - 1) / 2 && hi >= n / 2 && hi < n,
                "n {n}: {lo} {hi}"
            );
        }
    }

    #[test]
    fn interval_covers_the_median_and_flags_spread() {
        let tight: Vec<f64> = (0..200).map(|i| 1.0 + (i % 7) as f64 * 1e-4).collect();
        let s = Summary::of(&tight);
        assert!(s.ci_low <= s.median && s.median <= s.ci_high);
        assert!(!s.unstable(0.25));
        // Two modes (a noisy machine): the median could be either.
        let wide: Vec<f64> = (0..200)
            .map(|i| if i % 2 == 0 { 1.0 } else { 10.0 })
            .collect();
        assert!(Summary::of(&wide).unstable(0.25));
    }
}
