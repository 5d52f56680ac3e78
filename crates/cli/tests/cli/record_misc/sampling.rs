//! What gets recorded: `--sample` (every N-th call), `MPI_Pcontrol` pauses and
//! `--no-pcontrol`, `--exclude` / `--include` filters, and the time window (`--start-after`,
//! `--duration`), each checked against the trailer's counts.

use crate::common;

use std::collections::BTreeMap;

use super::{assert_trailer_matches, counts, of, probe_run, slot, trailer};
use crate::common::Mpi;
use mpiscope_trace::{Event, Slot, PEER_ANY};

/// Tags of the MPI_Send events of a rank.
fn send_tags(evs: &[(String, Event)]) -> Vec<i64> {
    of(evs, "MPI_Send")
        .iter()
        .map(|e| slot(e, Slot::Tag))
        .collect()
}

fn sampling_and_filters(mpi: Mpi) {
    let tmp = common::tempdir();
    const ITER: u64 = 200_000;
    const N: u64 = 1000;
    const SENDS: usize = 10;

    // --sample MPI_Iprobe=1000: the N-th, 2N-th, ... calls are recorded.
    let trace = probe_run(
        mpi,
        &["200000", "10"],
        &["--sample", "MPI_Iprobe=1000"],
        tmp.path(),
    );
    let rep = common::report_json(&trace);
    let ip = &rep["calls"]["MPI_Iprobe"];
    assert_eq!(
        ip["count"],
        ITER * 2,
        "exact MPI_Iprobe count under sampling: {ip}"
    );
    assert_eq!(
        ip["recorded"],
        ITER * 2 / N,
        "recorded MPI_Iprobe calls: {ip}"
    );
    assert_eq!(rep["calls"]["MPI_Send"]["count"], 2 * SENDS as u64);
    assert_eq!(rep["calls"]["MPI_Send"]["recorded"], 2 * SENDS as u64);
    for r in 0..2u32 {
        let re = common::read_rank(&trace, r);
        assert!(re.complete);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        let probes = of(&re.events, "MPI_Iprobe");
        assert_eq!(
            probes.len() as u64,
            ITER / N,
            "rank {r}: sampled MPI_Iprobe events"
        );
        for e in &probes {
            assert_eq!(
                e.skipped,
                N - 1,
                "rank {r}: skipped before a sampled MPI_Iprobe"
            );
            assert_eq!(
                (slot(e, Slot::Peer), slot(e, Slot::Tag), slot(e, Slot::Flag)),
                (PEER_ANY, 99, 0)
            );
        }
        let t = trailer(&trace, r).unwrap();
        let c = t.calls.iter().find(|c| c.name == "MPI_Iprobe").unwrap();
        assert_eq!(
            (c.count, c.recorded),
            (ITER, ITER / N),
            "rank {r}: trailer totals of MPI_Iprobe"
        );
        // Sends and receives are not sampled.
        let (p2p, tags) = if r == 0 {
            ("MPI_Send", send_tags(&re.events))
        } else {
            ("MPI_Recv", vec![])
        };
        let evs = of(&re.events, p2p);
        assert_eq!(evs.len(), 2 * SENDS, "rank {r}: {p2p} events");
        for (i, e) in evs.iter().enumerate() {
            assert_eq!(e.skipped, 0, "rank {r}: {p2p} #{i} skipped");
            assert_eq!(
                slot(e, Slot::Count),
                (i % SENDS) as i64 + 1,
                "rank {r}: {p2p} #{i} count"
            );
        }
        if r == 0 {
            assert_eq!(
                tags,
                [vec![5; SENDS], vec![6; SENDS]].concat(),
                "rank 0: no send of the paused phase"
            );
        }
        // MPI_Pcontrol(0) .. MPI_Pcontrol(1): only the two MPI_Pcontrol calls are recorded
        // (the paused phase has sends or receives and a barrier).
        let pc: Vec<usize> = re
            .events
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| n == "MPI_Pcontrol")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(pc.len(), 2, "rank {r}: MPI_Pcontrol events");
        assert_eq!(
            pc[1],
            pc[0] + 1,
            "rank {r}: calls recorded while paused: {:?}",
            &re.events[pc[0]..=pc[1]]
        );
        assert_eq!(slot(&re.events[pc[0]].1, Slot::Level), 0);
        assert_eq!(slot(&re.events[pc[1]].1, Slot::Level), 1);
        assert_eq!(
            of(&re.events, "MPI_Barrier").len(),
            1,
            "rank {r}: the paused barrier was recorded"
        );
    }

    // --no-pcontrol: the paused phase is recorded too.
    let trace = probe_run(mpi, &["1000", "10"], &["--no-pcontrol"], tmp.path());
    for r in 0..2u32 {
        let re = common::read_rank(&trace, r);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        assert_eq!(
            of(&re.events, "MPI_Iprobe").len(),
            1000,
            "rank {r}: unsampled MPI_Iprobe events"
        );
        assert!(of(&re.events, "MPI_Iprobe").iter().all(|e| e.skipped == 0));
        assert_eq!(of(&re.events, "MPI_Pcontrol").len(), 2);
        assert_eq!(
            of(&re.events, "MPI_Barrier").len(),
            2,
            "rank {r}: with --no-pcontrol both barriers are recorded"
        );
        if r == 0 {
            assert_eq!(
                send_tags(&re.events),
                [vec![5; SENDS], vec![6; SENDS], vec![7; 3]].concat()
            );
        } else {
            assert_eq!(of(&re.events, "MPI_Recv").len(), 2 * SENDS + 3);
        }
    }

    // --exclude probe: no MPI_Iprobe at all, everything else.
    let trace = probe_run(mpi, &["1000", "10"], &["--exclude", "probe"], tmp.path());
    for r in 0..2u32 {
        let re = common::read_rank(&trace, r);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        assert!(
            of(&re.events, "MPI_Iprobe").is_empty(),
            "rank {r}: MPI_Iprobe recorded despite --exclude probe"
        );
        let want = if r == 0 { "MPI_Send" } else { "MPI_Recv" };
        assert_eq!(of(&re.events, want).len(), 2 * SENDS);
        for f in [
            "MPI_Init",
            "MPI_Bcast",
            "MPI_Allreduce",
            "MPI_Reduce",
            "MPI_Barrier",
            "MPI_Finalize",
        ] {
            assert_eq!(
                of(&re.events, f).len(),
                1,
                "rank {r}: {f} events with --exclude probe"
            );
        }
    }

    // --include collective: collectives only.
    let trace = probe_run(
        mpi,
        &["1000", "10"],
        &["--include", "collective"],
        tmp.path(),
    );
    for r in 0..2u32 {
        let re = common::read_rank(&trace, r);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        let c = counts(&re.events);
        let want: BTreeMap<String, u64> = [
            ("MPI_Barrier", 1),
            ("MPI_Bcast", 1),
            ("MPI_Allreduce", 1),
            ("MPI_Reduce", 1),
        ]
        .iter()
        .map(|(n, c)| (n.to_string(), *c))
        .collect();
        assert_eq!(c, want, "rank {r}: events with --include collective");
    }
}

#[test]
fn sampling_and_filters_openmpi() {
    let _g = common::mpi_lock();
    sampling_and_filters(Mpi::OpenMpi);
}

#[test]
fn sampling_and_filters_mpich() {
    let _g = common::mpi_lock();
    sampling_and_filters(Mpi::Mpich);
}

/// `--start-after` and `--duration`: the program sends 4 messages (tag 5) and probes 1000
/// times right after `MPI_Init`, sleeps 1.5 s, then sends 4 more (tag 6).
fn window(mpi: Mpi) {
    let tmp = common::tempdir();
    let args = ["1000", "4", "1500", "2"];

    let trace = probe_run(mpi, &args, &["--start-after", "0.6"], tmp.path());
    let rep = common::report_json(&trace);
    assert_eq!(
        rep["calls"]["MPI_Iprobe"]["count"], 2000,
        "calls before the window are counted"
    );
    assert_eq!(rep["calls"]["MPI_Iprobe"]["recorded"], 0);
    assert_eq!(rep["calls"]["MPI_Send"]["count"], 8);
    assert_eq!(rep["calls"]["MPI_Send"]["recorded"], 4);
    let re = common::read_rank(&trace, 0);
    assert_trailer_matches(&trace, 0, &re.events, &re.tables);
    assert!(of(&re.events, "MPI_Iprobe").is_empty());
    assert!(
        of(&re.events, "MPI_Init").is_empty(),
        "MPI_Init happens before the window"
    );
    let sends = of(&re.events, "MPI_Send");
    assert_eq!(
        send_tags(&re.events),
        vec![6; 4],
        "only the sends after the pause are recorded"
    );
    assert_eq!(
        sends[0].skipped, 4,
        "the first recorded send says 4 were not recorded"
    );
    assert!(sends[1..].iter().all(|e| e.skipped == 0));

    let trace = probe_run(mpi, &args, &["--duration", "0.6"], tmp.path());
    let rep = common::report_json(&trace);
    assert_eq!(rep["calls"]["MPI_Send"]["count"], 8);
    assert_eq!(rep["calls"]["MPI_Send"]["recorded"], 4);
    assert_eq!(rep["calls"]["MPI_Iprobe"]["recorded"], 2000);
    let re = common::read_rank(&trace, 0);
    assert_trailer_matches(&trace, 0, &re.events, &re.tables);
    assert_eq!(
        send_tags(&re.events),
        vec![5; 4],
        "only the sends before the pause are recorded"
    );
    assert!(
        of(&re.events, "MPI_Reduce").is_empty(),
        "calls after the window are not recorded"
    );
}

#[test]
fn window_openmpi() {
    let _g = common::mpi_lock();
    window(Mpi::OpenMpi);
}

#[test]
fn window_mpich() {
    let _g = common::mpi_lock();
    window(Mpi::Mpich);
}
