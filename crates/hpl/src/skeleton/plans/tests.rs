//! Message patterns checked against HPL's algorithms, expected values derived by hand.

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
