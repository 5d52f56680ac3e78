//! The engine's state types: requests and mailboxes, what a rank waits for, collectives and
//! packs in progress, and the per-rank record. Plain data, shared by the engine's modules
//! (which hold the behaviour), so that none of them depends on another for its types.

use std::collections::{HashMap, VecDeque};

use crate::coll::Program;
use crate::config::SimConfig;
use crate::cpu::ExecId;
use crate::network::TransferId;
use crate::platform::{HostId, Platform};
use crate::result::RankResult;
use crate::time::Time;
use crate::workload::{CommId, Outcome, ReqHandle};

/// Maps keyed by small integers the engine assigns (transfers, computations, requests):
/// a fast non-cryptographic hash, as nothing here comes from outside.
pub(super) type IdMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Requests a rank waits for: one or two (a blocking call, an exchange) stay inline.
pub(super) type WaitList = smallvec::SmallVec<[ReqIdx; 2]>;

/// A request: its index in `Simulation::reqs` (slots are recycled).
pub(super) type ReqIdx = u32;

/// Matching contexts: communicator `c`'s point-to-point messages match in context `2 c`,
/// its collectives' in `2 c + COLL_CTX`, so the two never meet (as MPI requires).
pub(super) const COLL_CTX: u32 = 1;

/// What a rank computing a blocking collective's reduction ([`crate::coll::POp::Combine`])
/// is blocked in: time inside the MPI call (its callsite's, communication in the rank's
/// breakdown), not the program's computation.
pub(super) const REDUCTION: &str = "reduction";

/// Fraction of a chunk under which [`Action::ComputeWhilePolling`](crate::workload::Action::ComputeWhilePolling) counts a send arriving
/// as arriving at the end of the chunk just computed (rounding of computation dates).
pub(super) const CHUNK_TIE: f64 = 1e-9;

/// The context of the request standing for a whole non-blocking collective.
pub(super) const NBC_CTX: u32 = u32::MAX;

/// Which side of a message a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A send (also the request standing for a non-blocking collective).
    Send,
    /// A receive.
    Recv,
}

/// A send or a receive, from posting until its owner releases it and its transfer ends.
#[derive(Debug, Clone)]
pub(super) struct Req {
    /// The rank that posted it.
    pub(super) owner: u32,
    /// Send or receive.
    pub(super) kind: Kind,
    /// World rank of the peer, or ANY.
    pub(super) peer: i64,
    /// Tag, or ANY (receives).
    pub(super) tag: i64,
    /// Matching context ([`COLL_CTX`]).
    pub(super) ctx: u32,
    /// Message size.
    pub(super) bytes: u64,
    /// Complete from the owner's point of view.
    pub(super) complete: bool,
    /// Matched (transfer started).
    pub(super) matched: bool,
    /// When it was matched ([`Time::NEVER`] before).
    pub(super) matched_at: Time,
    /// Transfer finished (or never needed).
    pub(super) finished: bool,
    /// The owner no longer refers to it.
    pub(super) released: bool,
    /// Matched peer (for receives: the sender's world rank).
    pub(super) partner: i64,
    /// When its transfer finished ([`Time::NEVER`] before).
    pub(super) finished_at: Time,
    /// A receive matched with a sender that returned at once: the message's size (it pays
    /// `smpi/or` when it completes).
    pub(super) or_bytes: Option<u64>,
    /// A send below `smpi/async-small-thresh`: its transfer, started when it was posted.
    pub(super) early: Option<TransferId>,
}

/// No request (the receive of a transfer started before its match).
pub(super) const NO_REQ: ReqIdx = ReqIdx::MAX;

/// A rank's unmatched requests, in posting order (matching is FIFO: non-overtaking).
#[derive(Debug, Default)]
pub(super) struct Mailbox {
    /// Receives posted by the rank and not matched yet.
    pub(super) recvs: VecDeque<ReqIdx>,
    /// Sends to the rank not matched yet.
    pub(super) sends: VecDeque<ReqIdx>,
}

/// What a rank waits for (the rank runs again once it holds).
#[derive(Debug, Clone)]
pub(super) enum Block {
    /// Nothing: the rank runs.
    None,
    /// A computation to end.
    Exec(ExecId),
    /// Until this date.
    Sleep(Time),
    /// Until this date, in an MPI call's own cost (`smpi/test`, `smpi/os`, `smpi/or`, ...:
    /// [`crate::costs`]).
    Overhead(Time),
    /// The computation a probe costs (`smpi/iprobe`) to end.
    Iprobe(ExecId),
    /// Ready, but bound to a core that computes for another rank bound to it: an MPI library
    /// polling with `sched_yield` (Open MPI's `mpi_yield_when_idle`, MPICH's default when
    /// oversubscribed) gets the core back at the end of the computing rank's time slice, or
    /// when a computation on the core ends, whichever comes first.
    Scheduled(Time),
    /// All of these requests complete; `release`: the rank drops them when woken (a
    /// collective's requests are dropped at its end instead).
    Reqs(WaitList, bool),
    /// A matching send to arrive (`MPI_Probe`).
    Probe {
        /// World rank, or ANY.
        src: i64,
        /// Tag, or ANY.
        tag: i64,
        /// Matching context.
        ctx: u32,
    },
    /// [`Action::Pack`](crate::workload::Action::Pack) `with` a partner: its own fragments are copied, the other end's
    /// are not yet (the pair of world ranks, lower first, is the key of
    /// `Simulation::joints`).
    Partner((u32, u32)),
    /// [`Action::ComputeWhilePolling`](crate::workload::Action::ComputeWhilePolling): computation `exec` of `chunks` chunks of `flops`,
    /// cut short after the chunk during which a matching send arrives (`found`).
    Polling {
        /// The computation of all the chunks.
        exec: ExecId,
        /// Flops per chunk.
        flops: f64,
        /// Chunks to compute (cut to the chunk the send arrives in).
        chunks: u64,
        /// A matching send arrived.
        found: bool,
        /// The probes' world rank, or ANY.
        src: i64,
        /// The probes' tag, or ANY.
        tag: i64,
        /// The probes' matching context.
        ctx: u32,
    },
}

/// A probe paying its cost (`smpi/iprobe`) before it looks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Probing {
    /// World rank, or ANY.
    pub(super) src: i64,
    /// Tag, or ANY.
    pub(super) tag: i64,
    /// Matching context.
    pub(super) ctx: u32,
    /// `MPI_Probe`: probes again until it finds (else `MPI_Iprobe`: one look, its flag).
    pub(super) blocking: bool,
}

/// An [`Action::Pack`](crate::workload::Action::Pack) in progress on an oversubscribed core.
#[derive(Debug, Clone, Copy)]
pub(super) struct Packing {
    /// Fragments still to copy.
    pub(super) left: u32,
    /// Seconds per fragment.
    pub(super) each: f64,
    /// The rank has yielded its core after a fragment: it must get it back first.
    pub(super) yielded: bool,
}

/// A collective in progress: its program of point-to-point steps and their requests.
pub(super) struct CollRun {
    /// The algorithm's steps ([`crate::coll`]).
    pub(super) program: Box<dyn Program>,
    /// The communicator.
    pub(super) comm: CommId,
    /// Requests of its non-blocking steps, in posting order.
    pub(super) reqs: Vec<ReqIdx>,
    /// Requests waited so far by `WaitAll`.
    pub(super) waited: usize,
    /// The reduction's computation at the end, flops.
    pub(super) comp_flops: f64,
    /// The MPI function, for timelines and deadlock reports.
    pub(super) name: &'static str,
}

/// A non-blocking collective in progress: it advances on its own (as with an asynchronous
/// progress engine) while its rank goes on, and completes `done_req`.
pub(super) struct Background {
    /// The collective.
    pub(super) run: CollRun,
    /// The request the rank's handle refers to (`MPI_Wait` on the collective).
    pub(super) done_req: ReqIdx,
    /// Requests the next step needs complete; released then when `release`.
    pub(super) waiting: Vec<ReqIdx>,
    /// Release `waiting` once complete.
    pub(super) release: bool,
    /// Computation (a reduction) the next step needs finished.
    pub(super) exec: Option<ExecId>,
    /// The program has no more steps: outstanding requests, then `comp_flops`.
    pub(super) program_done: bool,
    /// The final computation was started.
    pub(super) computed: bool,
}

/// A simulated rank: where it runs, what it waits for, its requests and collectives in
/// progress, and what it has spent so far.
///
/// Laid out in declaration order, what every wake-up and run reads first (a run of
/// thousands of ranks touches each rank's record between long stretches of others'), the
/// rarely used and the large after; records start on a cache line.
#[repr(C, align(64))]
pub(super) struct Rank {
    /// What it waits for.
    pub(super) block: Block,
    /// Since when it waits.
    pub(super) blocked_since: Time,
    /// It has finalized.
    pub(super) done: bool,
    /// Its workload marks each MPI call with an
    /// [`Action::Callsite`](crate::workload::Action::Callsite) (traces and their structural
    /// forms): calls are counted by those marks, else one per MPI action (TI traces, HPL).
    pub(super) marks_calls: bool,
    /// It made the barrier of `smpi/finalization-barrier`.
    pub(super) final_barrier: bool,
    /// Where it waits for a core ([`Block::Scheduled`]): its core's or its host's queue.
    pub(super) cpu_queue: u32,
    /// Its current callsite ([`Action::Callsite`](crate::workload::Action::Callsite)).
    pub(super) callsite: u32,
    /// The entry of `by_callsite` used last.
    pub(super) last_callsite: usize,
    /// Seconds of probes it owes after a polled computation, paid when it runs again (a
    /// computation is never started while ranks are being woken: its id, just freed by
    /// another rank's, must not be taken before that rank sees its computation ended).
    pub(super) probe_debt: f64,
    /// Non-blocking collectives in progress, in the order they were started.
    pub(super) background: Vec<Background>,
    /// The blocking collective it is in.
    pub(super) coll: Option<Box<CollRun>>,
    /// The action to execute once the cost it pays first ([`Block::Overhead`],
    /// [`Block::Iprobe`]) is paid.
    pub(super) deferred: Option<Box<crate::workload::Action>>,
    /// The other end of the [`Action::Pack`](crate::workload::Action::Pack) it is in, met
    /// when its own copy ends.
    pub(super) pack_with: Option<u32>,
    /// The outcome to hand its workload with the next action.
    pub(super) last: Outcome,
    /// The probe ending an [`Action::ComputeWhilePolling`](crate::workload::Action) that
    /// has found nothing yet: made when the rank runs again, after the ranks due before it
    /// at that date.
    pub(super) final_probe: Option<(i64, i64, u32)>,
    /// The [`Action::Pack`](crate::workload::Action::Pack) it is in, fragment by fragment.
    pub(super) packing: Option<Packing>,
    /// The probe it makes once the computation it costs ([`Block::Iprobe`]) ends.
    pub(super) probing: Option<Probing>,
    /// Per callsite this rank used; few entries, searched linearly from the last one used.
    pub(super) by_callsite: Vec<SiteTotals>,
    /// Its results so far.
    pub(super) result: RankResult,
    /// Its host.
    pub(super) host: HostId,
    /// The core it is bound to ([`SimConfig::bind_to_core`]).
    pub(super) core: Option<u32>,
    /// In what it waits (`compute`, `MPI_Send`, ...), for timelines and reports.
    pub(super) blocked_name: &'static str,
    /// Its workload's request handles.
    pub(super) user_reqs: IdMap<ReqHandle, ReqIdx>,
}

/// What one rank did at one callsite.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SiteTotals {
    /// The callsite.
    pub(super) callsite: u32,
    /// MPI calls made there (one per traced call, whatever it became).
    pub(super) calls: u64,
    /// MPI actions executed for them (a `Sendrecv` is a send, a receive and their wait).
    pub(super) actions: u64,
    /// Seconds blocked in them.
    pub(super) seconds: f64,
}

impl Rank {
    /// This rank's entry of its current callsite.
    pub(super) fn callsite_entry(&mut self) -> &mut SiteTotals {
        let cs = self.callsite;
        if self
            .by_callsite
            .get(self.last_callsite)
            .is_none_or(|e| e.callsite != cs)
        {
            self.last_callsite = match self.by_callsite.iter().position(|e| e.callsite == cs) {
                Some(i) => i,
                None => {
                    self.by_callsite.push(SiteTotals {
                        callsite: cs,
                        ..SiteTotals::default()
                    });
                    self.by_callsite.len() - 1
                }
            };
        }
        &mut self.by_callsite[self.last_callsite]
    }

    /// Counts `n` MPI actions at the current callsite, and as many calls when the workload
    /// does not mark its calls.
    pub(super) fn count_actions(&mut self, n: u64) {
        self.result.mpi_calls += n;
        let marked = self.marks_calls;
        let e = self.callsite_entry();
        e.actions += n;
        if !marked {
            e.calls += n;
        }
    }

    /// An [`Action::Callsite`](crate::workload::Action::Callsite): one MPI call at `cs`.
    pub(super) fn mark_call(&mut self, cs: u32) {
        self.callsite = cs;
        self.marks_calls = true;
        self.callsite_entry().calls += 1;
    }
}

/// A communicator.
#[derive(Debug, Clone)]
pub(super) struct Comm {
    /// World rank of each member (empty for the world: identity).
    pub(super) members: Vec<u32>,
    /// Its size.
    pub(super) size: u32,
}

impl Rank {
    /// A rank on `host` (bound to `core` when set), waiting for a core in `cpu_queue`,
    /// about to run.
    pub(super) fn new(host: HostId, core: Option<u32>, cpu_queue: u32) -> Rank {
        Rank {
            host,
            core,
            cpu_queue,
            block: Block::None,
            done: false,
            last: Outcome::None,
            final_probe: None,
            packing: None,
            pack_with: None,
            deferred: None,
            final_barrier: false,
            probing: None,
            probe_debt: 0.0,
            user_reqs: IdMap::default(),
            coll: None,
            background: Vec::new(),
            blocked_since: Time::ZERO,
            blocked_name: "",
            callsite: 0,
            by_callsite: Vec::new(),
            marks_calls: false,
            last_callsite: 0,
            result: RankResult::default(),
        }
    }
}

/// Where ranks compute: each rank's core (when bound) and CPU queue (one per host, or one
/// per core used when ranks are bound), and per queue whether it is oversubscribed.
pub(super) struct CpuQueues {
    /// Per rank: its core (when bound) and its queue.
    pub(super) of_rank: Vec<(Option<u32>, u32)>,
    /// Per queue: more ranks than cores (see [`SimConfig::oversubscribed_wake_up`]).
    pub(super) oversubscribed: Vec<bool>,
    /// Per queue: the ranks bound to it (filled only when some queue is oversubscribed).
    pub(super) residents: Vec<Vec<u32>>,
}

impl CpuQueues {
    /// The queues of ranks placed on `hosts` (one host per rank) of `platform`: with
    /// [`SimConfig::bind_to_core`] the `k`-th rank of a host is bound to core `k mod cores`.
    pub(super) fn place(platform: &Platform, config: &SimConfig, hosts: &[HostId]) -> CpuQueues {
        let mut placed = vec![0u32; platform.hosts.len()];
        let mut queues: HashMap<(HostId, Option<u32>), u32> = HashMap::new();
        // Per queue: (ranks, cores).
        let mut queue_residents: Vec<(u32, u32)> = Vec::new();
        let of_rank: Vec<(Option<u32>, u32)> = hosts
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
            for (r, &(_, q)) in of_rank.iter().enumerate() {
                residents[q as usize].push(r as u32);
            }
        }
        CpuQueues {
            of_rank,
            oversubscribed,
            residents,
        }
    }
}
