//! A log-scale histogram of non-negative integers (nanoseconds, bytes) for percentiles in
//! bounded memory: 8 buckets per power of two.
//!
//! A bucket `[lo, lo + w)` is exact below 8 (`w = 1`) and at most `lo / 8` wide above, so the
//! middle of a bucket is within `w / 2 <= lo / 16` of any value in it: a percentile is
//! within [`REL_ERROR`] (6.25%) of the exact one (nearest-rank definition). Every percentile
//! is also clamped into `[min, max]` of the values added, which are kept exactly: no
//! percentile is ever below the smallest value or above the largest, and percentiles never
//! decrease with `q`.

use serde::Serialize;

/// Sub-buckets per power of two.
const SUB: u32 = 8;

/// The largest error of a percentile relative to the exact one: half a bucket's width over
/// its smallest value (`1 / (2 * 8)`). Reports carry it as `percentile_rel_error`.
pub const REL_ERROR: f64 = 1.0 / (2.0 * SUB as f64);

/// Counts of values by log-scale bucket, and the smallest and largest value.
#[derive(Debug, Clone, PartialEq)]
pub struct LogHistogram {
    counts: Vec<u64>,
    n: u64,
    min: u64,
    max: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: Vec::new(),
            n: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// The bucket of `v`: exact below 8, else 8 per power of two.
fn bucket(v: u64) -> usize {
    if v < u64::from(SUB) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 2^e <= v < 2^(e+1), e >= 3
    let mantissa = (v >> (e - 3)) & u64::from(SUB - 1);
    (SUB * (e - 2) + mantissa as u32) as usize
}

/// Smallest value of bucket `b` (`u64::MAX` past the last bucket).
fn lower(b: usize) -> u64 {
    let b = b as u32;
    if b < SUB {
        return u64::from(b);
    }
    let e = b / SUB + 2;
    if e >= 64 {
        return u64::MAX;
    }
    let m = u64::from(b % SUB);
    (1u64 << e) | (m << (e - 3))
}

/// One bucket, for output.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bucket {
    /// Smallest value of the bucket.
    pub from: u64,
    /// Values in it.
    pub count: u64,
}

impl LogHistogram {
    /// Adds one value.
    pub fn add(&mut self, v: u64) {
        let b = bucket(v);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every value of `o`.
    pub fn merge(&mut self, o: &LogHistogram) {
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.n += o.n;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
    }

    /// The smallest value added, if any.
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// The largest value added, if any.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    /// Values added.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `q`-quantile (0 to 1), as the middle of its bucket clamped into `[min, max]` of
    /// the values added (within [`REL_ERROR`] of the exact one); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        let mut mid = self.max;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = (lower(b), lower(b + 1));
                mid = lo + (hi - lo) / 2;
                break;
            }
        }
        mid.clamp(self.min, self.max)
    }

    /// The non-empty buckets.
    pub fn buckets(&self) -> Vec<Bucket> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(b, &c)| Bucket {
                from: lower(b),
                count: c,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_tile_the_integers() {
        for v in 0..10_000u64 {
            let b = bucket(v);
            assert!(lower(b) <= v && v < lower(b + 1), "{v} in bucket {b}");
        }
        assert_eq!(bucket(u64::MAX), bucket(u64::MAX - 1));
    }

    /// The calls of `MPI_Finalize` in the bundled example: four values in one wide bucket,
    /// whose middle (52,428.8 us) was above the largest value (50,606 us).
    #[test]
    fn percentiles_stay_within_the_values() {
        let mut h = LogHistogram::default();
        for v in [48_911_000, 49_377_000, 50_020_000, 50_606_000] {
            h.add(v);
        }
        assert_eq!(h.quantile(0.99), 50_606_000);
        assert!(h.quantile(0.5) >= 48_911_000);
        let mut one = LogHistogram::default();
        one.add(1000);
        assert_eq!(one.quantile(0.5), 1000);
        assert_eq!(one.quantile(0.0), 1000);
        let mut huge = LogHistogram::default();
        huge.add(u64::MAX);
        assert_eq!(huge.quantile(0.99), u64::MAX);
        assert_eq!(LogHistogram::default().quantile(0.5), 0);
    }

    proptest! {
        /// A quantile is within REL_ERROR of the exact one (nearest rank).
        #[test]
        fn quantiles_within_the_bucket_width(mut v in proptest::collection::vec(0u64..1_000_000_000, 1..300),
                                             q in 0.0f64..1.0) {
            let mut h = LogHistogram::default();
            v.iter().for_each(|&x| h.add(x));
            v.sort_unstable();
            let exact = v[((q * v.len() as f64).ceil() as usize).max(1) - 1] as f64;
            let got = h.quantile(q) as f64;
            prop_assert!((got - exact).abs() <= REL_ERROR * exact, "{} vs {}", got, exact);
        }

        /// min <= p50 <= p90 <= p99 <= max, on one histogram and on merged ones.
        #[test]
        fn percentiles_are_ordered_and_bounded(a in proptest::collection::vec(0u64..u64::MAX, 1..200),
                                               b in proptest::collection::vec(0u64..10_000_000, 0..200)) {
            let mut h = LogHistogram::default();
            a.iter().for_each(|&x| h.add(x));
            let mut o = LogHistogram::default();
            b.iter().for_each(|&x| o.add(x));
            h.merge(&o);
            let (lo, hi) = (*a.iter().chain(&b).min().unwrap(), *a.iter().chain(&b).max().unwrap());
            prop_assert_eq!((h.min(), h.max()), (Some(lo), Some(hi)));
            let p = [0.5, 0.9, 0.99].map(|q| h.quantile(q));
            prop_assert!(lo <= p[0] && p[0] <= p[1] && p[1] <= p[2] && p[2] <= hi, "{:?} in {}..{}", p, lo, hi);
        }
    }
}
