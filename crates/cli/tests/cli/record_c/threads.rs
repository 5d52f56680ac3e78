//! `threads.c`: several threads calling MPI (`MPI_THREAD_MULTIPLE`): thread indices and call definitions.

use super::*;

const NTHREADS: i64 = 3;
const ITERS: usize = 20;

fn check_threads(mpi: Mpi, np: u32) {
    let t = run_program(mpi, "threads", np);
    let n = i64::from(np);
    let mut out = Outcome::default();
    generic_checks(&t, &mut out.fails);
    if t.stdout.contains("not provided") {
        // The MPI library does not support MPI_THREAD_MULTIPLE: the program only
        // initializes and finalizes. Check that much.
        eprintln!(
            "{}: MPI_THREAD_MULTIPLE not provided; only the skip path is checked",
            mpi.name()
        );
        for r in 0..n {
            let mut s = Seq::new(&t, r as u32, 0);
            let level = s.peek_slot("MPI_Init_thread", Slot::Level).unwrap_or(-1);
            if !(0..THREAD_MULTIPLE).contains(&level) {
                s.fail(format!(
                    "Init_thread level {level} while the program says MULTIPLE was not provided"
                ));
            }
            s.ev("MPI_Init_thread", a().s(Slot::Level, level));
            s.ev("MPI_Comm_rank", a().comm(WORLD));
            s.ev("MPI_Comm_size", a().comm(WORLD));
            s.ev("MPI_Finalize", a());
            out.absorb(s);
        }
        check_report(&t, &out.counts, &mut out.fails);
        finish(t, out.fails);
        return;
    }
    for r in 0..n {
        let re = &t.ranks[r as usize];
        let (next, prev) = ((r + 1) % n, (r - 1 + n) % n);
        let threads: BTreeSet<u16> = re.events.iter().map(|(_, e)| e.thread).collect();
        let want_threads: BTreeSet<u16> = (0..=NTHREADS as u16).collect();
        if threads != want_threads {
            out.fails.push(format!(
                "{} threads rank {r}: thread indices {threads:?}, expected {want_threads:?}",
                mpi.name()
            ));
        }
        // The main thread: no MPI call while the workers run.
        let mut s = Seq::new(&t, r as u32, 0);
        let sum = s.op("MPI_SUM");
        let init = s
            .ev("MPI_Init_thread", a().s(Slot::Level, THREAD_MULTIPLE))
            .cloned();
        s.ev("MPI_Comm_rank", a().comm(WORLD));
        let size = s.ev("MPI_Comm_size", a().comm(WORLD)).cloned();
        let allreduce = s
            .ev("MPI_Allreduce", a().comm(WORLD).buf(2, 8).op(sum))
            .cloned();
        s.ev("MPI_Finalize", a());
        out.absorb(s);
        if init.is_none() {
            continue;
        }
        // Each worker: ITERS Sendrecv with its own tag; which worker got which thread index
        // depends on who called MPI first.
        //
        // Regression (was intermittent): a worker's events reached the rank file before the
        // definition of MPI_Sendrecv, which another worker had claimed but not written yet;
        // they then read as call `?<id>`.
        let mut tags_seen = BTreeSet::new();
        for th in 1..=NTHREADS as u16 {
            let mut s = Seq::new(&t, r as u32, th);
            let tag = s.peek_slot("MPI_Sendrecv", Slot::Tag).unwrap_or(-1);
            let k = tag - 10;
            if !(0..NTHREADS).contains(&k) || !tags_seen.insert(tag) {
                s.fail(format!(
                    "worker thread tag {tag}: not one of 10..{} or seen on another thread",
                    10 + NTHREADS - 1
                ));
            }
            s.phase(format!("worker with tag {tag}"));
            for _ in 0..ITERS {
                let want = a()
                    .p2p(next, tag, WORLD)
                    .buf(k + 1, 4)
                    .from(prev, tag)
                    .rbuf(k + 1, 4)
                    .st(prev, tag, 4 * (k + 1));
                let Some(ev) = s.ev("MPI_Sendrecv", want) else {
                    break;
                };
                // Between the main thread's Comm_size and Allreduce.
                let lo = size.as_ref().map_or(0, |e| e.t_exit);
                let hi = allreduce.as_ref().map_or(u64::MAX, |e| e.t_enter);
                if ev.t_enter < lo || ev.t_exit > hi {
                    let msg = format!(
                        "Sendrecv at {}..{} outside the workers' lifetime {lo}..{hi}",
                        ev.t_enter, ev.t_exit
                    );
                    s.fail(msg);
                }
            }
            out.absorb(s);
        }
    }
    let rep = check_report(&t, &out.counts, &mut out.fails);
    for (i, pr) in rep["per_rank"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if pr["threads"].as_u64() != Some(NTHREADS as u64 + 1) {
            out.fails.push(format!(
                "{} threads report: per_rank[{i}].threads = {}, expected {}",
                mpi.name(),
                pr["threads"],
                NTHREADS + 1
            ));
        }
    }
    let ctx = format!("{} threads np{np}", mpi.name());
    let per_rank: u64 = (0..NTHREADS as u64).map(|k| 4 * (k + 1)).sum::<u64>() * ITERS as u64;
    check_report_bytes(
        &ctx,
        &rep,
        "MPI_Sendrecv",
        "bytes_sent",
        u64::from(np) * per_rank,
        &mut out.fails,
    );
    finish(t, out.fails);
}

/// Regression test for the call-definition race (see `check_threads`).
#[test]
fn openmpi_threads_2_ranks() {
    let _g = common::mpi_lock();
    check_threads(Mpi::OpenMpi, 2);
}

/// Regression test for the call-definition race (see `check_threads`).
#[test]
fn mpich_threads_2_ranks() {
    let _g = common::mpi_lock();
    check_threads(Mpi::Mpich, 2);
}
