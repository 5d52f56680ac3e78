//! MPI_Scatter and MPI_Scatterv algorithms (SimGrid 3.32 `scatter/scatter-ompi.cpp`,
//! `smpi_nbc_impl.cpp`, MPICH 3.3 `scatter_intra_binomial.c`; design note §7.10, §7.11).
//! The root sends `count × dtype_size` bytes per rank; the others expect
//! `recv_count × recv_dtype_size`.
//!
//! Scatter:
//! * `ompi_basic_linear`: the root sends (blocking) to 0, 1, …, p−1 in order.
//! * `ompi_linear_nb`: the root isends to every rank, then waits for all.
//! * `ompi_binomial`: in-order binomial tree; each node receives its subtree's blocks, then
//!   sends each child its subtree's blocks, nearest child first.
//! * `mpich_binomial`: MPICH's binomial scatter (same tree, farthest child first).
//!
//! Scatterv: `linear` (the only one): the root isends to every other rank then waits; the
//! others irecv and wait.

use super::ops::{add_mod, in_order_bmtree, sub_mod, Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Cx, Program};

/// Scatter algorithms.
pub(crate) const SCATTER_ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("ompi_basic_linear", basic_linear),
    Algorithm::new("ompi_linear_nb", linear_nb),
    Algorithm::new("ompi_binomial", binomial),
    Algorithm::new("mpich_binomial", mpich_binomial),
];

/// Scatter aliases.
pub(crate) const SCATTER_ALIASES: &[(&str, &str)] = &[
    ("linear", "ompi_basic_linear"),
    ("basic_linear", "ompi_basic_linear"),
    ("linear_nb", "ompi_linear_nb"),
    ("binomial", "ompi_binomial"),
    ("mpich", "mpich_binomial"),
];

/// Scatterv algorithms.
pub(crate) const SCATTERV_ALGORITHMS: &[Algorithm] = &[Algorithm::new("linear", scatterv)];

const TAG: i32 = tag::SCATTER;

/// The root sends (blocking) to every rank in order.
fn basic_linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(linear(a, false))
}

/// The root isends to every rank, then waits for all.
fn linear_nb(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(linear(a, true))
}

/// Open MPI's binomial scatter: nearest child first.
fn binomial(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(binomial_tree(a, false))
}

/// MPICH's binomial scatter: farthest child first.
fn mpich_binomial(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(binomial_tree(a, true))
}

/// SimGrid's scatterv: [`scatterv_linear`].
fn scatterv(a: &CollArgs, _cx: &mut Cx) -> Built {
    Ok(scatterv_linear(a))
}

/// The linear scatters: the root sends to 0, 1, …, p−1 in order, blocking or (`nb`)
/// non-blocking then waiting for all.
fn linear(a: &CollArgs, nb: bool) -> Box<dyn Program> {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let sb = a.count.saturating_mul(a.dtype_size);
    let rb = a.recv_count.saturating_mul(a.recv_dtype_size);
    if rank != root {
        let mut o = Ops::new();
        o.recv(root, rb, TAG);
        return o.into_program();
    }
    Lazy::steps(p as u64 + u64::from(nb), move |i, o| {
        if i == p as u64 {
            o.waitall();
        } else if i as u32 != root {
            if nb {
                o.isend(i as u32, sb, TAG);
            } else {
                o.send(i as u32, sb, TAG);
            }
        }
    })
}

/// The in-order binomial scatter: each node receives its subtree's blocks, then sends each
/// child its subtree's blocks, nearest child first, or farthest first (`farthest_first`).
fn binomial_tree(a: &CollArgs, farthest_first: bool) -> Box<dyn Program> {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let sb = a.count.saturating_mul(a.dtype_size);
    let rb = a.recv_count.saturating_mul(a.recv_dtype_size);
    let v = sub_mod(rank, root, p) as u64;
    let pp = p as u64;
    let mut o = Ops::new();
    // subtree of relative rank x: min(lowbit(x), p - x) blocks
    let subtree = |x: u64| (x & x.wrapping_neg()).min(pp - x);
    let unit = if rank == root { sb } else { rb };
    if v != 0 {
        let t = in_order_bmtree(p, rank, root);
        o.recv(
            t.parent.expect("non-root has a parent"),
            subtree(v) * rb,
            TAG,
        );
    }
    let top = if v == 0 {
        super::ops::ceil_pow2(p)
    } else {
        v & v.wrapping_neg()
    };
    let mut masks: Vec<u64> = Vec::new();
    let mut m = 1u64;
    while m < top {
        if v + m < pp {
            masks.push(m);
        }
        m <<= 1;
    }
    if farthest_first {
        masks.reverse();
    }
    for m in masks {
        o.send(add_mod(rank, m, p), subtree(v + m) * unit, TAG);
    }
    o.into_program()
}

/// SimGrid's scatterv (`colls::iscatterv` + wait).
pub(crate) fn scatterv_linear(a: &CollArgs) -> Box<dyn Program> {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let t = tag::SCATTERV;
    if rank != root {
        let mut o = Ops::new();
        let r = o.irecv(root, a.recv_count.saturating_mul(a.recv_dtype_size), t);
        o.wait(r);
        return o.into_program();
    }
    let sizes: Vec<u64> = a
        .send_counts
        .iter()
        .map(|c| c.saturating_mul(a.dtype_size))
        .collect();
    Lazy::steps(p as u64, move |i, o| {
        if i + 1 == p as u64 {
            o.waitall();
        } else {
            let dst = if (i as u32) < root {
                i as u32
            } else {
                i as u32 + 1
            };
            o.isend(dst, sizes[dst as usize], t);
        }
    })
}
