//! A rank whose threads other than the main one communicate (MPI_THREAD_MULTIPLE) cannot be
//! replayed by one actor per rank: the replay (and the structural form) stops with an error
//! that says so, instead of dropping those calls. Other threads' local calls (timers) change
//! nothing and are allowed.

use std::path::Path;

use mpiscope_sim::platform::{cluster, ClusterSpec};
use mpiscope_sim::workload::{structural, trace, RankWorkload, WorkloadError};
use mpiscope_sim::{SimConfig, SimError, Simulation};
use mpiscope_trace::block::{frame, BlockKind};
use mpiscope_trace::{
    Args, BlockEncoder, CallDef, CommDef, CommKind, Definition, Lang, RankInfo, RankWriter,
    RawEvent, RunDir, Slot, Trailer, NO_CORE,
};

const CALLS: [&str; 6] = [
    "MPI_Init_thread",
    "MPI_Send",
    "MPI_Recv",
    "MPI_Sendrecv",
    "MPI_Wtime",
    "MPI_Finalize",
];

/// Call id of `name` (ids are 1-based positions in [`CALLS`]).
fn id(name: &str) -> u32 {
    CALLS.iter().position(|&c| c == name).expect("a known call") as u32 + 1
}

/// One event: `(thread, call, peer)`, peer -1 for none.
type Ev = (u16, &'static str, i64);

/// Writes rank `rank` of `size` with `events` (in time order, 1 us each, 1 us apart): the
/// main thread's through the single-threaded writer, the others' as event blocks of their
/// own thread appended after them (as a recorder flushes them at exit, after the main
/// thread's MPI_Finalize), then the trailer. Events are numbered in file order.
fn write_rank(dir: &Path, rank: u32, size: u32, events: &[Ev]) {
    let info = RankInfo {
        thread_level: "multiple".into(),
        executable: "/bin/threads".into(),
        ..RankInfo::synthetic(rank, size)
    };
    let mut w = RankWriter::new(Vec::new(), &info, 1 << 16).unwrap();
    let mut defs = vec![Definition::Comm(CommDef {
        id: 0,
        key: 1,
        kind: CommKind::World,
        size,
        ranks: vec![],
        remote: vec![],
    })];
    defs.extend(CALLS.iter().map(|&name| {
        Definition::Call(CallDef {
            id: id(name),
            name: name.into(),
            lang: Lang::C,
        })
    }));
    w.define(&defs).unwrap();
    let mut others: Vec<(u16, BlockEncoder)> = Vec::new();
    let mut t = 0;
    for &(thread, name, peer) in events {
        let mut a = Args::EMPTY;
        if peer >= 0 {
            for (s, v) in [
                (Slot::Peer, peer),
                (Slot::RecvPeer, peer),
                (Slot::Tag, 0),
                (Slot::RecvTag, 0),
                (Slot::Comm, 0),
                (Slot::Bytes, 8),
                (Slot::RecvBytes, 8),
            ] {
                a.set(s, v);
            }
        }
        t += 2000;
        let ev = RawEvent {
            call: id(name),
            t_enter: t,
            t_exit: t + 1000,
            callsite: 0,
            core: NO_CORE,
            ret: 0,
            skipped: 0,
            args: &a,
            lists: &[],
            cpu: None,
        };
        if thread == 0 {
            w.event(&ev).unwrap();
        } else {
            let i = match others.iter().position(|(th, _)| *th == thread) {
                Some(i) => i,
                None => {
                    others.push((thread, BlockEncoder::new(1 << 16, thread)));
                    others.len() - 1
                }
            };
            assert!(others[i].1.push(&ev));
        }
    }
    let mut bytes = w.finish(None).unwrap();
    for (_, enc) in &mut others {
        bytes.extend_from_slice(enc.seal(t + 1000, t + 1000));
    }
    let trailer = Trailer {
        reason: "finalize".into(),
        sync_ticks: t + 1000,
        sync_ns: t + 1000,
        events: events.len() as u64,
        lost: 0,
        calls: vec![],
    };
    let json = serde_json::to_vec(&trailer).unwrap();
    bytes.extend(frame(BlockKind::Trailer, 0, 1, (t + 1000, t + 1000), &json));
    std::fs::write(dir.join(mpiscope_trace::rank_file_name(rank)), bytes).unwrap();
}

/// Rank 0's three worker threads exchange with rank 1 (the recorder's threads.c test), the
/// main thread makes no communication call.
fn multiple(dir: &Path) {
    let mut r0: Vec<Ev> = vec![(0, "MPI_Init_thread", -1), (1, "MPI_Wtime", -1)];
    let mut r1: Vec<Ev> = vec![(0, "MPI_Init_thread", -1)];
    for th in 1..=3 {
        r0.push((th, "MPI_Sendrecv", 1));
        r1.push((0, "MPI_Sendrecv", 0));
    }
    r0.push((0, "MPI_Finalize", -1));
    r1.push((0, "MPI_Finalize", -1));
    write_rank(dir, 0, 2, &r0);
    write_rank(dir, 1, 2, &r1);
}

/// The first error of any rank's workload.
fn first_error(ws: Vec<Box<dyn RankWorkload>>) -> Option<WorkloadError> {
    for mut w in ws {
        while let Some(a) = w.next(Default::default()) {
            if let Err(e) = a {
                return Some(e);
            }
        }
    }
    None
}

const SAYS: &str = "rank 0 has calls from 4 threads (MPI_THREAD_MULTIPLE); replay of several \
                    threads per rank is not supported: 3 communication call(s) are made by \
                    threads other than the one that initialized MPI, the first MPI_Sendrecv \
                    (event 4, thread 1)";

#[test]
fn communication_from_other_threads_stops_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    multiple(dir.path());
    let run = RunDir::open(dir.path()).unwrap();
    let ws = trace::load(&run, trace::TraceOptions::default(), &[1e9, 1e9]).unwrap();
    let e = first_error(ws).expect("an error");
    assert!(matches!(e, WorkloadError::Unsupported { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.ends_with(SAYS), "{text}");
    assert!(text.contains("rank-00000.mpst"), "{text}");
    // Through the engine too: the simulation fails instead of replaying 2 of 5 calls.
    let p = cluster(ClusterSpec::new(2, 1e9, 1e-6)).unwrap();
    let ws = trace::load(&run, trace::TraceOptions::default(), &[1e9, 1e9]).unwrap();
    let r = Simulation::new(&p, SimConfig::default(), vec![0, 1], ws)
        .unwrap()
        .run();
    match r {
        Err(SimError::Workload(WorkloadError::Unsupported { message, .. })) => {
            assert_eq!(message, SAYS)
        }
        other => panic!("{other:?}"),
    }
    // The structural form cannot be saved either.
    let e = structural::save(&run, None).unwrap_err().to_string();
    assert!(e.ends_with(SAYS), "{e}");
}

#[test]
fn local_calls_of_other_threads_do_not_matter() {
    let dir = tempfile::tempdir().unwrap();
    write_rank(
        dir.path(),
        0,
        2,
        &[
            (0, "MPI_Init_thread", -1),
            (1, "MPI_Wtime", -1),
            (0, "MPI_Send", 1),
            (2, "MPI_Wtime", -1),
            (0, "MPI_Finalize", -1),
        ],
    );
    write_rank(
        dir.path(),
        1,
        2,
        &[
            (0, "MPI_Init_thread", -1),
            (0, "MPI_Recv", 0),
            (0, "MPI_Finalize", -1),
        ],
    );
    let run = RunDir::open(dir.path()).unwrap();
    let p = cluster(ClusterSpec::new(2, 1e9, 1e-6)).unwrap();
    let ws = trace::load(&run, trace::TraceOptions::default(), &[1e9, 1e9]).unwrap();
    let r = Simulation::new(&p, SimConfig::default(), vec![0, 1], ws)
        .unwrap()
        .run()
        .unwrap();
    assert_eq!(r.messages, 1);
    assert!(structural::save(&run, None).is_ok());
}
