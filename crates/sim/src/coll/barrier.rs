//! MPI_Barrier algorithms (Open MPI's, as in SimGrid 3.32 `barrier/barrier-ompi.cpp`, design
//! note §7.4). Every message is empty.
//!
//! * `ompi_basic_linear`: everyone sends to 0 and waits for 0's answer; 0 irecvs from all,
//!   then isends to all.
//! * `ompi_recursivedoubling`: pairwise exchanges with `rank xor mask`, the ranks above the
//!   largest power of two folded onto the lower ones first.
//! * `ompi_bruck`: dissemination, `sendrecv` to `rank+d` from `rank−d` for d = 1, 2, 4, …
//!   (also MPICH's barrier).
//! * `ompi_tree`: up and down a hypercube-like tree.
//! * `ompi_two_procs`: one exchange (two ranks only; on other sizes we run recursive
//!   doubling).
//! * `ompi_doublering`: a token goes twice around the ring.

use super::ops::{add_mod, ceil_pow2, floor_pow2, sub_mod, Lazy, Ops};
use super::{tag, Algorithm, Built, CollArgs, Cx};

/// Barrier algorithms.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::new("ompi_basic_linear", linear),
    Algorithm::new("ompi_recursivedoubling", recursive_doubling),
    Algorithm::new("ompi_bruck", bruck),
    Algorithm::new("ompi_tree", tree),
    Algorithm::new("ompi_two_procs", two_procs),
    Algorithm::new("ompi_doublering", doublering),
];

/// Barrier aliases.
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("linear", "ompi_basic_linear"),
    ("basic_linear", "ompi_basic_linear"),
    ("recursive_doubling", "ompi_recursivedoubling"),
    ("rdb", "ompi_recursivedoubling"),
    ("bruck", "ompi_bruck"),
    ("dissemination", "ompi_bruck"),
    ("mpich", "ompi_bruck"),
    ("tree", "ompi_tree"),
    ("two_procs", "ompi_two_procs"),
    ("doublering", "ompi_doublering"),
];

const TAG: i32 = tag::BARRIER;

/// One exchange between the two ranks; recursive doubling on other sizes.
fn two_procs(a: &CollArgs, cx: &mut Cx) -> Built {
    if a.size != 2 {
        return recursive_doubling(a, cx);
    }
    let mut o = Ops::new();
    let peer = (a.rank + 1) & 1;
    o.sendrecv(a.rank, peer, 0, TAG, peer, 0, TAG);
    Ok(o.into_program())
}

fn linear(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    if rank > 0 {
        let mut o = Ops::new();
        o.send(0, 0, TAG);
        o.recv(0, 0, TAG);
        return Ok(o.into_program());
    }
    let n = p as u64 - 1;
    Ok(Lazy::steps(2 * n + 2, move |i, o| {
        if i < n {
            o.irecv(i as u32 + 1, 0, TAG);
        } else if i == n {
            o.waitall();
        } else if i < 2 * n + 1 {
            o.isend((i - n) as u32, 0, TAG);
        } else {
            o.waitall();
        }
    }))
}

fn recursive_doubling(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    let mut o = Ops::new();
    let adj = floor_pow2(p);
    if adj != p {
        if rank >= adj {
            let remote = rank - adj;
            o.sendrecv(rank, remote, 0, TAG, remote, 0, TAG);
        } else if rank < p - adj {
            o.recv(rank + adj, 0, TAG);
        }
    }
    if rank < adj {
        let mut mask = 1u32;
        while mask < adj {
            let remote = rank ^ mask;
            mask <<= 1;
            if remote >= adj {
                continue;
            }
            o.sendrecv(rank, remote, 0, TAG, remote, 0, TAG);
        }
    }
    if adj != p && rank < p - adj {
        o.send(rank + adj, 0, TAG);
    }
    Ok(o.into_program())
}

/// Dissemination barrier (Open MPI's bruck, MPICH's default).
fn bruck(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    let mut o = Ops::new();
    let mut d = 1u64;
    while d < p as u64 {
        let from = sub_mod(rank, d as u32, p);
        let to = add_mod(rank, d, p);
        o.sendrecv(rank, to, 0, TAG, from, 0, TAG);
        d <<= 1;
    }
    Ok(o.into_program())
}

fn tree(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    let mut o = Ops::new();
    let depth = ceil_pow2(p);
    let r = rank as u64;
    let valid = |partner: u64, jump: u64| partner & (jump - 1) == 0 && partner < p as u64;
    let mut jump = 1u64;
    while jump < depth {
        let partner = r ^ jump;
        if valid(partner, jump) {
            if partner > r {
                o.recv(partner as u32, 0, TAG);
            } else if partner < r {
                o.send(partner as u32, 0, TAG);
            }
        }
        jump <<= 1;
    }
    let mut jump = depth >> 1;
    while jump > 0 {
        let partner = r ^ jump;
        if valid(partner, jump) {
            if partner > r {
                o.send(partner as u32, 0, TAG);
            } else if partner < r {
                o.recv(partner as u32, 0, TAG);
            }
        }
        jump >>= 1;
    }
    Ok(o.into_program())
}

fn doublering(a: &CollArgs, _cx: &mut Cx) -> Built {
    let (p, rank) = (a.size, a.rank);
    let mut o = Ops::new();
    let left = sub_mod(rank, 1, p);
    let right = add_mod(rank, 1, p);
    for _ in 0..2 {
        if rank > 0 {
            o.recv(left, 0, TAG);
        }
        o.send(right, 0, TAG);
        if rank == 0 {
            o.recv(left, 0, TAG);
        }
    }
    Ok(o.into_program())
}
