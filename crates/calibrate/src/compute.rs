//! Compute calibration ([Cornebize 2017]): BLAS kernel times fitted by [Cornebize 2017]'s one-term models,
//! the dgemm time `t = a m n k` and the dtrsm time `t = b m^2 n` (triangle order `m`, `n`
//! right-hand sides), and by the same plus the lower-order term `c m n` (the pass over the
//! output matrix, which dominates thin products and small triangles), by least squares on
//! relative errors so that small and large calls weigh alike. dgemm's model written adds
//! two terms, `d m k + e n k`: the packing of `A` and `B` into OpenBLAS's buffers that every
//! call makes, which HPL's update pays once per NB-wide chunk (`m x NB x NB` products of
//! operands inside the local matrix run well below the rate of large compact products).
//! Every fit is non-negative least squares (`nnls`): a term the data do not support is 0.
//! R^2 (on times) and the largest relative error, over all shapes and over those in HPL's
//! layout, say how well each model holds; `2 / a` is the host's dgemm speed in flop/s,
//! what a platform's `speed` means to the simulator.

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
    /// dgemm in HPL's layout: the output is `m x n` of a column-major matrix of `ld` rows
    /// (its leading dimension), as HPL's update writes into the local matrix; 0: every
    /// operand compact (leading dimension its own rows).
    #[serde(default)]
    pub ld: u64,
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
    /// dgemm's seconds per element of `A` (`d` of `d m k`; 0 without the packing terms).
    pub seconds_per_a_element: f64,
    /// dgemm's seconds per element of `B` (`e` of `e n k`; 0 without the packing terms).
    pub seconds_per_b_element: f64,
    /// The kernel's speed in flop/s under the model.
    pub flops: f64,
    /// Coefficient of determination on times.
    pub r2: f64,
    /// Largest relative error over the samples.
    pub max_error: f64,
    /// Largest relative error over the samples taken inside a larger matrix (HPL's
    /// layout, [`KernelSample::ld`] set); `None` without such samples.
    pub max_error_in_matrix: Option<f64>,
    /// Samples used.
    pub samples: usize,
}

/// The terms of a kernel model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terms {
    /// `t = a work` ([Cornebize 2017]'s model).
    Work,
    /// `t = a work + c m n`: plus the pass over the output.
    Output,
    /// dgemm's `t = a m n k + c m n + d m k + e n k`: plus the packing of `A` (m x k) and
    /// `B` (k x n) that OpenBLAS makes on every call. Other kernels have no such terms and
    /// get [`Terms::Output`]'s model.
    Packing,
}

impl Terms {
    /// The model's variables for one call of `kernel` (`work`, then `m n`, `m k`, `n k`).
    fn values(self, kernel: Kernel, m: u64, n: u64, k: u64) -> Vec<f64> {
        let (mf, nf, kf) = (m as f64, n as f64, k as f64);
        let mut v = vec![kernel.work(m, n, k)];
        if self != Terms::Work {
            v.push(kernel.elements(m, n));
        }
        if self == Terms::Packing && kernel == Kernel::Dgemm {
            v.extend([mf * kf, nf * kf]);
        }
        v
    }
}

/// Fits `t = a work` (`lower_order` false, [Cornebize 2017]'s model) or `t = a work + c m n` to the
/// samples of `kernel`, minimizing the squared relative errors with every term
/// non-negative (see [`fit_terms`]).
pub fn fit_kernel(
    samples: &[KernelSample],
    kernel: Kernel,
    lower_order: bool,
) -> Result<KernelFit, CalibrationError> {
    let terms = if lower_order {
        Terms::Output
    } else {
        Terms::Work
    };
    fit_terms(samples, kernel, terms)
}

/// Fits the model of `terms` to the samples of `kernel` by non-negative least squares on
/// relative errors: each sample divided by its time, the model must give 1, so small and
/// large calls weigh alike; a term the data do not support (it would come out negative)
/// is left out (0), and the rate term is always in.
pub fn fit_terms(
    samples: &[KernelSample],
    kernel: Kernel,
    terms: Terms,
) -> Result<KernelFit, CalibrationError> {
    let used: Vec<&KernelSample> = samples
        .iter()
        .filter(|s| s.kernel == kernel && s.seconds > 0.0 && s.seconds.is_finite())
        .filter(|s| kernel.work(s.m, s.n, s.k) > 0.0)
        .collect();
    if used.len() < 2 {
        return Err(CalibrationError::Data(format!(
            "{} timed {kernel:?} calls: at least 2 shapes are needed",
            used.len()
        )));
    }
    let vars: Vec<Vec<f64>> = used
        .iter()
        .map(|s| terms.values(kernel, s.m, s.n, s.k))
        .collect();
    let rows: Vec<Vec<f64>> = vars
        .iter()
        .zip(&used)
        .map(|(v, s)| v.iter().map(|x| x / s.seconds).collect())
        .collect();
    let (b, _) = crate::nnls::nnls(&rows, &vec![1.0; rows.len()]).ok_or_else(|| {
        CalibrationError::Data(format!("no positive {kernel:?} rate fits the timings"))
    })?;
    let coef = |i: usize| b.get(i).copied().unwrap_or(0.0);
    let model = |v: &[f64]| v.iter().zip(&b).map(|(x, c)| x * c).sum::<f64>();
    let times: Vec<f64> = used.iter().map(|s| s.seconds).collect();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    let ss_tot: f64 = times.iter().map(|t| (t - mean).powi(2)).sum();
    let ss_res: f64 = vars
        .iter()
        .zip(&times)
        .map(|(v, t)| (t - model(v)).powi(2))
        .sum();
    let errors: Vec<(bool, f64)> = vars
        .iter()
        .zip(&used)
        .map(|(v, s)| (s.ld > 0, (model(v) - s.seconds).abs() / s.seconds))
        .collect();
    let in_matrix = errors.iter().filter(|e| e.0).map(|e| e.1);
    Ok(KernelFit {
        kernel,
        seconds_per_work: coef(0),
        seconds_per_element: coef(1),
        seconds_per_a_element: coef(2),
        seconds_per_b_element: coef(3),
        flops: kernel.flops_per_work() / coef(0),
        r2: if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        },
        max_error: errors.iter().map(|e| e.1).fold(0.0, f64::max),
        max_error_in_matrix: in_matrix.reduce(f64::max),
        samples: used.len(),
    })
}

impl KernelFit {
    /// The fitted model as text: `t = a work + c m n`, then dgemm's packing terms when
    /// the fit has them.
    pub fn model_text(&self) -> String {
        let mut s = format!(
            "t = {:.4e} {} + {:.3e} m n",
            self.seconds_per_work,
            self.kernel.work_text(),
            self.seconds_per_element
        );
        if self.seconds_per_a_element != 0.0 || self.seconds_per_b_element != 0.0 {
            s += &format!(
                " + {:.3e} m k + {:.3e} n k",
                self.seconds_per_a_element, self.seconds_per_b_element
            );
        }
        s
    }

    /// The largest relative error, as text: `12.3%`, and `(4.5% in HPL's layout)` when
    /// shapes in that layout were timed.
    pub fn error_text(&self) -> String {
        let mut s = format!("{:.1}%", self.max_error * 100.0);
        if let Some(e) = self.max_error_in_matrix {
            s += &format!(" ({:.1}% in HPL's layout)", e * 100.0);
        }
        s
    }

    /// The fitted model as the simulator reads it.
    pub fn cost(&self) -> KernelCost {
        KernelCost {
            per_work: self.seconds_per_work,
            per_element: self.seconds_per_element,
            per_a_element: self.seconds_per_a_element,
            per_b_element: self.seconds_per_b_element,
        }
    }
}

/// The host's compute model: the dgemm fit with its packing terms (its speed is the
/// host's) and the dtrsm fit when dtrsm was timed, with the lower-order term, plus the
/// simpler fits for comparison (dgemm's two-term model is what calibrations wrote before
/// the packing terms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComputeModel {
    /// `t = a m n k + c m n + d m k + e n k` ([`Terms::Packing`]).
    pub dgemm: KernelFit,
    /// `t = a m n k + c m n`.
    pub dgemm_two_term: KernelFit,
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
            dgemm: fit_terms(samples, Kernel::Dgemm, Terms::Packing)?,
            dgemm_two_term: fit_kernel(samples, Kernel::Dgemm, true)?,
            dtrsm: fit_kernel(samples, Kernel::Dtrsm, true).ok(),
            dgemm_one_term: fit_kernel(samples, Kernel::Dgemm, false)?,
            dtrsm_one_term: fit_kernel(samples, Kernel::Dtrsm, false).ok(),
            panel: fit_kernel(samples, Kernel::Panel, true).ok(),
            panel_one_term: fit_kernel(samples, Kernel::Panel, false).ok(),
            laswp: fit_kernel(samples, Kernel::Laswp, false).ok(),
            core_efficiency: Vec::new(),
        })
    }

    /// The fits written, dgemm first, each with its one-term counterpart.
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
            ld: 0,
        }
    }

    /// HPL's update shapes in its layout (`m` local rows by NB-wide chunks or whole widths,
    /// `k = NB`) and a few squares.
    fn hpl_shapes() -> Vec<(u64, u64, u64)> {
        let mut v = vec![(256, 256, 256), (1024, 1024, 1024)];
        for k in [64, 128] {
            for m in [256, 1024, 2048] {
                for n in [k, 512, 2048] {
                    v.push((m, n, k));
                }
            }
        }
        v
    }

    #[test]
    fn packing_terms_are_recovered() {
        // 2e-11 s per m n k, 3e-10 per m n, 1e-9 per element of A, 2e-9 per element of B.
        let t = |m: u64, n: u64, k: u64| {
            let (m, n, k) = (m as f64, n as f64, k as f64);
            2e-11 * m * n * k + 3e-10 * m * n + 1e-9 * m * k + 2e-9 * n * k
        };
        let s: Vec<KernelSample> = hpl_shapes()
            .into_iter()
            .map(|(m, n, k)| KernelSample {
                ld: 2048,
                ..sample(Kernel::Dgemm, m, n, k, t(m, n, k))
            })
            .collect();
        let f = fit_terms(&s, Kernel::Dgemm, Terms::Packing).unwrap();
        for (got, want) in [
            (f.seconds_per_work, 2e-11),
            (f.seconds_per_element, 3e-10),
            (f.seconds_per_a_element, 1e-9),
            (f.seconds_per_b_element, 2e-9),
        ] {
            assert!((got / want - 1.0).abs() < 1e-6, "{f:?}");
        }
        assert!(f.max_error < 1e-9 && f.max_error_in_matrix.unwrap() < 1e-9);
        // The two-term model cannot follow the chunks: its errors are the packing's.
        let two = fit_kernel(&s, Kernel::Dgemm, true).unwrap();
        assert!(two.max_error > 0.05, "{two:?}");
        let m = ComputeModel::fit(&s).unwrap();
        assert_eq!(m.dgemm, f);
        assert_eq!(m.dgemm_two_term, two);
        assert_eq!(m.dgemm.cost().per_b_element, f.seconds_per_b_element);
        // Other kernels have no packing terms: their model is the two-term one.
        let d: Vec<KernelSample> = [(64u64, 256u64), (128, 1024), (256, 4096)]
            .iter()
            .map(|&(o, n)| sample(Kernel::Dtrsm, o, n, 0, 1e-11 * (o * o * n) as f64))
            .collect();
        let p = fit_terms(&d, Kernel::Dtrsm, Terms::Packing).unwrap();
        assert_eq!(p, fit_kernel(&d, Kernel::Dtrsm, true).unwrap());
        assert_eq!(p.max_error_in_matrix, None);
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
        /// Whatever the timings, every term of every model is non-negative, the rate
        /// positive, and adding terms never makes the fit worse on the sum it minimizes.
        #[test]
        fn fits_never_return_negative_terms(
            times in proptest::collection::vec(1e-7f64..1.0, 20),
        ) {
            let s: Vec<KernelSample> = hpl_shapes().into_iter().zip(&times)
                .map(|((m, n, k), &t)| sample(Kernel::Dgemm, m, n, k, t)).collect();
            let sum = |f: &KernelFit| s.iter().map(|x| {
                (f.cost().dgemm_seconds(x.m as f64, x.n as f64, x.k as f64) / x.seconds - 1.0).powi(2)
            }).sum::<f64>();
            let mut last = f64::INFINITY;
            for terms in [Terms::Work, Terms::Output, Terms::Packing] {
                let f = fit_terms(&s, Kernel::Dgemm, terms).unwrap();
                let c = f.cost();
                prop_assert!(c.per_work > 0.0 && f.flops.is_finite(), "{:?}", f);
                prop_assert!(c.per_element >= 0.0 && c.per_a_element >= 0.0
                             && c.per_b_element >= 0.0, "{:?}", f);
                prop_assert!(sum(&f) <= last * (1.0 + 1e-9), "{:?}", f);
                last = sum(&f);
            }
        }

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
