//! MPI_Gather and MPI_Gatherv algorithms (SimGrid 3.32 `gather/gather-ompi.cpp`,
//! `smpi_nbc_impl.cpp`; design note §7.10, §7.11). A non-root rank sends
//! `count × dtype_size` bytes; the root expects `recv_count × recv_dtype_size` per rank.
//!
//! Gather:
//! * `ompi_basic_linear`: non-roots send (blocking) to the root, which receives from 0, 1,
//!   …, p−1 in order.
//! * `ompi_binomial`: in-order binomial tree; each node receives its children's subtrees
//!   (nearest child first) then sends everything to its parent (also MPICH's gather).
//! * `ompi_linear_sync`: the root, rank by rank, posts the first-segment receive, sends a
//!   0-byte token, posts the rest; non-roots wait for the token then send both parts.
//!
//! Gatherv: `linear` (the only one): non-roots isend and wait, the root irecvs from every
//! other rank in order and waits for all.

use super::ops::{in_order_bmtree, segcount, sub_mod, Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Cx};

/// Gather algorithms.
pub(crate) const GATHER_ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("ompi_basic_linear", basic_linear),
    Algorithm::new("ompi_binomial", binomial),
    Algorithm::new("ompi_linear_sync", linear_sync),
];

/// Gather aliases.
pub(crate) const GATHER_ALIASES: &[(&str, &str)] = &[
    ("linear", "ompi_basic_linear"),
    ("basic_linear", "ompi_basic_linear"),
    ("binomial", "ompi_binomial"),
    ("mpich", "ompi_binomial"),
    ("linear_sync", "ompi_linear_sync"),
];

/// Gatherv algorithms.
pub(crate) const GATHERV_ALGORITHMS: &[Algorithm] = &[Algorithm::new("linear", gatherv_linear)];

const TAG: i32 = tag::GATHER;

/// The communicator size, the rank, the root, and the bytes of one sent and one received
/// block.
fn shape(a: &CollArgs) -> (u32, u32, u32, u64, u64) {
    let sb = a.count.saturating_mul(a.dtype_size);
    let rb = a.recv_count.saturating_mul(a.recv_dtype_size);
    (a.size, a.rank, a.root, sb, rb)
}

/// Open MPI's basic linear gather.
fn basic_linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root, sb, rb) = shape(a);
    Ok(if rank != root {
        let mut o = Ops::new();
        o.send(root, sb, TAG);
        o.into_program()
    } else {
        Lazy::steps(p as u64, move |i, o| {
            if i as u32 != root {
                o.recv(i as u32, rb, TAG);
            }
        })
    })
}

/// Open MPI's in-order binomial gather.
fn binomial(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root, sb, rb) = shape(a);
    let t = in_order_bmtree(p, rank, root);
    let v = sub_mod(rank, root, p) as u64;
    let unit = if rank == root { rb } else { sb };
    let mut o = Ops::new();
    let mut total = 1u64;
    if v % 2 == 0 {
        for &c in &t.children {
            let vk = sub_mod(c, root, p) as u64;
            let n = (vk - v).min(p as u64 - vk);
            o.recv(c, n * unit, TAG);
            total += n;
        }
    }
    if let Some(parent) = t.parent {
        o.send(parent, total * sb, TAG);
    }
    Ok(o.into_program())
}

/// Open MPI's linear gather with a synchronizing token.
fn linear_sync(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root, sb, rb) = shape(a);
    let (block, ts, cnt) = if rank == root {
        (rb, a.recv_dtype_size, a.recv_count)
    } else {
        (sb, a.dtype_size, a.count)
    };
    let first_size: u64 = if block > 92160 { 32768 } else { 1024 };
    let first = segcount(first_size, ts, cnt);
    let (f, rest) = (first * ts, (cnt - first) * ts);
    if rank != root {
        let mut o = Ops::new();
        o.recv(root, 0, TAG);
        o.send(root, f, TAG);
        o.send(root, rest, TAG);
        return Ok(o.into_program());
    }
    Ok(Lazy::steps(p as u64, move |i, o| {
        if i + 1 == p as u64 {
            o.waitall();
            return;
        }
        let src = if (i as u32) < root {
            i as u32
        } else {
            i as u32 + 1
        };
        let r1 = o.irecv(src, f, TAG);
        o.send(src, 0, TAG);
        o.irecv(src, rest, TAG);
        o.wait(r1);
    }))
}

/// SimGrid's gatherv (`colls::igatherv` + wait).
fn gatherv_linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, root) = (a.size, a.rank, a.root);
    let t = tag::GATHERV;
    if rank != root {
        let mut o = Ops::new();
        let r = o.isend(root, a.count.saturating_mul(a.dtype_size), t);
        o.wait(r);
        return Ok(o.into_program());
    }
    let sizes: Vec<u64> = a
        .recv_counts
        .iter()
        .map(|c| c.saturating_mul(a.recv_dtype_size))
        .collect();
    Ok(Lazy::steps(p as u64, move |i, o| {
        if i + 1 == p as u64 {
            o.waitall();
        } else {
            let src = if (i as u32) < root {
                i as u32
            } else {
                i as u32 + 1
            };
            o.irecv(src, sizes[src as usize], t);
        }
    }))
}
