//! Tests of the collective programs: a small executor runs every rank's program, matches
//! sends with receives by (source, destination, tag) in FIFO order, and checks that every
//! message is received exactly once with the same byte count, that no rank deadlocks, that
//! every request is waited, and that data reaches where the collective says (each message
//! carries the "facts" its sender knew when posting it; a receiver learns them when its
//! receive completes).
//!
//! Two modes: every send detached (never blocks), and SimGrid's rule (a send of 64 KiB or
//! more, or the wait on such an isend, blocks until the matching receive is posted).

#![allow(clippy::needless_range_loop)]

use std::collections::{HashMap, VecDeque};

use super::*;

/// Fact bitset.
type Bits = Vec<u64>;

fn bit_set(b: &mut Bits, i: usize) {
    b[i / 64] |= 1 << (i % 64);
}

fn bit_get(b: &Bits, i: usize) -> bool {
    b[i / 64] >> (i % 64) & 1 == 1
}

fn bit_or(a: &mut Bits, b: &Bits) {
    for (x, y) in a.iter_mut().zip(b) {
        *x |= *y;
    }
}

/// Unmatched sends and receives (request ids) per (source, destination, tag).
type Queues = HashMap<(u32, u32, i32), (VecDeque<usize>, VecDeque<usize>)>;

/// Blocking-send threshold of SimGrid (`smpi/send-is-detached-thresh`).
const DETACHED: u64 = 65536;

struct Req {
    recv: bool,
    bytes: u64,
    matched: bool,
    /// A send that completes at once (detached).
    instant: bool,
    facts: Option<Bits>,
}

impl Req {
    fn complete(&self) -> bool {
        self.matched || (!self.recv && self.instant)
    }
}

struct RankState {
    prog: Box<dyn Program>,
    numbered: Vec<usize>,
    waited: Vec<bool>,
    /// Requests (global ids) the rank is blocked on, and which numbered ones they are.
    blocked: Vec<usize>,
    blocked_numbered: Vec<usize>,
    know: Bits,
    recv_bytes: u64,
    done: bool,
}

/// What a run produced.
#[derive(Debug)]
struct Outcome {
    know: Vec<Bits>,
    recv_bytes: Vec<u64>,
}

/// Runs the programs; `facts[r]` are the facts rank r starts with, `nfacts` their number.
fn execute(
    progs: Vec<Box<dyn Program>>,
    nfacts: usize,
    init: impl Fn(u32) -> Vec<usize>,
    blocking: bool,
) -> Result<Outcome, String> {
    let p = progs.len();
    let words = nfacts.div_ceil(64).max(1);
    let mut ranks: Vec<RankState> = progs
        .into_iter()
        .enumerate()
        .map(|(r, prog)| {
            let mut know = vec![0u64; words];
            for f in init(r as u32) {
                bit_set(&mut know, f);
            }
            RankState {
                prog,
                numbered: Vec::new(),
                waited: Vec::new(),
                blocked: Vec::new(),
                blocked_numbered: Vec::new(),
                know,
                recv_bytes: 0,
                done: false,
            }
        })
        .collect();
    let mut reqs: Vec<Req> = Vec::new();
    // per (src, dst, tag): unmatched sends (req id) and unmatched receives (req id)
    let mut queues: Queues = HashMap::new();

    // posts a send or a receive, matching it if possible
    let post = |reqs: &mut Vec<Req>,
                queues: &mut Queues,
                key: (u32, u32, i32),
                req: Req|
     -> Result<usize, String> {
        let id = reqs.len();
        let recv = req.recv;
        reqs.push(req);
        let q = queues.entry(key).or_default();
        let other = if recv {
            q.0.pop_front()
        } else {
            q.1.pop_front()
        };
        match other {
            Some(o) => {
                let (s, r) = if recv { (o, id) } else { (id, o) };
                if reqs[s].bytes != reqs[r].bytes {
                    return Err(format!(
                        "size mismatch on {key:?}: sent {} bytes, receive expects {}",
                        reqs[s].bytes, reqs[r].bytes
                    ));
                }
                let f = reqs[s].facts.take();
                reqs[r].facts = f;
                reqs[s].matched = true;
                reqs[r].matched = true;
            }
            None => {
                if recv {
                    q.1.push_back(id);
                } else {
                    q.0.push_back(id);
                }
            }
        }
        Ok(id)
    };

    loop {
        let mut progress = false;
        for r in 0..p {
            loop {
                let st = &mut ranks[r];
                if st.done {
                    break;
                }
                if !st.blocked.is_empty() {
                    if !st.blocked.iter().all(|&id| reqs[id].complete()) {
                        break;
                    }
                    for &id in &st.blocked {
                        if reqs[id].recv {
                            st.recv_bytes += reqs[id].bytes;
                            if let Some(f) = &reqs[id].facts {
                                bit_or(&mut st.know, f);
                            }
                        }
                    }
                    for &n in &st.blocked_numbered {
                        st.waited[n] = true;
                    }
                    st.blocked.clear();
                    st.blocked_numbered.clear();
                    progress = true;
                    continue;
                }
                let Some(op) = st.prog.next_op() else {
                    st.done = true;
                    progress = true;
                    break;
                };
                progress = true;
                let me = r as u32;
                match op {
                    POp::Send { peer, bytes, tag } | POp::Isend { peer, bytes, tag } => {
                        if peer as usize >= p {
                            return Err(format!("rank {r} sends to {peer}"));
                        }
                        let instant = !blocking || bytes < DETACHED;
                        let facts = Some(st.know.clone());
                        let id = post(
                            &mut reqs,
                            &mut queues,
                            (me, peer, tag),
                            Req {
                                recv: false,
                                bytes,
                                matched: false,
                                instant,
                                facts,
                            },
                        )?;
                        let st = &mut ranks[r];
                        if matches!(op, POp::Isend { .. }) {
                            st.numbered.push(id);
                            st.waited.push(false);
                        } else if !instant {
                            st.blocked.push(id);
                        }
                    }
                    POp::Recv { peer, bytes, tag } | POp::Irecv { peer, bytes, tag } => {
                        if peer as usize >= p {
                            return Err(format!("rank {r} receives from {peer}"));
                        }
                        let id = post(
                            &mut reqs,
                            &mut queues,
                            (peer, me, tag),
                            Req {
                                recv: true,
                                bytes,
                                matched: false,
                                instant: false,
                                facts: None,
                            },
                        )?;
                        let st = &mut ranks[r];
                        if matches!(op, POp::Irecv { .. }) {
                            st.numbered.push(id);
                            st.waited.push(false);
                        } else {
                            st.blocked.push(id);
                        }
                    }
                    POp::Wait(n) => {
                        let n = n as usize;
                        if n >= st.numbered.len() {
                            return Err(format!("rank {r} waits request {n} never posted"));
                        }
                        if st.waited[n] {
                            return Err(format!("rank {r} waits request {n} twice"));
                        }
                        st.blocked.push(st.numbered[n]);
                        st.blocked_numbered.push(n);
                    }
                    POp::WaitAll => {
                        for n in 0..st.numbered.len() {
                            if !st.waited[n] {
                                st.blocked.push(st.numbered[n]);
                                st.blocked_numbered.push(n);
                            }
                        }
                    }
                    POp::Compute(_) | POp::Combine(_) => {}
                }
            }
        }
        if !progress {
            break;
        }
    }
    let stuck: Vec<usize> = (0..p).filter(|&r| !ranks[r].done).collect();
    if !stuck.is_empty() {
        return Err(format!("deadlock: ranks {stuck:?} never finish"));
    }
    for (key, (s, rq)) in &queues {
        if !s.is_empty() || !rq.is_empty() {
            return Err(format!(
                "unmatched on {key:?}: {} sends, {} receives",
                s.len(),
                rq.len()
            ));
        }
    }
    for (r, st) in ranks.iter().enumerate() {
        if let Some(n) = st.waited.iter().position(|w| !w) {
            return Err(format!("rank {r} never waits request {n}"));
        }
    }
    Ok(Outcome {
        know: ranks.iter().map(|s| s.know.clone()).collect(),
        recv_bytes: ranks.iter().map(|s| s.recv_bytes).collect(),
    })
}

/// A call as every rank sees it.
#[derive(Clone, Debug)]
struct Call {
    kind: Collective,
    p: u32,
    root: u32,
    count: u64,
    dt: u64,
    /// Per-rank vectors: for alltoallv `matrix[s][d]` elements from s to d; for
    /// allgatherv/gatherv/scatterv/reduce_scatter `matrix[0]` is the count vector.
    matrix: Vec<Vec<u64>>,
}

impl Call {
    fn args(&self, rank: u32) -> CollArgs {
        let p = self.p as usize;
        let (mut count, mut recv_count) = (self.count, self.count);
        let (mut send_counts, mut recv_counts) = (Vec::new(), Vec::new());
        match self.kind {
            Collective::Alltoallv => {
                send_counts = self.matrix[rank as usize].clone();
                recv_counts = (0..p).map(|s| self.matrix[s][rank as usize]).collect();
            }
            Collective::Allgatherv | Collective::ReduceScatter => {
                recv_counts = self.matrix[0].clone();
                count = self.matrix[0][rank as usize];
                recv_count = count;
            }
            Collective::Gatherv => {
                count = self.matrix[0][rank as usize];
                if rank == self.root {
                    recv_counts = self.matrix[0].clone();
                }
            }
            Collective::Scatterv => {
                recv_count = self.matrix[0][rank as usize];
                if rank == self.root {
                    send_counts = self.matrix[0].clone();
                }
            }
            _ => {}
        }
        CollArgs {
            kind: self.kind,
            size: self.p,
            rank,
            root: self.root,
            count,
            recv_count,
            dtype_size: self.dt,
            recv_dtype_size: self.dt,
            send_counts,
            recv_counts,
        }
    }

    fn counts(&self) -> &[u64] {
        &self.matrix[0]
    }

    fn nfacts(&self) -> usize {
        let p = self.p as usize;
        match self.kind {
            Collective::Alltoall | Collective::Alltoallv | Collective::ReduceScatter => p * p,
            Collective::Bcast => 1,
            _ => p,
        }
    }

    fn init(&self, r: u32) -> Vec<usize> {
        let p = self.p as usize;
        let r = r as usize;
        match self.kind {
            Collective::Alltoall | Collective::Alltoallv | Collective::ReduceScatter => {
                (0..p).map(|d| r * p + d).collect()
            }
            Collective::Bcast => {
                if r == self.root as usize {
                    vec![0]
                } else {
                    vec![]
                }
            }
            Collective::Scatter | Collective::Scatterv => {
                if r == self.root as usize {
                    (0..p).collect()
                } else {
                    vec![]
                }
            }
            _ => vec![r],
        }
    }

    /// Checks where the data went.
    fn check(&self, out: &Outcome) -> Result<(), String> {
        let p = self.p as usize;
        let root = self.root as usize;
        let bytes = self.count * self.dt;
        let know = |r: usize, f: usize| bit_get(&out.know[r], f);
        let all = |r: usize| (0..p).all(|f| know(r, f));
        let fail = |what: String| Err(format!("{:?}: {what}", self.kind));
        match self.kind {
            Collective::Barrier | Collective::Allreduce | Collective::Allgather => {
                if self.kind == Collective::Barrier || bytes > 0 {
                    for r in 0..p {
                        if !all(r) {
                            return fail(format!("rank {r} misses contributions"));
                        }
                        if self.kind == Collective::Allgather
                            && out.recv_bytes[r] < (p as u64 - 1) * bytes
                        {
                            return fail(format!("rank {r} received {} bytes", out.recv_bytes[r]));
                        }
                    }
                }
            }
            Collective::Bcast => {
                if bytes > 0 {
                    for r in 0..p {
                        if !know(r, 0) {
                            return fail(format!("rank {r} never gets the root's data"));
                        }
                        if r != root && out.recv_bytes[r] < bytes {
                            return fail(format!(
                                "rank {r} received {} of {bytes} bytes",
                                out.recv_bytes[r]
                            ));
                        }
                    }
                }
            }
            Collective::Reduce => {
                if bytes > 0 && !all(root) {
                    return fail("root misses contributions".into());
                }
            }
            Collective::Gather | Collective::Gatherv => {
                if !all(root) {
                    return fail("root misses blocks".into());
                }
                if self.kind == Collective::Gather && out.recv_bytes[root] < (p as u64 - 1) * bytes
                {
                    return fail(format!("root received {} bytes", out.recv_bytes[root]));
                }
            }
            Collective::Scatter | Collective::Scatterv => {
                for r in 0..p {
                    if !know(r, r) {
                        return fail(format!("rank {r} never gets its block"));
                    }
                    if self.kind == Collective::Scatter && r != root && out.recv_bytes[r] < bytes {
                        return fail(format!("rank {r} received {} bytes", out.recv_bytes[r]));
                    }
                }
            }
            Collective::Allgatherv => {
                for r in 0..p {
                    for s in 0..p {
                        if self.counts()[s] > 0 && !know(r, s) {
                            return fail(format!("rank {r} misses block {s}"));
                        }
                    }
                }
            }
            Collective::Alltoall => {
                if bytes > 0 {
                    for d in 0..p {
                        for s in 0..p {
                            if !know(d, s * p + d) {
                                return fail(format!("block {s}->{d} not delivered"));
                            }
                        }
                        if out.recv_bytes[d] < (p as u64 - 1) * bytes {
                            return fail(format!("rank {d} received {} bytes", out.recv_bytes[d]));
                        }
                    }
                }
            }
            Collective::Alltoallv => {
                for d in 0..p {
                    for s in 0..p {
                        if self.matrix[s][d] > 0 && !know(d, s * p + d) {
                            return fail(format!("block {s}->{d} not delivered"));
                        }
                    }
                }
            }
            Collective::ReduceScatter => {
                for r in 0..p {
                    if self.counts()[r] > 0 {
                        for s in 0..p {
                            if !know(r, s * p + r) {
                                return fail(format!("block {r} misses rank {s}'s part"));
                            }
                        }
                    }
                }
            }
            Collective::Scan | Collective::Exscan => {
                if bytes > 0 {
                    for r in 0..p {
                        let upto = if self.kind == Collective::Scan {
                            r + 1
                        } else {
                            r
                        };
                        if (0..upto).any(|s| !know(r, s)) {
                            return fail(format!("rank {r} misses a lower rank"));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Builds and runs the call in both modes; returns the detached-mode outcome.
fn run(call: &Call, selector: Selector, forced: Option<&str>) -> Result<Outcome, String> {
    let mut first = None;
    for blocking in [false, true] {
        let progs = (0..call.p)
            .map(|r| program(&call.args(r), selector, forced).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let out = execute(progs, call.nfacts(), |r| call.init(r), blocking).map_err(|e| {
            format!(
                "{} mode: {e}",
                if blocking { "blocking" } else { "detached" }
            )
        })?;
        // Open MPI's recursive halving loses the data of exchanges where one side has
        // nothing to receive (Open MPI avoids it with zero counts; SimGrid's selector does
        // not): only the message pattern is checked then.
        let used = algorithms_used(&call.args(0), selector, forced).map_err(|e| e.to_string())?;
        let lossy = used.contains(&"ompi_basic_recursivehalving") && call.counts().contains(&0);
        if !lossy {
            call.check(&out)?;
        }
        if first.is_none() {
            first = Some(out);
        }
    }
    Ok(first.expect("ran"))
}

const SIZES: &[u32] = &[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32, 64, 100, 128,
];

fn roots(p: u32) -> Vec<u32> {
    let mut v = vec![0, p - 1, p / 2];
    if p > 5 {
        v.push(3);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// A deterministic pseudo-random count matrix.
fn matrix(p: u32, seed: u64, max: u64, zeros: bool) -> Vec<Vec<u64>> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..p)
        .map(|_| {
            (0..p)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let v = (x >> 33) % (max + 1);
                    if !zeros && v == 0 {
                        1
                    } else {
                        v
                    }
                })
                .collect()
        })
        .collect()
}

/// (count, dtype) pairs tried for a collective at size p.
fn counts(kind: Collective, p: u32) -> Vec<(u64, u64)> {
    let big = p <= 17;
    match kind {
        Collective::Barrier => vec![(0, 1)],
        Collective::Bcast => {
            let mut v = vec![(0, 1), (1, 1), (7, 1), (1000, 1), (8193, 1), (3001, 8)];
            if big {
                v.extend([(20000, 1), (40000, 1), (100000, 1), (400000, 1), (50000, 4)]);
            } else {
                v.push((70000, 1));
            }
            v
        }
        Collective::Reduce | Collective::Allreduce => {
            let mut v = vec![(0, 1), (1, 1), (7, 1), (1000, 1), (1001, 8), (4099, 4)];
            if big {
                v.extend([(20000, 1), (70000, 1), (140000, 8), (300000, 1)]);
            } else {
                v.push((70000, 1));
            }
            v
        }
        Collective::Scan | Collective::Exscan => vec![(0, 1), (5, 1), (1000, 8), (70000, 1)],
        Collective::Alltoall | Collective::Allgather | Collective::Gather | Collective::Scatter => {
            let mut v = vec![(0, 1), (1, 1), (100, 1), (1000, 8)];
            if big {
                v.extend([(70000, 1), (100000, 2)]);
            }
            v
        }
        _ => vec![(0, 1), (3, 1), (5, 8)],
    }
}

fn vector_calls(kind: Collective, p: u32, root: u32) -> Vec<Call> {
    let mk = |count: u64, dt: u64, matrix: Vec<Vec<u64>>| Call {
        kind,
        p,
        root,
        count,
        dt,
        matrix,
    };
    let mut calls = Vec::new();
    for (i, (max, zeros, dt)) in [
        (3u64, false, 1u64),
        (9, true, 8),
        (0, true, 1),
        (40000, true, 1),
        (300000, false, 1),
    ]
    .into_iter()
    .enumerate()
    {
        if max > 1000 && p > 17 {
            continue;
        }
        let mut m = matrix(p, i as u64 * 31 + p as u64, max, zeros);
        if kind != Collective::Alltoallv {
            m.truncate(1);
        }
        calls.push(mk(0, dt, m));
    }
    if kind != Collective::Alltoallv {
        // equal counts (reduce_scatter's regular case)
        calls.push(mk(0, 4, vec![vec![3; p as usize]]));
        calls.push(mk(0, 1, vec![vec![1; p as usize]]));
    }
    calls
}

/// Every call tried for `kind` at size `p`.
fn calls(kind: Collective, p: u32) -> Vec<Call> {
    let rooted = matches!(
        kind,
        Collective::Bcast
            | Collective::Reduce
            | Collective::Gather
            | Collective::Gatherv
            | Collective::Scatter
            | Collective::Scatterv
    );
    let rs = if rooted { roots(p) } else { vec![0] };
    let mut out = Vec::new();
    for root in rs {
        match kind {
            Collective::Alltoallv
            | Collective::Allgatherv
            | Collective::Gatherv
            | Collective::Scatterv
            | Collective::ReduceScatter => out.extend(vector_calls(kind, p, root)),
            _ => {
                for (count, dt) in counts(kind, p) {
                    out.push(Call {
                        kind,
                        p,
                        root,
                        count,
                        dt,
                        matrix: vec![vec![0; 1]],
                    });
                }
            }
        }
    }
    out
}

const KINDS: &[Collective] = &[
    Collective::Barrier,
    Collective::Bcast,
    Collective::Reduce,
    Collective::Allreduce,
    Collective::Alltoall,
    Collective::Alltoallv,
    Collective::Gather,
    Collective::Gatherv,
    Collective::Scatter,
    Collective::Scatterv,
    Collective::Allgather,
    Collective::Allgatherv,
    Collective::ReduceScatter,
    Collective::Scan,
    Collective::Exscan,
];

fn check_all_algorithms(kind: Collective) {
    let mut failures = Vec::new();
    for &alg in algorithms(kind) {
        for &p in SIZES {
            for call in calls(kind, p) {
                if let Err(e) = run(&call, Selector::Ompi, Some(alg)) {
                    failures.push(format!(
                        "{alg} p={p} root={} count={} dt={} {:?}: {e}",
                        call.root,
                        call.count,
                        call.dt,
                        if call.matrix[0].len() > 1 {
                            &call.matrix[0][..call.matrix[0].len().min(6)]
                        } else {
                            &[][..]
                        }
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

fn check_selector(kind: Collective, selector: Selector) {
    let mut failures = Vec::new();
    for &p in SIZES {
        for call in calls(kind, p) {
            if let Err(e) = run(&call, selector, None) {
                let name = algorithm_name(&call.args(0), selector, None).unwrap();
                failures.push(format!(
                    "{selector:?} ({name}) p={p} root={} count={} dt={}: {e}",
                    call.root, call.count, call.dt
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures[..failures.len().min(40)].join("\n")
    );
}

macro_rules! per_kind {
    ($($name:ident => $kind:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_all_algorithms($kind);
                check_selector($kind, Selector::Ompi);
                check_selector($kind, Selector::Mpich);
            }
        )*
    };
}

per_kind! {
    sim_barrier => Collective::Barrier,
    sim_bcast => Collective::Bcast,
    sim_reduce => Collective::Reduce,
    sim_allreduce => Collective::Allreduce,
    sim_alltoall => Collective::Alltoall,
    sim_alltoallv => Collective::Alltoallv,
    sim_gather => Collective::Gather,
    sim_gatherv => Collective::Gatherv,
    sim_scatter => Collective::Scatter,
    sim_scatterv => Collective::Scatterv,
    sim_allgather => Collective::Allgather,
    sim_allgatherv => Collective::Allgatherv,
    sim_reduce_scatter => Collective::ReduceScatter,
    sim_scan => Collective::Scan,
    sim_exscan => Collective::Exscan,
}

#[test]
fn every_kind_is_covered() {
    assert_eq!(KINDS.len(), 15);
}
