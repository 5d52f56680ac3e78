//! MPI_Allgather algorithms (SimGrid 3.32 `allgather/*.cpp`, MPICH 3.3, design note §7.9).
//! Every block is `count × dtype_size` bytes (the send block; MPI requires the receive
//! block to be the same size).
//!
//! * `rdb`: MPICH's recursive doubling with the non-power-of-two fix-up.
//! * `ring`: SimGrid's "ring": p−1 sendrecvs sending the rank's own block to rank+i and
//!   receiving rank−i's.
//! * `bruck`: Bruck's allgather (doubling blocks sent to rank−d, received from rank+d, then
//!   the remainder).
//! * `pair`: sendrecv of the own block with `rank xor i` (SimGrid throws for
//!   non-power-of-two sizes, §8; we run `ring` there).
//! * `ompi_neighborexchange`: Open MPI's neighbour exchange (odd sizes: `ring`).
//! * `NTSLR_NB`: non-blocking logical ring (never selected by the Open MPI table).
//! * `mpich_ring`: MPICH's ring (each step forwards the block received at the previous one).

use super::ops::{add_mod, is_pow2, rdb_allgather, sub_mod, Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Cx, Program};

/// Allgather algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("rdb", rdb),
    Algorithm::new("ring", ring),
    Algorithm::new("bruck", bruck),
    Algorithm::new("pair", pair),
    Algorithm::new("ompi_neighborexchange", ompi_neighborexchange),
    Algorithm::new("NTSLR_NB", ntslr_nb),
    Algorithm::new("mpich_ring", mpich_ring),
];

/// Allgather aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("recursive_doubling", "rdb"),
    ("neighborexchange", "ompi_neighborexchange"),
    ("neighbor", "ompi_neighborexchange"),
    ("two_proc", "pair"),
    ("linear", "NTSLR_NB"),
];

const TAG: i32 = tag::ALLGATHER;

/// MPICH's recursive doubling.
fn rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let b = a.bytes();
    let mut o = Ops::new();
    let pp = a.size as u64;
    rdb_allgather(
        &mut o,
        a.rank as u64,
        pp,
        |r| r as u32,
        |lo, hi| hi.min(pp).saturating_sub(lo) * b,
        TAG,
    );
    Ok(o.into_program())
}

/// SimGrid's ring: the own block to rank+i, from rank−i.
fn ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    let b = a.bytes();
    Ok(own_block_exchange(a.size, a.rank, move |_| b, false, TAG))
}

/// The own block with `rank xor i`; `ring` on sizes that are not a power of two.
fn pair(a: &CollArgs, cx: &mut Cx) -> Built {
    let (b, p) = (a.bytes(), a.size);
    if !is_pow2(p) {
        cx.abort("allgather pair algorithm with a non-power-of-two size");
    }
    Ok(own_block_exchange(p, a.rank, move |_| b, is_pow2(p), TAG))
}

/// Open MPI's neighbour exchange; `ring` on odd sizes.
fn ompi_neighborexchange(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (b, p, rank) = (a.bytes(), a.size, a.rank);
    Ok(if p % 2 == 1 {
        own_block_exchange(p, rank, move |_| b, false, TAG)
    } else {
        neighbor_exchange(p, rank, move |_| b, TAG)
    })
}

/// MPICH's ring: each step forwards the block received at the previous one.
fn mpich_ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (b, p, rank) = (a.bytes(), a.size, a.rank);
    let (right, left) = (add_mod(rank, 1, p), sub_mod(rank, 1, p));
    Ok(Lazy::steps(p as u64 - 1, move |_, o| {
        o.sendrecv(rank, right, b, TAG, left, b, TAG)
    }))
}

/// p−1 sendrecvs of the rank's own block: with `rank xor i` if `xor`, else to rank+i and
/// from rank−i. `size(r)` is rank `r`'s block.
pub(crate) fn own_block_exchange(
    p: u32,
    rank: u32,
    size: impl Fn(u32) -> u64 + Send + 'static,
    xor: bool,
    tag: i32,
) -> Box<dyn Program> {
    Lazy::steps(p as u64 - 1, move |i, o| {
        let i = i + 1;
        let (dst, src) = if xor {
            (rank ^ i as u32, rank ^ i as u32)
        } else {
            (add_mod(rank, i, p), sub_mod(rank, i as u32, p))
        };
        o.sendrecv(rank, dst, size(rank), tag, src, size(src), tag);
    })
}

/// Bruck's allgather (`allgather-bruck.cpp`).
fn bruck(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, b) = (a.size, a.rank, a.bytes());
    let mut o = Ops::new();
    let mut d = 1u64;
    while d <= p as u64 / 2 {
        let src = add_mod(rank, d, p);
        let dst = sub_mod(rank, d as u32, p);
        o.sendrecv(rank, dst, d * b, TAG, src, d * b, TAG);
        d *= 2;
    }
    let rem = p as u64 - d;
    if rem > 0 {
        let src = add_mod(rank, d, p);
        let dst = sub_mod(rank, (d % p as u64) as u32, p);
        o.sendrecv(rank, dst, rem * b, TAG, src, rem * b, TAG);
    }
    Ok(o.into_program())
}

/// Open MPI's neighbour exchange (even sizes): one block with the first neighbour, then
/// pairs of blocks alternately with the two neighbours. `size(r)` is rank `r`'s block.
pub(crate) fn neighbor_exchange(
    p: u32,
    rank: u32,
    size: impl Fn(u32) -> u64 + Send + 'static,
    tag: i32,
) -> Box<dyn Program> {
    let even = rank % 2 == 0;
    let (nb, mut rdf, off): ([u32; 2], [u32; 2], [i64; 2]) = if even {
        (
            [add_mod(rank, 1, p), sub_mod(rank, 1, p)],
            [rank, rank],
            [2, -2],
        )
    } else {
        let n0 = sub_mod(rank, 1, p);
        ([n0, add_mod(rank, 1, p)], [n0, n0], [-2, 2])
    };
    let mut sdf = if even { rank } else { rdf[0] };
    Lazy::steps(p as u64 / 2, move |i, o| {
        if i == 0 {
            o.sendrecv(rank, nb[0], size(rank), tag, nb[0], size(nb[0]), tag);
            return;
        }
        let par = (i % 2) as usize;
        rdf[par] = ((rdf[par] as i64 + off[par] + p as i64) % p as i64) as u32;
        let two = |r: u32| size(r) + size(r + 1);
        o.sendrecv(rank, nb[par], two(sdf), tag, nb[par], two(rdf[par]), tag);
        sdf = rdf[par];
    })
}

/// Non-blocking logical ring (`allgather-NTSLR-NB.cpp`).
fn ntslr_nb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, b) = (a.size, a.rank, a.bytes());
    let (right, left) = (add_mod(rank, 1, p), sub_mod(rank, 1, p));
    let n = p as u64 - 1;
    Ok(Lazy::steps(2 * n, move |i, o| {
        if i < n {
            o.irecv(left, b, TAG.wrapping_add(i as i32));
        } else {
            let k = i - n;
            let s = o.isend(right, b, TAG.wrapping_add(k as i32));
            o.wait(k as u32);
            o.wait(s);
        }
    }))
}
