//! One overlapped collective: its buffers, sub-messages, requests and their completion.
//!
//! Every block a rank exchanges with a peer is cut into pieces (a head and a tail of at most a
//! page, interior chunks of 64 KiB; `schedule::pieces`). The pieces that fill the receivers'
//! unaligned first and last pages go first, posted by the application thread before the call
//! returns; the others follow the collective's schedule, posted and tested by the progress
//! thread. Receive pieces land in a page-aligned staging mapping holding the application's own
//! pages (moved there with `MREMAP_DONTUNMAP`) and are moved back with `mremap` once no
//! pending piece shares their pages. An all-to-all's send pages are moved aside the same way
//! (the user range inaccessible until the pieces on each page are sent, then moved back); a
//! broadcast root's stay in place, write-protected, so the root reads its data freely. Pieces
//! on the send buffer's unaligned edge pages, and the priority pieces, are sent from copies.
//! A piece is done when every operation on it has completed: its receive (and, for a
//! broadcast, its forwards to the tree children, which read the staging pages) or its sends.

use std::os::raw::c_int;

use mpiscope_overlap_core::guard::{self, Staging, TABLE};
use mpiscope_overlap_core::pages::{self, Range};
use mpiscope_overlap_core::schedule::{self, is_priority, Item};

use crate::ffi::consts;
use crate::mpi::*;

mod native;

/// Interior sub-message size.
const CHUNK: usize = 64 * 1024;
/// Largest block overlapped: piece indices are message tags, which MPI guarantees up to 32767.
pub const MAX_BLOCK: usize = 1 << 30;

/// The collective an [`Op`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// MPI_Alltoall: equal blocks, rank `j`'s at offset `j * block` in both buffers.
    Alltoall,
    /// MPI_Alltoallv: per-peer counts and displacements (blocks tiling each buffer).
    Alltoallv,
    /// MPI_Bcast from `root`, along a binomial tree.
    Bcast {
        /// The root's rank in the communicator.
        root: usize,
    },
}

/// A block exchanged with one peer: its user address, length and pieces.
#[derive(Debug, Clone)]
pub struct Block {
    /// The peer (the rank itself for the own block of an all-to-all).
    pub peer: usize,
    /// User address of the block's first byte.
    pub at: usize,
    /// Pieces `(offset, len)` within the block.
    pieces: Vec<(usize, usize)>,
    /// Index of the block's first piece among the buffer's sub-messages.
    first: usize,
}

impl Block {
    /// A block of `len` bytes at `at` for `peer`; no pieces when `len` is 0.
    pub fn new(peer: usize, at: usize, len: usize) -> Self {
        let pieces = if len == 0 {
            Vec::new()
        } else {
            schedule::pieces(len, guard::page_size(), CHUNK)
        };
        Self {
            peer,
            at,
            pieces,
            first: 0,
        }
    }

    fn len(&self) -> usize {
        self.pieces.last().map_or(0, |&(o, n)| o + n)
    }
}

/// The user address range the blocks tile, if they tile one without gap or overlap (empty
/// blocks ignored); `Some((0, 0))` when every block is empty.
pub fn tiled(blocks: &[Block]) -> Option<Range> {
    let mut r: Vec<Range> = blocks
        .iter()
        .filter(|b| b.len() > 0)
        .map(|b| (b.at, b.at + b.len()))
        .collect();
    r.sort_unstable();
    if r.is_empty() {
        return Some((0, 0));
    }
    r.windows(2)
        .all(|w| w[0].1 == w[1].0)
        .then(|| (r[0].0, r[r.len() - 1].1))
}

/// A user buffer guarded page by page while its sub-messages are in flight: the receive
/// buffer (pages inaccessible until their data is published) or the send buffer (pages
/// read-only until every sub-message reading them has been sent).
struct Guarded {
    /// The whole pages protected, if any.
    protected: Option<Range>,
    /// Sub-messages in user addresses, block by block, piece by piece.
    subs: Vec<Range>,
    /// Their pending-table slots.
    slots: Vec<usize>,
    /// Operations still to complete per sub-message (receive, forwards, sends, copy).
    left: Vec<u32>,
    /// Bytes outside the protected pages handled (copied into place).
    edged: Vec<bool>,
    /// Data in place and pages accessible: the fault handler lets accesses through.
    released: Vec<bool>,
    /// Protected ranges already reopened.
    opened: Vec<Range>,
}

impl Guarded {
    /// Registers the blocks' pieces in the pending table (before any page is protected),
    /// numbering them in `blocks`; `ops(block, piece)` is the number of operations each needs.
    fn new(
        blocks: &mut [Block],
        protected: Option<Range>,
        ops: impl Fn(&Block, usize) -> u32,
    ) -> Option<Self> {
        let mut g = Self {
            protected,
            subs: Vec::new(),
            slots: Vec::new(),
            left: Vec::new(),
            edged: Vec::new(),
            released: Vec::new(),
            opened: Vec::new(),
        };
        for b in blocks.iter_mut() {
            b.first = g.subs.len();
            for (i, &(o, n)) in b.pieces.iter().enumerate() {
                g.subs.push((b.at + o, b.at + o + n));
                g.left.push(ops(b, i));
            }
        }
        for &(s, e) in &g.subs {
            // On failure, dropping `g` frees the slots taken so far.
            g.slots.push(TABLE.insert(s, e).ok()?);
        }
        let n = g.subs.len();
        g.edged = vec![false; n];
        g.released = vec![false; n];
        Some(g)
    }

    fn done(&self, i: usize) -> bool {
        self.left[i] == 0
    }

    /// One operation on sub-message `i` completed.
    fn complete_one(&mut self, i: usize) {
        self.left[i] = self.left[i].saturating_sub(1);
    }

    /// Every operation on sub-message `i` completed (the MPI's own collective did them).
    fn finish(&mut self, i: usize) {
        self.left[i] = 0;
    }

    /// For every done sub-message: `edge(start, end)` handles its bytes outside the protected
    /// pages (once); then reopens the protected pages no pending sub-message shares
    /// (`open(start, end)`) and releases every done sub-message whose protected pages are all
    /// open.
    fn publish(&mut self, mut open: impl FnMut(usize, usize), mut edge: impl FnMut(usize, usize)) {
        let page = guard::page_size();
        for i in 0..self.subs.len() {
            if !self.done(i) || self.edged[i] {
                continue;
            }
            let (s, e) = self.subs[i];
            match self.protected {
                Some((lo, hi)) if s.max(lo) < e.min(hi) => {
                    edge(s, s.max(lo));
                    edge(e.min(hi), e);
                }
                _ => edge(s, e),
            }
            self.edged[i] = true;
        }
        if let Some(prot) = self.protected {
            let pending: Vec<Range> = (0..self.subs.len())
                .filter(|&i| !self.done(i))
                .map(|i| self.subs[i])
                .collect();
            let rel = pages::releasable(prot, &pending, page).unwrap_or_default();
            for (s, e) in pages::subtract(&rel, &self.opened) {
                open(s, e);
                self.opened.push((s, e));
                self.opened.sort_unstable();
            }
        }
        for i in 0..self.subs.len() {
            if self.released[i] || !self.edged[i] {
                continue;
            }
            let (s, e) = self.subs[i];
            if let Some((lo, hi)) = self.protected {
                let inner = (s.max(lo), e.min(hi));
                let inner_page = (inner.0 / page * page, inner.1.div_ceil(page) * page);
                if inner.0 < inner.1 && !pages::subtract(&[inner_page], &self.opened).is_empty() {
                    continue;
                }
            }
            TABLE.release(self.slots[i]);
            self.released[i] = true;
        }
    }

    /// Whether the bytes of every sub-message on an unprotected page are in place.
    fn edges_done(&self) -> bool {
        (0..self.subs.len())
            .all(|i| self.edged[i] || !pages::touches_unprotected(self.subs[i], self.protected))
    }

    fn all_released(&self) -> bool {
        self.released.iter().all(|&r| r)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        for &s in &self.slots {
            TABLE.free(s);
        }
    }
}

/// What a request completes.
#[derive(Clone, Copy)]
enum Target {
    /// The receive of receive sub-message `i`.
    Recv(usize),
    /// A forward (broadcast tree) of receive sub-message `i`, sent from the staging pages.
    Forward(usize),
    /// A send of send sub-message `i`.
    Send(usize),
    /// The MPI library's non-blocking collective carrying every block's interior.
    Native,
}

/// Requests in flight and what each completes.
#[derive(Default)]
struct Requests {
    reqs: Vec<MPI_Request>,
    targets: Vec<Target>,
}

impl Requests {
    fn push(&mut self, r: MPI_Request, t: Target) {
        self.reqs.push(r);
        self.targets.push(t);
    }

    /// Tests every request; returns the targets of those that completed.
    fn test(&mut self) -> Vec<Target> {
        let mut out_targets = Vec::new();
        if self.reqs.is_empty() {
            return out_targets;
        }
        let c = consts();
        let n = self.reqs.len();
        let mut idx = vec![0 as c_int; n];
        let mut out: c_int = 0;
        // SAFETY: the arrays hold `n` entries.
        unsafe {
            PMPI_Testsome(
                n as c_int,
                self.reqs.as_mut_ptr(),
                &mut out,
                idx.as_mut_ptr(),
                c.statuses_ignore,
            )
        };
        if out != c.undefined {
            out_targets.extend(
                idx[..out.max(0) as usize]
                    .iter()
                    .map(|&i| self.targets[i as usize]),
            );
        }
        if out == c.undefined || self.reqs.iter().all(|r| *r == c.request_null) {
            self.reqs.clear();
            self.targets.clear();
        }
        out_targets
    }
}

/// What [`Op::start`] needs to know about the call.
pub struct Call {
    /// The collective.
    pub kind: Kind,
    /// The private duplicate of the application's communicator.
    pub comm: MPI_Comm,
    /// This rank and the communicator size.
    pub rank: usize,
    /// Communicator size.
    pub size: usize,
    /// Blocks this rank sends (by peer for all-to-alls; one block for a broadcast root).
    pub send: Vec<Block>,
    /// Blocks this rank receives (by peer for all-to-alls; one block for a broadcast leaf).
    pub recv: Vec<Block>,
    /// The order in which the program reads what it receives, from an access trace: sources
    /// for all-to-alls, pieces for a broadcast. Earlier-read sub-messages go first.
    pub order: Option<Vec<usize>>,
    /// Node label of each rank (ranks on one node share its network: with an order, one
    /// sends at a time).
    pub nodes: Vec<usize>,
}

/// The pieces a broadcast of `len` bytes is cut into (the segments access tracing reports).
pub fn pieces_of(len: usize) -> Vec<(usize, usize)> {
    Block::new(0, 0, len).pieces
}

/// One overlapped collective.
pub struct Op {
    kind: Kind,
    comm: MPI_Comm,
    rank: usize,
    size: usize,
    /// All-to-all rounds (pairs of peers), posted one after the other.
    rounds: Vec<Vec<Item>>,
    round: usize,
    /// Position of each broadcast piece in the program's reading order, if traced.
    piece_rank: Option<Vec<usize>>,
    /// Broadcast tree: parent and children (communicator ranks).
    parent: Option<usize>,
    children: Vec<usize>,
    sblocks: Vec<Block>,
    rblocks: Vec<Block>,
    /// The pieces posted by the application thread ahead of the schedule.
    priority: Requests,
    /// The schedule's requests in flight.
    current: Requests,
    /// A round asked for the own block's copy, done after its messages are posted.
    copy_pending: bool,
    /// The priority pieces are posted: new requests belong to the schedule.
    scheduled: bool,
    /// Priority receive pieces landing outside the staging mapping, by sub-message.
    aside: Vec<(usize, Vec<u8>)>,
    /// Copies of send pieces on pages that stay writable, by user address.
    send_copies: Vec<(usize, Vec<u8>)>,
    staging: Option<Staging>,
    /// Where the whole send pages are moved for the operation (offset 0 is the first
    /// protected send page), when the move succeeded.
    send_staging: Option<Staging>,
    /// First page of the receive region (staging offset 0).
    upage: usize,
    recv: Guarded,
    send: Guarded,
    /// The schedule follows a reading order (pieces must stay messages of their own).
    ordered: bool,
    /// Interiors go through the MPI's non-blocking collective (agreed by every rank).
    native: bool,
    /// The send interiors' copy while that collective reads it.
    native_copy: Option<Vec<u8>>,
}

// SAFETY: MPI handles are used under MPI_THREAD_MULTIPLE; the buffers are owned by the op.
unsafe impl Send for Op {}

impl Op {
    /// Prepares a collective (application thread): checks the layout, maps the staging pages
    /// and registers the pieces in the pending table, touching no user page. `None` when this
    /// rank cannot run it overlapped; since every rank must take the same path, the caller
    /// agrees with the others before [`Op::commit`] (or drops the op and runs the blocking
    /// collective).
    pub unsafe fn prepare(call: Call) -> Option<Self> {
        let Call {
            kind,
            comm,
            rank,
            size,
            send: mut sblocks,
            recv: mut rblocks,
            order,
            nodes,
        } = call;
        let page = guard::page_size();
        let rregion = tiled(&rblocks)?;
        let sregion = tiled(&sblocks)?;
        let (parent, children) = match kind {
            Kind::Bcast { root } => {
                let v = (rank + size - root) % size;
                let (p, c) = schedule::binomial_tree(v, size);
                (
                    p.map(|p| (p + root) % size),
                    c.into_iter().map(|c| (c + root) % size).collect(),
                )
            }
            _ => (None, Vec::new()),
        };
        let rounds = match (kind, &order) {
            (Kind::Bcast { .. }, _) => vec![Vec::new()],
            (_, Some(o)) => {
                schedule::alltoall_ordered_on_nodes(rank, size, 1, o, &nodes)
                    .ok()?
                    .rounds
            }
            (_, None) => schedule::alltoall(rank, size, 1, 4).ok()?.rounds,
        };
        // A broadcast's pieces by reading order (position of each piece).
        let piece_rank = match (kind, &order) {
            (Kind::Bcast { .. }, Some(o)) => {
                let mut r = vec![usize::MAX; o.len()];
                for (pos, &p) in o.iter().enumerate() {
                    if p < r.len() {
                        r[p] = pos;
                    }
                }
                Some(r)
            }
            _ => None,
        };
        let staging = if rregion.0 < rregion.1 {
            let upage = rregion.0 / page * page;
            Some(Staging::new(rregion.1.div_ceil(page) * page - upage).ok()?)
        } else {
            None
        };
        let upage = rregion.0 / page * page;
        let rprot = pages::protectable(rregion.0, rregion.1 - rregion.0, page).ok()?;
        let sprot = pages::protectable(sregion.0, sregion.1 - sregion.0, page).ok()?;
        // A broadcast root's pages move aside too: the MPI's own broadcast may write the
        // root's buffer (MPICH's scatter and allgather does), which write protection forbids.
        let send_staging = match sprot {
            Some((lo, hi)) => Some(Staging::new(hi - lo).ok()?),
            None => None,
        };
        let np = |b: &Block| b.pieces.len();
        let recv = Guarded::new(&mut rblocks, rprot, |b, i| match kind {
            Kind::Bcast { .. } if i != 0 && i + 1 != np(b) => 1 + children.len() as u32,
            _ => 1,
        })?;
        let send = Guarded::new(&mut sblocks, sprot, |b, i| match kind {
            Kind::Bcast { .. } if i == 0 || i + 1 == np(b) => size as u32 - 1,
            Kind::Bcast { .. } => children.len() as u32,
            _ => 1,
        })?;
        Some(Op {
            kind,
            comm,
            rank,
            size,
            rounds,
            round: 0,
            piece_rank,
            parent,
            children,
            sblocks,
            rblocks,
            priority: Requests::default(),
            current: Requests::default(),
            copy_pending: false,
            scheduled: false,
            aside: Vec::new(),
            send_copies: Vec::new(),
            staging,
            send_staging,
            upage,
            recv,
            send,
            ordered: order.is_some(),
            native: false,
            native_copy: None,
        })
    }

    /// Whether interiors go through the MPI's non-blocking collective (what every rank
    /// agreed; before [`Op::commit`]).
    pub fn set_native(&mut self, on: bool) {
        self.native = on;
    }

    /// Starts a prepared collective that every rank agreed to overlap: protects the buffers
    /// and posts the priority pieces. Cannot fail: when a protection is refused, the
    /// operation goes on without it (from a copy of the send buffer, or, for the receive
    /// buffer, into fresh staging pages that are published all the same).
    pub unsafe fn commit(&mut self) {
        let (rprot, sprot) = (self.recv.protected, self.send.protected);
        let priority = self.priority_send_subs();
        self.send_copies = self.copy_sends(|r| {
            pages::touches_unprotected(r, sprot) || priority.binary_search(&r).is_ok()
        });
        // The priority pieces leave first, from copies (they land aside), so the peers waiting
        // on them are not delayed by the protection of this rank's buffers, done while they
        // travel.
        self.post_priority();
        if let (Some((lo, hi)), Some(st)) = (sprot, &self.send_staging) {
            if !matches!(guard::move_aside(lo, st.base(), hi - lo), Ok(true)) {
                // Refused (a shared or file mapping): write-protect in place below.
                self.send_staging = None;
            }
        }
        if let (Some((lo, hi)), Some(st)) = (rprot, &self.staging) {
            if guard::adopt(lo, st.base() + (lo - self.upage), hi - lo).is_err() {
                // Not even protected: complete the receive region before returning.
                self.recv.protected = None;
            }
        }
        // The own block's priority pieces, now that the staging mapping is complete.
        if matches!(self.kind, Kind::Alltoall | Kind::Alltoallv) {
            let np = self.rblocks.get(self.rank).map_or(0, |b| b.pieces.len());
            for piece in self.priority_pieces(self.rank, np) {
                self.copy_own(piece);
            }
        }
        if let (Some((lo, hi)), None) = (sprot, &self.send_staging) {
            if guard::write_protect(lo, hi).is_err() {
                self.send.protected = None;
                self.send_copies = self.copy_sends(|_| true);
            }
        }
        self.scheduled = true;
        self.progress(false);
    }

    /// The send and receive regions, `(start, end)` each (empty as `(0, 0)`).
    pub fn regions(&self) -> [Range; 2] {
        let span = |g: &Guarded| {
            let lo = g.subs.iter().map(|r| r.0).min().unwrap_or(0);
            let hi = g.subs.iter().map(|r| r.1).max().unwrap_or(0);
            (lo, hi)
        };
        [span(&self.send), span(&self.recv)]
    }

    fn stage(&self, user_addr: usize) -> usize {
        self.staging.as_ref().map_or(0, |s| s.base()) + (user_addr - self.upage)
    }

    /// Copies of the send pieces `which` selects (by user address range).
    fn copy_sends(&self, which: impl Fn(Range) -> bool) -> Vec<(usize, Vec<u8>)> {
        self.send
            .subs
            .iter()
            .filter(|&&r| which(r))
            .map(|&(s, e)| {
                // SAFETY: the piece lies inside the application's send buffer.
                let bytes = unsafe { std::slice::from_raw_parts(s as *const u8, e - s) };
                (s, bytes.to_vec())
            })
            .collect()
    }

    /// Where the send piece starting at user address `addr` is read from: the op's copy (a
    /// piece on a page left writable, which the application may overwrite as soon as the call
    /// returns, or a priority piece), else the send pages moved aside, else the
    /// write-protected user pages.
    fn send_source(&self, addr: usize) -> *const u8 {
        if let Some((_, copy)) = self.send_copies.iter().find(|(a, _)| *a == addr) {
            return copy.as_ptr();
        }
        match (&self.send_staging, self.send.protected) {
            (Some(st), Some((lo, _))) => (st.base() + (addr - lo)) as *const u8,
            _ => addr as *const u8,
        }
    }

    /// The send sub-messages posted ahead of the schedule (user address ranges, sorted).
    fn priority_send_subs(&self) -> Vec<Range> {
        let source = match self.kind {
            Kind::Bcast { root } if self.rank == root => root,
            Kind::Bcast { .. } => return Vec::new(),
            Kind::Alltoall | Kind::Alltoallv => self.rank,
        };
        let mut v: Vec<Range> = self
            .sblocks
            .iter()
            .filter(|b| matches!(self.kind, Kind::Bcast { .. }) || b.peer != self.rank)
            .flat_map(|b| {
                self.priority_pieces(source, b.pieces.len())
                    .into_iter()
                    .map(move |p| self.send.subs[b.first + p])
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Whether piece `piece` of `pieces` of a block `source` sends goes ahead of the schedule.
    fn priority_piece(&self, source: usize, piece: usize, pieces: usize) -> bool {
        match self.kind {
            Kind::Alltoall => is_priority(source, self.size, piece, pieces),
            Kind::Alltoallv | Kind::Bcast { .. } => piece == 0 || piece + 1 == pieces,
        }
    }

    fn priority_pieces(&self, source: usize, pieces: usize) -> Vec<usize> {
        let mut v: Vec<usize> = [0, pieces.saturating_sub(1)]
            .into_iter()
            .filter(|&p| p < pieces && self.priority_piece(source, p, pieces))
            .collect();
        v.dedup();
        v
    }

    /// Sends piece `piece` of send block `b` (or, `forward`, of receive block `b` from the
    /// staging pages) to `to`.
    fn isend(&mut self, b: usize, piece: usize, to: usize, forward: bool) {
        let c = consts();
        let block = if forward {
            &self.rblocks[b]
        } else {
            &self.sblocks[b]
        };
        let (o, n) = block.pieces[piece];
        let addr = block.at + o;
        let sub = block.first + piece;
        let ptr = if forward {
            self.stage(addr) as *const u8
        } else {
            self.send_source(addr)
        };
        let mut r: MPI_Request = c.request_null;
        // SAFETY: the piece stays readable until the request completes (write-protected user
        // pages, a copy owned by the op, or staging pages published only after the forward).
        unsafe {
            PMPI_Isend(
                ptr as *const _,
                n as c_int,
                c.byte,
                to as c_int,
                piece as c_int,
                self.comm,
                &mut r,
            )
        };
        let t = if forward {
            Target::Forward(sub)
        } else {
            Target::Send(sub)
        };
        self.push(r, t);
    }

    fn irecv(&mut self, b: usize, piece: usize, from: usize) {
        let c = consts();
        let block = &self.rblocks[b];
        let (o, n) = block.pieces[piece];
        let sub = block.first + piece;
        // Priority pieces are posted before the application's pages are moved into the
        // staging mapping (which would discard what landed there): they land aside and are
        // copied in when they complete.
        let ptr = if self.scheduled {
            self.stage(block.at + o)
        } else {
            self.aside.push((sub, vec![0u8; n]));
            self.aside.last().map_or(0, |(_, v)| v.as_ptr() as usize)
        };
        let mut r: MPI_Request = c.request_null;
        // SAFETY: the piece lies inside the staging receive mapping, or in its own buffer
        // owned by the op until the request completes.
        unsafe {
            PMPI_Irecv(
                ptr as *mut _,
                n as c_int,
                c.byte,
                from as c_int,
                piece as c_int,
                self.comm,
                &mut r,
            )
        };
        self.push(r, Target::Recv(sub));
    }

    /// Requests go to the priority set until [`Op::commit`] is done, then to the schedule's.
    fn push(&mut self, r: MPI_Request, t: Target) {
        if self.scheduled {
            self.current.push(r, t);
        } else {
            self.priority.push(r, t);
        }
    }

    /// Copies piece `piece` of the own block into the staging receive mapping.
    fn copy_own(&mut self, piece: usize) {
        let (sb, rb) = (&self.sblocks[self.rank], &self.rblocks[self.rank]);
        let (o, n) = rb.pieces[piece];
        // The own block's later pieces are copied by the progress thread after the call has
        // returned: a piece on a writable send page comes from its copy.
        let (src, dst) = (self.send_source(sb.at + o) as usize, self.stage(rb.at + o));
        let (ssub, rsub) = (sb.first + piece, rb.first + piece);
        // SAFETY: both ranges are `n` bytes inside live buffers.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) };
        self.recv.complete_one(rsub);
        self.send.complete_one(ssub);
    }

    /// Posts the priority pieces (application thread, before returning).
    fn post_priority(&mut self) {
        match self.kind {
            Kind::Bcast { root } => {
                if self.rank == root {
                    let np = self.sblocks[0].pieces.len();
                    for piece in self.priority_pieces(root, np) {
                        for to in (0..self.size).filter(|&t| t != root) {
                            self.isend(0, piece, to, false);
                        }
                    }
                } else {
                    let np = self.rblocks[0].pieces.len();
                    for piece in self.priority_pieces(root, np) {
                        self.irecv(0, piece, root);
                    }
                }
            }
            Kind::Alltoall | Kind::Alltoallv => {
                for b in 0..self.sblocks.len() {
                    let to = self.sblocks[b].peer;
                    let np = self.sblocks[b].pieces.len();
                    if to != self.rank {
                        for piece in self.priority_pieces(self.rank, np) {
                            self.isend(b, piece, to, false);
                        }
                    }
                }
                for b in 0..self.rblocks.len() {
                    let from = self.rblocks[b].peer;
                    let np = self.rblocks[b].pieces.len();
                    if from != self.rank {
                        for piece in self.priority_pieces(from, np) {
                            self.irecv(b, piece, from);
                        }
                    }
                }
            }
        }
    }

    /// A broadcast's interior pieces, earliest-read first when the reading order is known.
    fn interior_in_order(&self, root: usize, np: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..np)
            .filter(|&p| !self.priority_piece(root, p, np))
            .collect();
        if let Some(r) = self.piece_rank.as_ref().filter(|r| r.len() == np) {
            v.sort_by_key(|&p| r[p]);
        }
        v
    }

    /// Posts the next rounds of the schedule until one has requests in flight.
    fn post_round(&mut self) {
        if self.native {
            self.post_native();
            return;
        }
        while self.round < self.rounds.len() {
            let items = self.rounds[self.round].clone();
            self.round += 1;
            match self.kind {
                Kind::Bcast { root } => {
                    if self.rank == root {
                        let np = self.sblocks[0].pieces.len();
                        let interior = self.interior_in_order(root, np);
                        for c in self.children.clone() {
                            for &piece in &interior {
                                self.isend(0, piece, c, false);
                            }
                        }
                    } else if let Some(parent) = self.parent {
                        let np = self.rblocks[0].pieces.len();
                        for piece in self.interior_in_order(root, np) {
                            self.irecv(0, piece, parent);
                        }
                    }
                }
                Kind::Alltoall | Kind::Alltoallv => {
                    for item in &items {
                        match *item {
                            Item::Send { peer, .. } => {
                                let np = self.sblocks[peer].pieces.len();
                                for piece in 0..np {
                                    if !self.priority_piece(self.rank, piece, np) {
                                        self.isend(peer, piece, peer, false);
                                    }
                                }
                            }
                            Item::Recv { peer, .. } => {
                                let np = self.rblocks[peer].pieces.len();
                                for piece in 0..np {
                                    if !self.priority_piece(peer, piece, np) {
                                        self.irecv(peer, piece, peer);
                                    }
                                }
                            }
                            Item::Copy { .. } => self.copy_pending = true,
                        }
                    }
                }
            }
            if !self.current.reqs.is_empty() {
                break;
            }
        }
    }

    /// A request completed: count it, and forward a broadcast piece down the tree.
    fn completed(&mut self, t: Target) {
        match t {
            Target::Recv(s) => {
                if let Some(i) = self.aside.iter().position(|(x, _)| *x == s) {
                    let (_, data) = self.aside.swap_remove(i);
                    let dst = self.stage(self.recv.subs[s].0);
                    // SAFETY: the piece's place in the staging mapping holds `data.len()`
                    // bytes (the mapping is complete: `commit` has run).
                    unsafe {
                        std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len())
                    };
                }
                self.recv.complete_one(s);
                if let Kind::Bcast { root } = self.kind {
                    let np = self.rblocks[0].pieces.len();
                    let piece = s - self.rblocks[0].first;
                    if !self.priority_piece(root, piece, np) {
                        for c in self.children.clone() {
                            self.isend(0, piece, c, true);
                        }
                    }
                }
            }
            Target::Forward(s) => self.recv.complete_one(s),
            Target::Send(s) => self.send.complete_one(s),
            Target::Native => self.native_completed(),
        }
    }

    /// Tests the requests (the schedule's only when `schedule`, on the progress thread),
    /// posts the next round when the current one is complete, publishes what became
    /// complete; true when everything is done.
    pub fn progress(&mut self, schedule: bool) -> bool {
        let mut finished = self.priority.test();
        if schedule {
            finished.extend(self.current.test());
            if self.current.reqs.is_empty() && self.round < self.rounds.len() {
                self.post_round();
            }
        }
        if schedule && self.copy_pending {
            self.copy_pending = false;
            let rb = self.rank;
            for piece in 0..self.rblocks.get(rb).map_or(0, |b| b.pieces.len()) {
                let sub = self.rblocks[rb].first + piece;
                if !self.recv.done(sub) {
                    self.copy_own(piece);
                }
            }
        }
        for t in finished {
            self.completed(t);
        }
        self.publish();
        self.priority.reqs.is_empty()
            && self.current.reqs.is_empty()
            && self.round >= self.rounds.len()
            && !self.copy_pending
            && self.recv.all_released()
            && self.send.all_released()
    }

    /// Whether the pieces on the receive region's unaligned edge pages are in place.
    pub fn edges_done(&self) -> bool {
        self.recv.edges_done()
    }

    fn publish(&mut self) {
        let upage = self.upage;
        let base = self.staging.as_ref().map_or(0, |s| s.base());
        let stage = move |a: usize| base + (a - upage);
        let staging = &mut self.staging;
        self.recv.publish(
            |s, e| {
                if let Some(st) = staging.as_mut() {
                    st.publish(stage(s), s, e - s)
                        .expect("mremap over the receive buffer");
                }
            },
            |a, b| {
                if a < b {
                    // SAFETY: both ranges lie in live buffers of `b - a` bytes.
                    unsafe {
                        std::ptr::copy_nonoverlapping(stage(a) as *const u8, a as *mut u8, b - a)
                    }
                }
            },
        );
        let send_base = self.send.protected.map_or(0, |(lo, _)| lo);
        let send_staging = &mut self.send_staging;
        self.send.publish(
            |s, e| match send_staging.as_mut() {
                Some(st) => st
                    .publish(st.base() + (s - send_base), s, e - s)
                    .expect("mremap over the send buffer"),
                None => guard::protect(s, e, true).expect("mprotect of the send buffer"),
            },
            |_, _| {},
        );
    }
}
