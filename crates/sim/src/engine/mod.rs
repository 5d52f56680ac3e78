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
//!
//! One loop ([`Simulation::run_with_progress`]): run every ready rank until it blocks
//! (`execute`: one action at a time, dispatched by kind), settle the conditions that
//! already hold, then take the earliest date among the network model's, the CPU model's
//! and the sleepers' next events, advance the models to it and wake the ranks whose
//! condition holds (`wake`). With nothing left to happen and ranks still blocked, the run
//! is a deadlock, reported rank by rank with what each waits for; an event at the end of
//! time (a date that saturated) is a [`SimError::TimeOverflow`] naming the rank.
//!
//! The engine's parts, each an `impl Simulation` of its own over the plain state of
//! `state` (which none of them owns):
//! * `p2p`: requests, mailboxes, matching, the start and end of transfers;
//! * `execute`: what each [`Action`](crate::workload::Action) does;
//! * `wake`: when a blocked rank may go on, and where its time went (computing,
//!   communicating, waiting for a peer);
//! * `sched`: ranks sharing an oversubscribed core (the wake-up delay, packs copied
//!   fragment by fragment, joint packs);
//! * `nbc`: collectives in progress, blocking and non-blocking.
//!
//! The network model is built from the configuration's [`crate::network::NetworkKind`]:
//! the engine sees only [`NetworkModel`].

mod execute;
mod nbc;
mod overhead;
mod p2p;
mod sched;
mod state;
mod wake;

#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use self::state::{
    Block, Comm, CpuQueues, IdMap, Kind, Mailbox, Rank, Req, ReqIdx, COLL_CTX, NBC_CTX,
};
use crate::config::SimConfig;
use crate::cpu::{CpuModel, ExecId};
use crate::network::{NetworkModel, TransferId};
use crate::platform::{HostId, Platform};
use crate::result::{CallsiteStats, SimError, SimResult, Span};
use crate::time::Time;
use crate::workload::{RankWorkload, ANY};

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
    /// SMPI's counters of the injected times (`smpi/grow-injected-times`): one for every
    /// rank's tests, one for every rank's probes, as SimGrid keeps them.
    test_count: u64,
    iprobe_count: u64,
}

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
        let CpuQueues {
            of_rank,
            oversubscribed,
            residents,
        } = CpuQueues::place(platform, &config, &hosts);
        let ranks = hosts
            .iter()
            .zip(&of_rank)
            .map(|(&host, &(core, cpu_queue))| Rank::new(host, core, cpu_queue))
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
            test_count: 1,
            iprobe_count: 1,
            config,
        }
        .started())
    }

    /// Every rank ready to run, or asleep in `MPI_Init` for `smpi/init` seconds.
    fn started(mut self) -> Simulation<'p> {
        let init = self.config.costs.init;
        if init > 0.0 {
            self.ready.clear();
            let until = Time::ZERO.plus(Time::from_secs(init));
            for r in 0..self.ranks.len() as u32 {
                self.ranks[r as usize].block = Block::Sleep(until);
                self.ranks[r as usize].blocked_name = "init";
                self.sleepers.push(Reverse((until, r)));
            }
        }
        self
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

    /// The deadlock: every rank not done, with what it waits for.
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

    /// What rank `id` (`r`) waits for, in words.
    fn describe_block(&self, id: u32, r: &Rank) -> String {
        match &r.block {
            Block::None => "is runnable".into(),
            Block::Exec(_) => "computes".into(),
            Block::Polling { src, tag, .. } => {
                format!("computes, probing source {src} tag {tag} between chunks")
            }
            Block::Sleep(_) => "sleeps".into(),
            Block::Overhead(_) => format!("pays the cost of {}", r.blocked_name),
            Block::Iprobe(_) => "probes".into(),
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

    /// The result, once every rank is done: makespan, per rank, per callsite (merged
    /// over ranks, by callsite id), per link and per host.
    fn finish(mut self) -> SimResult {
        let makespan = self
            .ranks
            .iter()
            .map(|r| r.result.end_s)
            .fold(0.0, f64::max);
        let mut merged: HashMap<u32, CallsiteStats> = HashMap::new();
        for (r, rank) in self.ranks.iter().enumerate() {
            for site in &rank.by_callsite {
                let (n, t) = (site.calls, site.seconds);
                let e = merged.entry(site.callsite).or_insert(CallsiteStats {
                    callsite: site.callsite,
                    calls: 0,
                    actions: 0,
                    seconds: 0.0,
                    slowest_rank: r as u32,
                    slowest_rank_mean_s: 0.0,
                });
                e.calls += n;
                e.actions += site.actions;
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

    /// Advances the network and CPU models to `now`, ends the transfers, computations and
    /// sleeps due then, and wakes the ranks they concern (and, on an oversubscribed core
    /// that a computation frees, the first rank waiting for it).
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

    /// Blocks rank `r` on `block`, in `name` (the timeline's span name).
    fn block(&mut self, r: u32, block: Block, name: &'static str) {
        let now = self.now;
        let rank = &mut self.ranks[r as usize];
        rank.block = block;
        rank.blocked_since = now;
        rank.blocked_name = name;
        // It may already hold (a request completed in this very step).
        self.touched.push(r);
    }

    /// Starts a computation of `flops` for rank `r` on its host (and core when bound).
    fn start_exec(&mut self, r: u32, flops: f64) -> ExecId {
        let rank = &self.ranks[r as usize];
        self.cpu.start_on(self.now, rank.host, rank.core, flops)
    }
}
