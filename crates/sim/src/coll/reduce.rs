//! MPI_Reduce algorithms (SimGrid 3.32 `reduce/reduce-ompi.cpp`, `reduce-binomial.cpp`,
//! `smpi_default_selector.cpp`; MPICH 3.3 `reduce_intra_reduce_scatter_gather.c`; design note
//! §7.3, §7.6). Every buffer a rank reduces into its partial result is a
//! [`super::POp::Combine`], after the receive that brought it (free unless the platform
//! measured the operator's cost).
//!
//! * Open MPI's generic segmented tree reduce on four trees: `ompi_chain` (fanout ⌊p/2⌋,
//!   64 KiB segments), `ompi_pipeline` (linear chain, 1/32/64 KiB), `ompi_binary` (binary
//!   tree, 32 KiB), `ompi_binomial` (in-order binomial tree, unsegmented or 1 KiB);
//!   `ompi_in_order_binary` (in-order binary tree rooted at p−1, then p−1 sends to the root).
//!   Under [`super::Selector::OpenMpi4`] the trees send each buffer whole (Open MPI 4.1's
//!   fixed rules pass no segment size).
//! * `ompi_basic_linear`: everyone sends to the root, which receives from p−1, p−2, …, 0.
//! * `binomial`: MPICH's binomial reduce.
//! * `scatter_gather`: MPICH's Rabenseifner reduce (recursive-halving reduce-scatter, then
//!   binomial gather to the root).
//! * `default`: SimGrid's flat non-blocking reduce (everyone isends to the root, which irecvs
//!   from all), used by reduce_scatter's `default`.

use super::ops::{
    chain_tree, floor_pow2, in_order_bintree, in_order_bmtree, kary_tree, rab_doubling_step,
    rab_halving_step, segcount, sub_mod, Lazy, Ops, Seq, Tree,
};
use super::{tag, Algorithm, Built, CollArgs, Cx, Program};

/// Reduce algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("ompi_basic_linear", linear),
    Algorithm::new("ompi_chain", chain),
    Algorithm::new("ompi_pipeline", pipeline),
    Algorithm::new("ompi_binary", binary),
    Algorithm::new("ompi_binomial", binomial),
    Algorithm::new("ompi_in_order_binary", in_order_binary),
    Algorithm::new("binomial", mpich_binomial),
    Algorithm::new("scatter_gather", scatter_gather),
    Algorithm::new("default", simgrid_default),
];

/// Reduce aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("linear", "ompi_basic_linear"),
    ("basic_linear", "ompi_basic_linear"),
    ("chain", "ompi_chain"),
    ("pipeline", "ompi_pipeline"),
    ("binary", "ompi_binary"),
    ("in_order_binary", "ompi_in_order_binary"),
    ("mpich_binomial", "binomial"),
    ("rabenseifner", "scatter_gather"),
    ("reduce_scatter_gather", "scatter_gather"),
    ("flat", "default"),
];

const TAG: i32 = tag::REDUCE;

/// Open MPI's chain reduce: fanout ⌊p/2⌋, 64 KiB segments.
fn chain(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let sc = segcount(cx.segment(64 << 10), a.dtype_size, a.count);
    Ok(generic(
        chain_tree(p / 2, p, rank, root),
        sc,
        a.count,
        a.dtype_size,
    ))
}

/// Open MPI's pipeline reduce: the linear chain, 1, 32 or 64 KiB segments.
fn pipeline(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let (ts, count, msg) = (a.dtype_size, a.count, a.bytes());
    let size = p as f64;
    let segsize: u64 = if size > 0.0410 / 1024.0 * msg as f64 + 9.7128 {
        1024
    } else if size > 0.0033 / 1024.0 * msg as f64 + 1.6761 {
        32 << 10
    } else {
        64 << 10
    };
    Ok(generic(
        chain_tree(1, p, rank, root),
        segcount(cx.segment(segsize), ts, count),
        count,
        ts,
    ))
}

/// Open MPI's binary-tree reduce, 32 KiB segments.
fn binary(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    Ok(generic(
        kary_tree(2, p, rank, root),
        segcount(cx.segment(32 << 10), a.dtype_size, a.count),
        a.count,
        a.dtype_size,
    ))
}

/// Open MPI's in-order binomial-tree reduce, unsegmented or 1 KiB segments.
fn binomial(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let (ts, count, msg) = (a.dtype_size, a.count, a.bytes());
    let segsize: u64 = if (p < 8 && msg < 20480) || msg < 2048 || count <= 1 {
        0
    } else if p as f64 > 0.6016 / 1024.0 * msg as f64 + 1.3496 {
        1024
    } else {
        0
    };
    Ok(generic(
        in_order_bmtree(p, rank, root),
        segcount(cx.segment(segsize), ts, count),
        count,
        ts,
    ))
}

/// Open MPI's in-order binary reduce: the in-order binary tree rooted at p−1, unsegmented,
/// then p−1 sends the result to the root.
fn in_order_binary(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let (count, msg) = (a.count, a.bytes());
    let io_root = p - 1;
    let main = generic(in_order_bintree(p, rank), count, count, a.dtype_size);
    let mut post = Ops::new();
    if io_root != root {
        if rank == root {
            post.recv(io_root, msg, TAG);
        } else if rank == io_root {
            post.send(root, msg, TAG);
        }
    }
    Ok(Seq::program(vec![main, post.into_program()]))
}

/// SimGrid's default reduce: [`flat`].
fn simgrid_default(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(flat(a))
}

/// Open MPI's generic segmented tree reduce (`smpi_coll_tuned_ompi_reduce_generic`, note
/// §7.3): segments of `sc` elements of `ts` bytes, two receive slots on inner nodes, blocking
/// sends of each segment to the parent; each child's segment is combined once received.
fn generic(tree: Tree, sc: u64, count: u64, ts: u64) -> Box<dyn Program> {
    let nseg = if count == 0 {
        0
    } else {
        count.div_ceil(sc.max(1))
    };
    let sc = sc.max(1);
    let seg = move |s: u64| {
        if s + 1 == nseg {
            (count - s * sc) * ts
        } else {
            sc * ts
        }
    };
    let Tree { parent, children } = tree;
    if children.is_empty() {
        let Some(parent) = parent else {
            return super::ops::empty();
        };
        return Lazy::steps(nseg, move |s, o| o.send(parent, seg(s), TAG));
    }
    // Each slot: the request and its segment's bytes.
    let mut slot: [Option<(u32, u64)>; 2] = [None, None];
    let mut inbi = 0usize;
    Lazy::steps(nseg + 1, move |s, o| {
        for (i, &child) in children.iter().enumerate() {
            if s < nseg {
                slot[inbi] = Some((o.irecv(child, seg(s), TAG), seg(s)));
            }
            if let Some((r, bytes)) = slot[inbi ^ 1].take() {
                o.wait(r);
                o.combine(bytes);
            }
            if i == 0 && s > 0 {
                if let Some(parent) = parent {
                    o.send(parent, seg(s - 1), TAG);
                }
                if s == nseg {
                    break;
                }
            }
            inbi ^= 1;
        }
    })
}

/// Open MPI's basic linear reduce: the root receives from p−1 first (into its result), then
/// p−2, …, 0, combining each (its own buffer in its turn).
fn linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let bytes = a.bytes();
    if rank != root {
        let mut o = Ops::new();
        o.send(root, bytes, TAG);
        return Ok(o.into_program());
    }
    // step i receives from p-1-i, skipping the root itself
    Ok(Lazy::steps(p as u64, move |i, o| {
        let src = p - 1 - i as u32;
        if src != root {
            o.recv(src, bytes, TAG);
        }
        if i > 0 {
            o.combine(bytes);
        }
    }))
}

/// MPICH's binomial reduce (`reduce-binomial.cpp`, commutative case).
fn mpich_binomial(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size as u64, a.rank, a.root);
    let bytes = a.bytes();
    let mut o = Ops::new();
    if a.count == 0 {
        return Ok(o.into_program());
    }
    let rel = sub_mod(rank, root, a.size) as u64;
    let mut mask = 1u64;
    while mask < p {
        if mask & rel == 0 {
            let src = rel | mask;
            if src < p {
                o.recv(((src + root as u64) % p) as u32, bytes, TAG);
                o.combine(bytes);
            }
        } else {
            o.send((((rel & !mask) + root as u64) % p) as u32, bytes, TAG);
            break;
        }
        mask <<= 1;
    }
    Ok(o.into_program())
}

/// Element count of block `i` of `pof2` blocks of `count` (the first `count % pof2` blocks
/// hold one more), summed over `[lo, hi)`.
fn mpich_blocks(count: u64, pof2: u64, lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return 0;
    }
    let base = count / pof2;
    let extra = count % pof2;
    (hi - lo) * base + extra.min(hi).saturating_sub(lo.min(extra))
}

/// MPICH's Rabenseifner reduce (`MPIR_Reduce_intra_reduce_scatter_gather`, MPICH 3.3).
fn scatter_gather(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size as u64, a.rank as u64, a.root as u64);
    let ts = a.dtype_size;
    let count = a.count;
    let mut o = Ops::new();
    if count == 0 {
        return Ok(o.into_program());
    }
    let pof2 = floor_pow2(a.size) as u64;
    let rem = p - pof2;
    let sum = |lo: u64, hi: u64| mpich_blocks(count, pof2, lo, hi) * ts;
    let real = |nd: u64| if nd < rem { nd * 2 } else { nd + rem };
    let mut newrank: i64;
    if rank < 2 * rem {
        if rank % 2 != 0 {
            o.send((rank - 1) as u32, count * ts, TAG);
            newrank = -1;
        } else {
            o.recv((rank + 1) as u32, count * ts, TAG);
            o.combine(count * ts);
            newrank = (rank / 2) as i64;
        }
    } else {
        newrank = (rank - rem) as i64;
    }
    let (mut send_idx, mut recv_idx, mut last_idx) = (0u64, 0u64, pof2);
    if newrank >= 0 {
        let nr = newrank as u64;
        let mut mask = 1u64;
        while mask < pof2 {
            let nd = nr ^ mask;
            let dst = real(nd) as u32;
            let ((s0, s1), (r0, r1)) =
                rab_halving_step(nr < nd, mask, pof2, &mut send_idx, &mut recv_idx, last_idx);
            let (sc, rc) = (sum(s0, s1), sum(r0, r1));
            o.sendrecv(rank as u32, dst, sc, TAG, dst, rc, TAG);
            o.combine(rc);
            send_idx = recv_idx;
            mask <<= 1;
            if mask < pof2 {
                last_idx = recv_idx + pof2 / mask;
            }
        }
    }
    let newroot;
    let root_excluded = root < 2 * rem && root % 2 != 0;
    if root < 2 * rem {
        if root % 2 != 0 {
            if rank == root {
                o.recv(0, sum(0, 1), TAG);
                newrank = 0;
                send_idx = 0;
                last_idx = 2;
            } else if newrank == 0 {
                o.send(root as u32, sum(0, 1), TAG);
                newrank = -1;
            }
            newroot = 0;
        } else {
            newroot = root / 2;
        }
    } else {
        newroot = root - rem;
    }
    if newrank >= 0 {
        let nr = newrank as u64;
        let mut j = pof2.trailing_zeros() as i64 - 1;
        let mut mask = pof2 >> 1;
        while mask > 0 {
            let nd = nr ^ mask;
            let mut dst = real(nd);
            if nd == 0 && root_excluded {
                dst = root;
            }
            let jj = j.max(0) as u32;
            let nd_tree = (nd >> jj) << jj;
            let root_tree = (newroot >> jj) << jj;
            let ((s0, s1), (r0, r1)) =
                rab_doubling_step(nr < nd, mask, pof2, send_idx, &mut recv_idx, &mut last_idx);
            let (sc, rc) = (sum(s0, s1), sum(r0, r1));
            if nd_tree == root_tree {
                o.send(dst as u32, sc, TAG);
                break;
            }
            o.recv(dst as u32, rc, TAG);
            if nr > nd {
                send_idx = recv_idx;
            }
            mask >>= 1;
            j -= 1;
        }
    }
    Ok(o.into_program())
}

/// SimGrid's flat non-blocking reduce (`colls::ireduce` + wait, `reduce__default`).
pub(crate) fn flat(a: &CollArgs) -> Box<dyn Program> {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let bytes = a.bytes();
    if rank != root {
        let mut o = Ops::new();
        let r = o.isend(root, bytes, TAG);
        o.wait(r);
        return o.into_program();
    }
    Lazy::steps(p as u64, move |i, o| {
        if i + 1 == p as u64 {
            o.waitall();
            o.combine(bytes * (p as u64 - 1));
        } else {
            let src = if (i as u32) < root {
                i as u32
            } else {
                i as u32 + 1
            };
            o.irecv(src, bytes, TAG);
        }
    })
}
