//! Helpers for the unit tests of this crate.

use mpiscope_trace::{Args, Event, List, ListKind, Slot};

/// An event on the main thread with the given argument slots and lists, its other fields
/// zero.
pub fn event(args: &[(Slot, i64)], lists: &[(ListKind, &[i64])]) -> Event {
    let mut a = Args::EMPTY;
    for &(s, v) in args {
        a.set(s, v);
    }
    Event {
        thread: 0,
        call: 0,
        t_enter: 0,
        t_exit: 0,
        callsite: 0,
        core: None,
        ret: 0,
        skipped: 0,
        args: a,
        lists: lists
            .iter()
            .map(|(k, v)| List {
                kind: *k,
                values: v.to_vec(),
            })
            .collect(),
        unfinished: false,
    }
}
