//! The flow model: SimGrid's CM02 semantics, solved incrementally.
//!
//! A transfer of `S` bytes from `src` to `dst`:
//!
//! 1. waits the route latency `L` (times the latency factor) without using bandwidth;
//! 2. then moves `S + envelope` bytes at a rate given by weighted max-min sharing
//!    ([`super::maxmin`]) with every other active flow: penalty `L` (a flow with twice the
//!    latency gets half the share; a zero-latency flow gets penalty 1), weight 1 on each link
//!    of its route and the cross-traffic weight on each link of the reverse route, bounded
//!    by `gamma / (2 L)` (TCP window);
//! 3. the rate is re-solved whenever a flow starts its bandwidth phase or ends, for the
//!    flows connected to it only.
//!
//! Remaining bytes are updated lazily: a flow's remaining work is brought up to date only
//! when its rate changes, and its completion date is kept in a heap (stale entries are
//! skipped by a generation counter).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::maxmin::{ConsId, System, VarId};
use super::{FlowConfig, NetworkModel, TransferId};
use crate::platform::{HostId, LinkId, Platform, PlatformError, Sharing};
use crate::time::Time;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Latency,
    Bandwidth,
    Done,
}

#[derive(Debug, Clone)]
struct Flow {
    phase: Phase,
    /// Bytes still to move (bandwidth phase).
    remaining: f64,
    /// Current rate in bytes/s.
    rate: f64,
    /// When `remaining` was last brought up to date.
    updated: Time,
    penalty: f64,
    bound: f64,
    rate_factor: f64,
    uses: Vec<(ConsId, f64)>,
    var: Option<VarId>,
    generation: u32,
    /// A completion entry for the current rate is in the heap.
    scheduled: bool,
}

/// The flow model.
#[derive(Debug)]
pub struct FlowModel {
    config: FlowConfig,
    system: System,
    flows: Vec<Flow>,
    free: Vec<u32>,
    /// (date, flow, generation): latency ends and completions.
    heap: BinaryHeap<Reverse<(Time, u32, u32)>>,
    var_flow: Vec<u32>,
    changed: Vec<VarId>,
    route: Vec<LinkId>,
    back: Vec<LinkId>,
    carried: Vec<f64>,
    now: Time,
    needs_solve: bool,
}

impl FlowModel {
    /// A model of `platform`'s links.
    pub fn new(platform: &Platform, config: FlowConfig) -> FlowModel {
        let mut system = System::new();
        for l in &platform.links {
            system.add_constraint(l.bandwidth, l.sharing == Sharing::FatPipe);
        }
        FlowModel {
            config,
            system,
            flows: Vec::new(),
            free: Vec::new(),
            heap: BinaryHeap::new(),
            var_flow: Vec::new(),
            changed: Vec::new(),
            route: Vec::new(),
            back: Vec::new(),
            carried: vec![0.0; platform.links.len()],
            now: Time::ZERO,
            needs_solve: false,
        }
    }

    /// Number of transfers in progress.
    pub fn active(&self) -> usize {
        self.flows.iter().filter(|f| f.phase != Phase::Done).count()
    }

    fn schedule(&mut self, id: u32, at: Time) {
        let f = &mut self.flows[id as usize];
        f.generation = f.generation.wrapping_add(1);
        self.heap.push(Reverse((at, id, f.generation)));
    }

    /// Brings a flow's remaining bytes up to `now`.
    fn catch_up(&mut self, id: u32, now: Time) {
        let f = &mut self.flows[id as usize];
        if f.phase == Phase::Bandwidth {
            let moved = f.rate * now.since(f.updated).secs();
            f.remaining = (f.remaining - moved).max(0.0);
            for &(c, w) in &f.uses {
                if w >= 1.0 {
                    self.carried[c as usize] += moved;
                }
            }
        }
        f.updated = now;
    }

    fn enter_bandwidth_phase(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        f.phase = Phase::Bandwidth;
        if f.remaining <= 0.0 {
            return;
        }
        let var = self.system.add_var(f.penalty, f.bound, &f.uses);
        f.var = Some(var);
        if self.var_flow.len() <= var as usize {
            self.var_flow.resize(var as usize + 1, u32::MAX);
        }
        self.var_flow[var as usize] = id;
        self.needs_solve = true;
    }

    /// Re-solves the sharing and reschedules the completions of flows whose rate changed.
    fn resolve(&mut self) {
        if !self.needs_solve {
            return;
        }
        self.needs_solve = false;
        self.changed.clear();
        let mut changed = std::mem::take(&mut self.changed);
        self.system.solve(&mut changed);
        let now = self.now;
        for &v in &changed {
            let id = match self.var_flow.get(v as usize) {
                Some(&id) if id != u32::MAX => id,
                _ => continue,
            };
            if self.flows[id as usize].var != Some(v) {
                continue;
            }
            let rate = self.system.value(v) * self.flows[id as usize].rate_factor;
            if self.flows[id as usize].scheduled && rate == self.flows[id as usize].rate {
                // Same rate: the scheduled completion stays right.
                continue;
            }
            self.catch_up(id, now);
            let f = &mut self.flows[id as usize];
            f.rate = rate;
            f.scheduled = true;
            let at = if rate.is_infinite() {
                now
            } else if rate > 0.0 {
                now.plus(Time::from_secs(f.remaining / rate))
            } else {
                Time::NEVER
            };
            self.schedule(id, at);
        }
        self.changed = changed;
    }

    fn finish(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        f.phase = Phase::Done;
        if let Some(v) = f.var.take() {
            self.system.remove_var(v);
            self.var_flow[v as usize] = u32::MAX;
            self.needs_solve = true;
        }
        f.uses.clear();
        self.free.push(id);
    }
}

impl NetworkModel for FlowModel {
    fn start(
        &mut self,
        platform: &Platform,
        now: Time,
        src: HostId,
        dst: HostId,
        bytes: u64,
    ) -> Result<TransferId, PlatformError> {
        self.now = now;
        let latency = platform.route(src, dst, &mut self.route)?;
        let padded = bytes.saturating_add(self.config.envelope);
        let (lat_f, bw_f) = self.config.factors(padded);
        // The constraint list of the flow slot about to be reused keeps its capacity.
        let mut uses = match self.free.last() {
            Some(&id) => std::mem::take(&mut self.flows[id as usize].uses),
            None => Vec::new(),
        };
        uses.clear();
        uses.extend(self.route.iter().map(|&l| (l as ConsId, 1.0)));
        let mut bound = f64::INFINITY;
        for &l in &self.route {
            bound = bound.min(platform.links[l as usize].bandwidth);
        }
        if self.config.crosstraffic > 0.0 {
            platform.route(dst, src, &mut self.back)?;
            uses.extend(
                self.back
                    .iter()
                    .map(|&l| (l as ConsId, self.config.crosstraffic)),
            );
        }
        if latency > 0.0 && self.config.tcp_gamma > 0.0 {
            bound = bound.min(self.config.tcp_gamma / (2.0 * latency));
        }
        let flow = Flow {
            phase: Phase::Latency,
            remaining: padded as f64,
            rate: 0.0,
            updated: now,
            penalty: if latency > 0.0 {
                latency
                    + self
                        .route
                        .iter()
                        .map(|&l| self.config.weight_s / platform.links[l as usize].bandwidth)
                        .sum::<f64>()
            } else {
                1.0
            },
            bound,
            rate_factor: bw_f,
            uses,
            var: None,
            generation: 0,
            scheduled: false,
        };
        let id = match self.free.pop() {
            Some(id) => {
                // Keep counting generations: entries of the previous flow with this id may
                // still be in the heap and must not match the new one.
                let generation = self.flows[id as usize].generation;
                self.flows[id as usize] = Flow { generation, ..flow };
                id
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        let wait = Time::from_secs(latency * lat_f);
        if wait == Time::ZERO {
            self.enter_bandwidth_phase(id);
            if self.flows[id as usize].remaining <= 0.0 || self.flows[id as usize].var.is_none() {
                self.schedule(id, now);
            }
        } else {
            self.schedule(id, now.plus(wait));
        }
        Ok(id as TransferId)
    }

    fn next_transfer(&mut self) -> Option<(Time, TransferId)> {
        self.resolve();
        while let Some(&Reverse((at, id, generation))) = self.heap.peek() {
            let f = &self.flows[id as usize];
            if f.generation != generation || f.phase == Phase::Done {
                self.heap.pop();
                continue;
            }
            return Some((at, id as TransferId));
        }
        None
    }

    fn advance(&mut self, now: Time, done: &mut Vec<TransferId>) {
        self.resolve();
        self.now = now;
        while let Some(&Reverse((at, id, generation))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            let f = &self.flows[id as usize];
            if f.generation != generation || f.phase == Phase::Done {
                continue;
            }
            match f.phase {
                Phase::Latency => {
                    self.flows[id as usize].updated = now;
                    self.enter_bandwidth_phase(id);
                    if self.flows[id as usize].var.is_none() {
                        self.finish(id);
                        done.push(id as TransferId);
                    }
                }
                Phase::Bandwidth => {
                    self.catch_up(id, now);
                    self.finish(id);
                    done.push(id as TransferId);
                }
                Phase::Done => {}
            }
        }
        // New bandwidth phases and ends change the rates of the others.
        self.resolve();
    }

    fn solver_stats(&self) -> crate::network::maxmin::SolverStats {
        self.system.stats()
    }

    fn link_bytes(&self) -> Vec<(u32, f64)> {
        self.carried
            .iter()
            .enumerate()
            .map(|(i, &b)| (i as u32, b))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Host, Link, Routing};

    /// Hosts 0 and 1 joined by link 0 (both ways).
    #[derive(Debug)]
    struct OneLink;

    impl Routing for OneLink {
        fn route(
            &self,
            src: HostId,
            dst: HostId,
            out: &mut Vec<LinkId>,
        ) -> Result<(), PlatformError> {
            if src != dst {
                out.push(0);
            }
            Ok(())
        }
    }

    fn platform() -> Platform {
        let host = |name: &str| Host {
            name: name.into(),
            speed: 1e9,
            cores: 1,
            watts_idle: 0.0,
            watts_max: 0.0,
        };
        let link = Link {
            name: "l".into(),
            bandwidth: 1e9,
            latency: 1e-5,
            sharing: Sharing::Shared,
        };
        Platform::new(vec![host("h0"), host("h1")], vec![link], Box::new(OneLink))
    }

    /// Runs until `id` ends; returns the date.
    fn end_of(m: &mut FlowModel, id: TransferId) -> Time {
        let mut done = Vec::new();
        while let Some(at) = m.next_event() {
            done.clear();
            m.advance(at, &mut done);
            if done.contains(&id) {
                return at;
            }
        }
        panic!("transfer {id} never ends");
    }

    #[test]
    fn reused_ids_ignore_stale_completions() {
        let p = platform();
        // Reference: a lone 2 MB transfer.
        let mut alone = FlowModel::new(&p, FlowConfig::default());
        let c = alone.start(&p, Time::ZERO, 0, 1, 2_000_000).unwrap();
        let lone = end_of(&mut alone, c);

        let mut m = FlowModel::new(&p, FlowConfig::default());
        // `a` shares the link with `b`, then speeds up when `b` ends: its first completion
        // entry (later) stays in the heap after `a` ends.
        let a = m.start(&p, Time::ZERO, 0, 1, 1_000_000).unwrap();
        let b = m.start(&p, Time::ZERO, 0, 1, 10_000).unwrap();
        end_of(&mut m, b);
        let t = end_of(&mut m, a);
        // `c` takes `a`'s id: it must end as if alone, not at `a`'s stale date.
        let c = m.start(&p, t, 0, 1, 2_000_000).unwrap();
        assert_eq!(c, a);
        assert_eq!(end_of(&mut m, c), t.plus(lone));
    }
}
