//! MPI_Scan and MPI_Exscan algorithms (SimGrid 3.32 `smpi_coll.cpp`, MPICH 3.3; design
//! note §7.11). Every message is `count × dtype_size` bytes.
//!
//! * `linear` (SimGrid's only algorithm, whatever the selector): every rank irecvs from
//!   each lower rank and isends to each higher rank, all started at once, then waits for
//!   them in posting order (SimGrid takes the non-commutative path with `MPI_OP_NULL`).
//! * `rdb`: MPICH's recursive doubling (sendrecv with `rank xor mask`), for scan and exscan.
//!
//! Reductions are [`super::POp::Combine`]s: `linear` combines the buffers of the lower
//! ranks once they are all in (one fewer for exscan, whose result leaves its own out); `rdb`
//! combines each received buffer into its partial scan,
//! and again into its result when it comes from a lower rank.

use super::ops::{Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Collective, Cx};

/// Scan / exscan algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] =
    &[Algorithm::new("linear", linear), Algorithm::new("rdb", rdb)];

/// Scan / exscan aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("default", "linear"),
    ("recursive_doubling", "rdb"),
    ("mpich", "rdb"),
];

/// SimGrid's scan: irecvs from every lower rank, isends to every higher one, then waits.
fn linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, b) = (a.size, a.rank, a.bytes());
    let n = p as u64 - 1;
    let r = rank as u64;
    // Buffers combined: those of the lower ranks, into this rank's own (scan) or into the
    // first of them (exscan).
    let combined = if a.kind == Collective::Exscan {
        r.saturating_sub(1)
    } else {
        r
    };
    Ok(Lazy::steps(2 * n, move |i, o| {
        if i < r {
            o.irecv(i as u32, b, tag::SCAN);
        } else if i < n {
            o.isend(i as u32 + 1, b, tag::SCAN);
        } else {
            o.wait((i - n) as u32);
            if i + 1 == 2 * n {
                o.combine(b * combined);
            }
        }
    }))
}

/// MPICH's recursive doubling: sendrecv with `rank xor mask`.
fn rdb(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank, b) = (a.size, a.rank, a.bytes());
    let mut o = Ops::new();
    let mut mask = 1u64;
    while mask < p as u64 {
        let dst = rank as u64 ^ mask;
        if dst < p as u64 {
            o.sendrecv(rank, dst as u32, b, tag::SCAN, dst as u32, b, tag::SCAN);
            o.combine(if dst < rank as u64 { 2 * b } else { b });
        }
        mask <<= 1;
    }
    Ok(o.into_program())
}
