//! Ranks sharing cores: computations at shared speed, the oversubscribed wake-up delay,
//! packs fragment by fragment and joint packs.

use std::collections::HashMap;

use super::{close, deadlock_report, host, p1, recv, run, send, Script, Table};
use crate::config::SimConfig;
use crate::engine::Simulation;
use crate::platform::Platform;
use crate::workload::{Action, RankWorkload};

#[test]
fn ranks_share_cores() {
    let p = p1();
    let r = run(
        &p,
        vec![0, 0],
        vec![
            vec![Action::Compute { flops: 1e9 }],
            vec![Action::Compute { flops: 5e8 }],
        ],
    );
    assert!(
        close(r.ranks[0].end_s, 1.5) && close(r.ranks[1].end_s, 1.0),
        "{:?}",
        r.ranks
    );
}

/// End dates of `scripts`' ranks on one host of `cores` cores (bound: rank k on core
/// k mod cores), with an oversubscribed wake-up of `wake_up` seconds.
fn ends_on_one_host(
    cores: u32,
    bind_to_core: bool,
    wake_up: f64,
    scripts: Vec<Vec<Action>>,
) -> Vec<f64> {
    let p = Platform::new(
        vec![host("h", cores)],
        Vec::new(),
        Box::new(Table(HashMap::new())),
    );
    let n = scripts.len();
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    let config = SimConfig {
        bind_to_core,
        oversubscribed_wake_up: wake_up,
        ..SimConfig::default()
    };
    let r = Simulation::new(&p, config, vec![0; n], w)
        .unwrap()
        .run()
        .unwrap();
    r.ranks.iter().map(|r| r.end_s).collect()
}

/// End dates of four ranks on one host of `cores` cores: rank 1 receives from rank 0
/// while ranks 2 and 3 compute 1 s and 0.2 s, then computes 0.1 s.
fn four_ranks_on(cores: u32, bind_to_core: bool, wake_up: f64) -> Vec<f64> {
    let scripts = vec![
        vec![send(1, 0)],
        vec![recv(0, 0), Action::Compute { flops: 1e8 }],
        vec![Action::Compute { flops: 1e9 }],
        vec![Action::Compute { flops: 2e8 }],
    ];
    ends_on_one_host(cores, bind_to_core, wake_up, scripts)
}

#[test]
fn a_waiting_rank_gets_its_core_back_after_the_wake_up_delay_or_a_computation() {
    // Bound: ranks 0 and 2 on core 0, ranks 1 and 3 on core 1. Without the delay rank 1
    // shares core 1 with rank 3 at once (both at half speed: 1 ends at 0.2, 3 at 0.3).
    let e = four_ranks_on(2, true, 0.0);
    assert!(
        close(e[1], 0.2) && close(e[3], 0.3) && close(e[2], 1.0),
        "{e:?}"
    );
    // A 0.5 s delay: rank 1 gets core 1 when rank 3's computation ends at 0.2.
    let e = four_ranks_on(2, true, 0.5);
    assert!(
        close(e[1], 0.3) && close(e[3], 0.2) && close(e[2], 1.0),
        "{e:?}"
    );
    // A 0.05 s delay: rank 1 runs from 0.05, sharing core 1 (3 ends at 0.3, 1 at 0.25).
    let e = four_ranks_on(2, true, 0.05);
    assert!(close(e[1], 0.25) && close(e[3], 0.3), "{e:?}");
    // Unbound ranks do not wait for a core: rank 1 shares the host's two cores with ranks
    // 2 and 3 at once, delay or not.
    assert_eq!(four_ranks_on(2, false, 0.5), four_ranks_on(2, false, 0.0));
    let e = four_ranks_on(2, false, 0.5);
    assert!(close(e[1], 0.15) && close(e[3], 0.25), "{e:?}");
    // Four cores for four ranks: nobody waits for a core.
    let e = four_ranks_on(4, true, 0.5);
    assert!(close(e[1], 0.1) && close(e[3], 0.2), "{e:?}");
    let e = four_ranks_on(4, false, 0.5);
    assert!(close(e[1], 0.1) && close(e[3], 0.2), "{e:?}");
}

/// End dates of four ranks on one host of 2 cores (ranks 0 and 2 on core 0 when bound,
/// 1 and 3 on core 1), an oversubscribed wake-up of 0.01 s.
fn two_cores_ends(bind_to_core: bool, scripts: Vec<Vec<Action>>) -> Vec<f64> {
    ends_on_one_host(2, bind_to_core, 0.01, scripts)
}

#[test]
fn packs_on_a_shared_core_take_turns_and_wait_for_the_computing_rank_to_yield() {
    let pack = || Action::Pack {
        secs: 0.04,
        fragments: 4,
        with: None,
    };
    // Rank 2 computes 1 s without yielding: after each 0.01 s fragment rank 0 waits a
    // full time slice (twice the wake-up): 4 x 0.01 + 3 x 0.02.
    let busy = vec![
        vec![pack()],
        vec![],
        vec![Action::Compute { flops: 1e9 }],
        vec![],
    ];
    let e = two_cores_ends(true, busy.clone());
    assert!(close(e[0], 0.10) && close(e[2], 1.0), "{e:?}");
    // Unbound, or bound without a computing neighbour: a plain 0.04 s.
    assert!(close(two_cores_ends(false, busy)[0], 0.04));
    let e = two_cores_ends(true, vec![vec![pack()], vec![], vec![], vec![]]);
    assert!(close(e[0], 0.04), "{e:?}");
    // The computation ends at 0.05: fragments at 0-0.01, 0.03-0.04 (the slice), then
    // 0.05-0.07 back to back.
    let short = vec![
        vec![pack()],
        vec![],
        vec![Action::Compute { flops: 5e7 }],
        vec![],
    ];
    let e = two_cores_ends(true, short);
    assert!(close(e[0], 0.07), "{e:?}");
    // A rank probing between 0.01 s chunks yields at each chunk's end: fragments at
    // 0-0.01, 0.02-0.03, 0.04-0.05, 0.06-0.07.
    let polling = Action::ComputeWhilePolling {
        flops: 1e7,
        chunks: 100,
        src: 3,
        tag: 9,
        comm: 0,
    };
    let e = two_cores_ends(true, vec![vec![pack()], vec![], vec![polling], vec![]]);
    assert!(close(e[0], 0.07) && close(e[2], 1.0), "{e:?}");
    // Two packs on core 0 take turns (0.04 then 0.08); core 1's runs alongside.
    let e = two_cores_ends(true, vec![vec![pack()], vec![pack()], vec![pack()], vec![]]);
    assert!(
        close(e[0], 0.04) && close(e[1], 0.04) && close(e[2], 0.08),
        "{e:?}"
    );
    // Unbound they overlap.
    let e = two_cores_ends(
        false,
        vec![vec![pack()], vec![pack()], vec![pack()], vec![]],
    );
    assert!(close(e[2], 0.04), "{e:?}");
}

#[test]
fn joint_packs_end_together() {
    let pack = |with| Action::Pack {
        secs: 0.04,
        fragments: 4,
        with,
    };
    // Rank 0 sends to rank 1, whose core rank 3 computes 1 s without yielding: rank 1
    // gets its core back 0.01 s after the message (the wake-up), then unpacks 4
    // fragments with a time slice (0.02 s) between them: 0.01 + 0.04 + 0.06. Rank 0
    // packed its side by 0.04 but the pipeline holds it until then.
    let scripts = |joint: bool| {
        vec![
            vec![send(1, 0), pack(joint.then_some(1))],
            vec![recv(0, 0), pack(joint.then_some(0))],
            vec![],
            vec![Action::Compute { flops: 1e9 }],
        ]
    };
    let e = two_cores_ends(true, scripts(true));
    assert!(close(e[1], 0.11) && close(e[0], 0.11), "{e:?}");
    let e = two_cores_ends(true, scripts(false));
    assert!(close(e[1], 0.11) && close(e[0], 0.04), "{e:?}");
    // Unbound, both copies are plain 0.04 s and end together anyway.
    let e = two_cores_ends(false, scripts(true));
    assert!(close(e[0], 0.04) && close(e[1], 0.04), "{e:?}");
    // A partner that never packs is a deadlock, and the report says whom rank 0 waits for.
    let e = deadlock_report(vec![vec![pack(Some(1))], vec![recv(0, 8)]]);
    assert!(e.contains("waits for rank 1 to copy its own"), "{e}");
}
