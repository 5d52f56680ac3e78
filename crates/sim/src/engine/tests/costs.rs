//! SMPI's per-call costs in the engine ([`crate::costs`]): what each charges, derived by
//! hand (the differential tests compare the same with SimGrid).

use super::{close, host, Script};
use crate::config::SimConfig;
use crate::costs::{CallCosts, Piecewise};
use crate::engine::Simulation;
use crate::platform::Platform;
use crate::result::SimResult;
use crate::workload::{Action, RankWorkload};

/// `n` hosts of 1 Gf, no links (no messages).
fn hosts(n: u32) -> Platform {
    Platform::new(
        (0..n).map(|i| host(&format!("h{i}"), 1)).collect(),
        Vec::new(),
        Box::new(super::Table(Default::default())),
    )
}

fn run_with(p: &Platform, costs: CallCosts, scripts: Vec<Vec<Action>>) -> SimResult {
    let n = scripts.len() as u32;
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    let config = SimConfig {
        costs,
        ..SimConfig::default()
    };
    Simulation::new(p, config, (0..n).collect(), w)
        .unwrap()
        .run()
        .unwrap()
}

fn polled(chunks: u64) -> Action {
    Action::ComputeWhilePolling {
        flops: 1e6,
        chunks,
        src: 1,
        tag: 9,
        comm: 0,
    }
}

/// Two ranks whose polled computations end at the same date both pay their probes after
/// it (a probe's computation started while the other rank is being woken must not take
/// the id of the computation that just ended: that rank would never wake).
#[test]
fn polled_computations_ending_together_both_pay_their_probes() {
    let p = hosts(2);
    let costs = CallCosts {
        iprobe: 1e-4,
        ..CallCosts::default()
    };
    let r = run_with(&p, costs, vec![vec![polled(3)], vec![polled(3)]]);
    // 3 ms of chunks; then the six failed probes of the shared counter, 1 + 2 + 3 for the
    // first rank woken, 4 + 5 + 6 for the other.
    assert!(close(r.ranks[0].end_s, 3e-3 + 6e-4), "{:?}", r.ranks[0]);
    assert!(close(r.ranks[1].end_s, 3e-3 + 15e-4), "{:?}", r.ranks[1]);
}

/// `smpi/os` before a blocking send that returns at once, `smpi/ois` before an `Isend`;
/// `smpi/init` at the start; `smpi/simulate-computation` off skips computations.
#[test]
fn send_overheads_init_and_skipped_computations() {
    let mut p = hosts(2);
    p = Platform::new(
        p.hosts.clone(),
        vec![super::link("l", 0.0)],
        Box::new(super::Table(
            [((0, 1), vec![0]), ((1, 0), vec![0])].into_iter().collect(),
        )),
    );
    let costs = CallCosts {
        os: Piecewise::parse("0:1e-3:0;1000:2e-3:0").unwrap(),
        ois: Piecewise::parse("0:5e-3:0").unwrap(),
        init: 0.25,
        simulate_computation: false,
        ..CallCosts::default()
    };
    let isend = Action::Send {
        dst: 1,
        tag: 0,
        bytes: 10,
        comm: 0,
        req: Some(1),
        sync: false,
    };
    let r = run_with(
        &p,
        costs,
        vec![
            vec![
                Action::Compute { flops: 1e9 },
                super::send(1, 10),
                super::send(1, 2000),
                isend,
                Action::Wait { reqs: vec![1] },
            ],
            vec![super::recv(0, 10), super::recv(0, 2000), super::recv(0, 10)],
        ],
    );
    // 0.25 s of init, no computation, 1 ms and 2 ms of os, 5 ms of ois.
    assert!(
        close(r.ranks[0].end_s, 0.25 + 1e-3 + 2e-3 + 5e-3),
        "{:?}",
        r.ranks[0]
    );
}
