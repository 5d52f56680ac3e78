//! `p2p_blocking.c`: blocking sends and receives of every mode, probes, `MPI_Sendrecv`, wildcards.

use super::*;

fn expect_p2p_blocking(t: &Traced) -> Outcome {
    let n = i64::from(t.np);
    let mut out = Outcome::default();
    for r in 0..n {
        let mut s = Seq::new(t, r as u32, 0);
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        s.ev("MPI_Init", a());
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        s.ev("MPI_Comm_size", a().comm(WORLD));

        s.phase("1 ring");
        if n >= 2 {
            let recv = |s: &mut Seq| {
                s.ev(
                    "MPI_Recv",
                    a().p2p(prev, 100 + prev, WORLD).buf(100, 4).st(
                        prev,
                        100 + prev,
                        40 * (prev + 1),
                    ),
                );
                s.ev("MPI_Get_count", a());
            };
            let send = |s: &mut Seq| {
                s.ev(
                    "MPI_Send",
                    a().p2p(next, 100 + r, WORLD).buf(10 * (r + 1), 4),
                );
            };
            if r != 0 {
                recv(&mut s);
                send(&mut s);
            } else {
                send(&mut s);
                recv(&mut s);
            }
        }

        s.phase("2 ssend pairs");
        let partner = if r % 2 == 0 { r + 1 } else { r - 1 };
        if partner < n {
            if r % 2 == 0 {
                s.ev("MPI_Ssend", a().p2p(partner, 200, WORLD).buf(5, 8));
                s.ev(
                    "MPI_Recv",
                    a().p2p(partner, 201, WORLD).buf(5, 8).st(partner, 201, 40),
                );
                s.ev("MPI_Get_count", a());
            } else {
                s.ev(
                    "MPI_Recv",
                    a().p2p(partner, 200, WORLD).buf(5, 8).st(partner, 200, 40),
                );
                s.ev("MPI_Get_count", a());
                s.ev("MPI_Ssend", a().p2p(partner, 201, WORLD).buf(5, 8));
            }
        }

        s.phase("3 bsend");
        s.ev("MPI_Buffer_attach", a());
        s.ev("MPI_Bsend", a().p2p(next, 300, WORLD).buf(8, 4));
        s.ev(
            "MPI_Recv",
            a().p2p(prev, 300, WORLD).buf(8, 4).st(prev, 300, 32),
        );
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Buffer_detach", a());

        s.phase("4 rsend");
        let id = s.new_req("MPI_Irecv", a().p2p(prev, 400, WORLD).buf(6, 4));
        s.ev("MPI_Barrier", a().comm(WORLD));
        s.ev("MPI_Rsend", a().p2p(next, 400, WORLD).buf(6, 4));
        s.ev("MPI_Wait", a().req(id).st(prev, 400, 24));
        s.ev("MPI_Get_count", a());

        s.phase("5 sendrecv");
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 500 + r, WORLD)
                .buf(4, 4)
                .from(prev, 500 + prev)
                .rbuf(4, 4)
                .st(prev, 500 + prev, 16),
        );
        s.ev("MPI_Get_count", a());

        s.phase("6 sendrecv_replace");
        s.ev(
            "MPI_Sendrecv_replace",
            a().p2p(prev, 600, WORLD)
                .buf(3, 8)
                .from(next, 600)
                .st(next, 600, 24),
        );
        s.ev("MPI_Get_count", a());

        s.phase("7 wildcards");
        if r != 0 {
            s.ev("MPI_Send", a().p2p(0, 700 + r, WORLD).buf(2 * r, 4));
        } else {
            let mut left: BTreeSet<i64> = (1..n).collect();
            for _ in 1..n {
                // The program receives from whichever sender the probe matched.
                let src = s.peek_slot("MPI_Probe", Slot::StatusSource).unwrap_or(-99);
                if !left.remove(&src) {
                    s.fail(format!(
                        "probe matched source {src}, not one of the senders left {left:?}"
                    ));
                }
                s.ev(
                    "MPI_Probe",
                    a().p2p(PEER_ANY, TAG_ANY, WORLD)
                        .st(src, 700 + src, 8 * src),
                );
                s.ev("MPI_Get_count", a());
                s.ev(
                    "MPI_Recv",
                    a().p2p(src, TAG_ANY, WORLD)
                        .buf(64, 4)
                        .st(src, 700 + src, 8 * src),
                );
                s.ev("MPI_Get_count", a());
            }
        }
        s.ev("MPI_Barrier", a().comm(WORLD));
        if r != 0 {
            s.ev("MPI_Send", a().p2p(0, 750 + r, WORLD).buf(r, 4));
        } else {
            let mut left: BTreeSet<i64> = (1..n).collect();
            for _ in 1..n {
                let src = s.peek_slot("MPI_Recv", Slot::StatusSource).unwrap_or(-99);
                if !left.remove(&src) {
                    s.fail(format!(
                        "wildcard receive got source {src}, not one of the senders left {left:?}"
                    ));
                }
                s.ev(
                    "MPI_Recv",
                    a().p2p(PEER_ANY, TAG_ANY, WORLD)
                        .buf(64, 4)
                        .st(src, 750 + src, 4 * src),
                );
                s.ev("MPI_Get_count", a());
            }
        }

        s.phase("8 proc_null");
        s.ev("MPI_Send", a().p2p(PEER_NULL, 800, WORLD).buf(5, 4));
        s.ev(
            "MPI_Recv",
            a().p2p(PEER_NULL, 800, WORLD)
                .buf(5, 4)
                .st(PEER_NULL, TAG_ANY, 0),
        );
        s.ev("MPI_Get_count", a());

        s.phase("9 zero bytes");
        if n >= 2 {
            let recv = |s: &mut Seq| {
                s.ev(
                    "MPI_Recv",
                    a().p2p(prev, 900, WORLD).buf(10, 4).st(prev, 900, 0),
                );
                s.ev("MPI_Get_count", a());
            };
            let send = |s: &mut Seq| {
                s.ev("MPI_Send", a().p2p(next, 900, WORLD).buf(0, 4));
            };
            if r != 0 {
                recv(&mut s);
                send(&mut s);
            } else {
                send(&mut s);
                recv(&mut s);
            }
        }

        s.phase("10 derived datatype");
        s.ev("MPI_Type_contiguous", a());
        s.ev("MPI_Type_commit", a());
        s.ev(
            "MPI_Sendrecv",
            a().p2p(next, 1000, WORLD)
                .buf(2, 24)
                .from(prev, 1000)
                .rbuf(2, 24)
                .st(prev, 1000, 48),
        );
        s.ev("MPI_Get_count", a());
        s.ev("MPI_Type_free", a());

        s.phase("end");
        let sum = s.op("MPI_SUM");
        s.ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum));
        s.ev("MPI_Finalize", a());
        out.absorb(s);
    }
    out
}

fn check_p2p_blocking(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "p2p_blocking", np);
    let mut out = expect_p2p_blocking(&t);
    generic_checks(&t, &mut out.fails);
    let rep = check_report(&t, &out.counts, &mut out.fails);
    // Bytes moved, from the program's logic (PROC_NULL moves nothing).
    let n = u64::from(np);
    let ctx = format!("{} p2p_blocking np{np}", mpi.name());
    let ring = if n >= 2 { 20 * n * (n + 1) } else { 0 };
    // Sends: ring 40(r+1), wildcard phases 8r + 4r, zero-byte ring 0.
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Send",
        "bytes_sent",
        ring + 6 * n * (n - 1),
        &mut out.fails,
    );
    // Receives (status bytes): ring, Ssend pairs 40 per paired rank, Bsend 32, wildcards at 0.
    let recv = ring + 40 * 2 * (n / 2) + 32 * n + 6 * n * (n - 1);
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Recv",
        "bytes_received",
        recv,
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_sent",
        n * (16 + 48),
        &mut out.fails,
    );
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_received",
        n * (16 + 48),
        &mut out.fails,
    );
    finish(t, out.fails);
}

#[test]
fn openmpi_p2p_blocking_1_rank() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 1);
}

#[test]
fn openmpi_p2p_blocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 2);
}

#[test]
fn openmpi_p2p_blocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::OpenMpi, 4);
}

#[test]
fn mpich_p2p_blocking_2_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::Mpich, 2);
}

#[test]
fn mpich_p2p_blocking_4_ranks() {
    let _g = common::mpi_lock();
    check_p2p_blocking(Mpi::Mpich, 4);
}
