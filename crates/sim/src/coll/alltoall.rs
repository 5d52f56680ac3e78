//! MPI_Alltoall algorithms (SimGrid 3.32 `alltoall/*.cpp`, MPICH 3.3, design note §7.8).
//! Sends carry `count × dtype_size` bytes, receives expect `recv_count × recv_dtype_size`.
//!
//! * `basic_linear`: irecvs from rank+1, rank+2, … then isends to rank−1, rank−2, …, all
//!   started at once, then waited (Open MPI's linear, linear_sync and two_proc in SimGrid).
//! * `pair`: p steps of sendrecv with `rank xor i` (SimGrid throws for non-power-of-two sizes;
//!   we run `ring` there).
//! * `bruck`: MPICH/SimGrid Bruck: ⌈log p⌉ sendrecvs of the packed blocks whose index has the
//!   step's bit set.
//! * `ring`: p steps of sendrecv to rank+i from rank−i (the step with oneself is free).
//! * `mvapich2_scatter_dest`: isend/irecv in batches of 4 peers (scattered destinations),
//!   oneself included (a real message).
//! * `mpich_scattered`: the same in batches of 32 (MPICH's medium-size alltoall).
//! * `mpich_pairwise`: MPICH's pairwise exchange (xor partner for powers of two, else
//!   rank±i), steps 1..p−1.
//!
//! Linear-length algorithms generate their operations lazily.

use super::ops::{add_mod, is_pow2, sub_mod, Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Cx, Program};

/// Alltoall algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("basic_linear", basic_linear),
    Algorithm::new("pair", pair),
    Algorithm::new("bruck", bruck),
    Algorithm::new("ring", ring),
    Algorithm::new("mvapich2_scatter_dest", mvapich2_scatter_dest),
    Algorithm::new("mpich_scattered", mpich_scattered),
    Algorithm::new("mpich_pairwise", mpich_pairwise),
];

/// Alltoall aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("linear", "basic_linear"),
    ("ompi_basic_linear", "basic_linear"),
    ("linear_sync", "basic_linear"),
    ("two_proc", "basic_linear"),
    ("pairwise", "pair"),
    ("modified_bruck", "bruck"),
    ("scattered", "mpich_scattered"),
];

const TAG: i32 = tag::ALLTOALL;

/// The communicator size, the rank, and the bytes of one sent and one received block.
fn shape(a: &CollArgs) -> (u32, u32, u64, u64) {
    let sb = a.count.saturating_mul(a.dtype_size);
    let rb = a.recv_count.saturating_mul(a.recv_dtype_size);
    (a.size, a.rank, sb, rb)
}

/// `ring` on sizes that are not a power of two (where SimGrid throws), else xor partners.
fn pair(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    Ok(if !is_pow2(p) {
        cx.abort("alltoall pair algorithm with a non-power-of-two size");
        exchange(p, rank, sb, rb, 0, false)
    } else {
        exchange(p, rank, sb, rb, 0, true)
    })
}

/// To rank+i from rank−i, for i in 0..p.
fn ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    Ok(exchange(p, rank, sb, rb, 0, false))
}

/// Batches of 4 scattered peers.
fn mvapich2_scatter_dest(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    Ok(scattered(p, rank, sb, rb, 4))
}

/// Batches of 32 scattered peers.
fn mpich_scattered(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    Ok(scattered(p, rank, sb, rb, 32))
}

/// MPICH's pairwise exchange, steps 1..p.
fn mpich_pairwise(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    Ok(exchange(p, rank, sb, rb, 1, is_pow2(p)))
}

/// Open MPI's basic linear alltoall.
fn basic_linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, sb, rb) = shape(a);
    let n = p as u64 - 1;
    Ok(Lazy::steps(2 * n + 1, move |i, o| {
        if i < n {
            o.irecv(add_mod(rank, i + 1, p), rb, TAG);
        } else if i < 2 * n {
            o.isend(sub_mod(rank, (i - n + 1) as u32, p), sb, TAG);
        } else {
            o.waitall();
        }
    }))
}

/// Pairwise exchanges for steps `first..p`: with `rank xor i` if `xor`, else to rank+i and
/// from rank−i; the exchange with oneself is free.
fn exchange(p: u32, rank: u32, sb: u64, rb: u64, first: u64, xor: bool) -> Box<dyn Program> {
    Lazy::steps(p as u64 - first, move |i, o| {
        let i = i + first;
        let (dst, src) = if xor {
            (rank ^ i as u32, rank ^ i as u32)
        } else {
            (add_mod(rank, i, p), sub_mod(rank, i as u32, p))
        };
        o.sendrecv(rank, dst, sb, TAG, src, rb, TAG);
    })
}

/// Batches of `block` isend/irecv pairs with scattered peers (MVAPICH2 / MPICH "scattered").
fn scattered(p: u32, rank: u32, sb: u64, rb: u64, block: u64) -> Box<dyn Program> {
    let n = p as u64;
    Lazy::steps(n.div_ceil(block), move |b, o| {
        let ii = b * block;
        let ss = block.min(n - ii);
        for i in 0..ss {
            o.irecv(add_mod(rank, i + ii, p), rb, TAG);
        }
        for i in 0..ss {
            o.isend(sub_mod(rank, ((i + ii) % n) as u32, p), sb, TAG);
        }
        o.waitall();
    })
}

/// Number of indices `j` in `[1, p)` with bit `d` set.
fn blocks_with_bit(p: u64, d: u64) -> u64 {
    (p / (2 * d)) * d + (p % (2 * d)).saturating_sub(d)
}

/// Bruck's alltoall (`alltoall-bruck.cpp`).
fn bruck(a: &CollArgs, _cx: &mut Cx) -> Built {
    let p = a.size;
    let blk = a.count.saturating_mul(a.recv_dtype_size);
    let mut o = Ops::new();
    let mut d = 1u64;
    while d < p as u64 {
        let dst = add_mod(a.rank, d, p);
        let src = sub_mod(a.rank, d as u32, p);
        let bytes = blocks_with_bit(p as u64, d) * blk;
        o.sendrecv(a.rank, dst, bytes, TAG, src, bytes, TAG);
        d <<= 1;
    }
    Ok(o.into_program())
}

#[cfg(test)]
mod tests {
    use super::blocks_with_bit;

    #[test]
    fn bit_counts() {
        for p in 1..100u64 {
            let mut d = 1;
            while d < p {
                let n = (1..p).filter(|j| j & d != 0).count() as u64;
                assert_eq!(blocks_with_bit(p, d), n, "p{p} d{d}");
                d <<= 1;
            }
        }
    }
}
