//! Conversion of clock ticks to nanoseconds since the run's epoch.
//!
//! Each rank file starts with a clock pair (ticks, CLOCK_MONOTONIC ns) and each block carries
//! the pair read when it was sealed. Ticks are converted by the line through the first pair
//! and the pair of the block being read, so the rate is measured over the whole run so far
//! and no calibration loop is needed at start-up.

use crate::info::ClockInfo;

/// Maps ticks to ns since the epoch.
#[derive(Debug, Clone)]
pub struct ClockMap {
    ticks0: u64,
    ns0: u64,
    /// ns per tick with 48 fractional bits (a multiplication per conversion, no division).
    mult: u128,
    epoch_ns: u64,
}

const FRAC: u32 = 48;
const HALF: u128 = 1 << (FRAC - 1);

fn ratio(num: u128, den: u128) -> u128 {
    (num << FRAC) / den.max(1)
}

/// Below this many ticks between two pairs the nominal rate is used instead.
const MIN_SPAN_TICKS: u64 = 1000;

impl ClockMap {
    /// A map from a rank's clock description and epoch.
    pub fn new(clock: &ClockInfo, epoch_ns: u64) -> ClockMap {
        let mult = if clock.source == "tsc" && clock.ticks_per_second > 0.0 {
            ratio(
                (1e9 / clock.ticks_per_second * 4294967296.0) as u128,
                1u128 << 32,
            )
        } else {
            1 << FRAC
        };
        ClockMap {
            ticks0: clock.sync_ticks,
            ns0: clock.sync_ns,
            mult,
            epoch_ns,
        }
    }

    /// An identity map (ticks are already ns since the epoch).
    pub fn identity() -> ClockMap {
        ClockMap {
            ticks0: 0,
            ns0: 0,
            mult: 1 << FRAC,
            epoch_ns: 0,
        }
    }

    /// Refines the rate with a later clock pair.
    pub fn update(&mut self, sync_ticks: u64, sync_ns: u64) {
        if sync_ticks > self.ticks0.saturating_add(MIN_SPAN_TICKS) && sync_ns > self.ns0 {
            self.mult = ratio(
                u128::from(sync_ns - self.ns0),
                u128::from(sync_ticks - self.ticks0),
            );
        }
    }

    /// The length in nanoseconds of a span of `ticks` clock ticks.
    #[inline]
    pub fn span_ns(&self, ticks: u64) -> u64 {
        ((u128::from(ticks) * self.mult + HALF) >> FRAC) as u64
    }

    /// Nanoseconds since the epoch (saturating at zero for times before it).
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        let mono = if ticks >= self.ticks0 {
            let d = (u128::from(ticks - self.ticks0) * self.mult + HALF) >> FRAC;
            self.ns0.saturating_add(d as u64)
        } else {
            let d = (u128::from(self.ticks0 - ticks) * self.mult + HALF) >> FRAC;
            self.ns0.saturating_sub(d as u64)
        };
        mono.saturating_sub(self.epoch_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsc_rate_from_pairs() {
        let c = ClockInfo {
            source: "tsc".into(),
            sync_ticks: 1000,
            sync_ns: 5_000,
            ticks_per_second: 2e9,
            resolution_ns: 1.0,
        };
        let mut m = ClockMap::new(&c, 4_000);
        // nominal: 2 ticks per ns
        assert_eq!(m.to_ns(1000), 1_000);
        assert_eq!(m.to_ns(3000), 2_000);
        // measured: 3 ticks per ns
        m.update(1000 + 3_000_000, 5_000 + 1_000_000);
        assert_eq!(m.to_ns(1000 + 300), 1_100);
        assert_eq!(m.to_ns(0), 1_000 - 333);
    }
}
