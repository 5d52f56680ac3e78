//! What MPI calls cost besides their messages ([`crate::costs`]): the sleep before a test
//! or a send, the computation before each probe, the sleep after a receive from a sender
//! that returned at once.
//!
//! A cost paid before an action (a test's, a send's) blocks the rank in
//! [`Block::Overhead`] with the action kept aside (`Rank::deferred`): it is executed when
//! the rank runs again. A probe computes first ([`Block::Iprobe`], on the rank's core, so
//! that it competes with the computations there as SimGrid's does), then looks; a blocking
//! probe does so again until it finds. The counters of the injected times are the
//! simulation's, one for tests and one for probes, shared by every rank as in SimGrid. The
//! receive overheads of a wait are paid one receive after the other, in the order SMPI's
//! `waitall` finishes them (the lowest index among those complete).

use std::cmp::Reverse;

use super::state::{Block, Kind, Probing, ReqIdx};
use super::Simulation;
use crate::time::Time;
use crate::workload::Action;

impl Simulation<'_> {
    /// The seconds action `a` of rank `r` costs before it is executed (`smpi/ois` for a
    /// non-blocking send, `smpi/os` for a blocking one that returns at once or a
    /// synchronous one, `smpi/test` times the counter for a test of a live request).
    pub(super) fn cost_before(&self, r: u32, a: &Action) -> f64 {
        let costs = &self.config.costs;
        match a {
            Action::Send {
                bytes, req, sync, ..
            } => match req {
                Some(_) => costs.ois.at(*bytes),
                None if *sync || *bytes < self.config.eager_threshold => costs.os.at(*bytes),
                None => 0.0,
            },
            Action::Test { req } if self.ranks[r as usize].user_reqs.contains_key(req) => {
                costs.injected(costs.test, self.test_count)
            }
            _ => 0.0,
        }
    }

    /// Rank `r` pays `secs` in `name`, then executes `action`.
    pub(super) fn pay_then(&mut self, r: u32, secs: f64, name: &'static str, action: Action) {
        self.ranks[r as usize].deferred = Some(Box::new(action));
        self.overhead(r, secs, name);
    }

    /// Rank `r` sleeps `secs` (positive) in an MPI call's own cost.
    pub(super) fn overhead(&mut self, r: u32, secs: f64, name: &'static str) {
        let end = self.now.plus(Time::from_secs(secs));
        self.sleepers.push(Reverse((end, r)));
        self.block(r, Block::Overhead(end), name);
    }

    /// Rank `r` computes for `secs` seconds of `smpi/iprobe-cpu-usage` of its core (a
    /// probe's cost: as long alone on it), then goes on with `then` (a probe to make) if
    /// any.
    pub(super) fn probe_cost(&mut self, r: u32, secs: f64, then: Option<Probing>) {
        let rank = &self.ranks[r as usize];
        let usage = self.config.costs.iprobe_cpu_usage;
        let speed = self.platform.hosts[rank.host as usize].speed * usage;
        let e = self
            .cpu
            .start_capped(self.now, rank.host, rank.core, secs * speed, speed);
        self.execs.insert(e, r);
        self.ranks[r as usize].probing = then;
        self.block(r, Block::Iprobe(e), "iprobe");
    }

    /// Rank `r` starts probing (`smpi/iprobe` positive): the cost first, then the look.
    pub(super) fn start_probe(&mut self, r: u32, p: Probing) {
        let costs = &self.config.costs;
        let secs = costs.injected(costs.iprobe, self.iprobe_count);
        self.probe_cost(r, secs, Some(p));
    }

    /// The look of probe `p` of rank `r`, its cost paid: the flag of an `MPI_Iprobe`; a
    /// blocking probe that finds nothing pays and looks again.
    pub(super) fn finish_probe(&mut self, r: u32, p: Probing) {
        let found = self.find_send(r, p.src, p.tag, p.ctx).is_some();
        self.iprobe_count = self.config.costs.next_count(self.iprobe_count, found);
        if !p.blocking {
            self.ranks[r as usize].last = crate::workload::Outcome::Flag(found);
        } else if !found {
            self.start_probe(r, p);
        }
    }

    /// The probes ending the `chunks` chunks of a polled computation (the last one found
    /// the message if `found`), paid after it: their seconds, with the counter moved.
    pub(super) fn polls_cost(&mut self, chunks: u64, found: bool) -> f64 {
        let costs = &self.config.costs;
        if costs.iprobe <= 0.0 {
            return 0.0;
        }
        let mut secs = 0.0;
        for i in 0..chunks {
            secs += costs.injected(costs.iprobe, self.iprobe_count);
            let hit = found && i + 1 == chunks;
            self.iprobe_count = costs.next_count(self.iprobe_count, hit);
        }
        secs
    }

    /// When a wait for `reqs` that started at `since` ends once their receive overheads
    /// (`smpi/or`) are paid, if later than now: SMPI finishes the requests one at a time,
    /// the lowest index among those complete first, each receive from a sender that
    /// returned at once sleeping `or(S)`. Collectives' messages pay nothing.
    pub(super) fn recv_overheads_end(&self, reqs: &[ReqIdx], since: Time) -> Option<Time> {
        let or = &self.config.costs.or;
        if or.is_zero() {
            return None;
        }
        let mut costly: Vec<(Time, f64)> = reqs
            .iter()
            .map(|&q| &self.reqs[q as usize])
            .filter(|x| x.kind == Kind::Recv && x.ctx % 2 == 0)
            .filter_map(|x| x.or_bytes.map(|b| (x.finished_at, or.at(b))))
            .filter(|&(_, c)| c > 0.0)
            .collect();
        let mut t = since;
        while !costly.is_empty() {
            let i = match costly.iter().position(|&(fin, _)| fin <= t) {
                Some(i) => i,
                None => {
                    t = costly.iter().map(|&(fin, _)| fin).min().unwrap_or(t);
                    costly.iter().position(|&(fin, _)| fin <= t).unwrap_or(0)
                }
            };
            let (_, c) = costly.remove(i);
            t = t.plus(Time::from_secs(c));
        }
        (t > self.now).then_some(t)
    }
}
