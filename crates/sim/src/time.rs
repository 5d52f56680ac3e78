//! Simulated time: integer picoseconds.
//!
//! Integer time gives a total order of events that does not depend on floating-point
//! rounding: `(time, sequence)` orders every event, and the same input always produces the
//! same output. 2^64 ps is 213 days of simulated time: a date that would lie beyond saturates
//! at [`Time::NEVER`], which the engine reports as a simulated time overflow.

/// A date or a duration in picoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    /// Time zero.
    pub const ZERO: Time = Time(0);
    /// The end of time (never).
    pub const NEVER: Time = Time(u64::MAX);

    /// From seconds, rounded to the nearest picosecond (saturating).
    pub fn from_secs(s: f64) -> Time {
        if s.is_nan() || s <= 0.0 {
            return Time(0);
        }
        let ps = (s * 1e12).round();
        if ps >= u64::MAX as f64 {
            Time::NEVER
        } else {
            Time(ps as u64)
        }
    }

    /// In seconds.
    pub fn secs(self) -> f64 {
        self.0 as f64 * 1e-12
    }

    /// `self + d`, saturating at [`Time::NEVER`].
    pub fn plus(self, d: Time) -> Time {
        Time(self.0.saturating_add(d.0))
    }

    /// The simulator's horizon in seconds: the dates it can represent lie below it.
    pub const HORIZON_SECS: f64 = u64::MAX as f64 * 1e-12;

    /// `self - earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Time {
        Time(self.0.saturating_sub(earlier.0))
    }
}

impl std::fmt::Display for Time {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.9}s", self.secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(Time::from_secs(1e-12), Time(1));
        assert_eq!(Time::from_secs(1.5).secs(), 1.5);
        assert_eq!(Time::from_secs(-1.0), Time::ZERO);
        assert_eq!(Time::from_secs(f64::NAN), Time::ZERO);
        assert_eq!(Time::from_secs(1e300), Time::NEVER);
        assert_eq!(Time(5).since(Time(7)), Time::ZERO);
        assert_eq!(
            Time(1).plus(Time::from_secs(Time::HORIZON_SECS)),
            Time::NEVER
        );
        assert!((Time::HORIZON_SECS / 86400.0 - 213.5).abs() < 0.1);
    }
}
