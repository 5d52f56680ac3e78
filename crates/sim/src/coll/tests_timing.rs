//! Timing check of the message patterns against SimGrid 3.32's printed times: a minimal model
//! of the note's flat cluster `c16.xml` (one rank per node, each node with its own 1 GB/s,
//! 10 µs up and down links, so every route has 20 µs of latency) and of CM02 as the design
//! note describes it (§0, §2, §5): a message is a flow of `S + 16` bytes that starts when both
//! sides are posted, waits the route latency, then gets a max-min fair share of its links,
//! consuming 5 % of its rate on the reverse route's links (cross-traffic); sends below 64 KiB
//! are detached. Reductions cost nothing.
//!
//! Two tables: the note's regression data (§13.1, selector's choices) and SimGrid's times
//! for forced algorithms measured with `smpirun -replay` on the same platform. This model is
//! not the simulator's network model and is simpler than SimGrid's (in a few concurrent
//! large-segment cases, e.g. `reduce ompi_chain` above two 64 KiB segments, it differs from
//! SimGrid; those cases are not in the tables). The programs themselves were checked against
//! SimGrid on those cases too: replaying their point-to-point transcription with `smpirun`
//! gives SimGrid's own collective time to the last printed digit.

#![allow(clippy::needless_range_loop)]

use super::*;

/// Unmatched sends and receives (request ids) per (source, destination, tag).
type Queues = std::collections::HashMap<(usize, usize, i32), (Vec<usize>, Vec<usize>)>;

const BW: f64 = 1e9;
const LAT: f64 = 20e-6;
const ENVELOPE: f64 = 16.0;
const DETACHED: u64 = 65536;

#[derive(Clone, Copy, PartialEq)]
enum ReqKind {
    Send,
    Recv,
}

struct Req {
    bytes: u64,
    flow: Option<usize>,
    done_at: Option<f64>,
}

struct Flow {
    src: usize,
    dst: usize,
    active_at: f64,
    left: f64,
    rate: f64,
    done: bool,
    reqs: [usize; 2],
}

struct Rank {
    prog: Box<dyn Program>,
    numbered: Vec<usize>,
    waited: Vec<bool>,
    blocked: Vec<usize>,
    blocked_numbered: Vec<usize>,
    done: Option<f64>,
}

/// Max-min fair rates (progressive filling, equal weights) of the flows in `active`.
fn share(flows: &mut [Flow], active: &[usize], p: usize) {
    // constraints: up links 0..p, down links p..2p
    let mut uses: Vec<Vec<(usize, f64)>> = vec![Vec::new(); 2 * p];
    for &f in active {
        let (s, d) = (flows[f].src, flows[f].dst);
        uses[s].push((f, 1.0));
        uses[p + d].push((f, 1.0));
        uses[d].push((f, 0.05));
        uses[p + s].push((f, 0.05));
    }
    let mut fixed = vec![false; flows.len()];
    let mut remaining: Vec<f64> = vec![BW; 2 * p];
    let mut live: Vec<bool> = uses.iter().map(|u| !u.is_empty()).collect();
    let mut unfixed = active.len();
    while unfixed > 0 {
        let mut best: Option<(f64, usize)> = None;
        for c in 0..2 * p {
            if !live[c] {
                continue;
            }
            let w: f64 = uses[c]
                .iter()
                .filter(|(f, _)| !fixed[*f])
                .map(|(_, k)| k)
                .sum();
            if w <= 0.0 {
                live[c] = false;
                continue;
            }
            let r = remaining[c] / w;
            if best.is_none_or(|(b, _)| r < b) {
                best = Some((r, c));
            }
        }
        let (r, c) = best.expect("a constraint binds every flow");
        let mut fix: Vec<usize> = uses[c]
            .iter()
            .filter(|(f, _)| !fixed[*f])
            .map(|(f, _)| *f)
            .collect();
        fix.sort_unstable();
        fix.dedup();
        for f in fix {
            fixed[f] = true;
            flows[f].rate = r;
            unfixed -= 1;
            for (cc, u) in uses.iter().enumerate() {
                for &(g, k) in u {
                    if g == f {
                        remaining[cc] -= k * r;
                    }
                }
            }
        }
        live[c] = false;
    }
}

/// Simulated end time of one collective call on the flat 20 µs / 1 GB/s cluster.
fn simulate(call: impl Fn(u32) -> CollArgs, p: u32) -> f64 {
    simulate_forced(call, p, None)
}

/// [`simulate`] with a forced algorithm.
fn simulate_forced(call: impl Fn(u32) -> CollArgs, p: u32, forced: Option<&str>) -> f64 {
    let p = p as usize;
    let mut ranks: Vec<Rank> = (0..p as u32)
        .map(|r| Rank {
            prog: program(&call(r), Selector::Ompi, forced).unwrap(),
            numbered: Vec::new(),
            waited: Vec::new(),
            blocked: Vec::new(),
            blocked_numbered: Vec::new(),
            done: None,
        })
        .collect();
    let mut reqs: Vec<Req> = Vec::new();
    let mut flows: Vec<Flow> = Vec::new();
    let mut queues: Queues = Default::default();
    let mut now = 0.0f64;
    loop {
        // advance every rank as far as it goes at `now`
        let mut progress = true;
        while progress {
            progress = false;
            for r in 0..p {
                loop {
                    let st = &mut ranks[r];
                    if st.done.is_some() {
                        break;
                    }
                    if !st.blocked.is_empty() {
                        if st.blocked.iter().all(|&id| reqs[id].done_at.is_some()) {
                            for &n in &st.blocked_numbered {
                                st.waited[n] = true;
                            }
                            st.blocked.clear();
                            st.blocked_numbered.clear();
                            progress = true;
                            continue;
                        }
                        break;
                    }
                    let Some(op) = st.prog.next_op() else {
                        st.done = Some(now);
                        progress = true;
                        break;
                    };
                    progress = true;
                    let (kind, peer, bytes, tag, blocking) = match op {
                        POp::Send { peer, bytes, tag } => (ReqKind::Send, peer, bytes, tag, true),
                        POp::Isend { peer, bytes, tag } => (ReqKind::Send, peer, bytes, tag, false),
                        POp::Recv { peer, bytes, tag } => (ReqKind::Recv, peer, bytes, tag, true),
                        POp::Irecv { peer, bytes, tag } => (ReqKind::Recv, peer, bytes, tag, false),
                        POp::Wait(n) => {
                            st.blocked.push(st.numbered[n as usize]);
                            st.blocked_numbered.push(n as usize);
                            continue;
                        }
                        POp::WaitAll => {
                            for n in 0..st.numbered.len() {
                                if !st.waited[n] {
                                    st.blocked.push(st.numbered[n]);
                                    st.blocked_numbered.push(n);
                                }
                            }
                            continue;
                        }
                        POp::Compute(_) | POp::Combine(_) => continue,
                    };
                    let id = post(
                        &mut reqs,
                        &mut flows,
                        &mut queues,
                        now,
                        r,
                        (kind, peer, bytes, tag),
                    );
                    let st = &mut ranks[r];
                    if blocking {
                        st.blocked.push(id);
                    } else {
                        st.numbered.push(id);
                        st.waited.push(false);
                    }
                }
            }
        }
        if ranks.iter().all(|r| r.done.is_some()) {
            return ranks.iter().map(|r| r.done.unwrap()).fold(0.0, f64::max);
        }
        now = next_event(&mut flows, &mut reqs, now, p);
    }
}

/// Posts a request of rank `r` at `now` and, when its match is already posted, starts
/// their flow; returns the request's id.
fn post(
    reqs: &mut Vec<Req>,
    flows: &mut Vec<Flow>,
    queues: &mut Queues,
    now: f64,
    r: usize,
    (kind, peer, bytes, tag): (ReqKind, u32, u64, i32),
) -> usize {
    let id = reqs.len();
    let detached = kind == ReqKind::Send && bytes < DETACHED;
    reqs.push(Req {
        bytes,
        flow: None,
        done_at: if detached { Some(now) } else { None },
    });
    let key = if kind == ReqKind::Send {
        (r, peer as usize, tag)
    } else {
        (peer as usize, r, tag)
    };
    let q = queues.entry(key).or_default();
    let other = if kind == ReqKind::Send {
        &mut q.1
    } else {
        &mut q.0
    };
    if other.is_empty() {
        if kind == ReqKind::Send {
            q.0.push(id);
        } else {
            q.1.push(id);
        }
    } else {
        let o = other.remove(0);
        let (s, rv) = if kind == ReqKind::Send {
            (id, o)
        } else {
            (o, id)
        };
        assert_eq!(reqs[s].bytes, reqs[rv].bytes);
        let f = flows.len();
        flows.push(Flow {
            src: key.0,
            dst: key.1,
            active_at: now + LAT,
            left: reqs[s].bytes as f64 + ENVELOPE,
            rate: 0.0,
            done: false,
            reqs: [s, rv],
        });
        reqs[s].flow = Some(f);
        reqs[rv].flow = Some(f);
    }
    id
}

/// Moves time to the next event (a flow leaving its latency phase or a flow ending), marks
/// the requests of the flows done by then, and returns the new time.
fn next_event(flows: &mut [Flow], reqs: &mut [Req], now: f64, p: usize) -> f64 {
    let active: Vec<usize> = (0..flows.len())
        .filter(|&f| !flows[f].done && flows[f].active_at <= now)
        .collect();
    share(flows, &active, p);
    let mut next = f64::INFINITY;
    for f in 0..flows.len() {
        if flows[f].done {
            continue;
        }
        if flows[f].active_at > now {
            next = next.min(flows[f].active_at);
        } else {
            next = next.min(now + flows[f].left / flows[f].rate);
        }
    }
    assert!(next.is_finite(), "deadlock");
    let dt = next - now;
    for &f in &active {
        flows[f].left -= flows[f].rate * dt;
    }
    let now = next;
    for f in 0..flows.len() {
        let fl = &mut flows[f];
        if !fl.done && fl.active_at <= now && fl.left <= 1e-6 {
            fl.done = true;
            for &q in &fl.reqs {
                if reqs[q].done_at.is_none() {
                    reqs[q].done_at = Some(now);
                }
            }
        }
    }
    now
}

fn a(kind: Collective, p: u32, r: u32, count: u64) -> CollArgs {
    CollArgs {
        kind,
        size: p,
        rank: r,
        root: 0,
        count,
        recv_count: count,
        dtype_size: 1,
        recv_dtype_size: 1,
        send_counts: Vec::new(),
        recv_counts: Vec::new(),
    }
}

fn v(kind: Collective, p: u32, r: u32, c: u64) -> CollArgs {
    let mut x = a(kind, p, r, c);
    x.recv_counts = vec![c; p as usize];
    x.send_counts = vec![c; p as usize];
    x
}

#[test]
fn regression_times_of_the_design_note() {
    use Collective::*;
    type Case = (u32, Collective, u64, bool, f64);
    // (ranks, collective, bytes, vector form, SimGrid's printed time)
    let cases: &[Case] = &[
        (4, Barrier, 0, false, 0.000040096000),
        (4, Bcast, 8, false, 0.000040072000),
        (4, Bcast, 1000, false, 0.000043048000),
        (4, Bcast, 5000, false, 0.000055048000),
        (4, Bcast, 20000, false, 0.000133243200),
        (4, Bcast, 100000, false, 0.000377371200),
        (4, Bcast, 1048576, false, 0.001847680000),
        (4, Bcast, 4000000, false, 0.005122696800),
        (4, Reduce, 8, false, 0.000040048000),
        (4, Reduce, 1000, false, 0.000042032000),
        (4, Reduce, 10000, false, 0.000060032000),
        (4, Reduce, 100000, false, 0.000240032000),
        (4, Reduce, 1000000, false, 0.002040032000),
        (4, Allreduce, 8, false, 0.000120113400),
        (4, Allreduce, 1000, false, 0.000042133600),
        (4, Allreduce, 10000, false, 0.000095817200),
        (4, Allreduce, 100000, false, 0.000237567200),
        (4, Allreduce, 1000000, false, 0.001655067200),
        (4, Allreduce, 20000000, false, 0.031580067200),
        (4, Alltoall, 8, false, 0.000020075600),
        (4, Alltoall, 1000, false, 0.000023200400),
        (4, Alltoall, 10000, false, 0.000051550400),
        (4, Alltoall, 100000, false, 0.000335050400),
        (4, Alltoall, 600000, false, 0.001950050400),
        (4, Gather, 1000, false, 0.000043032000),
        (4, Gather, 100000, false, 0.000360048000),
        (4, Scatter, 1000, false, 0.000044048000),
        (4, Scatter, 100000, false, 0.000320048000),
        (4, Allgather, 1000, false, 0.000043183600),
        (4, Allgather, 100000, false, 0.000355033600),
        (4, Scan, 1000, false, 0.000023048000),
        (4, Exscan, 1000, false, 0.000023048000),
        (4, Allgatherv, 100, true, 0.000060696000),
        (4, Alltoallv, 1000, true, 0.000023200400),
        (4, Alltoallv, 0, true, 0.000020050400),
        (16, Barrier, 0, false, 0.000080067200),
        (16, Bcast, 4096, false, 0.000121120000),
        (16, Bcast, 5000, false, 0.000130160000),
        (16, Bcast, 20000, false, 0.000280160000),
        (16, Bcast, 100000, false, 0.000480064000),
        (16, Bcast, 1048576, false, 0.002175363200),
        (16, Bcast, 4000000, false, 0.007847631200),
        (16, Reduce, 8, false, 0.000080096000),
        (16, Reduce, 1000, false, 0.000084064000),
        (16, Reduce, 10000, false, 0.000483814492),
        (16, Reduce, 100000, false, 0.000480064000),
        (16, Reduce, 1000000, false, 0.004080064000),
        (16, Allreduce, 64, false, 0.000080336000),
        (16, Allreduce, 100, false, 0.000080487200),
        (16, Allreduce, 1000, false, 0.000084267200),
        (16, Allreduce, 4095, false, 0.000097266200),
        (16, Allreduce, 4096, false, 0.000168198400),
        (16, Allreduce, 5000, false, 0.000170026400),
        (16, Allreduce, 10000, false, 0.000179821900),
        (16, Allreduce, 16000, false, 0.000191634400),
        (16, Allreduce, 100000, false, 0.000357009400),
        (16, Allreduce, 1000000, false, 0.002128884400),
        (16, Allreduce, 20000000, false, 0.039535134400),
        (16, Alltoall, 8, false, 0.000080336000),
        (16, Alltoall, 1000, false, 0.000036002000),
        (16, Alltoall, 10000, false, 0.000177752000),
        (16, Alltoall, 100000, false, 0.001595252000),
        (16, Gather, 1000, false, 0.000095064000),
        (16, Gather, 100000, false, 0.001580064000),
        (16, Scatter, 1000, false, 0.000106160000),
        (16, Scatter, 100000, false, 0.001520240000),
        (16, Allgather, 1000, false, 0.000095817200),
        (16, Allgather, 100000, false, 0.001655067200),
        (16, Allgatherv, 1000, true, 0.000095817200),
        (16, Alltoallv, 1000, true, 0.000036002000),
        (16, Scan, 1000, false, 0.000035240000),
        (16, Exscan, 1000, false, 0.000035240000),
        (8, Bcast, 40000, false, 0.000399246400),
    ];
    let mut bad = Vec::new();
    let mut worst = 0.0f64;
    for &(p, kind, bytes, vector, want) in cases {
        let got = simulate(
            |r| {
                if vector {
                    v(kind, p, r, bytes)
                } else {
                    a(kind, p, r, bytes)
                }
            },
            p,
        );
        worst = worst.max(((got - want) / want).abs());
        if ((got - want) / want).abs() > 1e-9 {
            let alg = algorithm_name(&a(kind, p, 0, bytes), Selector::Ompi, None).unwrap_or("?");
            bad.push(format!(
                "p={p} {kind:?} {bytes} ({alg}): got {got:.12}, SimGrid {want:.12}"
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} cases differ:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
    eprintln!(
        "{} cases, largest relative deviation {worst:e}",
        cases.len()
    );
}

/// Parses a case `p collective algorithm size [root]`: `size` is the count (every rank) or a
/// comma-separated per-rank count vector; `-` as algorithm means the selector's choice.
fn parse_case(line: &str) -> (u32, Collective, Option<String>, Vec<u64>, u32) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let p: u32 = f[0].parse().unwrap();
    let kind = Collective::from_name(f[1]).unwrap_or_else(|| panic!("{}", f[1]));
    let forced = (f[2] != "-").then(|| f[2].to_string());
    let counts: Vec<u64> = if f[3].contains(',') {
        f[3].split(',').map(|x| x.parse().unwrap()).collect()
    } else {
        vec![f[3].parse().unwrap(); p as usize]
    };
    let root: u32 = f.get(4).map_or(0, |x| x.parse().unwrap());
    (p, kind, forced, counts, root)
}

/// SimGrid 3.32's printed times for forced algorithms on the same platform (a 32-node
/// version of `c16.xml`; `smpirun -replay` with `--cfg=smpi/<collective>:<algorithm>`,
/// trace `init` without argument, so sizes are bytes; v-collectives use the count vector on
/// every rank). Format: `p collective algorithm size root time`.
const FORCED_SIMGRID: &[&str] = &[
    "3 allgather NTSLR_NB 10 0 0.000040054600",
    "8 allgather NTSLR_NB 10 0 0.000140191100",
    "16 allgather NTSLR_NB 100000 0 0.001875252000",
    "3 allgather bruck 10 0 0.000040054600",
    "8 allgather bruck 10 0 0.000060123900",
    "16 allgather bruck 100000 0 0.001655067200",
    "3 allgather ompi_neighborexchange 10 0 0.000040054600",
    "8 allgather ompi_neighborexchange 10 0 0.000080140700",
    "16 allgather ompi_neighborexchange 100000 0 0.001735134400",
    "4 allgather pair 10 0 0.000060081900",
    "8 allgather pair 1000 0 0.000147467600",
    "16 allgather pair 100000 0 0.001875252000",
    "3 allgather rdb 10 0 0.000060080600",
    "8 allgather rdb 10 0 0.000060123900",
    "16 allgather rdb 100000 0 0.001655067200",
    "3 allgather ring 10 0 0.000040054600",
    "8 allgather ring 10 0 0.000140191100",
    "16 allgather ring 100000 0 0.001875252000",
    "3 allgatherv GB 1,38,75 0 0.000040327000",
    "5 allgatherv GB 1,38,75,112,149 0 0.000061098000",
    "16 allgatherv GB 100000 0 0.002000304000",
    "3 allgatherv mpich_rdb 1,38,75 0 0.000060239600",
    "8 allgatherv mpich_rdb 1,38,75,112,149,186,223,260 0 0.000061650600",
    "16 allgatherv mpich_rdb 100000 0 0.001655067200",
    "3 allgatherv mpich_ring 1,38,75 0 0.000040187400",
    "5 allgatherv mpich_ring 100000 0 0.000500067200",
    "16 allgatherv mpich_ring 100000 0 0.001875252000",
    "3 allgatherv ompi_bruck 1,38,75 0 0.000040150400",
    "8 allgatherv ompi_bruck 1,38,75,112,149,186,223,260 0 0.000061646988",
    "16 allgatherv ompi_bruck 100000 0 0.001655067200",
    "3 allgatherv ompi_neighborexchange 1,38,75 0 0.000040150400",
    "5 allgatherv ompi_neighborexchange 1000 0 0.000084267200",
    "16 allgatherv ompi_neighborexchange 100000 0 0.001735134400",
    "3 allgatherv ring 1,38,75 0 0.000040150400",
    "5 allgatherv ring 1000 0 0.000084267200",
    "16 allgatherv ring 100000 0 0.001875252000",
    "3 allreduce lr 100 0 0.000160273800",
    "7 allreduce lr 100 0 0.000320522000",
    "16 allreduce lr 9000000 0 0.018319254000",
    "3 allreduce ompi_ring_segmented 100 0 0.000160273800",
    "7 allreduce ompi_ring_segmented 100 0 0.000320522000",
    "16 allreduce ompi_ring_segmented 9000000 0 0.018319254000",
    "3 allreduce rab_rdb 100 0 0.000080370600",
    "7 allreduce rab_rdb 1000000 0 0.003695099200",
    "16 allreduce rab_rdb 9000000 0 0.017878884400",
    "3 allreduce rdb 100 0 0.000060353800",
    "7 allreduce rdb 1000000 0 0.004180065600",
    "16 allreduce rdb 9000000 0 0.037880067200",
    "3 allreduce redbcast 100 0 0.000060464000",
    "5 allreduce redbcast 20000 0 0.000269888800",
    "16 allreduce redbcast 9000000 0 0.053537070200",
    "3 alltoall basic_linear 10 0 0.000020054600",
    "8 alltoall basic_linear 10 0 0.000020191100",
    "16 alltoall basic_linear 100000 0 0.001595252000",
    "3 alltoall bruck 10 0 0.000040054600",
    "8 alltoall bruck 10 0 0.000060176400",
    "16 alltoall bruck 100000 0 0.003440067200",
    "3 alltoall mvapich2_scatter_dest 10 0 0.000020081900",
    "8 alltoall mvapich2_scatter_dest 10 0 0.000040218400",
    "16 alltoall mvapich2_scatter_dest 100000 0 0.001760268800",
    "4 alltoall pair 10 0 0.000060081900",
    "8 alltoall pair 1000 0 0.000147467600",
    "16 alltoall pair 100000 0 0.001875252000",
    "3 alltoall ring 10 0 0.000040054600",
    "8 alltoall ring 10 0 0.000140191100",
    "16 alltoall ring 100000 0 0.001875252000",
    "3 alltoallv bruck 10 0 0.000020054600",
    "8 alltoallv bruck 10 0 0.000040191100",
    "16 alltoallv bruck 100000 0 0.001655252000",
    "3 alltoallv ompi_basic_linear 10 0 0.000020054600",
    "8 alltoallv ompi_basic_linear 10 0 0.000020191100",
    "16 alltoallv ompi_basic_linear 100000 0 0.001595252000",
    "4 alltoallv pair 10 0 0.000060081900",
    "8 alltoallv pair 1000 0 0.000147467600",
    "16 alltoallv pair 100000 0 0.001875252000",
    "3 alltoallv ring 10 0 0.000040054600",
    "8 alltoallv ring 10 0 0.000140191100",
    "16 alltoallv ring 100000 0 0.001875252000",
    "3 barrier ompi_basic_linear 0 0 0.000040064000",
    "8 barrier ompi_basic_linear 0 0 0.000040224000",
    "16 barrier ompi_basic_linear 0 0 0.000040480000",
    "3 barrier ompi_bruck 0 0 0.000040033600",
    "8 barrier ompi_bruck 0 0 0.000060050400",
    "16 barrier ompi_bruck 0 0 0.000080067200",
    "3 barrier ompi_doublering 0 0 0.000120096000",
    "8 barrier ompi_doublering 0 0 0.000320256000",
    "16 barrier ompi_doublering 0 0 0.000640512000",
    "3 barrier ompi_recursivedoubling 0 0 0.000060048800",
    "8 barrier ompi_recursivedoubling 0 0 0.000060050400",
    "16 barrier ompi_recursivedoubling 0 0 0.000080067200",
    "3 barrier ompi_tree 0 0 0.000060064000",
    "8 barrier ompi_tree 0 0 0.000120144000",
    "16 barrier ompi_tree 0 0 0.000160224000",
    "3 bcast NTSB 1000 0 0.000022032000",
    "7 bcast NTSB 1500000 0 0.006070060000",
    "16 bcast NTSB 20000 15 0.000363984000",
    "3 bcast NTSL 1000 0 0.000042032000",
    "7 bcast NTSL 1500000 0 0.009153484000",
    "16 bcast NTSL 20000 15 0.000964368000",
    "3 bcast binomial_tree 1000 0 0.000022032000",
    "7 bcast binomial_tree 1500000 0 0.004560048000",
    "16 bcast binomial_tree 20000 15 0.000280160000",
    "3 bcast flattree 1000 0 0.000022032000",
    "7 bcast flattree 1500000 0 0.009020096000",
    "16 bcast flattree 20000 15 0.000320240000",
    "3 bcast ompi_pipeline 1000 0 0.000042032000",
    "7 bcast ompi_pipeline 1500000 0 0.002765465600",
    "16 bcast ompi_pipeline 20000 15 0.000600240000",
    "3 bcast ompi_split_bintree 100000 0 0.001154084800",
    "5 bcast ompi_split_bintree 1500000 4 0.003527747348",
    "16 bcast ompi_split_bintree 20000 15 0.000311798000",
    "3 bcast scatter_LR_allgather 1000 0 0.000061433000",
    "7 bcast scatter_LR_allgather 100000 6 0.000379215773",
    "16 bcast scatter_LR_allgather 20000 15 0.000432662800",
    "3 bcast scatter_rdb_allgather 1000 0 0.000081778900",
    "7 bcast scatter_rdb_allgather 1500000 0 0.003642269700",
    "16 bcast scatter_rdb_allgather 20000 15 0.000212414700",
    "3 exscan - 10 0 0.000020052000",
    "8 exscan - 10 0 0.000020182000",
    "16 exscan - 100000 0 0.001520240000",
    "3 gather ompi_basic_linear 10 1 0.000040052000",
    "8 gather ompi_basic_linear 10 4 0.000140182000",
    "16 gather ompi_basic_linear 100000 8 0.001800240000",
    "3 gather ompi_binomial 10 1 0.000040052000",
    "8 gather ompi_binomial 10 4 0.000060118000",
    "16 gather ompi_binomial 100000 8 0.001580064000",
    "3 gather ompi_linear_sync 10 1 0.000080116000",
    "8 gather ompi_linear_sync 10 4 0.000280406000",
    "16 gather ompi_linear_sync 100000 8 0.001618235200",
    "3 reduce binomial 1000 0 0.000042032000",
    "7 reduce binomial 1500000 0 0.004560048000",
    "16 reduce binomial 20000 14 0.000160064000",
    "3 reduce ompi_basic_linear 1000 0 0.000042032000",
    "7 reduce ompi_basic_linear 1500000 0 0.009120096000",
    "16 reduce ompi_basic_linear 20000 14 0.000600240000",
    "3 reduce ompi_binary 1000 0 0.000022032000",
    "7 reduce ompi_binary 1500000 0 0.004080437600",
    "16 reduce ompi_binary 20000 14 0.000180096000",
    "3 reduce ompi_binomial 1000 0 0.000022032000",
    "7 reduce ompi_binomial 100000 5 0.000340048000",
    "16 reduce ompi_binomial 1500000 14 0.006080064000",
    "3 reduce ompi_chain 1000 0 0.000042032000",
    "5 reduce ompi_chain 20000 0 0.000100048000",
    "16 reduce ompi_chain 20000 14 0.000280144000",
    "3 reduce ompi_in_order_binary 1000 0 0.000043048000",
    "7 reduce ompi_in_order_binary 1500000 0 0.007560080000",
    "16 reduce ompi_in_order_binary 20000 14 0.000220112000",
    "3 reduce ompi_pipeline 1000 0 0.000042032000",
    "7 reduce ompi_pipeline 1500000 0 0.002473448000",
    "16 reduce ompi_pipeline 20000 14 0.000531704000",
    "3 reducescatter default 1,38,75 0 0.000060209350",
    "5 reducescatter default 100000 0 0.002440128000",
    "16 reducescatter default 100000 0 0.025540480000",
    "3 reducescatter mpich_pair 1,38,75 0 0.000040187400",
    "5 reducescatter mpich_pair 1000 0 0.000084267200",
    "16 reducescatter mpich_pair 100000 0 0.001875252000",
    "3 reducescatter mpich_rdb 1,38,75 0 0.000060209350",
    "5 reducescatter mpich_rdb 100000 0 0.002040082400",
    "16 reducescatter mpich_rdb 100000 0 0.005225067200",
    "3 reducescatter ompi_basic_recursivehalving 1,38,75 0 0.000060204750",
    "5 reducescatter ompi_basic_recursivehalving 100000 0 0.001195065600",
    "16 reducescatter ompi_basic_recursivehalving 100000 0 0.001655067200",
    "3 reducescatter ompi_butterfly 1,38,75 0 0.000060204750",
    "5 reducescatter ompi_butterfly 100000 0 0.001200066400",
    "16 reducescatter ompi_butterfly 100000 0 0.001780084000",
    "3 reducescatter ompi_ring 1,38,75 0 0.000040185550",
    "5 reducescatter ompi_ring 100000 0 0.000500067200",
    "16 reducescatter ompi_ring 100000 0 0.001875252000",
    "3 scan - 10 0 0.000020052000",
    "8 scan - 10 0 0.000020182000",
    "16 scan - 100000 0 0.001520240000",
    "3 scatter ompi_basic_linear 10 1 0.000020052000",
    "8 scatter ompi_basic_linear 10 4 0.000020182000",
    "16 scatter ompi_basic_linear 100000 8 0.001800240000",
    "3 scatter ompi_binomial 10 1 0.000020052000",
    "8 scatter ompi_binomial 10 4 0.000060206000",
    "16 scatter ompi_binomial 100000 8 0.002800160000",
    "3 scatter ompi_linear_nb 10 1 0.000020052000",
    "8 scatter ompi_linear_nb 10 4 0.000020182000",
    "16 scatter ompi_linear_nb 100000 8 0.001520240000",
];

#[test]
fn forced_algorithms_reproduce_simgrid_times() {
    let mut bad = Vec::new();
    for line in FORCED_SIMGRID {
        let (case, want) = line.rsplit_once(' ').unwrap();
        let want: f64 = want.parse().unwrap();
        let (p, kind, forced, counts, root) = parse_case(case);
        let mk = |r: u32| {
            let mut x = a(kind, p, r, counts[r as usize]);
            x.root = root;
            x.recv_counts = counts.clone();
            x.send_counts = counts.clone();
            x
        };
        let got = simulate_forced(mk, p, forced.as_deref());
        // SimGrid prints 12 decimals
        if (got - want).abs() > 1e-12 + 1e-9 * want {
            bad.push(format!("{case}: got {got:.12}, SimGrid {want:.12}"));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        FORCED_SIMGRID.len(),
        bad.join("\n")
    );
}
