//! Calibration: fits the simulator's flow model to `mpiscope-bench` measurements.
//!
//! The one-way time of a message of `S` bytes (half a `SEND & RECV` round trip) is fitted
//! by a piecewise linear function of `S + 16` (SMPI's envelope, which the simulator adds),
//! each piece `t = a + b (S + 16)`, breakpoints searched over the measured sizes, weighted
//! least squares on relative errors. The pieces become SMPI-style factors around a nominal
//! latency `L0` (first piece) and bandwidth `B0` (last piece), written as a platform file
//! whose `[config]` the replay applies. See docs/notes/calibration-design.md.

mod bench_json;
pub mod cold;
pub mod compute;
mod large;
pub mod nnls;
pub mod prediction;
pub mod protocol;
pub mod reduction;
pub mod scheduler;
pub mod strided;

use mpiscope_sim::calibration::Calibration;
use serde::Serialize;

/// Bandwidth (bytes/s) from which a piece is taken as clamped (a non-positive fitted slope).
pub const CLAMPED_BANDWIDTH: f64 = 1e14;

/// Bytes the simulator adds to every message.
pub const ENVELOPE: f64 = 16.0;

/// Why a calibration cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// The results file is not `mpiscope-bench --json` output.
    #[error("{path}: not mpiscope-bench JSON output: {message}")]
    Input {
        /// File.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Not enough measurements.
    #[error("{0}")]
    Data(String),
}

/// One measured point: message size and one-way time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// Message bytes.
    pub bytes: f64,
    /// One-way time, seconds.
    pub seconds: f64,
}

/// One linear piece `t = latency + (bytes + 16) / bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Piece {
    /// Smallest message size (bytes) of the piece.
    pub from_bytes: f64,
    /// Largest message size (bytes) of the piece.
    pub to_bytes: f64,
    /// Intercept, seconds.
    pub latency: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Largest relative error of the fit on its points.
    pub max_error: f64,
}

/// A piecewise fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// Pieces by increasing size.
    pub pieces: Vec<Piece>,
    /// Coefficient of determination of the whole fit (on times).
    pub r2: f64,
}

/// Weighted least squares of `t = a + b x` with weights `1 / t^2` (relative errors); the
/// slope is kept positive and the intercept non-negative.
fn line(points: &[Point]) -> (f64, f64) {
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let w = 1.0 / (p.seconds * p.seconds).max(1e-30);
        let x = p.bytes + ENVELOPE;
        sw += w;
        sx += w * x;
        sy += w * p.seconds;
        sxx += w * x * x;
        sxy += w * x * p.seconds;
    }
    let det = sw * sxx - sx * sx;
    let (mut a, mut b) = if points.len() >= 2 && det.abs() > 1e-300 {
        ((sy * sxx - sx * sxy) / det, (sw * sxy - sx * sy) / det)
    } else {
        (sy / sw, 0.0)
    };
    let tiny = 1e-15;
    if b < tiny {
        b = tiny;
        a = points
            .iter()
            .map(|p| (p.seconds - b * (p.bytes + ENVELOPE)) / (p.seconds * p.seconds).max(1e-30))
            .sum::<f64>()
            / sw;
    }
    if a < 0.0 {
        // Through the origin: b = sum(w x t) / sum(w x^2).
        a = 0.0;
        b = (sxy / sxx).max(tiny);
    }
    (a, b)
}

fn rel_errors(points: &[Point], a: f64, b: f64) -> impl Iterator<Item = f64> + '_ {
    points
        .iter()
        .map(move |p| ((a + b * (p.bytes + ENVELOPE)) - p.seconds).abs() / p.seconds)
}

/// Fits up to `max_pieces` pieces (at least two points each) to `points`; takes the fewest
/// pieces whose every point is within `tolerance` (relative), else the best fit found.
pub fn fit(points: &[Point], max_pieces: usize, tolerance: f64) -> Result<Fit, CalibrationError> {
    let mut pts: Vec<Point> = points
        .iter()
        .copied()
        .filter(|p| p.seconds > 0.0 && p.bytes >= 0.0)
        .collect();
    pts.sort_by(|x, y| x.bytes.total_cmp(&y.bytes));
    let n = pts.len();
    if n < 2 {
        return Err(CalibrationError::Data(format!(
            "{n} usable point-to-point measurements: at least 2 sizes are needed (run mpiscope-bench with a size sweep)"
        )));
    }
    // Score of one piece: sum of squared relative errors and the worst error.
    let piece = |lo: usize, hi: usize| {
        let (a, b) = line(&pts[lo..hi]);
        let errs: Vec<f64> = rel_errors(&pts[lo..hi], a, b).collect();
        let sse: f64 = errs.iter().map(|e| e * e).sum();
        let worst = errs.iter().copied().fold(0.0, f64::max);
        (sse, worst, a, b)
    };
    let mut best: Option<(f64, f64, Vec<usize>)> = None;
    for k in 1..=max_pieces.max(1) {
        if 2 * k > n {
            break;
        }
        // All ways to cut n points into k runs of >= 2 (k <= 3 keeps this small).
        let mut found: Option<(f64, f64, Vec<usize>)> = None;
        let mut cuts = vec![0usize; k + 1];
        cuts[k] = n;
        fn walk(
            i: usize,
            k: usize,
            n: usize,
            cuts: &mut Vec<usize>,
            eval: &mut dyn FnMut(&[usize]),
        ) {
            if i == k {
                eval(cuts);
                return;
            }
            let start = cuts[i - 1] + 2;
            let end = n - 2 * (k - i);
            for c in start..=end {
                cuts[i] = c;
                walk(i + 1, k, n, cuts, eval);
            }
        }
        let mut eval = |c: &[usize]| {
            let (mut sse, mut worst) = (0.0, 0.0f64);
            for w in c.windows(2) {
                let (s, m, _, _) = piece(w[0], w[1]);
                sse += s;
                worst = worst.max(m);
            }
            if found.as_ref().is_none_or(|f| sse < f.0) {
                found = Some((sse, worst, c.to_vec()));
            }
        };
        walk(1, k, n, &mut cuts, &mut eval);
        if let Some(f) = found {
            let good = f.1 <= tolerance;
            if best.as_ref().is_none_or(|b| f.0 < b.0) {
                best = Some(f.clone());
            }
            if good {
                best = Some(f);
                break;
            }
        }
    }
    let (_, _, cuts) = best.expect("at least one piece fits two points");
    let pieces: Vec<Piece> = cuts
        .windows(2)
        .map(|w| {
            let (_, worst, a, b) = piece(w[0], w[1]);
            Piece {
                from_bytes: pts[w[0]].bytes,
                to_bytes: pts[w[1] - 1].bytes,
                latency: a,
                bandwidth: 1.0 / b,
                max_error: worst,
            }
        })
        .collect();
    let predict = |p: &Point| {
        let pc = pieces
            .iter()
            .rev()
            .find(|pc| p.bytes >= pc.from_bytes)
            .unwrap_or(&pieces[0]);
        pc.latency + (p.bytes + ENVELOPE) / pc.bandwidth
    };
    let mean = pts.iter().map(|p| p.seconds).sum::<f64>() / n as f64;
    let ss_tot: f64 = pts.iter().map(|p| (p.seconds - mean).powi(2)).sum();
    let ss_res: f64 = pts.iter().map(|p| (p.seconds - predict(p)).powi(2)).sum();
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Ok(Fit { pieces, r2 })
}

/// Nominal latency and bandwidth, and SMPI-style factors, from a fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Network {
    /// Nominal latency (the first piece's intercept; at least 1 ns), seconds.
    pub latency: f64,
    /// Nominal bandwidth (the last piece's that is not clamped), bytes per second.
    pub bandwidth: f64,
    /// `smpi/lat-factor` in SimGrid's syntax.
    pub lat_factor: String,
    /// `smpi/bw-factor` in SimGrid's syntax.
    pub bw_factor: String,
}

impl Network {
    /// Factors of each piece relative to the nominal values; a piece applies to messages
    /// larger than the previous piece's largest size (SimGrid's rule).
    pub fn from_fit(f: &Fit) -> Network {
        let latency = f.pieces[0].latency.max(1e-9);
        // A piece whose time does not grow with the size (noise) has a clamped, near-infinite
        // bandwidth: the nominal one is the last real one (its factors stay above 1).
        let bandwidth = f
            .pieces
            .iter()
            .rev()
            .map(|p| p.bandwidth)
            .find(|&b| b < CLAMPED_BANDWIDTH)
            .unwrap_or(1e10);
        let mut lat = Vec::new();
        let mut bw = Vec::new();
        for (i, p) in f.pieces.iter().enumerate() {
            let threshold = if i == 0 {
                0.0
            } else {
                f.pieces[i - 1].to_bytes + ENVELOPE
            };
            lat.push(format!(
                "{}:{}",
                threshold as u64,
                (p.latency / latency).max(1e-6)
            ));
            bw.push(format!("{}:{}", threshold as u64, p.bandwidth / bandwidth));
        }
        Network {
            latency,
            bandwidth,
            lat_factor: lat.join(";"),
            bw_factor: bw.join(";"),
        }
    }

    /// A one-host platform (ranks share it, messages use its loopback link) in our TOML
    /// format, with the factors as options for the replay. With `compute`, the host's speed
    /// is the fitted dgemm speed and the kernel models go to `[config]` as
    /// `mpiscope/dgemm` (seconds per `m n k`, then per output element `m n`, then, when
    /// the fit has them, per element of `A`, `m k`, and of `B`, `n k`) and
    /// `mpiscope/dtrsm` (seconds per `m^2 n`, then per `m n`) and, when timed,
    /// `mpiscope/panel` (seconds per `n^2 (m - n/3)`, then per `m n`), with the per-core speed
    /// factors under load as `mpiscope/core-efficiency` when measured; `extra_config` lines
    /// (other measured options) end `[config]`.
    pub fn platform_toml(
        &self,
        cores: u32,
        source: &str,
        compute: Option<&compute::ComputeModel>,
        protocol: Option<&protocol::Protocol>,
        extra_config: &str,
    ) -> String {
        let mut speed = String::new();
        let mut kernels = String::new();
        if let Some(p) = protocol {
            kernels += &p.config_lines(self);
        }
        if let Some(c) = compute {
            speed = format!("speed = {:e}\n", c.dgemm.flops);
            for (f, one) in c.fits() {
                let key = f.kernel.key();
                let mut model = Calibration::default();
                if let Some(slot) = model.kernel_mut(key) {
                    *slot = Some(f.cost());
                }
                kernels += &format!(
                    "# {}: {}: {:.2} {}, R^2 {:.5}, largest error {} over {} shapes \
                     (one-term model: R^2 {:.5}, largest error {})\n",
                    f.kernel.name(),
                    f.model_text(),
                    f.flops / 1e9,
                    f.kernel.rate_unit(),
                    f.r2,
                    f.error_text(),
                    f.samples,
                    one.r2,
                    one.error_text(),
                );
                if f.kernel == compute::Kernel::Dgemm {
                    let two = &c.dgemm_two_term;
                    kernels += &format!(
                        "# dgemm without the packing terms: {}: R^2 {:.5}, largest error {}\n",
                        two.model_text(),
                        two.r2,
                        two.error_text()
                    );
                }
                kernels += &model.line(key).unwrap_or_default();
            }
            if !c.core_efficiency.is_empty() {
                let model = Calibration {
                    core_efficiency: Some(c.core_efficiency.clone()),
                    ..Calibration::default()
                };
                kernels += "# per-core dgemm speed with 1, 2, ... cores busy, relative to one core alone\n";
                kernels += &model.to_config();
            }
        }
        format!(
            "# Calibrated by `mpiscope calibrate` from {source}.\n\
             # Replay with --mapping sequential:{cores} (all ranks on this host).\n\
             name = \"calibrated\"\n\n\
             [cluster]\n\
             hosts = 1\n\
             prefix = \"node-\"\n\
             cores = {cores}\n\
             {speed}\
             bandwidth = {bw:e}\n\
             latency = {lat:e}\n\
             # Shared memory: concurrent messages share the copy bandwidth.\n\
             loopback = {{ bandwidth = {bw:e}, latency = {lat:e}, sharing = \"shared\" }}\n\n\
             [config]\n\
             \"network/model\" = \"CM02\"\n\
             \"network/crosstraffic\" = \"no\"\n\
             \"smpi/lat-factor\" = \"{lf}\"\n\
             \"smpi/bw-factor\" = \"{bf}\"\n\
             {kernels}{extra_config}",
            bw = self.bandwidth,
            lat = self.latency,
            lf = self.lat_factor,
            bf = self.bw_factor,
        )
    }
}

/// The one-way times (half the `SEND & RECV` medians, the last repeat of each size) and the
/// process count of `mpiscope-bench --json` output.
pub fn points_from_bench(text: &str, path: &str) -> Result<(Vec<Point>, u32), CalibrationError> {
    let b = bench_json::BenchResults::parse(text, path)?;
    let mut by_size = std::collections::BTreeMap::new();
    for r in b.results {
        if r.key == "send_recv" && r.skipped.is_none() {
            if let Some(n) = r.ints {
                by_size.insert(n, r.time.median / 2.0);
            }
        }
    }
    let points = by_size
        .into_iter()
        .map(|(n, t)| Point {
            bytes: (4 * n) as f64,
            seconds: t,
        })
        .collect();
    Ok((points, b.np))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn model_time(bytes: f64) -> f64 {
        // An eager piece below 4 KiB, a rendezvous piece above.
        let x = bytes + ENVELOPE;
        if bytes <= 4096.0 {
            0.5e-6 + x / 2e9
        } else {
            3e-6 + x / 8e9
        }
    }

    fn sizes() -> Vec<f64> {
        (0..20).map(|i| (4u64 << i) as f64).collect()
    }

    #[test]
    fn recovers_a_two_piece_model() {
        let pts: Vec<Point> = sizes()
            .into_iter()
            .map(|b| Point {
                bytes: b,
                seconds: model_time(b),
            })
            .collect();
        let f = fit(&pts, 3, 0.01).unwrap();
        assert_eq!(f.pieces.len(), 2, "{f:?}");
        let (p0, p1) = (f.pieces[0], f.pieces[1]);
        assert_eq!((p0.to_bytes, p1.from_bytes), (4096.0, 8192.0));
        assert!((p0.latency - 0.5e-6).abs() < 1e-12 && (p0.bandwidth / 2e9 - 1.0).abs() < 1e-6);
        assert!((p1.latency - 3e-6).abs() < 1e-12 && (p1.bandwidth / 8e9 - 1.0).abs() < 1e-6);
        assert!(f.r2 > 0.999999);
        let n = Network::from_fit(&f);
        assert_eq!(n.latency, p0.latency);
        assert_eq!(n.bandwidth, p1.bandwidth);
        assert!(n.lat_factor.starts_with("0:1;4112:6."), "{}", n.lat_factor);
        assert!(
            n.bw_factor.starts_with("0:0.25") && n.bw_factor.contains(";4112:1"),
            "{}",
            n.bw_factor
        );
    }

    #[test]
    fn too_little_data_is_an_error() {
        let e = fit(
            &[Point {
                bytes: 8.0,
                seconds: 1e-6,
            }],
            3,
            0.05,
        )
        .unwrap_err();
        assert!(e.to_string().contains("at least 2 sizes"), "{e}");
        let e = points_from_bench("{", "r.json").unwrap_err().to_string();
        assert!(e.contains("r.json"), "{e}");
    }

    /// Everything `mpiscope calibrate` measures, written to a platform and read back by the
    /// simulator, is the measured value.
    #[test]
    fn the_platform_reads_back_what_was_measured() {
        use mpiscope_sim::calibration::LogGpValues;
        let sample = |kernel, m: u64, n: u64, k: u64, per_work: f64| compute::KernelSample {
            kernel,
            m,
            n,
            k,
            seconds: per_work * kernel.work(m, n, k) + 1e-9 * (m * n) as f64,
            ld: 0,
        };
        let mut samples = Vec::new();
        for (m, n, k) in [
            (64, 64, 64),
            (512, 512, 8),
            (512, 512, 256),
            (1024, 256, 32),
        ] {
            samples.push(sample(compute::Kernel::Dgemm, m, n, k, 2e-11));
            samples.push(sample(compute::Kernel::Dtrsm, m, n, 0, 3e-11));
            samples.push(sample(compute::Kernel::Panel, m, n / 4, 0, 7e-11));
            samples.push(sample(compute::Kernel::Laswp, m, n, 0, 1.3e-9));
        }
        let mut model = compute::ComputeModel::fit(&samples).unwrap();
        model.core_efficiency = vec![1.0, 0.9512];
        let points: Vec<Point> = sizes()
            .into_iter()
            .map(|b| Point {
                bytes: b,
                seconds: model_time(b),
            })
            .collect();
        let net = Network::from_fit(&fit(&points, 3, 0.01).unwrap());
        let protocol = protocol::Protocol {
            largest_eager: Some(4096),
            smallest_rendezvous: Some(16384),
            o: Some(1.1e-7),
            g: Some(2.3e-7),
        };
        let strided = strided::Strided {
            seconds_per_byte: 1.0 / 1.9e9,
            extra_per_byte: 1.0 / 1.9e9 - 1.0 / 3e9,
            samples: 3,
            contiguous: 3e9,
            runs_gigabytes_per_second: Vec::new(),
        };
        let reduction = reduction::Reduction {
            seconds_per_byte: 1.0 / 3.1e10,
            samples: 4,
        };
        let extra = scheduler::config_lines(1.3996e-3)
            + &strided.config_lines()
            + &reduction.config_lines();
        let text = net.platform_toml(2, "r.json", Some(&model), Some(&protocol), &extra);
        let p = mpiscope_sim::platform::toml::from_toml_str(&text, "c.toml").unwrap();
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        let read = Calibration::from_config(&p.config).unwrap();
        let (l, o, g, big_g) = protocol.loggp(&net);
        let fits: Vec<_> = model.fits().map(|(f, _)| f.cost()).collect();
        assert_eq!(fits.len(), 4);
        assert_eq!(
            read,
            Calibration {
                loggp: Some(LogGpValues { l, o, g, big_g }),
                core_efficiency: Some(vec![1.0, 0.9512]),
                oversubscribed_wake_up: Some(1.3996e-3),
                dgemm: Some(model.dgemm.cost()),
                dtrsm: model.dtrsm.map(|f| f.cost()),
                panel: model.panel.map(|f| f.cost()),
                pack: Some(strided.extra_per_byte),
                laswp: model.laswp.map(|f| f.cost()),
                reduction: Some(reduction.seconds_per_byte),
            }
        );
    }

    proptest! {
        /// On noisy measurements of a one-piece model every piece stays within the noise.
        #[test]
        fn fits_within_the_noise(lat in 1e-7f64..1e-4, bw in 1e8f64..1e11,
                                 noise in proptest::collection::vec(-0.02f64..0.02, 20)) {
            let pts: Vec<Point> = sizes().into_iter().zip(&noise).map(|(b, e)| Point {
                bytes: b,
                seconds: (lat + (b + ENVELOPE) / bw) * (1.0 + e),
            }).collect();
            let f = fit(&pts, 3, 0.05).unwrap();
            for p in &f.pieces {
                prop_assert!(p.max_error <= 0.05, "{:?}", f);
                prop_assert!(p.latency >= 0.0 && p.bandwidth > 0.0);
            }
        }
    }
}
