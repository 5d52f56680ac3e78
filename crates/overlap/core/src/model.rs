//! The overlap model of [Li 2010] (section 3 and formula 3) and the two usual ways of
//! measuring overlap.
//!
//! A collective that takes `t_comm` is followed by computation: first `t_curc` that touches
//! no received byte (communication-unrelated), then `t_crc` that consumes the received data
//! in the order it arrives (communication-related). Returning after `t_init`, T-NBC hides at
//! most `min(t_comm - t_init, t_curc + t_comm * r_comm / r_crc)`; with `r_comm = D / t_comm`
//! and `r_crc = D / t_crc` the second term is `t_curc + t_crc`.

/// Time T-NBC can hide (seconds or any unit, all arguments alike); never negative.
pub fn hidden(t_comm: f64, t_init: f64, t_curc: f64, t_crc: f64) -> f64 {
    (t_comm - t_init).min(t_curc + t_crc).max(0.0)
}

/// The adaptive policy's starting estimate of what overlapping a call costs T-NBC, in
/// microseconds: a fixed part and a part per MiB of the call's send and receive regions.
/// Of the order a probe measures on shared memory (docs/BENCHMARKS.md, "T-NBC: doing no
/// harm"); `MPISCOPE_OVERLAP_COST_US` (`mpiscope overlap --cost`) replaces it.
pub const DEFAULT_COST_US: (f64, f64) = (30.0, 50.0);

/// Parses a cost `FIXED[,PER_MIB]` in microseconds (the per-MiB part 0 when absent); `None`
/// unless both are finite and non-negative.
pub fn parse_cost_us(s: &str) -> Option<(f64, f64)> {
    let mut it = s.split(',').map(|p| p.trim().parse::<f64>().ok());
    let fixed = it.next()??;
    let per_mib = it.next().unwrap_or(Some(0.0))?;
    (it.next().is_none() && [fixed, per_mib].iter().all(|v| v.is_finite() && *v >= 0.0))
        .then_some((fixed, per_mib))
}

/// Overlap the OSU way, percent: `100 * max(0, 1 - (t_ovrl - t_cpu) / t_pure)` with `t_pure`
/// the collective alone, `t_cpu` the computation alone, `t_ovrl` both.
pub fn osu_percent(t_pure: f64, t_cpu: f64, t_ovrl: f64) -> f64 {
    if t_pure <= 0.0 {
        return 0.0;
    }
    (100.0 * (1.0 - (t_ovrl - t_cpu) / t_pure)).max(0.0)
}

/// Overlap the IMB way, percent: `100 * (t_pure + t_cpu - t_ovrl) / min(t_pure, t_cpu)`
/// (may be negative when overlapping costs more than it hides).
pub fn imb_percent(t_pure: f64, t_cpu: f64, t_ovrl: f64) -> f64 {
    let lo = t_pure.min(t_cpu);
    if lo <= 0.0 {
        return 0.0;
    }
    100.0 * (t_pure + t_cpu - t_ovrl) / lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [Li 2010]'s Table 1 cases (T_comm = 268 ms, T_init = 60 ms).
    #[test]
    fn seed_scenarios() {
        // (a) T_CURC >= T_comm: everything but the initialisation.
        assert_eq!(hidden(268.0, 60.0, 445.0, 0.0), 208.0);
        // (c) no CURC, CRC faster than the data: the CRC time.
        assert_eq!(hidden(268.0, 60.0, 0.0, 175.0), 175.0);
        // (e) CURC then fast CRC.
        assert_eq!(hidden(268.0, 60.0, 177.0, 175.0), 208.0);
        assert_eq!(hidden(10.0, 20.0, 5.0, 0.0), 0.0);
    }

    #[test]
    fn costs_parse_or_are_refused() {
        assert_eq!(parse_cost_us("30,50"), Some((30.0, 50.0)));
        assert_eq!(parse_cost_us(" 0 "), Some((0.0, 0.0)));
        assert_eq!(parse_cost_us("1e3, 2.5"), Some((1000.0, 2.5)));
        for bad in ["", ",", "-1", "1,-2", "1,2,3", "x", "nan", "inf,1"] {
            assert_eq!(parse_cost_us(bad), None, "{bad}");
        }
    }

    #[test]
    fn osu_and_imb_agree_when_computation_is_longer() {
        assert!((osu_percent(1.0, 2.0, 2.2) - 80.0).abs() < 1e-9);
        assert!((imb_percent(1.0, 2.0, 2.2) - 80.0).abs() < 1e-9);
        assert_eq!(osu_percent(1.0, 2.0, 4.0), 0.0);
        assert!(imb_percent(1.0, 2.0, 4.0) < 0.0);
    }
}
