//! `p2p_nonblocking.c`: requests, waits and tests of every kind, persistent requests.

use super::*;

fn expect_p2p_nonblocking(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("A wait");
        let ra = s.new_req("MPI_Irecv", a().p2p(prev, 10, WORLD).buf(8, 4));
        let sa = s.new_req("MPI_Isend", a().p2p(next, 10, WORLD).buf(8, 4));
        s.ev("MPI_Wait", a().req(ra).st(prev, 10, 32));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(sa));

        // Regression (shared handle of immediately completed requests): from here on, a
        // Waitall/Waitsome/Testsome... over several send requests that completed at creation
        // lists the id of the last one for each of them (Open MPI returns the one
        // `ompi_request_empty` handle for every such Isend, MPICH a shared completed
        // request), e.g. Requests [r0, r1, s1, s1] instead of [r0, r1, s0, s1].
        for round in 0..2 {
            s.phase(format!("B waitall round {round}"));
            let (t0, t1, c) = (20 + 2 * round, 21 + 2 * round, 4 - round);
            let r0 = s.new_req("MPI_Irecv", a().p2p(prev, t0, WORLD).buf(c, 4));
            let r1 = s.new_req("MPI_Irecv", a().p2p(next, t1, WORLD).buf(c, 4));
            let s0 = s.new_req("MPI_Isend", a().p2p(next, t0, WORLD).buf(c, 4));
            let s1 = s.new_req("MPI_Isend", a().p2p(prev, t1, WORLD).buf(c, 4));
            // Statuses are decoded even when the program passes MPI_STATUSES_IGNORE (round 1).
            s.evl(
                "MPI_Waitall",
                a().n(4),
                vec![
                    (ListKind::Requests, vec![r0, r1, s0, s1]),
                    (
                        ListKind::Completions,
                        done(&[
                            (r0, Some((prev, t0, 4 * c))),
                            (r1, Some((next, t1, 4 * c))),
                            (s0, None),
                            (s1, None),
                        ]),
                    ),
                ],
            );
            if round == 0 {
                s.ev("MPI_Get_count", a());
                s.ev("MPI_Get_count", a());
            }
        }

        s.phase("C waitany");
        let mut rq: Vec<i64> = (0..3)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 30 + k, WORLD).buf(k + 1, 4)))
            .collect();
        let sq: Vec<i64> = (0..3)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 30 + k, WORLD).buf(k + 1, 4)))
            .collect();
        for _ in 0..3 {
            let idx = s.peek_slot("MPI_Waitany", Slot::Index).unwrap_or(-1);
            if !(0..3).contains(&idx) || rq[idx as usize] == 0 {
                s.fail(format!(
                    "Waitany completed index {idx}, not a pending request of {rq:?}"
                ));
            }
            let k = idx.clamp(0, 2);
            let before = rq.clone();
            rq[k as usize] = 0;
            s.evl(
                "MPI_Waitany",
                a().n(3)
                    .s(Slot::Index, idx)
                    .req(before[k as usize])
                    .st(prev, 30 + k, 4 * (k + 1)),
                vec![(ListKind::Requests, before)],
            );
            s.ev("MPI_Get_count", a());
        }
        s.evl(
            "MPI_Waitall",
            a().n(3),
            vec![
                (ListKind::Requests, sq.clone()),
                (
                    ListKind::Completions,
                    done(&[(sq[0], None), (sq[1], None), (sq[2], None)]),
                ),
            ],
        );

        s.phase("D waitsome");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 40 + k, WORLD).buf(2, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 40 + k, WORLD).buf(2, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            let idx = s
                .peek_list("MPI_Waitsome", ListKind::Indices)
                .unwrap_or_default();
            if idx.is_empty()
                || idx
                    .iter()
                    .any(|&i| !(0..2).contains(&i) || rq[i as usize] == 0)
            {
                s.fail(format!(
                    "Waitsome completed indices {idx:?}, not pending requests of {rq:?}"
                ));
                left = 1; // give up after this event
            }
            let before = rq.clone();
            let mut comp = Vec::new();
            for &i in &idx {
                let k = i.clamp(0, 1);
                comp.push((before[k as usize], Some((prev, 40 + k, 8))));
                rq[k as usize] = 0;
            }
            s.evl(
                "MPI_Waitsome",
                a().n(2).s(Slot::Index, idx.len() as i64),
                vec![
                    (ListKind::Requests, before),
                    (ListKind::Indices, idx.clone()),
                    (ListKind::Completions, done(&comp)),
                ],
            );
            for _ in &idx {
                s.ev("MPI_Get_count", a());
            }
            left -= (idx.len() as i64).max(1);
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("E test");
        let g = s.new_req("MPI_Irecv", a().p2p(prev, 50, WORLD).buf(5, 4));
        // Nothing was sent yet: the first Test fails.
        s.ev("MPI_Test", a().req(g).flag(0));
        s.ev("MPI_Barrier", a().comm(WORLD));
        s.ev("MPI_Send", a().p2p(next, 50, WORLD).buf(5, 4));
        while s.peek_is("MPI_Test", Slot::Flag, 0) {
            s.ev("MPI_Test", a().req(g).flag(0));
        }
        s.ev("MPI_Test", a().req(g).flag(1).st(prev, 50, 20));
        s.ev("MPI_Get_count", a());

        s.phase("F testall");
        let h = s.new_req("MPI_Irecv", a().p2p(prev, 60, WORLD).buf(6, 4));
        let hs = s.new_req("MPI_Isend", a().p2p(next, 60, WORLD).buf(6, 4));
        while s.peek_is("MPI_Testall", Slot::Flag, 0) {
            s.evl(
                "MPI_Testall",
                a().n(2).flag(0),
                vec![(ListKind::Requests, vec![h, hs])],
            );
        }
        s.evl(
            "MPI_Testall",
            a().n(2).flag(1),
            vec![
                (ListKind::Requests, vec![h, hs]),
                (
                    ListKind::Completions,
                    done(&[(h, Some((prev, 60, 24))), (hs, None)]),
                ),
            ],
        );
        s.ev("MPI_Get_count", a());

        s.phase("G testany");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 70 + k, WORLD).buf(1, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 70 + k, WORLD).buf(1, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            if s.peek_is("MPI_Testany", Slot::Flag, 0) {
                s.evl(
                    "MPI_Testany",
                    a().n(2).flag(0),
                    vec![(ListKind::Requests, rq.clone())],
                );
                continue;
            }
            let idx = s.peek_slot("MPI_Testany", Slot::Index).unwrap_or(-1);
            if !(0..2).contains(&idx) || rq[idx as usize] == 0 {
                s.fail(format!(
                    "Testany completed index {idx}, not a pending request of {rq:?}"
                ));
                left = 1;
            }
            let k = idx.clamp(0, 1);
            let before = rq.clone();
            rq[k as usize] = 0;
            s.evl(
                "MPI_Testany",
                a().n(2)
                    .flag(1)
                    .s(Slot::Index, idx)
                    .req(before[k as usize])
                    .st(prev, 70 + k, 4),
                vec![(ListKind::Requests, before)],
            );
            s.ev("MPI_Get_count", a());
            left -= 1;
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("H testsome");
        let mut rq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Irecv", a().p2p(prev, 80 + k, WORLD).buf(2, 4)))
            .collect();
        let sq: Vec<i64> = (0..2)
            .map(|k| s.new_req("MPI_Isend", a().p2p(next, 80 + k, WORLD).buf(2, 4)))
            .collect();
        let mut left = 2;
        while left > 0 {
            if s.peek_is("MPI_Testsome", Slot::Index, 0) {
                s.evl(
                    "MPI_Testsome",
                    a().n(2).s(Slot::Index, 0),
                    vec![(ListKind::Requests, rq.clone())],
                );
                continue;
            }
            let idx = s
                .peek_list("MPI_Testsome", ListKind::Indices)
                .unwrap_or_default();
            if idx.is_empty()
                || idx
                    .iter()
                    .any(|&i| !(0..2).contains(&i) || rq[i as usize] == 0)
            {
                s.fail(format!(
                    "Testsome completed indices {idx:?}, not pending requests of {rq:?}"
                ));
                left = 1;
            }
            let before = rq.clone();
            let mut comp = Vec::new();
            for &i in &idx {
                let k = i.clamp(0, 1);
                comp.push((before[k as usize], Some((prev, 80 + k, 8))));
                rq[k as usize] = 0;
            }
            s.evl(
                "MPI_Testsome",
                a().n(2).s(Slot::Index, idx.len() as i64),
                vec![
                    (ListKind::Requests, before),
                    (ListKind::Indices, idx.clone()),
                    (ListKind::Completions, done(&comp)),
                ],
            );
            for _ in &idx {
                s.ev("MPI_Get_count", a());
            }
            left -= (idx.len() as i64).max(1);
        }
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, sq.clone()),
                (ListKind::Completions, done(&[(sq[0], None), (sq[1], None)])),
            ],
        );

        s.phase("I persistent");
        let pr = s.new_req("MPI_Recv_init", a().p2p(prev, 90, WORLD).buf(5, 4));
        let ps = s.new_req("MPI_Send_init", a().p2p(next, 90, WORLD).buf(5, 4));
        for _ in 0..3 {
            s.ev("MPI_Start", a().req(pr));
            s.ev("MPI_Start", a().req(ps));
            s.ev("MPI_Wait", a().req(pr).st(prev, 90, 20));
            s.ev("MPI_Wait", a().req(ps));
            s.ev("MPI_Get_count", a());
        }
        for _ in 0..2 {
            s.evl(
                "MPI_Startall",
                a().n(2),
                vec![(ListKind::Requests, vec![pr, ps])],
            );
            s.evl(
                "MPI_Waitall",
                a().n(2),
                vec![
                    (ListKind::Requests, vec![pr, ps]),
                    (
                        ListKind::Completions,
                        done(&[(pr, Some((prev, 90, 20))), (ps, None)]),
                    ),
                ],
            );
            s.ev("MPI_Get_count", a());
        }
        s.ev("MPI_Request_free", a().req(pr));
        s.ev("MPI_Request_free", a().req(ps));

        s.phase("J wildcard irecv");
        let q = s.new_req("MPI_Irecv", a().p2p(PEER_ANY, TAG_ANY, WORLD).buf(16, 4));
        let qs = s.new_req("MPI_Isend", a().p2p(next, 100 + r, WORLD).buf(3, 4));
        // MPI_STATUS_IGNORE: the recorder still decodes the status.
        s.ev("MPI_Wait", a().req(q).st(prev, 100 + prev, 12));
        s.ev("MPI_Wait", a().req(qs));
        s.ev("MPI_Barrier", a().comm(WORLD));

        s.phase("K iprobe");
        let ks = s.new_req("MPI_Isend", a().p2p(next, 110, WORLD).buf(7, 4));
        while s.peek_is("MPI_Iprobe", Slot::Flag, 0) {
            s.ev("MPI_Iprobe", a().p2p(PEER_ANY, 110, WORLD).flag(0));
        }
        s.ev(
            "MPI_Iprobe",
            a().p2p(PEER_ANY, 110, WORLD).flag(1).st(prev, 110, 28),
        );
        s.ev("MPI_Get_count", a());
        s.ev(
            "MPI_Recv",
            a().p2p(prev, 110, WORLD).buf(7, 4).st(prev, 110, 28),
        );
        s.ev("MPI_Wait", a().req(ks));

        s.phase("L mprobe");
        let ls = s.new_req("MPI_Isend", a().p2p(next, 120, WORLD).buf(9, 4));
        s.ev("MPI_Mprobe", a().p2p(prev, 120, WORLD).st(prev, 120, 36));
        s.ev("MPI_Get_count", a());
        // Regression (Open MPI): Open MPI's mpi.h names the datatype parameter of MPI_Mrecv
        // and MPI_Imrecv `type`, not `datatype`; count/dtsize/bytes were missing.
        s.ev("MPI_Mrecv", a().comm(WORLD).buf(9, 4).st(prev, 120, 36));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(ls));

        s.phase("M improbe");
        let ms = s.new_req("MPI_Isend", a().p2p(next, 130, WORLD).buf(11, 4));
        while s.peek_is("MPI_Improbe", Slot::Flag, 0) {
            s.ev("MPI_Improbe", a().p2p(PEER_ANY, 130, WORLD).flag(0));
        }
        s.ev(
            "MPI_Improbe",
            a().p2p(PEER_ANY, 130, WORLD).flag(1).st(prev, 130, 44),
        );
        // Regression (Open MPI): see MPI_Mrecv above.
        let im = s.new_req("MPI_Imrecv", a().comm(WORLD).buf(11, 4));
        s.ev("MPI_Wait", a().req(im).st(prev, 130, 44));
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Wait", a().req(ms));

        s.phase("end");
        let sum = s.op("MPI_SUM");
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_p2p_nonblocking(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "p2p_nonblocking", np);
    let mut out = expect_p2p_nonblocking(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    let n = u64::from(np);
    let ctx = format!("{} p2p_nonblocking np{np}", mpi.name());
    // Persistent sends are credited when started: 5 starts of 20 bytes per rank.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Start",
        "bytes_sent",
        n * 3 * 20,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Start",
        "bytes_received",
        n * 3 * 20,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Startall",
        "bytes_sent",
        n * 2 * 20,
        &mut out.fails,
    );
    check_report_bytes(&ctx, &rep, "MPI_Send_init", "bytes_sent", 0, &mut out.fails);
    // Isend buffers: A 32, B 2x16 + 2x12, C 4+8+12, D 2x8, F 24, G 2x4, H 2x8, J 12, K 28,
    // L 36, M 44.
    let isend = 32 + 32 + 24 + 24 + 16 + 24 + 8 + 16 + 12 + 28 + 36 + 44;
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Isend",
        "bytes_sent",
        n * isend,
        &mut out.fails,
    );
    finish(t, out.fails);
}

/// Regression test for request ids of shared handles and Open MPI's `Mrecv` datatype
/// (see `expect_p2p_nonblocking`).
#[test]
fn openmpi_p2p_nonblocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::OpenMpi, 4);
}

/// Regression test for request ids of shared handles (see `expect_p2p_nonblocking`).
#[test]
fn mpich_p2p_nonblocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::Mpich, 2);
}

/// Regression test for request ids of shared handles (see `expect_p2p_nonblocking`).
#[test]
fn mpich_p2p_nonblocking_3_ranks() {
    let _g = common::mpi_lock();
    check_p2p_nonblocking(Mpi::Mpich, 3);
}
