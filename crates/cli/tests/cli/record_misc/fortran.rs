//! The Fortran bindings (`use mpi`, `mpif.h`, `use mpi_f08`) under Open MPI and MPICH: the
//! programs of `tests/programs/fortran` run plain and traced on 4 ranks, every call of their
//! fixed communication pattern checked (counts, arguments, split communicators, requests,
//! the report).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use super::{assert_trailer_matches, counts, of, slot, world_id};
use crate::common::Mpi;
use mpiscope_trace::{Event, Lang, ListKind, Slot, PEER_ANY};

/// What the Fortran test programs print (rank 0, 4 ranks).
const FORTRAN_OUTPUT: &str = "ranks 4 checksum 10.000 7547.000 2.000\n";

/// Builds and runs one of the Fortran programs plain and traced on 4 ranks, and checks
/// every call of the fixed communication pattern (see `tests/programs/fortran/f_mpi.f90`).
fn fortran_case(mpi: Mpi, program: &str, extra: &[&str]) {
    let exe = common::build(mpi, program, extra);
    let plain = common::run_plain(mpi, 4, &exe, &[]);
    assert_eq!(
        plain.code,
        Some(0),
        "untraced {program} failed:\n{}",
        plain.stderr
    );
    assert_eq!(plain.stdout, FORTRAN_OUTPUT, "untraced {program} output");
    let tmp = common::tempdir();
    let (run, trace) = common::run_traced(mpi, 4, &exe, &[], &[], tmp.path());
    assert_eq!(
        run.code,
        Some(0),
        "traced {program} failed:\n{}",
        run.stderr
    );
    assert_eq!(
        run.stdout, plain.stdout,
        "traced output differs from the untraced one"
    );

    let np = 4i64;
    let mut ranks = Vec::new();
    for r in 0..4u32 {
        let re = common::read_rank(&trace, r);
        assert!(re.complete, "rank {r}: no trailer ({:?})", re.stopped);
        assert_trailer_matches(&trace, r, &re.events, &re.tables);
        ranks.push(re);
    }

    // Exact per-rank counts, every call through the Fortran binding.
    for (r, re) in ranks.iter().enumerate() {
        let r = r as i64;
        let mut want: BTreeMap<String, u64> = [
            ("MPI_Init", 1),
            ("MPI_Comm_rank", 2),
            ("MPI_Comm_size", 2),
            ("MPI_Send", if r == 2 { 1 } else { 2 }),
            ("MPI_Recv", if r < 2 { 1 } else { 2 }),
            ("MPI_Irecv", if r == 0 { 5 } else { 4 }),
            ("MPI_Isend", 4),
            ("MPI_Waitall", 2),
            ("MPI_Bcast", 1),
            ("MPI_Comm_split", 1),
            ("MPI_Allreduce", 1),
            ("MPI_Barrier", 1),
            ("MPI_Finalize", 1),
        ]
        .iter()
        .map(|(n, c)| (n.to_string(), *c))
        .collect();
        if r == 0 {
            want.insert("MPI_Wait".into(), 1);
        }
        assert_eq!(counts(&re.events), want, "rank {r}: events per function");
        for (n, e) in &re.events {
            let def = re
                .tables
                .calls
                .get(&e.call)
                .unwrap_or_else(|| panic!("rank {r}: call {} undefined", e.call));
            assert_eq!(
                def.lang,
                Lang::Fortran,
                "rank {r}: {n} not marked as a Fortran call"
            );
            assert_eq!(&def.name, n);
        }
    }

    // Arguments.
    for (r, re) in ranks.iter().enumerate() {
        let r = r as i64;
        let evs = &re.events;
        let world = world_id(&re.tables);
        let (next, prev) = ((r + 1) % np, (r + np - 1) % np);
        let buf = |e: &Event, count: i64, size: i64| {
            assert_eq!(slot(e, Slot::Count), count, "rank {r}: count of {e:?}");
            assert_eq!(
                slot(e, Slot::DtypeSize),
                size,
                "rank {r}: datatype size of {e:?}"
            );
            assert_eq!(
                slot(e, Slot::Bytes),
                count * size,
                "rank {r}: bytes of {e:?}"
            );
        };
        let p2p = |e: &Event, peer: i64, tag: i64, comm: i64| {
            assert_eq!(slot(e, Slot::Peer), peer, "rank {r}: peer of {e:?}");
            assert_eq!(slot(e, Slot::Tag), tag, "rank {r}: tag of {e:?}");
            assert_eq!(slot(e, Slot::Comm), comm, "rank {r}: comm of {e:?}");
        };

        // The split communicator: {0, 2} and {1, 3}.
        let split = of(evs, "MPI_Comm_split");
        assert_eq!(slot(split[0], Slot::Comm), world);
        let sub = slot(split[0], Slot::NewComm);
        let def = re
            .tables
            .comms
            .get(&(sub as u32))
            .unwrap_or_else(|| panic!("rank {r}: comm {sub} undefined"));
        assert_eq!(def.size, 2, "rank {r}: split comm {def:?}");
        assert_eq!(
            def.ranks,
            vec![(r % 2) as u32, (r % 2 + 2) as u32],
            "rank {r}: split comm members"
        );
        let cr = of(evs, "MPI_Comm_rank");
        assert_eq!(
            (slot(cr[0], Slot::Comm), slot(cr[1], Slot::Comm)),
            (world, sub)
        );
        let cs = of(evs, "MPI_Comm_size");
        assert_eq!(
            (slot(cs[0], Slot::Comm), slot(cs[1], Slot::Comm)),
            (world, sub)
        );

        // Blocking point-to-point.
        let sends = of(evs, "MPI_Send");
        p2p(sends[0], next, 11, world);
        buf(sends[0], 10, 4);
        if r < 2 {
            p2p(sends[1], r + 2, 51, sub);
            buf(sends[1], 4, 8);
        }
        if r == 3 {
            p2p(sends[1], 0, 41, world);
            buf(sends[1], 3, 4);
        }
        let recvs = of(evs, "MPI_Recv");
        p2p(recvs[0], prev, 11, world);
        buf(recvs[0], 10, 4);
        assert_eq!(
            (
                slot(recvs[0], Slot::StatusSource),
                slot(recvs[0], Slot::StatusTag),
                slot(recvs[0], Slot::StatusBytes)
            ),
            (prev, 11, 40),
            "rank {r}: ring receive status"
        );
        if r >= 2 {
            p2p(recvs[1], r - 2, 51, sub);
            buf(recvs[1], 4, 8);
            assert_eq!(
                (
                    slot(recvs[1], Slot::StatusSource),
                    slot(recvs[1], Slot::StatusTag),
                    slot(recvs[1], Slot::StatusBytes)
                ),
                (r - 2, 51, 32),
                "rank {r}: split receive status (source as a world rank)"
            );
        }

        // Non-blocking point-to-point.
        let irecvs = of(evs, "MPI_Irecv");
        let isends = of(evs, "MPI_Isend");
        for (k, (peer, tag, count, size)) in [
            (prev, 21, 5, 8),
            (next, 22, 5, 8),
            (prev, 31, 6, 4),
            (next, 32, 6, 4),
        ]
        .into_iter()
        .enumerate()
        {
            p2p(irecvs[k], peer, tag, world);
            buf(irecvs[k], count, size);
        }
        for (k, (peer, tag, count, size)) in [
            (next, 21, 5, 8),
            (prev, 22, 5, 8),
            (next, 31, 6, 4),
            (prev, 32, 6, 4),
        ]
        .into_iter()
        .enumerate()
        {
            p2p(isends[k], peer, tag, world);
            buf(isends[k], count, size);
        }
        if r == 0 {
            p2p(irecvs[4], PEER_ANY, 41, world);
            buf(irecvs[4], 3, 4);
            let w = of(evs, "MPI_Wait")[0];
            assert_eq!(
                slot(w, Slot::Request),
                slot(irecvs[4], Slot::Request),
                "MPI_WAIT completes the wildcard MPI_IRECV"
            );
            assert_eq!(
                (
                    slot(w, Slot::StatusSource),
                    slot(w, Slot::StatusTag),
                    slot(w, Slot::StatusBytes)
                ),
                (np - 1, 41, 12),
                "wildcard receive completed with MPI_STATUS_IGNORE: the status is still decoded"
            );
        }

        // Collectives.
        let b = of(evs, "MPI_Bcast")[0];
        assert_eq!(slot(b, Slot::Root), 1, "rank {r}: bcast root");
        assert_eq!(slot(b, Slot::Comm), world);
        buf(b, 7, 4);
        let a = of(evs, "MPI_Allreduce")[0];
        assert_eq!(slot(a, Slot::Comm), world);
        buf(a, 3, 8);
        let op = slot(a, Slot::Op);
        let op_name = re.tables.ops.get(&(op as u32)).map(|o| o.name.clone());
        assert_eq!(
            op_name.as_deref(),
            Some("MPI_SUM"),
            "rank {r}: allreduce op {op} in {:?}",
            re.tables.ops
        );
        assert_eq!(slot(of(evs, "MPI_Barrier")[0], Slot::Comm), world);
    }

    // The report: exact counts, all through Fortran, byte totals.
    let rep = common::report_json(&trace);
    assert_eq!(rep["ranks"], 4);
    let want: &[(&str, u64)] = &[
        ("MPI_Init", 4),
        ("MPI_Comm_rank", 8),
        ("MPI_Comm_size", 8),
        ("MPI_Send", 7),
        ("MPI_Recv", 6),
        ("MPI_Irecv", 17),
        ("MPI_Isend", 16),
        ("MPI_Waitall", 8),
        ("MPI_Wait", 1),
        ("MPI_Bcast", 4),
        ("MPI_Comm_split", 4),
        ("MPI_Allreduce", 4),
        ("MPI_Barrier", 4),
        ("MPI_Finalize", 4),
    ];
    let calls = rep["calls"].as_object().unwrap();
    assert_eq!(
        calls.keys().cloned().collect::<BTreeSet<_>>(),
        want.iter()
            .map(|(n, _)| n.to_string())
            .collect::<BTreeSet<_>>(),
        "functions in the report"
    );
    for (n, c) in want {
        let s = &rep["calls"][*n];
        assert_eq!(s["count"], *c, "report count of {n}");
        assert_eq!(s["recorded"], *c, "report recorded of {n}");
        assert_eq!(s["fortran"], *c, "report fortran count of {n}");
    }
    assert_eq!(rep["calls"]["MPI_Send"]["bytes_sent"], 4 * 40 + 2 * 32 + 12);
    assert_eq!(rep["calls"]["MPI_Recv"]["bytes_received"], 4 * 40 + 2 * 32);
    for pr in rep["per_rank"].as_array().unwrap() {
        assert_eq!(pr["complete"], true, "{pr}");
    }

    // Requests: every MPI_ISEND / MPI_IRECV has its own id, and each MPI_WAITALL lists and
    // completes exactly the four requests started before it, receives with their status
    // (decoded even under MPI_STATUSES_IGNORE), sends without.
    for (r, re) in ranks.iter().enumerate() {
        let r = r as i64;
        let evs = &re.events;
        let (next, prev) = ((r + 1) % np, (r + np - 1) % np);
        let irecvs = of(evs, "MPI_Irecv");
        let isends = of(evs, "MPI_Isend");
        let ids: Vec<i64> = irecvs
            .iter()
            .chain(isends.iter())
            .map(|e| slot(e, Slot::Request))
            .collect();
        assert_eq!(
            ids.iter().collect::<BTreeSet<_>>().len(),
            ids.len(),
            "rank {r}: request ids not unique: {ids:?}"
        );
        for (k, w) in of(evs, "MPI_Waitall").into_iter().enumerate() {
            let started = [
                slot(irecvs[2 * k], Slot::Request),
                slot(irecvs[2 * k + 1], Slot::Request),
                slot(isends[2 * k], Slot::Request),
                slot(isends[2 * k + 1], Slot::Request),
            ];
            assert_eq!(slot(w, Slot::ArrayLen), 4);
            assert_eq!(
                w.list(ListKind::Requests),
                Some(&started[..]),
                "rank {r}: MPI_WAITALL #{k} request list (Isend/Irecv ids {started:?}): {w:?}"
            );
            let done = w.completions();
            let mut done_ids: Vec<i64> = done.iter().map(|c| c.request).collect();
            done_ids.sort();
            let mut want_ids = started.to_vec();
            want_ids.sort();
            assert_eq!(
                done_ids, want_ids,
                "rank {r}: MPI_WAITALL #{k} completions: {done:?}"
            );
            let (tag0, bytes) = if k == 0 { (21, 40) } else { (31, 24) };
            for c in &done {
                if c.request == started[0] {
                    assert_eq!(
                        (c.source, c.tag, c.bytes),
                        (Some(prev), Some(tag0), Some(bytes)),
                        "rank {r}: {c:?}"
                    );
                } else if c.request == started[1] {
                    assert_eq!(
                        (c.source, c.tag, c.bytes),
                        (Some(next), Some(tag0 + 1), Some(bytes)),
                        "rank {r}: {c:?}"
                    );
                } else {
                    assert_eq!(
                        c.source, None,
                        "rank {r}: send completion with a source: {c:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn fortran_use_mpi_openmpi() {
    let _g = common::mpi_lock();
    fortran_case(Mpi::OpenMpi, "fortran/f_mpi.f90", &[]);
}

#[test]
fn fortran_use_mpi_mpich() {
    let _g = common::mpi_lock();
    fortran_case(Mpi::Mpich, "fortran/f_mpi.f90", &[]);
}

#[test]
fn fortran_mpif_h_openmpi() {
    let _g = common::mpi_lock();
    fortran_case(
        Mpi::OpenMpi,
        "fortran/f77.f",
        &["-fallow-argument-mismatch"],
    );
}

#[test]
fn fortran_mpif_h_mpich() {
    let _g = common::mpi_lock();
    fortran_case(Mpi::Mpich, "fortran/f77.f", &["-fallow-argument-mismatch"]);
}

/// `use mpi_f08` with Open MPI: its Fortran 2008 module calls the `ompi_*_f` functions,
/// which the recorder wraps. (MPICH's `mpi_f08` calls `PMPI_Init` and internal `MPIR_*`
/// functions directly, so nothing of it can be interposed; it is not tested.)
#[test]
fn fortran_mpi_f08_openmpi() {
    let _g = common::mpi_lock();
    fortran_case(Mpi::OpenMpi, "fortran/f_mpi_f08.f90", &[]);
}
