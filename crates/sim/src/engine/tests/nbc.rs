//! Non-blocking collectives: they overlap computation, several at once.

use super::{close, p1, run};
use crate::coll::{CollArgs, Collective};
use crate::workload::{Action, ReqHandle};

fn coll(kind: Collective, size: u32, rank: u32, bytes: u64, req: Option<ReqHandle>) -> Action {
    Action::Collective {
        args: CollArgs {
            kind,
            size,
            rank,
            root: 0,
            count: bytes,
            recv_count: bytes,
            dtype_size: 1,
            recv_dtype_size: 1,
            send_counts: Vec::new(),
            recv_counts: Vec::new(),
        },
        comm: 0,
        comp_flops: 0.0,
        req,
    }
}

#[test]
fn non_blocking_collectives_overlap_computation() {
    let p = p1();
    // Both ranks run the script `f(rank)`.
    let both = |f: &dyn Fn(u32) -> Vec<Action>| run(&p, vec![0, 1], (0..2).map(f).collect());
    let bcast = |r, req| coll(Collective::Bcast, 2, r, 10_000_000, req);
    let work = || Action::Compute { flops: 1e7 }; // 10 ms on a 1 Gf host
    let wait = |h| Action::Wait { reqs: vec![h] };
    let blocking = both(&|r| vec![bcast(r, None), work()]).makespan_s;
    let alone = both(&|r| vec![bcast(r, None)]).makespan_s;
    let overlapped = both(&|r| vec![bcast(r, Some(7)), work(), wait(7)]).makespan_s;
    let waited = both(&|r| vec![bcast(r, Some(1)), wait(1)]).makespan_s;
    let (b, a, o) = (blocking, alone, overlapped);
    assert!(a > 0.009, "the broadcast alone takes {a}");
    assert!(
        close(b, a + 0.01) || b > a + 0.0099,
        "blocking: {b} vs {a} + 10 ms"
    );
    // Overlapped: the longer of the two, not their sum.
    assert!(o >= a.max(0.01) - 1e-12, "overlapped {o} < max({a}, 0.01)");
    assert!(o < a.max(0.01) + 1e-6, "overlapped {o}, broadcast {a}");
    // Waiting at once: the rank waits for the data.
    assert!(close(waited, a), "{waited} vs {a}");
}

#[test]
fn several_non_blocking_collectives_in_flight() {
    let p = p1();
    let scripts: Vec<Vec<Action>> = (0..2)
        .map(|r| {
            vec![
                coll(Collective::Allreduce, 2, r, 100_000, Some(1)),
                coll(Collective::Bcast, 2, r, 1_000, Some(2)),
                coll(Collective::Barrier, 2, r, 0, None),
                coll(Collective::Alltoall, 2, r, 50_000, Some(3)),
                Action::Wait { reqs: vec![3, 1] },
                Action::Wait { reqs: vec![2] },
            ]
        })
        .collect();
    let a = run(&p, vec![0, 1], scripts.clone());
    let b = run(&p, vec![0, 1], scripts);
    assert!(a.makespan_s > 0.0);
    assert_eq!(a.makespan_s, b.makespan_s);
    // A handle never waited is completed at finalize.
    let c = run(
        &p,
        vec![0, 1],
        (0..2)
            .map(|r| vec![coll(Collective::Allreduce, 2, r, 1_000_000, Some(9))])
            .collect(),
    );
    assert!(c.makespan_s > 0.001, "{}", c.makespan_s);
}
