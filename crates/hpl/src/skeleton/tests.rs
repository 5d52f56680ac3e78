//! The workloads driven rank by rank: flop totals, the packing of strided panels and the
//! row copies around the swaps' messages.

use mpiscope_sim::calibration::KernelCost;
use mpiscope_sim::workload::{Action, Outcome};

use super::*;

fn run_1x1(n: u64, nb: u64, depth: u32) -> Run {
    let text = format!(
        "t\nt\nout\n6\n1\n{n}\n1\n{nb}\n0\n1\n1\n1\n16.0\n1\n2\n1\n4\n1\n2\n1\n1\n1\n0\n1\n{depth}\n\
         0\n64\n0\n0\n1\n8\n"
    );
    crate::dat::HplDat::parse(&text, "t")
        .unwrap()
        .runs()
        .remove(0)
}

/// Drives one rank that needs no messages (1 x 1 grid) to its end, summing its flops.
fn total_flops(run: &Run, kernels: Kernels, speed: f64) -> f64 {
    let mut w = workloads(run, kernels, &[speed]).remove(0);
    let mut flops = 0.0;
    let mut last = Outcome::None;
    while let Some(a) = w.next(std::mem::take(&mut last)) {
        match a.unwrap() {
            Action::Compute { flops: f } => flops += f,
            // The aggregated pivot model reads the clock (an exchange takes no time here).
            Action::Clock => last = Outcome::Time(0),
            Action::Finalize => {}
            other => panic!("a 1 x 1 grid sends nothing: {other:?}"),
        }
    }
    flops
}

#[test]
fn aggregated_pivots_keep_every_flop() {
    for depth in [0, 1] {
        let mut run = run_1x1(1000, 64, depth);
        assert_eq!(run.pivots, crate::Pivots::Aggregated);
        let aggregated = total_flops(&run, Kernels::default(), 1e9);
        run.pivots = crate::Pivots::Messages;
        let messages = total_flops(&run, Kernels::default(), 1e9);
        assert!(
            (aggregated - messages).abs() <= 1e-9 * messages,
            "{aggregated} vs {messages}"
        );
    }
}

#[test]
fn one_process_computes_lu_flops() {
    // LU of order N costs 2/3 N^3 + O(N^2): dgemm 2 m n k and dtrsm t^2 n of every step
    // plus the panels, on N = 1000 within 0.5% of 2/3 N^3 + 3/2 N^2 (HPL's count).
    for depth in [0, 1] {
        let run = run_1x1(1000, 64, depth);
        let f = total_flops(&run, Kernels::default(), 1e9);
        let hpl = run.flops();
        assert!((f - hpl).abs() / hpl < 0.005, "depth {depth}: {f} vs {hpl}");
    }
}

/// The first `count` messages and packs of `rank` on a `p x q` grid (1ring broadcast,
/// depth 0, binary-exchange swaps), every probe answered "arrived".
fn first_messages(p: u32, q: u32, rank: usize, kernels: Kernels, count: usize) -> Vec<Action> {
    first_actions(p, q, 0, rank, kernels, count, false)
}

/// The first `count` messages, packs (and computations when `computations`) of `rank` on a
/// `p x q` grid (1ring broadcast, depth 0, SWAP `swap`), every probe answered "arrived".
fn first_actions(
    p: u32,
    q: u32,
    swap: u32,
    rank: usize,
    kernels: Kernels,
    count: usize,
    computations: bool,
) -> Vec<Action> {
    let text = format!(
        "t\nt\nout\n6\n1\n1000\n1\n100\n0\n1\n{p}\n{q}\n16.0\n1\n2\n1\n4\n1\n2\n1\n1\n1\n0\n1\n0\n\
         {swap}\n64\n0\n0\n1\n8\n"
    );
    let run = crate::dat::HplDat::parse(&text, "t")
        .unwrap()
        .runs()
        .remove(0);
    let speeds = vec![1e9; (p * q) as usize];
    let mut w = workloads(&run, kernels, &speeds).remove(rank);
    let mut out = Vec::new();
    let mut last = Outcome::None;
    while out.len() < count {
        let Some(a) = w.next(std::mem::take(&mut last)) else {
            break;
        };
        match a.unwrap() {
            Action::Iprobe { .. } => last = Outcome::Flag(true),
            Action::Clock => last = Outcome::Time(0),
            Action::ComputeWhilePolling { .. } => {
                last = Outcome::Polled {
                    chunks: 1,
                    found: true,
                }
            }
            a @ (Action::Send { .. }
            | Action::Recv { .. }
            | Action::Sendrecv { .. }
            | Action::Pack { .. }) => out.push(a),
            a @ Action::Compute { .. } if computations => out.push(a),
            _ => {}
        }
    }
    out
}

#[test]
fn strided_panels_pay_the_pack_cost_on_both_sides() {
    let kernels = Kernels {
        pack: Some(1e-9),
        ..Kernels::default()
    };
    // 1 x 3, 1ring: rank 0 sends panel 0 (L2 900 x 100 in the matrix, L1 100 x 100, the
    // pivots and one more double) to rank 1, which forwards it from its workspace to rank 2.
    let bytes = 8 * (900 * 100 + 100 * 100 + 100 + 1);
    let pack = 1e-9 * bytes as f64;
    // In 64 KiB fragments (800,808 bytes: 13), as one pipeline with the other end.
    let is_pack = |a: &Action, other_end: u32| {
        matches!(a, Action::Pack { secs, fragments: 13, with: Some(w) }
            if (secs - pack).abs() < 1e-15 && *w == other_end)
    };
    let root = first_messages(1, 3, 0, kernels, 2);
    assert!(
        matches!(root[0], Action::Send { dst: 1, bytes: b, .. } if b == bytes),
        "{root:?}"
    );
    assert!(is_pack(&root[1], 1), "{root:?}");
    let next = first_messages(1, 3, 1, kernels, 3);
    assert!(matches!(next[0], Action::Recv { src: 0, .. }), "{next:?}");
    assert!(is_pack(&next[1], 0), "{next:?}");
    assert!(matches!(next[2], Action::Send { dst: 2, .. }), "{next:?}");
    let last = first_messages(1, 3, 2, kernels, 2);
    assert!(matches!(last[0], Action::Recv { src: 1, .. }), "{last:?}");
    assert!(!matches!(last[1], Action::Pack { .. }), "{last:?}");
    // Without the model, no packs.
    let plain = first_messages(1, 3, 0, Kernels::default(), 2);
    assert!(!matches!(plain[1], Action::Pack { .. }), "{plain:?}");
}

#[test]
fn row_swaps_copy_rows_around_their_messages() {
    let kernels = Kernels {
        laswp: Some(KernelCost::new(1e-9, 0.0)),
        ..Kernels::default()
    };
    // 2 x 1, N 1000, NB 100, spread-roll swaps: panel 0's U is 100 rows of the 901 columns
    // right of the panel (with the right-hand side). At 1e9 flop/s a row-column costs 1 flop.
    let (jb, n) = (100u64, 901u64);
    let gather = (jb * n) as f64;
    let share = (jb / 2 * n) as f64;
    let is_compute =
        |a: &Action, f: f64| matches!(a, Action::Compute { flops } if (flops - f).abs() < 1e-6);
    let is_swap = |a: &Action| {
        matches!(a, Action::Send { tag, .. } | Action::Recv { tag, .. } | Action::Sendrecv { tag, .. }
            if (2000..3000).contains(tag))
    };
    // The current row (0) gathers all of U, then spreads the half row 1 needs.
    let root = first_actions(2, 1, 1, 0, kernels, 400, true);
    let first_swap = root.iter().position(is_swap).expect("a swap message");
    assert!(
        is_compute(&root[first_swap - 1], gather),
        "{:?}",
        &root[first_swap - 1]
    );
    assert!(
        matches!(root[first_swap], Action::Send { dst: 1, bytes, .. } if bytes == 50 * n * 8),
        "{:?}",
        root[first_swap]
    );
    assert!(
        !root.iter().any(|a| is_compute(a, share)),
        "the root exchanges nothing"
    );
    // Row 1 receives its half, exchanges it with its rows, then rolls.
    let other = first_actions(2, 1, 1, 1, kernels, 400, true);
    let first_swap = other.iter().position(is_swap).expect("a swap message");
    assert!(
        matches!(other[first_swap], Action::Recv { src: 0, .. }),
        "{other:?}"
    );
    assert!(is_compute(&other[first_swap + 1], share), "{other:?}");
    assert!(
        is_swap(&other[first_swap + 2]),
        "{:?}",
        &other[first_swap + 2]
    );
    // Without the model, no copies.
    let plain = first_actions(2, 1, 1, 0, Kernels::default(), 400, true);
    assert!(!plain.iter().any(|a| is_compute(a, gather)));
}
