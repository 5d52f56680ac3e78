//! The cost per byte of large messages, the fit that COLD SEND ([`crate::cold`]) and VECTOR
//! SEND ([`crate::strided`]) share: `t = a + c S` by least squares over the sizes of at
//! least [`MIN_BYTES`], each the median of its repeats (smaller messages are
//! latency-bound); `c` is the cost per byte.

/// Smaller messages are latency-bound and left out of the fit, bytes.
pub const MIN_BYTES: u64 = 64 << 10;

/// The slope (seconds per byte, at least 0) of `t = a + c S` fitted by least squares on the
/// per-size medians of the `key` rows of at least [`MIN_BYTES`], and how many sizes; `None`
/// for fewer than two sizes.
pub(crate) fn large_message_slope(
    b: &crate::bench_json::BenchResults,
    key: &str,
) -> Option<(f64, usize)> {
    let mut by_size: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for r in &b.results {
        if r.key != key || r.skipped.is_some() || !r.time.median.is_finite() {
            continue;
        }
        match r.ints {
            Some(ints) if 4 * ints >= MIN_BYTES => {
                by_size.entry(4 * ints).or_default().push(r.time.median)
            }
            _ => {}
        }
    }
    let points: Vec<(f64, f64)> = by_size
        .into_iter()
        .map(|(bytes, mut t)| (bytes as f64, crate::bench_json::median(&mut t)))
        .collect();
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    Some(((sxy / sxx).max(0.0), points.len()))
}
