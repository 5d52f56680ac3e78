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
use super::{tag, CollArgs, CollError, Cx, Program};

/// Alltoallv algorithm names.
pub(crate) const NAMES: &[&str] = &[
    "ompi_basic_linear",
    "pair",
    "ring",
    "bruck",
    "mpich_scattered",
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

/// The program of algorithm `name`.
pub(crate) fn build(
    name: &'static str,
    a: &CollArgs,
    cx: &mut Cx,
) -> Result<Box<dyn Program>, CollError> {
    let sz = Arc::new(Sizes {
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
    });
    let (p, rank) = (a.size, a.rank);
    Ok(match name {
        "ompi_basic_linear" => basic_linear(p, rank, sz),
        "pair" => {
            if !is_pow2(p) {
                cx.abort("alltoallv pair algorithm with a non-power-of-two size");
            }
            exchange(p, rank, sz, is_pow2(p))
        }
        "ring" => exchange(p, rank, sz, is_pow2(p)),
        "bruck" => scattered(p, rank, sz, 4, false),
        "mpich_scattered" => scattered(p, rank, sz, 32, true),
        _ => unreachable!("alltoallv algorithm {name}"),
    })
}

fn basic_linear(p: u32, rank: u32, sz: Arc<Sizes>) -> Box<dyn Program> {
    let n = p as u64 - 1;
    let other = move |i: u64| {
        if (i as u32) < rank {
            i as u32
        } else {
            i as u32 + 1
        }
    };
    Lazy::steps(2 * n + 1, move |i, o| {
        if i < n {
            let s = other(i);
            o.irecv(s, sz.recv[s as usize], TAG);
        } else if i < 2 * n {
            let d = other(i - n);
            o.isend(d, sz.send[d as usize], TAG);
        } else {
            o.waitall();
        }
    })
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
