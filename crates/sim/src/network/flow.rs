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
//! when its rate changes, and its next date (latency end or completion) is kept in a heap
//! with one entry per flow, changed in place when the rate changes.
//!
//! Parameters: [`FlowConfig`] (SimGrid 3.32's CM02 defaults; SMPI's piecewise factors by
//! message size; a platform's options by SimGrid's names). Registered as [`FLOW`] (`flow`)
//! and [`SMPI`] (`smpi`).

use std::collections::BTreeMap;

use super::keyed_heap::KeyedHeap;
use super::maxmin::{ConsId, System, VarId};
use super::paths::PathCache;
use super::{NetworkKind, NetworkModel, NetworkParams, Registration, TransferId};
use crate::platform::{HostId, Platform, PlatformError, Sharing};
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
    /// Per flow, its next date: the end of its latency or its completion.
    heap: KeyedHeap<Time>,
    var_flow: Vec<u32>,
    changed: Vec<VarId>,
    /// Route data per host pair.
    paths: PathCache,
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
            heap: KeyedHeap::new(),
            var_flow: Vec::new(),
            changed: Vec::new(),
            paths: PathCache::default(),
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
        self.heap.set(id, at);
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
        // Many new dates at once (every flow crossing a saturated backbone): one pass over
        // the heap afterwards rather than a sift each.
        let bulk = changed.len() * 4 >= self.heap.len();
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
            if bulk {
                self.heap.set_unordered(id, at);
            } else {
                self.schedule(id, at);
            }
        }
        self.changed = changed;
    }

    fn finish(&mut self, id: u32) {
        self.heap.remove(id);
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
        // The constraint list of the flow slot about to be reused keeps its capacity.
        let mut uses = match self.free.last() {
            Some(&id) => std::mem::take(&mut self.flows[id as usize].uses),
            None => Vec::new(),
        };
        let path = self
            .paths
            .path(platform, &self.config, src, dst, &mut uses)?;
        let latency = path.latency;
        let padded = bytes.saturating_add(self.config.envelope);
        let (lat_f, bw_f) = self.config.factors(padded);
        let flow = Flow {
            phase: Phase::Latency,
            remaining: padded as f64,
            rate: 0.0,
            updated: now,
            penalty: path.penalty,
            bound: path.bound,
            rate_factor: bw_f,
            uses,
            var: None,
            scheduled: false,
        };
        let id = match self.free.pop() {
            Some(id) => {
                // The previous flow of this id left the heap when it finished.
                self.flows[id as usize] = flow;
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
        self.heap.peek().map(|(at, id)| (at, id as TransferId))
    }

    fn advance(&mut self, now: Time, done: &mut Vec<TransferId>) {
        self.resolve();
        self.now = now;
        while let Some((at, id)) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            match self.flows[id as usize].phase {
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

/// Parameters of the flow model, with SimGrid 3.32's CM02 defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    /// Bytes added to every message (SMPI's envelope: 16).
    pub envelope: u64,
    /// TCP window: a flow is bounded by `gamma / (2 latency)` (0 disables).
    pub tcp_gamma: f64,
    /// Weight of a flow on the links of its reverse route (ACKs); 0 disables.
    pub crosstraffic: f64,
    /// Multiplies the latency waited before a flow gets bandwidth.
    pub latency_factor: f64,
    /// Multiplies the rate a flow gets.
    pub bandwidth_factor: f64,
    /// Piecewise latency factors by message size (SMPI's `smpi/lat-factor`): `(threshold,
    /// factor)` sorted by threshold; a message larger than a threshold takes its factor.
    /// Empty for none.
    pub lat_factors: Vec<(u64, f64)>,
    /// Piecewise bandwidth factors by message size (SMPI's `smpi/bw-factor`), as
    /// `lat_factors`.
    pub bw_factors: Vec<(u64, f64)>,
    /// SimGrid's `network/weight-S`: a flow's sharing penalty grows by `weight_s / bandwidth`
    /// for each link of its route (0 for CM02, 8775 for SMPI's model).
    pub weight_s: f64,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            envelope: 16,
            tcp_gamma: 4194304.0,
            crosstraffic: 0.05,
            latency_factor: 1.0,
            bandwidth_factor: 1.0,
            lat_factors: Vec::new(),
            bw_factors: Vec::new(),
            weight_s: 0.0,
        }
    }
}

/// SimGrid 3.32's default `smpi/bw-factor` (the `SMPI` network model).
pub const SMPI_BW_FACTORS: &str = "65472:0.940694;15424:0.697866;9376:0.58729;5776:1.08739;3484:0.77493;1426:0.608902;732:0.341987;257:0.338112;0:0.812084";
/// SimGrid 3.32's default `smpi/lat-factor` (the `SMPI` network model).
pub const SMPI_LAT_FACTORS: &str = "65472:11.6436;15424:3.48845;9376:2.59299;5776:2.18796;3484:1.88101;1426:1.61075;732:1.9503;257:1.95341;0:2.01467";

impl FlowConfig {
    /// SimGrid's `SMPI` network model (what `smpirun` uses unless told otherwise): CM02
    /// with SMPI's piecewise factors and `weight-S` 8775.
    pub fn smpi() -> FlowConfig {
        FlowConfig {
            lat_factors: parse_factors(SMPI_LAT_FACTORS).expect("built-in factors"),
            bw_factors: parse_factors(SMPI_BW_FACTORS).expect("built-in factors"),
            weight_s: 8775.0,
            ..FlowConfig::default()
        }
    }

    /// The flow model a platform file's options describe, by SimGrid's names:
    /// `network/model` (`CM02` or `SMPI`), `smpi/lat-factor`, `smpi/bw-factor`,
    /// `network/weight-S`, `network/crosstraffic`, `network/TCP-gamma`; other options are
    /// ignored. Without `network/model`, CM02's defaults. Errors name the option.
    pub fn from_options(options: &BTreeMap<String, String>) -> Result<FlowConfig, String> {
        FlowConfig::from_options_or(options, FlowConfig::default())
    }

    /// As [`FlowConfig::from_options`], with `base` as the model's defaults when the
    /// options do not name a `network/model` (SMPI's for `--network smpi`, as smpirun,
    /// whose `--cfg` options override its defaults).
    pub fn from_options_or(
        options: &BTreeMap<String, String>,
        base: FlowConfig,
    ) -> Result<FlowConfig, String> {
        let mut c = match options.get("network/model").map(String::as_str) {
            None => base,
            Some("CM02") => FlowConfig::default(),
            Some("SMPI") => FlowConfig::smpi(),
            Some(other) => {
                return Err(format!(
                    "network/model `{other}`: the flow model is CM02 or SMPI"
                ))
            }
        };
        let number = |key: &str, v: &str| {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{key} `{v}`: expected a non-negative number"))
        };
        for (key, v) in options {
            match key.as_str() {
                "smpi/lat-factor" => {
                    c.lat_factors = parse_factors(v).map_err(|e| format!("{key}: {e}"))?
                }
                "smpi/bw-factor" => {
                    c.bw_factors = parse_factors(v).map_err(|e| format!("{key}: {e}"))?
                }
                "network/weight-S" => c.weight_s = number(key, v)?,
                "network/TCP-gamma" | "network/TCP_gamma" => c.tcp_gamma = number(key, v)?,
                "network/crosstraffic" => {
                    c.crosstraffic = match v.trim() {
                        "yes" | "true" | "1" | "on" => 0.05,
                        "no" | "false" | "0" | "off" => 0.0,
                        _ => return Err(format!("{key} `{v}`: expected yes or no")),
                    }
                }
                _ => {}
            }
        }
        Ok(c)
    }

    /// Latency and bandwidth factors for a message of `bytes` (padded) bytes.
    pub fn factors(&self, bytes: u64) -> (f64, f64) {
        (
            self.latency_factor * piecewise(&self.lat_factors, bytes),
            self.bandwidth_factor * piecewise(&self.bw_factors, bytes),
        )
    }
}

/// The factor of the last threshold strictly below `bytes` (SimGrid's rule), else 1.
fn piecewise(factors: &[(u64, f64)], bytes: u64) -> f64 {
    let mut f = 1.0;
    for &(threshold, factor) in factors {
        if bytes > threshold {
            f = factor;
        } else {
            break;
        }
    }
    f
}

/// Parses factors in SimGrid's syntax, `threshold:factor;threshold:factor;...` (any order;
/// thresholds in bytes), sorted by threshold; a lone number is one factor for every size
/// (`0:factor`), as SimGrid reads it.
pub fn parse_factors(spec: &str) -> Result<Vec<(u64, f64)>, String> {
    let mut out = Vec::new();
    if !spec.contains([':', ';']) && !spec.trim().is_empty() {
        let f: f64 = spec
            .trim()
            .parse()
            .map_err(|_| format!("`{}`: expected THRESHOLD:FACTOR or a factor", spec.trim()))?;
        if !(f.is_finite() && f > 0.0) {
            return Err(format!("`{}`: factor must be positive", spec.trim()));
        }
        return Ok(vec![(0, f)]);
    }
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (t, f) = part
            .split_once(':')
            .ok_or_else(|| format!("`{part}`: expected THRESHOLD:FACTOR"))?;
        let t: u64 = t
            .trim()
            .parse()
            .map_err(|_| format!("`{part}`: threshold `{t}` is not a byte count"))?;
        let f: f64 = f
            .trim()
            .parse()
            .map_err(|_| format!("`{part}`: factor `{f}` is not a number"))?;
        if !(f.is_finite() && f > 0.0) {
            return Err(format!("`{part}`: factor must be positive"));
        }
        out.push((t, f));
    }
    if out.is_empty() {
        return Err("no THRESHOLD:FACTOR pair".into());
    }
    out.sort_by_key(|&(t, _)| t);
    Ok(out)
}

impl NetworkParams for FlowConfig {
    fn build<'p>(&self, platform: &'p Platform) -> Box<dyn NetworkModel + 'p> {
        Box::new(FlowModel::new(platform, self.clone()))
    }
}

/// `flow`: SimGrid's CM02 with the platform's options ([`FlowConfig::from_options`]).
pub const FLOW: Registration = Registration {
    name: "flow",
    about: "max-min sharing, SimGrid's CM02 with the platform's factors",
    configure: |options| Ok(NetworkKind::new(FlowConfig::from_options(options)?)),
};

/// `smpi`: SimGrid's `SMPI` model, smpirun's default ([`FlowConfig::smpi`]), with the
/// platform's and `--cfg`'s options over its defaults as smpirun's `--cfg` (`network/model:
/// CM02` gives CM02's parameters; SMPI's per-call costs are the configuration's, not the
/// network model's).
pub const SMPI: Registration = Registration {
    name: "smpi",
    about: "the flow model with SMPI's piecewise factors by message size and weight-S",
    configure: |options| {
        Ok(NetworkKind::new(FlowConfig::from_options_or(
            options,
            FlowConfig::smpi(),
        )?))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Host, Link, LinkId, Routing};

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

    #[test]
    fn factors_apply_strictly_above_their_threshold() {
        let c = FlowConfig {
            lat_factors: parse_factors("1000:3;0:2").unwrap(),
            bw_factors: parse_factors("0:0.5;1000:0.25").unwrap(),
            ..FlowConfig::default()
        };
        assert_eq!(c.lat_factors, vec![(0, 2.0), (1000, 3.0)]);
        assert_eq!(c.factors(0), (1.0, 1.0));
        assert_eq!(c.factors(1), (2.0, 0.5));
        assert_eq!(c.factors(1000), (2.0, 0.5));
        assert_eq!(c.factors(1001), (3.0, 0.25));
        assert_eq!(FlowConfig::default().factors(1 << 40), (1.0, 1.0));
        let smpi = FlowConfig::smpi();
        assert_eq!(smpi.factors(65473), (11.6436, 0.940694));
        assert_eq!(smpi.factors(100), (2.01467, 0.812084));
    }

    #[test]
    fn options_of_a_platform_file() {
        let o = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        assert_eq!(
            FlowConfig::from_options(&o(&[])).unwrap(),
            FlowConfig::default()
        );
        assert_eq!(
            FlowConfig::from_options(&o(&[("network/model", "SMPI")])).unwrap(),
            FlowConfig::smpi()
        );
        let c = FlowConfig::from_options(&o(&[
            ("smpi/bw-factor", "0:0.5"),
            ("network/weight-S", "100"),
            ("network/crosstraffic", "no"),
            ("network/loopback-bw", "1e9"),
        ]))
        .unwrap();
        assert_eq!(
            (c.bw_factors.clone(), c.weight_s, c.crosstraffic),
            (vec![(0, 0.5)], 100.0, 0.0)
        );
        let e = FlowConfig::from_options(&o(&[("smpi/lat-factor", "x")])).unwrap_err();
        assert!(e.starts_with("smpi/lat-factor"), "{e}");
        assert!(FlowConfig::from_options(&o(&[("network/model", "IB")])).is_err());
    }

    #[test]
    fn smpi_reads_options_over_its_defaults() {
        let o = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let smpi = |kv: &[(&str, &str)]| (SMPI.configure)(&o(kv)).unwrap();
        assert_eq!(smpi(&[]), NetworkKind::new(FlowConfig::smpi()));
        // Options given override SMPI's defaults, one by one, as smpirun's --cfg.
        let c = smpi(&[("network/weight-S", "0"), ("smpi/lat-factor", "1")]);
        let c = c.params::<FlowConfig>().unwrap();
        assert_eq!((c.weight_s, c.lat_factors.clone()), (0.0, vec![(0, 1.0)]));
        assert_eq!(c.bw_factors, FlowConfig::smpi().bw_factors);
        // network/model:CM02 gives CM02's parameters, as in SimGrid.
        let c = smpi(&[("network/model", "CM02")]);
        assert_eq!(c, NetworkKind::new(FlowConfig::default()));
        let e = (SMPI.configure)(&o(&[("smpi/bw-factor", "x")])).unwrap_err();
        assert!(e.starts_with("smpi/bw-factor"), "{e}");
    }

    #[test]
    fn bad_factors_are_named() {
        assert!(parse_factors("").unwrap_err().contains("no THRESHOLD"));
        assert!(parse_factors("12x").unwrap_err().contains("`12x`"));
        assert!(parse_factors("0").unwrap_err().contains("positive"));
        // A lone number: one factor for every size, as SimGrid reads it.
        assert_eq!(parse_factors(" 1.5 ").unwrap(), vec![(0, 1.5)]);
        assert!(parse_factors("a:1").unwrap_err().contains("threshold `a`"));
        assert!(parse_factors("1:b").unwrap_err().contains("factor `b`"));
        assert!(parse_factors("1:-2").unwrap_err().contains("positive"));
    }
}
