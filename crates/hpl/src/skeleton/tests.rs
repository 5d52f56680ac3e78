//! Message patterns checked against HPL's algorithms, expected values derived by hand.

use mpiscope_sim::calibration::KernelCost;

use super::*;

fn sends(plan: &BcastPlan) -> Vec<(u32, u64)> {
    plan.msgs
        .iter()
        .filter_map(|m| match *m {
            Msg::Send { peer, bytes, .. } => Some((peer, bytes)),
            _ => None,
        })
        .collect()
}

#[test]
fn one_ring_passes_along_the_row() {
    // Q = 4, root 1: 1 -> 2 -> 3 -> 0; 0's next is the root, it stops.
    let p = |me| bcast_plan(Bcast::OneRing, 4, 1, me, 10);
    assert_eq!((p(1).probe, sends(&p(1))), (None, vec![(2, 80)]));
    assert_eq!((p(2).probe, sends(&p(2))), (Some(1), vec![(3, 80)]));
    assert_eq!((p(3).probe, sends(&p(3))), (Some(2), vec![(0, 80)]));
    assert_eq!((p(0).probe, sends(&p(0))), (Some(3), vec![]));
}

#[test]
fn one_ring_modified_feeds_two_first() {
    // Q = 4, root 0: the root sends to 1 and 2; 1 keeps it; 2 (whose prev's prev is the
    // root) takes it from the root and passes it to 3; 3 stops before the root.
    let p = |me| bcast_plan(Bcast::OneRingM, 4, 0, me, 10);
    assert_eq!(sends(&p(0)), vec![(1, 80), (2, 80)]);
    assert_eq!((p(1).probe, sends(&p(1))), (Some(0), vec![]));
    assert_eq!((p(2).probe, sends(&p(2))), (Some(0), vec![(3, 80)]));
    assert_eq!((p(3).probe, sends(&p(3))), (Some(2), vec![]));
}

#[test]
fn two_rings_start_at_next_and_half_way() {
    // Q = 4, root 0: roo2 = 0 + (4+1)/2 = 2. Ring 1: 0 -> 1 (1 stops: next is roo2).
    // Ring 2: 0 -> 2 -> 3 (3 stops: next is the root).
    let p = |me| bcast_plan(Bcast::TwoRing, 4, 0, me, 1);
    assert_eq!(sends(&p(0)), vec![(1, 8), (2, 8)]);
    assert_eq!((p(1).probe, sends(&p(1))), (Some(0), vec![]));
    assert_eq!((p(2).probe, sends(&p(2))), (Some(0), vec![(3, 8)]));
    assert_eq!((p(3).probe, sends(&p(3))), (Some(2), vec![]));
}

#[test]
fn two_rings_modified_feed_three_from_the_root() {
    // Q = 6, root 0, roo2 = 3: the root sends to 1, 2 (next of next, not roo2) and 3.
    // 1 and 2 keep it (1: prev is the root; 2: its next is roo2); 3 -> 4 -> 5; 5 stops.
    let p = |me| bcast_plan(Bcast::TwoRingM, 6, 0, me, 1);
    assert_eq!(sends(&p(0)), vec![(1, 8), (2, 8), (3, 8)]);
    assert_eq!((p(1).probe, sends(&p(1))), (Some(0), vec![]));
    assert_eq!((p(2).probe, sends(&p(2))), (Some(0), vec![]));
    assert_eq!((p(3).probe, sends(&p(3))), (Some(0), vec![(4, 8)]));
    assert_eq!((p(4).probe, sends(&p(4))), (Some(3), vec![(5, 8)]));
    assert_eq!((p(5).probe, sends(&p(5))), (Some(4), vec![]));
    // Every variant reaches the Q - 1 other columns exactly once.
    for kind in [
        Bcast::OneRing,
        Bcast::OneRingM,
        Bcast::TwoRing,
        Bcast::TwoRingM,
    ] {
        for q in 2..9 {
            for root in 0..q {
                let total: usize = (0..q)
                    .map(|me| sends(&bcast_plan(kind, q, root, me, 1)).len())
                    .sum();
                assert_eq!(total, (q - 1) as usize, "{kind:?} q={q} root={root}");
            }
        }
    }
}

#[test]
fn long_scatters_then_rolls() {
    // Q = 4, root 0, 100 doubles: count = 25, top level ip2 = 2 (largest power of two
    // <= Q-1). Root: 50 doubles [50,100) to distance 2, then 25 [25,50) to 1; distance 2
    // sends [75,100) to 3. Then 3 roll steps of one 25-double piece each way.
    let p = |me| bcast_plan(Bcast::Long, 4, 0, me, 100);
    let root = p(0);
    assert_eq!(root.probe, None);
    assert_eq!(sends(&root), vec![(2, 400), (1, 200)]);
    let roll = |to, from| Msg::Exchange {
        to,
        send: 200,
        from,
        recv: 200,
        sync: true,
    };
    // Root's roll: k=0 even -> next (1), k=1 odd -> prev (3), k=2 even -> next.
    assert_eq!(&root.msgs[2..], &[roll(1, 1), roll(3, 3), roll(1, 1)]);
    let two = p(2);
    // No probes in the long variants: HPL has them under `#if 0`.
    assert!((0..4).all(|me| p(me).probe.is_none()));
    assert_eq!(
        two.msgs[0],
        Msg::Recv {
            peer: 0,
            bytes: 400
        }
    );
    assert_eq!(sends(&two), vec![(3, 200)]);
    assert_eq!(
        p(1).msgs[0],
        Msg::Recv {
            peer: 0,
            bytes: 200
        }
    );
    assert_eq!(
        p(3).msgs[0],
        Msg::Recv {
            peer: 2,
            bytes: 200
        }
    );
    assert_eq!(p(3).msgs.len(), 1 + 3);
}

#[test]
fn long_modified_gives_root_plus_one_everything() {
    // Q = 4, root 0, 90 doubles: 0 Ssends all 720 bytes to 1, which is then done. The
    // others (0, 2, 3 as distances 0, 1, 2; npm1 = 3, count = 30, ip2 = 2) scatter:
    // 0 sends [60,90) to distance 2 (column 3) and [30,60) to distance 1 (column 2).
    let p = |me| bcast_plan(Bcast::LongM, 4, 0, me, 90);
    let one = p(1);
    // No probe: HPL 2.3 comments it out and receives at once.
    assert_eq!(one.probe, None);
    assert_eq!(
        one.msgs,
        vec![Msg::Recv {
            peer: 0,
            bytes: 720
        }]
    );
    let root = p(0);
    assert_eq!(sends(&root), vec![(1, 720), (3, 240), (2, 240)]);
    // Then npm2 = 2 roll steps.
    assert_eq!(root.msgs.len(), 3 + 2);
    assert_eq!(p(3).probe, None);
    assert_eq!(p(2).probe, None);
    // Q = 2: just the whole panel to the other column.
    let q2 = bcast_plan(Bcast::LongM, 2, 1, 1, 5);
    assert_eq!(sends(&q2), vec![(0, 40)]);
}

#[test]
fn pivot_exchanges_follow_pdmxswp() {
    // jb = 4: the max row message is 4 + 4 doubles (64 bytes), with the current row's
    // top row appended 4 + 2*4 (96 bytes).
    // P = 2: one butterfly exchange; the current row sends the longer message.
    assert_eq!(pivot_plan(2, 0, 0, 4), vec![exch(1, 96, 64)]);
    assert_eq!(pivot_plan(2, 0, 1, 4), vec![exch(0, 64, 96)]);
    // P = 3, current row 0: ip2 = 2, row 2 folds into row 0 first (an exchange, as it is
    // distance ip2: it gets the top row, 32 bytes), 0 and 1 butterfly, 0 sends the result
    // back to 2.
    assert_eq!(
        pivot_plan(3, 0, 0, 4),
        vec![
            exch(2, 32, 64),
            exch(1, 96, 64),
            Msg::Send {
                peer: 2,
                bytes: 64,
                sync: false
            }
        ]
    );
    assert_eq!(pivot_plan(3, 0, 1, 4), vec![exch(0, 64, 96)]);
    assert_eq!(
        pivot_plan(3, 0, 2, 4),
        vec![exch(0, 64, 32), Msg::Recv { peer: 0, bytes: 64 }]
    );
    assert!(pivot_plan(1, 0, 0, 4).is_empty());
}

fn msgs(plan: Vec<Option<Msg>>) -> Vec<Msg> {
    plan.into_iter().flatten().collect()
}

#[test]
fn binary_exchange_swaps() {
    // P = 2, jb = 4, n = 10: U is 4 x 10 doubles (320 bytes); the other row holds
    // share = 2 pivot rows, sent with n+1 doubles each (176 bytes).
    assert_eq!(msgs(swap00_plan(2, 0, 0, 4, 10)), vec![exch(1, 320, 176)]);
    assert_eq!(msgs(swap00_plan(2, 0, 1, 4, 10)), vec![exch(0, 176, 320)]);
    // P = 3, current 1, jb = 3: one row each. Distance 2 (row 0) is beyond ip2 = 2: it
    // exchanges with the current row first (its W of 11 doubles for U), the hypercube
    // runs on distances 0 and 1 (row 2 sends its W, now 1 row), and the current row
    // finally sends U (240 bytes) to row 0.
    let u = 3 * 10 * 8;
    assert_eq!(
        msgs(swap00_plan(3, 1, 1, 3, 10)),
        vec![
            exch(0, u, 88),
            exch(2, u, 88),
            Msg::Send {
                peer: 0,
                bytes: u,
                sync: false
            }
        ]
    );
    assert_eq!(msgs(swap00_plan(3, 1, 2, 3, 10)), vec![exch(1, 88, u)]);
    assert_eq!(
        msgs(swap00_plan(3, 1, 0, 3, 10)),
        vec![exch(1, 88, u), Msg::Recv { peer: 1, bytes: u }]
    );
}

#[test]
fn spread_roll_swaps() {
    // P = 2, jb = 4, n = 10: each row's part of U is 2 rows x 10 (160 bytes). Spread:
    // the current row sends row 1's part; roll: one step exchanging parts.
    let ex = |peer| Msg::Exchange {
        to: peer,
        send: 160,
        from: peer,
        recv: 160,
        sync: false,
    };
    assert_eq!(
        msgs(swap01_plan(2, 0, 0, 4, 10)),
        vec![
            Msg::Send {
                peer: 1,
                bytes: 160,
                sync: false
            },
            ex(1)
        ]
    );
    assert_eq!(
        msgs(swap01_plan(2, 0, 1, 4, 10)),
        vec![
            Msg::Recv {
                peer: 0,
                bytes: 160
            },
            ex(0)
        ]
    );
    // P = 4, jb = 4 (one row each, 80 bytes): spread 0 -> 2 (rows 2,3: 160), 0 -> 1, 2 -> 3;
    // then 3 roll steps, each rank sending 3 pieces and receiving 3.
    let p4: Vec<Vec<Msg>> = (0..4)
        .map(|me| msgs(swap01_plan(4, 0, me, 4, 10)))
        .collect();
    assert_eq!(
        p4[0][0],
        Msg::Send {
            peer: 2,
            bytes: 160,
            sync: false
        }
    );
    assert_eq!(
        p4[0][1],
        Msg::Send {
            peer: 1,
            bytes: 80,
            sync: false
        }
    );
    assert_eq!(
        p4[2][0],
        Msg::Recv {
            peer: 0,
            bytes: 160
        }
    );
    assert_eq!(
        p4[2][1],
        Msg::Send {
            peer: 3,
            bytes: 80,
            sync: false
        }
    );
    for m in &p4 {
        let rolled: Vec<_> = m
            .iter()
            .filter(|x| matches!(x, Msg::Exchange { .. }))
            .collect();
        assert_eq!(rolled.len(), 3);
    }
}

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
        laswp: Some(KernelCost {
            per_work: 1e-9,
            per_element: 0.0,
        }),
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
