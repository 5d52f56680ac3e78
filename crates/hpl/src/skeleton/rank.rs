//! One rank of the skeleton as a state machine: it generates a panel step at a time
//! (factorization, broadcast, swaps, update) into a small queue of items, expands them
//! into actions as the simulation asks for them, and reacts to the outcomes of its probes
//! and clock readings.

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use mpiscope_sim::workload::{Action, Outcome, RankWorkload, ReqHandle, WorkloadError};

use crate::dat::{Pivots, Polls, Run, Swap};

use super::grid::{local, sub};
use super::kernels::Kernels;
use super::op::Op;
use super::phase;
use super::plans::{bcast_plan, pivot_plan, share, swap00_plan, swap01_plan, Msg};

const TAG_BCAST: u32 = 1000;
const TAG_SWAP: u32 = 2000;
const TAG_PIVOT: u32 = 3000;
/// How much of a strided message Open MPI's shared-memory transport moves per scheduling
/// opportunity of its two ends when their cores are time-shared with computing ranks:
/// `scripts/probe-oversubscribed-transfer.sh` moves 2 MiB in 128 ms, 64 KiB per 4 ms tick.
const PACK_FRAGMENT_BYTES: u64 = 65536;

/// One queued thing to do.
#[derive(Debug)]
enum Item {
    Act(Op),
    /// The following actions are of this [`phase`] (queued only when [`Run::phases`]).
    Phase(u32),
    /// HPL_bcast: make progress on the pending broadcast without blocking.
    Poll,
    /// Loop on HPL_bcast until the pending broadcast is done.
    Finish,
    /// Column `i` (and the following ones) of panel `k`'s factorization.
    Factor {
        k: u64,
        i: u64,
    },
    /// Columns 2 to jb - 2 of panel `k`'s factorization, aggregated ([`Pivots::Aggregated`]):
    /// their flops, and the second column's measured exchange time for each.
    FactorMiddle {
        k: u64,
    },
    /// The trailing update's remaining columns: chunks of nb while the broadcast is
    /// pending and polled, then the rest at once.
    Update {
        left: u64,
        mp: u64,
        jb: u64,
        poll: bool,
    },
}

/// The pending broadcast.
#[derive(Debug)]
struct Pending {
    probe: Option<(u32, i64)>,
    actions: Vec<Op>,
}

/// The process grid and the run, shared by ranks.
#[derive(Debug, Clone)]
pub(super) struct Setup {
    pub(super) run: Run,
    pub(super) kernels: Kernels,
    pub(super) npanels: u64,
    /// Panels started by rank (0, 0), for a progress display.
    pub(super) progress: Option<Arc<AtomicU64>>,
}

impl Setup {
    fn world(&self, r: u32, c: u32) -> u32 {
        if self.run.row_major {
            r * self.run.q + c
        } else {
            c * self.run.p + r
        }
    }
    fn j(&self, k: u64) -> u64 {
        k * self.run.nb
    }
    fn jb(&self, k: u64) -> u64 {
        self.run.nb.min(self.run.n - self.j(k))
    }
}

/// One rank of the skeleton.
pub(super) struct HplRank {
    s: Arc<Setup>,
    row: u32,
    col: u32,
    speed: f64,
    queue: VecDeque<Item>,
    pending: Option<Pending>,
    awaiting_probe: bool,
    /// The next panel step to generate.
    k: u64,
    finished: bool,
    next_req: ReqHandle,
    /// Simulated clock readings (picoseconds) not yet used.
    clocks: Vec<u64>,
    /// The update whose polled chunks run as one [`Action::ComputeWhilePolling`]: its
    /// columns left before it, `mp` and `jb`.
    polled_update: Option<(u64, u64, u64)>,
    /// The [`phase`] of the last action returned ([`Run::phases`]).
    phase: u32,
    /// The action to return after the [`Action::Callsite`] that marks its new phase.
    stash: Option<Box<Action>>,
}

impl HplRank {
    /// Rank (`row`, `col`) of the grid, at `speed` flop/s, before its first panel step.
    pub(super) fn new(s: Arc<Setup>, row: u32, col: u32, speed: f64) -> HplRank {
        HplRank {
            s,
            row,
            col,
            speed,
            queue: VecDeque::new(),
            pending: None,
            awaiting_probe: false,
            k: 0,
            finished: false,
            next_req: 1,
            clocks: Vec::new(),
            polled_update: None,
            phase: 0,
            stash: None,
        }
    }

    /// `action`, of `phase`: preceded by an [`Action::Callsite`] when phases are marked and
    /// the phase changes (the action then waits in `stash`).
    fn emit(&mut self, phase: u32, action: Action) -> Option<Result<Action, WorkloadError>> {
        if !self.s.run.phases || phase == self.phase {
            return Some(Ok(action));
        }
        self.phase = phase;
        self.stash = Some(Box::new(action));
        Some(Ok(Action::Callsite(phase)))
    }

    fn req(&mut self) -> ReqHandle {
        self.next_req += 1;
        self.next_req
    }

    /// Actions of messages among the ranks of this process row (`by_col`) or column.
    fn actions(&mut self, msgs: &[Msg], by_col: bool, tag: u32, out: &mut Vec<Op>) {
        let s = self.s.clone();
        let (row, col) = (self.row, self.col);
        let peer = |x: u32| {
            if by_col {
                s.world(row, x)
            } else {
                s.world(x, col)
            }
        };
        for m in msgs {
            match *m {
                Msg::Send {
                    peer: x,
                    bytes,
                    sync,
                } => out.push(Op::Send {
                    dst: peer(x),
                    tag,
                    bytes,
                    req: 0,
                    sync,
                }),
                Msg::Recv { peer: x, bytes } => out.push(Op::Recv {
                    src: peer(x),
                    tag,
                    bytes,
                    req: 0,
                }),
                Msg::Exchange {
                    to,
                    send,
                    from,
                    recv,
                    sync: false,
                } => out.push(Op::Sendrecv {
                    dst: peer(to),
                    src: peer(from),
                    tag,
                    send,
                    recv,
                }),
                Msg::Exchange {
                    to,
                    send,
                    from,
                    recv,
                    sync,
                } => {
                    let (r, w) = (self.req(), self.req());
                    out.push(Op::Recv {
                        src: peer(from),
                        tag,
                        bytes: recv,
                        req: r,
                    });
                    out.push(Op::Send {
                        dst: peer(to),
                        tag,
                        bytes: send,
                        req: w,
                        sync,
                    });
                    out.push(Op::Wait2(r, w));
                }
            }
        }
    }

    fn push(&mut self, a: Op, phase: u32) {
        if self.s.run.phases {
            self.queue.push_back(Item::Phase(phase));
        }
        self.queue.push_back(Item::Act(a));
    }

    /// HPL_pdfact on panel k (only in its process column), expanded a column at a time
    /// so that a rank never queues a whole panel's pivot exchanges.
    fn factor(&mut self, k: u64) {
        let q = self.s.run.q;
        if self.col == (k % u64::from(q)) as u32 {
            self.queue.push_back(Item::Factor { k, i: 0 });
        }
    }

    /// Column `i` of panel k's factorization: its flops, then its pivot exchange
    /// (HPL_pdmxswp), queued at the front. With [`Pivots::Aggregated`] (and jb >= 4), the
    /// second column's exchange is timed and columns 2 to jb - 2 become one
    /// [`Item::FactorMiddle`].
    fn factor_column(&mut self, k: u64, i: u64) {
        let s = self.s.clone();
        let p = s.run.p;
        let jb = s.jb(k);
        let aggregate = s.run.pivots == Pivots::Aggregated && jb >= 4;
        if aggregate && i == 1 {
            self.queue.push_front(Item::FactorMiddle { k });
        } else if i + 1 < jb {
            self.queue.push_front(Item::Factor { k, i: i + 1 });
        }
        let cur = (k % u64::from(p)) as u32;
        let mut acts = Vec::new();
        let flops = self.column_flops(k, i);
        if flops > 0.0 {
            acts.push(Op::Compute(flops));
        }
        let timed = aggregate && i == 1;
        if timed {
            acts.push(Op::Clock);
        }
        let pivots = pivot_plan(p, cur, self.row, jb);
        self.actions(&pivots, false, TAG_PIVOT + (k % 8) as u32, &mut acts);
        if timed {
            acts.push(Op::Clock);
        }
        self.prepend(acts, phase::FACTOR);
    }

    /// Flops to compute for column `i` of panel k's factorization on this rank (HPL_pdfact's
    /// rank-one updates of the local panel rows below the pivot), at the panel model's rate
    /// when the platform is calibrated ([`Kernels::panel_column_flops`]).
    fn column_flops(&self, k: u64, i: u64) -> f64 {
        let s = &self.s;
        let (j, jb) = (s.j(k), s.jb(k));
        let cur = (k % u64::from(s.run.p)) as u32;
        let mp = local(j, s.run.n, s.run.nb, self.row, s.run.p);
        let rows = if self.row == cur {
            mp.saturating_sub(i)
        } else {
            mp
        };
        let flops = rows as f64 + 2.0 * rows as f64 * (jb - i - 1) as f64;
        s.kernels.panel_column_flops(flops, rows, self.speed)
    }

    /// Columns 2 to jb - 2 of panel k ([`Pivots::Aggregated`]): their flops, then the time
    /// the second column's exchange took on this rank (waiting for the slowest partner
    /// included) once for each of them; the last column follows message by message.
    fn factor_middle(&mut self, k: u64) {
        let jb = self.s.jb(k);
        self.queue.push_front(Item::Factor { k, i: jb - 1 });
        let exchange_ps = match self.clocks.as_slice() {
            [.., a, b] => b.saturating_sub(*a),
            _ => 0,
        };
        self.clocks.clear();
        let flops: f64 = (2..jb - 1).map(|i| self.column_flops(k, i)).sum();
        let mut acts = Vec::new();
        if flops > 0.0 {
            acts.push(Op::Compute(flops));
        }
        let secs = mpiscope_sim::Time(exchange_ps).secs() * (jb - 3) as f64;
        if secs > 0.0 {
            acts.push(Op::Sleep(secs));
        }
        self.prepend(acts, phase::FACTOR);
    }

    /// Sets panel k's broadcast pending.
    fn start_bcast(&mut self, k: u64) {
        let s = self.s.clone();
        let (j, jb, nb) = (s.j(k), s.jb(k), s.run.nb);
        let mp = local(j + jb, s.run.n, nb, self.row, s.run.p);
        let root = (k % u64::from(s.run.q)) as u32;
        let plan = bcast_plan(
            s.run.bcast,
            s.run.q,
            root,
            self.col,
            mp * jb + jb * jb + jb + 1,
        );
        let tag = TAG_BCAST + (k % 8) as u32;
        let mut actions = Vec::new();
        self.actions(&plan.msgs, true, tag, &mut actions);
        if let Some(pack) = self.s.kernels.pack {
            // The root sends its panel out of the matrix (strided) into the receivers'
            // contiguous workspaces: both sides of those messages take `pack` per byte
            // more, after the transfer, as one pipeline (the sender's blocking send lasts
            // until the receiver has unpacked). Forwarded panels go workspace to workspace.
            let root_world = s.world(self.row, root);
            let mut with_pack = Vec::with_capacity(actions.len() * 2);
            for a in actions {
                let extra = match a {
                    Op::Send { bytes, dst, .. } if self.col == root => Some((bytes, dst)),
                    Op::Recv { src, bytes, .. } if src == root_world => Some((bytes, root_world)),
                    _ => None,
                };
                with_pack.push(a);
                if let Some((bytes, other_end)) = extra {
                    with_pack.push(Op::Pack {
                        secs: pack * bytes as f64,
                        fragments: bytes.div_ceil(PACK_FRAGMENT_BYTES).max(1) as u32,
                        with: Some(other_end),
                    });
                }
            }
            actions = with_pack;
        }
        let probe = plan.probe.map(|c| (s.world(self.row, c), i64::from(tag)));
        self.pending = Some(Pending { probe, actions });
    }

    /// HPL_pdupdate of panel k on `n` local columns, polling the pending broadcast if `poll`.
    fn update(&mut self, k: u64, n: u64, poll: bool) {
        let s = self.s.clone();
        let (p, nb) = (s.run.p, s.run.nb);
        let (j, jb) = (s.j(k), s.jb(k));
        if n == 0 || jb == 0 {
            if poll {
                self.queue.push_back(Item::Finish);
            }
            return;
        }
        if poll {
            self.queue.push_back(Item::Poll);
        }
        if p > 1 {
            let cur = (k % u64::from(p)) as u32;
            let long = match s.run.swap {
                Swap::BinaryExchange => false,
                Swap::Long => true,
                Swap::Mix => n > s.run.swap_threshold,
            };
            let plan = if long {
                swap01_plan(p, cur, self.row, jb, n)
            } else {
                swap00_plan(p, cur, self.row, jb, n)
            };
            let tag = TAG_SWAP + (k % 8) as u32;
            let mut acts = Vec::new();
            let mut phase = 0;
            for m in plan {
                match m {
                    None => {
                        if poll {
                            self.queue.push_back(Item::Poll);
                        }
                        phase += 1;
                        // Row copies: the current row's gather before anything is sent,
                        // the others' exchange of their share after the spread.
                        let rows = match phase {
                            1 if self.row == cur => jb,
                            2 if long && self.row != cur => share(jb, p, sub(self.row, cur, p)),
                            _ => 0,
                        };
                        let flops = s.kernels.laswp_flops(rows, n, self.speed);
                        if flops > 0.0 {
                            self.push(Op::Compute(flops), phase::SWAP);
                        }
                    }
                    Some(m) => {
                        self.actions(&[m], false, tag, &mut acts);
                        for a in acts.drain(..) {
                            self.push(a, phase::SWAP);
                        }
                    }
                }
            }
        }
        let mp = local(j + jb, s.run.n, nb, self.row, p);
        self.queue.push_back(Item::Update {
            left: n,
            mp,
            jb,
            poll,
        });
    }

    /// Queues panel step `self.k` (HPL_pdgesv0 or one iteration of HPL_pdgesvK2).
    fn generate(&mut self) -> bool {
        let s = self.s.clone();
        let (q, nb, n) = (s.run.q, s.run.nb, s.run.n);
        let k = self.k;
        if k >= s.npanels {
            return false;
        }
        self.k += 1;
        if let (Some(p), 0, 0) = (&s.progress, self.row, self.col) {
            p.store(self.k, std::sync::atomic::Ordering::Relaxed);
        }
        let owns = |c: u32, k: u64| c == (k % u64::from(q)) as u32;
        if s.run.depth == 0 || q == 1 {
            self.factor(k);
            self.start_bcast(k);
            self.queue.push_back(Item::Finish);
            let cols = local(s.j(k) + s.jb(k), n + 1, nb, self.col, q);
            self.update(k, cols, false);
            return true;
        }
        // Depth >= 1 is run as depth 1 (one panel ahead).
        if k == 0 {
            self.factor(0);
            self.start_bcast(0);
            self.queue.push_back(Item::Finish);
            return true;
        }
        if owns(self.col, k) {
            self.update(k - 1, s.jb(k), false);
            self.factor(k);
        }
        self.start_bcast(k);
        let rest = local(s.j(k) + s.jb(k), n + 1, nb, self.col, q);
        self.update(k - 1, rest, true);
        self.queue.push_back(Item::Finish);
        if k + 1 == s.npanels {
            let last = local(n, n + 1, nb, self.col, q);
            self.update(k, last, false);
        }
        true
    }

    fn prepend(&mut self, actions: Vec<Op>, phase: u32) {
        for a in actions.into_iter().rev() {
            self.queue.push_front(Item::Act(a));
        }
        if self.s.run.phases {
            self.queue.push_front(Item::Phase(phase));
        }
    }
}

/// The steps of [`HplRank::next`]: taking in an outcome, and the queue items that return
/// an action of their own.
impl HplRank {
    /// Takes in the outcome of the last action: a clock reading; how an aggregated polled
    /// update ended (its columns left queued again, after the pending broadcast's messages
    /// if the probe found them); or the answer of a probe of the pending broadcast (its
    /// messages queued if found).
    fn take_outcome(&mut self, last: Outcome) {
        if let Outcome::Time(t) = last {
            self.clocks.push(t);
        }
        if let Outcome::Polled { chunks, found } = last {
            if let Some((left, mp, jb)) = self.polled_update.take() {
                self.queue.push_front(Item::Update {
                    left: left - chunks * self.s.run.nb,
                    mp,
                    jb,
                    poll: true,
                });
                if found {
                    if let Some(p) = self.pending.take() {
                        self.prepend(p.actions, phase::BCAST);
                    }
                }
            }
        }
        if self.awaiting_probe {
            self.awaiting_probe = false;
            if last == Outcome::Flag(true) {
                if let Some(p) = self.pending.take() {
                    self.prepend(p.actions, phase::BCAST);
                }
            }
        }
    }

    /// [`Item::Poll`]: the pending broadcast's `Iprobe` to return (its answer awaited), or,
    /// if the broadcast needs no probe, its messages queued at once.
    fn poll(&mut self) -> Option<Action> {
        match &self.pending {
            None => None,
            Some(Pending { probe: None, .. }) => {
                let p = self.pending.take().expect("pending");
                self.prepend(p.actions, phase::BCAST);
                None
            }
            Some(Pending {
                probe: Some((src, tag)),
                ..
            }) => {
                let (src, tag) = (*src, *tag);
                self.awaiting_probe = true;
                Some(Action::Iprobe {
                    src: i64::from(src),
                    tag,
                    comm: 0,
                })
            }
        }
    }

    /// [`Item::Finish`]: the pending broadcast's messages queued, and its blocking `Probe`
    /// to return first if it has one.
    fn finish(&mut self) -> Option<Action> {
        let p = self.pending.take()?;
        self.prepend(p.actions, phase::BCAST);
        let (src, tag) = p.probe?;
        Some(Action::Probe {
            src: i64::from(src),
            tag,
            comm: 0,
        })
    }

    /// [`Item::Update`]: the next computation of a trailing update with `left` columns to
    /// go (`None` if it has no flops). While a broadcast is pending and polled, that is one
    /// chunk of nb columns (the rest queued after a poll), or with [`Polls::Aggregated`] all
    /// the chunks followed by a probe as one [`Action::ComputeWhilePolling`].
    fn update_step(&mut self, left: u64, mp: u64, jb: u64, poll: bool) -> Option<Action> {
        let nb = self.s.run.nb;
        // The chunks of nb columns followed by a probe (all but the last piece)
        // run as one action that stops after the chunk the broadcast arrives in.
        let polled = left.saturating_sub(1) / nb;
        let aggregate = poll && self.s.run.polls == Polls::Aggregated;
        if let (
            true,
            Some(Pending {
                probe: Some((src, tag)),
                ..
            }),
            1..,
        ) = (aggregate, &self.pending, polled)
        {
            let kern = self.s.kernels;
            let flops =
                kern.dtrsm_flops(jb, nb, self.speed) + kern.dgemm_flops(mp, nb, jb, self.speed);
            let action = Action::ComputeWhilePolling {
                flops,
                chunks: polled,
                src: i64::from(*src),
                tag: *tag,
                comm: 0,
            };
            self.polled_update = Some((left, mp, jb));
            return Some(action);
        }
        let chunk = if poll && self.pending.is_some() {
            left.min(self.s.run.nb)
        } else {
            left
        };
        let kern = self.s.kernels;
        let flops =
            kern.dtrsm_flops(jb, chunk, self.speed) + kern.dgemm_flops(mp, chunk, jb, self.speed);
        if chunk < left {
            self.queue.push_front(Item::Update {
                left: left - chunk,
                mp,
                jb,
                poll,
            });
            self.queue.push_front(Item::Poll);
        }
        if flops > 0.0 {
            return Some(Action::Compute { flops });
        }
        None
    }
}

impl RankWorkload for HplRank {
    fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
        // The action behind a phase's callsite (whose outcome is nothing).
        if let Some(a) = self.stash.take() {
            return Some(Ok(*a));
        }
        self.take_outcome(last);
        loop {
            let Some(item) = self.queue.pop_front() else {
                if self.generate() {
                    continue;
                }
                if self.finished {
                    return None;
                }
                self.finished = true;
                return Some(Ok(Action::Finalize));
            };
            match item {
                Item::Act(a) => return Some(Ok(Action::from(a))),
                Item::Phase(p) => {
                    if p != self.phase {
                        self.phase = p;
                        return Some(Ok(Action::Callsite(p)));
                    }
                }
                Item::Factor { k, i } => self.factor_column(k, i),
                Item::FactorMiddle { k } => self.factor_middle(k),
                Item::Poll => {
                    if let Some(probe) = self.poll() {
                        return self.emit(phase::BCAST, probe);
                    }
                }
                Item::Finish => {
                    if let Some(probe) = self.finish() {
                        return self.emit(phase::BCAST, probe);
                    }
                }
                Item::Update { left, mp, jb, poll } => {
                    if let Some(compute) = self.update_step(left, mp, jb, poll) {
                        return self.emit(phase::UPDATE, compute);
                    }
                }
            }
        }
    }
}
