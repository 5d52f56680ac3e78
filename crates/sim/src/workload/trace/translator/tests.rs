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
