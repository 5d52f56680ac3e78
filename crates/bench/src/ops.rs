//! MPITEST's operations, by their names there, and how each is run with MPI.

use mpi::collective::{CommunicatorCollectives, Root, SystemOperation};
use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};

/// One of MPITEST's tested constructs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// One timer read.
    Timing,
    /// Barrier synchronization of all processes.
    Barrier,
    /// Sum of N integers over all processes, result on all.
    Allreduce,
    /// Sum of N integers over all processes, result on one.
    Reduce,
    /// N integers from one process to all.
    Broadcast,
    /// N integers from every process to one.
    Gather,
    /// N integers from every process to every process.
    Allgather,
    /// N integers from every process to each process.
    AllToAll,
    /// Non-blocking send of N integers from one process to another, and its wait.
    IsendWait,
    /// Blocking send of N integers from one process to another.
    BlockingSend,
    /// Send and receive of N integers in one call.
    Sendrecv,
    /// Send, then receive, N integers (a round trip).
    SendRecv,
    /// A zero-length message and its answer (about twice the latency).
    Signal,
    /// Beyond MPITEST: a blocking send to a receiver that posts its receive
    /// [`EAGER_PROBE_DELAY`] late, timed on the sender alone. Short when the message goes
    /// eagerly (LogGP's send overhead `o`), longer than the delay under rendezvous: the
    /// eager threshold is where it jumps.
    EagerSend,
    /// Beyond MPITEST: [`RATE_WINDOW`] back-to-back non-blocking sends to pre-posted
    /// receives and their wait, timed on the sender, per message (LogGP's gap `g`).
    MessageRate,
    /// Beyond MPITEST: SIGNAL SENDING between ranks 0 and 1 while every other rank computes
    /// without calling MPI for [`BUSY_WINDOW`], timed on rank 0, per message (half the round
    /// trip). Run with 4 ranks bound 2 per core on 2 cores (`mpiscope bench -np 4 --bind-to
    /// core`), each signalling rank shares its core with a computing one, and the time is
    /// how long a rank waiting in MPI takes to get its core back: the oversubscribed wake-up
    /// delay of the simulator's CPU model.
    BusySignal,
    /// Beyond MPITEST: N integers sent as an MPI vector datatype (blocks of
    /// [`VECTOR_BLOCK`] integers, every other block of the buffer, as the columns of a
    /// matrix panel) from rank 0 and received contiguous by rank 1, caches flushed before
    /// each sample, timed on rank 0 until a zero-byte answer arrives. What HPL's panel
    /// broadcast costs: its sender's panel lies in the matrix, its receiver's in a
    /// contiguous workspace, and MPI libraries move such messages several times slower than
    /// contiguous ones (Open MPI 4.1 on shared memory here: 2.1 against 9 GB/s).
    VectorSend,
    /// Beyond MPITEST: VECTOR SEND's contiguous twin: N contiguous integers from rank 0 to
    /// rank 1, caches flushed before each sample, timed on rank 0 until a zero-byte answer
    /// arrives. What a large message of an application costs when its data comes from
    /// memory rather than from the caches that SEND & RECV's repeats keep warm (HPL's row
    /// swaps: 4 GB/s here where SEND & RECV gives 15).
    ColdSend,
    /// Beyond MPITEST: the sum of N integers into N others on one process
    /// (`MPI_Reduce_local`, the operator the library's reductions apply to each buffer they
    /// receive), timed on rank 0 alone over [`REDUCE_LOCAL_CALLS`] calls, per call. What a
    /// reduction costs beyond its messages: the simulator's `mpiscope/reduction`.
    ReduceLocal,
}

/// Calls of REDUCE LOCAL per sample (one call of a few integers is shorter than the
/// timer's resolution).
pub const REDUCE_LOCAL_CALLS: usize = 16;

/// Integers per block of VECTOR SEND's datatype (4 KiB, a column of 512 doubles).
pub const VECTOR_BLOCK: usize = 1024;

/// Bytes each process touches before a VECTOR SEND sample, to evict the buffers from the
/// caches (twice a 32 MiB last-level cache).
const CACHE_FLUSH_BYTES: usize = 64 << 20;

/// How long the other ranks of SIGNAL WITH BUSY CORES compute per sample, seconds.
pub const BUSY_WINDOW: f64 = 30e-3;

/// How late the receiver of EAGER SEND posts its receive, seconds.
pub const EAGER_PROBE_DELAY: f64 = 50e-6;

/// Messages in flight in MESSAGE RATE.
pub const RATE_WINDOW: usize = 16;

/// All operations, in MPITEST's order.
pub const ALL: [Op; 13] = [
    Op::Timing,
    Op::Barrier,
    Op::Allreduce,
    Op::Reduce,
    Op::Broadcast,
    Op::Gather,
    Op::Allgather,
    Op::AllToAll,
    Op::IsendWait,
    Op::BlockingSend,
    Op::Sendrecv,
    Op::SendRecv,
    Op::Signal,
];

/// Operations beyond MPITEST, run only when named in `--only`.
pub const EXTRA: [Op; 6] = [
    Op::EagerSend,
    Op::MessageRate,
    Op::BusySignal,
    Op::VectorSend,
    Op::ColdSend,
    Op::ReduceLocal,
];

impl Op {
    /// MPITEST's name (`ISEND & WAIT`).
    pub fn mpitest_name(self) -> &'static str {
        match self {
            Op::Timing => "TIMING",
            Op::Barrier => "BARRIER",
            Op::Allreduce => "ALLREDUCE",
            Op::Reduce => "REDUCE",
            Op::Broadcast => "BROADCAST",
            Op::Gather => "GATHER",
            Op::Allgather => "ALLGATHER",
            Op::AllToAll => "ALL-TO-ALL",
            Op::IsendWait => "ISEND & WAIT",
            Op::BlockingSend => "BLOCKING SEND",
            Op::Sendrecv => "SENDRECV",
            Op::SendRecv => "SEND & RECV",
            Op::Signal => "SIGNAL SENDING",
            Op::EagerSend => "EAGER SEND",
            Op::MessageRate => "MESSAGE RATE",
            Op::BusySignal => "SIGNAL WITH BUSY CORES",
            Op::VectorSend => "VECTOR SEND",
            Op::ColdSend => "COLD SEND",
            Op::ReduceLocal => "REDUCE LOCAL",
        }
    }

    /// A short name for `--only` (`isend_wait`).
    pub fn key(self) -> &'static str {
        match self {
            Op::Timing => "timing",
            Op::Barrier => "barrier",
            Op::Allreduce => "allreduce",
            Op::Reduce => "reduce",
            Op::Broadcast => "broadcast",
            Op::Gather => "gather",
            Op::Allgather => "allgather",
            Op::AllToAll => "alltoall",
            Op::IsendWait => "isend_wait",
            Op::BlockingSend => "blocking_send",
            Op::Sendrecv => "sendrecv",
            Op::SendRecv => "send_recv",
            Op::Signal => "signal",
            Op::EagerSend => "eager_send",
            Op::MessageRate => "message_rate",
            Op::BusySignal => "busy_signal",
            Op::VectorSend => "vector_send",
            Op::ColdSend => "cold_send",
            Op::ReduceLocal => "reduce_local",
        }
    }

    /// The operation named `s` (short name or MPITEST name, any case).
    pub fn parse(s: &str) -> Option<Op> {
        let t = s.trim().to_ascii_lowercase();
        ALL.into_iter()
            .chain(EXTRA)
            .find(|o| o.key() == t || o.mpitest_name().to_ascii_lowercase() == t)
    }

    /// Timed with the fast iteration count `t` and without a length.
    pub fn fast(self) -> bool {
        matches!(self, Op::Timing | Op::Barrier | Op::Signal)
    }

    /// Without a length (run once per repeat, not once per length).
    pub fn lengthless(self) -> bool {
        self.fast() || self == Op::BusySignal
    }

    /// Between two processes (ranks 0 and 1; the others only join the barriers).
    pub fn pairwise(self) -> bool {
        matches!(
            self,
            Op::IsendWait
                | Op::BlockingSend
                | Op::Sendrecv
                | Op::SendRecv
                | Op::Signal
                | Op::EagerSend
                | Op::MessageRate
                | Op::BusySignal
                | Op::VectorSend
                | Op::ColdSend
        )
    }

    /// Timed on the sender (rank 0) alone, by [`sender_sample`], not by MPITEST's scheme.
    pub fn sender_timed(self) -> bool {
        matches!(
            self,
            Op::EagerSend
                | Op::MessageRate
                | Op::BusySignal
                | Op::VectorSend
                | Op::ColdSend
                | Op::ReduceLocal
        )
    }

    /// Bytes one operation moves as MPITEST counts them, for bandwidth: what the root
    /// gathers (`N (np - 1)`), what each process receives in the all-to-all patterns, `N`
    /// for the rest, twice for a round trip.
    pub fn bytes(self, n: u64, np: u64) -> u64 {
        let b = 4 * n;
        match self {
            Op::Timing | Op::Barrier | Op::Signal | Op::BusySignal => 0,
            Op::Gather | Op::Allgather | Op::AllToAll => b * (np - 1),
            Op::SendRecv => 2 * b,
            _ => b,
        }
    }

    /// Bytes of one message (the array of `n` integers each process contributes): the size
    /// the lengths `m` to `M` ask for, shown as BYTES; 0 for the operations without a length.
    pub fn message_bytes(self, n: u64) -> u64 {
        if self.lengthless() {
            0
        } else {
            4 * n
        }
    }

    /// Integers of transfer buffer one operation needs (send plus receive side).
    pub fn ints_needed(self, n: u64, np: u64) -> u64 {
        match self {
            Op::Timing | Op::Barrier | Op::Signal | Op::BusySignal => 0,
            Op::Gather | Op::Allgather | Op::AllToAll => 2 * n * np,
            Op::MessageRate => 2 * n * RATE_WINDOW as u64,
            // Every other block on the sending side, contiguous on the receiving side.
            Op::VectorSend => 3 * n,
            _ => 2 * n,
        }
    }
}

/// One sample of a sender-timed operation: the seconds rank 0 spends (per message for
/// MESSAGE RATE), including one timer read; other ranks return 0. Starts with a barrier.
pub fn sender_sample(
    op: Op,
    world: &SimpleCommunicator,
    n: usize,
    send: &[i32],
    recv: &mut [i32],
) -> f64 {
    let me = world.rank();
    match op {
        Op::EagerSend => {
            world.barrier();
            if me == 0 {
                let t1 = mpi::time();
                world.process_at_rank(1).send(&send[..n]);
                return mpi::time() - t1;
            }
            if me == 1 {
                let until = mpi::time() + EAGER_PROBE_DELAY;
                while mpi::time() < until {
                    std::hint::spin_loop();
                }
                world.process_at_rank(0).receive_into(&mut recv[..n]);
            }
            0.0
        }
        Op::ColdSend => cold_message(
            world,
            |peer| peer.send(&send[..n]),
            |peer| {
                peer.receive_into(&mut recv[..n]);
            },
        ),
        Op::VectorSend => {
            let blocks = n.div_ceil(VECTOR_BLOCK).max(1);
            let block = (n / blocks).max(1);
            let vector = mpi::datatype::UserDatatype::vector(
                blocks as mpi::Count,
                block as mpi::Count,
                (2 * block) as mpi::Count,
                &i32::equivalent_datatype(),
            );
            let extent = 2 * block * blocks;
            cold_message(
                world,
                |peer| {
                    // SAFETY: `blocks` blocks of `block` integers every `2 * block`
                    // integers stay within the `extent` integers of the buffer.
                    let view = unsafe {
                        mpi::datatype::View::with_count_and_datatype(&send[..extent], 1, &vector)
                    };
                    peer.send(&view);
                },
                |peer| {
                    peer.receive_into(&mut recv[..blocks * block]);
                },
            )
        }
        Op::BusySignal => {
            world.barrier();
            let start = mpi::time();
            if me >= 2 {
                // Compute, never entering MPI (which would yield the core).
                let mut x = 1.0f64;
                while mpi::time() - start < BUSY_WINDOW {
                    for _ in 0..1000 {
                        x = std::hint::black_box(x * 1.000_000_1 + 1e-9);
                    }
                }
                return 0.0;
            }
            // Let the computing ranks take their cores first.
            while mpi::time() - start < BUSY_WINDOW / 10.0 {
                std::hint::spin_loop();
            }
            let mut empty: [i32; 0] = [];
            if me == 0 {
                let peer = world.process_at_rank(1);
                let t1 = mpi::time();
                peer.send(&empty[..]);
                peer.receive_into(&mut empty[..]);
                return (mpi::time() - t1) / 2.0;
            }
            let peer = world.process_at_rank(0);
            peer.receive_into(&mut empty[..]);
            peer.send(&empty[..]);
            0.0
        }
        Op::ReduceLocal => reduce_local_sample(world, &send[..n], &mut recv[..n]),
        Op::MessageRate => mpi::request::scope(|scope| {
            if me == 1 {
                let from = world.process_at_rank(0);
                let reqs: Vec<_> = recv[..n * RATE_WINDOW]
                    .chunks_mut(n.max(1))
                    .map(|c| from.immediate_receive_into(scope, c))
                    .collect();
                world.barrier();
                for r in reqs {
                    r.wait();
                }
                return 0.0;
            }
            world.barrier();
            if me != 0 {
                return 0.0;
            }
            let to = world.process_at_rank(1);
            let t1 = mpi::time();
            let reqs: Vec<_> = (0..RATE_WINDOW)
                .map(|_| to.immediate_send(scope, &send[..n]))
                .collect();
            for r in reqs {
                r.wait();
            }
            (mpi::time() - t1) / RATE_WINDOW as f64
        }),
        _ => 0.0,
    }
}

/// REDUCE LOCAL's sample: after a barrier, rank 0 sums `send` into `recv`
/// [`REDUCE_LOCAL_CALLS`] times; the seconds per call (other ranks return 0).
fn reduce_local_sample(world: &SimpleCommunicator, send: &[i32], recv: &mut [i32]) -> f64 {
    world.barrier();
    if world.rank() != 0 {
        return 0.0;
    }
    let t1 = mpi::time();
    for _ in 0..REDUCE_LOCAL_CALLS {
        mpi::collective::reduce_local_into(send, &mut *recv, SystemOperation::sum());
    }
    (mpi::time() - t1) / REDUCE_LOCAL_CALLS as f64
}

/// One message from rank 0 to rank 1 (`send` on rank 0, `receive` on rank 1), caches
/// flushed on both first, timed on rank 0 until a zero-byte answer arrives; other ranks
/// only join the barriers and return 0.
fn cold_message(
    world: &SimpleCommunicator,
    send: impl FnOnce(&mpi::topology::Process<'_>),
    receive: impl FnOnce(&mpi::topology::Process<'_>),
) -> f64 {
    let me = world.rank();
    world.barrier();
    if me <= 1 {
        flush_caches();
    }
    world.barrier();
    let mut empty: [i32; 0] = [];
    if me == 0 {
        let peer = world.process_at_rank(1);
        let t1 = mpi::time();
        send(&peer);
        peer.receive_into(&mut empty[..]);
        return mpi::time() - t1;
    }
    if me == 1 {
        let peer = world.process_at_rank(0);
        receive(&peer);
        peer.send(&empty[..]);
    }
    0.0
}

/// Reads and writes [`CACHE_FLUSH_BYTES`] so that the next message starts from memory.
fn flush_caches() {
    thread_local! {
        static JUNK: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    JUNK.with(|j| {
        let mut j = j.borrow_mut();
        if j.is_empty() {
            j.resize(CACHE_FLUSH_BYTES / 8, 0);
        }
        for x in j.iter_mut().step_by(8) {
            *x = x.wrapping_add(1);
        }
        std::hint::black_box(&*j);
    });
}

/// Runs one instance of `op` on `n` integers; `send` and `recv` are large enough. With
/// `one_buffer`, SEND & RECV sends from the buffer it receives into, as NetPIPE does by
/// default (each process then sends data that the other core has just written, which costs
/// about 2x at 64 KiB on shared memory here).
pub fn run(
    op: Op,
    world: &SimpleCommunicator,
    n: usize,
    send: &[i32],
    recv: &mut [i32],
    one_buffer: bool,
) {
    let np = world.size() as usize;
    let me = world.rank();
    let root = world.process_at_rank(0);
    match op {
        Op::Timing => {
            mpi::time();
        }
        Op::Barrier => world.barrier(),
        Op::Allreduce => {
            world.all_reduce_into(&send[..n], &mut recv[..n], SystemOperation::sum());
        }
        Op::Reduce => {
            if me == 0 {
                root.reduce_into_root(&send[..n], &mut recv[..n], SystemOperation::sum());
            } else {
                root.reduce_into(&send[..n], SystemOperation::sum());
            }
        }
        // The root broadcasts the receive buffer, so every rank touches the same memory.
        Op::Broadcast => root.broadcast_into(&mut recv[..n]),
        Op::Gather => {
            if me == 0 {
                root.gather_into_root(&send[..n], &mut recv[..n * np]);
            } else {
                root.gather_into(&send[..n]);
            }
        }
        Op::Allgather => world.all_gather_into(&send[..n], &mut recv[..n * np]),
        Op::AllToAll => world.all_to_all_into(&send[..n * np], &mut recv[..n * np]),
        Op::IsendWait => {
            if me == 0 {
                mpi::request::scope(|scope| {
                    world
                        .process_at_rank(1)
                        .immediate_send(scope, &send[..n])
                        .wait();
                });
            } else if me == 1 {
                world.process_at_rank(0).receive_into(&mut recv[..n]);
            }
        }
        // Outside their own timing (validation), the extra operations are one plain send.
        Op::BlockingSend | Op::EagerSend | Op::MessageRate => {
            if me == 0 {
                world.process_at_rank(1).send(&send[..n]);
            } else if me == 1 {
                world.process_at_rank(0).receive_into(&mut recv[..n]);
            }
        }
        Op::Sendrecv => {
            if me < 2 {
                let other = world.process_at_rank(1 - me);
                mpi::point_to_point::send_receive_into(&send[..n], &other, &mut recv[..n], &other);
            }
        }
        Op::SendRecv if one_buffer => {
            if me < 2 {
                let other = world.process_at_rank(1 - me);
                if me == 1 {
                    other.receive_into(&mut recv[..n]);
                }
                other.send(&recv[..n]);
                if me == 0 {
                    other.receive_into(&mut recv[..n]);
                }
            }
        }
        Op::SendRecv | Op::Signal => {
            let n = if op == Op::Signal { 0 } else { n };
            if me == 0 {
                let other = world.process_at_rank(1);
                other.send(&send[..n]);
                other.receive_into(&mut recv[..n]);
            } else if me == 1 {
                let other = world.process_at_rank(0);
                other.receive_into(&mut recv[..n]);
                other.send(&send[..n]);
            }
        }
        Op::BusySignal | Op::VectorSend | Op::ColdSend => {
            sender_sample(op, world, n, send, recv);
        }
        // Outside its own timing (validation), one call on every rank.
        Op::ReduceLocal => {
            mpi::collective::reduce_local_into(&send[..n], &mut recv[..n], SystemOperation::sum())
        }
    }
}

/// Runs `op` once on known data and checks what arrived; an error says what is wrong.
pub fn validate(
    op: Op,
    world: &SimpleCommunicator,
    n: usize,
    send: &mut [i32],
    recv: &mut [i32],
) -> Result<(), String> {
    let np = world.size() as usize;
    let me = world.rank() as usize;
    // Element i of rank r's block for destination d: small, distinct, sums cannot overflow.
    let value = |r: usize, d: usize, i: usize| ((r * 7 + d * 3 + i) % 1000) as i32;
    let sized = n * if matches!(op, Op::AllToAll) { np } else { 1 };
    for (i, v) in send[..sized].iter_mut().enumerate() {
        *v = value(me, i / n.max(1), i % n.max(1));
    }
    recv[..n * np].fill(-1);
    if op == Op::Broadcast && me == 0 {
        recv[..n].copy_from_slice(&send[..n]);
    }
    run(op, world, n, send, recv, false);
    let bad = |what: String| Err(format!("{}: rank {me}: {what}", op.mpitest_name()));
    let check = |got: &[i32], want: &dyn Fn(usize) -> i32| -> Result<(), String> {
        match (0..got.len()).find(|&i| got[i] != want(i)) {
            None => Ok(()),
            Some(i) => bad(format!("element {i} is {} instead of {}", got[i], want(i))),
        }
    };
    let sum = |i: usize| (0..np).map(|r| value(r, 0, i)).sum::<i32>();
    match op {
        Op::Allreduce => check(&recv[..n], &sum),
        Op::ReduceLocal => check(&recv[..n], &|i| value(me, 0, i) - 1),
        Op::Reduce if me == 0 => check(&recv[..n], &sum),
        Op::Broadcast => check(&recv[..n], &|i| value(0, 0, i)),
        Op::Gather if me == 0 => check(&recv[..n * np], &|i| value(i / n, 0, i % n)),
        Op::Allgather => check(&recv[..n * np], &|i| value(i / n, 0, i % n)),
        Op::AllToAll => check(&recv[..n * np], &|i| value(i / n, me, i % n)),
        Op::IsendWait | Op::BlockingSend | Op::EagerSend | Op::MessageRate if me == 1 => {
            check(&recv[..n], &|i| value(0, 0, i))
        }
        Op::Sendrecv | Op::SendRecv if me < 2 => check(&recv[..n], &|i| value(1 - me, 0, i)),
        _ => Ok(()),
    }
}
