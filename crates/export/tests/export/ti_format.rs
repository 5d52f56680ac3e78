//! Exact TI text produced from small synthetic traces.

use crate::common::{lines, p2p, write_run, SELF, WORLD};
use mpiscope_export::{export_simgrid_ti, ExportError, TiOptions};
use mpiscope_trace::{
    CommDef, CommKind, ListKind, RunDir, Slot, NO_VALUE, PEER_ANY, PEER_NULL, TAG_ANY,
};

fn export(
    dir: &std::path::Path,
    opts: &TiOptions,
) -> (std::path::PathBuf, mpiscope_export::TiSummary) {
    let run = RunDir::open(dir.join("run")).expect("open run");
    let out = dir.join("ti");
    let summary = export_simgrid_ti(&run, &out, opts).expect("export");
    (out, summary)
}

fn expect(out: &std::path::Path, rank: u32, expected: &[&str]) {
    let got = lines(out, rank);
    let want: Vec<String> = expected.iter().map(|l| format!("{rank} {l}")).collect();
    assert_eq!(got, want, "rank {rank}:\n{}", got.join("\n"));
}

#[test]
fn point_to_point_and_compute() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(&tmp.path().join("run"), 2, |rank, b| {
        b.call("MPI_Init", 500, 1000, &[], &[]);
        if rank == 1 {
            b.call("MPI_Finalize", 0, 10, &[], &[]);
            return;
        }
        b.call("MPI_Comm_rank", 100, 50, &[(Slot::Comm, WORLD)], &[]);
        b.call("MPI_Send", 350, 200, &p2p(1, 5, 10, 8), &[]);
        let mut recv = p2p(PEER_ANY, TAG_ANY, 4, 4);
        recv.extend([
            (Slot::StatusSource, 1),
            (Slot::StatusTag, 7),
            (Slot::StatusBytes, 16),
        ]);
        b.call("MPI_Recv", 300, 100, &recv, &[]);
        // Isend, Irecv completed one by one; a failed test in between.
        let mut isend = p2p(1, 1, 100, 1);
        isend.push((Slot::Request, 1));
        b.call("MPI_Isend", 0, 10, &isend, &[]);
        let mut irecv = p2p(1, 2, 3, 12);
        irecv.push((Slot::Request, 2));
        b.call("MPI_Irecv", 0, 10, &irecv, &[]);
        b.call(
            "MPI_Test",
            1000,
            500,
            &[(Slot::Request, 2), (Slot::Flag, 0)],
            &[],
        );
        b.call("MPI_Wait", 0, 100, &[(Slot::Request, 1)], &[]);
        b.call(
            "MPI_Wait",
            0,
            100,
            &[
                (Slot::Request, 2),
                (Slot::StatusSource, 1),
                (Slot::StatusTag, 2),
                (Slot::StatusBytes, 36),
            ],
            &[],
        );
        // A waitall completing everything pending, with a wildcard receive.
        let mut isend = p2p(1, 3, 8, 8);
        isend.push((Slot::Request, 3));
        b.call("MPI_Isend", 0, 10, &isend, &[]);
        let mut irecv = p2p(PEER_ANY, 3, 8, 8);
        irecv.push((Slot::Request, 4));
        b.call("MPI_Irecv", 0, 10, &irecv, &[]);
        b.call(
            "MPI_Waitall",
            0,
            100,
            &[(Slot::ArrayLen, 2)],
            &[
                (ListKind::Requests, vec![3, 4]),
                (
                    ListKind::Completions,
                    vec![3, NO_VALUE, NO_VALUE, NO_VALUE, 4, 1, 3, 64],
                ),
            ],
        );
        // A waitall completing part of what is pending.
        for (req, tag) in [(5, 4), (6, 5)] {
            let mut isend = p2p(1, tag, 1, 8);
            isend.push((Slot::Request, req));
            b.call("MPI_Isend", 0, 10, &isend, &[]);
        }
        b.call(
            "MPI_Waitall",
            0,
            10,
            &[(Slot::ArrayLen, 1)],
            &[
                (ListKind::Requests, vec![5]),
                (ListKind::Completions, vec![5, NO_VALUE, NO_VALUE, NO_VALUE]),
            ],
        );
        b.call("MPI_Wait", 0, 10, &[(Slot::Request, 6)], &[]);
        // Sendrecv with tags 0, then with other tags.
        for tag in [0, 9] {
            let mut sr = p2p(1, tag, 2, 8);
            sr.extend([
                (Slot::RecvPeer, 1),
                (Slot::RecvTag, tag),
                (Slot::RecvCount, 2),
                (Slot::RecvDtypeSize, 8),
                (Slot::StatusSource, 1),
                (Slot::StatusTag, tag),
            ]);
            b.call("MPI_Sendrecv", 0, 100, &sr, &[]);
        }
        b.call("MPI_Send", 0, 5, &p2p(PEER_NULL, 0, 1, 8), &[]);
        b.call("MPI_Finalize", 700, 10, &[], &[]);
    });
    let (out, summary) = export(tmp.path(), &TiOptions::default());
    expect(
        &out,
        0,
        &[
            "init",
            "compute 500",
            "send 1 5 10 0",
            "compute 300",
            "recv 1 7 4 1",
            "isend 1 1 100 6",
            "irecv 1 2 36 6",
            "compute 1000",
            "wait 0 1 1",
            "wait 1 0 2",
            "isend 1 3 8 0",
            "irecv 1 3 8 0",
            "waitall 2",
            "isend 1 4 1 0",
            "isend 1 5 1 0",
            "wait 0 1 4",
            "wait 0 1 5",
            "sendRecv 2 1 2 1 0 0",
            "isend 1 9 2 0",
            "recv 1 9 2 0",
            "wait 0 1 9",
            "compute 700",
            "finalize",
        ],
    );
    expect(&out, 1, &["init", "finalize"]);
    assert_eq!(summary.ranks, 2);
    assert_eq!(summary.actions, 25);
    assert_eq!(
        summary.skipped,
        vec![
            "MPI_Comm_rank: 1 call: no TI action; duration added to compute".to_owned(),
            "MPI_Send: 1 call: to or from MPI_PROC_NULL only; dropped".to_owned(),
            "MPI_Test: 1 call: completed nothing; dropped with its duration (waiting time)"
                .to_owned(),
        ]
    );
    let index = std::fs::read_to_string(out.join("index.txt")).unwrap();
    let abs = std::fs::canonicalize(&out).unwrap();
    assert_eq!(
        index,
        format!(
            "{}\n{}\n",
            abs.join("rank-0.txt").display(),
            abs.join("rank-1.txt").display()
        )
    );
}

#[test]
fn collectives() {
    let tmp = tempfile::tempdir().unwrap();
    let coll = |extra: &[(Slot, i64)]| -> Vec<(Slot, i64)> {
        let mut v = vec![(Slot::Comm, WORLD)];
        v.extend_from_slice(extra);
        v
    };
    write_run(&tmp.path().join("run"), 4, |rank, b| {
        let r = i64::from(rank);
        b.comm(CommDef {
            id: 5,
            key: 77,
            kind: CommKind::Intra,
            size: 4,
            ranks: vec![3, 2, 1, 0],
            remote: vec![],
        });
        b.comm(CommDef {
            id: 6,
            key: 78,
            kind: CommKind::Intra,
            size: 2,
            ranks: vec![0, 1],
            remote: vec![],
        });
        b.call("MPI_Init", 0, 10, &[], &[]);
        b.call("MPI_Barrier", 0, 10, &coll(&[]), &[]);
        b.call(
            "MPI_Bcast",
            0,
            10,
            &coll(&[(Slot::Count, 30), (Slot::DtypeSize, 8), (Slot::Root, 1)]),
            &[],
        );
        b.call(
            "MPI_Reduce",
            0,
            10,
            &coll(&[(Slot::Count, 40), (Slot::DtypeSize, 8), (Slot::Root, 2)]),
            &[],
        );
        b.call(
            "MPI_Allreduce",
            0,
            10,
            &coll(&[(Slot::Count, 40), (Slot::DtypeSize, 4)]),
            &[],
        );
        let both = [
            (Slot::Count, 10),
            (Slot::DtypeSize, 8),
            (Slot::RecvCount, 10),
            (Slot::RecvDtypeSize, 8),
        ];
        b.call("MPI_Alltoall", 0, 10, &coll(&both), &[]);
        // In place: only the receive side is recorded.
        b.call(
            "MPI_Allgather",
            0,
            10,
            &coll(&[(Slot::RecvCount, 16), (Slot::RecvDtypeSize, 8)]),
            &[],
        );
        let mut gather = vec![(Slot::Count, 10), (Slot::DtypeSize, 8), (Slot::Root, 1)];
        if rank == 1 {
            gather.extend([(Slot::RecvCount, 10), (Slot::RecvDtypeSize, 8)]);
        }
        b.call("MPI_Gather", 0, 10, &coll(&gather), &[]);
        let mut gatherv = vec![(Slot::Count, r + 1), (Slot::DtypeSize, 8), (Slot::Root, 2)];
        let mut lists = vec![];
        if rank == 2 {
            gatherv.push((Slot::RecvDtypeSize, 8));
            lists.push((ListKind::RecvCounts, vec![1, 2, 3, 4]));
        }
        b.call("MPI_Gatherv", 0, 10, &coll(&gatherv), &lists);
        b.call(
            "MPI_Allgatherv",
            0,
            10,
            &coll(&[
                (Slot::Count, r + 1),
                (Slot::DtypeSize, 8),
                (Slot::RecvDtypeSize, 8),
            ]),
            &[(ListKind::RecvCounts, vec![1, 2, 3, 4])],
        );
        let mut scatter = vec![
            (Slot::RecvCount, 5),
            (Slot::RecvDtypeSize, 4),
            (Slot::Root, 0),
        ];
        if rank == 0 {
            scatter.extend([(Slot::Count, 5), (Slot::DtypeSize, 4)]);
        }
        b.call("MPI_Scatter", 0, 10, &coll(&scatter), &[]);
        let mut scatterv = vec![
            (Slot::RecvCount, [1, 1, 2, 2][rank as usize]),
            (Slot::RecvDtypeSize, 8),
            (Slot::Root, 0),
        ];
        let mut lists = vec![];
        if rank == 0 {
            scatterv.push((Slot::DtypeSize, 8));
            lists.push((ListKind::SendCounts, vec![1, 1, 2, 2]));
        }
        b.call("MPI_Scatterv", 0, 10, &coll(&scatterv), &lists);
        b.call(
            "MPI_Alltoallv",
            0,
            10,
            &coll(&[(Slot::DtypeSize, 8), (Slot::RecvDtypeSize, 8)]),
            &[
                (ListKind::SendCounts, vec![r + 1; 4]),
                (ListKind::RecvCounts, vec![1, 2, 3, 4]),
            ],
        );
        b.call(
            "MPI_Reduce_scatter",
            0,
            10,
            &coll(&[(Slot::DtypeSize, 8)]),
            &[(ListKind::RecvCounts, vec![1, 2, 3, 4])],
        );
        b.call(
            "MPI_Reduce_scatter_block",
            0,
            10,
            &coll(&[(Slot::RecvCount, 3), (Slot::RecvDtypeSize, 4)]),
            &[],
        );
        b.call(
            "MPI_Scan",
            0,
            10,
            &coll(&[(Slot::Count, 5), (Slot::DtypeSize, 8)]),
            &[],
        );
        b.call(
            "MPI_Exscan",
            0,
            10,
            &coll(&[(Slot::Count, 5), (Slot::DtypeSize, 8)]),
            &[],
        );
        b.call(
            "MPI_Iallreduce",
            0,
            10,
            &coll(&[(Slot::Count, 7), (Slot::DtypeSize, 8), (Slot::Request, 50)]),
            &[],
        );
        b.call("MPI_Wait", 0, 10, &[(Slot::Request, 50)], &[]);
        // A reordered duplicate of the world: roots are world ranks, counts come in
        // communicator order.
        b.call(
            "MPI_Bcast",
            0,
            10,
            &[
                (Slot::Comm, 5),
                (Slot::Count, 9),
                (Slot::DtypeSize, 8),
                (Slot::Root, 3),
            ],
            &[],
        );
        b.call(
            "MPI_Allgatherv",
            0,
            10,
            &[(Slot::Comm, 5), (Slot::RecvDtypeSize, 8)],
            &[(ListKind::RecvCounts, vec![10, 20, 30, 40])],
        );
        // No TI form: time goes to compute.
        b.call(
            "MPI_Allreduce",
            0,
            300,
            &[(Slot::Comm, 6), (Slot::Count, 1), (Slot::DtypeSize, 8)],
            &[],
        );
        b.call(
            "MPI_Allreduce",
            0,
            200,
            &[(Slot::Comm, SELF), (Slot::Count, 1), (Slot::DtypeSize, 8)],
            &[],
        );
        b.call("MPI_Neighbor_alltoall", 0, 100, &coll(&both), &[]);
        b.call(
            "MPI_Alltoallw",
            0,
            10,
            &coll(&[]),
            &[
                (ListKind::SendCounts, vec![1; 4]),
                (ListKind::SendTypeSizes, vec![4; 4]),
                (ListKind::RecvCounts, vec![2; 4]),
                (ListKind::RecvTypeSizes, vec![8; 4]),
            ],
        );
        // A persistent collective, started twice.
        b.call(
            "MPI_Bcast_init",
            0,
            10,
            &coll(&[
                (Slot::Count, 2),
                (Slot::DtypeSize, 8),
                (Slot::Root, 0),
                (Slot::Request, 60),
            ]),
            &[],
        );
        for _ in 0..2 {
            b.call("MPI_Start", 0, 10, &[(Slot::Request, 60)], &[]);
            b.call("MPI_Wait", 0, 10, &[(Slot::Request, 60)], &[]);
        }
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    let (out, summary) = export(tmp.path(), &TiOptions::default());
    let common_head = [
        "init",
        "barrier",
        "bcast 30 1 0",
        "reduce 40 0 2 0",
        "allreduce 40 0 1",
        "alltoall 10 10 0 0",
        "allgather 16 16 0 0",
        "gather 10 10 1 0 0",
    ];
    let common_tail = [
        "reducescatter 1 2 3 4 0 0",
        "reducescatter 3 3 3 3 0 1",
        "scan 5 0 0",
        "exscan 5 0 0",
        "allreduce 7 0 0",
        "bcast 9 3 0",
    ];
    let tail = |own: i64| -> Vec<String> {
        vec![
            format!("allgatherv {own} 40 30 20 10 0 0"),
            "compute 600".into(),
            "alltoallv 16 4 4 4 4 64 16 16 16 16 6 6".into(),
            // MPI_Bcast_init is local work.
            "compute 10".into(),
            "bcast 2 0 0".into(),
            "bcast 2 0 0".into(),
            "finalize".into(),
        ]
    };
    let mut r0: Vec<String> = common_head.iter().map(|s| s.to_string()).collect();
    r0.extend(
        [
            "gatherv 1 0 0 0 0 2 0 0",
            "allgatherv 1 1 2 3 4 0 0",
            "scatter 5 5 0 1 1",
            "scatterv 1 1 2 2 1 0 0 0",
            "alltoallv 4 1 1 1 1 10 1 2 3 4 0 0",
        ]
        .map(String::from),
    );
    r0.extend(common_tail.map(String::from));
    r0.extend(tail(40));
    expect(&out, 0, &r0.iter().map(String::as_str).collect::<Vec<_>>());
    let mut r2: Vec<String> = common_head.iter().map(|s| s.to_string()).collect();
    r2.extend(
        [
            "gatherv 3 1 2 3 4 2 0 0",
            "allgatherv 3 1 2 3 4 0 0",
            "scatter 5 5 0 1 1",
            "scatterv 0 0 0 0 2 0 0 0",
            "alltoallv 12 3 3 3 3 10 1 2 3 4 0 0",
        ]
        .map(String::from),
    );
    r2.extend(common_tail.map(String::from));
    r2.extend(tail(20));
    expect(&out, 2, &r2.iter().map(String::as_str).collect::<Vec<_>>());
    for note in [
        "MPI_Allreduce: 4 calls: collective on a communicator smaller than MPI_COMM_WORLD",
        "MPI_Allreduce: 4 calls: collective on a single-process communicator",
        "MPI_Bcast_init: 4 calls: non-blocking or persistent collective",
        "MPI_Iallreduce: 4 calls: non-blocking or persistent collective",
        "MPI_Neighbor_alltoall: 4 calls: no TI action",
    ] {
        assert!(
            summary
                .skipped
                .iter()
                .filter(|s| s.starts_with(note))
                .count()
                == 1,
            "no note {note:?} in {:#?}",
            summary.skipped
        );
    }
}

#[test]
fn requests_options_and_communicators() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(&tmp.path().join("run"), 2, |rank, b| {
        b.comm(CommDef {
            id: 7,
            key: 5,
            kind: CommKind::Intra,
            size: 2,
            ranks: vec![0, 1],
            remote: vec![],
        });
        b.call("MPI_Init", 0, 10, &[], &[]);
        if rank == 1 {
            b.call("MPI_Finalize", 0, 10, &[], &[]);
            return;
        }
        // Persistent requests, started together; the burst before is too short to keep.
        let mut s = p2p(1, 3, 4, 8);
        s.push((Slot::Request, 10));
        b.call("MPI_Send_init", 50, 10, &s, &[]);
        let mut r = p2p(PEER_ANY, TAG_ANY, 4, 8);
        r.push((Slot::Request, 11));
        b.call("MPI_Recv_init", 0, 10, &r, &[]);
        b.call(
            "MPI_Startall",
            0,
            10,
            &[(Slot::ArrayLen, 2)],
            &[(ListKind::Requests, vec![10, 11])],
        );
        b.call(
            "MPI_Waitall",
            1000,
            10,
            &[(Slot::ArrayLen, 2)],
            &[
                (ListKind::Requests, vec![10, 11]),
                (
                    ListKind::Completions,
                    vec![10, NO_VALUE, NO_VALUE, NO_VALUE, 11, 1, 8, 32],
                ),
            ],
        );
        // Started again, then cancelled: left out.
        b.call("MPI_Start", 0, 10, &[(Slot::Request, 11)], &[]);
        b.call("MPI_Cancel", 0, 10, &[(Slot::Request, 11)], &[]);
        b.call("MPI_Wait", 0, 10, &[(Slot::Request, 11)], &[]);
        // A wildcard receive completed by Testany.
        let mut r = p2p(PEER_ANY, 4, 4, 8);
        r.push((Slot::Request, 12));
        b.call("MPI_Irecv", 0, 10, &r, &[]);
        b.call(
            "MPI_Testany",
            0,
            10,
            &[
                (Slot::Request, 12),
                (Slot::Flag, 1),
                (Slot::Index, 0),
                (Slot::StatusSource, 1),
                (Slot::StatusTag, 4),
            ],
            &[(ListKind::Requests, vec![12])],
        );
        // A message on another communicator: its tag is moved.
        let mut s = p2p(1, 2, 1, 8);
        s.extend([(Slot::Comm, 7), (Slot::Request, 13)]);
        b.call("MPI_Isend", 0, 10, &s, &[]);
        b.call(
            "MPI_Test",
            0,
            10,
            &[(Slot::Request, 13), (Slot::Flag, 1)],
            &[],
        );
        // Never completed.
        let mut r = p2p(1, 6, 1, 8);
        r.push((Slot::Request, 14));
        b.call("MPI_Irecv", 0, 10, &r, &[]);
    });
    let opts = TiOptions {
        host_speed_flops: 2e9,
        min_compute_ns: 100,
        ..TiOptions::default()
    };
    let (out, summary) = export(tmp.path(), &opts);
    expect(
        &out,
        0,
        &[
            "init",
            "isend 1 3 4 0",
            "irecv 1 8 4 0",
            "compute 2000",
            "waitall 2",
            "irecv 1 4 4 0",
            "wait 1 0 4",
            "isend 1 6000002 1 0",
            "wait 0 1 6000002",
            "finalize",
        ],
    );
    for note in [
        "MPI_Cancel: 1 call: cancelled receive; left out of the replay",
        "MPI_Irecv: 1 call: receive never completed in the trace; dropped",
        "compute bursts shorter than 100 ns: 1 dropped (70 ns in all)",
        "rank 0: the trace has no MPI_Finalize; a finalize action was added",
    ] {
        assert!(
            summary.skipped.iter().any(|s| s == note),
            "no note {note:?} in {:#?}",
            summary.skipped
        );
    }
}

#[test]
fn errors_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    write_run(&run_dir, 2, |_, b| {
        b.call("MPI_Init", 0, 10, &[], &[]);
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    let run = RunDir::open(&run_dir).unwrap();
    let out = tmp.path().join("ti");
    let bad = TiOptions {
        host_speed_flops: 0.0,
        ..TiOptions::default()
    };
    let e = export_simgrid_ti(&run, &out, &bad).unwrap_err();
    assert!(matches!(e, ExportError::InvalidOption { .. }), "{e}");
    assert!(e.to_string().contains("host_speed_flops"), "{e}");

    // A damaged rank file: the error names it and the offset.
    let f1 = run_dir.join(mpiscope_trace::rank_file_name(1));
    std::fs::write(&f1, b"not a trace at all, just text").unwrap();
    let e = export_simgrid_ti(&run, &out, &TiOptions::default()).unwrap_err();
    assert!(e.to_string().contains(&*f1.to_string_lossy()), "{e}");

    // A missing rank: without a manifest, the run has as many ranks as files.
    std::fs::remove_file(run_dir.join(mpiscope_trace::rank_file_name(0))).unwrap();
    let run = RunDir::open(&run_dir).unwrap();
    assert_eq!(run.ranks(), 1);
    let e = export_simgrid_ti(&run, &out, &TiOptions::default()).unwrap_err();
    assert!(matches!(e, ExportError::MissingRank { rank: 0, .. }), "{e}");
    assert!(e.to_string().contains(&*run_dir.to_string_lossy()), "{e}");
}

#[test]
fn cut_trace_is_exported_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("run");
    write_run(&run_dir, 2, |_, b| {
        b.call("MPI_Init", 0, 10, &[], &[]);
        b.call("MPI_Barrier", 100, 10, &[(Slot::Comm, WORLD)], &[]);
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    // Cut rank 0's file inside its last block (the trailer).
    let f = run_dir.join(mpiscope_trace::rank_file_name(0));
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() - 3]).unwrap();
    let (out, summary) = export(tmp.path(), &TiOptions::default());
    expect(&out, 0, &["init", "compute 100", "barrier", "finalize"]);
    assert!(
        summary
            .skipped
            .iter()
            .any(|s| s.starts_with("rank 0: ") && s.contains("replay may deadlock")),
        "{:#?}",
        summary.skipped
    );
}

/// Collectives that move no data (zero counts, as mdrun's MPI_Bcast) are left out: Open MPI
/// and MPICH return from them at once, and SimGrid 3.32 aborts on many (`bcast 0 0 6` at 2
/// ranks dies of SIGFPE). Their time is compute, and a note counts them per function.
/// Zero counts in lists a rank cannot see for the others (alltoallv, gatherv) stay.
#[test]
fn zero_count_collectives_are_left_out_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let coll = |extra: &[(Slot, i64)]| -> Vec<(Slot, i64)> {
        let mut v = vec![(Slot::Comm, WORLD)];
        v.extend_from_slice(extra);
        v
    };
    let zero = [
        (Slot::Count, 0),
        (Slot::DtypeSize, 4),
        (Slot::RecvCount, 0),
        (Slot::RecvDtypeSize, 4),
        (Slot::Root, 0),
    ];
    write_run(&tmp.path().join("run"), 2, |_, b| {
        b.call("MPI_Init", 0, 10, &[], &[]);
        b.call("MPI_Bcast", 100, 10, &coll(&zero), &[]);
        b.call("MPI_Bcast", 100, 10, &coll(&zero), &[]);
        b.call(
            "MPI_Bcast",
            100,
            10,
            &coll(&[(Slot::Count, 3), (Slot::DtypeSize, 4), (Slot::Root, 0)]),
            &[],
        );
        for f in [
            "MPI_Reduce",
            "MPI_Allreduce",
            "MPI_Scan",
            "MPI_Exscan",
            "MPI_Alltoall",
            "MPI_Allgather",
            "MPI_Gather",
            "MPI_Scatter",
            "MPI_Ibcast",
        ] {
            b.call(f, 0, 10, &coll(&zero), &[]);
        }
        let counts = [(ListKind::RecvCounts, vec![0, 0])];
        b.call("MPI_Allgatherv", 0, 10, &coll(&zero), &counts);
        b.call("MPI_Reduce_scatter", 0, 10, &coll(&zero), &counts);
        // One rank's zero counts say nothing of the other's: kept.
        let v = [
            (ListKind::SendCounts, vec![0, 0]),
            (ListKind::RecvCounts, vec![0, 0]),
        ];
        b.call("MPI_Alltoallv", 0, 10, &coll(&zero), &v);
        b.call("MPI_Finalize", 0, 10, &[], &[]);
    });
    let (out, summary) = export(tmp.path(), &TiOptions::default());
    // 100 ns of compute, then the zero-count bcasts' 2 x 10 ns and their gaps added to it.
    expect(
        &out,
        0,
        &[
            "init",
            "compute 320",
            "bcast 3 0 1",
            "compute 110",
            "alltoallv 0 0 0 0 0 0 1 1",
            "finalize",
        ],
    );
    for f in [
        "MPI_Reduce",
        "MPI_Allreduce",
        "MPI_Scan",
        "MPI_Exscan",
        "MPI_Alltoall",
        "MPI_Allgather",
        "MPI_Gather",
        "MPI_Scatter",
        "MPI_Ibcast",
        "MPI_Allgatherv",
        "MPI_Reduce_scatter",
    ] {
        let note = format!("{f}: 2 calls: zero-count collective");
        assert!(
            summary.skipped.iter().any(|s| s.starts_with(&note)),
            "no note {note:?} in {:#?}",
            summary.skipped
        );
    }
    assert!(
        summary
            .skipped
            .iter()
            .any(|s| s.starts_with("MPI_Bcast: 4 calls: zero-count collective")),
        "{:#?}",
        summary.skipped
    );
}
