//! The compute-cost models of HPL's kernels (dgemm, dtrsm, the panel factorization, the
//! row-swap copies and the packing of strided messages): a calibrated platform's times
//! turned into flops at the host speed, else the kernels' flop counts.

use std::collections::BTreeMap;

use mpiscope_sim::calibration::{Calibration, KernelCost, Key};

/// Kernel time models from a calibrated platform's `[config]` (see
/// [`mpiscope_sim::calibration`]); `None`: the kernel's flop count at the host speed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Kernels {
    /// `mpiscope/dgemm`: t = a m n k + c m n + d m k + e n k (`d`, `e`: the packing of
    /// the operands per call, 0 in a two-number model).
    pub dgemm: Option<KernelCost>,
    /// `mpiscope/dtrsm`: t = b m^2 n + c m n (m the triangle's order).
    pub dtrsm: Option<KernelCost>,
    /// `mpiscope/panel`: the panel factorization of m x n, t = p n^2 (m - n/3) + c m n
    /// (its flops, then its elements).
    pub panel: Option<KernelCost>,
    /// `mpiscope/pack`: seconds per byte that a message sent from a strided layout costs
    /// beyond a contiguous one (the root's panel, which lies in the matrix, to the
    /// receivers' contiguous workspaces); `None`: neglected.
    pub pack: Option<f64>,
    /// `mpiscope/laswp`: the row gather before the row swaps' messages (HPL_dlaswp01T)
    /// moves `rows x columns` elements in `g + c` seconds each; `None`: neglected.
    pub laswp: Option<KernelCost>,
}

impl Kernels {
    /// Reads `mpiscope/dgemm`, `mpiscope/dtrsm`, `mpiscope/panel`, `mpiscope/laswp` and
    /// `mpiscope/pack` from a platform's options.
    pub fn from_config(config: &BTreeMap<String, String>) -> Result<Kernels, String> {
        let c = Calibration::read(config, &Key::KERNELS)?;
        Ok(Kernels {
            dgemm: c.dgemm,
            dtrsm: c.dtrsm,
            panel: c.panel,
            pack: c.pack,
            laswp: c.laswp,
        })
    }

    /// Flops to compute at `speed` for one dgemm call of m x n x k (the skeleton charges
    /// each call HPL makes, a chunk of the update or the whole of it, as one: the packing
    /// terms are paid per call).
    pub fn dgemm_flops(&self, m: u64, n: u64, k: u64, speed: f64) -> f64 {
        let (m, n, k) = (m as f64, n as f64, k as f64);
        match self.dgemm {
            Some(cost) => (cost.dgemm_seconds(m, n, k) * speed).max(0.0),
            None => 2.0 * m * n * k,
        }
    }

    /// Flops to compute at `speed` for one column of a panel factorization whose flops are
    /// `flops` (its rank-one update) on `rows` rows: the panel model's share of it.
    pub fn panel_column_flops(&self, flops: f64, rows: u64, speed: f64) -> f64 {
        match self.panel {
            Some(KernelCost {
                per_work: p,
                per_element: c,
                ..
            }) => ((p * flops + c * rows as f64) * speed).max(0.0),
            None => flops,
        }
    }

    /// Flops to compute at `speed` for gathering `rows` rows of `n` columns into (or
    /// exchanging them with) a row-swap workspace: 0 without `mpiscope/laswp`.
    pub fn laswp_flops(&self, rows: u64, n: u64, speed: f64) -> f64 {
        match self.laswp {
            Some(KernelCost {
                per_work: g,
                per_element: c,
                ..
            }) => ((g + c) * rows as f64 * n as f64 * speed).max(0.0),
            None => 0.0,
        }
    }

    /// Flops to compute at `speed` for a dtrsm with a triangle of order `t` and `n` columns.
    pub fn dtrsm_flops(&self, t: u64, n: u64, speed: f64) -> f64 {
        let (t, n) = (t as f64, n as f64);
        match self.dtrsm {
            Some(KernelCost {
                per_work: b,
                per_element: c,
                ..
            }) => ((b * t * t * n + c * t * n) * speed).max(0.0),
            None => t * t * n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrated_kernels_turn_seconds_into_flops() {
        let mut config = BTreeMap::new();
        config.insert("mpiscope/dgemm".to_owned(), "1e-10 2e-9".to_owned());
        config.insert("mpiscope/dtrsm".to_owned(), "3e-10 0".to_owned());
        let k = Kernels::from_config(&config).unwrap();
        assert_eq!(k.dgemm, Some(KernelCost::new(1e-10, 2e-9)));
        // dgemm 100 x 10 x 10: 1e-10 * 1e4 + 2e-9 * 1e3 = 3e-6 s, at 1 Gf/s 3000 flops.
        assert!((k.dgemm_flops(100, 10, 10, 1e9) - 3000.0).abs() < 1e-6);
        // dtrsm triangle 10, 100 columns: 3e-10 * 1e4 = 3e-6 s.
        assert!((k.dtrsm_flops(10, 100, 1e9) - 3000.0).abs() < 1e-6);
        // Without a model: the flop counts.
        assert_eq!(Kernels::default().dgemm_flops(100, 10, 10, 1e9), 20000.0);
        assert_eq!(Kernels::default().dtrsm_flops(10, 100, 1e9), 10000.0);
        // The panel model: 1e-9 s per flop and 1e-8 s per element, at 1 Gf/s.
        assert_eq!(k.panel, None);
        assert_eq!(k.panel_column_flops(5000.0, 100, 1e9), 5000.0);
        config.insert("mpiscope/panel".to_owned(), "1e-9 1e-8".to_owned());
        let k = Kernels::from_config(&config).unwrap();
        assert!((k.panel_column_flops(5000.0, 100, 1e9) - 6000.0).abs() < 1e-6);
        config.insert("mpiscope/dtrsm".to_owned(), "fast".to_owned());
        assert!(Kernels::from_config(&config)
            .unwrap_err()
            .contains("mpiscope/dtrsm"));
    }

    /// The packing terms: `d m k` and `e n k` seconds added per call.
    #[test]
    fn dgemm_packing_terms_are_paid_per_call() {
        let mut config = BTreeMap::new();
        config.insert(
            "mpiscope/dgemm".to_owned(),
            "1e-10 2e-9 3e-9 4e-9".to_owned(),
        );
        let k = Kernels::from_config(&config).unwrap();
        // 100 x 10 x 10: 1e-6 + 2e-6 + 3e-6 (m k = 1000) + 4e-7 (n k = 100) = 6.4e-6 s.
        assert!((k.dgemm_flops(100, 10, 10, 1e9) - 6400.0).abs() < 1e-6);
        // Two chunks of 5 columns pay A's packing twice, B's once in all.
        let halves = 2.0 * k.dgemm_flops(100, 5, 10, 1e9);
        assert!((halves - 6400.0 - 3000.0).abs() < 1e-6, "{halves}");
    }

    proptest::proptest! {
        /// A two-number `mpiscope/dgemm` gives exactly the flops of the model before the
        /// packing terms, `(a m n k + c m n) speed`, bit for bit.
        #[test]
        fn two_number_dgemm_is_the_old_model(a in 1e-12f64..1e-9, c in -1e-9f64..1e-8,
                                             m in 1u64..20_000, n in 1u64..20_000,
                                             k in 1u64..1024, speed in 1e8f64..1e12) {
            let mut config = BTreeMap::new();
            config.insert("mpiscope/dgemm".to_owned(), format!("{a:e} {c:e}"));
            let got = Kernels::from_config(&config).unwrap().dgemm_flops(m, n, k, speed);
            let (m, n, k) = (m as f64, n as f64, k as f64);
            let old = ((a * m * n * k + c * m * n) * speed).max(0.0);
            proptest::prop_assert_eq!(got.to_bits(), old.to_bits());
        }
    }
}
