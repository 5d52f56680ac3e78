//! Exported synthetic traces replayed by SimGrid (`smpirun -replay`). SimGrid must be
//! installed: these tests fail, saying so, when `smpirun` is missing.

use crate::common;

use crate::common::{p2p, replay, write_run, WORLD};
use mpiscope_export::{export_simgrid_ti, TiOptions};
use mpiscope_trace::{ListKind, RunDir, Slot, NO_VALUE, PEER_ANY, TAG_ANY};

const MS: u64 = 1_000_000;

/// One 1 MB message after 1 ms of compute: the simulated time must be what the platform
/// (1 Gflop/s hosts, 1 Gbps links with 10 us latency) gives.
#[test]
fn one_message_takes_the_expected_time() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    write_run(&run_dir, 2, |rank, b| {
        b.call("MPI_Init", 0, 10, &[], &[]);
        if rank == 0 {
            b.call("MPI_Send", MS, 9 * MS, &p2p(1, 0, 1_000_000, 1), &[]);
        } else {
            b.call("MPI_Recv", 0, 10 * MS, &p2p(0, 0, 1_000_000, 1), &[]);
        }
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    let out = tmp.path().join("ti");
    export_simgrid_ti(
        &RunDir::open(&run_dir).unwrap(),
        &out,
        &TiOptions::default(),
    )
    .unwrap();
    assert_eq!(
        common::lines(&out, 0),
        [
            "0 init",
            "0 compute 1000000",
            "0 send 1 0 1000000 6",
            "0 finalize"
        ]
    );
    let r = replay(tmp.path(), &out.join("index.txt"), 2);
    // 1 ms of compute, then 8e6 bits at 1 Gbps (8 ms) slowed down by SMPI's bandwidth
    // factor for large messages (about 0.94), plus the latencies of two links scaled by the
    // latency factor: about 9.7 ms in all.
    assert!(
        (0.0093..0.0105).contains(&r.simulated_s),
        "simulated time {} s out of the expected range:\n{}",
        r.simulated_s,
        r.output
    );
}

/// A 4-rank trace with point-to-point traffic (blocking, non-blocking, wildcard, sendrecv)
/// and collectives replays to completion.
#[test]
fn four_ranks_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let n = 4i64;
    write_run(&run_dir, n as u32, |rank, b| {
        let r = i64::from(rank);
        let (left, right) = ((r + n - 1) % n, (r + 1) % n);
        let coll = |extra: &[(Slot, i64)]| -> Vec<(Slot, i64)> {
            let mut v = vec![(Slot::Comm, WORLD)];
            v.extend_from_slice(extra);
            v
        };
        b.call("MPI_Init", 0, 10, &[], &[]);
        b.call("MPI_Comm_rank", MS, 100, &[(Slot::Comm, WORLD)], &[]);
        // Pairs: even ranks send, odd ranks receive from any source.
        if r % 2 == 0 {
            b.call("MPI_Send", 0, 100_000, &p2p(r + 1, 10, 1000, 8), &[]);
        } else {
            let mut a = p2p(PEER_ANY, 10, 1000, 8);
            a.extend([
                (Slot::StatusSource, r - 1),
                (Slot::StatusTag, 10),
                (Slot::StatusBytes, 8000),
            ]);
            b.call("MPI_Recv", 0, 100_000, &a, &[]);
        }
        // Datatypes of every size class: 16 and 2 bytes (SimGrid ids 26 and 3), and 12 bytes
        // (written as bytes).
        for (tag, count, size) in [(11, 3, 16), (12, 5, 2), (13, 7, 12)] {
            if r % 2 == 0 {
                b.call("MPI_Send", 0, 1000, &p2p(r + 1, tag, count, size), &[]);
            } else {
                b.call("MPI_Recv", 0, 1000, &p2p(r - 1, tag, count, size), &[]);
            }
        }
        // Ring, completed by two waits.
        let mut a = p2p(left, 20, 512, 8);
        a.push((Slot::Request, 1));
        b.call("MPI_Irecv", 0, 1000, &a, &[]);
        let mut a = p2p(right, 20, 512, 8);
        a.push((Slot::Request, 2));
        b.call("MPI_Isend", 0, 1000, &a, &[]);
        b.call(
            "MPI_Wait",
            MS / 2,
            1000,
            &[
                (Slot::Request, 1),
                (Slot::StatusSource, left),
                (Slot::StatusTag, 20),
            ],
            &[],
        );
        b.call("MPI_Wait", 0, 1000, &[(Slot::Request, 2)], &[]);
        // Ring, wildcard receive, completed by a waitall.
        let mut a = p2p(PEER_ANY, TAG_ANY, 512, 8);
        a.push((Slot::Request, 3));
        b.call("MPI_Irecv", 0, 1000, &a, &[]);
        let mut a = p2p(right, 21, 512, 8);
        a.push((Slot::Request, 4));
        b.call("MPI_Isend", 0, 1000, &a, &[]);
        b.call(
            "MPI_Waitall",
            0,
            1000,
            &[(Slot::ArrayLen, 2)],
            &[
                (ListKind::Requests, vec![3, 4]),
                (
                    ListKind::Completions,
                    vec![3, left, 21, 4096, 4, NO_VALUE, NO_VALUE, NO_VALUE],
                ),
            ],
        );
        for tag in [0, 5] {
            let mut a = p2p(right, tag, 100, 8);
            a.extend([
                (Slot::RecvPeer, left),
                (Slot::RecvTag, tag),
                (Slot::RecvCount, 100),
                (Slot::RecvDtypeSize, 8),
            ]);
            b.call("MPI_Sendrecv", 0, 1000, &a, &[]);
        }
        b.call("MPI_Barrier", 0, 1000, &coll(&[]), &[]);
        b.call(
            "MPI_Bcast",
            0,
            1000,
            &coll(&[(Slot::Count, 2048), (Slot::DtypeSize, 8), (Slot::Root, 0)]),
            &[],
        );
        b.call(
            "MPI_Reduce",
            0,
            1000,
            &coll(&[(Slot::Count, 128), (Slot::DtypeSize, 4), (Slot::Root, 3)]),
            &[],
        );
        b.call(
            "MPI_Allreduce",
            0,
            1000,
            &coll(&[(Slot::Count, 256), (Slot::DtypeSize, 8)]),
            &[],
        );
        let both = |c: i64| {
            [
                (Slot::Count, c),
                (Slot::DtypeSize, 8),
                (Slot::RecvCount, c),
                (Slot::RecvDtypeSize, 8),
            ]
        };
        b.call("MPI_Alltoall", 0, 1000, &coll(&both(8)), &[]);
        b.call("MPI_Allgather", 0, 1000, &coll(&both(16)), &[]);
        let mut g = vec![(Slot::Count, 32), (Slot::DtypeSize, 8), (Slot::Root, 1)];
        if r == 1 {
            g.extend([(Slot::RecvCount, 32), (Slot::RecvDtypeSize, 8)]);
        }
        b.call("MPI_Gather", 0, 1000, &coll(&g), &[]);
        b.call(
            "MPI_Alltoallv",
            0,
            1000,
            &coll(&[(Slot::DtypeSize, 8), (Slot::RecvDtypeSize, 8)]),
            &[
                (ListKind::SendCounts, vec![r + 1; 4]),
                (ListKind::RecvCounts, vec![1, 2, 3, 4]),
            ],
        );
        b.call("MPI_Wtime", 2 * MS, 50, &[], &[]);
        b.call("MPI_Finalize", 0, 1000, &[], &[]);
    });
    let out = tmp.path().join("ti");
    let summary = export_simgrid_ti(
        &RunDir::open(&run_dir).unwrap(),
        &out,
        &TiOptions::default(),
    )
    .unwrap();
    assert_eq!(summary.ranks, 4);
    let rank1 = common::lines(&out, 1);
    for l in [
        "1 recv 0 10 1000 0",
        "1 recv 0 11 3 26",
        "1 recv 0 12 5 3",
        "1 recv 0 13 84 6",
        "1 irecv 0 21 512 0",
        "1 waitall 2",
        "1 sendRecv 100 2 100 0 0 0",
        "1 wait 1 2 5",
    ] {
        assert!(rank1.iter().any(|x| x == l), "no {l:?} in rank 1");
    }
    let r = replay(tmp.path(), &out.join("index.txt"), 4);
    // 3.5 ms of compute on every rank, plus small messages.
    assert!(
        (0.0035..0.02).contains(&r.simulated_s),
        "simulated time {} s out of the expected range:\n{}",
        r.simulated_s,
        r.output
    );
}

/// A run of one process: its collectives move nothing between processes and are left out,
/// with a note, their time added to compute; SimGrid 3.32 aborts on some of them ("Actor
/// pid=-1 is gone" in the 200-byte broadcast of mdrun's one-rank run, and in `reduce` and
/// `allgatherv` of some sizes). The export replays, to the traced time.
#[test]
fn one_process_run_replays_without_its_collectives() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    let world = |extra: &[(Slot, i64)]| -> Vec<(Slot, i64)> {
        let mut v = vec![(Slot::Comm, WORLD)];
        v.extend_from_slice(extra);
        v
    };
    write_run(&run_dir, 1, |_, b| {
        b.call("MPI_Init", 0, 10, &[], &[]);
        let bytes = [(Slot::Count, 200), (Slot::DtypeSize, 1), (Slot::Root, 0)];
        b.call("MPI_Bcast", MS, 10, &world(&bytes), &[]);
        let doubles = [(Slot::Count, 2), (Slot::DtypeSize, 8), (Slot::Root, 0)];
        b.call("MPI_Reduce", MS, 10, &world(&doubles), &[]);
        b.call("MPI_Allreduce", MS, 10, &world(&doubles), &[]);
        let counts = [(ListKind::RecvCounts, vec![100])];
        b.call("MPI_Allgatherv", MS, 10, &world(&bytes), &counts);
        b.call("MPI_Barrier", MS, 10, &world(&[]), &[]);
        b.call("MPI_Finalize", MS, 10, &[], &[]);
    });
    let out = tmp.path().join("ti");
    let summary = export_simgrid_ti(
        &RunDir::open(&run_dir).unwrap(),
        &out,
        &TiOptions::default(),
    )
    .unwrap();
    // 6 ms of compute and 5 collectives of 10 ns each, all one burst.
    assert_eq!(
        common::lines(&out, 0),
        ["0 init", "0 compute 6000050", "0 finalize"]
    );
    for f in [
        "MPI_Allgatherv",
        "MPI_Allreduce",
        "MPI_Barrier",
        "MPI_Bcast",
        "MPI_Reduce",
    ] {
        let note = format!("{f}: 1 call: collective of a one-process run");
        assert!(
            summary.skipped.iter().any(|s| s.starts_with(&note)),
            "no note {note:?} in {:#?}",
            summary.skipped
        );
    }
    let r = replay(tmp.path(), &out.join("index.txt"), 1);
    // smpirun prints its time to the microsecond.
    assert!((r.simulated_s - 0.006000050).abs() < 2e-6, "{}", r.output);
}
