//! The discrete-event engine and the MPI layer it simulates.
//!
//! Ranks are state machines, not threads: each asks its [`RankWorkload`] for actions and
//! runs them until one blocks (a computation, a blocking receive, a wait, a probe); the
//! engine then advances time to the next event of the network, CPU or timer models, wakes
//! the ranks whose condition holds, and runs them again. Events are ordered by
//! `(time, sequence)` in integer picoseconds, so a simulation is a pure function of its
//! input, platform, configuration and seed.
//!
//! MPI semantics follow SimGrid's SMPI (the reference we compare with): a message's
//! transfer starts when both the send and the matching receive are posted; sends below the
//! eager threshold (65,536 bytes by default) return at once, larger blocking sends return
//! when the transfer completes; matching is by (communicator, source, tag), FIFO within a
//! mailbox (non-overtaking), with wildcards; collectives run as point-to-point programs
//! ([`crate::coll`]) in a matching context of their own.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// Maps keyed by small integers the engine assigns (transfers, computations, requests):
/// a fast non-cryptographic hash, as nothing here comes from outside.
type IdMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Requests a rank waits for: one or two (a blocking call, an exchange) stay inline.
type WaitList = smallvec::SmallVec<[ReqIdx; 2]>;

use crate::coll::{self, Collective, POp, Program, Selector};
use crate::cpu::{CpuModel, ExecId};
use crate::network::{NetworkKind, NetworkModel, TransferId};
use crate::platform::{HostId, Platform, PlatformError};
use crate::time::Time;
use crate::workload::{Action, CommId, Outcome, RankWorkload, ReqHandle, WorkloadError, ANY};

/// Simulation parameters.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Sends strictly below this many bytes return at once (SMPI's `send-is-detached-thresh`).
    pub eager_threshold: u64,
    /// Decision rules for collectives.
    pub selector: Selector,
    /// Algorithms forced by name, per collective.
    pub forced: HashMap<Collective, String>,
    /// Network model.
    pub network: NetworkKind,
    /// Simulated cost of an `MPI_Test` or `MPI_Iprobe` call, in seconds.
    pub poll_cost: f64,
    /// Record per-rank timelines (for Chrome trace export).
    pub timeline: bool,
    /// Per-core speed factor when `k` cores of a host are busy, at index `k - 1` (the last
    /// entry beyond; empty: every core at full speed). See [`crate::cpu`].
    pub core_efficiency: Vec<f64>,
    /// Oversubscribed cores (more ranks bound to a core than one, with
    /// [`SimConfig::bind_to_core`]): a rank waiting in MPI whose message arrives while its
    /// core computes for another rank resumes this many seconds later, or as soon as a
    /// computation on the core ends (0: at once). See [`Block::Scheduled`]. Unbound ranks
    /// never wait so: the kernel moves them between cores, and a host-wide rule (wait
    /// whenever every core computes) predicted HPL on 4 ranks and 2 cores 5x too slow.
    pub oversubscribed_wake_up: f64,
    /// Bind each rank to one core of its host, the `k`-th rank placed on a host to core
    /// `k mod cores` (`mpirun --bind-to core --map-by core`); otherwise a host's
    /// computations share all its cores.
    pub bind_to_core: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            eager_threshold: 65536,
            selector: Selector::Ompi,
            forced: HashMap::new(),
            network: NetworkKind::default(),
            poll_cost: 0.0,
            timeline: false,
            core_efficiency: Vec::new(),
            oversubscribed_wake_up: 0.0,
            bind_to_core: false,
        }
    }
}

/// Why a simulation stopped without finishing.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The platform could not route a message.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// A workload's input is malformed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// A collective could not be built.
    #[error("rank {rank}: {source}")]
    Collective {
        /// The rank.
        rank: u32,
        /// The problem.
        source: coll::CollError,
    },
    /// An action refers to something that does not exist.
    #[error("rank {rank}: {message}")]
    Invalid {
        /// The rank.
        rank: u32,
        /// What is wrong.
        message: String,
    },
    /// Some event of a rank would happen after the last date the simulator represents
    /// (2^64 ps, 213 days of simulated time): a computation, a sleep or a transfer too long
    /// for it, not a deadlock.
    #[error("simulated time overflow at rank {rank}: rank {rank} {what} since {since}, which would end after {horizon:.0} s (213 days), the last date the simulator represents", horizon = Time::HORIZON_SECS)]
    TimeOverflow {
        /// The rank.
        rank: u32,
        /// What it does (as a deadlock describes it).
        what: String,
        /// When it started.
        since: Time,
    },
    /// Every remaining rank waits for something that can never happen.
    #[error("deadlock at {time}: {} rank(s) blocked: {}", blocked.len(), blocked.iter().take(8).map(|(r, w)| format!("rank {r} {w}")).collect::<Vec<_>>().join("; "))]
    Deadlock {
        /// Simulated date.
        time: Time,
        /// (rank, what it waits for).
        blocked: Vec<(u32, String)>,
    },
}

/// Per-rank results.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RankResult {
    /// When the rank finished, seconds.
    pub end_s: f64,
    /// Time computing.
    pub compute_s: f64,
    /// Time inside MPI calls while its messages moved.
    pub comm_s: f64,
    /// Time inside MPI calls waiting for a peer to post the matching operation.
    pub wait_s: f64,
    /// MPI actions executed.
    pub mpi_calls: u64,
}

/// One interval of a rank's timeline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Span {
    /// Rank.
    pub rank: u32,
    /// What (`compute`, `MPI_Send`, ...).
    pub name: &'static str,
    /// The rank's callsite then ([`Action::Callsite`]; 0 when none was set).
    pub callsite: u32,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds.
    pub end_s: f64,
}

/// What the ranks spent at one callsite.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CallsiteStats {
    /// Callsite id (0: unknown).
    pub callsite: u32,
    /// MPI calls, all ranks.
    pub calls: u64,
    /// Seconds in MPI, summed over ranks.
    pub seconds: f64,
    /// The rank whose mean time per call here is the largest.
    pub slowest_rank: u32,
    /// That rank's mean seconds per call (what a benchmark that times the slowest rank
    /// measures).
    pub slowest_rank_mean_s: f64,
}

/// What a simulation produced.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SimResult {
    /// Date the last rank finished, seconds.
    pub makespan_s: f64,
    /// Per rank.
    pub ranks: Vec<RankResult>,
    /// Per callsite id, by id.
    pub callsites: Vec<CallsiteStats>,
    /// Bytes carried per link (link id, bytes), nonzero only.
    pub link_bytes: Vec<(u32, f64)>,
    /// Busy core-seconds fraction integral per host.
    pub host_busy_s: Vec<f64>,
    /// Actions executed.
    pub actions: u64,
    /// Messages sent.
    pub messages: u64,
    /// Timeline, when recorded.
    pub timeline: Vec<Span>,
    /// Work done by the network model's sharing solver.
    pub solver: crate::network::maxmin::SolverStats,
}

type ReqIdx = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Send,
    Recv,
}

#[derive(Debug, Clone)]
struct Req {
    owner: u32,
    kind: Kind,
    /// World rank of the peer, or ANY.
    peer: i64,
    tag: i64,
    ctx: u32,
    bytes: u64,
    /// Complete from the owner's point of view.
    complete: bool,
    /// Matched (transfer started).
    matched: bool,
    matched_at: Time,
    /// Transfer finished (or never needed).
    finished: bool,
    /// The owner no longer refers to it.
    released: bool,
    /// Matched peer (for receives: the sender's world rank).
    partner: i64,
}

#[derive(Debug, Default)]
struct Mailbox {
    recvs: VecDeque<ReqIdx>,
    sends: VecDeque<ReqIdx>,
}

#[derive(Debug, Clone)]
enum Block {
    None,
    Exec(ExecId),
    /// Until this date.
    Sleep(Time),
    /// Ready, but bound to a core that computes for another rank bound to it: an MPI library
    /// polling with `sched_yield` (Open MPI's `mpi_yield_when_idle`, MPICH's default when
    /// oversubscribed) gets the core back at the end of the computing rank's time slice, or
    /// when a computation on the core ends, whichever comes first.
    Scheduled(Time),
    /// All of these requests complete; `release`: the rank drops them when woken (a
    /// collective's requests are dropped at its end instead).
    Reqs(WaitList, bool),
    Probe {
        src: i64,
        tag: i64,
        ctx: u32,
    },
    /// [`Action::Pack`] `with` a partner: its own fragments are copied, the other end's
    /// are not yet (the pair of world ranks, lower first, is the key of
    /// `Simulation::joints`).
    Partner((u32, u32)),
    /// [`Action::ComputeWhilePolling`]: computation `exec` of `chunks` chunks of `flops`,
    /// cut short after the chunk during which a matching send arrives (`found`).
    Polling {
        exec: ExecId,
        flops: f64,
        chunks: u64,
        found: bool,
        src: i64,
        tag: i64,
        ctx: u32,
    },
}

struct CollRun {
    program: Box<dyn Program>,
    comm: CommId,
    reqs: Vec<ReqIdx>,
    /// Requests waited so far by `WaitAll`.
    waited: usize,
    comp_flops: f64,
    name: &'static str,
}

/// A non-blocking collective in progress: it advances on its own (as with an asynchronous
/// progress engine) while its rank goes on, and completes `done_req`.
struct Background {
    run: CollRun,
    /// The request the rank's handle refers to (`MPI_Wait` on the collective).
    done_req: ReqIdx,
    /// Requests the next step needs complete; released then when `release`.
    waiting: Vec<ReqIdx>,
    release: bool,
    /// Computation (a reduction) the next step needs finished.
    exec: Option<ExecId>,
    /// The program has no more steps: outstanding requests, then `comp_flops`.
    program_done: bool,
    computed: bool,
}

/// An [`Action::Pack`] in progress on an oversubscribed core.
#[derive(Debug, Clone, Copy)]
struct Packing {
    /// Fragments still to copy.
    left: u32,
    /// Seconds per fragment.
    each: f64,
    /// The rank has yielded its core after a fragment: it must get it back first.
    yielded: bool,
}

struct Rank {
    host: HostId,
    /// The core it is bound to ([`SimConfig::bind_to_core`]).
    core: Option<u32>,
    /// Where it waits for a core ([`Block::Scheduled`]): its core's or its host's queue.
    cpu_queue: u32,
    block: Block,
    done: bool,
    last: Outcome,
    /// The probe ending an [`Action::ComputeWhilePolling`] that has found nothing yet:
    /// made when the rank runs again, after the ranks due before it at that date.
    final_probe: Option<(i64, i64, u32)>,
    /// The [`Action::Pack`] it is in, fragment by fragment.
    packing: Option<Packing>,
    /// The other end of the [`Action::Pack`] it is in, met when its own copy ends.
    pack_with: Option<u32>,
    user_reqs: IdMap<ReqHandle, ReqIdx>,
    coll: Option<CollRun>,
    /// Non-blocking collectives in progress, in the order they were started.
    background: Vec<Background>,
    blocked_since: Time,
    blocked_name: &'static str,
    callsite: u32,
    /// Per callsite this rank used: (callsite, calls, seconds); few entries, searched
    /// linearly from the last one used.
    by_callsite: Vec<(u32, u64, f64)>,
    last_callsite: usize,
    result: RankResult,
}

impl Rank {
    /// This rank's (calls, seconds) entry of its current callsite.
    fn callsite_entry(&mut self) -> &mut (u32, u64, f64) {
        let cs = self.callsite;
        if self
            .by_callsite
            .get(self.last_callsite)
            .is_none_or(|e| e.0 != cs)
        {
            self.last_callsite = match self.by_callsite.iter().position(|e| e.0 == cs) {
                Some(i) => i,
                None => {
                    self.by_callsite.push((cs, 0, 0.0));
                    self.by_callsite.len() - 1
                }
            };
        }
        &mut self.by_callsite[self.last_callsite]
    }
}

#[derive(Debug, Clone)]
struct Comm {
    /// World rank of each member (empty for the world: identity).
    members: Vec<u32>,
    size: u32,
}

/// A simulation in progress.
pub struct Simulation<'p> {
    platform: &'p Platform,
    config: SimConfig,
    net: Box<dyn NetworkModel + 'p>,
    cpu: CpuModel,
    now: Time,
    ranks: Vec<Rank>,
    workloads: Vec<Box<dyn RankWorkload>>,
    comms: Vec<Option<Comm>>,
    reqs: Vec<Req>,
    free_reqs: Vec<ReqIdx>,
    mailboxes: Vec<Mailbox>,
    transfers: IdMap<TransferId, (ReqIdx, ReqIdx)>,
    execs: IdMap<ExecId, u32>,
    /// Computations of non-blocking collectives, by rank.
    background_execs: IdMap<ExecId, u32>,
    sleepers: BinaryHeap<Reverse<(Time, u32)>>,
    /// Per CPU queue (a host, or a core when ranks are bound): more ranks than cores (see
    /// [`SimConfig::oversubscribed_wake_up`]).
    oversubscribed: Vec<bool>,
    /// Per CPU queue: ranks in [`Block::Scheduled`], first come first served.
    scheduled: Vec<VecDeque<u32>>,
    /// Per CPU queue: the ranks bound to it (filled only when some queue is oversubscribed).
    residents: Vec<Vec<u32>>,
    /// Per CPU queue: the rank copying an [`Action::Pack`] on it, and the ranks waiting for
    /// their turn.
    copier: Vec<Option<u32>>,
    copy_waiters: Vec<VecDeque<u32>>,
    /// Joint packs ([`Action::Pack`] `with`) one end of which has copied its part: the pair
    /// of world ranks (lower first) and the rank waiting for the other.
    joints: HashMap<(u32, u32), u32>,
    /// Some CPU queue is oversubscribed (else the scheduler's share is skipped).
    any_oversubscribed: bool,
    ready: VecDeque<u32>,
    touched: Vec<u32>,
    actions: u64,
    messages: u64,
    timeline: Vec<Span>,
    done_transfers: Vec<TransferId>,
    done_execs: Vec<ExecId>,
}

/// Refuses an action whose amount of work or time is not a finite number (a negative one
/// counts as none): workloads check their inputs, this catches what a computation made.
fn check_amounts(r: u32, action: &Action) -> Result<(), SimError> {
    let (what, v) = match action {
        Action::Compute { flops } => ("a computation of", *flops),
        Action::ComputeWhilePolling { flops, .. } => ("a polled computation of", *flops),
        Action::Collective { comp_flops, .. } => ("a collective computing", *comp_flops),
        Action::Sleep { secs } => ("a sleep of", *secs),
        Action::Pack { secs, .. } => ("a pack of", *secs),
        _ => return Ok(()),
    };
    if v.is_finite() {
        return Ok(());
    }
    let unit = match action {
        Action::Sleep { .. } | Action::Pack { .. } => "seconds",
        _ => "flops",
    };
    Err(SimError::Invalid {
        rank: r,
        message: format!("{what} {v} {unit}: expected a finite number"),
    })
}

/// Whether a receive or probe for (`src`, `tag`, `ctx`), wildcards allowed, matches `send`
/// from world rank `sender`.
fn envelope_matches(src: i64, tag: i64, ctx: u32, send: &Req, sender: u32) -> bool {
    ctx == send.ctx
        && (src == ANY || src == i64::from(sender))
        && (tag == send.tag || (tag == ANY && send.tag >= 0))
}

const COLL_CTX: u32 = 1;
/// Fraction of a chunk under which [`Action::ComputeWhilePolling`] counts a send arriving
/// as arriving at the end of the chunk just computed (rounding of computation dates).
const CHUNK_TIE: f64 = 1e-9;
/// The context of the request standing for a whole non-blocking collective.
const NBC_CTX: u32 = u32::MAX;

impl<'p> Simulation<'p> {
    /// A simulation of `workloads.len()` ranks placed on `hosts` (one host per rank).
    pub fn new(
        platform: &'p Platform,
        config: SimConfig,
        hosts: Vec<HostId>,
        workloads: Vec<Box<dyn RankWorkload>>,
    ) -> Result<Simulation<'p>, SimError> {
        if hosts.len() != workloads.len() {
            return Err(SimError::Invalid {
                rank: 0,
                message: format!(
                    "{} ranks but {} host placements",
                    workloads.len(),
                    hosts.len()
                ),
            });
        }
        let net = config.network.build(platform);
        let n = workloads.len();
        // Cores of bound ranks, and the CPU queues: one per host, or one per core used.
        let mut placed = vec![0u32; platform.hosts.len()];
        let mut queues: HashMap<(HostId, Option<u32>), u32> = HashMap::new();
        let mut queue_residents: Vec<(u32, u32)> = Vec::new();
        let placement: Vec<(Option<u32>, u32)> = hosts
            .iter()
            .map(|&h| {
                let cores = platform.hosts[h as usize].cores.max(1);
                let core = config.bind_to_core.then(|| placed[h as usize] % cores);
                placed[h as usize] += 1;
                let next = queues.len() as u32;
                let q = *queues.entry((h, core)).or_insert(next);
                if q == next {
                    queue_residents.push((0, if core.is_some() { 1 } else { cores }));
                }
                queue_residents[q as usize].0 += 1;
                (core, q)
            })
            .collect();
        let oversubscribed: Vec<bool> = queue_residents
            .iter()
            .map(|&(ranks, cores)| {
                config.bind_to_core && config.oversubscribed_wake_up > 0.0 && ranks > cores
            })
            .collect();
        let mut residents: Vec<Vec<u32>> = vec![Vec::new(); oversubscribed.len()];
        if oversubscribed.contains(&true) {
            for (r, &(_, q)) in placement.iter().enumerate() {
                residents[q as usize].push(r as u32);
            }
        }
        let ranks = hosts
            .iter()
            .zip(&placement)
            .map(|(&host, &(core, cpu_queue))| Rank {
                host,
                core,
                cpu_queue,
                block: Block::None,
                done: false,
                last: Outcome::None,
                final_probe: None,
                packing: None,
                pack_with: None,
                user_reqs: IdMap::default(),
                coll: None,
                background: Vec::new(),
                blocked_since: Time::ZERO,
                blocked_name: "",
                callsite: 0,
                by_callsite: Vec::new(),
                last_callsite: 0,
                result: RankResult::default(),
            })
            .collect();
        Ok(Simulation {
            platform,
            net,
            cpu: CpuModel::with_efficiency(platform, &config.core_efficiency),
            now: Time::ZERO,
            ranks,
            workloads,
            comms: vec![Some(Comm {
                members: Vec::new(),
                size: n as u32,
            })],
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            mailboxes: (0..n).map(|_| Mailbox::default()).collect(),
            transfers: IdMap::default(),
            execs: IdMap::default(),
            background_execs: IdMap::default(),
            sleepers: BinaryHeap::new(),
            scheduled: vec![VecDeque::new(); oversubscribed.len()],
            residents,
            copier: vec![None; oversubscribed.len()],
            copy_waiters: vec![VecDeque::new(); oversubscribed.len()],
            joints: HashMap::new(),
            any_oversubscribed: oversubscribed.contains(&true),
            oversubscribed,
            ready: (0..n as u32).collect(),
            touched: Vec::new(),
            actions: 0,
            messages: 0,
            timeline: Vec::new(),
            done_transfers: Vec::new(),
            done_execs: Vec::new(),
            config,
        })
    }

    /// The current simulated date.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Runs to the end.
    pub fn run(self) -> Result<SimResult, SimError> {
        self.run_with_progress(|_, _| {})
    }

    /// Runs to the end, calling `progress(finished ranks, simulated seconds)` now and then.
    pub fn run_with_progress(
        mut self,
        mut progress: impl FnMut(usize, f64),
    ) -> Result<SimResult, SimError> {
        let mut rounds: u64 = 0;
        loop {
            while let Some(r) = self.ready.pop_front() {
                self.run_rank(r)?;
            }
            // Conditions that already hold (a probe whose message was posted meanwhile).
            if !self.touched.is_empty() {
                self.settle_touched()?;
                if !self.ready.is_empty() {
                    continue;
                }
            }
            rounds += 1;
            if rounds % 4096 == 0 {
                progress(
                    self.ranks.iter().filter(|r| r.done).count(),
                    self.now.secs(),
                );
            }
            let next = [
                self.net.next_event(),
                self.cpu.next_event(),
                self.sleepers.peek().map(|Reverse((t, _))| *t),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next else {
                if self.ranks.iter().all(|r| r.done) {
                    break;
                }
                return Err(self.deadlock());
            };
            if t == Time::NEVER {
                // Rates are positive (platforms and options are checked), so an event at
                // the end of time is one whose date saturated.
                return Err(self.overflow());
            }
            self.now = self.now.max(t);
            self.process_events()?;
        }
        Ok(self.finish())
    }

    /// The rank whose next event lies past the last representable date, and what it does.
    fn overflow(&mut self) -> SimError {
        let never = |t: Option<Time>| t == Some(Time::NEVER);
        let rank = if never(self.sleepers.peek().map(|Reverse((t, _))| *t)) {
            self.sleepers.peek().map(|Reverse((_, r))| *r)
        } else if let Some((Time::NEVER, e)) = self.cpu.next_completion() {
            self.execs
                .get(&e)
                .or_else(|| self.background_execs.get(&e))
                .copied()
        } else if let Some((Time::NEVER, t)) = self.net.next_transfer() {
            self.transfers
                .get(&t)
                .map(|&(s, _)| self.reqs[s as usize].owner)
        } else {
            None
        };
        match rank {
            Some(r) => {
                let rank = &self.ranks[r as usize];
                SimError::TimeOverflow {
                    rank: r,
                    what: self.describe_block(r, rank),
                    since: rank.blocked_since,
                }
            }
            None => self.deadlock(),
        }
    }

    fn deadlock(&self) -> SimError {
        let blocked = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.done)
            .map(|(i, r)| (i as u32, self.describe_block(i as u32, r)))
            .collect();
        SimError::Deadlock {
            time: self.now,
            blocked,
        }
    }

    fn describe_block(&self, id: u32, r: &Rank) -> String {
        match &r.block {
            Block::None => "is runnable".into(),
            Block::Exec(_) => "computes".into(),
            Block::Polling { src, tag, .. } => {
                format!("computes, probing source {src} tag {tag} between chunks")
            }
            Block::Sleep(_) => "sleeps".into(),
            Block::Scheduled(_) => "waits for a core".into(),
            Block::Partner((a, b)) => {
                let other = if *a == id { b } else { a };
                format!("packed its side of a message, waits for rank {other} to copy its own")
            }
            Block::Probe { src, tag, .. } => {
                format!("in {} probing source {src} tag {tag}", r.blocked_name)
            }
            Block::Reqs(reqs, _) => {
                let pending: Vec<String> = reqs
                    .iter()
                    .filter(|&&q| !self.reqs[q as usize].complete)
                    .take(3)
                    .map(|&q| {
                        let x = &self.reqs[q as usize];
                        if x.ctx == NBC_CTX {
                            return "the end of a non-blocking collective".to_string();
                        }
                        let what = if x.kind == Kind::Send {
                            "send to"
                        } else {
                            "receive from"
                        };
                        let peer = if x.peer == ANY {
                            "any".to_string()
                        } else {
                            x.peer.to_string()
                        };
                        format!(
                            "{what} {peer} tag {} ({} bytes{})",
                            x.tag,
                            x.bytes,
                            if x.ctx % 2 == COLL_CTX {
                                ", collective"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect();
                format!("in {} waiting for {}", r.blocked_name, pending.join(", "))
            }
        }
    }

    fn finish(mut self) -> SimResult {
        let makespan = self
            .ranks
            .iter()
            .map(|r| r.result.end_s)
            .fold(0.0, f64::max);
        let mut merged: HashMap<u32, CallsiteStats> = HashMap::new();
        for (r, rank) in self.ranks.iter().enumerate() {
            for &(cs, n, t) in &rank.by_callsite {
                let e = merged.entry(cs).or_insert(CallsiteStats {
                    callsite: cs,
                    calls: 0,
                    seconds: 0.0,
                    slowest_rank: r as u32,
                    slowest_rank_mean_s: 0.0,
                });
                e.calls += n;
                e.seconds += t;
                let mean = if n > 0 { t / n as f64 } else { 0.0 };
                if mean > e.slowest_rank_mean_s {
                    e.slowest_rank = r as u32;
                    e.slowest_rank_mean_s = mean;
                }
            }
        }
        let mut callsites: Vec<CallsiteStats> = merged.into_values().collect();
        callsites.sort_by_key(|c| c.callsite);
        let link_bytes = self
            .net
            .link_bytes()
            .into_iter()
            .filter(|&(_, b)| b > 0.0)
            .collect();
        let host_busy_s = self.cpu.busy_seconds(self.now);
        SimResult {
            makespan_s: makespan,
            ranks: self.ranks.into_iter().map(|r| r.result).collect(),
            callsites,
            link_bytes,
            host_busy_s,
            actions: self.actions,
            messages: self.messages,
            timeline: self.timeline,
            solver: self.net.solver_stats(),
        }
    }

    // ------------------------------------------------------------------ events

    fn process_events(&mut self) -> Result<(), SimError> {
        let now = self.now;
        let mut done = std::mem::take(&mut self.done_transfers);
        done.clear();
        self.net.advance(now, &mut done);
        for &t in &done {
            if let Some((s, r)) = self.transfers.remove(&t) {
                self.transfer_finished(s, r);
            }
        }
        self.done_transfers = done;
        let mut execs = std::mem::take(&mut self.done_execs);
        execs.clear();
        self.cpu.advance(now, &mut execs);
        for &e in &execs {
            let rank = match self.execs.remove(&e) {
                Some(rank) => rank,
                None => match self.background_execs.remove(&e) {
                    Some(rank) => rank,
                    None => continue,
                },
            };
            self.touched.push(rank);
            if self.any_oversubscribed {
                // A core is free: the first rank waiting for one gets it.
                let queue = self.ranks[rank as usize].cpu_queue as usize;
                if let Some(w) = self.scheduled[queue].pop_front() {
                    self.ranks[w as usize].block = Block::Scheduled(now);
                    self.touched.push(w);
                }
            }
        }
        self.done_execs = execs;
        while let Some(&Reverse((t, r))) = self.sleepers.peek() {
            if t > now {
                break;
            }
            self.sleepers.pop();
            self.touched.push(r);
        }
        self.settle_touched()
    }

    /// Advances the non-blocking collectives and wakes the ranks whose conditions may hold,
    /// until nothing more changes at this date.
    fn settle_touched(&mut self) -> Result<(), SimError> {
        while !self.touched.is_empty() {
            for r in std::mem::take(&mut self.touched) {
                if !self.ranks[r as usize].background.is_empty() {
                    self.progress_background(r)?;
                }
                self.maybe_wake(r);
            }
        }
        Ok(())
    }

    fn maybe_wake(&mut self, r: u32) {
        let rank = &self.ranks[r as usize];
        if rank.done {
            return;
        }
        let ready = match &rank.block {
            Block::None => false,
            Block::Exec(e) => !self.execs.contains_key(e),
            Block::Sleep(until) | Block::Scheduled(until) => self.now >= *until,
            Block::Reqs(reqs, _) => reqs.iter().all(|&q| self.reqs[q as usize].complete),
            Block::Probe { src, tag, ctx } => self.find_send(r, *src, *tag, *ctx).is_some(),
            Block::Polling { exec, .. } => !self.execs.contains_key(exec),
            Block::Partner(key) => self.joints.get(key) != Some(&r),
        };
        if !ready {
            return;
        }
        let now = self.now;
        let rank = &mut self.ranks[r as usize];
        let dt = now.since(rank.blocked_since).secs();
        let block = std::mem::replace(&mut rank.block, Block::None);
        let waited_in_mpi = matches!(
            block,
            Block::Reqs(..) | Block::Probe { .. } | Block::Partner(_)
        );
        match block {
            Block::Exec(_) => rank.result.compute_s += dt,
            Block::Sleep(_) => {}
            Block::Scheduled(_) => {
                rank.result.wait_s += dt;
                let queue = rank.cpu_queue as usize;
                self.scheduled[queue].retain(|&w| w != r);
            }
            Block::Reqs(reqs, release) => {
                // Waiting: until the last awaited request was matched; the rest moved data.
                let matched = reqs
                    .iter()
                    .map(|&q| self.reqs[q as usize].matched_at)
                    .max()
                    .unwrap_or(now)
                    .max(self.ranks[r as usize].blocked_since)
                    .min(now);
                let rank = &mut self.ranks[r as usize];
                let wait = matched.since(rank.blocked_since).secs();
                rank.result.wait_s += wait;
                rank.result.comm_s += dt - wait;
                rank.callsite_entry().2 += dt;
                if release {
                    for q in reqs {
                        self.release(q);
                    }
                }
            }
            Block::Probe { .. } | Block::Partner(_) => {
                rank.result.wait_s += dt;
            }
            Block::Polling {
                chunks,
                found,
                src,
                tag,
                ctx,
                ..
            } => {
                rank.result.compute_s += dt;
                rank.last = Outcome::Polled { chunks, found };
                if !found {
                    rank.final_probe = Some((src, tag, ctx));
                }
                rank.result.mpi_calls += chunks;
                rank.callsite_entry().1 += chunks;
                if self.config.poll_cost > 0.0 {
                    // The probes' cost, after the computation (not between its chunks).
                    let end = now.plus(Time::from_secs(self.config.poll_cost * chunks as f64));
                    self.sleepers.push(Reverse((end, r)));
                    rank.block = Block::Sleep(end);
                    rank.blocked_since = now;
                    rank.blocked_name = "poll";
                    return;
                }
            }
            Block::None => {}
        }
        let rank = &self.ranks[r as usize];
        if self.config.timeline && dt > 0.0 {
            self.timeline.push(Span {
                rank: r,
                name: rank.blocked_name,
                callsite: rank.callsite,
                start_s: rank.blocked_since.secs(),
                end_s: now.secs(),
            });
        }
        if waited_in_mpi && self.any_oversubscribed && self.waits_for_a_core(r) {
            let until = now.plus(Time::from_secs(self.config.oversubscribed_wake_up));
            let rank = &mut self.ranks[r as usize];
            rank.block = Block::Scheduled(until);
            rank.blocked_since = now;
            rank.blocked_name = "scheduler";
            self.scheduled[rank.cpu_queue as usize].push_back(r);
            self.sleepers.push(Reverse((until, r)));
            return;
        }
        self.ready.push_back(r);
    }

    /// Whether rank `r`, ready after waiting in MPI, must wait for its core: the core is
    /// oversubscribed (see [`SimConfig::oversubscribed_wake_up`]) and computes.
    fn waits_for_a_core(&self, r: u32) -> bool {
        let rank = &self.ranks[r as usize];
        self.oversubscribed[rank.cpu_queue as usize] && self.cpu.no_core_idle(rank.host, rank.core)
    }

    /// Goes on with rank `r`'s [`Action::Pack`] on an oversubscribed core: takes the core's
    /// copy turn (one rank of a core copies at a time, first come first served: the kernel
    /// runs one of them until it has nothing left to copy), waits after each fragment for
    /// the ranks computing on its core to yield, and copies the next fragment.
    fn next_fragment(&mut self, r: u32, mut p: Packing) {
        let now = self.now;
        let queue = self.ranks[r as usize].cpu_queue as usize;
        match self.copier[queue] {
            Some(o) if o != r => {
                self.ranks[r as usize].packing = Some(p);
                self.copy_waiters[queue].push_back(r);
                self.block(r, Block::Scheduled(Time::NEVER), "scheduler");
                return;
            }
            _ => self.copier[queue] = Some(r),
        }
        if p.left == 0 {
            self.ranks[r as usize].packing = None;
            self.copier[queue] = None;
            if let Some(w) = self.copy_waiters[queue].pop_front() {
                self.ranks[w as usize].block = Block::Scheduled(now);
                self.touched.push(w);
            }
            return;
        }
        if p.yielded {
            p.yielded = false;
            if let Some(until) = self.next_yield_of_residents(r) {
                self.ranks[r as usize].packing = Some(p);
                self.scheduled[queue].push_back(r);
                self.sleepers.push(Reverse((until, r)));
                self.block(r, Block::Scheduled(until), "scheduler");
                return;
            }
        }
        p.left -= 1;
        p.yielded = true;
        self.ranks[r as usize].packing = Some(p);
        let end = now.plus(Time::from_secs(p.each));
        self.sleepers.push(Reverse((end, r)));
        self.block(r, Block::Sleep(end), "pack");
    }

    /// Rank `r` has copied its side of a joint [`Action::Pack`]: it goes on if `partner`
    /// has copied its side too (and releases it), else it waits for the partner.
    fn meet_partner(&mut self, r: u32, partner: u32) {
        let key = (r.min(partner), r.max(partner));
        if self.joints.get(&key) == Some(&partner) {
            self.joints.remove(&key);
            self.touched.push(partner);
        } else {
            self.joints.insert(key, r);
            self.block(r, Block::Partner(key), "pack");
        }
    }

    /// When the ranks computing on rank `r`'s oversubscribed core next yield it (`None`: none
    /// computes). One probing between chunks ([`Action::ComputeWhilePolling`]) yields at the
    /// end of its current chunk; one computing without MPI calls at the end of its time
    /// slice, a full slice after `r` yielded to it: twice
    /// [`SimConfig::oversubscribed_wake_up`], which is the median wait from a random date.
    fn next_yield_of_residents(&self, r: u32) -> Option<Time> {
        if !self.waits_for_a_core(r) {
            return None;
        }
        let now = self.now;
        let slice = now.plus(Time::from_secs(2.0 * self.config.oversubscribed_wake_up));
        let queue = self.ranks[r as usize].cpu_queue as usize;
        self.residents[queue]
            .iter()
            .filter(|&&o| o != r)
            .filter_map(|&o| match &self.ranks[o as usize].block {
                Block::Exec(_) => Some(slice),
                Block::Polling { exec, flops, .. } => {
                    let rate = self.cpu.rate(*exec);
                    if rate <= 0.0 {
                        return Some(slice);
                    }
                    let done = self.cpu.done_flops(*exec, now);
                    let chunk_end = ((done / flops + CHUNK_TIE).floor() + 1.0) * flops;
                    Some(
                        now.plus(Time::from_secs((chunk_end - done) / rate))
                            .min(slice),
                    )
                }
                _ => None,
            })
            .min()
    }

    /// Starts a computation of `flops` for rank `r` on its host (and core when bound).
    fn start_exec(&mut self, r: u32, flops: f64) -> ExecId {
        let rank = &self.ranks[r as usize];
        self.cpu.start_on(self.now, rank.host, rank.core, flops)
    }

    // ------------------------------------------------------------------ requests and matching

    fn world_rank(&self, comm: CommId, r: u32) -> Option<u32> {
        let c = self.comms.get(comm as usize)?.as_ref()?;
        if c.members.is_empty() {
            (r < c.size).then_some(r)
        } else {
            c.members.get(r as usize).copied()
        }
    }

    fn new_req(&mut self, req: Req) -> ReqIdx {
        match self.free_reqs.pop() {
            Some(i) => {
                self.reqs[i as usize] = req;
                i
            }
            None => {
                self.reqs.push(req);
                (self.reqs.len() - 1) as ReqIdx
            }
        }
    }

    /// The owner no longer refers to request `q` (idempotent); freed once its transfer is
    /// over.
    fn release(&mut self, q: ReqIdx) {
        let x = &mut self.reqs[q as usize];
        if x.released {
            return;
        }
        x.released = true;
        if x.finished {
            self.free_reqs.push(q);
        }
    }

    fn matches(&self, recv: &Req, send: &Req, sender: u32) -> bool {
        envelope_matches(recv.peer, recv.tag, recv.ctx, send, sender)
    }

    /// Posts a send of `me` to world rank `dst`.
    fn post_send(
        &mut self,
        me: u32,
        dst: u32,
        tag: i64,
        ctx: u32,
        bytes: u64,
        sync: bool,
    ) -> Result<ReqIdx, SimError> {
        if bytes > coll::MAX_COLLECTIVE_BYTES {
            return Err(SimError::Invalid {
                rank: me,
                message: format!("a message of {bytes} bytes (more than a pebibyte)"),
            });
        }
        let detached = !sync && bytes < self.config.eager_threshold;
        let q = self.new_req(Req {
            owner: me,
            kind: Kind::Send,
            peer: i64::from(dst),
            tag,
            ctx,
            bytes,
            complete: detached,
            matched: false,
            matched_at: Time::NEVER,
            finished: false,
            released: false,
            partner: i64::from(dst),
        });
        self.messages += 1;
        // The first matching receive posted at the destination, in posting order.
        let mb = &self.mailboxes[dst as usize];
        let hit = mb
            .recvs
            .iter()
            .position(|&rq| self.matches(&self.reqs[rq as usize], &self.reqs[q as usize], me));
        match hit {
            Some(pos) => {
                let rq = self.mailboxes[dst as usize].recvs.remove(pos).unwrap_or(q);
                self.start_transfer(q, rq, me, dst)?;
            }
            None => {
                self.mailboxes[dst as usize].sends.push_back(q);
                match self.ranks[dst as usize].block {
                    // A rank blocked probing for it can go on.
                    Block::Probe { .. } => self.touched.push(dst),
                    Block::Polling { .. } => self.polled_send_arrived(dst, q),
                    _ => {}
                }
            }
        }
        Ok(q)
    }

    /// Send `sq` just arrived in the mailbox of rank `r`, which computes while polling: if
    /// the probes match it, the computation ends with the chunk in progress.
    fn polled_send_arrived(&mut self, r: u32, sq: ReqIdx) {
        let now = self.now;
        let send = &self.reqs[sq as usize];
        let Block::Polling {
            exec,
            flops,
            chunks,
            found: false,
            src,
            tag,
            ctx,
        } = self.ranks[r as usize].block
        else {
            return;
        };
        if !envelope_matches(src, tag, ctx, send, send.owner) {
            return;
        }
        let done = self.cpu.done_flops(exec, now);
        // The probe after the chunk in progress finds it; a chunk ending right now (to
        // rounding) probes after the send arrived, as the loop's probe would.
        let upto = ((done / flops - CHUNK_TIE).ceil().max(1.0) as u64).min(chunks);
        self.cpu.set_total(exec, now, upto as f64 * flops);
        if let Block::Polling { chunks, found, .. } = &mut self.ranks[r as usize].block {
            *chunks = upto;
            *found = true;
        }
    }

    fn find_send(&self, me: u32, src: i64, tag: i64, ctx: u32) -> Option<usize> {
        self.mailboxes[me as usize].sends.iter().position(|&sq| {
            let send = &self.reqs[sq as usize];
            envelope_matches(src, tag, ctx, send, send.owner)
        })
    }

    /// Posts a receive of `me` from world rank `src` (or ANY).
    fn post_recv(
        &mut self,
        me: u32,
        src: i64,
        tag: i64,
        ctx: u32,
        bytes: u64,
    ) -> Result<ReqIdx, SimError> {
        let q = self.new_req(Req {
            owner: me,
            kind: Kind::Recv,
            peer: src,
            tag,
            ctx,
            bytes,
            complete: false,
            matched: false,
            matched_at: Time::NEVER,
            finished: false,
            released: false,
            partner: ANY,
        });
        match self.find_send(me, src, tag, ctx) {
            Some(pos) => {
                let sq = self.mailboxes[me as usize].sends.remove(pos).unwrap_or(q);
                let sender = self.reqs[sq as usize].owner;
                self.start_transfer(sq, q, sender, me)?;
            }
            None => self.mailboxes[me as usize].recvs.push_back(q),
        }
        Ok(q)
    }

    fn start_transfer(
        &mut self,
        sq: ReqIdx,
        rq: ReqIdx,
        sender: u32,
        receiver: u32,
    ) -> Result<(), SimError> {
        let now = self.now;
        for q in [sq, rq] {
            let x = &mut self.reqs[q as usize];
            x.matched = true;
            x.matched_at = now;
        }
        self.reqs[rq as usize].partner = i64::from(sender);
        let bytes = self.reqs[sq as usize].bytes;
        let (hs, hr) = (
            self.ranks[sender as usize].host,
            self.ranks[receiver as usize].host,
        );
        let t = self.net.start(self.platform, now, hs, hr, bytes)?;
        self.transfers.insert(t, (sq, rq));
        Ok(())
    }

    fn transfer_finished(&mut self, sq: ReqIdx, rq: ReqIdx) {
        for q in [sq, rq] {
            let x = &mut self.reqs[q as usize];
            x.finished = true;
            let newly = !x.complete;
            x.complete = true;
            let owner = x.owner;
            if x.released {
                self.free_reqs.push(q);
            }
            if newly {
                self.touched.push(owner);
            }
        }
    }

    // ------------------------------------------------------------------ running a rank

    fn block(&mut self, r: u32, block: Block, name: &'static str) {
        let now = self.now;
        let rank = &mut self.ranks[r as usize];
        rank.block = block;
        rank.blocked_since = now;
        rank.blocked_name = name;
        // It may already hold (a request completed in this very step).
        self.touched.push(r);
    }

    /// Runs rank `r` until it blocks or ends.
    fn run_rank(&mut self, r: u32) -> Result<(), SimError> {
        loop {
            if !matches!(self.ranks[r as usize].block, Block::None) || self.ranks[r as usize].done {
                return Ok(());
            }
            if self.ranks[r as usize].coll.is_some() {
                self.step_collective(r)?;
                continue;
            }
            // Packs go fragment by fragment only on oversubscribed cores.
            if self.any_oversubscribed {
                if let Some(p) = self.ranks[r as usize].packing {
                    self.next_fragment(r, p);
                    continue;
                }
            }
            if let Some(partner) = self.ranks[r as usize].pack_with.take() {
                self.meet_partner(r, partner);
                continue;
            }
            let mut last = std::mem::take(&mut self.ranks[r as usize].last);
            if let Some((src, tag, ctx)) = self.ranks[r as usize].final_probe.take() {
                if let Outcome::Polled { chunks, .. } = last {
                    let found = self.find_send(r, src, tag, ctx).is_some();
                    last = Outcome::Polled { chunks, found };
                }
            }
            let action = match self.workloads[r as usize].next(last) {
                None => Action::Finalize,
                Some(a) => a?,
            };
            self.actions += 1;
            self.execute(r, action)?;
        }
    }

    fn execute(&mut self, r: u32, action: Action) -> Result<(), SimError> {
        let now = self.now;
        check_amounts(r, &action)?;
        match action {
            Action::Compute { flops } => {
                if flops > 0.0 {
                    let e = self.start_exec(r, flops);
                    self.execs.insert(e, r);
                    self.block(r, Block::Exec(e), "compute");
                }
            }
            Action::Sleep { secs } => {
                if secs > 0.0 {
                    let end = now.plus(Time::from_secs(secs));
                    self.sleepers.push(Reverse((end, r)));
                    self.block(r, Block::Sleep(end), "sleep");
                }
            }
            Action::Pack {
                secs,
                fragments,
                with,
            } => {
                self.ranks[r as usize].pack_with = with.filter(|&w| w != r);
                let queue = self.ranks[r as usize].cpu_queue as usize;
                if fragments > 1 && self.oversubscribed[queue] {
                    let p = Packing {
                        left: fragments,
                        each: secs / f64::from(fragments),
                        yielded: false,
                    };
                    self.next_fragment(r, p);
                } else if secs > 0.0 {
                    let end = now.plus(Time::from_secs(secs));
                    self.sleepers.push(Reverse((end, r)));
                    self.block(r, Block::Sleep(end), "pack");
                }
            }
            Action::Callsite(c) => self.ranks[r as usize].callsite = c,
            Action::Clock => self.ranks[r as usize].last = Outcome::Time(now.0),
            Action::Send {
                dst,
                tag,
                bytes,
                comm,
                req,
                sync,
            } => {
                self.count_call(r);
                let w = self.destination(r, comm, dst, "send")?;
                let q = self.post_send(r, w, tag, comm * 2, bytes, sync)?;
                match req {
                    Some(h) => {
                        self.ranks[r as usize].user_reqs.insert(h, q);
                    }
                    None => {
                        if self.reqs[q as usize].complete {
                            self.release(q);
                        } else {
                            self.block(r, Block::Reqs(WaitList::from_elem(q, 1), true), "send");
                        }
                    }
                }
            }
            Action::Recv {
                src,
                tag,
                bytes,
                comm,
                req,
            } => {
                self.count_call(r);
                let w = if src == ANY {
                    ANY
                } else {
                    i64::from(self.world_rank(comm, src as u32).ok_or_else(|| SimError::Invalid {
                        rank: r,
                        message: format!("receive from rank {src} of communicator {comm}, which has no such rank"),
                    })?)
                };
                let q = self.post_recv(r, w, tag, comm * 2, bytes)?;
                match req {
                    Some(h) => {
                        self.ranks[r as usize].user_reqs.insert(h, q);
                    }
                    None => self.block(r, Block::Reqs(WaitList::from_elem(q, 1), true), "recv"),
                }
            }
            Action::Sendrecv {
                dst,
                send_bytes,
                src,
                recv_bytes,
                tag,
                comm,
            } => {
                self.count_call(r);
                let to = self.destination(r, comm, dst, "sendrecv")?;
                let from = self.peer_world(r, comm, src)?;
                let rq = self.post_recv(r, from, tag, comm * 2, recv_bytes)?;
                let sq = self.post_send(r, to, tag, comm * 2, send_bytes, false)?;
                self.wait_for(r, WaitList::from_buf([rq, sq]), "sendrecv");
            }
            Action::Wait { reqs } => {
                self.count_call(r);
                let mut qs = WaitList::with_capacity(reqs.len());
                for h in reqs {
                    if let Some(q) = self.ranks[r as usize].user_reqs.remove(&h) {
                        qs.push(q);
                    }
                }
                self.wait_for(r, qs, "wait");
            }
            Action::Test { req } => {
                self.count_call(r);
                let flag = match self.ranks[r as usize].user_reqs.get(&req).copied() {
                    Some(q) if self.reqs[q as usize].complete => {
                        self.ranks[r as usize].user_reqs.remove(&req);
                        self.release(q);
                        true
                    }
                    Some(_) => false,
                    None => true,
                };
                self.ranks[r as usize].last = Outcome::Flag(flag);
                self.poll_cost(r);
            }
            Action::Probe { src, tag, comm } => {
                self.count_call(r);
                let w = self.peer_world(r, comm, src)?;
                if self.find_send(r, w, tag, comm * 2).is_none() {
                    self.block(
                        r,
                        Block::Probe {
                            src: w,
                            tag,
                            ctx: comm * 2,
                        },
                        "probe",
                    );
                }
            }
            Action::ComputeWhilePolling {
                flops,
                chunks,
                src,
                tag,
                comm,
            } => {
                let w = self.peer_world(r, comm, src)?;
                let ctx = comm * 2;
                // A message already there: the first probe finds it.
                let found = self.find_send(r, w, tag, ctx).is_some();
                let chunks = if found { 1 } else { chunks.max(1) };
                let e = self.start_exec(r, flops.max(0.0) * chunks as f64);
                self.execs.insert(e, r);
                let block = Block::Polling {
                    exec: e,
                    flops: flops.max(f64::MIN_POSITIVE),
                    chunks,
                    found,
                    src: w,
                    tag,
                    ctx,
                };
                self.block(r, block, "compute");
            }
            Action::Iprobe { src, tag, comm } => {
                self.count_call(r);
                let w = self.peer_world(r, comm, src)?;
                let flag = self.find_send(r, w, tag, comm * 2).is_some();
                self.ranks[r as usize].last = Outcome::Flag(flag);
                self.poll_cost(r);
            }
            Action::Collective {
                args,
                comm,
                comp_flops,
                req,
            } => {
                self.count_call(r);
                let forced = self.config.forced.get(&args.kind).map(String::as_str);
                let program = coll::program(&args, self.config.selector, forced)
                    .map_err(|e| SimError::Collective { rank: r, source: e })?;
                let run = CollRun {
                    program,
                    comm,
                    reqs: Vec::new(),
                    waited: 0,
                    comp_flops,
                    name: coll_name(args.kind),
                };
                match req {
                    None => self.ranks[r as usize].coll = Some(run),
                    Some(h) => {
                        // Non-blocking: the rank goes on; the handle completes at the end.
                        let q = self.new_req(Req {
                            owner: r,
                            kind: Kind::Send,
                            peer: ANY,
                            tag: 0,
                            ctx: NBC_CTX,
                            bytes: 0,
                            complete: false,
                            matched: false,
                            matched_at: now,
                            finished: false,
                            released: false,
                            partner: ANY,
                        });
                        if let Some(old) = self.ranks[r as usize].user_reqs.insert(h, q) {
                            self.release(old);
                        }
                        let mut b = Background {
                            run,
                            done_req: q,
                            waiting: Vec::new(),
                            release: false,
                            exec: None,
                            program_done: false,
                            computed: false,
                        };
                        if !self.step_background(r, &mut b)? {
                            self.ranks[r as usize].background.push(b);
                        }
                    }
                }
            }
            Action::DefineComm { comm, members } => {
                let idx = comm as usize;
                if self.comms.len() <= idx {
                    self.comms.resize(idx + 1, None);
                }
                if self.comms[idx].is_none() {
                    let size = members.len() as u32;
                    self.comms[idx] = Some(Comm { members, size });
                }
            }
            Action::Finalize => {
                // Outstanding requests are waited for (as SMPI does at the end of a replay).
                let mut pending: Vec<ReqIdx> = self.ranks[r as usize]
                    .user_reqs
                    .drain()
                    .map(|(_, q)| q)
                    .collect();
                pending.sort_unstable();
                let unfinished: WaitList = pending
                    .iter()
                    .copied()
                    .filter(|&q| !self.reqs[q as usize].complete)
                    .collect();
                for &q in &pending {
                    if self.reqs[q as usize].complete {
                        self.release(q);
                    }
                }
                if !unfinished.is_empty() {
                    self.block(r, Block::Reqs(unfinished, true), "finalize");
                    // Run again once done, then end.
                    self.ranks[r as usize].last = Outcome::None;
                    return Ok(());
                }
                let rank = &mut self.ranks[r as usize];
                rank.done = true;
                rank.result.end_s = now.secs();
            }
        }
        Ok(())
    }

    /// World rank of destination `dst` of `comm` for rank `r`'s `call`.
    fn destination(&self, r: u32, comm: CommId, dst: u32, call: &str) -> Result<u32, SimError> {
        self.world_rank(comm, dst).ok_or_else(|| SimError::Invalid {
            rank: r,
            message: format!("{call} to rank {dst} of communicator {comm}, which has no such rank"),
        })
    }

    /// Rank `r` goes on if requests `qs` are all complete (and drops them), else blocks in
    /// `call` until they are.
    fn wait_for(&mut self, r: u32, qs: WaitList, call: &'static str) {
        if qs.iter().all(|&q| self.reqs[q as usize].complete) {
            for q in qs {
                self.release(q);
            }
        } else {
            self.block(r, Block::Reqs(qs, true), call);
        }
    }

    fn peer_world(&self, r: u32, comm: CommId, src: i64) -> Result<i64, SimError> {
        if src == ANY {
            return Ok(ANY);
        }
        self.world_rank(comm, src as u32)
            .map(i64::from)
            .ok_or_else(|| SimError::Invalid {
                rank: r,
                message: format!("rank {src} does not exist in communicator {comm}"),
            })
    }

    fn count_call(&mut self, r: u32) {
        let rank = &mut self.ranks[r as usize];
        rank.result.mpi_calls += 1;
        rank.callsite_entry().1 += 1;
    }

    fn poll_cost(&mut self, r: u32) {
        if self.config.poll_cost > 0.0 {
            let end = self.now.plus(Time::from_secs(self.config.poll_cost));
            self.sleepers.push(Reverse((end, r)));
            self.block(r, Block::Sleep(end), "poll");
        }
    }

    /// Steps every non-blocking collective of rank `r` whose awaited requests and
    /// computation are done, in the order they were started.
    fn progress_background(&mut self, r: u32) -> Result<(), SimError> {
        let mut all = std::mem::take(&mut self.ranks[r as usize].background);
        let mut result = Ok(());
        let mut k = 0;
        while k < all.len() {
            let b = &all[k];
            let ready = b.waiting.iter().all(|&q| self.reqs[q as usize].complete)
                && b.exec
                    .is_none_or(|e| !self.background_execs.contains_key(&e));
            if ready {
                match self.step_background(r, &mut all[k]) {
                    Ok(true) => {
                        all.remove(k);
                        continue;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            k += 1;
        }
        self.ranks[r as usize].background = all;
        result
    }

    /// Runs a non-blocking collective of rank `r` until it needs a request or a computation
    /// to finish; true when it is over (its handle is then complete).
    fn step_background(&mut self, r: u32, b: &mut Background) -> Result<bool, SimError> {
        let waited = std::mem::take(&mut b.waiting);
        if b.release {
            for q in waited {
                self.release(q);
            }
        }
        b.release = false;
        b.exec = None;
        loop {
            if b.program_done {
                let pending: Vec<ReqIdx> = b
                    .run
                    .reqs
                    .iter()
                    .copied()
                    .filter(|&q| !self.reqs[q as usize].complete)
                    .collect();
                if !pending.is_empty() {
                    b.waiting = pending;
                    return Ok(false);
                }
                if !b.computed && b.run.comp_flops > 0.0 {
                    b.computed = true;
                    let e = self.start_exec(r, b.run.comp_flops);
                    self.background_execs.insert(e, r);
                    b.exec = Some(e);
                    return Ok(false);
                }
                for q in std::mem::take(&mut b.run.reqs) {
                    self.release(q);
                }
                let now = self.now;
                let x = &mut self.reqs[b.done_req as usize];
                x.complete = true;
                x.finished = true;
                x.matched = true;
                x.matched_at = now;
                if x.released {
                    self.free_reqs.push(b.done_req);
                }
                self.touched.push(r);
                return Ok(true);
            }
            let op = b.run.program.next_op();
            match self.collective_op(r, &mut b.run, op)? {
                CollStep::Continue => {}
                CollStep::Wait(reqs, release) => {
                    b.waiting = reqs;
                    b.release = release;
                    return Ok(false);
                }
                CollStep::Compute(flops) => {
                    let e = self.start_exec(r, flops);
                    self.background_execs.insert(e, r);
                    b.exec = Some(e);
                    return Ok(false);
                }
                CollStep::Done => b.program_done = true,
            }
        }
    }

    /// Performs one step `op` of collective `run` of rank `r` (`None`: the program is over)
    /// and says what must happen before the next one.
    fn collective_op(
        &mut self,
        r: u32,
        run: &mut CollRun,
        op: Option<POp>,
    ) -> Result<CollStep, SimError> {
        let comm = run.comm;
        let ctx = comm * 2 + COLL_CTX;
        let name = run.name;
        let to_world = |s: &Self, peer: u32| {
            s.world_rank(comm, peer).ok_or_else(|| SimError::Invalid {
                rank: r,
                message: format!("{name}: peer {peer} outside communicator {comm}"),
            })
        };
        Ok(match op {
            None => CollStep::Done,
            Some(POp::Send { peer, bytes, tag }) => {
                let w = to_world(self, peer)?;
                let q = self.post_send(r, w, i64::from(tag), ctx, bytes, false)?;
                if self.reqs[q as usize].complete {
                    self.release(q);
                    CollStep::Continue
                } else {
                    CollStep::Wait(vec![q], true)
                }
            }
            Some(POp::Recv { peer, bytes, tag }) => {
                let w = to_world(self, peer)?;
                let q = self.post_recv(r, i64::from(w), i64::from(tag), ctx, bytes)?;
                CollStep::Wait(vec![q], true)
            }
            Some(POp::Isend { peer, bytes, tag }) => {
                let w = to_world(self, peer)?;
                let q = self.post_send(r, w, i64::from(tag), ctx, bytes, false)?;
                run.reqs.push(q);
                CollStep::Continue
            }
            Some(POp::Irecv { peer, bytes, tag }) => {
                let w = to_world(self, peer)?;
                let q = self.post_recv(r, i64::from(w), i64::from(tag), ctx, bytes)?;
                run.reqs.push(q);
                CollStep::Continue
            }
            Some(POp::Wait(n)) => {
                let q = *run.reqs.get(n as usize).ok_or_else(|| SimError::Invalid {
                    rank: r,
                    message: format!("{name}: wait for request {n} of {} posted", run.reqs.len()),
                })?;
                if self.reqs[q as usize].complete {
                    CollStep::Continue
                } else {
                    CollStep::Wait(vec![q], false)
                }
            }
            Some(POp::WaitAll) => {
                let pending: Vec<ReqIdx> = run.reqs[run.waited..].to_vec();
                run.waited = run.reqs.len();
                if pending.iter().any(|&q| !self.reqs[q as usize].complete) {
                    CollStep::Wait(pending, false)
                } else {
                    CollStep::Continue
                }
            }
            Some(POp::Compute(flops)) if flops > 0.0 => CollStep::Compute(flops),
            Some(POp::Compute(_)) => CollStep::Continue,
        })
    }

    fn step_collective(&mut self, r: u32) -> Result<(), SimError> {
        let Some(mut run) = self.ranks[r as usize].coll.take() else {
            return Ok(());
        };
        let op = run.program.next_op();
        let name = run.name;
        match self.collective_op(r, &mut run, op)? {
            CollStep::Done => {
                // Done: outstanding requests are waited, then the reduction's computation.
                let pending: WaitList = run
                    .reqs
                    .iter()
                    .copied()
                    .filter(|&q| !self.reqs[q as usize].complete)
                    .collect();
                if !pending.is_empty() {
                    self.ranks[r as usize].coll = Some(run);
                    self.block(r, Block::Reqs(pending, false), name);
                    return Ok(());
                }
                for &q in &run.reqs {
                    self.release(q);
                }
                if run.comp_flops > 0.0 {
                    let e = self.start_exec(r, run.comp_flops);
                    self.execs.insert(e, r);
                    self.block(r, Block::Exec(e), "compute");
                }
                return Ok(());
            }
            CollStep::Continue => {}
            CollStep::Wait(reqs, release) => {
                self.block(r, Block::Reqs(WaitList::from_vec(reqs), release), name)
            }
            CollStep::Compute(flops) => {
                let e = self.start_exec(r, flops);
                self.execs.insert(e, r);
                self.block(r, Block::Exec(e), "compute");
            }
        }
        self.ranks[r as usize].coll = Some(run);
        Ok(())
    }
}

/// What a collective needs before its next step.
enum CollStep {
    /// Nothing: go on.
    Continue,
    /// These requests complete (released then when the flag is set).
    Wait(Vec<ReqIdx>, bool),
    /// This many flops computed.
    Compute(f64),
    /// The program is over.
    Done,
}

fn coll_name(k: Collective) -> &'static str {
    match k {
        Collective::Barrier => "MPI_Barrier",
        Collective::Bcast => "MPI_Bcast",
        Collective::Reduce => "MPI_Reduce",
        Collective::Allreduce => "MPI_Allreduce",
        Collective::Alltoall => "MPI_Alltoall",
        Collective::Alltoallv => "MPI_Alltoallv",
        Collective::Gather => "MPI_Gather",
        Collective::Gatherv => "MPI_Gatherv",
        Collective::Scatter => "MPI_Scatter",
        Collective::Scatterv => "MPI_Scatterv",
        Collective::Allgather => "MPI_Allgather",
        Collective::Allgatherv => "MPI_Allgatherv",
        Collective::ReduceScatter => "MPI_Reduce_scatter",
        Collective::Scan => "MPI_Scan",
        Collective::Exscan => "MPI_Exscan",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::CollArgs;
    use crate::platform::{Host, Link, LinkId, Routing, Sharing};
    use crate::workload::{Action, Outcome, RankWorkload, WorkloadError};

    /// Routes from a table (test platforms).
    #[derive(Debug)]
    struct Table(HashMap<(HostId, HostId), Vec<LinkId>>);

    impl Routing for Table {
        fn route(
            &self,
            src: HostId,
            dst: HostId,
            out: &mut Vec<LinkId>,
        ) -> Result<(), PlatformError> {
            out.extend(self.0.get(&(src, dst)).cloned().unwrap_or_default());
            Ok(())
        }
    }

    fn host(name: &str, cores: u32) -> Host {
        Host {
            name: name.into(),
            speed: 1e9,
            cores,
            watts_idle: 0.0,
            watts_max: 0.0,
        }
    }

    fn link(name: &str, lat: f64) -> Link {
        Link {
            name: name.into(),
            bandwidth: 1e9,
            latency: lat,
            sharing: Sharing::Shared,
        }
    }

    /// Two hosts, one shared link used both ways (SimGrid note's p1.xml).
    fn p1() -> Platform {
        let mut t = HashMap::new();
        t.insert((0, 1), vec![0]);
        t.insert((1, 0), vec![0]);
        Platform::new(
            vec![host("h0", 1), host("h1", 1)],
            vec![link("l", 1e-5)],
            Box::new(Table(t)),
        )
    }

    struct Script(VecDeque<Action>);

    impl RankWorkload for Script {
        fn next(&mut self, _last: Outcome) -> Option<Result<Action, WorkloadError>> {
            self.0.pop_front().map(Ok)
        }
    }

    fn run(p: &Platform, hosts: Vec<HostId>, scripts: Vec<Vec<Action>>) -> SimResult {
        let w: Vec<Box<dyn RankWorkload>> = scripts
            .into_iter()
            .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
            .collect();
        Simulation::new(p, SimConfig::default(), hosts, w)
            .unwrap()
            .run()
            .unwrap()
    }

    fn send(dst: u32, bytes: u64) -> Action {
        Action::Send {
            dst,
            tag: 0,
            bytes,
            comm: 0,
            req: None,
            sync: false,
        }
    }

    fn recv(src: i64, bytes: u64) -> Action {
        Action::Recv {
            src,
            tag: 0,
            bytes,
            comm: 0,
            req: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-9) + 2e-12
    }

    fn coll(kind: Collective, size: u32, rank: u32, bytes: u64, req: Option<ReqHandle>) -> Action {
        Action::Collective {
            args: CollArgs {
                kind,
                size,
                rank,
                root: 0,
                count: bytes,
                recv_count: bytes,
                dtype_size: 1,
                recv_dtype_size: 1,
                send_counts: Vec::new(),
                recv_counts: Vec::new(),
            },
            comm: 0,
            comp_flops: 0.0,
            req,
        }
    }

    #[test]
    fn non_blocking_collectives_overlap_computation() {
        let p = p1();
        // Both ranks run the script `f(rank)`.
        let both = |f: &dyn Fn(u32) -> Vec<Action>| run(&p, vec![0, 1], (0..2).map(f).collect());
        let bcast = |r, req| coll(Collective::Bcast, 2, r, 10_000_000, req);
        let work = || Action::Compute { flops: 1e7 }; // 10 ms on a 1 Gf host
        let wait = |h| Action::Wait { reqs: vec![h] };
        let blocking = both(&|r| vec![bcast(r, None), work()]).makespan_s;
        let alone = both(&|r| vec![bcast(r, None)]).makespan_s;
        let overlapped = both(&|r| vec![bcast(r, Some(7)), work(), wait(7)]).makespan_s;
        let waited = both(&|r| vec![bcast(r, Some(1)), wait(1)]).makespan_s;
        let (b, a, o) = (blocking, alone, overlapped);
        assert!(a > 0.009, "the broadcast alone takes {a}");
        assert!(
            close(b, a + 0.01) || b > a + 0.0099,
            "blocking: {b} vs {a} + 10 ms"
        );
        // Overlapped: the longer of the two, not their sum.
        assert!(o >= a.max(0.01) - 1e-12, "overlapped {o} < max({a}, 0.01)");
        assert!(o < a.max(0.01) + 1e-6, "overlapped {o}, broadcast {a}");
        // Waiting at once: the rank waits for the data.
        assert!(close(waited, a), "{waited} vs {a}");
    }

    #[test]
    fn several_non_blocking_collectives_in_flight() {
        let p = p1();
        let scripts: Vec<Vec<Action>> = (0..2)
            .map(|r| {
                vec![
                    coll(Collective::Allreduce, 2, r, 100_000, Some(1)),
                    coll(Collective::Bcast, 2, r, 1_000, Some(2)),
                    coll(Collective::Barrier, 2, r, 0, None),
                    coll(Collective::Alltoall, 2, r, 50_000, Some(3)),
                    Action::Wait { reqs: vec![3, 1] },
                    Action::Wait { reqs: vec![2] },
                ]
            })
            .collect();
        let a = run(&p, vec![0, 1], scripts.clone());
        let b = run(&p, vec![0, 1], scripts);
        assert!(a.makespan_s > 0.0);
        assert_eq!(a.makespan_s, b.makespan_s);
        // A handle never waited is completed at finalize.
        let c = run(
            &p,
            vec![0, 1],
            (0..2)
                .map(|r| vec![coll(Collective::Allreduce, 2, r, 1_000_000, Some(9))])
                .collect(),
        );
        assert!(c.makespan_s > 0.001, "{}", c.makespan_s);
    }

    #[test]
    fn one_message_matches_simgrid() {
        let p = p1();
        let r = run(
            &p,
            vec![0, 1],
            vec![vec![send(1, 1_000_000)], vec![recv(0, 1_000_000)]],
        );
        // SimGrid 3.32 CM02: 1e-5 + 1000016 * 1.05 / 1e9 (measured 0.001060016800).
        assert!(close(r.makespan_s, 0.0010600168), "{}", r.makespan_s);
        assert!(close(r.ranks[1].end_s, 0.0010600168));
    }

    /// Rank 0 of [`polling`]: computes 10 chunks of 1 ms, probing for rank 1's message
    /// after each (one action, or the loop), then receives it; records (chunks, found, end).
    struct Poller {
        one_action: bool,
        step: u32,
        chunks: u64,
        seen: Option<(u64, bool)>,
        out: std::sync::Arc<std::sync::Mutex<(u64, bool, u64)>>,
    }

    impl RankWorkload for Poller {
        fn next(&mut self, last: Outcome) -> Option<Result<Action, WorkloadError>> {
            const PROBE: (i64, i64) = (1, 5);
            let compute = Action::Compute { flops: 1e6 };
            let receive = Action::Recv {
                src: 1,
                tag: 5,
                bytes: 100,
                comm: 0,
                req: None,
            };
            self.step += 1;
            let action = match (self.step, last) {
                (1, _) if self.one_action => Action::ComputeWhilePolling {
                    flops: 1e6,
                    chunks: 10,
                    src: PROBE.0,
                    tag: PROBE.1,
                    comm: 0,
                },
                (_, Outcome::Polled { chunks, found }) => {
                    self.seen = Some((chunks, found));
                    receive
                }
                (1, _) => compute,
                (_, Outcome::Flag(found)) => {
                    self.chunks += 1;
                    if found || self.chunks == 10 {
                        self.seen = Some((self.chunks, found));
                        receive
                    } else {
                        compute
                    }
                }
                (_, Outcome::Time(t)) => {
                    let (c, f) = self.seen.expect("polled");
                    *self.out.lock().unwrap() = (c, f, t);
                    return None;
                }
                _ if self.seen.is_some() => Action::Clock,
                _ => Action::Iprobe {
                    src: PROBE.0,
                    tag: PROBE.1,
                    comm: 0,
                },
            };
            Some(Ok(action))
        }
    }

    /// (chunks computed, found, end in ps) of a [`Poller`] whose message rank 1 sends after
    /// `delay` seconds.
    fn polling(one_action: bool, delay: f64) -> (u64, bool, u64) {
        let out = std::sync::Arc::new(std::sync::Mutex::new((0, false, 0)));
        let poller = Poller {
            one_action,
            step: 0,
            chunks: 0,
            seen: None,
            out: out.clone(),
        };
        let sender = Script(
            vec![
                Action::Sleep { secs: delay },
                Action::Send {
                    dst: 0,
                    tag: 5,
                    bytes: 100,
                    comm: 0,
                    req: None,
                    sync: false,
                },
            ]
            .into(),
        );
        let w: Vec<Box<dyn RankWorkload>> = vec![Box::new(poller), Box::new(sender)];
        let r = Simulation::new(&p1(), SimConfig::default(), vec![0, 1], w)
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(r.ranks[0].mpi_calls, out.lock().unwrap().0 + 1);
        let got = *out.lock().unwrap();
        got
    }

    #[test]
    fn sendrecv_is_irecv_isend_wait() {
        let sendrecv = |me: u32, bytes: u64| Action::Sendrecv {
            dst: 1 - me,
            send_bytes: bytes,
            src: i64::from(1 - me),
            recv_bytes: 2_000_000 - bytes,
            tag: 3,
            comm: 0,
        };
        let three = |me: u32, bytes: u64| {
            vec![
                Action::Recv {
                    src: i64::from(1 - me),
                    tag: 3,
                    bytes: 2_000_000 - bytes,
                    comm: 0,
                    req: Some(1),
                },
                Action::Send {
                    dst: 1 - me,
                    tag: 3,
                    bytes,
                    comm: 0,
                    req: Some(2),
                    sync: false,
                },
                Action::Wait { reqs: vec![1, 2] },
            ]
        };
        let one = run(
            &p1(),
            vec![0, 1],
            vec![vec![sendrecv(0, 1_500_000)], vec![sendrecv(1, 500_000)]],
        );
        let split = run(
            &p1(),
            vec![0, 1],
            vec![three(0, 1_500_000), three(1, 500_000)],
        );
        assert!(one.makespan_s > 1e-3, "{}", one.makespan_s);
        for r in 0..2 {
            assert_eq!(one.ranks[r].end_s, split.ranks[r].end_s);
        }
    }

    #[test]
    fn a_sleep_takes_its_time() {
        let r = run(
            &p1(),
            vec![0, 1],
            vec![vec![Action::Sleep { secs: 0.25 }], vec![]],
        );
        assert!(close(r.ranks[0].end_s, 0.25), "{}", r.ranks[0].end_s);
    }

    #[test]
    fn computing_while_polling_is_the_loop_of_computations_and_probes() {
        for delay in [0.0, 0.0004, 0.0015, 0.00371, 0.0099, 0.02] {
            let one = polling(true, delay);
            assert_eq!(one, polling(false, delay), "message sent at {delay} s");
            let expected = ((delay * 1e3).floor() as u64 + 1).min(10);
            assert_eq!(
                (one.0, one.1),
                (expected, delay < 0.01),
                "message sent at {delay} s"
            );
        }
        // A message sent as a chunk ends counts as seen by that chunk's probe (the loop's
        // probe may run before or after the sender at that instant).
        assert_eq!(polling(true, 0.003).0, 3);
    }

    #[test]
    fn two_flows_share_a_link() {
        let p = p1();
        let r = run(
            &p,
            vec![0, 1],
            vec![
                vec![
                    Action::Send {
                        dst: 1,
                        tag: 0,
                        bytes: 1_000_000,
                        comm: 0,
                        req: Some(1),
                        sync: false,
                    },
                    Action::Send {
                        dst: 1,
                        tag: 1,
                        bytes: 1_000_000,
                        comm: 0,
                        req: Some(2),
                        sync: false,
                    },
                    Action::Wait { reqs: vec![1, 2] },
                ],
                vec![
                    Action::Recv {
                        src: 0,
                        tag: 0,
                        bytes: 1_000_000,
                        comm: 0,
                        req: Some(1),
                    },
                    Action::Recv {
                        src: 0,
                        tag: 1,
                        bytes: 1_000_000,
                        comm: 0,
                        req: Some(2),
                    },
                    Action::Wait { reqs: vec![1, 2] },
                ],
            ],
        );
        // Measured 0.002110033600.
        assert!(close(r.makespan_s, 0.0021100336), "{}", r.makespan_s);
    }

    #[test]
    fn eager_threshold() {
        // Rank 1 computes 1 s, then receives; rank 0 sends then computes 1000 flops.
        let p = p1();
        for (size, send_end, recv_end) in [
            (65535u64, 1e-6, 1.00007882855),
            (65536, 1.0000788296 + 1e-6, 1.0000788296),
        ] {
            let r = run(
                &p,
                vec![0, 1],
                vec![
                    vec![send(1, size), Action::Compute { flops: 1000.0 }],
                    vec![Action::Compute { flops: 1e9 }, recv(0, size)],
                ],
            );
            assert!(
                close(r.ranks[0].end_s, send_end),
                "{size}: sender ends {}",
                r.ranks[0].end_s
            );
            assert!(
                close(r.ranks[1].end_s, recv_end),
                "{size}: receiver ends {}",
                r.ranks[1].end_s
            );
        }
    }

    #[test]
    fn ranks_share_cores() {
        let p = p1();
        let r = run(
            &p,
            vec![0, 0],
            vec![
                vec![Action::Compute { flops: 1e9 }],
                vec![Action::Compute { flops: 5e8 }],
            ],
        );
        assert!(
            close(r.ranks[0].end_s, 1.5) && close(r.ranks[1].end_s, 1.0),
            "{:?}",
            r.ranks
        );
    }

    /// End dates of `scripts`' ranks on one host of `cores` cores (bound: rank k on core
    /// k mod cores), with an oversubscribed wake-up of `wake_up` seconds.
    fn ends_on_one_host(
        cores: u32,
        bind_to_core: bool,
        wake_up: f64,
        scripts: Vec<Vec<Action>>,
    ) -> Vec<f64> {
        let p = Platform::new(
            vec![host("h", cores)],
            Vec::new(),
            Box::new(Table(HashMap::new())),
        );
        let n = scripts.len();
        let w: Vec<Box<dyn RankWorkload>> = scripts
            .into_iter()
            .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
            .collect();
        let config = SimConfig {
            bind_to_core,
            oversubscribed_wake_up: wake_up,
            ..SimConfig::default()
        };
        let r = Simulation::new(&p, config, vec![0; n], w)
            .unwrap()
            .run()
            .unwrap();
        r.ranks.iter().map(|r| r.end_s).collect()
    }

    /// End dates of four ranks on one host of `cores` cores: rank 1 receives from rank 0
    /// while ranks 2 and 3 compute 1 s and 0.2 s, then computes 0.1 s.
    fn four_ranks_on(cores: u32, bind_to_core: bool, wake_up: f64) -> Vec<f64> {
        let scripts = vec![
            vec![send(1, 0)],
            vec![recv(0, 0), Action::Compute { flops: 1e8 }],
            vec![Action::Compute { flops: 1e9 }],
            vec![Action::Compute { flops: 2e8 }],
        ];
        ends_on_one_host(cores, bind_to_core, wake_up, scripts)
    }

    #[test]
    fn a_waiting_rank_gets_its_core_back_after_the_wake_up_delay_or_a_computation() {
        // Bound: ranks 0 and 2 on core 0, ranks 1 and 3 on core 1. Without the delay rank 1
        // shares core 1 with rank 3 at once (both at half speed: 1 ends at 0.2, 3 at 0.3).
        let e = four_ranks_on(2, true, 0.0);
        assert!(
            close(e[1], 0.2) && close(e[3], 0.3) && close(e[2], 1.0),
            "{e:?}"
        );
        // A 0.5 s delay: rank 1 gets core 1 when rank 3's computation ends at 0.2.
        let e = four_ranks_on(2, true, 0.5);
        assert!(
            close(e[1], 0.3) && close(e[3], 0.2) && close(e[2], 1.0),
            "{e:?}"
        );
        // A 0.05 s delay: rank 1 runs from 0.05, sharing core 1 (3 ends at 0.3, 1 at 0.25).
        let e = four_ranks_on(2, true, 0.05);
        assert!(close(e[1], 0.25) && close(e[3], 0.3), "{e:?}");
        // Unbound ranks do not wait for a core: rank 1 shares the host's two cores with ranks
        // 2 and 3 at once, delay or not.
        assert_eq!(four_ranks_on(2, false, 0.5), four_ranks_on(2, false, 0.0));
        let e = four_ranks_on(2, false, 0.5);
        assert!(close(e[1], 0.15) && close(e[3], 0.25), "{e:?}");
        // Four cores for four ranks: nobody waits for a core.
        let e = four_ranks_on(4, true, 0.5);
        assert!(close(e[1], 0.1) && close(e[3], 0.2), "{e:?}");
        let e = four_ranks_on(4, false, 0.5);
        assert!(close(e[1], 0.1) && close(e[3], 0.2), "{e:?}");
    }

    /// End dates of four ranks on one host of 2 cores (ranks 0 and 2 on core 0 when bound,
    /// 1 and 3 on core 1), an oversubscribed wake-up of 0.01 s.
    fn two_cores_ends(bind_to_core: bool, scripts: Vec<Vec<Action>>) -> Vec<f64> {
        ends_on_one_host(2, bind_to_core, 0.01, scripts)
    }

    #[test]
    fn packs_on_a_shared_core_take_turns_and_wait_for_the_computing_rank_to_yield() {
        let pack = || Action::Pack {
            secs: 0.04,
            fragments: 4,
            with: None,
        };
        // Rank 2 computes 1 s without yielding: after each 0.01 s fragment rank 0 waits a
        // full time slice (twice the wake-up): 4 x 0.01 + 3 x 0.02.
        let busy = vec![
            vec![pack()],
            vec![],
            vec![Action::Compute { flops: 1e9 }],
            vec![],
        ];
        let e = two_cores_ends(true, busy.clone());
        assert!(close(e[0], 0.10) && close(e[2], 1.0), "{e:?}");
        // Unbound, or bound without a computing neighbour: a plain 0.04 s.
        assert!(close(two_cores_ends(false, busy)[0], 0.04));
        let e = two_cores_ends(true, vec![vec![pack()], vec![], vec![], vec![]]);
        assert!(close(e[0], 0.04), "{e:?}");
        // The computation ends at 0.05: fragments at 0-0.01, 0.03-0.04 (the slice), then
        // 0.05-0.07 back to back.
        let short = vec![
            vec![pack()],
            vec![],
            vec![Action::Compute { flops: 5e7 }],
            vec![],
        ];
        let e = two_cores_ends(true, short);
        assert!(close(e[0], 0.07), "{e:?}");
        // A rank probing between 0.01 s chunks yields at each chunk's end: fragments at
        // 0-0.01, 0.02-0.03, 0.04-0.05, 0.06-0.07.
        let polling = Action::ComputeWhilePolling {
            flops: 1e7,
            chunks: 100,
            src: 3,
            tag: 9,
            comm: 0,
        };
        let e = two_cores_ends(true, vec![vec![pack()], vec![], vec![polling], vec![]]);
        assert!(close(e[0], 0.07) && close(e[2], 1.0), "{e:?}");
        // Two packs on core 0 take turns (0.04 then 0.08); core 1's runs alongside.
        let e = two_cores_ends(true, vec![vec![pack()], vec![pack()], vec![pack()], vec![]]);
        assert!(
            close(e[0], 0.04) && close(e[1], 0.04) && close(e[2], 0.08),
            "{e:?}"
        );
        // Unbound they overlap.
        let e = two_cores_ends(
            false,
            vec![vec![pack()], vec![pack()], vec![pack()], vec![]],
        );
        assert!(close(e[2], 0.04), "{e:?}");
    }

    #[test]
    fn joint_packs_end_together() {
        let pack = |with| Action::Pack {
            secs: 0.04,
            fragments: 4,
            with,
        };
        // Rank 0 sends to rank 1, whose core rank 3 computes 1 s without yielding: rank 1
        // gets its core back 0.01 s after the message (the wake-up), then unpacks 4
        // fragments with a time slice (0.02 s) between them: 0.01 + 0.04 + 0.06. Rank 0
        // packed its side by 0.04 but the pipeline holds it until then.
        let scripts = |joint: bool| {
            vec![
                vec![send(1, 0), pack(joint.then_some(1))],
                vec![recv(0, 0), pack(joint.then_some(0))],
                vec![],
                vec![Action::Compute { flops: 1e9 }],
            ]
        };
        let e = two_cores_ends(true, scripts(true));
        assert!(close(e[1], 0.11) && close(e[0], 0.11), "{e:?}");
        let e = two_cores_ends(true, scripts(false));
        assert!(close(e[1], 0.11) && close(e[0], 0.04), "{e:?}");
        // Unbound, both copies are plain 0.04 s and end together anyway.
        let e = two_cores_ends(false, scripts(true));
        assert!(close(e[0], 0.04) && close(e[1], 0.04), "{e:?}");
        // A partner that never packs is a deadlock, and the report says whom rank 0 waits for.
        let e = deadlock_report(vec![vec![pack(Some(1))], vec![recv(0, 8)]]);
        assert!(e.contains("waits for rank 1 to copy its own"), "{e}");
    }

    #[test]
    fn parking_lot() {
        // Links L1 L2 L3; hosts a (0) .. b (3) long flow over all three; short flows over one.
        let mut t = HashMap::new();
        t.insert((0, 3), vec![0, 1, 2]);
        t.insert((3, 0), vec![2, 1, 0]);
        for (i, (s, d)) in [(4, 5), (6, 7), (8, 9)].into_iter().enumerate() {
            t.insert((s, d), vec![i as LinkId]);
            t.insert((d, s), vec![i as LinkId]);
        }
        let hosts: Vec<Host> = (0..10).map(|i| host(&format!("h{i}"), 1)).collect();
        let p = Platform::new(
            hosts,
            (0..3).map(|i| link(&format!("L{i}"), 1e-5)).collect(),
            Box::new(Table(t)),
        );
        let mut scripts = vec![vec![send(1, 1_000_000)], vec![recv(0, 1_000_000)]];
        for i in 0..3u32 {
            scripts.push(vec![send(2 * i + 3, 1_000_000)]);
            scripts.push(vec![recv(i64::from(2 * i + 2), 1_000_000)]);
        }
        let r = run(&p, vec![0, 3, 4, 5, 6, 7, 8, 9], scripts);
        // Measured: short flows end at 0.001403355733, the long one at 0.002110033600.
        assert!(
            (r.ranks[3].end_s - 0.001403355733).abs() < 1e-9,
            "{}",
            r.ranks[3].end_s
        );
        assert!(
            (r.ranks[1].end_s - 0.0021100336).abs() < 1e-9,
            "{}",
            r.ranks[1].end_s
        );
    }

    /// The error of two ranks on `p1()` running these scripts, which must not end.
    fn deadlock_report(scripts: Vec<Vec<Action>>) -> String {
        let w: Vec<Box<dyn RankWorkload>> = scripts
            .into_iter()
            .map(|s| Box::new(Script(s.into())) as Box<dyn RankWorkload>)
            .collect();
        Simulation::new(&p1(), SimConfig::default(), vec![0, 1], w)
            .unwrap()
            .run()
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn deadlock_is_reported() {
        let e = deadlock_report(vec![vec![recv(1, 8)], vec![recv(0, 8)]]);
        assert!(
            e.contains("deadlock") && e.contains("rank 0") && e.contains("receive from 1"),
            "{e}"
        );
    }

    #[test]
    fn wildcards_and_probes() {
        let p = p1();
        let r = run(
            &p,
            vec![0, 1, 0],
            vec![
                vec![
                    Action::Probe {
                        src: ANY,
                        tag: ANY,
                        comm: 0,
                    },
                    recv(ANY, 100),
                    recv(ANY, 100),
                ],
                vec![send(0, 100)],
                vec![Action::Compute { flops: 1e6 }, send(0, 100)],
            ],
        );
        // Rank 2 computes 1 ms on rank 0's host, then sends over the (empty) loopback route.
        assert!(close(r.makespan_s, 1e-3), "{}", r.makespan_s);
    }

    #[test]
    fn same_input_same_output() {
        let p = p1();
        let mk = || {
            run(
                &p,
                vec![0, 1],
                vec![
                    vec![
                        send(1, 12345),
                        Action::Compute { flops: 777.0 },
                        recv(1, 10),
                    ],
                    vec![recv(0, 12345), send(0, 10)],
                ],
            )
        };
        let (a, b) = (mk(), mk());
        assert_eq!(a.makespan_s, b.makespan_s);
        assert_eq!(a.ranks, b.ranks);
    }
}
