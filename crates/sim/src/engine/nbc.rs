//! Collectives in progress, as programs of point-to-point steps ([`crate::coll`]).
//!
//! A blocking collective ([`Action::Collective`] without a request) takes over its rank:
//! the rank runs the program's steps one by one (sends, receives, their non-blocking
//! forms, waits, reductions' computations) until it ends, its outstanding requests are
//! complete and its final computation is done. A non-blocking one (with a request) runs
//! beside its rank, as with an asynchronous progress engine: its steps advance whenever
//! the requests and computations they wait for are done, in the order the collectives
//! were started, and its end completes the request the rank waits on. Both use a matching
//! context of their own ([`COLL_CTX`]), so their messages never meet the rank's.

use super::state::{
    Background, Block, CollRun, Kind, Req, ReqIdx, WaitList, COLL_CTX, NBC_CTX, REDUCTION,
};
use super::Simulation;
use crate::coll::{self, CollArgs, Collective, POp};
use crate::result::SimError;
use crate::time::Time;
#[cfg(doc)]
use crate::workload::Action;
use crate::workload::{CommId, ReqHandle, ANY};

impl Simulation<'_> {
    /// Starts rank `r`'s collective `args` on `comm` (ending with `comp_flops` of
    /// computation): blocking, or beside the rank when it has a `req`uest handle.
    pub(super) fn start_collective(
        &mut self,
        r: u32,
        args: &CollArgs,
        comm: CommId,
        comp_flops: f64,
        req: Option<ReqHandle>,
    ) -> Result<(), SimError> {
        let now = self.now;
        let forced = self.config.forced.get(&args.kind).map(String::as_str);
        let program = coll::program(args, self.config.selector, forced)
            .map_err(|e| SimError::Collective { rank: r, source: e })?;
        let run = CollRun {
            program,
            comm,
            reqs: Vec::new(),
            waited: 0,
            comp_flops,
            name: coll_name(args.kind),
        };
        let Some(h) = req else {
            self.ranks[r as usize].coll = Some(Box::new(run));
            return Ok(());
        };
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
            finished_at: Time::NEVER,
            or_bytes: None,
            early: None,
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
        Ok(())
    }

    /// Performs the next step of rank `r`'s blocking collective, blocking the rank on
    /// what it needs; at the program's end, waits for its outstanding requests, then runs
    /// its final computation.
    pub(super) fn step_collective(&mut self, r: u32) -> Result<(), SimError> {
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
            CollStep::Reduce(flops) => {
                let e = self.start_exec(r, flops);
                self.execs.insert(e, r);
                self.block(r, Block::Exec(e), REDUCTION);
            }
        }
        self.ranks[r as usize].coll = Some(run);
        Ok(())
    }

    /// Steps every non-blocking collective of rank `r` whose awaited requests and
    /// computation are done, in the order they were started.
    pub(super) fn progress_background(&mut self, r: u32) -> Result<(), SimError> {
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
    pub(super) fn step_background(&mut self, r: u32, b: &mut Background) -> Result<bool, SimError> {
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
                CollStep::Compute(flops) | CollStep::Reduce(flops) => {
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
            Some(POp::Combine(bytes)) => {
                // Seconds on a core of its own, as flops at the host's nominal speed (so a
                // shared core stretches it as it does any computation).
                let seconds = bytes as f64 * self.config.reduction_per_byte;
                let speed = self.platform.hosts[self.ranks[r as usize].host as usize].speed;
                let flops = seconds * speed;
                if flops > 0.0 {
                    CollStep::Reduce(flops)
                } else {
                    CollStep::Continue
                }
            }
        })
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
    /// This many flops of a reduction operator computed (inside the MPI call).
    Reduce(f64),
    /// The program is over.
    Done,
}

/// The MPI function of collective `k`.
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
