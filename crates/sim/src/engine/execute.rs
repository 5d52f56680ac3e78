//! Running a rank: its workload's actions, one at a time, until one blocks.
//!
//! [`Simulation::run_rank`] first finishes what the rank is in the middle of (a blocking
//! collective's next step, a pack's next fragment, meeting a pack's partner), then asks the
//! workload for its next action, handing it the outcome of the previous one, and executes
//! it. [`Simulation::execute`] dispatches on the action's kind: computations and sleeps
//! block the rank until they end; sends, receives, waits and probes go through `p2p`;
//! collectives through `nbc`; packs through `sched`. MPI actions are counted per rank and
//! per callsite; MPI calls per callsite by the workload's [`Action::Callsite`] marks, one
//! per traced call (a `Sendrecv` is one call and three actions), or one per action for
//! workloads without marks.

use std::cmp::Reverse;

use super::state::{Block, Comm, Probing, ReqIdx, WaitList};
use super::Simulation;
use crate::coll::{CollArgs, Collective};
use crate::result::SimError;
use crate::time::Time;
use crate::workload::{Action, CommId, Outcome, ReqHandle, ANY};

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

impl Simulation<'_> {
    /// Runs rank `r` until it blocks or ends.
    pub(super) fn run_rank(&mut self, r: u32) -> Result<(), SimError> {
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
            let debt = std::mem::take(&mut self.ranks[r as usize].probe_debt);
            if debt > 0.0 {
                self.probe_cost(r, debt, None);
                continue;
            }
            if let Some(p) = self.ranks[r as usize].probing.take() {
                self.finish_probe(r, p);
                continue;
            }
            if let Some(action) = self.ranks[r as usize].deferred.take() {
                // Its cost paid.
                self.perform(r, *action)?;
                continue;
            }
            let mut last = std::mem::take(&mut self.ranks[r as usize].last);
            if let Some((src, tag, ctx)) = self.ranks[r as usize].final_probe.take() {
                if let Outcome::Polled { chunks, .. } = last {
                    let found = self.find_send(r, src, tag, ctx).is_some();
                    if found && self.config.costs.iprobe > 0.0 {
                        self.iprobe_count = 1;
                    }
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

    /// Executes `action` for rank `r`, after the cost it pays first if any
    /// ([`Simulation::cost_before`]).
    fn execute(&mut self, r: u32, action: Action) -> Result<(), SimError> {
        check_amounts(r, &action)?;
        let secs = self.cost_before(r, &action);
        if secs > 0.0 {
            let name = if matches!(action, Action::Test { .. }) {
                "test"
            } else {
                "send"
            };
            self.pay_then(r, secs, name, action);
            return Ok(());
        }
        self.perform(r, action)
    }

    /// Performs `action` of rank `r` (its cost paid).
    fn perform(&mut self, r: u32, action: Action) -> Result<(), SimError> {
        let now = self.now;
        match action {
            Action::Compute { flops } => {
                if flops > 0.0 && self.config.costs.simulate_computation {
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
            } => self.start_pack(r, secs, fragments, with),
            Action::Callsite(c) => self.ranks[r as usize].mark_call(c),
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
                    None if self.reqs[q as usize].complete => self.release(q),
                    None => self.block(r, Block::Reqs(WaitList::from_elem(q, 1), true), "send"),
                }
            }
            Action::Recv {
                src,
                tag,
                bytes,
                comm,
                req,
            } => self.recv(r, src, tag, bytes, comm, req)?,
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
            Action::Wait { reqs } => self.wait(r, &reqs),
            Action::Test { req } => self.test(r, req),
            Action::Probe { src, tag, comm } => self.probe(r, src, tag, comm, true)?,
            Action::ComputeWhilePolling {
                flops,
                chunks,
                src,
                tag,
                comm,
            } => self.compute_while_polling(r, flops, chunks, src, tag, comm)?,
            Action::Iprobe { src, tag, comm } => self.probe(r, src, tag, comm, false)?,
            Action::Collective {
                args,
                comm,
                comp_flops,
                req,
            } => {
                self.count_call(r);
                self.start_collective(r, &args, comm, comp_flops, req)?;
            }
            Action::DefineComm { comm, members } => self.define_comm(comm, members),
            Action::Finalize => self.finalize(r)?,
        }
        Ok(())
    }

    /// [`Action::Probe`] (`blocking`) or [`Action::Iprobe`]: with `smpi/iprobe`, SMPI's
    /// probes (each computes first; a blocking one probes until one finds); else a look
    /// (the flag), or a wait for a matching send.
    fn probe(
        &mut self,
        r: u32,
        src: i64,
        tag: i64,
        comm: CommId,
        blocking: bool,
    ) -> Result<(), SimError> {
        self.count_call(r);
        let w = self.peer_world(r, comm, src)?;
        let ctx = comm * 2;
        if self.config.costs.iprobe > 0.0 {
            self.start_probe(
                r,
                Probing {
                    src: w,
                    tag,
                    ctx,
                    blocking,
                },
            );
        } else if !blocking {
            let flag = self.find_send(r, w, tag, ctx).is_some();
            self.ranks[r as usize].last = Outcome::Flag(flag);
        } else if self.find_send(r, w, tag, ctx).is_none() {
            self.block(r, Block::Probe { src: w, tag, ctx }, "probe");
        }
        Ok(())
    }

    /// [`Action::Recv`]: posted, then waited for unless it has a request handle.
    fn recv(
        &mut self,
        r: u32,
        src: i64,
        tag: i64,
        bytes: u64,
        comm: CommId,
        req: Option<ReqHandle>,
    ) -> Result<(), SimError> {
        self.count_call(r);
        let w = if src == ANY {
            ANY
        } else {
            i64::from(
                self.world_rank(comm, src as u32)
                    .ok_or_else(|| SimError::Invalid {
                        rank: r,
                        message: format!(
                    "receive from rank {src} of communicator {comm}, which has no such rank"
                ),
                    })?,
            )
        };
        let q = self.post_recv(r, w, tag, comm * 2, bytes)?;
        match req {
            Some(h) => {
                self.ranks[r as usize].user_reqs.insert(h, q);
            }
            None => self.block(r, Block::Reqs(WaitList::from_elem(q, 1), true), "recv"),
        }
        Ok(())
    }

    /// [`Action::Wait`]: for the requests of these handles (unknown handles: already
    /// completed).
    fn wait(&mut self, r: u32, handles: &[ReqHandle]) {
        self.count_call(r);
        let mut qs = WaitList::with_capacity(handles.len());
        for h in handles {
            if let Some(q) = self.ranks[r as usize].user_reqs.remove(h) {
                qs.push(q);
            }
        }
        self.wait_for(r, qs, "wait");
    }

    /// [`Action::DefineComm`]: communicator `comm` of world ranks `members`, unless it is
    /// defined already (every member defines it).
    fn define_comm(&mut self, comm: CommId, members: Vec<u32>) {
        let idx = comm as usize;
        if self.comms.len() <= idx {
            self.comms.resize(idx + 1, None);
        }
        if self.comms[idx].is_none() {
            let size = members.len() as u32;
            self.comms[idx] = Some(Comm { members, size });
        }
    }

    /// [`Action::Test`]: the flag (true for a handle that is not known: already completed),
    /// and the request dropped when complete.
    fn test(&mut self, r: u32, req: ReqHandle) {
        self.count_call(r);
        let mut or_end = None;
        let flag = match self.ranks[r as usize].user_reqs.get(&req).copied() {
            Some(q) if self.reqs[q as usize].complete => {
                self.ranks[r as usize].user_reqs.remove(&req);
                or_end = self.recv_overheads_end(&[q], self.now);
                self.release(q);
                self.test_count = self.config.costs.next_count(self.test_count, true);
                true
            }
            Some(_) => {
                self.test_count = self.config.costs.next_count(self.test_count, false);
                false
            }
            None => true,
        };
        self.ranks[r as usize].last = Outcome::Flag(flag);
        if let Some(end) = or_end {
            self.overhead(r, end.since(self.now).secs(), "test");
        }
    }

    /// [`Action::ComputeWhilePolling`]: one computation of all the chunks, cut short by
    /// `p2p` after the chunk a matching send arrives in (a message already there: the
    /// first probe finds it).
    fn compute_while_polling(
        &mut self,
        r: u32,
        flops: f64,
        chunks: u64,
        src: i64,
        tag: i64,
        comm: CommId,
    ) -> Result<(), SimError> {
        let w = self.peer_world(r, comm, src)?;
        let ctx = comm * 2;
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
        Ok(())
    }

    /// [`Action::Finalize`]: outstanding requests are waited for (as SMPI does at the end
    /// of a replay; the complete ones too when they pay receive overheads), then the
    /// barrier of `smpi/finalization-barrier` is made, then the rank ends.
    fn finalize(&mut self, r: u32) -> Result<(), SimError> {
        let mut pending: Vec<ReqIdx> = self.ranks[r as usize]
            .user_reqs
            .drain()
            .map(|(_, q)| q)
            .collect();
        pending.sort_unstable();
        let charge_or = !self.config.costs.or.is_zero();
        let waited: WaitList = pending
            .iter()
            .copied()
            .filter(|&q| charge_or || !self.reqs[q as usize].complete)
            .collect();
        for &q in &pending {
            if !waited.contains(&q) {
                self.release(q);
            }
        }
        if !waited.is_empty() {
            self.block(r, Block::Reqs(waited, true), "finalize");
            // Run again once done, then end.
            self.ranks[r as usize].last = Outcome::None;
            return Ok(());
        }
        if self.config.costs.finalization_barrier && !self.ranks[r as usize].final_barrier {
            self.ranks[r as usize].final_barrier = true;
            let size = self.ranks.len() as u32;
            let barrier = CollArgs {
                kind: Collective::Barrier,
                size,
                rank: r,
                root: 0,
                count: 0,
                recv_count: 0,
                dtype_size: 1,
                recv_dtype_size: 1,
                send_counts: Vec::new(),
                recv_counts: Vec::new(),
            };
            self.ranks[r as usize].last = Outcome::None;
            return self.start_collective(r, &barrier, 0, 0.0, None);
        }
        let rank = &mut self.ranks[r as usize];
        rank.done = true;
        rank.result.end_s = self.now.secs();
        Ok(())
    }

    /// Counts an MPI action of rank `r` at its callsite (and a call, when its workload does
    /// not mark calls with [`Action::Callsite`]).
    fn count_call(&mut self, r: u32) {
        self.ranks[r as usize].count_actions(1);
    }
}
