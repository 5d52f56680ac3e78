//! Compute calibration ([Cornebize 2017]): BLAS kernel times fitted by [Cornebize 2017]'s one-term models,
//! the dgemm time `t = a m n k` and the dtrsm time `t = b m^2 n` (triangle order `m`, `n`
//! right-hand sides), and by the same plus the lower-order term `c m n` (the pass over the
//! output matrix, which dominates thin products and small triangles), by least squares on
//! relative errors so that small and large calls weigh alike. R^2 (on times) and the
//! largest relative error say how well each model holds; `2 / a` is the host's dgemm speed
//! in flop/s, what a platform's `speed` means to the simulator.

use serde::{Deserialize, Serialize};

use mpiscope_sim::calibration::{KernelCost, Key};

use crate::CalibrationError;

/// A timed BLAS kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kernel {
    /// `C = A B + C`, `A` m x k, `B` k x n.
    Dgemm,
    /// `B = L^-1 B`, `L` a triangle of order m, `B` m x n.
    Dtrsm,
    /// LU factorization with partial pivoting of an m x n panel (HPL's panel
    /// factorization on one process: recursive halving, BLAS-2 below four columns).
    Panel,
    /// HPL's row gather (HPL_dlaswp01T): m rows scattered over a column-major matrix of
    /// leading dimension k copied, n columns each, into a workspace that holds them
    /// transposed. Memory-bound: its work is the `m n` elements moved.
    Laswp,
}

impl Kernel {
    /// The kernel's name in options and reports (`mpiscope/<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Dgemm => "dgemm",
            Kernel::Dtrsm => "dtrsm",
            Kernel::Panel => "panel",
            Kernel::Laswp => "laswp",
        }
    }

    /// The platform key its model is written under (`mpiscope/<name>`).
    pub fn key(self) -> Key {
        match self {
            Kernel::Dgemm => Key::Dgemm,
            Kernel::Dtrsm => Key::Dtrsm,
            Kernel::Panel => Key::Panel,
            Kernel::Laswp => Key::Laswp,
        }
    }

    /// The fitted model's variable, as text.
    pub fn work_text(self) -> &'static str {
        match self {
            Kernel::Dgemm => "m n k",
            Kernel::Dtrsm => "m^2 n",
            Kernel::Panel => "n^2 (m - n/3)",
            Kernel::Laswp => "m n",
        }
    }

    /// The fitted model's variable: `m n k` for dgemm, `m^2 n` for dtrsm, the flops of an
    /// LU of an m x n panel, `n^2 (m - n/3)`, for the panel.
    pub fn work(self, m: u64, n: u64, k: u64) -> f64 {
        match self {
            Kernel::Dgemm => m as f64 * n as f64 * k as f64,
            Kernel::Dtrsm => m as f64 * m as f64 * n as f64,
            Kernel::Panel => (n as f64).powi(2) * (m as f64 - n as f64 / 3.0).max(0.0),
            Kernel::Laswp => m as f64 * n as f64,
        }
    }

    /// The lower-order term's variable: `m n`, the output matrix's elements.
    pub fn elements(self, m: u64, n: u64) -> f64 {
        m as f64 * n as f64
    }

    /// Floating-point operations per unit of `work` (2 m n k for dgemm, m^2 n for dtrsm).
    pub fn flops_per_work(self) -> f64 {
        match self {
            Kernel::Dgemm => 2.0,
            Kernel::Dtrsm | Kernel::Panel | Kernel::Laswp => 1.0,
        }
    }

    /// What the rate `flops_per_work / seconds_per_work` counts: flop/s, or elements moved
    /// per second for the row gather.
    pub fn rate_unit(self) -> &'static str {
        match self {
            Kernel::Laswp => "G elements/s",
            _ => "Gflop/s",
        }
    }
}

/// One timed call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KernelSample {
    /// Which kernel.
    pub kernel: Kernel,
    /// Rows (dgemm) or triangle order (dtrsm).
    pub m: u64,
    /// Columns.
    pub n: u64,
    /// Inner dimension (dgemm; 0 for dtrsm).
    pub k: u64,
    /// Median time of one call, seconds.
    pub seconds: f64,
}

/// The fitted model of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KernelFit {
    /// Which kernel.
    pub kernel: Kernel,
    /// Seconds per unit of work (`a` of `a m n k`, `b` of `b m^2 n`).
    pub seconds_per_work: f64,
    /// Seconds per output element (`c` of the `c m n` term; 0 in the one-term model).
    pub seconds_per_element: f64,
    /// The kernel's speed in flop/s under the model.
    pub flops: f64,
    /// Coefficient of determination on times.
    pub r2: f64,
    /// Largest relative error over the samples.
    pub max_error: f64,
    /// Samples used.
    pub samples: usize,
}

/// Fits `t = a work` (`lower_order` false, [Cornebize 2017]'s model) or `t = a work + c m n` to the
/// samples of `kernel`, minimizing the squared relative errors. A negative `c` (the data do
/// not support the term) falls back to the one-term model.
pub fn fit_kernel(
    samples: &[KernelSample],
    kernel: Kernel,
    lower_order: bool,
) -> Result<KernelFit, CalibrationError> {
    // Each sample divided by its time: the model must give 1 at (u1, u2).
    let pts: Vec<(f64, f64, f64)> = samples
        .iter()
        .filter(|s| s.kernel == kernel && s.seconds > 0.0)
        .map(|s| {
            (
                kernel.work(s.m, s.n, s.k),
                kernel.elements(s.m, s.n),
                s.seconds,
            )
        })
        .filter(|p| p.0 > 0.0)
        .collect();
    if pts.len() < 2 {
        return Err(CalibrationError::Data(format!(
            "{} timed {kernel:?} calls: at least 2 shapes are needed",
            pts.len()
        )));
    }
    let (mut s11, mut s12, mut s22, mut s1, mut s2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x1, x2, t) in &pts {
        let (u1, u2) = (x1 / t, x2 / t);
        s11 += u1 * u1;
        s12 += u1 * u2;
        s22 += u2 * u2;
        s1 += u1;
        s2 += u2;
    }
    let det = s11 * s22 - s12 * s12;
    let (mut a, mut c) = (s1 / s11, 0.0);
    if lower_order && det > 1e-12 * s11 * s22 {
        let (a2, c2) = ((s1 * s22 - s2 * s12) / det, (s11 * s2 - s12 * s1) / det);
        if a2 > 0.0 && c2 >= 0.0 {
            (a, c) = (a2, c2);
        }
    }
    let model = |x1: f64, x2: f64| a * x1 + c * x2;
    let mean = pts.iter().map(|p| p.2).sum::<f64>() / pts.len() as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.2 - mean).powi(2)).sum();
    let ss_res: f64 = pts.iter().map(|p| (p.2 - model(p.0, p.1)).powi(2)).sum();
    let max_error = pts
        .iter()
        .map(|p| (model(p.0, p.1) - p.2).abs() / p.2)
        .fold(0.0, f64::max);
    Ok(KernelFit {
        kernel,
        seconds_per_work: a,
        seconds_per_element: c,
        flops: kernel.flops_per_work() / a,
        r2: if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        },
        max_error,
        samples: pts.len(),
    })
}

impl KernelFit {
    /// The fitted model as the simulator reads it.
    pub fn cost(&self) -> KernelCost {
        KernelCost {
            per_work: self.seconds_per_work,
            per_element: self.seconds_per_element,
        }
    }
}

/// The host's compute model: the dgemm fit (its speed is the host's) and the dtrsm fit
/// when dtrsm was timed, both with the lower-order term, plus [Cornebize 2017]'s one-term fits for
/// comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeModel {
    /// `t = a m n k + c m n`.
    pub dgemm: KernelFit,
    /// `t = b m^2 n + c m n`.
    pub dtrsm: Option<KernelFit>,
    /// `t = a m n k` ([Cornebize 2017]'s model).
    pub dgemm_one_term: KernelFit,
    /// `t = b m^2 n`.
    pub dtrsm_one_term: Option<KernelFit>,
    /// `t = p n^2 (m - n/3) + c m n` (the panel factorization, when timed).
    pub panel: Option<KernelFit>,
    /// `t = p n^2 (m - n/3)`.
    pub panel_one_term: Option<KernelFit>,
    /// `t = g m n` (the row gather, when timed; its two-term model is the same).
    pub laswp: Option<KernelFit>,
    /// Per-core dgemm speed with 1, 2, ... cores busy, relative to one (empty: not
    /// measured). Written as `mpiscope/core-efficiency`.
    pub core_efficiency: Vec<f64>,
}

impl ComputeModel {
    /// Fits both kernels; dgemm samples are required, dtrsm ones optional.
    pub fn fit(samples: &[KernelSample]) -> Result<ComputeModel, CalibrationError> {
        Ok(ComputeModel {
            dgemm: fit_kernel(samples, Kernel::Dgemm, true)?,
            dtrsm: fit_kernel(samples, Kernel::Dtrsm, true).ok(),
            dgemm_one_term: fit_kernel(samples, Kernel::Dgemm, false)?,
            dtrsm_one_term: fit_kernel(samples, Kernel::Dtrsm, false).ok(),
            panel: fit_kernel(samples, Kernel::Panel, true).ok(),
            panel_one_term: fit_kernel(samples, Kernel::Panel, false).ok(),
            laswp: fit_kernel(samples, Kernel::Laswp, false).ok(),
            core_efficiency: Vec::new(),
        })
    }

    /// The fits, dgemm first, each with its one-term counterpart.
    pub fn fits(&self) -> impl Iterator<Item = (&KernelFit, &KernelFit)> {
        std::iter::once((&self.dgemm, &self.dgemm_one_term))
            .chain(self.dtrsm.as_ref().zip(self.dtrsm_one_term.as_ref()))
            .chain(self.panel.as_ref().zip(self.panel_one_term.as_ref()))
            .chain(self.laswp.as_ref().map(|f| (f, f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(kernel: Kernel, m: u64, n: u64, k: u64, seconds: f64) -> KernelSample {
        KernelSample {
            kernel,
            m,
            n,
            k,
            seconds,
        }
    }

    #[test]
    fn exact_model_is_recovered() {
        let a = 2.0 / 20e9; // 20 Gflop/s
        let s: Vec<KernelSample> = [(64, 64, 64), (512, 512, 64), (1024, 1024, 1024)]
            .iter()
            .map(|&(m, n, k)| sample(Kernel::Dgemm, m, n, k, a * (m * n * k) as f64))
            .chain([sample(
                Kernel::Dtrsm,
                64,
                1024,
                0,
                1e-9 * (64.0 * 64.0 * 1024.0),
            )])
            .chain([sample(
                Kernel::Dtrsm,
                128,
                1024,
                0,
                1e-9 * (128.0 * 128.0 * 1024.0),
            )])
            .collect();
        for lower in [false, true] {
            let f = fit_kernel(&s, Kernel::Dgemm, lower).unwrap();
            assert!((f.flops / 20e9 - 1.0).abs() < 1e-9, "{f:?}");
            assert!(f.r2 > 0.999_999_999 && f.max_error < 1e-9 && f.samples == 3);
            assert!(f.seconds_per_element.abs() < 1e-20, "{f:?}");
            let t = fit_kernel(&s, Kernel::Dtrsm, lower).unwrap();
            assert!((t.seconds_per_work / 1e-9 - 1.0).abs() < 1e-9 && t.samples == 2);
        }
    }

    #[test]
    fn lower_order_term_is_recovered() {
        // 2e-11 s per m n k and 1e-9 s per output element: thin products pay the latter.
        let shapes = [
            (64u64, 64u64, 64u64),
            (512, 512, 8),
            (512, 512, 256),
            (1024, 256, 32),
        ];
        let s: Vec<KernelSample> = shapes
            .iter()
            .map(|&(m, n, k)| {
                let t = 2e-11 * (m * n * k) as f64 + 1e-9 * (m * n) as f64;
                sample(Kernel::Dgemm, m, n, k, t)
            })
            .collect();
        let f = fit_kernel(&s, Kernel::Dgemm, true).unwrap();
        assert!((f.seconds_per_work / 2e-11 - 1.0).abs() < 1e-9, "{f:?}");
        assert!((f.seconds_per_element / 1e-9 - 1.0).abs() < 1e-9, "{f:?}");
        assert!(f.max_error < 1e-9);
        let one = fit_kernel(&s, Kernel::Dgemm, false).unwrap();
        assert!(one.max_error > 0.1 && one.r2 < f.r2, "{one:?}");
        let m = ComputeModel::fit(&s).unwrap();
        assert_eq!(m.fits().count(), 1);
    }

    #[test]
    fn kernels_are_written_under_their_names() {
        for k in [Kernel::Dgemm, Kernel::Dtrsm, Kernel::Panel, Kernel::Laswp] {
            assert_eq!(k.key().name(), format!("mpiscope/{}", k.name()));
        }
    }

    #[test]
    fn too_few_samples_is_an_error() {
        let s = [sample(Kernel::Dgemm, 8, 8, 8, 1e-6)];
        let e = fit_kernel(&s, Kernel::Dgemm, true).unwrap_err().to_string();
        assert!(e.contains("at least 2 shapes"), "{e}");
        assert!(fit_kernel(&s, Kernel::Dtrsm, false).is_err());
        assert!(ComputeModel::fit(&s).is_err());
    }

    proptest! {
        /// With noise of at most 5% the fitted rate is within 5% and every error within 10%.
        #[test]
        fn noisy_fit_stays_within_the_noise(rate in 1e9f64..1e11,
                                            noise in proptest::collection::vec(-0.05f64..0.05, 8)) {
            let shapes = [32u64, 64, 128, 256, 384, 512, 768, 1024];
            let s: Vec<KernelSample> = shapes.iter().zip(&noise).map(|(&d, e)| {
                sample(Kernel::Dgemm, d, d, d, 2.0 * (d * d * d) as f64 / rate * (1.0 + e))
            }).collect();
            let f = fit_kernel(&s, Kernel::Dgemm, false).unwrap();
            prop_assert!((f.flops / rate - 1.0).abs() < 0.06, "{:?}", f);
            prop_assert!(f.max_error < 0.11);
        }
    }
}
