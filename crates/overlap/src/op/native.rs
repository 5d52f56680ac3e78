//! The interior of an overlapped collective through the MPI library's own non-blocking
//! collective (MPI_Ialltoallv, MPI_Ibcast) on the private communicator.
//!
//! T-NBC's own schedule sends every block as pieces of at most 64 KiB, one message each, so
//! that pages can be published as their piece lands and read in the program's order. On
//! shared memory that costs 2-5 times the MPI's own collective, which moves a whole block in
//! one message (single copy between processes). With nothing to read in a known order, the
//! interior of every block (all its pieces but the head and the tail, which lie on whole
//! pages of both buffers when the block spans two pages or more) goes in one call of the
//! MPI's non-blocking collective; heads and tails keep their own messages, so the call still
//! returns as soon as the buffers' unaligned edge pages are in place. The interior's pages are
//! published when the non-blocking collective completes.
//!
//! Every rank must run the same collective with matching counts: whether a call goes this way
//! is agreed on with the call itself ([`Op::native_vote`]), and the interior of a block is a
//! function of its length only, which both ends know.

use std::os::raw::c_int;

use super::{Block, Kind, Op, Target};
use crate::ffi::consts;
use crate::mpi::*;

/// The pieces `[first, last)` of block `b` that form its interior, and their byte range
/// `(offset, len)` in the block; `None` when the block has no interior (under three pieces).
pub(super) fn interior(b: &Block) -> Option<(usize, usize, usize, usize)> {
    let np = b.pieces.len();
    if np < 3 {
        return None;
    }
    let (o, _) = b.pieces[1];
    let (lo, ln) = b.pieces[np - 2];
    Some((1, np - 1, o, lo + ln - o))
}

fn is_interior(b: &Block, piece: usize) -> bool {
    interior(b).is_some_and(|(first, last, _, _)| piece >= first && piece < last)
}

/// Whether the MPI library's non-blocking collectives carry interiors unless told otherwise
/// (`MPISCOPE_OVERLAP_TRANSFER=pieces` keeps T-NBC's own schedule for everything).
pub fn wanted() -> bool {
    !std::env::var("MPISCOPE_OVERLAP_TRANSFER").is_ok_and(|v| v.trim() == "pieces")
}

impl Op {
    /// This rank's vote for carrying interiors natively: no reading order to follow, and
    /// displacements that MPI's `int` arguments can hold.
    pub fn native_vote(&self) -> bool {
        let fits = |blocks: &[Block]| {
            super::tiled(blocks).is_some_and(|(lo, hi)| hi - lo < c_int::MAX as usize)
        };
        !self.ordered && fits(&self.rblocks) && fits(&self.sblocks) && wanted()
    }

    /// Posts a collective's heads and tails as messages of their own and its interiors in one
    /// non-blocking collective of the MPI library (progress thread, in place of the rounds).
    pub(super) fn post_native(&mut self) {
        self.round = self.rounds.len();
        match self.kind {
            Kind::Alltoall | Kind::Alltoallv => self.post_native_alltoall(),
            Kind::Bcast { root } => self.post_native_bcast(root),
        }
    }

    fn post_native_alltoall(&mut self) {
        for b in 0..self.sblocks.len() {
            let (to, np) = (self.sblocks[b].peer, self.sblocks[b].pieces.len());
            for piece in 0..np {
                if to != self.rank
                    && !self.priority_piece(self.rank, piece, np)
                    && !is_interior(&self.sblocks[b], piece)
                {
                    self.isend(b, piece, to, false);
                }
            }
        }
        for b in 0..self.rblocks.len() {
            let (from, np) = (self.rblocks[b].peer, self.rblocks[b].pieces.len());
            for piece in 0..np {
                if from != self.rank
                    && !self.priority_piece(from, piece, np)
                    && !is_interior(&self.rblocks[b], piece)
                {
                    self.irecv(b, piece, from);
                }
            }
        }
        self.copy_pending = true;
        let size = self.size;
        let (mut sc, mut sd, mut rc, mut rd) =
            (vec![0; size], vec![0; size], vec![0; size], vec![0; size]);
        // The send interiors, contiguous in one buffer: the moved or write-protected pages
        // when every interior lies on them, else a copy.
        let sbase = self.send_interior_base();
        for b in &self.sblocks {
            if let (Some((_, _, o, n)), true) = (interior(b), b.peer != self.rank) {
                sc[b.peer] = n as c_int;
                sd[b.peer] = (b.at + o - sbase.1) as c_int;
            }
        }
        let rbase = self.upage;
        for b in &self.rblocks {
            if let (Some((_, _, o, n)), true) = (interior(b), b.peer != self.rank) {
                rc[b.peer] = n as c_int;
                rd[b.peer] = (b.at + o - rbase) as c_int;
            }
        }
        let c = consts();
        let mut r: MPI_Request = c.request_null;
        // SAFETY: every interior lies inside the send base (pages the op owns or its copy)
        // and the staging receive mapping, which stay until the request completes.
        unsafe {
            PMPI_Ialltoallv(
                sbase.0 as *const _,
                sc.as_ptr(),
                sd.as_ptr(),
                c.byte,
                self.stage(rbase) as *mut _,
                rc.as_ptr(),
                rd.as_ptr(),
                c.byte,
                self.comm,
                &mut r,
            )
        };
        self.native_copy = sbase.2;
        self.push(r, Target::Native);
    }

    /// Where the send interiors are read from: `(pointer, user address it stands for, copy)`,
    /// the pointer standing for the user address so that displacements are user offsets.
    fn send_interior_base(&self) -> (usize, usize, Option<Vec<u8>>) {
        let ranges: Vec<(usize, usize)> = self
            .sblocks
            .iter()
            .filter(|b| b.peer != self.rank)
            .filter_map(|b| interior(b).map(|(_, _, o, n)| (b.at + o, b.at + o + n)))
            .collect();
        let Some(lo) = ranges.iter().map(|r| r.0).min() else {
            return (0, 0, None);
        };
        let hi = ranges.iter().map(|r| r.1).max().unwrap_or(lo);
        let copied = |a: usize| ranges.iter().any(|r| r.0 <= a && a < r.1);
        let on_pages = self
            .send
            .protected
            .is_some_and(|(plo, phi)| plo <= lo && hi <= phi)
            && !self.send_copies.iter().any(|(a, _)| copied(*a));
        if on_pages {
            return (self.send_source(lo) as usize, lo, None);
        }
        let mut copy = vec![0u8; hi - lo];
        for b in self.sblocks.iter().filter(|b| b.peer != self.rank) {
            if let Some((first, last, _, _)) = interior(b) {
                for &(o, n) in &b.pieces[first..last] {
                    let src = self.send_source(b.at + o);
                    // SAFETY: the piece's source holds `n` bytes; the copy spans every interior.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src, copy.as_mut_ptr().add(b.at + o - lo), n)
                    };
                }
            }
        }
        (copy.as_ptr() as usize, lo, Some(copy))
    }

    fn post_native_bcast(&mut self, root: usize) {
        let block = if self.rank == root {
            &self.sblocks[0]
        } else {
            &self.rblocks[0]
        };
        let Some((first, _, o, n)) = interior(block) else {
            return;
        };
        let at = block.at + o;
        let ptr = if self.rank == root {
            // The MPI may write the root's buffer: moved pages, or a copy (never pages
            // write-protected in place).
            let moved = self.send_staging.is_some()
                && self
                    .send
                    .protected
                    .is_some_and(|(plo, phi)| plo <= at && at + n <= phi);
            let copy: Option<Vec<u8>> = (!moved).then(|| {
                let mut v = vec![0u8; n];
                let b = &self.sblocks[0];
                let (f, l, _, _) = interior(b).unwrap_or((first, first, 0, 0));
                for &(po, pn) in &b.pieces[f..l] {
                    // SAFETY: each piece's source holds `pn` bytes inside the copy's span.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.send_source(b.at + po),
                            v.as_mut_ptr().add(po - o),
                            pn,
                        )
                    };
                }
                v
            });
            let p = copy
                .as_ref()
                .map_or(self.send_source(at) as usize, |v| v.as_ptr() as usize);
            self.native_copy = copy;
            p
        } else {
            self.stage(at)
        };
        let c = consts();
        let mut r: MPI_Request = c.request_null;
        // SAFETY: `n` bytes at `ptr` stay owned by the op until the request completes.
        unsafe {
            PMPI_Ibcast(
                ptr as *mut _,
                n as c_int,
                c.byte,
                root as c_int,
                self.comm,
                &mut r,
            )
        };
        self.push(r, Target::Native);
    }

    /// The non-blocking collective completed: every interior piece is done, on both sides.
    pub(super) fn native_completed(&mut self) {
        self.native_copy = None;
        for b in &self.rblocks {
            if b.peer == self.rank && !matches!(self.kind, Kind::Bcast { .. }) {
                continue;
            }
            if let Some((first, last, _, _)) = interior(b) {
                for p in first..last {
                    self.recv.finish(b.first + p);
                }
            }
        }
        for b in &self.sblocks {
            if b.peer == self.rank && !matches!(self.kind, Kind::Bcast { .. }) {
                continue;
            }
            if let Some((first, last, _, _)) = interior(b) {
                for p in first..last {
                    self.send.finish(b.first + p);
                }
            }
        }
    }
}
