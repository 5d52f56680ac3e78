//! A log-scale histogram of non-negative integers (nanoseconds, bytes) for percentiles in
//! bounded memory: 8 buckets per power of two, so a percentile is known within 9%.

use serde::Serialize;

/// Sub-buckets per power of two.
const SUB: u32 = 8;

/// Counts of values by log-scale bucket.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogHistogram {
    counts: Vec<u64>,
    n: u64,
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

/// Smallest value of bucket `b`.
fn lower(b: usize) -> u64 {
    let b = b as u32;
    if b < SUB {
        return u64::from(b);
    }
    let e = b / SUB + 2;
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
    }

    /// Values added.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The `q`-quantile (0 to 1), as the middle of its bucket; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, hi) = (lower(b), lower(b + 1));
                return lo + (hi - lo) / 2;
            }
        }
        lower(self.counts.len())
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

    proptest! {
        /// A quantile is within 9% of the exact one.
        #[test]
        fn quantiles_within_the_bucket_width(mut v in proptest::collection::vec(1u64..1_000_000_000, 1..300),
                                             q in 0.01f64..1.0) {
            let mut h = LogHistogram::default();
            v.iter().for_each(|&x| h.add(x));
            v.sort_unstable();
            let exact = v[((q * v.len() as f64).ceil() as usize).max(1) - 1] as f64;
            let got = h.quantile(q) as f64;
            prop_assert!((got - exact).abs() <= 0.09 * exact + 1.0, "{} vs {}", got, exact);
        }
    }
}
