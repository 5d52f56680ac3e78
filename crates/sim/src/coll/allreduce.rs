//! MPI_Allreduce algorithms (SimGrid 3.32 `allreduce/*.cpp`, MPICH 3.3, design note §7.7).
//!
//! * `redbcast`: reduce to rank 0 then bcast from 0, both through the selector.
//! * `rdb`: MPICH's recursive doubling (the ranks above the largest power of two first fold
//!   onto their odd neighbours).
//! * `lr`: logical ring (reduce-scatter then allgather of ⌊count/p⌋-element blocks, tags
//!   `tag+i`); `count < p` runs `redbcast`; the `count mod p` remainder is allreduced again
//!   through the selector.
//! * `ompi_ring_segmented`: Open MPI's segmented ring (1 MiB segments, none under
//!   `openmpi4`); runs `lr` when the count is below p segments.
//! * `rab_rdb`: Rabenseifner (recursive-halving reduce-scatter, recursive-doubling
//!   allgather), blocks of ⌊count/P⌋ with the remainder on the last one (SimGrid).
//! * `mpich_rab`: the same with MPICH's block sizes (the remainder spread over the first
//!   blocks), MPICH's long-message allreduce.
//!
//! Every buffer a rank reduces into its partial result is a [`super::POp::Combine`] after
//! the receive that brought it: the whole vector per recursive-doubling step, the block
//! received in each reduce-scatter step of the rings and of Rabenseifner's halving.

use super::ops::{
    add_mod, floor_pow2, rab_doubling_step, rab_halving_step, segcount, sub_mod, Lazy, Ops, Seq,
};
use super::{tag, Algorithm, Built, CollArgs, Collective, Cx, Program};

/// Allreduce algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("redbcast", redbcast),
    Algorithm::new("rdb", rdb),
    Algorithm::new("lr", lr),
    Algorithm::new("ompi_ring_segmented", ring_segmented),
    Algorithm::new("rab_rdb", rab_rdb),
    Algorithm::new("mpich_rab", mpich_rab),
];

/// Allreduce aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("recursive_doubling", "rdb"),
    ("ring", "lr"),
    ("ring_segmented", "ompi_ring_segmented"),
    ("segmented_ring", "ompi_ring_segmented"),
    ("rabenseifner", "rab_rdb"),
    ("reduce_bcast", "redbcast"),
    ("nonoverlapping", "redbcast"),
    ("reduce_scatter_allgather", "mpich_rab"),
];

const TAG: i32 = tag::ALLREDUCE;

/// Reduce to 0 then bcast from 0, both chosen by the selector.
fn redbcast(a: &CollArgs, cx: &mut Cx) -> Built {
    let reduce = cx.build(&a.nested(Collective::Reduce, a.count, 0))?;
    let bcast = cx.build(&a.nested(Collective::Bcast, a.count, 0))?;
    Ok(Seq::program(vec![reduce, bcast]))
}

/// Real rank of the folded rank `nd` (ranks below `2*rem` were paired, odd ones kept).
fn unfold(nd: u64, rem: u64) -> u32 {
    (if nd < rem { nd * 2 + 1 } else { nd + rem }) as u32
}

/// MPICH's pre-step for non-power-of-two sizes: even ranks below `2*rem` send their vector
/// to `rank+1` and drop out. Returns the folded rank, if any.
fn fold(o: &mut Ops, rank: u64, rem: u64, bytes: u64) -> Option<u64> {
    if rank < 2 * rem {
        if rank % 2 == 0 {
            o.send((rank + 1) as u32, bytes, TAG);
            None
        } else {
            o.recv((rank - 1) as u32, bytes, TAG);
            o.combine(bytes);
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    }
}

/// The matching post-step: odd ranks below `2*rem` send the result back to `rank−1`.
fn unfold_result(o: &mut Ops, rank: u64, rem: u64, bytes: u64) {
    if rank < 2 * rem {
        if rank % 2 == 1 {
            o.send((rank - 1) as u32, bytes, TAG);
        } else {
            o.recv((rank + 1) as u32, bytes, TAG);
        }
    }
}

/// MPICH's recursive doubling allreduce (`allreduce-rdb.cpp`).
fn rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let p = a.size as u64;
    let rank = a.rank as u64;
    let bytes = a.bytes();
    let pof2 = floor_pow2(a.size) as u64;
    let rem = p - pof2;
    let mut o = Ops::new();
    if let Some(nr) = fold(&mut o, rank, rem, bytes) {
        let mut mask = 1u64;
        while mask < pof2 {
            let dst = unfold(nr ^ mask, rem);
            o.sendrecv(a.rank, dst, bytes, TAG, dst, bytes, TAG);
            o.combine(bytes);
            mask <<= 1;
        }
    }
    unfold_result(&mut o, rank, rem, bytes);
    Ok(o.into_program())
}

/// Logical-ring allreduce (`allreduce-lr.cpp`).
fn lr(a: &CollArgs, cx: &mut Cx) -> Built {
    let p = a.size;
    if a.count < p as u64 {
        cx.enter("redbcast");
        return redbcast(a, cx);
    }
    let blk = a.count / p as u64 * a.dtype_size;
    let rank = a.rank;
    let (right, left) = (add_mod(rank, 1, p), sub_mod(rank, 1, p));
    let steps = p as u64 - 1;
    let ring = Lazy::steps(2 * steps, move |i, o| {
        let t = TAG.wrapping_add((i % steps) as i32);
        o.sendrecv(rank, right, blk, t, left, blk, t);
        if i < steps {
            o.combine(blk);
        }
    });
    let remainder = a.count % p as u64;
    if remainder == 0 {
        return Ok(ring);
    }
    let rest = cx.build(&a.nested(Collective::Allreduce, remainder, 0))?;
    Ok(Seq::program(vec![ring, rest]))
}

/// Open MPI's `COLL_TUNED_COMPUTE_BLOCKCOUNT`: `(split index, early count, late count)`.
fn blockcount(count: u64, blocks: u64) -> (u64, u64, u64) {
    let late = count / blocks;
    let split = count % blocks;
    let early = if split != 0 { late + 1 } else { late };
    (split, early, late)
}

/// Open MPI's segmented ring allreduce (`allreduce-ompi-ring-segmented.cpp`).
fn ring_segmented(a: &CollArgs, cx: &mut Cx) -> Built {
    let p = a.size as u64;
    let ts = a.dtype_size;
    let count = a.count;
    let sc = segcount(cx.segment(1 << 20), ts, count);
    if sc == 0 || count < p * sc {
        // (count 0 divides by zero in SimGrid; we run lr, hence redbcast)
        cx.enter("lr");
        return lr(a, cx);
    }
    let mut phases = count / (p * sc);
    let r = count % (p * sc);
    if r >= p && r > (p * sc) / 2 {
        phases += 1;
    }
    let (split, early, late) = blockcount(count, p);
    let block = move |b: u64| if b < split { early } else { late };
    let phase_seg = move |b: u64, ph: u64| {
        let (sp, e, l) = blockcount(block(b), phases);
        (if ph < sp { e } else { l }) * ts
    };
    let rank = a.rank;
    let size = a.size;
    let (right, left) = (add_mod(rank, 1, size), sub_mod(rank, 1, size));
    let blk = move |k: u64| sub_mod(rank, (k % p) as u32, size) as u64; // block rank - k
    let t = tag::RING_SEGMENTED;
    let mut prev = 0u32;
    Ok(Lazy::steps(phases * p + p - 1, move |i, o| {
        if i < phases * p {
            let (ph, k) = (i / p, i % p);
            if k == 0 {
                prev = o.irecv(left, phase_seg(blk(1), ph), t);
                o.send(right, phase_seg(blk(0), ph), t);
            } else if k < p - 1 {
                // step k+1 of Open MPI's loop: receive block rank-k-1, forward block rank-k
                let r = o.irecv(left, phase_seg(blk(k + 1), ph), t);
                o.wait(prev);
                o.combine(phase_seg(blk(k), ph));
                o.send(right, phase_seg(blk(k), ph), t);
                prev = r;
            } else {
                o.wait(prev);
                o.combine(phase_seg(blk(k), ph));
            }
        } else {
            let k = i - phases * p;
            let recv_from = blk(k);
            let send_from = blk((k + p - 1) % p);
            o.sendrecv(
                rank,
                right,
                block(send_from) * ts,
                t,
                left,
                block(recv_from) * ts,
                t,
            );
        }
    }))
}

/// Rabenseifner's allreduce with SimGrid's blocks (the remainder on the last one).
fn rab_rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(rab(a, false))
}

/// Rabenseifner's allreduce with MPICH's blocks (the remainder spread over the first ones).
fn mpich_rab(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(rab(a, true))
}

/// Rabenseifner's allreduce (`allreduce-rab-rdb.cpp`); `mpich` selects MPICH's block sizes.
fn rab(a: &CollArgs, mpich: bool) -> Box<dyn Program> {
    let p = a.size as u64;
    let rank = a.rank as u64;
    let ts = a.dtype_size;
    let count = a.count;
    let bytes = a.bytes();
    let pof2 = floor_pow2(a.size) as u64;
    let rem = p - pof2;
    let base = count / pof2;
    let sum = move |lo: u64, hi: u64| -> u64 {
        if hi <= lo {
            return 0;
        }
        let extra = if mpich {
            let e = count % pof2;
            e.min(hi).saturating_sub(lo.min(e))
        } else if hi == pof2 {
            count - base * pof2
        } else {
            0
        };
        ((hi - lo) * base + extra) * ts
    };
    let mut o = Ops::new();
    if let Some(nr) = fold(&mut o, rank, rem, bytes) {
        let (mut send_idx, mut recv_idx, mut last_idx) = (0u64, 0u64, pof2);
        let mut mask = 1u64;
        while mask < pof2 {
            let nd = nr ^ mask;
            let dst = unfold(nd, rem);
            let ((s0, s1), (r0, r1)) =
                rab_halving_step(nr < nd, mask, pof2, &mut send_idx, &mut recv_idx, last_idx);
            let (sc, rc) = (sum(s0, s1), sum(r0, r1));
            o.sendrecv(a.rank, dst, sc, TAG, dst, rc, TAG);
            o.combine(rc);
            send_idx = recv_idx;
            mask <<= 1;
            if mask < pof2 {
                last_idx = recv_idx + pof2 / mask;
            }
        }
        mask >>= 1;
        while mask > 0 {
            let nd = nr ^ mask;
            let dst = unfold(nd, rem);
            let ((s0, s1), (r0, r1)) =
                rab_doubling_step(nr < nd, mask, pof2, send_idx, &mut recv_idx, &mut last_idx);
            let (sc, rc) = (sum(s0, s1), sum(r0, r1));
            o.sendrecv(a.rank, dst, sc, TAG, dst, rc, TAG);
            if nr > nd {
                send_idx = recv_idx;
            }
            mask >>= 1;
        }
    }
    unfold_result(&mut o, rank, rem, bytes);
    o.into_program()
}
