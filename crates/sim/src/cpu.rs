//! Hosts' CPUs: computations share a host's cores.
//!
//! `n` computations on a host with `c` cores of speed `s` each run at `s * min(1, c / n)`
//! (SimGrid's Cas01 model: each computation is bounded by one core), times an optional
//! efficiency `e(k)` for `k = min(n, c)` busy cores: cores that share caches and memory
//! bandwidth each run slower when their neighbours work too (measured by `mpiscope
//! calibrate`; 1 by default, as in SimGrid). Rates change when a computation starts or
//! ends on the host; remaining work is updated lazily.
//!
//! A computation may be bound to one core of its host (a rank under `mpirun --bind-to
//! core`): the computations bound to a core share that core only, `k` of them each running
//! at `s e(b) / k` with `b` the host's busy cores.
//! A computation may have a rate bound (SMPI's probes use `smpi/iprobe-cpu-usage` of a
//! core): free computations share their cores by max-min, the capacity a bounded one leaves
//! going to the others; one bound to a core runs at its share or its bound, the lower.
//! The model also integrates each host's utilization for energy estimates.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::platform::{HostId, Platform};
use crate::time::Time;

/// Identifies a computation.
pub type ExecId = u32;

/// The core of a computation that may run on any core of its host.
const ANY_CORE: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Exec {
    host: HostId,
    /// The core it is bound to, or [`ANY_CORE`].
    core: u32,
    /// Work asked for (flops).
    total: f64,
    remaining: f64,
    rate: f64,
    /// Its rate bound in flop/s (infinite: none).
    cap: f64,
    updated: Time,
    generation: u32,
    live: bool,
}

#[derive(Debug, Clone, Default)]
struct HostCpu {
    speed: f64,
    cores: f64,
    running: Vec<ExecId>,
    /// How many of `running` are bound to a core.
    bound: u32,
    /// Cores at work (0..=cores), as of the last rerate.
    busy_cores: f64,
    /// Integral of the busy fraction (0..1) over time, in seconds.
    busy: f64,
    since: Time,
}

/// The CPU model.
#[derive(Debug, Default)]
pub struct CpuModel {
    hosts: Vec<HostCpu>,
    /// Per-core speed factor with `k` busy cores at index `k - 1` (the last entry beyond).
    efficiency: Vec<f64>,
    execs: Vec<Exec>,
    free: Vec<ExecId>,
    heap: BinaryHeap<Reverse<(Time, ExecId, u32)>>,
}

impl CpuModel {
    /// The CPUs of `platform`'s hosts, every core at full speed whatever its neighbours do.
    pub fn new(platform: &Platform) -> CpuModel {
        CpuModel::with_efficiency(platform, &[])
    }

    /// The CPUs of `platform`'s hosts, a core running at `efficiency[k - 1]` of its speed
    /// when `k` cores of its host are busy (the last entry for more; empty: 1).
    pub fn with_efficiency(platform: &Platform, efficiency: &[f64]) -> CpuModel {
        CpuModel {
            efficiency: efficiency.to_vec(),
            hosts: platform
                .hosts
                .iter()
                .map(|h| HostCpu {
                    speed: h.speed,
                    cores: f64::from(h.cores.max(1)),
                    ..HostCpu::default()
                })
                .collect(),
            ..CpuModel::default()
        }
    }

    fn account(&mut self, host: HostId, now: Time) {
        let h = &mut self.hosts[host as usize];
        let dt = now.since(h.since).secs();
        h.busy += dt * h.busy_cores / h.cores;
        h.since = now;
    }

    /// How many computations are bound to `core` of `host`.
    fn bound_to(&self, host: HostId, core: u32) -> f64 {
        self.hosts[host as usize]
            .running
            .iter()
            .filter(|&&id| self.execs[id as usize].core == core)
            .count() as f64
    }

    fn rerate(&mut self, host: HostId, now: Time) {
        let (speed, cores, n) = {
            let h = &self.hosts[host as usize];
            (h.speed, h.cores, h.running.len() as f64)
        };
        let bound = self.hosts[host as usize].bound > 0;
        // Busy cores: every core a computation is bound to, and the free computations on
        // the cores left.
        let (busy, bound_cores, free) = if bound {
            let mut cores_used: Vec<u32> = Vec::new();
            let mut free = 0.0f64;
            for &id in &self.hosts[host as usize].running {
                match self.execs[id as usize].core {
                    ANY_CORE => free += 1.0,
                    c if !cores_used.contains(&c) => cores_used.push(c),
                    _ => {}
                }
            }
            let used = cores_used.len() as f64;
            (used + free.min(cores - used), used, free)
        } else {
            (n.min(cores), 0.0, n)
        };
        self.hosts[host as usize].busy_cores = busy;
        let base = if n == 0.0 {
            0.0
        } else {
            let e = self
                .efficiency
                .get(busy as usize - 1)
                .or(self.efficiency.last())
                .copied()
                .unwrap_or(1.0);
            speed * e
        };
        let share = base * (cores / n).min(1.0);
        let capped = if bound {
            None
        } else {
            self.shared_rates(host, share)
        };
        for i in 0..self.hosts[host as usize].running.len() {
            let id = self.hosts[host as usize].running[i];
            let rate = match self.execs[id as usize].core {
                _ if !bound => capped.as_ref().map_or(share, |r| r[i]),
                // Free computations share the cores no computation is bound to (or, when
                // there are none, one core's worth).
                ANY_CORE => base * ((cores - bound_cores).max(1.0) / free).min(1.0),
                c => base / self.bound_to(host, c),
            };
            let e = &mut self.execs[id as usize];
            let rate = rate.min(e.cap);
            e.remaining = (e.remaining - e.rate * now.since(e.updated).secs()).max(0.0);
            e.updated = now;
            e.rate = rate;
            e.generation = e.generation.wrapping_add(1);
            let at = if rate > 0.0 {
                now.plus(Time::from_secs(e.remaining / rate))
            } else {
                Time::NEVER
            };
            self.heap.push(Reverse((at, id, e.generation)));
        }
    }

    /// The rates of `host`'s computations, in the order they run, when none is bound to a
    /// core and some has a bound below `share` (else `None`: `share` each): a computation
    /// whose bound is lower than its share runs at its bound and leaves the rest to the
    /// others (max-min), none above one core.
    fn shared_rates(&self, host: HostId, share: f64) -> Option<Vec<f64>> {
        let running = &self.hosts[host as usize].running;
        if running
            .iter()
            .all(|&id| self.execs[id as usize].cap >= share)
        {
            return None;
        }
        let caps: Vec<f64> = running
            .iter()
            .map(|&id| self.execs[id as usize].cap)
            .collect();
        let one_core = {
            let h = &self.hosts[host as usize];
            share * (h.running.len() as f64 / h.cores).max(1.0)
        };
        let mut order: Vec<usize> = (0..caps.len()).collect();
        order.sort_by(|&a, &b| caps[a].total_cmp(&caps[b]));
        let mut left = share * caps.len() as f64;
        let mut rates = vec![0.0; caps.len()];
        for (k, &i) in order.iter().enumerate() {
            let fair = (left / (caps.len() - k) as f64).min(one_core);
            rates[i] = caps[i].min(fair);
            left -= rates[i];
        }
        Some(rates)
    }

    /// Starts a computation of `flops` on `host` at `now`, on any of its cores.
    pub fn start(&mut self, now: Time, host: HostId, flops: f64) -> ExecId {
        self.start_on(now, host, None, flops)
    }

    /// Starts a computation of `flops` on `host` at `now`, bound to `core` (taken modulo
    /// the host's cores) when given.
    pub fn start_on(&mut self, now: Time, host: HostId, core: Option<u32>, flops: f64) -> ExecId {
        self.start_capped(now, host, core, flops, f64::INFINITY)
    }

    /// As [`CpuModel::start_on`], never faster than `cap` flop/s.
    pub fn start_capped(
        &mut self,
        now: Time,
        host: HostId,
        core: Option<u32>,
        flops: f64,
        cap: f64,
    ) -> ExecId {
        self.account(host, now);
        let cores = self.hosts[host as usize].cores as u32;
        let e = Exec {
            host,
            core: core.map_or(ANY_CORE, |c| c % cores),
            total: flops.max(0.0),
            remaining: flops.max(0.0),
            rate: 0.0,
            cap,
            updated: now,
            generation: 0,
            live: true,
        };
        let id = match self.free.pop() {
            Some(id) => {
                // Keep counting generations: entries of the previous computation with this
                // id may still be in the heap and must not match the new one.
                let generation = self.execs[id as usize].generation;
                self.execs[id as usize] = Exec { generation, ..e };
                id
            }
            None => {
                self.execs.push(e);
                (self.execs.len() - 1) as ExecId
            }
        };
        self.hosts[host as usize].running.push(id);
        if core.is_some() {
            self.hosts[host as usize].bound += 1;
        }
        self.rerate(host, now);
        id
    }

    /// Whether a rank on `host` (bound to `core` when given) would find no idle core: its
    /// core computes, or every core of the host does.
    pub fn no_core_idle(&self, host: HostId, core: Option<u32>) -> bool {
        let h = &self.hosts[host as usize];
        match core {
            Some(c) => self.bound_to(host, c % h.cores as u32) > 0.0,
            None => h.busy_cores >= h.cores,
        }
    }

    /// Flops computation `id` has done by `now` (0 for one that is over).
    pub fn done_flops(&self, id: ExecId, now: Time) -> f64 {
        let e = &self.execs[id as usize];
        if !e.live {
            return 0.0;
        }
        let remaining = (e.remaining - e.rate * now.since(e.updated).secs()).max(0.0);
        e.total - remaining
    }

    /// The current speed of computation `id` in flop/s (0 for one that is over).
    pub fn rate(&self, id: ExecId) -> f64 {
        let e = &self.execs[id as usize];
        if e.live {
            e.rate
        } else {
            0.0
        }
    }

    /// Changes the total work of running computation `id` to `flops` (at least what it has
    /// done by `now`) and reschedules its end.
    pub fn set_total(&mut self, id: ExecId, now: Time, flops: f64) {
        let done = self.done_flops(id, now);
        let e = &mut self.execs[id as usize];
        if !e.live {
            return;
        }
        e.total = flops.max(done);
        e.remaining = e.total - done;
        e.updated = now;
        e.generation = e.generation.wrapping_add(1);
        let at = if e.rate > 0.0 {
            now.plus(Time::from_secs(e.remaining / e.rate))
        } else {
            Time::NEVER
        };
        self.heap.push(Reverse((at, id, e.generation)));
    }

    /// The earliest completion date.
    pub fn next_event(&mut self) -> Option<Time> {
        self.next_completion().map(|(at, _)| at)
    }

    /// The earliest completion: its date and the computation.
    pub fn next_completion(&mut self) -> Option<(Time, ExecId)> {
        while let Some(&Reverse((at, id, g))) = self.heap.peek() {
            let e = &self.execs[id as usize];
            if !e.live || e.generation != g {
                self.heap.pop();
                continue;
            }
            return Some((at, id));
        }
        None
    }

    /// Finishes the computations due by `now`, appending them to `done`.
    pub fn advance(&mut self, now: Time, done: &mut Vec<ExecId>) {
        let mut touched: Vec<HostId> = Vec::new();
        while let Some(&Reverse((at, id, g))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            let e = &self.execs[id as usize];
            if !e.live || e.generation != g {
                continue;
            }
            let host = e.host;
            self.account(host, now);
            self.execs[id as usize].live = false;
            self.hosts[host as usize].running.retain(|&x| x != id);
            if self.execs[id as usize].core != ANY_CORE {
                self.hosts[host as usize].bound -= 1;
            }
            self.free.push(id);
            done.push(id);
            if !touched.contains(&host) {
                touched.push(host);
            }
        }
        for h in touched {
            self.rerate(h, now);
        }
    }

    /// Busy-core-seconds per host up to `now` (the busy fraction integrated over time).
    pub fn busy_seconds(&mut self, now: Time) -> Vec<f64> {
        for h in 0..self.hosts.len() {
            self.account(h as HostId, now);
        }
        self.hosts.iter().map(|h| h.busy).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Host, LinkId, PlatformError, Routing};

    #[derive(Debug)]
    struct NoRoutes;

    impl Routing for NoRoutes {
        fn route(&self, _: HostId, _: HostId, _: &mut Vec<LinkId>) -> Result<(), PlatformError> {
            Ok(())
        }
    }

    /// One host of `cores` cores at 1 Gflop/s, no links.
    fn one_host(cores: u32) -> Platform {
        let host = Host {
            name: "h".into(),
            speed: 1e9,
            cores,
            watts_idle: 0.0,
            watts_max: 0.0,
        };
        Platform::new(vec![host], Vec::new(), Box::new(NoRoutes))
    }

    /// Runs until `id` ends; returns the date.
    fn end_of(cpu: &mut CpuModel, id: ExecId) -> Time {
        let mut done = Vec::new();
        while let Some(at) = cpu.next_event() {
            done.clear();
            cpu.advance(at, &mut done);
            if done.contains(&id) {
                return at;
            }
        }
        panic!("computation {id} never ends");
    }

    #[test]
    fn busy_neighbours_slow_each_core_by_the_efficiency() {
        let p = one_host(2);
        let mut cpu = CpuModel::with_efficiency(&p, &[1.0, 0.8]);
        // Alone: 1 Gflop/s. Two together: 0.8 Gflop/s each; three on two cores: 0.8 * 2/3.
        let a = cpu.start(Time::ZERO, 0, 1e6);
        assert_eq!(end_of(&mut cpu, a), Time::from_secs(1e-3));
        let t = Time::from_secs(1e-3);
        // `c` (0.4 Mflop) ends after 0.5 ms at 0.8 Gflop/s; `b` then runs alone at full
        // speed for its last 0.4 Mflop: 0.4 ms more.
        let b = cpu.start(t, 0, 8e5);
        let c = cpu.start(t, 0, 4e5);
        assert_eq!(end_of(&mut cpu, c), t.plus(Time::from_secs(5e-4)));
        assert_eq!(end_of(&mut cpu, b), t.plus(Time::from_secs(9e-4)));
        let t = t.plus(Time::from_secs(9e-4));
        let ids: Vec<ExecId> = (0..3).map(|_| cpu.start(t, 0, 1.6e6)).collect();
        assert_eq!(end_of(&mut cpu, ids[0]), t.plus(Time::from_secs(3e-3)));
    }

    #[test]
    fn bound_computations_share_their_core_only() {
        let p = one_host(2);
        let mut cpu = CpuModel::new(&p);
        // Two computations on core 0 (core 2 is core 0 modulo 2), none on core 1: each at
        // half speed although a core is idle, until `a` ends; then `b` alone at full speed.
        // One core of two busy throughout: the host half busy.
        let a = cpu.start_on(Time::ZERO, 0, Some(0), 1e6);
        let b = cpu.start_on(Time::ZERO, 0, Some(2), 1.5e6);
        assert!(cpu.no_core_idle(0, Some(0)) && !cpu.no_core_idle(0, Some(1)));
        assert!(!cpu.no_core_idle(0, None));
        assert_eq!(end_of(&mut cpu, a), Time::from_secs(2e-3));
        assert_eq!(end_of(&mut cpu, b), Time::from_secs(2.5e-3));
        let busy = cpu.busy_seconds(Time::from_secs(2.5e-3));
        assert!((busy[0] - 1.25e-3).abs() < 1e-12, "{busy:?}");
        // One on each core: full speed each, every core busy.
        let t = Time::from_secs(2.5e-3);
        let c = cpu.start_on(t, 0, Some(0), 1e6);
        let d = cpu.start_on(t, 0, Some(1), 2e6);
        assert!(cpu.no_core_idle(0, None));
        assert_eq!(end_of(&mut cpu, c), t.plus(Time::from_secs(1e-3)));
        assert_eq!(end_of(&mut cpu, d), t.plus(Time::from_secs(2e-3)));
    }

    #[test]
    fn reused_ids_ignore_stale_completions() {
        let p = one_host(1);
        let mut cpu = CpuModel::new(&p);
        // `a` is first due at 1 ms, then at ~2 ms when `b` shares the core, then earlier
        // again when `b` ends: the ~2 ms entry stays in the heap after `a` ends.
        let a = cpu.start(Time::ZERO, 0, 1e6);
        let b = cpu.start(Time::ZERO, 0, 1e3);
        assert_eq!(end_of(&mut cpu, b), Time::from_secs(2e-6));
        let t = end_of(&mut cpu, a);
        assert_eq!(t, Time::from_secs(1.001e-3));
        // `c` takes `a`'s id and is rescheduled once by `d` (sharing the core until 4 ms
        // later): it must not end at `a`'s stale ~2 ms date but 7 ms after `t`.
        let c = cpu.start(t, 0, 5e6);
        assert_eq!(c, a);
        let d = cpu.start(t, 0, 2e6);
        assert_eq!(end_of(&mut cpu, d), t.plus(Time::from_secs(4e-3)));
        assert_eq!(end_of(&mut cpu, c), t.plus(Time::from_secs(7e-3)));
    }

    #[test]
    fn a_bounded_computation_leaves_its_share_to_the_others() {
        // Alone: at its bound.
        let p = one_host(1);
        let mut cpu = CpuModel::new(&p);
        let a = cpu.start_capped(Time::ZERO, 0, None, 0.5e9, 0.5e9);
        assert_eq!(end_of(&mut cpu, a), Time::from_secs(1.0));
        // With an unbounded one on one core: 0.25 and 0.75 of it (max-min), until the
        // bounded one ends at 1 s; then the other alone.
        let mut cpu = CpuModel::new(&p);
        let a = cpu.start_capped(Time::ZERO, 0, None, 0.25e9, 0.25e9);
        let b = cpu.start(Time::ZERO, 0, 1e9);
        assert!((cpu.rate(a) - 0.25e9).abs() < 1.0 && (cpu.rate(b) - 0.75e9).abs() < 1.0);
        assert_eq!(end_of(&mut cpu, a), Time::from_secs(1.0));
        assert_eq!(end_of(&mut cpu, b), Time::from_secs(1.25));
        // A bound above the fair share changes nothing: halves.
        let mut cpu = CpuModel::new(&p);
        let a = cpu.start_capped(Time::ZERO, 0, None, 1e9, 0.8e9);
        let b = cpu.start(Time::ZERO, 0, 1e9);
        assert_eq!((cpu.rate(a), cpu.rate(b)), (0.5e9, 0.5e9));
        // Two cores, three computations: no one above a core.
        let p = one_host(2);
        let mut cpu = CpuModel::new(&p);
        let a = cpu.start_capped(Time::ZERO, 0, None, 1e9, 0.1e9);
        let b = cpu.start(Time::ZERO, 0, 1e9);
        let c = cpu.start(Time::ZERO, 0, 1e9);
        assert_eq!(cpu.rate(a), 0.1e9);
        assert_eq!((cpu.rate(b), cpu.rate(c)), (0.95e9, 0.95e9));
    }
}
