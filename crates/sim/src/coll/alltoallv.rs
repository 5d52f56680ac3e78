//! MPI_Alltoallv algorithms (SimGrid 3.32 `alltoallv/*.cpp`, MPICH 3.3, design note §7.9).
//! The send to rank `d` carries `send_counts[d] × dtype_size` bytes, the receive from `s`
//! expects `recv_counts[s] × recv_dtype_size`.
//!
//! * `ompi_basic_linear`: irecvs from every other rank in increasing order, then isends to
//!   every other rank in increasing order, all started at once, waitall; zero counts still
//!   send an (empty) message.
//! * `pair`: p steps of sendrecv with `rank xor i` (SimGrid throws for non-power-of-two
//!   sizes, §8; we run the `ring` exchange there).
//! * `ring`: p steps of sendrecv with `rank xor i` (powers of two) or to rank+i from rank−i.
//! * `bruck`: SimGrid's "bruck" (really MPICH's scattered algorithm with batches of 4 peers,
//!   oneself skipped, empty messages kept).
//! * `mpich_scattered`: MPICH's default (batches of 32 peers, oneself included, zero counts
//!   skipped).
//!
//! All generate their operations lazily.

use std::sync::Arc;

use super::ops::{add_mod, is_pow2, sub_mod, Lazy};
use super::{tag, Algorithm, Built, CollArgs, Cx, Program};

/// Alltoallv algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("ompi_basic_linear", basic_linear),
    Algorithm::new("pair", pair),
    Algorithm::new("ring", ring),
    Algorithm::new("bruck", bruck),
    Algorithm::new("mpich_scattered", mpich_scattered),
];

/// Alltoallv aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("linear", "ompi_basic_linear"),
    ("basic_linear", "ompi_basic_linear"),
    ("pairwise", "pair"),
    ("scattered", "mpich_scattered"),
];

const TAG: i32 = tag::ALLTOALLV;

/// Per-peer byte counts of one rank.
struct Sizes {
    send: Vec<u64>,
    recv: Vec<u64>,
}

impl Sizes {
    /// The byte counts of this rank's call.
    fn of(a: &CollArgs) -> Arc<Sizes> {
        Arc::new(Sizes {
            send: a
                .send_counts
                .iter()
                .map(|c| c.saturating_mul(a.dtype_size))
                .collect(),
            recv: a
                .recv_counts
                .iter()
                .map(|c| c.saturating_mul(a.recv_dtype_size))
                .collect(),
        })
    }
}

/// `ring` (with SimGrid's abort noted) on sizes that are not a power of two.
fn pair(a: &CollArgs, cx: &mut Cx) -> Built {
    let p = a.size;
    if !is_pow2(p) {
        cx.abort("alltoallv pair algorithm with a non-power-of-two size");
    }
    Ok(exchange(p, a.rank, Sizes::of(a), is_pow2(p)))
}

/// xor partners on powers of two, else to rank+i from rank−i.
fn ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(exchange(a.size, a.rank, Sizes::of(a), is_pow2(a.size)))
}

/// SimGrid's `bruck`: batches of 4, oneself skipped, zero counts sent.
fn bruck(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(scattered(a.size, a.rank, Sizes::of(a), 4, false))
}

/// MPICH's: batches of 32, oneself included, zero counts skipped.
fn mpich_scattered(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(scattered(a.size, a.rank, Sizes::of(a), 32, true))
}

/// Open MPI's basic linear alltoallv.
fn basic_linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sz) = (a.size, a.rank, Sizes::of(a));
    let n = p as u64 - 1;
    let other = move |i: u64| {
        if (i as u32) < rank {
            i as u32
        } else {
            i as u32 + 1
        }
    };
    Ok(Lazy::steps(2 * n + 1, move |i, o| {
        if i < n {
            let s = other(i);
            o.irecv(s, sz.recv[s as usize], TAG);
        } else if i < 2 * n {
            let d = other(i - n);
            o.isend(d, sz.send[d as usize], TAG);
        } else {
            o.waitall();
        }
    }))
}

fn exchange(p: u32, rank: u32, sz: Arc<Sizes>, xor: bool) -> Box<dyn Program> {
    Lazy::steps(p as u64, move |i, o| {
        let (dst, src) = if xor {
            (rank ^ i as u32, rank ^ i as u32)
        } else {
            (add_mod(rank, i, p), sub_mod(rank, i as u32, p))
        };
        o.sendrecv(
            rank,
            dst,
            sz.send[dst as usize],
            TAG,
            src,
            sz.recv[src as usize],
            TAG,
        );
    })
}

/// Batches of `block` peers; `mpich`: oneself included and zero counts skipped (MPICH),
/// else oneself skipped and zero counts sent (SimGrid's `bruck`).
fn scattered(p: u32, rank: u32, sz: Arc<Sizes>, block: u64, mpich: bool) -> Box<dyn Program> {
    let n = p as u64;
    Lazy::steps(n.div_ceil(block), move |b, o| {
        let ii = b * block;
        let ss = block.min(n - ii);
        let mut any = false;
        for i in 0..ss {
            let s = add_mod(rank, i + ii, p);
            let bytes = sz.recv[s as usize];
            if (mpich && bytes > 0) || (!mpich && s != rank) {
                o.irecv(s, bytes, TAG);
                any = true;
            }
        }
        for i in 0..ss {
            let d = sub_mod(rank, (i + ii) as u32, p);
            let bytes = sz.send[d as usize];
            if (mpich && bytes > 0) || (!mpich && d != rank) {
                o.isend(d, bytes, TAG);
                any = true;
            }
        }
        if any {
            o.waitall();
        }
    })
}
