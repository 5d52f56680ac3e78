//! The translation of single events into actions.

use mpiscope_trace::{CommDef, CommKind, Event, Slot, Tables};

use super::super::Shared;
use crate::workload::Action;

/// The actions of one call of `name` on `MPI_COMM_WORLD` (4 ranks) with `slots` set.
fn actions(name: &str, slots: &[(Slot, i64)]) -> Vec<Action> {
    let mut t = Tables::default();
    t.comms.insert(
        0,
        CommDef {
            id: 0,
            key: 0,
            kind: CommKind::World,
            size: 4,
            ranks: Vec::new(),
            remote: Vec::new(),
        },
    );
    let mut ev = Event {
        t_enter: 1_000,
        t_exit: 2_000,
        ..Event::default()
    };
    ev.args.set(Slot::Comm, 0);
    for &(s, v) in slots {
        ev.args.set(s, v);
    }
    let mut tr = Shared::new().translator(0, "rank-0".into(), 1e9, false);
    tr.event(&t, name, &ev).unwrap();
    tr.queue.drain(..).collect()
}

fn probes(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Probe { .. }))
        .count()
}

#[test]
fn a_failed_poll_waits_for_nothing() {
    // Regression: MPI_Iprobe's family is `probe`, so it was replayed as a blocking probe
    // waiting for a message the program did not wait for.
    for name in ["MPI_Iprobe", "MPI_Improbe"] {
        assert_eq!(probes(&actions(name, &[(Slot::Flag, 0)])), 0, "{name}");
        let found = [
            (Slot::Flag, 1),
            (Slot::StatusSource, 1),
            (Slot::StatusTag, 5),
        ];
        assert_eq!(probes(&actions(name, &found)), 1, "{name}");
    }
    let blocking = [(Slot::StatusSource, 1), (Slot::StatusTag, 5)];
    assert_eq!(probes(&actions("MPI_Probe", &blocking)), 1);
    assert_eq!(probes(&actions("MPI_Mprobe", &blocking)), 1);
}

#[test]
fn synchronous_sends_are_marked_so() {
    let send = |name: &str| {
        actions(name, &[(Slot::Peer, 1), (Slot::Tag, 3), (Slot::Bytes, 8)])
            .into_iter()
            .find_map(|a| match a {
                Action::Send { sync, .. } => Some(sync),
                _ => None,
            })
    };
    assert_eq!(send("MPI_Ssend"), Some(true));
    assert_eq!(send("MPI_Send"), Some(false));
    assert_eq!(send("MPI_Bsend"), Some(false));
}

/// The compute work (ns at 1 Gflop/s) before each `MPI_Send` of a rank that calls
/// `MPI_Wtime` between sends, the timer taking `timer_ns[i]` in step `i` (bursts of 1 us of
/// wall time around it, the one before the send recorded with 0.5 us of CPU time).
fn work_before_sends(timer_ns: &[u64], cpu: bool) -> Vec<f64> {
    let mut t = Tables::default();
    t.comms.insert(
        0,
        CommDef {
            id: 0,
            key: 0,
            kind: CommKind::World,
            size: 2,
            ranks: Vec::new(),
            remote: Vec::new(),
        },
    );
    let mut tr = Shared::new().translator(0, "rank-0".into(), 1e9, false);
    if cpu {
        tr.use_cpu_time(1.0);
    }
    let mut now = 0u64;
    let mut call = |tr: &mut super::Translator, name: &str, id: u32, dur: u64, cpu_ns| {
        let mut ev = Event {
            call: id,
            callsite: id + 1,
            t_enter: now,
            t_exit: now + dur,
            cpu_ns,
            ..Event::default()
        };
        ev.args.set(Slot::Comm, 0);
        if name == "MPI_Send" {
            ev.args.set(Slot::Peer, 1);
            ev.args.set(Slot::Bytes, 8);
        }
        tr.event(&t, name, &ev).unwrap();
        now += dur + 1_000;
    };
    for &d in timer_ns {
        call(&mut tr, "MPI_Wtime", 1, d, None);
        call(&mut tr, "MPI_Send", 2, 100, Some(500));
    }
    let mut work = Vec::new();
    let mut pending = 0.0;
    for a in tr.queue.drain(..) {
        match a {
            Action::Compute { flops } => pending += flops,
            Action::Send { .. } => work.push(std::mem::take(&mut pending)),
            _ => {}
        }
    }
    work
}

#[test]
fn a_local_call_preempted_is_not_replayed_as_work() {
    // Regression: with CPU times, a timer call during which the rank waited 1.4 ms for its
    // core (the other rank's time slice) was replayed as 1.4 ms of work, which the
    // simulator then shared with the other rank again (LAMMPS at 4 ranks on 2 cores: +32%).
    let timer = [200, 150, 1_400_000, 180, 300];
    let work = work_before_sends(&timer, true);
    // The timer counts as the shortest it took so far, the burst before the send as its
    // CPU time, the short burst before the timer (no CPU time) as its wall time.
    let expect = [200.0, 1_150.0, 1_150.0, 1_150.0, 1_150.0].map(|w| w + 500.0);
    assert_eq!(work.len(), expect.len());
    for (w, e) in work.iter().zip(expect) {
        assert!((w - e).abs() < 1e-6, "{work:?} against {expect:?}");
    }
    // Replaying wall times, the call counts for its wall time, as before.
    let wall = work_before_sends(&timer, false);
    for (i, (w, d)) in wall.iter().zip(timer).enumerate() {
        let before = if i == 0 { 0.0 } else { 1_000.0 };
        assert!((w - (before + d as f64 + 1_000.0)).abs() < 1e-6, "{wall:?}");
    }
}
