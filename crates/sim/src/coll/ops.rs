//! Building blocks shared by the collective algorithms: an operation builder that numbers
//! requests, lazily generated programs, concatenation of sub-programs, the Open MPI segment
//! helper and the trees of Open MPI's `coll_tuned_topo`.
//!
//! Every algorithm writes its operations through an [`Ops`] builder. Short (logarithmic)
//! programs are built at once and held as an [`OpList`]; programs whose length grows with the
//! communicator size (or with the number of segments) are produced step by step by a
//! [`Lazy`] program that calls a small closure whenever its buffer runs dry, so that a rank
//! of a 65,536-rank communicator never holds more than a handful of operations.

use std::collections::VecDeque;

use super::{OpList, POp, Program};

/// An operation sink that numbers the requests it posts (in posting order, as [`POp::Wait`]
/// expects).
#[derive(Debug, Default)]
pub(crate) struct Ops {
    /// The operations written so far (for a lazy program: since the last refill).
    pub(crate) ops: Vec<POp>,
    /// Number of the next `Isend`/`Irecv`.
    next_req: u32,
}

impl Ops {
    /// An empty builder.
    pub(crate) fn new() -> Ops {
        Ops::default()
    }

    /// Number the next posted request will get.
    pub(crate) fn next_req(&self) -> u32 {
        self.next_req
    }

    /// Blocking send.
    pub(crate) fn send(&mut self, peer: u32, bytes: u64, tag: i32) {
        self.ops.push(POp::Send { peer, bytes, tag });
    }

    /// Non-blocking send; returns its request number.
    pub(crate) fn isend(&mut self, peer: u32, bytes: u64, tag: i32) -> u32 {
        self.ops.push(POp::Isend { peer, bytes, tag });
        self.next_req += 1;
        self.next_req - 1
    }

    /// Blocking receive.
    pub(crate) fn recv(&mut self, peer: u32, bytes: u64, tag: i32) {
        self.ops.push(POp::Recv { peer, bytes, tag });
    }

    /// Non-blocking receive; returns its request number.
    pub(crate) fn irecv(&mut self, peer: u32, bytes: u64, tag: i32) -> u32 {
        self.ops.push(POp::Irecv { peer, bytes, tag });
        self.next_req += 1;
        self.next_req - 1
    }

    /// Wait for one request.
    pub(crate) fn wait(&mut self, req: u32) {
        self.ops.push(POp::Wait(req));
    }

    /// Wait for every posted request not yet waited.
    pub(crate) fn waitall(&mut self) {
        self.ops.push(POp::WaitAll);
    }

    /// The reduction operator on `bytes` (nothing for an empty buffer).
    pub(crate) fn combine(&mut self, bytes: u64) {
        if bytes > 0 {
            self.ops.push(POp::Combine(bytes));
        }
    }

    /// `sendrecv` as SimGrid does it: with oneself (both peers are `me`) it is a free local
    /// copy (no operation); otherwise an isend and an irecv started together, then both
    /// waited.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sendrecv(
        &mut self,
        me: u32,
        dst: u32,
        send_bytes: u64,
        send_tag: i32,
        src: u32,
        recv_bytes: u64,
        recv_tag: i32,
    ) {
        if dst == me && src == me {
            return;
        }
        let s = self.isend(dst, send_bytes, send_tag);
        let r = self.irecv(src, recv_bytes, recv_tag);
        self.wait(s);
        self.wait(r);
    }

    /// The operations as a finished program.
    pub(crate) fn into_program(self) -> Box<dyn Program> {
        Box::new(OpList::new(self.ops))
    }
}

/// A step function of a [`Lazy`] program: writes the next batch of operations and returns
/// whether more steps follow.
pub(crate) type StepFn = Box<dyn FnMut(&mut Ops) -> bool + Send>;

/// A program generated on demand by a step function.
pub(crate) struct Lazy {
    buf: Ops,
    at: usize,
    step: StepFn,
    done: bool,
}

impl Lazy {
    /// A program whose operations `step` writes batch by batch (it returns `false` after
    /// the last batch).
    pub(crate) fn new(step: StepFn) -> Lazy {
        Lazy {
            buf: Ops::new(),
            at: 0,
            step,
            done: false,
        }
    }

    /// A program of `n` steps: `step(i, ops)` writes step `i` (for `i` in `0..n`).
    pub(crate) fn steps(
        n: u64,
        mut step: impl FnMut(u64, &mut Ops) + Send + 'static,
    ) -> Box<dyn Program> {
        let mut i = 0u64;
        Box::new(Lazy::new(Box::new(move |ops| {
            if i >= n {
                return false;
            }
            step(i, ops);
            i += 1;
            i < n
        })))
    }
}

impl Program for Lazy {
    fn next_op(&mut self) -> Option<POp> {
        loop {
            if self.at < self.buf.ops.len() {
                self.at += 1;
                return Some(self.buf.ops[self.at - 1]);
            }
            if self.done {
                return None;
            }
            self.buf.ops.clear();
            self.at = 0;
            self.done = !(self.step)(&mut self.buf);
        }
    }
}

/// Programs run one after the other as one program: request numbers of each part are
/// shifted by the number of requests the earlier parts posted. Every part must have waited
/// all its requests when it ends (all our algorithms do).
pub(crate) struct Seq {
    parts: VecDeque<Box<dyn Program>>,
    offset: u32,
    posted: u32,
}

impl Seq {
    /// The concatenation of `parts`.
    pub(crate) fn program(parts: Vec<Box<dyn Program>>) -> Box<dyn Program> {
        if parts.len() == 1 {
            return parts.into_iter().next().expect("one part");
        }
        Box::new(Seq {
            parts: parts.into(),
            offset: 0,
            posted: 0,
        })
    }
}

impl Program for Seq {
    fn next_op(&mut self) -> Option<POp> {
        loop {
            let part = self.parts.front_mut()?;
            match part.next_op() {
                Some(op) => {
                    return Some(match op {
                        POp::Isend { .. } | POp::Irecv { .. } => {
                            self.posted += 1;
                            op
                        }
                        POp::Wait(n) => POp::Wait(n + self.offset),
                        other => other,
                    });
                }
                None => {
                    self.parts.pop_front();
                    self.offset += self.posted;
                    self.posted = 0;
                }
            }
        }
    }
}

/// The empty program.
pub(crate) fn empty() -> Box<dyn Program> {
    Box::new(OpList::new(Vec::new()))
}

/// Open MPI's `COLL_TUNED_COMPUTED_SEGCOUNT`: elements per segment for a segment size of
/// `segsize` bytes, elements of `typelng` bytes and `count` elements. If
/// `typelng <= segsize < typelng * count` it is `segsize / typelng`, plus one when the
/// residual exceeds half an element; otherwise the whole count (one segment).
pub(crate) fn segcount(segsize: u64, typelng: u64, count: u64) -> u64 {
    if segsize >= typelng && segsize < typelng.saturating_mul(count) {
        let mut sc = segsize / typelng.max(1);
        let residual = segsize - sc * typelng;
        if residual > (typelng >> 1) {
            sc += 1;
        }
        sc
    } else {
        count
    }
}

/// Smallest power of two `>= n` (1 for 0).
/// Block ranges `[lo, hi)` one step of Rabenseifner's algorithm (MPICH) sends and
/// receives: `(sent, received)`.
pub(crate) type BlockRanges = ((u64, u64), (u64, u64));

/// One step of the recursive-halving reduce-scatter that starts Rabenseifner's algorithm,
/// with the partner `lower` or not: moves `send_idx` / `recv_idx` and returns the ranges.
/// After the step the caller sets `send_idx = recv_idx` and narrows `last_idx`.
pub(crate) fn rab_halving_step(
    lower: bool,
    mask: u64,
    pof2: u64,
    send_idx: &mut u64,
    recv_idx: &mut u64,
    last_idx: u64,
) -> BlockRanges {
    let half = pof2 / (mask * 2);
    if lower {
        *send_idx = *recv_idx + half;
        ((*send_idx, last_idx), (*recv_idx, *send_idx))
    } else {
        *recv_idx = *send_idx + half;
        ((*send_idx, *recv_idx), (*recv_idx, last_idx))
    }
}

/// One step of the recursive-doubling gather that ends Rabenseifner's algorithm: widens
/// `last_idx`, moves `recv_idx` and returns the ranges.
pub(crate) fn rab_doubling_step(
    lower: bool,
    mask: u64,
    pof2: u64,
    send_idx: u64,
    recv_idx: &mut u64,
    last_idx: &mut u64,
) -> BlockRanges {
    let half = pof2 / (mask * 2);
    if lower {
        if mask != pof2 / 2 {
            *last_idx += half;
        }
        *recv_idx = send_idx + half;
        ((send_idx, *recv_idx), (*recv_idx, *last_idx))
    } else {
        *recv_idx = send_idx - half;
        ((send_idx, *last_idx), (*recv_idx, send_idx))
    }
}

pub(crate) fn ceil_pow2(n: u32) -> u64 {
    (n.max(1) as u64).next_power_of_two()
}

/// Largest power of two `<= n` (`n >= 1`).
pub(crate) fn floor_pow2(n: u32) -> u32 {
    debug_assert!(n >= 1);
    1u32 << (31 - n.max(1).leading_zeros())
}

/// Whether `n` is a power of two.
pub(crate) fn is_pow2(n: u32) -> bool {
    n != 0 && n & (n - 1) == 0
}

/// One node of an Open MPI tree: its parent and children as communicator ranks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tree {
    /// Parent (`None` at the root).
    pub(crate) parent: Option<u32>,
    /// Children, in the tree's order.
    pub(crate) children: Vec<u32>,
}

/// `(a - b) mod p` for ranks.
pub(crate) fn sub_mod(a: u32, b: u32, p: u32) -> u32 {
    ((a as u64 + p as u64 - (b as u64 % p as u64)) % p as u64) as u32
}

/// `(a + b) mod p` for ranks.
pub(crate) fn add_mod(a: u32, b: u64, p: u32) -> u32 {
    ((a as u64 + b % p as u64) % p as u64) as u32
}

/// Open MPI's `build_tree(fanout)`: a k-ary tree in level order over ranks shifted by the
/// root (`coll_tuned_topo.cpp`).
pub(crate) fn kary_tree(fanout: u32, p: u32, rank: u32, root: u32) -> Tree {
    let mut t = Tree::default();
    if p < 2 {
        return t;
    }
    let f = fanout as u64;
    let s = sub_mod(rank, root, p) as u64;
    // the level of s is the first with s < sum_{l<=level} f^l; delta = f^level
    let (mut num, mut pw) = (0u64, 1u64);
    loop {
        num += pw;
        if num > s {
            break;
        }
        pw *= f;
    }
    let delta = pw;
    for i in 0..f {
        let child = s + delta * (i + 1);
        if child < p as u64 {
            t.children.push(add_mod(root, child, p));
        } else {
            break;
        }
    }
    // parent
    let slimit = if f > 1 { (delta - 1) / (f - 1) } else { 0 };
    let mut sp = s;
    if sp < f {
        sp = 0;
    } else {
        while sp >= slimit {
            sp -= delta / f;
        }
    }
    if s != 0 {
        t.parent = Some(add_mod(root, sp, p));
    }
    t
}

/// Open MPI's `build_in_order_bmtree`: in-order binomial tree; children `v+1, v+2, v+4, …`
/// (nearest first) for the shifted rank `v`.
pub(crate) fn in_order_bmtree(p: u32, rank: u32, root: u32) -> Tree {
    let mut t = Tree::default();
    let v = sub_mod(rank, root, p) as u64;
    let mut mask = 1u64;
    while mask < p as u64 {
        let remote = v ^ mask;
        if remote < v {
            t.parent = Some(add_mod(root, remote, p));
            break;
        } else if remote < p as u64 {
            t.children.push(add_mod(root, remote, p));
        }
        mask <<= 1;
    }
    t
}

/// Open MPI's `build_chain(fanout)`: the root heads `fanout` chains (at most 32) that split
/// the other shifted ranks into consecutive runs, the first `(p-1) mod fanout` of them one
/// longer.
pub(crate) fn chain_tree(fanout: u32, p: u32, rank: u32, root: u32) -> Tree {
    let mut t = Tree::default();
    let mut fanout = fanout.clamp(1, 32);
    if p - 1 < fanout {
        fanout = p - 1;
    }
    let s = sub_mod(rank, root, p);
    if fanout == 1 {
        if s != 0 {
            t.parent = Some(add_mod(root, (s - 1) as u64, p));
        }
        if s + 1 < p {
            t.children.push(add_mod(root, (s + 1) as u64, p));
        }
        return t;
    }
    if p == 1 || fanout == 0 {
        return t;
    }
    let mut maxchainlen = (p - 1) / fanout;
    let mark = if (p - 1) % fanout != 0 {
        maxchainlen += 1;
        (p - 1) % fanout
    } else {
        fanout + 1
    };
    if s != 0 {
        let (head, len);
        if s - 1 < mark * maxchainlen {
            let column = (s - 1) / maxchainlen;
            head = 1 + column * maxchainlen;
            len = maxchainlen;
        } else {
            let column = mark + (s - 1 - mark * maxchainlen) / (maxchainlen - 1);
            head = mark * maxchainlen + 1 + (column - mark) * (maxchainlen - 1);
            len = maxchainlen - 1;
        }
        let parent = if s == head { 0 } else { s - 1 };
        t.parent = Some(add_mod(root, parent as u64, p));
        if s != head + len - 1 && s + 1 < p {
            t.children.push(add_mod(root, (s + 1) as u64, p));
        }
    } else {
        let mut next = 1u32;
        t.children.push(add_mod(root, next as u64, p));
        for i in 1..fanout {
            next += maxchainlen;
            if i > mark {
                next -= 1;
            }
            t.children.push(add_mod(root, next as u64, p));
        }
    }
    t
}

/// Open MPI's `build_in_order_bintree`: in-order binary tree rooted at rank `p - 1`
/// (independent of the collective's root).
pub(crate) fn in_order_bintree(p: u32, rank: u32) -> Tree {
    let mut t = Tree::default();
    let mut size = p as i64;
    let mut myrank = rank as i64;
    let mut parent = size - 1;
    let mut delta = 0i64;
    loop {
        let rightsize = size >> 1;
        let mut lchild = -1i64;
        let mut rchild = -1i64;
        if size - 1 > 0 {
            lchild = parent - 1;
            if lchild > 0 {
                rchild = rightsize - 1;
            }
        }
        if myrank == parent {
            if lchild >= 0 {
                t.children.push((lchild + delta) as u32);
            }
            if rchild >= 0 {
                t.children.push((rchild + delta) as u32);
            }
            break;
        }
        if myrank > rchild {
            if myrank == lchild {
                t.parent = Some((parent + delta) as u32);
            }
            size = size - rightsize - 1;
            delta += rightsize;
            myrank -= rightsize;
            parent = size - 1;
        } else {
            if myrank == rchild {
                t.parent = Some((parent + delta) as u32);
            }
            size = rightsize;
            parent = rchild;
        }
    }
    t
}

/// MPICH's recursive-doubling allgather with its recursive-halving fix-up for sizes that
/// are not powers of two (`allgather-rdb.cpp`, `allgatherv-mpich-rdb.cpp`, the allgather
/// half of `bcast-scatter-rdb-allgather.cpp`), written for relative rank `rel` of `p`.
///
/// `real(r)` is the communicator rank of relative rank `r`; `range(lo, hi)` the bytes of the
/// blocks of relative ranks `[lo, hi)` (ranks `>= p` hold nothing). A rank starts with its own
/// block; each exchange sends everything it holds and receives everything its partner holds;
/// the fix-up senders forward the size they received last. Returns the bytes held at the
/// end (everything, for a correct algorithm).
pub(crate) fn rdb_allgather(
    o: &mut Ops,
    rel: u64,
    p: u64,
    real: impl Fn(u64) -> u32,
    range: impl Fn(u64, u64) -> u64,
    tag: i32,
) -> u64 {
    let me = real(rel);
    let mut curr = range(rel, rel + 1);
    let mut last = 0u64;
    let mut mask = 1u64;
    let mut i = 0u32;
    while mask < p {
        let rd = rel ^ mask;
        let dst_root = (rd >> i) << i;
        let my_root = (rel >> i) << i;
        if rd < p {
            let got = range(dst_root, dst_root + mask);
            let dst = real(rd);
            o.sendrecv(me, dst, curr, tag, dst, got, tag);
            last = got;
            curr += got;
        }
        if dst_root + mask > p {
            let completed = p as i64 - my_root as i64 - mask as i64;
            let fix = range(my_root + mask, my_root + 2 * mask);
            let mut k = i;
            let mut tmp = mask >> 1;
            while tmp > 0 {
                let rd2 = rel ^ tmp;
                let tree_root = ((rel >> k) << k) as i64;
                let (r, d) = (rel as i64, rd2 as i64);
                if d > r && r < tree_root + completed && d >= tree_root + completed {
                    o.send(real(rd2), last, tag);
                } else if d < r && d < tree_root + completed && r >= tree_root + completed {
                    o.recv(real(rd2), fix, tag);
                    last = fix;
                    curr += fix;
                }
                tmp >>= 1;
                k = k.saturating_sub(1);
            }
        }
        mask <<= 1;
        i += 1;
    }
    curr
}

#[cfg(test)]
mod tests {
    use super::*;

    fn children(t: &Tree) -> Vec<u32> {
        t.children.clone()
    }

    #[test]
    fn binary_tree_matches_open_mpi_example() {
        // 0 -> {1,2}, 1 -> {3,5}, 2 -> {4,6}
        assert_eq!(children(&kary_tree(2, 7, 0, 0)), vec![1, 2]);
        assert_eq!(children(&kary_tree(2, 7, 1, 0)), vec![3, 5]);
        assert_eq!(children(&kary_tree(2, 7, 2, 0)), vec![4, 6]);
        assert_eq!(kary_tree(2, 7, 5, 0).parent, Some(1));
        assert_eq!(kary_tree(2, 7, 6, 0).parent, Some(2));
        assert_eq!(kary_tree(2, 12, 11, 0).parent, Some(3));
        assert_eq!(children(&kary_tree(2, 12, 3, 0)), vec![7, 11]);
    }

    #[test]
    fn in_order_bintree_matches_open_mpi_example() {
        // size 9: 8 -> {7, 3}; 7 -> {6, 5}; 3 -> {2, 1}; 5 -> {4}; 1 -> {0}
        assert_eq!(children(&in_order_bintree(9, 8)), vec![7, 3]);
        assert_eq!(children(&in_order_bintree(9, 7)), vec![6, 5]);
        assert_eq!(children(&in_order_bintree(9, 3)), vec![2, 1]);
        assert_eq!(children(&in_order_bintree(9, 5)), vec![4]);
        assert_eq!(children(&in_order_bintree(9, 1)), vec![0]);
        assert_eq!(in_order_bintree(9, 0).parent, Some(1));
        assert_eq!(in_order_bintree(9, 4).parent, Some(5));
        assert_eq!(in_order_bintree(9, 8).parent, None);
    }

    #[test]
    fn chain_partitions_ranks() {
        // p = 4, fanout 2: chains 0<-1<-2 and 0<-3
        assert_eq!(children(&chain_tree(2, 4, 0, 0)), vec![1, 3]);
        assert_eq!(chain_tree(2, 4, 2, 0).parent, Some(1));
        assert_eq!(chain_tree(2, 4, 3, 0).parent, Some(0));
        for p in 2..40u32 {
            for f in 1..8u32 {
                for root in [0, p / 2, p - 1] {
                    let mut seen = vec![0u32; p as usize];
                    for r in 0..p {
                        let t = chain_tree(f, p, r, root);
                        for &c in &t.children {
                            seen[c as usize] += 1;
                            assert_eq!(chain_tree(f, p, c, root).parent, Some(r), "p{p} f{f}");
                        }
                    }
                    for r in 0..p {
                        assert_eq!(seen[r as usize], u32::from(r != root), "p{p} f{f} r{r}");
                    }
                }
            }
        }
    }

    #[test]
    fn trees_are_consistent() {
        for p in 1..70u32 {
            for root in [0, p / 3, p - 1] {
                for build in 0..3 {
                    let tree = |r: u32| match build {
                        0 => kary_tree(2, p, r, root),
                        1 => in_order_bmtree(p, r, root),
                        _ => in_order_bintree(p, r),
                    };
                    let real_root = if build == 2 { p - 1 } else { root };
                    for r in 0..p {
                        let t = tree(r);
                        assert_eq!(t.parent.is_none(), r == real_root, "p{p} b{build} r{r}");
                        for &c in &t.children {
                            assert_eq!(tree(c).parent, Some(r), "p{p} b{build} r{r} c{c}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn segcount_helper() {
        assert_eq!(segcount(1024, 8, 10), 10);
        assert_eq!(segcount(1024, 8, 1000), 128);
        assert_eq!(segcount(1024, 3, 1000), 341); // residual 1 <= 1
        assert_eq!(segcount(1024, 5, 1000), 205); // 204 + residual 4 > 2
        assert_eq!(segcount(4, 8, 1000), 1000);
    }

    #[test]
    fn seq_shifts_requests() {
        let mut a = Ops::new();
        let r = a.irecv(1, 10, 0);
        a.wait(r);
        let mut b = Ops::new();
        let s = b.isend(2, 10, 0);
        b.wait(s);
        let mut p = Seq::program(vec![a.into_program(), b.into_program()]);
        let mut got = Vec::new();
        while let Some(op) = p.next_op() {
            got.push(op);
        }
        assert_eq!(got[3], POp::Wait(1));
    }
}
