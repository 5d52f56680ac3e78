//! The engine's tests on small hand-made platforms, with expected values derived by hand
//! or measured with SimGrid 3.32: point-to-point semantics here, the rest by part.

mod costs;
mod nbc;
mod polling;
mod reduction;
mod sched;

use std::collections::{HashMap, VecDeque};

use crate::config::SimConfig;
use crate::engine::Simulation;
use crate::platform::{Host, HostId, Link, LinkId, Platform, PlatformError, Routing, Sharing};
use crate::result::SimResult;
use crate::workload::{Action, Outcome, RankWorkload, WorkloadError, ANY};

/// Routes from a table (test platforms).
#[derive(Debug)]
pub(super) struct Table(pub(super) HashMap<(HostId, HostId), Vec<LinkId>>);

impl Routing for Table {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        out.extend(self.0.get(&(src, dst)).cloned().unwrap_or_default());
        Ok(())
    }
}

pub(super) fn host(name: &str, cores: u32) -> Host {
    Host {
        name: name.into(),
        speed: 1e9,
        cores,
        watts_idle: 0.0,
        watts_max: 0.0,
    }
}

pub(super) fn link(name: &str, lat: f64) -> Link {
    Link {
        name: name.into(),
        bandwidth: 1e9,
        latency: lat,
        sharing: Sharing::Shared,
    }
}

/// Two hosts, one shared link used both ways (SimGrid note's p1.xml).
pub(super) fn p1() -> Platform {
    let mut t = HashMap::new();
    t.insert((0, 1), vec![0]);
    t.insert((1, 0), vec![0]);
    Platform::new(
        vec![host("h0", 1), host("h1", 1)],
        vec![link("l", 1e-5)],
        Box::new(Table(t)),
    )
}

pub(super) struct Script(pub(super) VecDeque<Action>);

impl RankWorkload for Script {
    fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
        self.0.pop_front().map(Ok)
    }
}

pub(super) fn run(p: &Platform, hosts: Vec<HostId>, scripts: Vec<Vec<Action>>) -> SimResult {
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    Simulation::new(p, SimConfig::default(), hosts, w)
        .unwrap()
        .run()
        .unwrap()
}

pub(super) fn send(dst: u32, bytes: u64) -> Action {
    Action::Send {
        dst,
        tag: 0,
        bytes,
        comm: 0,
        req: None,
        sync: false,
    }
}

pub(super) fn recv(src: i64, bytes: u64) -> Action {
    Action::Recv {
        src,
        tag: 0,
        bytes,
        comm: 0,
        req: None,
    }
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-9) + 2e-12
}

/// The error of two ranks on `p1()` running these scripts, which must not end.
pub(super) fn deadlock_report(scripts: Vec<Vec<Action>>) -> String {
    let w: Vec<Box<dyn RankWorkload>> = scripts
        .into_iter()
        .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
        .collect();
    Simulation::new(&p1(), SimConfig::default(), vec![0, 1], w)
        .unwrap()
        .run()
        .unwrap_err()
        .to_string()
}

#[test]
fn one_message_matches_simgrid() {
    let p = p1();
    let r = run(
        &p,
        vec![0, 1],
        vec![vec![send(1, 1_000_000)], vec![recv(0, 1_000_000)]],
    );
    // SimGrid 3.32 CM02: 1e-5 + 1000016 * 1.05 / 1e9 (measured 0.001060016800).
    assert!(close(r.makespan_s, 0.0010600168), "{}", r.makespan_s);
    assert!(close(r.ranks[1].end_s, 0.0010600168));
}

#[test]
fn sendrecv_is_irecv_isend_wait() {
    let sendrecv = |me: u32, bytes: u64| Action::Sendrecv {
        dst: 1 - me,
        send_bytes: bytes,
        src: i64::from(1 - me),
        recv_bytes: 2_000_000 - bytes,
        tag: 3,
        comm: 0,
    };
    let three = |me: u32, bytes: u64| {
        vec![
            Action::Recv {
                src: i64::from(1 - me),
                tag: 3,
                bytes: 2_000_000 - bytes,
                comm: 0,
                req: Some(1),
            },
            Action::Send {
                dst: 1 - me,
                tag: 3,
                bytes,
                comm: 0,
                req: Some(2),
                sync: false,
            },
            Action::Wait { reqs: vec![1, 2] },
        ]
    };
    let one = run(
        &p1(),
        vec![0, 1],
        vec![vec![sendrecv(0, 1_500_000)], vec![sendrecv(1, 500_000)]],
    );
    let split = run(
        &p1(),
        vec![0, 1],
        vec![three(0, 1_500_000), three(1, 500_000)],
    );
    assert!(one.makespan_s > 1e-3, "{}", one.makespan_s);
    for r in 0..2 {
        assert_eq!(one.ranks[r].end_s, split.ranks[r].end_s);
    }
}

#[test]
fn a_sleep_takes_its_time() {
    let r = run(
        &p1(),
        vec![0, 1],
        vec![vec![Action::Sleep { secs: 0.25 }], vec![]],
    );
    assert!(close(r.ranks[0].end_s, 0.25), "{}", r.ranks[0].end_s);
}

#[test]
fn two_flows_share_a_link() {
    let p = p1();
    let r = run(
        &p,
        vec![0, 1],
        vec![
            vec![
                Action::Send {
                    dst: 1,
                    tag: 0,
                    bytes: 1_000_000,
                    comm: 0,
                    req: Some(1),
                    sync: false,
                },
                Action::Send {
                    dst: 1,
                    tag: 1,
                    bytes: 1_000_000,
                    comm: 0,
                    req: Some(2),
                    sync: false,
                },
                Action::Wait { reqs: vec![1, 2] },
            ],
            vec![
                Action::Recv {
                    src: 0,
                    tag: 0,
                    bytes: 1_000_000,
                    comm: 0,
                    req: Some(1),
                },
                Action::Recv {
                    src: 0,
                    tag: 1,
                    bytes: 1_000_000,
                    comm: 0,
                    req: Some(2),
                },
                Action::Wait { reqs: vec![1, 2] },
            ],
        ],
    );
    // Measured 0.002110033600.
    assert!(close(r.makespan_s, 0.0021100336), "{}", r.makespan_s);
}

#[test]
fn eager_threshold() {
    // Rank 1 computes 1 s, then receives; rank 0 sends then computes 1000 flops.
    let p = p1();
    for (size, send_end, recv_end) in [
        (65535u64, 1e-6, 1.00007882855),
        (65536, 1.0000788296 + 1e-6, 1.0000788296),
    ] {
        let r = run(
            &p,
            vec![0, 1],
            vec![
                vec![send(1, size), Action::Compute { flops: 1000.0 }],
                vec![Action::Compute { flops: 1e9 }, recv(0, size)],
            ],
        );
        assert!(
            close(r.ranks[0].end_s, send_end),
            "{size}: sender ends {}",
            r.ranks[0].end_s
        );
        assert!(
            close(r.ranks[1].end_s, recv_end),
            "{size}: receiver ends {}",
            r.ranks[1].end_s
        );
    }
}

#[test]
fn parking_lot() {
    // Links L1 L2 L3; hosts a (0) .. b (3) long flow over all three; short flows over one.
    let mut t = HashMap::new();
    t.insert((0, 3), vec![0, 1, 2]);
    t.insert((3, 0), vec![2, 1, 0]);
    for (i, (s, d)) in [(4, 5), (6, 7), (8, 9)].into_iter().enumerate() {
        t.insert((s, d), vec![i as LinkId]);
        t.insert((d, s), vec![i as LinkId]);
    }
    let hosts: Vec<Host> = (0..10).map(|i| host(&format!("h{i}"), 1)).collect();
    let p = Platform::new(
        hosts,
        (0..3).map(|i| link(&format!("L{i}"), 1e-5)).collect(),
        Box::new(Table(t)),
    );
    let mut scripts = vec![vec![send(1, 1_000_000)], vec![recv(0, 1_000_000)]];
    for i in 0..3u32 {
        scripts.push(vec![send(2 * i + 3, 1_000_000)]);
        scripts.push(vec![recv(i64::from(2 * i + 2), 1_000_000)]);
    }
    let r = run(&p, vec![0, 3, 4, 5, 6, 7, 8, 9], scripts);
    // Measured: short flows end at 0.001403355733, the long one at 0.002110033600.
    assert!(
        (r.ranks[3].end_s - 0.001403355733).abs() < 1e-9,
        "{}",
        r.ranks[3].end_s
    );
    assert!(
        (r.ranks[1].end_s - 0.0021100336).abs() < 1e-9,
        "{}",
        r.ranks[1].end_s
    );
}

#[test]
fn deadlock_is_reported() {
    let e = deadlock_report(vec![vec![recv(1, 8)], vec![recv(0, 8)]]);
    assert!(
        e.contains("deadlock") && e.contains("rank 0") && e.contains("receive from 1"),
        "{e}"
    );
}

#[test]
fn wildcards_and_probes() {
    let p = p1();
    let r = run(
        &p,
        vec![0, 1, 0],
        vec![
            vec![
                Action::Probe {
                    src: ANY,
                    tag: ANY,
                    comm: 0,
                },
                recv(ANY, 100),
                recv(ANY, 100),
            ],
            vec![send(0, 100)],
            vec![Action::Compute { flops: 1e6 }, send(0, 100)],
        ],
    );
    // Rank 2 computes 1 ms on rank 0's host, then sends over the (empty) loopback route.
    assert!(close(r.makespan_s, 1e-3), "{}", r.makespan_s);
}

#[test]
fn same_input_same_output() {
    let p = p1();
    let mk = || {
        run(
            &p,
            vec![0, 1],
            vec![
                vec![
                    send(1, 12345),
                    Action::Compute { flops: 777.0 },
                    recv(1, 10),
                ],
                vec![recv(0, 12345), send(0, 10)],
            ],
        )
    };
    let (a, b) = (mk(), mk());
    assert_eq!(a.makespan_s, b.makespan_s);
    assert_eq!(a.ranks, b.ranks);
}

/// A traced `Sendrecv` is one MPI call the workload marks with its callsite, replayed as
/// three actions (receive, send, wait): the callsite counts 1 call and 3 actions per rank
/// (it counted 3 calls); a call that only reads local state is a call without actions.
/// A workload that marks no calls (TI traces, HPL) counts one call per action.
#[test]
fn calls_are_counted_by_callsite_marks_apart_from_actions() {
    let sendrecv = |me: u32| {
        vec![
            Action::Callsite(7),
            Action::Recv {
                src: i64::from(1 - me),
                tag: 3,
                bytes: 8,
                comm: 0,
                req: Some(1),
            },
            Action::Send {
                dst: 1 - me,
                tag: 3,
                bytes: 8,
                comm: 0,
                req: Some(2),
                sync: false,
            },
            Action::Wait { reqs: vec![1, 2] },
        ]
    };
    let script = |me: u32| {
        let mut s = vec![Action::Callsite(9)];
        s.extend(sendrecv(me));
        s.extend(sendrecv(me));
        s
    };
    let r = run(&p1(), vec![0, 1], vec![script(0), script(1)]);
    let site = |cs: u32| *r.callsites.iter().find(|c| c.callsite == cs).unwrap();
    assert_eq!((site(7).calls, site(7).actions), (4, 12));
    assert_eq!(
        (site(9).calls, site(9).actions, site(9).seconds),
        (2, 0, 0.0)
    );
    // The mean per call is per call, not per action.
    let per_rank = r.callsites.iter().map(|c| c.seconds).sum::<f64>() / 2.0;
    assert!(
        site(7).slowest_rank_mean_s >= per_rank / 2.0 * 0.99,
        "{:?}",
        r.callsites
    );
    // Rank totals stay in actions.
    assert_eq!(r.ranks[0].mpi_calls, 6);
    let unmarked = run(
        &p1(),
        vec![0, 1],
        vec![vec![send(1, 8), send(1, 8)], vec![recv(0, 8), recv(0, 8)]],
    );
    assert_eq!(unmarked.callsites.len(), 1);
    assert_eq!(
        (unmarked.callsites[0].calls, unmarked.callsites[0].actions),
        (4, 4)
    );
}
