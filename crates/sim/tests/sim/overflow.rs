//! Simulated time that runs past the last date the simulator represents (2^64 ps) is
//! reported as an overflow naming the rank, not as a deadlock; work amounts that are not
//! numbers are refused.

use std::collections::VecDeque;

use mpiscope_sim::platform::{cluster, ClusterSpec, Platform};
use mpiscope_sim::workload::{Action, Outcome, RankWorkload, WorkloadError};
use mpiscope_sim::{SimConfig, SimError, Simulation, Time};

struct Script(VecDeque<Action>);

impl RankWorkload for Script {
    fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
        self.0.pop_front().map(Ok)
    }
}

/// Four hosts of 1 Gflop/s on 1 GB/s links.
fn platform() -> Platform {
    cluster(ClusterSpec::new(4, 1e9, 1e-6)).unwrap()
}

fn simulate(p: &Platform, config: SimConfig, scripts: Vec<Vec<Action>>) -> Result<f64, SimError> {
    let hosts = (0..scripts.len() as u32).collect();
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    Ok(Simulation::new(p, config, hosts, w)?.run()?.makespan_s)
}

fn send(dst: u32, bytes: u64) -> Action {
    Action::Send {
        dst,
        tag: 0,
        bytes,
        comm: 0,
        req: None,
        sync: false,
    }
}

fn recv(src: i64, bytes: u64) -> Action {
    Action::Recv {
        src,
        tag: 0,
        bytes,
        comm: 0,
        req: None,
    }
}

fn overflow_of(r: Result<f64, SimError>) -> (u32, String) {
    match r {
        Err(e @ SimError::TimeOverflow { rank, .. }) => (rank, e.to_string()),
        other => panic!("expected a time overflow, got {other:?}"),
    }
}

#[test]
fn a_computation_past_the_horizon_is_an_overflow_of_its_rank() {
    let p = platform();
    // 1e300 flops at 1 Gflop/s: far past 2^64 ps.
    let (rank, text) = overflow_of(simulate(
        &p,
        SimConfig::default(),
        vec![
            vec![recv(1, 8)],
            vec![Action::Compute { flops: 1e300 }, send(0, 8)],
        ],
    ));
    assert_eq!(rank, 1);
    assert!(
        text.starts_with("simulated time overflow at rank 1: rank 1 computes since 0.000000000s"),
        "{text}"
    );
    assert!(!text.contains("deadlock"), "{text}");
}

#[test]
fn time_accumulating_past_the_horizon_is_an_overflow() {
    let p = platform();
    // Each computation fits, their sum does not (the horizon is about 1.8e7 s).
    let step = Action::Compute { flops: 1e9 * 1e7 };
    let (rank, text) = overflow_of(simulate(
        &p,
        SimConfig::default(),
        vec![vec![Action::Sleep { secs: 1.0 }], vec![step.clone(), step]],
    ));
    assert_eq!(rank, 1);
    assert!(text.contains("since 10000000.000000000s"), "{text}");
    // Just below the horizon is fine.
    let t = simulate(
        &p,
        SimConfig::default(),
        vec![vec![Action::Compute { flops: 1e9 * 1.8e7 }]],
    )
    .unwrap();
    assert_eq!(t, 1.8e7);
    assert!(t < Time::HORIZON_SECS);
}

#[test]
fn sleeps_and_transfers_past_the_horizon_are_overflows() {
    let p = platform();
    let (rank, text) = overflow_of(simulate(
        &p,
        SimConfig::default(),
        vec![vec![], vec![], vec![Action::Sleep { secs: 1e30 }]],
    ));
    assert_eq!(rank, 2);
    assert!(text.contains("rank 2 sleeps"), "{text}");
    // A terabyte at 1 B/s: 1e12 s, on every network model. The receiver is blocked too;
    // the sender is named.
    let slow = cluster(ClusterSpec::new(2, 1.0, 1e-6)).unwrap();
    for model in mpiscope_sim::network::MODELS {
        let config = SimConfig {
            network: (model.configure)(&Default::default()).unwrap(),
            ..SimConfig::default()
        };
        let (rank, text) = overflow_of(simulate(
            &slow,
            config,
            vec![vec![send(1, 1 << 40)], vec![recv(0, 1 << 40)]],
        ));
        assert_eq!(rank, 0, "{}: {text}", model.name);
        assert!(
            text.contains("waiting for send to 1"),
            "{}: {text}",
            model.name
        );
    }
}

#[test]
fn amounts_that_are_not_numbers_are_refused() {
    let p = platform();
    for (action, needle) in [
        (
            Action::Compute { flops: f64::NAN },
            "a computation of NaN flops",
        ),
        (
            Action::Compute {
                flops: f64::INFINITY,
            },
            "a computation of inf flops",
        ),
        (
            Action::Sleep {
                secs: f64::NEG_INFINITY,
            },
            "a sleep of -inf seconds",
        ),
        (
            Action::Pack {
                secs: f64::NAN,
                fragments: 1,
                with: None,
            },
            "a pack of NaN seconds",
        ),
    ] {
        let e = simulate(&p, SimConfig::default(), vec![vec![], vec![action]]).unwrap_err();
        assert!(matches!(e, SimError::Invalid { rank: 1, .. }), "{e:?}");
        assert!(e.to_string().contains(needle), "{e}");
    }
    // Negative amounts count as none, as before.
    let t = simulate(
        &p,
        SimConfig::default(),
        vec![vec![
            Action::Compute { flops: -5.0 },
            Action::Sleep { secs: -1.0 },
        ]],
    )
    .unwrap();
    assert_eq!(t, 0.0);
}

#[test]
fn a_real_deadlock_is_still_a_deadlock() {
    let p = platform();
    let e = simulate(
        &p,
        SimConfig::default(),
        vec![vec![recv(1, 8)], vec![recv(0, 8)]],
    )
    .unwrap_err();
    assert!(matches!(e, SimError::Deadlock { .. }), "{e:?}");
}
