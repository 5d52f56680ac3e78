//! `collectives.c`: every collective, blocking and not, with roots and per-rank counts.

use super::*;

fn expect_collectives(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let tri = n * (n + 1) / 2;
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (sum, max) = (s.op("MPI_SUM"), s.op("MPI_MAX"));
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));
        let w = || a().comm(WORLD);
        let upto_n: Vec<i64> = (1..=n).collect();

        s.phase("rooted");
        s.ev("MPI_Barrier", w());
        s.ev("MPI_Bcast", w().buf(10, 4).root(0));
        s.ev("MPI_Reduce", w().buf(5, 8).root(1 % n).op(sum));
        s.ev("MPI_Allreduce", w().buf(3, 4).op(max));
        // Gather / Gatherv: the receive side only at the root.
        let gr = n - 1;
        s.ev(
            "MPI_Gather",
            if r == gr {
                w().buf(2, 4).rbuf(2, 4).root(gr)
            } else {
                w().buf(2, 4).root(gr)
            },
        );
        if r == 0 {
            s.evl(
                "MPI_Gatherv",
                w().buf(r + 1, 4)
                    .s(Slot::RecvDtypeSize, 4)
                    .s(Slot::RecvBytes, 4 * tri)
                    .root(0),
                vec![(ListKind::RecvCounts, upto_n.clone())],
            );
        } else {
            s.ev("MPI_Gatherv", w().buf(r + 1, 4).root(0));
        }
        // Scatter / Scatterv: the send side only at the root.
        let sr = n / 2;
        s.ev(
            "MPI_Scatter",
            if r == sr {
                w().buf(3, 4).rbuf(3, 4).root(sr)
            } else {
                w().rbuf(3, 4).root(sr)
            },
        );
        if r == 0 {
            s.evl(
                "MPI_Scatterv",
                w().s(Slot::DtypeSize, 4)
                    .s(Slot::Bytes, 4 * n * n)
                    .rbuf(2 * r + 1, 4)
                    .root(0),
                vec![(ListKind::SendCounts, (0..n).map(|i| 2 * i + 1).collect())],
            );
        } else {
            s.ev("MPI_Scatterv", w().rbuf(2 * r + 1, 4).root(0));
        }

        s.phase("all-to-all");
        s.ev("MPI_Allgather", w().buf(2, 4).rbuf(2, 4));
        s.evl(
            "MPI_Allgatherv",
            w().buf(r + 1, 8)
                .s(Slot::RecvDtypeSize, 8)
                .s(Slot::RecvBytes, 8 * tri),
            vec![(ListKind::RecvCounts, upto_n.clone())],
        );
        s.ev("MPI_Alltoall", w().buf(2, 4).rbuf(2, 4));
        let sc: Vec<i64> = (0..n).map(|j| (r + j) % 3 + 1).collect();
        let rc: Vec<i64> = (0..n).map(|j| (j + r) % 3 + 1).collect();
        s.evl(
            "MPI_Alltoallv",
            w().s(Slot::DtypeSize, 4)
                .s(Slot::Bytes, 4 * sc.iter().sum::<i64>())
                .s(Slot::RecvDtypeSize, 4)
                .s(Slot::RecvBytes, 4 * rc.iter().sum::<i64>()),
            vec![(ListKind::SendCounts, sc), (ListKind::RecvCounts, rc)],
        );
        let tsize = |x: i64| if x % 2 == 0 { 4 } else { 8 };
        let ssizes: Vec<i64> = (0..n).map(tsize).collect();
        s.evl(
            "MPI_Alltoallw",
            w().s(Slot::Bytes, ssizes.iter().sum())
                .s(Slot::RecvBytes, n * tsize(r)),
            vec![
                (ListKind::SendCounts, vec![1; n as usize]),
                (ListKind::SendTypeSizes, ssizes),
                (ListKind::RecvCounts, vec![1; n as usize]),
                (ListKind::RecvTypeSizes, vec![tsize(r); n as usize]),
            ],
        );

        s.phase("reductions");
        // Reduce_scatter: one datatype, a count per rank; Bytes is the whole send buffer.
        s.evl(
            "MPI_Reduce_scatter",
            w().s(Slot::DtypeSize, 4).s(Slot::Bytes, 4 * tri).op(sum),
            vec![(ListKind::RecvCounts, upto_n.clone())],
        );
        s.ev("MPI_Reduce_scatter_block", w().rbuf(2, 4).op(sum));
        s.ev("MPI_Scan", w().buf(2, 8).op(sum));
        s.ev("MPI_Exscan", w().buf(2, 4).op(sum));

        s.phase("in place");
        // Allreduce has one count for both buffers: in place, it still reduces 4 ints.
        s.ev("MPI_Allreduce", w().buf(4, 4).op(sum));
        // Allgather in place: no send side.
        s.ev("MPI_Allgather", w().rbuf(3, 4));

        s.phase("user op");
        s.ev("MPI_Op_create", a());
        let user = s.op("user#0");
        s.ev("MPI_Allreduce", w().buf(2, 4).op(user));
        s.ev("MPI_Op_free", a());

        s.phase("non-blocking");
        let ib = s.new_req("MPI_Ibarrier", w());
        s.ev("MPI_Wait", a().req(ib));
        let bc = s.new_req("MPI_Ibcast", w().buf(6, 4).root(1 % n));
        s.ev("MPI_Wait", a().req(bc));
        let ar = s.new_req("MPI_Iallreduce", w().buf(2, 8).op(sum));
        let aa = s.new_req("MPI_Ialltoall", w().buf(1, 4).rbuf(1, 4));
        s.evl(
            "MPI_Waitall",
            a().n(2),
            vec![
                (ListKind::Requests, vec![ar, aa]),
                (ListKind::Completions, done(&[(ar, None), (aa, None)])),
            ],
        );
        let gv = if r == 0 {
            let want = w()
                .buf(1, 4)
                .s(Slot::RecvDtypeSize, 4)
                .s(Slot::RecvBytes, 4 * tri)
                .root(0);
            s.new_req_l(
                "MPI_Igatherv",
                want,
                vec![(ListKind::RecvCounts, upto_n.clone())],
            )
        } else {
            s.new_req("MPI_Igatherv", w().buf(r + 1, 4).root(0))
        };
        s.ev("MPI_Wait", a().req(gv));

        s.phase("end");
        s.ev("MPI_Allreduce", w().buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_collectives(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "collectives", np);
    let mut out = expect_collectives(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    let n = u64::from(np);
    let ctx = format!("{} collectives np{np}", mpi.name());
    // Bcast: the root sends its 40 bytes, the others receive them.
    check_report_bytes(&ctx, &rep, "MPI_Bcast", "bytes_sent", 40, &mut out.fails);
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Bcast",
        "bytes_received",
        40 * (n - 1),
        &mut out.fails,
    );
    // Allgather: 8 bytes out and 8n in; in place nothing out and 12n in.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Allgather",
        "bytes_sent",
        8 * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Allgather",
        "bytes_received",
        20 * n * n,
        &mut out.fails,
    );
    // Alltoall: 8 bytes to and from each of n ranks.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Alltoall",
        "bytes_sent",
        8 * n * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Alltoall",
        "bytes_received",
        8 * n * n,
        &mut out.fails,
    );
    // Reduce_scatter_block: 8n bytes in, 8 bytes out per rank.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Reduce_scatter_block",
        "bytes_sent",
        8 * n * n,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Reduce_scatter_block",
        "bytes_received",
        8 * n,
        &mut out.fails,
    );
    finish(t, out.fails);
}

#[test]
fn openmpi_collectives_3_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 3);
}

#[test]
fn openmpi_collectives_4_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 4);
}

#[test]
fn openmpi_collectives_8_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::OpenMpi, 8);
}

#[test]
fn mpich_collectives_2_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::Mpich, 2);
}

#[test]
fn mpich_collectives_4_ranks() {
    let _g = common::mpi_lock();
    check_collectives(Mpi::Mpich, 4);
}
