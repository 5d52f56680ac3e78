//! Axes: a linear or logarithmic map from values to `[0, 1]`, and the ticks a reader needs
//! to read values back (round numbers on a linear axis, decades or powers of two on a log
//! axis, or the values given).

/// How an axis maps its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Linear.
    Linear,
    /// Logarithmic, ticks at powers of ten.
    Log10,
    /// Logarithmic, ticks at powers of two (rank counts).
    Log2,
}

/// A numeric axis from `lo` to `hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// Smallest value shown.
    pub lo: f64,
    /// Largest value shown.
    pub hi: f64,
    /// How values are mapped.
    pub kind: Kind,
    /// Ticks to draw instead of the computed ones.
    pub fixed_ticks: Option<Vec<f64>>,
}

impl Scale {
    /// A linear axis over `values`, from zero (or the smallest negative value) to a little
    /// above the largest.
    pub fn linear(values: impl IntoIterator<Item = f64>) -> Scale {
        let (lo, hi) = range(values);
        if !lo.is_finite() {
            return Scale::fixed(0.0, 1.0, Kind::Linear);
        }
        let lo = lo.min(0.0);
        let hi = if hi <= lo { lo + 1.0 } else { hi * 1.05 };
        Scale::fixed(lo, hi, Kind::Linear)
    }

    /// A log10 axis over the positive `values`, widened to whole decades.
    pub fn log10(values: impl IntoIterator<Item = f64>) -> Scale {
        let (lo, hi) = range(values.into_iter().filter(|v| *v > 0.0));
        if !lo.is_finite() {
            return Scale::fixed(1.0, 10.0, Kind::Log10);
        }
        let (a, b) = (lo.log10().floor(), hi.log10().ceil());
        let b = if b <= a { a + 1.0 } else { b };
        Scale::fixed(10f64.powf(a), 10f64.powf(b), Kind::Log10)
    }

    /// A log2 axis over the positive `values`, ticks at the values themselves (rank counts
    /// of the runs compared).
    pub fn log2_at(values: &[f64]) -> Scale {
        let pos: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
        let (lo, hi) = range(pos.iter().copied());
        if !lo.is_finite() {
            return Scale::fixed(1.0, 2.0, Kind::Log2);
        }
        let (lo, hi) = if hi > lo {
            (lo / 1.25, hi * 1.25)
        } else {
            (lo / 2.0, hi * 2.0)
        };
        let mut s = Scale::fixed(lo, hi, Kind::Log2);
        let mut ticks = pos;
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        s.fixed_ticks = Some(ticks);
        s
    }

    /// A log10 axis when the positive values span `ratio` or more, else linear.
    pub fn auto(values: impl IntoIterator<Item = f64> + Clone, ratio: f64) -> Scale {
        let (lo, hi) = range(values.clone());
        if lo > 0.0 && hi / lo >= ratio {
            Scale::log10(values)
        } else {
            Scale::linear(values)
        }
    }

    /// An axis of given bounds.
    pub fn fixed(lo: f64, hi: f64, kind: Kind) -> Scale {
        Scale {
            lo,
            hi,
            kind,
            fixed_ticks: None,
        }
    }

    /// Whether the axis is logarithmic.
    pub fn is_log(&self) -> bool {
        self.kind != Kind::Linear
    }

    /// Whether `v` can be drawn (a log axis cannot show zero or less).
    pub fn shows(&self, v: f64) -> bool {
        v.is_finite() && (!self.is_log() || v > 0.0)
    }

    /// Position of `v` in `[0, 1]` (outside when `v` is outside the axis).
    pub fn at(&self, v: f64) -> f64 {
        if self.is_log() {
            let (a, b) = (self.lo.ln(), self.hi.ln());
            (v.max(f64::MIN_POSITIVE).ln() - a) / (b - a)
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// The ticks: round values on a linear axis, powers of ten or two on a log axis.
    pub fn ticks(&self) -> Vec<f64> {
        if let Some(t) = &self.fixed_ticks {
            return t.clone();
        }
        match self.kind {
            Kind::Log10 => {
                let (a, b) = (
                    self.lo.log10().round() as i32,
                    self.hi.log10().round() as i32,
                );
                (a..=b).map(|e| 10f64.powi(e)).collect()
            }
            Kind::Log2 => {
                let (a, b) = (self.lo.log2().ceil() as i32, self.hi.log2().floor() as i32);
                (a..=b).map(|e| 2f64.powi(e)).collect()
            }
            Kind::Linear => {
                let span = self.hi - self.lo;
                let raw = span / 5.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 6.0)
                    .unwrap_or(10.0 * mag);
                let mut t = (self.lo / step).ceil() * step;
                let mut out = Vec::new();
                while t <= self.hi + step * 1e-9 && out.len() < 50 {
                    out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
                    t += step;
                }
                out
            }
        }
    }

    /// `" (log scale)"` on a log axis, for its title.
    pub fn note(&self) -> &'static str {
        if self.is_log() {
            " (log scale)"
        } else {
            ""
        }
    }
}

/// Smallest and largest finite value (infinite when there is none).
fn range(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_and_linear_ticks() {
        let s = Scale::log10([0.1, 1.0, 10.0]);
        assert!(s.is_log());
        assert_eq!(s.ticks(), vec![0.1, 1.0, 10.0]);
        assert!((s.at(1.0) - 0.5).abs() < 1e-12);
        let s = Scale::linear([1.0, 3.0]);
        assert_eq!(s.ticks().first(), Some(&0.0));
        assert!(s.ticks().iter().all(|t| *t <= s.hi));
        let s = Scale::auto([1.0, 3.0], 20.0);
        assert!(!s.is_log());
        let s = Scale::auto([1.0, 300.0], 20.0);
        assert!(s.is_log());
        let r = Scale::log2_at(&[4.0, 16.0, 64.0]);
        assert_eq!(r.ticks(), vec![4.0, 16.0, 64.0]);
        assert!((r.at(16.0) - 0.5).abs() < 1e-9);
        assert!(!r.shows(0.0) && r.shows(1.0));
        // No values: a usable axis all the same.
        assert_eq!(Scale::log10([]).ticks(), vec![1.0, 10.0]);
    }
}
