//! Per call site, whether overlapping pays: measured on the program itself, so T-NBC never
//! makes it slower.
//!
//! [Li 2010]'s model says what an overlapped collective can hide, `min(T_comm - T_init,
//! T_CURC + T_comm * R_comm / R_CRC)`; whether the program finishes sooner also depends on
//! what the model leaves out: a progress thread that finds no free core (a machine whose
//! cores are all busy), an MPI library whose blocking collective is faster than T-NBC's
//! schedule, page faults. So the decision times what the model predicts, the gain per call,
//! directly: the time from one call at a site to the next call at the same site (one
//! iteration of the program's loop), with the collective blocking and overlapped in turn.
//!
//! A site's life: its first calls run blocking, [`SAMPLES`] iterations and as many blocking
//! collectives timed (the collective's own time `T_comm` and the rest of the iteration, the
//! computation an overlapped call could hide behind). From these the model predicts the best
//! gain per call, `min(T_comm, computation) - cost`, with `cost` what T-NBC spends to start
//! and finish a call (its caller's estimate, or half what the site's last probe measured
//! when that is more): a site whose predicted gain is not positive never overlaps a call and
//! blocks as after a loss (a collective with no computation around it, or one whose
//! transfer is shorter than T-NBC's fixed costs, costs nothing to rule out). Otherwise the
//! calls alternate, overlapped and blocking, until each mode has [`SAMPLES`] iterations (or at
//! once when the overlapped ones are clearly slower, [`CLEAR_LOSS`]); the site
//! overlaps when the median overlapped iteration is shorter than the median blocking one by
//! more than [`MARGIN`], and blocks otherwise. An overlapping site is reviewed every
//! [`SAMPLES`] calls: when its recent iterations are no longer shorter than the blocking ones
//! (the machine got busy, the progress thread lags), it blocks. A blocking site probes again
//! after [`REPROBE`] calls, then after twice as many, and so on (the model is asked again
//! first, on fresh blocking samples).
//!
//! What a rank wants is only its vote: the engine takes the minimum over the ranks of the
//! communicator in the agreement it runs for every call anyway, so a call overlaps only when
//! every rank wants it, and the ranks never take different paths.

use std::collections::HashMap;

/// Iterations per mode measured before deciding, and the review window of an overlapping
/// site.
pub const SAMPLES: usize = 4;
/// Relative gain an overlapped iteration must show over a blocking one (the machine's noise
/// must not decide).
pub const MARGIN: f64 = 0.01;
/// Relative loss that ends a probe before [`SAMPLES`] iterations: when the fastest
/// overlapped iteration is this much slower than the slowest blocking one, more samples
/// would only cost more.
pub const CLEAR_LOSS: f64 = 0.10;
/// Calls a blocking site waits before measuring again (doubling each time): a probe of a
/// site where overlapping loses costs about one overlapped call, so a few hundred calls keep
/// its share of the run under a percent or two.
pub const REPROBE: u64 = 256;
/// Longest wait between probes of a blocking site, in calls.
pub const REPROBE_MAX: u64 = 16384;

/// The path a call took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The MPI library's blocking collective.
    Blocking,
    /// T-NBC's early return.
    Overlapped,
}

/// What a site does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Measuring both modes.
    Probing,
    /// Overlapping, reviewed every [`SAMPLES`] calls.
    Overlap,
    /// Blocking until call `until` (then probing again).
    Blocking {
        /// The call (site-local count) at which to probe again.
        until: u64,
    },
}

/// One call site's measurements and decision.
#[derive(Debug, Clone)]
pub struct Site {
    calls: u64,
    overlapped: u64,
    /// Entry time and mode of the previous call here.
    last: Option<(f64, Mode)>,
    blocking: Vec<f64>,
    overlapping: Vec<f64>,
    /// Calls of this probe so far.
    probe_calls: u64,
    state: State,
    backoff: u64,
    decisions: u32,
    /// Median overlapped iteration of the last concluded probe or review.
    last_overlapped: Option<f64>,
    /// Whether this rank wanted the current call overlapped.
    wanted: bool,
    /// Overlapped calls in a row that the agreement refused.
    vetoed: u32,
    /// The blocking collectives' own times (entry to return) of this probe.
    spans: Vec<f64>,
    /// Entry time of the current call while it runs blocking (until [`Site::left`]).
    open: Option<f64>,
    /// T-NBC's cost per call as the caller estimates it for the current call, seconds.
    cost: f64,
    /// T-NBC's cost per call as the last probe measured it (overlapped iteration minus the
    /// blocking one plus what the model says was hidden), seconds.
    measured_cost: Option<f64>,
    /// Whether the model allowed overlapped calls in the current probe.
    gauged: bool,
    /// The model's last prediction of the gain per call, seconds.
    predicted: Option<f64>,
    /// Probes the model ruled out without overlapping a call.
    ruled_out: u32,
}

impl Default for Site {
    fn default() -> Self {
        Self {
            calls: 0,
            overlapped: 0,
            last: None,
            blocking: Vec::new(),
            overlapping: Vec::new(),
            probe_calls: 0,
            state: State::Probing,
            backoff: REPROBE,
            decisions: 0,
            last_overlapped: None,
            wanted: false,
            vetoed: 0,
            spans: Vec::new(),
            open: None,
            cost: 0.0,
            measured_cost: None,
            gauged: false,
            predicted: None,
            ruled_out: 0,
        }
    }
}

/// A site's figures, for `--stats`.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Calls at the site.
    pub calls: u64,
    /// Calls that overlapped.
    pub overlapped: u64,
    /// Its current state.
    pub state: State,
    /// Median blocking iteration, seconds (of the last measurement).
    pub blocking_s: Option<f64>,
    /// Median overlapped iteration, seconds (of the last measurement or review).
    pub overlapped_s: Option<f64>,
    /// Decisions taken (probes concluded and reviews that changed the state).
    pub decisions: u32,
    /// Median blocking collective (entry to return), seconds, of the last measurement.
    pub collective_s: Option<f64>,
    /// The model's last predicted gain per call, seconds (negative: not worth a probe).
    pub predicted_gain_s: Option<f64>,
    /// Probes the model ruled out without overlapping a call.
    pub ruled_out: u32,
}

/// Keeps at most four windows of samples (a probe another rank keeps vetoing must not grow).
fn push_bounded(v: &mut Vec<f64>, x: f64) {
    if v.len() >= 4 * SAMPLES {
        v.remove(0);
    }
    v.push(x);
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    Some(s[s.len() / 2])
}

/// The model's best gain per call: an overlapped call hides at most the shorter of the
/// blocking collective (`span`) and the rest of the iteration (`iteration - span`), and pays
/// `cost` ([Li 2010]'s T_overlap, bounded by the computation the call can hide behind).
pub fn predicted_gain(iteration: f64, span: f64, cost: f64) -> f64 {
    let span = span.clamp(0.0, iteration.max(0.0));
    span.min(iteration - span) - cost
}

impl Site {
    /// A call enters the site at `now` (seconds, any fixed origin): records the previous
    /// call's iteration and returns whether this rank wants this call overlapped. `cost` is
    /// the caller's estimate of what overlapping this call would cost T-NBC (seconds).
    pub fn enter(&mut self, now: f64, cost: f64) -> bool {
        self.cost = cost.max(0.0);
        if let Some((t, mode)) = self.last.take() {
            let dt = (now - t).max(0.0);
            match (self.state, mode) {
                (State::Probing, Mode::Blocking) => push_bounded(&mut self.blocking, dt),
                (State::Probing | State::Overlap, Mode::Overlapped) => {
                    push_bounded(&mut self.overlapping, dt)
                }
                // A blocking site, or a call another rank vetoed: nothing to learn.
                _ => {}
            }
            self.review();
        }
        self.calls += 1;
        self.wanted = self.want();
        self.wanted
    }

    fn want(&mut self) -> bool {
        match self.state {
            State::Overlap => true,
            State::Blocking { until } if self.calls < until => false,
            State::Blocking { .. } => {
                self.state = State::Probing;
                self.blocking.clear();
                self.overlapping.clear();
                self.spans.clear();
                self.probe_calls = 0;
                self.vetoed = 0;
                self.gauged = false;
                self.want_in_probe()
            }
            State::Probing => self.want_in_probe(),
        }
    }

    /// The cost the model charges an overlapped call: the larger of the caller's estimate
    /// and half what the last probe measured (a busy machine's losses are remembered, but
    /// fade, so the site is asked again when the machine may have quietened).
    fn model_cost(&self) -> f64 {
        self.cost.max(self.measured_cost.map_or(0.0, |c| c / 2.0))
    }

    /// Whether the blocking samples of this probe are enough to ask the model, and its
    /// answer; `None` while measuring.
    fn gauge(&mut self) -> Option<bool> {
        if self.gauged {
            return Some(true);
        }
        let (Some(b), Some(span)) = (median(&self.blocking), median(&self.spans)) else {
            return None;
        };
        if self.blocking.len() < SAMPLES || self.spans.len() < SAMPLES {
            return None;
        }
        let gain = predicted_gain(b, span, self.model_cost());
        self.predicted = Some(gain);
        self.gauged = gain > MARGIN * b;
        Some(self.gauged)
    }

    /// The first calls of a site (and of each probe) block until the model has its
    /// samples; then, if it predicts a gain, overlapped and blocking alternate.
    fn want_in_probe(&mut self) -> bool {
        match self.gauge() {
            None => false,
            Some(false) => {
                self.ruled_out += 1;
                self.decisions += 1;
                self.block();
                false
            }
            Some(true) => {
                self.probe_calls += 1;
                self.probe_calls % 2 == 0
            }
        }
    }

    /// The mode the call just entered actually took (the ranks' agreement), timed from `now`.
    /// A site whose overlapped calls other ranks keep refusing ([`SAMPLES`] in a row) turns
    /// blocking, as theirs did.
    pub fn took(&mut self, mode: Mode, now: f64) {
        match mode {
            Mode::Overlapped => {
                self.overlapped += 1;
                self.vetoed = 0;
            }
            Mode::Blocking if self.wanted => {
                self.vetoed += 1;
                if self.vetoed >= SAMPLES as u32 {
                    self.vetoed = 0;
                    self.decisions += 1;
                    self.block();
                }
            }
            Mode::Blocking => {}
        }
        self.open = (mode == Mode::Blocking).then_some(now);
        self.last = Some((now, mode));
    }

    /// The blocking collective of the current call returned at `now`: its own time is a
    /// sample for the model while the site measures.
    pub fn left(&mut self, now: f64) {
        if let Some(t) = self.open.take() {
            if self.state == State::Probing {
                push_bounded(&mut self.spans, (now - t).max(0.0));
            }
        }
    }

    /// The call just entered ran blocking because the ranks agreed to skip their agreement
    /// for a while (not a refusal: nothing counts against the site's wish; its collective is
    /// timed like any blocking one).
    pub fn took_forced(&mut self, now: f64) {
        self.open = Some(now);
        self.last = Some((now, Mode::Blocking));
    }

    /// Whether the site has settled on blocking (its vote for skipping the agreement).
    pub fn is_blocking(&self) -> bool {
        matches!(self.state, State::Blocking { .. })
    }

    /// Concludes a probe or reviews an overlapping site.
    fn review(&mut self) {
        let (Some(b), Some(o)) = (median(&self.blocking), median(&self.overlapping)) else {
            return;
        };
        let fastest_overlapped = self.overlapping.iter().copied().fold(f64::MAX, f64::min);
        let slowest_blocking = self.blocking.iter().copied().fold(0.0, f64::max);
        match self.state {
            // A clear loss ends the probe at once: every overlapped iteration slower than
            // every blocking one by more than the noise.
            State::Probing if fastest_overlapped > slowest_blocking * (1.0 + CLEAR_LOSS) => {
                self.last_overlapped = Some(o);
                self.note_cost(b, o);
                self.decisions += 1;
                self.block();
            }
            State::Probing
                if self.blocking.len() >= SAMPLES && self.overlapping.len() >= SAMPLES =>
            {
                self.decisions += 1;
                self.last_overlapped = Some(o);
                self.note_cost(b, o);
                if o < b * (1.0 - MARGIN) {
                    self.state = State::Overlap;
                    self.backoff = REPROBE;
                    self.overlapping.clear();
                } else {
                    self.block();
                }
            }
            State::Overlap if self.overlapping.len() >= SAMPLES => {
                self.last_overlapped = Some(o);
                self.overlapping.clear();
                if o >= b * (1.0 - MARGIN) {
                    self.decisions += 1;
                    self.block();
                }
            }
            _ => {}
        }
    }

    /// What the overlapped calls of this probe cost, by the model: the overlapped
    /// iteration `o` is the blocking one `b` less what was hidden plus the cost.
    fn note_cost(&mut self, b: f64, o: f64) {
        if let Some(span) = median(&self.spans) {
            let hidden = predicted_gain(b, span, 0.0);
            self.measured_cost = Some((o - b + hidden).max(0.0));
        }
    }

    fn block(&mut self) {
        self.state = State::Blocking {
            until: self.calls + self.backoff,
        };
        self.backoff = (self.backoff * 2).min(REPROBE_MAX);
    }

    /// The site's figures.
    pub fn report(&self) -> Report {
        Report {
            calls: self.calls,
            overlapped: self.overlapped,
            state: self.state,
            blocking_s: median(&self.blocking),
            overlapped_s: self.last_overlapped.or_else(|| median(&self.overlapping)),
            decisions: self.decisions,
            collective_s: median(&self.spans),
            predicted_gain_s: self.predicted,
            ruled_out: self.ruled_out,
        }
    }
}

/// Every site of a process, by a key the caller chooses (a return address).
#[derive(Debug, Default)]
pub struct Sites {
    map: HashMap<usize, Site>,
}

impl Sites {
    /// The site of `key`, created on first use.
    pub fn site(&mut self, key: usize) -> &mut Site {
        self.map.entry(key).or_default()
    }

    /// Every site with its key, in key order.
    pub fn reports(&self) -> Vec<(usize, Report)> {
        let mut v: Vec<_> = self.map.iter().map(|(&k, s)| (k, s.report())).collect();
        v.sort_by_key(|&(k, _)| k);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `n` calls of a loop whose iteration takes `iter(mode, call)` seconds, the blocking
    /// collective `span` of it, T-NBC estimated to cost `cost` per call; every call takes the
    /// mode the site wants. Returns the site and the modes taken.
    fn run_costed(
        n: usize,
        span: f64,
        cost: f64,
        iter: impl Fn(Mode, usize) -> f64,
    ) -> (Site, Vec<Mode>) {
        let mut s = Site::default();
        let mut now = 0.0;
        let mut modes = Vec::new();
        for i in 0..n {
            let m = if s.enter(now, cost) {
                Mode::Overlapped
            } else {
                Mode::Blocking
            };
            s.took(m, now);
            modes.push(m);
            let dt = iter(m, i);
            if m == Mode::Blocking {
                s.left(now + span * dt);
            }
            now += dt;
        }
        (s, modes)
    }

    /// [`run_costed`] with the collective half of the blocking iteration and no fixed cost:
    /// the model lets every site probe.
    fn run(n: usize, iter: impl Fn(Mode, usize) -> f64) -> (Site, Vec<Mode>) {
        run_costed(n, 0.5, 0.0, iter)
    }

    fn overlapped(modes: &[Mode]) -> usize {
        modes.iter().filter(|&&m| m == Mode::Overlapped).count()
    }

    #[test]
    fn the_gain_is_bounded_by_the_collective_and_the_computation() {
        assert!((predicted_gain(1.0, 0.3, 0.1) - 0.2).abs() < 1e-12);
        assert!((predicted_gain(1.0, 0.8, 0.1) - 0.1).abs() < 1e-12);
        assert!(predicted_gain(1.0, 1.0, 0.0) <= 0.0);
        // A span longer than the iteration (clock noise) hides nothing.
        assert!(predicted_gain(1.0, 1.5, 0.0) <= 0.0);
    }

    #[test]
    fn a_collective_without_computation_never_overlaps() {
        // The collective is the whole iteration: nothing to hide behind, however fast an
        // overlapped call would claim to be.
        let (s, modes) = run_costed(3000, 0.99, 0.0, |m, _| {
            if m == Mode::Overlapped {
                0.5
            } else {
                1.0
            }
        });
        assert_eq!(overlapped(&modes), 0);
        let r = s.report();
        assert!(r.ruled_out >= 2, "{r:?}");
        assert!(r.predicted_gain_s.unwrap() <= MARGIN);
        assert!((r.collective_s.unwrap() - 0.99).abs() < 1e-9);
    }

    #[test]
    fn fixed_costs_above_the_hideable_time_never_overlap() {
        let (s, modes) = run_costed(3000, 0.5, 0.6, |_, _| 1.0);
        assert_eq!(overlapped(&modes), 0);
        assert!(matches!(s.report().state, State::Blocking { .. }));
    }

    #[test]
    fn a_gain_the_model_allows_is_found() {
        let (s, modes) = run_costed(
            100,
            0.5,
            0.1,
            |m, _| {
                if m == Mode::Overlapped {
                    0.7
                } else {
                    1.0
                }
            },
        );
        assert_eq!(s.report().state, State::Overlap);
        assert!(modes[..SAMPLES + 1].iter().all(|&m| m == Mode::Blocking));
        assert!(modes[30..].iter().all(|&m| m == Mode::Overlapped));
    }

    #[test]
    fn a_measured_loss_rules_out_later_probes() {
        // The first probe finds an overlapped call costs 2.5 (3.0 against 1.0 with 0.5
        // hidden): half of it still exceeds the 0.5 the model can hide, so no reprobe
        // overlaps again.
        let (s, modes) = run(5000, |m, _| if m == Mode::Overlapped { 3.0 } else { 1.0 });
        assert_eq!(overlapped(&modes), 1);
        assert!(s.report().ruled_out >= 3, "{:?}", s.report());
    }

    #[test]
    fn a_gain_is_kept() {
        let (s, modes) = run(100, |m, _| if m == Mode::Overlapped { 0.8 } else { 1.0 });
        assert_eq!(s.report().state, State::Overlap);
        assert_eq!(modes[0], Mode::Blocking);
        assert!(modes[20..].iter().all(|&m| m == Mode::Overlapped));
    }

    #[test]
    fn a_loss_blocks_and_probes_rarely() {
        let (s, modes) = run(2000, |m, _| if m == Mode::Overlapped { 1.3 } else { 1.0 });
        assert!(
            matches!(s.report().state, State::Blocking { .. })
                || s.report().state == State::Probing
        );
        let over = modes.iter().filter(|&&m| m == Mode::Overlapped).count();
        // A clear loss: each probe overlaps one call; probes come after 256, 512, ...
        // calls.
        assert!(over <= 6, "{over} overlapped calls");
        assert!(modes[..=SAMPLES].iter().all(|&m| m == Mode::Blocking));
        assert_eq!(modes[SAMPLES + 1], Mode::Overlapped);
        assert!(modes[SAMPLES + 2..60].iter().all(|&m| m == Mode::Blocking));
    }

    #[test]
    fn a_small_loss_is_measured_in_full() {
        let (s, modes) = run(20, |m, _| if m == Mode::Overlapped { 1.05 } else { 1.0 });
        assert!(matches!(s.report().state, State::Blocking { .. }));
        let over = modes.iter().filter(|&&m| m == Mode::Overlapped).count();
        assert_eq!(over, SAMPLES);
    }

    #[test]
    fn no_gain_within_the_margin_blocks() {
        let (s, _) = run(20, |m, _| if m == Mode::Overlapped { 0.995 } else { 1.0 });
        assert!(matches!(s.report().state, State::Blocking { .. }));
    }

    #[test]
    fn a_machine_that_gets_busy_stops_overlapping() {
        // Overlap pays for 50 calls, then the progress thread starves: 3x slower.
        let (s, modes) = run(80, |m, i| match (m, i < 50) {
            (Mode::Overlapped, true) => 0.8,
            (Mode::Overlapped, false) => 3.0,
            _ => 1.0,
        });
        assert!(matches!(s.report().state, State::Blocking { .. }));
        let late = modes[50..]
            .iter()
            .filter(|&&m| m == Mode::Overlapped)
            .count();
        assert!(
            late <= SAMPLES,
            "{late} overlapped calls after the machine got busy"
        );
    }

    #[test]
    fn another_ranks_veto_is_measured_as_blocking() {
        let mut s = Site::default();
        let mut now = 0.0;
        for _ in 0..40 {
            let _ = s.enter(now, 0.0);
            s.took(Mode::Blocking, now); // the agreement said no every time
            s.left(now + 0.5);
            now += 1.0;
        }
        assert_eq!(s.report().overlapped, 0);
        assert!(matches!(s.report().state, State::Blocking { .. }));
    }

    proptest::proptest! {
        /// Whatever the noise, when overlapping always costs more than the noise, the site
        /// overlaps at most one probe's worth of calls per probe (the first after 1 call,
        /// the next after 256, 512, ... blocking ones), so its cost stays bounded.
        #[test]
        fn a_loss_costs_a_bounded_number_of_calls(
            noise in proptest::collection::vec(0.0f64..0.2, 500),
            loss in 0.25f64..2.0,
        ) {
            let (_, modes) = run(500, |m, i| match m {
                Mode::Blocking => 1.0 + noise[i],
                Mode::Overlapped => 1.0 + noise[i] + loss,
            });
            let over = modes.iter().filter(|&&m| m == Mode::Overlapped).count();
            // Probes start at calls 1 and ~257+: two at most in 500 calls.
            proptest::prop_assert!(over <= 2 * SAMPLES, "{} overlapped calls", over);
        }

        /// When overlapping always helps by more than the noise, the site ends up
        /// overlapping and stays so.
        #[test]
        fn a_steady_gain_is_found(
            noise in proptest::collection::vec(0.0f64..0.02, 200),
            gain in 0.05f64..0.9,
        ) {
            let (s, modes) = run(200, |m, i| match m {
                Mode::Blocking => 1.0 + noise[i],
                Mode::Overlapped => 1.0 + noise[i] - gain,
            });
            proptest::prop_assert_eq!(s.report().state, State::Overlap);
            proptest::prop_assert!(modes[20..].iter().all(|&m| m == Mode::Overlapped));
        }
    }

    #[test]
    fn medians_ignore_an_outlier() {
        assert_eq!(median(&[1.0, 50.0, 1.1, 0.9]), Some(1.1));
        assert_eq!(median(&[]), None);
    }
}
