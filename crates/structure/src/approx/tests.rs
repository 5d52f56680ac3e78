//! Tests of approximate loops.

use proptest::prelude::*;

use super::*;

/// A time-step loop as a molecular-dynamics code has it: per step symbols 1 2 3 4 (4 the
/// anchor-worthy call), every `energy`-th step adds 9 after 3, every `ns`-th step starts with
/// 7 8 7; setup 20 21 22 before, 30 after.
fn md(steps: u64, energy: u64, ns: u64) -> Vec<(u32, f64)> {
    let mut s: Vec<(u32, f64)> = vec![(20, 1.0), (21, 2.0), (22, 3.0)];
    for t in 0..steps {
        if t % ns == 0 {
            s.extend([(7, 5.0), (8, 6.0), (7, 5.0)]);
        }
        s.extend([(1, 10.0), (2, 1.0), (3, 20.0)]);
        if t % energy == energy - 1 {
            s.push((9, 100.0));
        }
        s.push((4, 2.0));
    }
    s.push((30, 4.0));
    s
}

fn total(seq: &[(u32, f64)]) -> f64 {
    seq.iter().map(|x| x.1).sum()
}

fn loops(parts: &[Part]) -> Vec<&Approx> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Loop(l) => Some(l),
            Part::Exact { .. } => None,
        })
        .collect()
}

#[test]
fn the_time_step_loop_is_found_with_its_periods() {
    let seq = md(2000, 10, 40);
    let parts = approximate(&seq, &|s| s != 1, &Options::default());
    let l = loops(&parts);
    assert_eq!(l.len(), 1, "{parts:#?}");
    let l = l[0];
    // Either the 2,000 steps, or their 50 neighbour-search periods of 40 steps.
    assert!(
        (l.count == 2000 && l.differences.len() == 2) || l.count == 50,
        "{} iterations, {} differences",
        l.count,
        l.differences.len()
    );
    if l.count == 50 {
        // 40 steps, the energy step a nested loop: (… 9 …)[4] or equivalent.
        assert_eq!(l.body_len, 3 + 40 * 4 + 4);
        assert!(l.body.len() < 12, "{:#?}", l.body);
    }
    let len: u64 = parts.iter().map(Part::expanded_len).sum();
    assert_eq!(len, seq.len() as u64);
    let t: f64 = parts.iter().map(Part::total).sum();
    assert!((t - total(&seq)).abs() < 1e-6);
    // Setup before the loop and the end after it stay exact.
    assert!(matches!(parts.first(), Some(Part::Exact { .. })));
    assert!(matches!(parts.last(), Some(Part::Exact { .. })));
}

#[test]
fn a_data_dependent_count_is_a_stated_difference() {
    // Each step: 1, then 5 six times or seven times (irregularly), then 2.
    let mut seq = Vec::new();
    for t in 0..300u64 {
        seq.push((1, 1.0));
        let n = if (t * 7919) % 13 < 4 { 7 } else { 6 };
        for _ in 0..n {
            seq.extend([(5, 1.0), (6, 2.0)]);
        }
        seq.push((2, 3.0));
    }
    let parts = approximate(&seq, &|_| true, &Options::default());
    let l = loops(&parts);
    assert_eq!(l.len(), 1, "{parts:#?}");
    assert_eq!(l[0].count, 300);
    assert_eq!(l[0].differences.len(), 1);
    let d = &l[0].differences[0];
    assert_eq!((d.added.len(), d.missing), (2, 0));
    assert_eq!(d.occurrences + l[0].exact, 300);
    let len: u64 = parts.iter().map(Part::expanded_len).sum();
    assert_eq!(len, seq.len() as u64);
}

#[test]
fn exact_loops_have_no_differences_and_tolerance_zero_is_exact_folding() {
    let seq: Vec<(u32, f64)> = (0..400).map(|i| (i % 4, f64::from(i % 4))).collect();
    let parts = approximate(&seq, &|_| true, &Options::default());
    let l = loops(&parts);
    assert_eq!((l[0].count, l[0].exact), (100, 100));
    assert!(l[0].differences.is_empty());
    let o = Options {
        tolerance: 0.0,
        ..Options::default()
    };
    let exact = approximate(&seq, &|_| true, &o);
    assert_eq!(
        exact,
        vec![Part::Exact {
            nodes: fold::fold(seq.iter().copied())
        }]
    );
}

#[test]
fn periods_and_merges() {
    let seq = md(400, 10, 1000);
    let mut a = approximate(&seq, &|s| s != 1, &Options::default());
    let b = a.clone();
    assert_eq!(a.iter().map(Part::shape).collect::<Vec<_>>().len(), b.len());
    for (x, y) in a.iter_mut().zip(&b) {
        x.merge(y);
    }
    let l = loops(&a)[0];
    assert_eq!(l.merged, 2);
    if let Some(d) = l.differences.iter().find(|d| d.added == [9]) {
        assert_eq!(d.period().map(|p| p.1), Some(10));
        assert_eq!(d.occurrences, 2 * d.iterations.len() as u64);
    }
    let t: f64 = a.iter().map(Part::total).sum();
    assert!((t - 2.0 * total(&seq)).abs() < 1e-6);
}

proptest! {
    /// Whatever the sequence, every symbol and every value lands somewhere exactly once.
    #[test]
    fn nothing_is_lost(
        body in proptest::collection::vec(0u32..6, 1..8),
        noise in proptest::collection::vec((0usize..40, 0u32..9), 0..30),
        reps in 4usize..40,
        pre in proptest::collection::vec(0u32..9, 0..5),
    ) {
        let mut seq: Vec<(u32, f64)> = pre.iter().map(|&s| (s, 1.0)).collect();
        for r in 0..reps {
            for (i, &s) in body.iter().enumerate() {
                seq.push((s, (r * 10 + i) as f64));
            }
            for &(at, s) in &noise {
                if at == r {
                    seq.push((s, 0.5));
                }
            }
        }
        let parts = approximate(&seq, &|_| true, &Options::default());
        let len: u64 = parts.iter().map(Part::expanded_len).sum();
        prop_assert_eq!(len, seq.len() as u64);
        let t: f64 = parts.iter().map(Part::total).sum();
        prop_assert!((t - total(&seq)).abs() < 1e-6 * (1.0 + total(&seq)));
    }
}
