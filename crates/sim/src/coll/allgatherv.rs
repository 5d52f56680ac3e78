//! MPI_Allgatherv algorithms (SimGrid 3.32 `allgatherv/*.cpp`, MPICH 3.3, design note §7.9).
//! Rank `r`'s block is `recv_counts[r] × recv_dtype_size` bytes (displacements are taken as
//! zero, as in replay).
//!
//! * `GB`: linear gatherv to rank 0, then a bcast through the selector of
//!   `max(recv_counts)` elements (SimGrid's `max(disp + count)` with zero displacements).
//! * `ompi_bruck`: Open MPI's Bruck (blocks rank..rank+bc−1 to rank−d, from rank+d).
//! * `mpich_ring`: MPICH's chunked ring (chunks of `max(min count, 256 KiB)`).
//! * `ompi_neighborexchange`: Open MPI's neighbour exchange (odd sizes: `ring`).
//! * `pair`: own block with `rank xor i` (SimGrid throws for non-power-of-two sizes, §8;
//!   we run `ring` there).
//! * `ring`: own block to rank+i, from rank−i.
//! * `mpich_rdb`: MPICH's recursive doubling with the non-power-of-two fix-up.
//! * `mpich_ring_32k`: MPICH 3.3's own ring, whose chunks are `max(min count, 32 KiB)`
//!   (SimGrid's copy, `mpich_ring`, uses 256 KiB).

use std::sync::Arc;

use super::allgather::{neighbor_exchange, own_block_exchange};
use super::ops::{add_mod, is_pow2, rdb_allgather, sub_mod, Lazy, Ops, Seq};
use super::{tag, Algorithm, Built, CollArgs, Collective, Cx, Program};

/// Allgatherv algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("GB", gb),
    Algorithm::new("ompi_bruck", bruck),
    Algorithm::new("mpich_ring", mpich_ring),
    Algorithm::new("ompi_neighborexchange", ompi_neighborexchange),
    Algorithm::new("pair", pair),
    Algorithm::new("ring", ring),
    Algorithm::new("mpich_rdb", mpich_rdb),
    Algorithm::new("mpich_ring_32k", mpich_ring_32k),
];

/// Allgatherv aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("default", "GB"),
    ("bruck", "ompi_bruck"),
    ("neighborexchange", "ompi_neighborexchange"),
    ("neighbor", "ompi_neighborexchange"),
    ("two_proc", "pair"),
    ("rdb", "mpich_rdb"),
    ("recursive_doubling", "mpich_rdb"),
];

const TAG: i32 = tag::ALLGATHERV;

/// Rank `r`'s block in bytes, for every rank.
fn block_sizes(a: &CollArgs) -> Arc<Vec<u64>> {
    Arc::new(
        a.recv_counts
            .iter()
            .map(|c| c.saturating_mul(a.recv_dtype_size))
            .collect(),
    )
}

/// Gatherv to rank 0, then a bcast of the largest block, both through the selector.
fn gb(a: &CollArgs, cx: &mut Cx) -> Built {
    let mut g = a.clone();
    g.kind = Collective::Gatherv;
    g.root = 0;
    g.count = a.recv_counts[a.rank as usize];
    g.dtype_size = a.recv_dtype_size;
    let gather = cx.build(&g)?;
    let max = a.recv_counts.iter().copied().max().unwrap_or(0);
    let mut bc = a.nested(Collective::Bcast, max, 0);
    bc.dtype_size = a.recv_dtype_size;
    bc.recv_dtype_size = a.recv_dtype_size;
    let bcast = cx.build(&bc)?;
    Ok(Seq::program(vec![gather, bcast]))
}

/// SimGrid's copy of MPICH's ring: chunks of at least 256 KiB.
fn mpich_ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(chunked_ring(a, 32768 * 8))
}

/// MPICH 3.3's own ring: chunks of at least 32 KiB.
fn mpich_ring_32k(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(chunked_ring(a, 32768))
}

/// Open MPI's neighbour exchange; `ring` on odd sizes.
fn ompi_neighborexchange(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sizes) = (a.size, a.rank, block_sizes(a));
    Ok(if p % 2 == 1 {
        own_block_exchange(p, rank, move |r| sizes[r as usize], false, TAG)
    } else {
        neighbor_exchange(p, rank, move |r| sizes[r as usize], TAG)
    })
}

/// The own block with `rank xor i`; `ring` on sizes that are not a power of two.
fn pair(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, sizes) = (a.size, a.rank, block_sizes(a));
    if !is_pow2(p) {
        cx.abort("allgatherv pair algorithm with a non-power-of-two size");
    }
    Ok(own_block_exchange(
        p,
        rank,
        move |r| sizes[r as usize],
        is_pow2(p),
        TAG,
    ))
}

/// The own block to rank+i, from rank−i.
fn ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sizes) = (a.size, a.rank, block_sizes(a));
    Ok(own_block_exchange(
        p,
        rank,
        move |r| sizes[r as usize],
        false,
        TAG,
    ))
}

/// MPICH's recursive doubling.
fn mpich_rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sizes) = (a.size, a.rank, block_sizes(a));
    let mut o = Ops::new();
    if a.recv_counts.iter().any(|&c| c > 0) {
        let prefix = prefix_sums(&sizes);
        let pp = p as u64;
        rdb_allgather(
            &mut o,
            rank as u64,
            pp,
            |r| r as u32,
            |lo, hi| {
                let (lo, hi) = (lo.min(pp) as usize, hi.min(pp) as usize);
                prefix[hi] - prefix[lo]
            },
            TAG,
        );
    }
    Ok(o.into_program())
}

/// `out[i] = sizes[0] + … + sizes[i-1]`.
pub(crate) fn prefix_sums(sizes: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(sizes.len() + 1);
    let mut acc = 0u64;
    out.push(0);
    for &s in sizes {
        acc += s;
        out.push(acc);
    }
    out
}

/// Open MPI's Bruck allgatherv (`allgatherv-ompi-bruck.cpp`).
fn bruck(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    let prefix = prefix_sums(&block_sizes(a));
    let total = prefix[p as usize];
    // bytes of the blocks of ranks start, start+1, …, start+n-1 (cyclically)
    let run = |start: u32, n: u64| -> u64 {
        let end = start as u64 + n;
        if end <= p as u64 {
            prefix[end as usize] - prefix[start as usize]
        } else {
            total - prefix[start as usize] + prefix[(end - p as u64) as usize]
        }
    };
    let mut o = Ops::new();
    let mut d = 1u64;
    while d < p as u64 {
        let from = add_mod(rank, d, p);
        let to = sub_mod(rank, d as u32, p);
        let bc = if d <= p as u64 / 2 { d } else { p as u64 - d };
        o.sendrecv(rank, to, run(rank, bc), TAG, from, run(from, bc), TAG);
        d <<= 1;
    }
    Ok(o.into_program())
}

/// MPICH's chunked ring allgatherv (`allgatherv-mpich-ring.cpp`); chunks of at least
/// `pipeline` bytes.
fn chunked_ring(a: &CollArgs, pipeline: u64) -> Box<dyn Program> {
    let p = a.size;
    let rank = a.rank;
    let ext = a.recv_dtype_size.max(1);
    let counts: Vec<u64> = a.recv_counts.clone();
    let total: u64 = counts.iter().sum();
    let mut min = counts.iter().copied().min().unwrap_or(0);
    if min.saturating_mul(ext) < pipeline {
        min = pipeline / ext;
    }
    if min == 0 {
        min = 1;
    }
    let (left, right) = (sub_mod(rank, 1, p), add_mod(rank, 1, p));
    let mut torecv = total - counts[rank as usize];
    let mut tosend = total - counts[right as usize];
    let (mut sidx, mut ridx) = (rank as usize, left as usize);
    let (mut soff, mut roff) = (0u64, 0u64);
    let unit = a.recv_dtype_size;
    Box::new(Lazy::new(Box::new(move |o| {
        if tosend == 0 && torecv == 0 {
            return false;
        }
        let mut sendnow = (counts[sidx] - soff).min(min);
        let mut recvnow = (counts[ridx] - roff).min(min);
        if tosend == 0 {
            sendnow = 0;
        }
        if torecv == 0 {
            recvnow = 0;
        }
        if sendnow == 0 && recvnow != 0 {
            o.recv(left, recvnow * unit, TAG);
            torecv -= recvnow;
        } else if recvnow == 0 && sendnow != 0 {
            o.send(right, sendnow * unit, TAG);
            tosend -= sendnow;
        } else if sendnow != 0 {
            o.sendrecv(rank, right, sendnow * unit, TAG, left, recvnow * unit, TAG);
            tosend -= sendnow;
            torecv -= recvnow;
        }
        soff += sendnow;
        roff += recvnow;
        if soff == counts[sidx] {
            soff = 0;
            sidx = (sidx + p as usize - 1) % p as usize;
        }
        if roff == counts[ridx] {
            roff = 0;
            ridx = (ridx + p as usize - 1) % p as usize;
        }
        tosend != 0 || torecv != 0
    })))
}
