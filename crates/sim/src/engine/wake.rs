//! Waking blocked ranks, and where their time went.
//!
//! A rank blocks on a [`Block`]: a computation, a sleep, requests, a probe, a polled
//! computation, a partner's pack, a core. After every event the engine asks the ranks it
//! touched whether their condition holds; one that holds is woken: the time since it
//! blocked is accounted as computation, as communication (its messages moved) or as
//! waiting (for a peer to post the matching operation: until the last awaited request was
//! matched; for a core), per rank and per callsite, and recorded on the timeline. A rank
//! that waited in MPI on an oversubscribed core that computes for another rank then waits
//! for its core (`sched`).

use std::cmp::Reverse;

use super::state::{Block, REDUCTION};
use super::Simulation;
use crate::result::Span;
use crate::time::Time;
use crate::workload::Outcome;

impl Simulation<'_> {
    /// Wakes rank `r` if what it waits for holds: accounts the time it waited, records it
    /// on the timeline, and queues it to run (or, on an oversubscribed core that computes
    /// for another rank, to get its core back first: [`Block::Scheduled`]).
    pub(super) fn maybe_wake(&mut self, r: u32) {
        if !self.holds(r) {
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
        if !self.account(r, block, dt) {
            return;
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

    /// Whether what rank `r` waits for holds (false for a rank that is done or runs).
    fn holds(&self, r: u32) -> bool {
        let rank = &self.ranks[r as usize];
        if rank.done {
            return false;
        }
        match &rank.block {
            Block::None => false,
            Block::Exec(e) => !self.execs.contains_key(e),
            Block::Sleep(until) | Block::Scheduled(until) | Block::Overhead(until) => {
                self.now >= *until
            }
            Block::Iprobe(e) => !self.execs.contains_key(e),
            Block::Reqs(reqs, _) => reqs.iter().all(|&q| self.reqs[q as usize].complete),
            Block::Probe { src, tag, ctx } => self.find_send(r, *src, *tag, *ctx).is_some(),
            Block::Polling { exec, .. } => !self.execs.contains_key(exec),
            Block::Partner(key) => self.joints.get(key) != Some(&r),
        }
    }

    /// Accounts the `dt` seconds rank `r` spent in `block`, which just ended: computing,
    /// communicating (its messages moved) or waiting (for a peer to post its side, for a
    /// core); releases the requests it waited for. False when the rank must wait again:
    /// the receive overheads of a wait cost time after it ([`crate::costs`]).
    fn account(&mut self, r: u32, block: Block, dt: f64) -> bool {
        let now = self.now;
        let rank = &mut self.ranks[r as usize];
        match block {
            Block::Exec(_) if rank.blocked_name == REDUCTION => {
                rank.result.comm_s += dt;
                rank.callsite_entry().seconds += dt;
            }
            Block::Exec(_) => rank.result.compute_s += dt,
            Block::Sleep(_) | Block::None => {}
            Block::Overhead(_) | Block::Iprobe(_) => {
                rank.result.comm_s += dt;
                rank.callsite_entry().seconds += dt;
            }
            Block::Scheduled(_) => {
                rank.result.wait_s += dt;
                let queue = rank.cpu_queue as usize;
                self.scheduled[queue].retain(|&w| w != r);
            }
            Block::Reqs(reqs, release) => {
                let or_end = self.recv_overheads_end(&reqs, self.ranks[r as usize].blocked_since);
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
                rank.callsite_entry().seconds += dt;
                if release {
                    for q in reqs {
                        self.release(q);
                    }
                }
                if let Some(end) = or_end {
                    // The receive overheads, after the wait.
                    let name = self.ranks[r as usize].blocked_name;
                    self.overhead(r, end.since(now).secs(), name);
                    return false;
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
                rank.count_actions(chunks);
                // The probes' cost, after the computation (not between its chunks), paid when
                // the rank runs.
                self.ranks[r as usize].probe_debt = self.polls_cost(chunks, found);
            }
        }
        true
    }
}
