//! MPI_Bcast algorithms (SimGrid 3.32 `src/smpi/colls/bcast/*.cpp`, design note §7.5).
//!
//! * `binomial_tree`: binomial tree from the root; a node receives from `rank - lowbit`,
//!   then sends (blocking) to `rank + mask` for masks below its low bit, largest first.
//! * `NTSL`: root first sends to rank 0 if it is not 0; chain `0 → 1 → … → p−1`; 8 KiB
//!   segments (tags `tag+i`) if the buffer holds more than one; the remainder is broadcast
//!   again through the selector.
//! * `NTSB`: same with the binary heap `r → 2r+1, 2r+2`.
//! * `ompi_pipeline`: Open MPI's pipeline on the linear chain from the root, 16/64/128 KiB
//!   segments.
//! * `ompi_split_bintree`: Open MPI's split binary tree (two halves down the two subtrees, then
//!   exchange between pairs).
//! * `scatter_rdb_allgather`: MPICH's long-message bcast: binomial scatter then recursive
//!   doubling allgather with MPICH's non-power-of-two fix-up.
//! * `scatter_LR_allgather`: MPICH's binomial scatter then ring allgather.
//! * `mvapich2_knomial_intra_node`: 4-nomial tree (aborts SimGrid 3.32 in replay, §8).
//! * `flattree`: the root sends to every rank.
//!
//! Under [`super::Selector::OpenMpi4`] `NTSL`, `NTSB` and `ompi_pipeline` send each buffer
//! whole, as Open MPI 4.1's fixed rules run them (no segment size).

use super::ops::{add_mod, kary_tree, rdb_allgather, segcount, sub_mod, Lazy, Ops, Seq};
use super::{tag, Algorithm, Built, CollArgs, Collective, Cx, Program};

/// Bcast algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("binomial_tree", binomial),
    Algorithm::new("NTSL", ntsl),
    Algorithm::new("NTSB", ntsb),
    Algorithm::new("ompi_pipeline", pipeline),
    Algorithm::new("ompi_split_bintree", split_bintree),
    Algorithm::new("scatter_rdb_allgather", scatter_rdb_allgather),
    Algorithm::new("scatter_LR_allgather", scatter_lr_allgather),
    Algorithm::new("mvapich2_knomial_intra_node", knomial4),
    Algorithm::new("flattree", flattree),
];

/// Bcast aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("binomial", "binomial_tree"),
    ("pipeline", "ompi_pipeline"),
    ("chain", "ompi_pipeline"),
    ("split_bintree", "ompi_split_bintree"),
    ("knomial", "mvapich2_knomial_intra_node"),
    ("linear", "flattree"),
    ("basic_linear", "flattree"),
    ("scatter_ring_allgather", "scatter_LR_allgather"),
    ("scatter_allgather", "scatter_rdb_allgather"),
];

const TAG: i32 = tag::BCAST;
/// NTSL / NTSB segment size in bytes.
const NTS_SEGMENT: u64 = 8192;

/// Binomial tree (`bcast-binomial-tree.cpp`, MPICH's short-message bcast).
fn binomial(a: &CollArgs, _cx: &mut Cx) -> Built {
    let p = a.size as u64;
    let bytes = a.bytes();
    let rel = sub_mod(a.rank, a.root, a.size) as u64;
    let mut o = Ops::new();
    let mut mask = 1u64;
    while mask < p {
        if rel & mask != 0 {
            o.recv(sub_mod(a.rank, (mask % p) as u32, a.size), bytes, TAG);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < p {
            o.send(add_mod(a.rank, mask, a.size), bytes, TAG);
        }
        mask >>= 1;
    }
    Ok(o.into_program())
}

/// NTSL: [`nts`] on the chain `0 → … → p−1`.
fn ntsl(a: &CollArgs, cx: &mut Cx) -> Built {
    nts(a, cx, false)
}

/// NTSB: [`nts`] on the binary heap rooted at 0.
fn ntsb(a: &CollArgs, cx: &mut Cx) -> Built {
    nts(a, cx, true)
}

/// NTSL (chain `0 → … → p−1`) and NTSB (binary heap rooted at 0), segments of 8 KiB.
fn nts(a: &CollArgs, cx: &mut Cx, binary: bool) -> Built {
    let (p, rank) = (a.size, a.rank);
    let ts = a.dtype_size;
    let count = a.count;
    let segment = match cx.segment(NTS_SEGMENT) {
        0 => count.max(1),
        bytes => bytes.checked_div(ts).map_or(1, |s| s.max(1)),
    };
    let pipe = count / segment;
    let remainder = count % segment;
    let seg_bytes = segment * ts;
    // parent and children in the chain / heap (by rank, independent of the root)
    let (from, children): (Option<u32>, Vec<u32>) = if binary {
        let from = (rank > 0).then(|| (rank - 1) / 2);
        let kids = [2 * rank as u64 + 1, 2 * rank as u64 + 2]
            .into_iter()
            .filter(|&c| c < p as u64)
            .map(|c| c as u32)
            .collect();
        (from, kids)
    } else {
        let from = (rank > 0).then(|| rank - 1);
        let kids = if rank + 1 < p {
            vec![rank + 1]
        } else {
            Vec::new()
        };
        (from, kids)
    };
    let mut pre = Ops::new();
    if a.root != 0 {
        if rank == a.root {
            pre.send(0, a.bytes(), TAG);
        } else if rank == 0 {
            pre.recv(a.root, a.bytes(), TAG);
        }
    }
    if count <= segment {
        let bytes = a.bytes();
        match from {
            None => {
                for &c in &children {
                    pre.send(c, bytes, TAG);
                }
            }
            Some(f) => {
                if binary {
                    pre.recv(f, bytes, TAG);
                } else {
                    let r = pre.irecv(f, bytes, TAG);
                    pre.wait(r);
                }
                for &c in &children {
                    pre.send(c, bytes, TAG);
                }
            }
        }
        return Ok(pre.into_program());
    }
    // pipelined: segment i carries tag + i
    let seg_tag = move |i: u64| TAG.wrapping_add(i as i32);
    let nkids = children.len() as u64;
    let main: Box<dyn Program> = match from {
        None => {
            // root of the chain/heap: isend every segment to every child, wait all
            Lazy::steps(pipe + 1, move |i, o| {
                if i == pipe {
                    o.waitall();
                } else {
                    for &c in &children {
                        o.isend(c, seg_bytes, seg_tag(i));
                    }
                }
            })
        }
        Some(f) if nkids == 0 => Lazy::steps(pipe + 1, move |i, o| {
            if i == pipe {
                o.waitall();
            } else {
                o.irecv(f, seg_bytes, seg_tag(i));
            }
        }),
        Some(f) => {
            let mut first = 0u32;
            Lazy::steps(2 * pipe + 1, move |i, o| {
                if i == 0 {
                    first = o.next_req();
                }
                if i < pipe {
                    o.irecv(f, seg_bytes, seg_tag(i));
                } else if i < 2 * pipe {
                    let s = i - pipe;
                    o.wait(first + s as u32);
                    for &c in &children {
                        o.isend(c, seg_bytes, seg_tag(s));
                    }
                } else {
                    o.waitall();
                }
            })
        }
    };
    let mut parts = vec![pre.into_program(), main];
    if remainder != 0 {
        parts.push(cx.build(&a.nested(Collective::Bcast, remainder, a.root))?);
    }
    Ok(Seq::program(parts))
}

/// Open MPI's pipeline bcast on the chain from the root (`bcast-ompi-pipeline.cpp`).
fn pipeline(a: &CollArgs, cx: &mut Cx) -> Built {
    let p = a.size;
    let ts = a.dtype_size;
    let count = a.count;
    if count == 0 {
        return Ok(super::ops::empty());
    }
    let size = p as f64;
    let msg = a.bytes() as f64;
    let segsize: u64 = if size < 1.6134e-6 * msg + 2.1102 {
        128 << 10
    } else if size < 2.3679e-6 * msg + 1.1787 {
        64 << 10
    } else if size < 3.2118e-6 * msg + 8.7936 {
        16 << 10
    } else {
        128 << 10
    };
    let sc = segcount(cx.segment(segsize), ts, count).max(1);
    let n = count.div_ceil(sc);
    let seg = move |s: u64| {
        if s + 1 == n {
            (count - s * sc) * ts
        } else {
            sc * ts
        }
    };
    let t = super::ops::chain_tree(1, p, a.rank, a.root);
    Ok(match (t.parent, t.children.first().copied()) {
        (None, Some(child)) => Lazy::steps(n, move |s, o| {
            o.isend(child, seg(s), TAG);
            o.waitall();
        }),
        (Some(parent), child) => {
            // intermediate (child is Some) or leaf: post the next receive, wait the previous
            // segment, forward it
            let mut prev = 0u32;
            Lazy::steps(n + 1, move |s, o| {
                if s == 0 {
                    prev = o.irecv(parent, seg(0), TAG);
                } else if s < n {
                    let r = o.irecv(parent, seg(s), TAG);
                    o.wait(prev);
                    if let Some(c) = child {
                        let q = o.isend(c, seg(s - 1), TAG);
                        o.wait(q);
                    }
                    prev = r;
                } else {
                    o.wait(prev);
                    if let Some(c) = child {
                        let q = o.isend(c, seg(n - 1), TAG);
                        o.wait(q);
                    }
                }
            })
        }
        (None, None) => super::ops::empty(),
    })
}

/// Open MPI's split binary tree (`bcast-ompi-split-bintree.cpp`).
fn split_bintree(a: &CollArgs, cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let ts = a.dtype_size.max(1);
    let count = a.count;
    let mut segsize: u64 = if a.bytes() < 370728 { 1024 } else { 8192 };
    if segsize < ts {
        segsize = ts;
    }
    let counts = [count.div_ceil(2), count / 2];
    let sc = segsize / ts;
    if counts[0] == 0 || counts[1] == 0 || segsize > counts[0] * ts || segsize > counts[1] * ts {
        // SimGrid calls bcast__SMP_linear here, which needs the SMP layout (init_smp) and
        // aborts in replay like the k-nomial bcast; we broadcast with a flat tree instead.
        cx.abort("split_bintree fallback to SMP_linear bcast (init_smp in replay)");
        return flattree(a, cx);
    }
    let nseg = [counts[0].div_ceil(sc), counts[1].div_ceil(sc)];
    let seg = move |h: usize, s: u64| {
        if s + 1 == nseg[h] {
            (counts[h] - s * sc) * ts
        } else {
            sc * ts
        }
    };
    let tree = kary_tree(2, p, rank, root);
    let lr = ((sub_mod(rank, root, p) + 1) % 2) as usize;
    let mut o = Ops::new();
    if rank == root {
        for s in 0..nseg[0] {
            for (h, &c) in tree.children.iter().enumerate().take(2) {
                if s < nseg[h] {
                    o.send(c, seg(h, s), TAG);
                }
            }
        }
    } else if !tree.children.is_empty() {
        let parent = tree.parent.expect("non-root has a parent");
        let mut base = o.irecv(parent, seg(lr, 0), TAG);
        for s in 1..nseg[lr] {
            let new = o.irecv(parent, seg(lr, s), TAG);
            o.wait(base);
            for &c in &tree.children {
                o.send(c, seg(lr, s - 1), TAG);
            }
            base = new;
        }
        o.wait(base);
        for &c in &tree.children {
            o.send(c, seg(lr, nseg[lr] - 1), TAG);
        }
    } else {
        let parent = tree.parent.expect("non-root has a parent");
        for s in 0..nseg[lr] {
            o.recv(parent, seg(lr, s), TAG);
        }
    }
    let pair = if lr == 0 {
        add_mod(rank, 1, p)
    } else {
        sub_mod(rank, 1, p)
    };
    let mine = counts[lr] * ts;
    let other = counts[1 - lr] * ts;
    if p % 2 != 0 {
        if rank != root {
            o.sendrecv(rank, pair, mine, TAG, pair, other, TAG);
        }
    } else if rank == root {
        o.send(sub_mod(root, 1, p), counts[1] * ts, TAG);
    } else if rank == sub_mod(root, 1, p) {
        o.recv(root, counts[1] * ts, TAG);
    } else {
        o.sendrecv(rank, pair, mine, TAG, pair, other, TAG);
    }
    Ok(o.into_program())
}

/// Bytes of the pieces of relative ranks `[t, t + m)` of the scattered buffer (`nb` bytes,
/// pieces of `q` bytes).
fn block_bytes(nb: u64, q: u64, t: u64, m: u64) -> u64 {
    nb.min((t + m).saturating_mul(q))
        .saturating_sub(t.saturating_mul(q))
}

/// MPICH's binomial scatter of the bcast buffer (`scatter_for_bcast`): writes the
/// operations of relative rank `rel` and returns nothing; each rank ends with its piece.
fn scatter_for_bcast(o: &mut Ops, a: &CollArgs, nb: u64, q: u64) {
    let p = a.size as u64;
    let rel = sub_mod(a.rank, a.root, a.size) as u64;
    let mut curr = if rel == 0 { nb } else { 0 };
    let mut mask = 1u64;
    while mask < p {
        if rel & mask != 0 {
            if nb > rel * q {
                let got = block_bytes(nb, q, rel, mask);
                o.recv(sub_mod(a.rank, mask as u32, a.size), got, TAG);
                curr = got;
            }
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < p {
            let send = curr as i128 - (q as i128) * (mask as i128);
            if send > 0 {
                o.send(add_mod(a.rank, mask, a.size), send as u64, TAG);
                curr -= send as u64;
            }
        }
        mask >>= 1;
    }
}

/// MPICH's scatter + recursive-doubling allgather bcast (`bcast-scatter-rdb-allgather.cpp`),
/// including the recursive-halving fix-up for non-power-of-two sizes.
fn scatter_rdb_allgather(a: &CollArgs, _cx: &mut Cx) -> Built {
    let nb = a.bytes();
    let mut o = Ops::new();
    if nb == 0 {
        return Ok(o.into_program());
    }
    let p = a.size as u64;
    let q = nb.div_ceil(p);
    scatter_for_bcast(&mut o, a, nb, q);
    let rel = sub_mod(a.rank, a.root, a.size) as u64;
    let root = a.root;
    let size = a.size;
    let curr = rdb_allgather(
        &mut o,
        rel,
        p,
        |r| add_mod(root, r, size),
        |lo, hi| block_bytes(nb, q, lo, hi.saturating_sub(lo)),
        TAG,
    );
    debug_assert_eq!(
        curr, nb,
        "scatter_rdb_allgather: rank {} of {}",
        a.rank, a.size
    );
    Ok(o.into_program())
}

/// MPICH's scatter + ring allgather bcast (`bcast-scatter-LR-allgather.cpp`).
fn scatter_lr_allgather(a: &CollArgs, _cx: &mut Cx) -> Built {
    let nb = a.bytes();
    let p = a.size;
    let q = nb.div_ceil(p as u64);
    let mut o = Ops::new();
    scatter_for_bcast(&mut o, a, nb, q);
    let scatter = o.into_program();
    let (rank, root) = (a.rank, a.root);
    let piece = move |r: u32| block_bytes(nb, q, sub_mod(r, root, p) as u64, 1);
    let left = sub_mod(rank, 1, p);
    let right = add_mod(rank, 1, p);
    let mut src = rank;
    let mut next = left;
    let ring = Lazy::steps(p as u64 - 1, move |_, o| {
        o.sendrecv(rank, right, piece(src), TAG, left, piece(next), TAG);
        src = next;
        next = sub_mod(next, 1, p);
    });
    Ok(Seq::program(vec![scatter, ring]))
}

/// MVAPICH2's intra-node k-nomial bcast with factor 4 (SimGrid 3.32 aborts on it in replay).
fn knomial4(a: &CollArgs, cx: &mut Cx) -> Built {
    cx.abort("MVAPICH2 k-nomial bcast (init_smp corrupts memory in replay)");
    Ok(knomial(a, 4))
}

/// MVAPICH2's intra-node k-nomial bcast (`bcast__mvapich2_knomial_intra_node`), factor `k`.
fn knomial(a: &CollArgs, k: u64) -> Box<dyn Program> {
    let p = a.size as u64;
    let bytes = a.bytes();
    let rel = sub_mod(a.rank, a.root, a.size) as u64;
    let mut o = Ops::new();
    let mut mask = 1u64;
    while mask < p {
        if rel % (k * mask) != 0 {
            let src = rel / (k * mask) * (k * mask);
            o.recv(add_mod(a.root, src, a.size), bytes, TAG);
            break;
        }
        mask *= k;
    }
    mask /= k;
    while mask > 0 {
        let mut any = false;
        for j in 1..k {
            if rel + mask * j < p {
                o.isend(add_mod(a.rank, mask * j, a.size), bytes, TAG);
                any = true;
            }
        }
        if any {
            o.waitall();
        }
        mask /= k;
    }
    o.into_program()
}

/// Flat tree (`bcast-flattree.cpp`): the root isends to every rank, then waits.
fn flattree(a: &CollArgs, _cx: &mut Cx) -> Built {
    let bytes = a.bytes();
    let (p, rank, root) = (a.size, a.rank, a.root);
    if rank != root {
        let mut o = Ops::new();
        o.recv(root, bytes, TAG);
        return Ok(o.into_program());
    }
    Ok(Lazy::steps(p as u64, move |i, o| {
        if i + 1 == p as u64 {
            o.waitall();
        } else {
            let dst = if (i as u32) < rank {
                i as u32
            } else {
                i as u32 + 1
            };
            o.isend(dst, bytes, TAG);
        }
    }))
}
