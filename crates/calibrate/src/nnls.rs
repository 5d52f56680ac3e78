//! Non-negative least squares for models of a few terms (the kernel models of `compute`):
//! minimize `sum_i (sum_j x_ij b_j - y_i)^2` subject to `b_j >= 0`, with the first term
//! strictly positive (a kernel's rate).
//!
//! With at most a handful of terms the exact solution is found by enumeration: the optimum
//! of a non-negative problem is the unconstrained least-squares solution on its own
//! support (the terms it leaves non-zero), so the best of the feasible unconstrained
//! solutions over every support is it. Each support is solved by its normal equations on
//! columns scaled to unit norm (Gaussian elimination with partial pivoting); a support
//! whose columns are nearly dependent is skipped.

/// The most terms [`nnls`] takes (2^(MAX_TERMS - 1) supports are solved).
pub const MAX_TERMS: usize = 8;

/// Coefficients `b >= 0` (`b[0] > 0`) minimizing `sum_i (x_i . b - y_i)^2` over the rows
/// `x` (each of the same length, 1 to [`MAX_TERMS`]), with their residual sum of squares;
/// `None` when no support that holds the first term has a feasible solution (the first
/// column does not correlate positively with `y`, or the rows are empty or uneven).
pub fn nnls(x: &[Vec<f64>], y: &[f64]) -> Option<(Vec<f64>, f64)> {
    let p = x.first()?.len();
    if p == 0 || p > MAX_TERMS || x.len() != y.len() || x.iter().any(|r| r.len() != p) {
        return None;
    }
    let mut best: Option<(Vec<f64>, f64)> = None;
    // Every support with term 0 in it: bit j of `mask` is term j.
    for mask in (0u32..(1 << p)).filter(|m| m & 1 == 1) {
        let cols: Vec<usize> = (0..p).filter(|j| mask & (1 << j) != 0).collect();
        let Some(b) = solve_support(x, y, &cols) else {
            continue;
        };
        if b.iter().any(|&v| v <= 0.0) {
            continue;
        }
        let mut full = vec![0.0; p];
        for (&j, &v) in cols.iter().zip(&b) {
            full[j] = v;
        }
        let rss = residual(x, y, &full);
        if best.as_ref().is_none_or(|(_, r)| rss < *r) {
            best = Some((full, rss));
        }
    }
    best
}

/// The residual sum of squares of `b` over the rows `x` and targets `y`.
pub fn residual(x: &[Vec<f64>], y: &[f64], b: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(r, &t)| (r.iter().zip(b).map(|(u, v)| u * v).sum::<f64>() - t).powi(2))
        .sum()
}

/// The unconstrained least-squares coefficients of the columns `cols` (in that order), or
/// `None` when they are (nearly) dependent or a column is zero.
fn solve_support(x: &[Vec<f64>], y: &[f64], cols: &[usize]) -> Option<Vec<f64>> {
    let q = cols.len();
    let norms: Vec<f64> = cols
        .iter()
        .map(|&j| x.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .collect();
    if norms.iter().any(|&n| n <= 0.0 || !n.is_finite()) {
        return None;
    }
    // Normal equations of the scaled columns, augmented with the right-hand side.
    let mut g = vec![vec![0.0; q + 1]; q];
    for (r, &t) in x.iter().zip(y) {
        for a in 0..q {
            let ua = r[cols[a]] / norms[a];
            for b in 0..q {
                g[a][b] += ua * r[cols[b]] / norms[b];
            }
            g[a][q] += ua * t;
        }
    }
    for c in 0..q {
        let pivot = (c..q).max_by(|&i, &j| g[i][c].abs().total_cmp(&g[j][c].abs()))?;
        // The diagonal of the scaled system is 1: a pivot this small is a dependence.
        if g[pivot][c].abs() < 1e-10 {
            return None;
        }
        g.swap(c, pivot);
        let (top, below) = g.split_at_mut(c + 1);
        let row = &top[c];
        for r in below {
            let f = r[c] / row[c];
            for (x, y) in r[c..].iter_mut().zip(&row[c..]) {
                *x -= f * y;
            }
        }
    }
    let mut b = vec![0.0; q];
    for c in (0..q).rev() {
        let s: f64 = (c + 1..q).map(|j| g[c][j] * b[j]).sum();
        b[c] = (g[c][q] - s) / g[c][c];
    }
    let b: Vec<f64> = b.iter().zip(&norms).map(|(v, n)| v / n).collect();
    b.iter().all(|v| v.is_finite()).then_some(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_exact_positive_model_is_recovered() {
        let truth = [2.0, 0.5, 3.0];
        let x: Vec<Vec<f64>> = (1..10)
            .map(|i| vec![i as f64, (i * i) as f64 % 7.0, 1.0])
            .collect();
        let y: Vec<f64> = x
            .iter()
            .map(|r| r.iter().zip(&truth).map(|(a, b)| a * b).sum())
            .collect();
        let (b, rss) = nnls(&x, &y).unwrap();
        for (got, want) in b.iter().zip(truth) {
            assert!((got - want).abs() < 1e-9, "{b:?}");
        }
        assert!(rss < 1e-18);
    }

    #[test]
    fn a_negative_term_is_dropped() {
        // y = 2 x0 - x1: the best non-negative model leaves x1 out.
        let x: Vec<Vec<f64>> = (1..8).map(|i| vec![i as f64, 1.0]).collect();
        let y: Vec<f64> = x.iter().map(|r| 2.0 * r[0] - r[1]).collect();
        let (b, _) = nnls(&x, &y).unwrap();
        assert_eq!(b[1], 0.0);
        assert!(b[0] > 0.0);
        // The one-term optimum: sum(x0 y) / sum(x0^2).
        let want = x.iter().zip(&y).map(|(r, t)| r[0] * t).sum::<f64>()
            / x.iter().map(|r| r[0] * r[0]).sum::<f64>();
        assert!((b[0] - want).abs() < 1e-12, "{b:?} {want}");
    }

    #[test]
    fn degenerate_inputs_give_none() {
        assert_eq!(nnls(&[], &[]), None);
        assert_eq!(nnls(&[vec![]], &[1.0]), None);
        assert_eq!(nnls(&[vec![1.0, 2.0], vec![1.0]], &[1.0, 1.0]), None);
        // The first term cannot be positive.
        assert_eq!(nnls(&[vec![1.0], vec![2.0]], &[-1.0, -2.0]), None);
        // A zero column is never in a support; the others still fit.
        let (b, _) = nnls(&[vec![1.0, 0.0], vec![2.0, 0.0]], &[1.0, 2.0]).unwrap();
        assert!((b[0] - 1.0).abs() < 1e-12 && b[1] == 0.0, "{b:?}");
    }

    proptest! {
        /// Whatever the data, every coefficient returned is non-negative, the first
        /// positive, and no feasible one-term model does better.
        #[test]
        fn coefficients_are_never_negative(
            rows in proptest::collection::vec(proptest::collection::vec(0.0f64..1e3, 4), 4..20),
            y in proptest::collection::vec(-1e3f64..1e3, 20),
        ) {
            let y = &y[..rows.len()];
            if let Some((b, rss)) = nnls(&rows, y) {
                prop_assert!(b[0] > 0.0, "{:?}", b);
                prop_assert!(b.iter().all(|&v| v >= 0.0 && v.is_finite()), "{:?}", b);
                if let Some((one, one_rss)) = nnls(&rows.iter().map(|r| vec![r[0]]).collect::<Vec<_>>(), y) {
                    prop_assert!(one[0] > 0.0);
                    prop_assert!(rss <= one_rss * (1.0 + 1e-9) + 1e-9, "{} {}", rss, one_rss);
                }
            }
        }
    }
}
