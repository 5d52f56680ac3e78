//! MPI_Reduce_scatter algorithms (SimGrid 3.32 `reduce_scatter/*.cpp`,
//! `smpi_default_selector.cpp`; MPICH 3.3 `reduce_scatter_intra_recursive_halving.c`;
//! design note §7.12). Block `r` is `recv_counts[r] × dtype_size` bytes.
//!
//! * `default` (SimGrid): equal counts: flat reduce of the whole vector to rank 0 then
//!   linear scatterv; otherwise SimGrid's MPICH reduce_scatter (`mpich_pair` above 524288
//!   elements, else `mpich_rdb`).
//! * `ompi_basic_recursivehalving`: Open MPI's recursive halving (non-power-of-two
//!   pre/post steps; irecv, blocking send, wait).
//! * `ompi_ring`: Open MPI's ring (irecv from the left, blocking send to the right).
//! * `ompi_butterfly`: Open MPI's butterfly (sendrecv halving, then the mirror-permuted
//!   exchange).
//! * `mpich_pair`: p−1 sendrecvs sending block rank+i to rank+i, receiving from rank−i.
//! * `mpich_rdb`: MPICH's recursive doubling (everything but the subtrees' blocks) with the
//!   non-power-of-two fix-up.
//! * `mpich_rhalving`: MPICH's recursive halving (its default for commutative operations
//!   below 512 KiB).
//!
//! Every buffer a rank reduces into its partial result is a [`super::POp::Combine`] after
//! the receive that brought it (the folded vector, the half received in each halving step,
//! each block received on the ring or from a pair).

use std::sync::Arc;

use super::allgatherv::prefix_sums;
use super::ops::{add_mod, floor_pow2, sub_mod, Lazy, Ops, Seq};
use super::{reduce, scatter, tag, Algorithm, Built, CollArgs, Collective, Cx, Program};

/// Reduce_scatter algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("default", simgrid_default),
    Algorithm::new("ompi_basic_recursivehalving", ompi_recursive_halving),
    Algorithm::new("ompi_ring", ompi_ring),
    Algorithm::new("ompi_butterfly", ompi_butterfly),
    Algorithm::new("mpich_pair", mpich_pair),
    Algorithm::new("mpich_rdb", mpich_rdb),
    Algorithm::new("mpich_rhalving", mpich_rhalving),
];

/// Reduce_scatter aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("non-overlapping", "default"),
    ("nonoverlapping", "default"),
    ("recursive_halving", "ompi_basic_recursivehalving"),
    ("ring", "ompi_ring"),
    ("butterfly", "ompi_butterfly"),
    ("pairwise", "mpich_pair"),
    ("mpich_recursive_halving", "mpich_rhalving"),
];

const TAG: i32 = tag::REDUCE_SCATTER;

/// Block sizes in bytes and their prefix sums.
struct Blocks {
    size: Vec<u64>,
    prefix: Vec<u64>,
}

impl Blocks {
    fn total(&self) -> u64 {
        *self.prefix.last().expect("prefix sums")
    }

    /// Bytes of the blocks of ranks `[lo, hi)` (clamped to the communicator).
    fn range(&self, lo: u64, hi: u64) -> u64 {
        let n = self.size.len() as u64;
        let (lo, hi) = (lo.min(n) as usize, hi.min(n) as usize);
        if hi <= lo {
            0
        } else {
            self.prefix[hi] - self.prefix[lo]
        }
    }
}

impl Blocks {
    /// The blocks of this rank's call.
    fn of(a: &CollArgs) -> Arc<Blocks> {
        let size: Vec<u64> = a
            .recv_counts
            .iter()
            .map(|c| c.saturating_mul(a.dtype_size))
            .collect();
        let prefix = prefix_sums(&size);
        Arc::new(Blocks { size, prefix })
    }
}

/// Open MPI's recursive halving.
fn ompi_recursive_halving(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(recursive_halving(a, &Blocks::of(a), false))
}

/// MPICH's recursive halving.
fn mpich_rhalving(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(recursive_halving(a, &Blocks::of(a), true))
}

/// Open MPI's ring.
fn ompi_ring(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(ring(a, Blocks::of(a)))
}

/// Open MPI's butterfly.
fn ompi_butterfly(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(butterfly(a, &Blocks::of(a)))
}

/// SimGrid's `reduce_scatter__default`.
fn simgrid_default(a: &CollArgs, cx: &mut Cx) -> Built {
    let regular = a.recv_counts.iter().all(|&c| c == a.recv_counts[0]);
    if !regular {
        // reduce_scatter__mpich (counts, not bytes, against 524288)
        let total: u64 = a.recv_counts.iter().sum();
        return if total > 524288 {
            cx.enter("mpich_pair");
            mpich_pair(a, cx)
        } else {
            cx.enter("mpich_rdb");
            mpich_rdb(a, cx)
        };
    }
    let total: u64 = a.recv_counts.iter().sum();
    cx.enter("default");
    let reduce = reduce::flat(&a.nested(Collective::Reduce, total, 0));
    cx.enter("linear");
    let mut sv = a.nested(Collective::Scatterv, 0, 0);
    sv.send_counts = a.recv_counts.clone();
    sv.recv_count = a.recv_counts[a.rank as usize];
    let scatterv = scatter::scatterv_linear(&sv);
    Ok(Seq::program(vec![reduce, scatterv]))
}

/// Real rank of folded rank `v` when the even ranks below `2*rem` dropped out.
fn unfold(v: u64, rem: u64) -> u32 {
    (if v < rem { 2 * v + 1 } else { v + rem }) as u32
}

/// Open MPI's (`mpich == false`) or MPICH's recursive-halving reduce_scatter.
fn recursive_halving(a: &CollArgs, b: &Blocks, mpich: bool) -> Box<dyn Program> {
    let mut o = Ops::new();
    let total = b.total();
    if a.recv_counts.iter().all(|&c| c == 0) {
        return o.into_program();
    }
    let (p, rank) = (a.size as u64, a.rank as u64);
    let pof2 = floor_pow2(a.size) as u64;
    let rem = p - pof2;
    // folded block i covers real ranks [start(i), start(i+1))
    let start = |i: u64| if i <= rem { 2 * i } else { i + rem };
    let sum = |lo: u64, hi: u64| {
        if hi <= lo {
            0
        } else {
            b.range(start(lo), start(hi))
        }
    };
    let folded = if rank < 2 * rem {
        if rank % 2 == 0 {
            o.send((rank + 1) as u32, total, TAG);
            None
        } else {
            o.recv((rank - 1) as u32, total, TAG);
            o.combine(total);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    if let Some(v) = folded {
        let mut mask = pof2 >> 1;
        let (mut send_idx, mut recv_idx, mut last_idx) = (0u64, 0u64, pof2);
        while mask > 0 {
            let vp = v ^ mask;
            let peer = unfold(vp, rem);
            let (sc, rc);
            if v < vp {
                send_idx = recv_idx + mask;
                sc = sum(send_idx, last_idx);
                rc = sum(recv_idx, send_idx);
            } else {
                recv_idx = send_idx + mask;
                sc = sum(send_idx, recv_idx);
                rc = sum(recv_idx, last_idx);
            }
            if mpich {
                if sc != 0 && rc != 0 {
                    o.sendrecv(a.rank, peer, sc, TAG, peer, rc, TAG);
                    o.combine(rc);
                } else if rc != 0 {
                    o.recv(peer, rc, TAG);
                    o.combine(rc);
                } else if sc != 0 {
                    o.send(peer, sc, TAG);
                }
            } else if sc != 0 && rc != 0 {
                let r = o.irecv(peer, rc, TAG);
                o.send(peer, sc, TAG);
                o.wait(r);
                o.combine(rc);
            }
            send_idx = recv_idx;
            last_idx = recv_idx + mask;
            mask >>= 1;
        }
    }
    if rank < 2 * rem {
        if rank % 2 == 0 {
            let mine = b.size[rank as usize];
            if a.recv_counts[rank as usize] != 0 {
                o.recv((rank + 1) as u32, mine, TAG);
            }
        } else if a.recv_counts[rank as usize - 1] != 0 {
            o.send((rank - 1) as u32, b.size[rank as usize - 1], TAG);
        }
    }
    o.into_program()
}

/// Open MPI's ring reduce_scatter (`reduce_scatter__ompi_ring`).
fn ring(a: &CollArgs, b: Arc<Blocks>) -> Box<dyn Program> {
    let (p, rank) = (a.size, a.rank);
    let (right, left) = (add_mod(rank, 1, p), sub_mod(rank, 1, p));
    let blk = move |k: u64| b.size[sub_mod(rank, (k % p as u64) as u32, p) as usize];
    let n = p as u64;
    let mut prev = 0u32;
    Lazy::steps(n, move |k, o| {
        if k == 0 {
            prev = o.irecv(left, blk(2), TAG);
            o.send(right, blk(1), TAG);
        } else if k < n - 1 {
            // Open MPI's step k+1: receive block rank-k-2, forward block rank-k-1
            let r = o.irecv(left, blk(k + 2), TAG);
            o.wait(prev);
            o.combine(blk(k + 1));
            o.send(right, blk(k + 1), TAG);
            prev = r;
        } else {
            o.wait(prev);
            o.combine(blk(k + 1));
        }
    })
}

/// Bit reversal of the low `nbits` bits (`ompi_mirror_perm`).
fn mirror(x: u64, nbits: u32) -> u64 {
    if nbits == 0 {
        return 0;
    }
    (x as u32).reverse_bits() as u64 >> (32 - nbits)
}

/// Open MPI's butterfly reduce_scatter (`reduce_scatter__ompi_butterfly`).
fn butterfly(a: &CollArgs, b: &Blocks) -> Box<dyn Program> {
    let mut o = Ops::new();
    let (p, rank) = (a.size as u64, a.rank as u64);
    let total = b.total();
    let pof2 = floor_pow2(a.size) as u64;
    let rem = p - pof2;
    let log2 = pof2.trailing_zeros();
    let real = |v: u64| unfold(v, rem) as u64;
    // blocks [lo, hi] of the folded numbering
    let sum = |lo: u64, hi: u64| {
        let l = if lo < rem { lo * 2 } else { lo + rem };
        let h = if hi < rem { hi * 2 + 1 } else { hi + rem };
        b.range(l, h + 1)
    };
    let vrank = if rank < 2 * rem {
        if rank % 2 == 0 {
            o.send((rank + 1) as u32, total, TAG);
            None
        } else {
            o.recv((rank - 1) as u32, total, TAG);
            o.combine(total);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    match vrank {
        Some(v) => {
            let (mut nblocks, mut send_idx, mut recv_idx) = (pof2, 0u64, 0u64);
            let mut mask = 1u64;
            while mask < pof2 {
                let vp = v ^ mask;
                let peer = real(vp) as u32;
                nblocks /= 2;
                if v & mask == 0 {
                    send_idx += nblocks;
                } else {
                    recv_idx += nblocks;
                }
                let sc = sum(send_idx, send_idx + nblocks - 1);
                let rc = sum(recv_idx, recv_idx + nblocks - 1);
                o.sendrecv(a.rank, peer, sc, TAG, peer, rc, TAG);
                o.combine(rc);
                send_idx = recv_idx;
                mask <<= 1;
            }
            let vp = mirror(v, log2);
            let peer = real(vp);
            let mut index = if send_idx < rem {
                2 * send_idx
            } else {
                rem + send_idx
            };
            if vp < rem {
                o.send((peer - 1) as u32, b.size[index as usize], TAG);
                index += 1;
            }
            if vp != v {
                let mine = b.size[rank as usize];
                o.sendrecv(
                    a.rank,
                    peer as u32,
                    b.size[index as usize],
                    TAG,
                    peer as u32,
                    mine,
                    TAG,
                );
            }
        }
        None => {
            let vp = mirror(rank.div_ceil(2), log2);
            o.recv(real(vp) as u32, b.size[rank as usize], TAG);
        }
    }
    o.into_program()
}

/// MPICH's pairwise reduce_scatter (`reduce_scatter__mpich_pair`).
fn mpich_pair(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, b) = (a.size, a.rank, Blocks::of(a));
    if a.recv_counts.iter().all(|&c| c == 0) {
        return Ok(Ops::new().into_program());
    }
    Ok(Lazy::steps(p as u64 - 1, move |i, o| {
        let i = i + 1;
        let src = sub_mod(rank, i as u32, p);
        let dst = add_mod(rank, i, p);
        o.sendrecv(
            rank,
            dst,
            b.size[dst as usize],
            TAG,
            src,
            b.size[rank as usize],
            TAG,
        );
        o.combine(b.size[rank as usize]);
    }))
}

/// MPICH's recursive-doubling reduce_scatter (`reduce_scatter__mpich_rdb`).
fn mpich_rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let b = Blocks::of(a);
    let mut o = Ops::new();
    let (p, rank) = (a.size as u64, a.rank as u64);
    let total = b.total();
    let mut mask = 1u64;
    let mut i = 0u32;
    while mask < p {
        let dst = rank ^ mask;
        let dst_root = (dst >> i) << i;
        let my_root = (rank >> i) << i;
        let send = total - b.range(my_root, my_root + mask);
        let recv = total - b.range(dst_root, dst_root + mask);
        let mut received = dst < p;
        if dst < p {
            o.sendrecv(a.rank, dst as u32, send, TAG, dst as u32, recv, TAG);
        }
        if dst_root + mask > p {
            let completed = p as i64 - my_root as i64 - mask as i64;
            let mut k = i;
            let mut tmp = mask >> 1;
            while tmp > 0 {
                let d = (rank ^ tmp) as i64;
                let r = rank as i64;
                let tree_root = ((rank >> k) << k) as i64;
                if d > r && r < tree_root + completed && d >= tree_root + completed {
                    o.send(d as u32, recv, TAG);
                } else if d < r && d < tree_root + completed && r >= tree_root + completed {
                    o.recv(d as u32, recv, TAG);
                    received = true;
                }
                tmp >>= 1;
                k = k.saturating_sub(1);
            }
        }
        if received {
            o.combine(recv);
        }
        mask <<= 1;
        i += 1;
    }
    Ok(o.into_program())
}
