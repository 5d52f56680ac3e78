//! SMPI's per-call costs and the options that change what a replayed action costs
//! ([`CallCosts`]), read from a platform's options by SimGrid's names.
//!
//! What SimGrid 3.32 charges, from its sources (`smpi_request.cpp`, `smpi_host.cpp`,
//! `smpi_replay.cpp`, `smpi_bench.cpp`) and measured with `smpirun -replay` on small
//! time-independent traces ([Degomme 2017]; `docs/notes/simgrid-3.32-semantics.md` §5):
//!
//! | option | applies to | cost | SimGrid's default |
//! |---|---|---|---|
//! | `smpi/test` | every `MPI_Test` of a live request | sleep `n x test` before testing | 1e-4 s |
//! | `smpi/iprobe` | every `MPI_Iprobe`, each turn of a blocking probe (TI: a `recv` of negative size) | compute `n x iprobe x speed x usage` flops, at most `usage x speed` flop/s, before probing | 1e-4 s |
//! | `smpi/grow-injected-times` | the `n` above | `n` is 1 after a success, grows by 1 after each failure (one counter for all ranks, one for tests, one for probes) | yes |
//! | `smpi/iprobe-cpu-usage` | the probe's computation | `usage` above: alone on its core the same time, sharing it longer or shorter | 1 |
//! | `smpi/os` | a blocking send that returns at once (eager), a synchronous send | sleep `os(S)` before posting | `0:0:0:0:0` |
//! | `smpi/ois` | every non-blocking send | sleep `ois(S)` before posting | `0:0:0:0:0` |
//! | `smpi/or` | a receive whose sender returned at once, when it completes (wait, test, recv) | sleep `or(S)`, one receive after the other in a wait of several | `0:0:0:0:0` |
//! | `smpi/async-small-thresh` | sends below it (and not synchronous) | the transfer starts when posted, not when matched | 0 |
//! | `smpi/init` | each rank | sleep at `MPI_Init` | 0 s |
//! | `smpi/finalization-barrier` | each rank | a barrier at `MPI_Finalize` | no |
//! | `smpi/simulate-computation` | computations between MPI calls | skipped when `no` | yes |
//!
//! `os`, `or` and `ois` are piecewise linear in the message size `S`: sections
//! `bound:intercept:slope` separated by `;`, sorted by bound; `S` takes the last section
//! whose bound is strictly below it, or the first one (see [`Piecewise`]).
//!
//! Options that change nothing in a replay: `smpi/wtime` (charged per `MPI_Wtime`, which
//! no replayed action is), `smpi/host-speed` and `smpi/cpu-threshold` (they turn the
//! measured durations of an application SimGrid runs into flops; a replay's computations
//! are flops already). Measured: the same trace replays to the same date with each of them
//! changed.
//!
//! mpiscope charges these costs on the point-to-point actions of every workload, not on the
//! messages of collectives (whose algorithms SimGrid writes with blocking or non-blocking
//! sends case by case), nor from a host's own `smpi/os` property. The probes that end the
//! chunks of a polled computation (HPL's) are paid after it, not between its chunks. Ranks
//! due at the same date run in rank order, which may differ from SimGrid's when they share
//! a counter. With `--network smpi` SimGrid's defaults apply; with the other models the
//! tests' and probes' costs default to zero, so that their results do not move.

use std::collections::BTreeMap;

/// A piecewise-linear cost of the message size (SimGrid's `smpi/os`, `smpi/or`,
/// `smpi/ois`): sections `(bound, intercept, slope)` sorted by bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Piecewise(Vec<(u64, f64, f64)>);

impl Piecewise {
    /// Parses SimGrid's `bound:intercept:slope;...` (values in seconds and seconds per byte,
    /// SimGrid's time units allowed on the intercept; values after the slope are ignored,
    /// as SimGrid does).
    pub fn parse(spec: &str) -> Result<Piecewise, String> {
        let mut sections = Vec::new();
        for (i, part) in spec.split(';').filter(|p| !p.trim().is_empty()).enumerate() {
            let items: Vec<&str> = part.split(':').map(str::trim).collect();
            let n = i + 1;
            let bound: u64 = items[0]
                .parse()
                .map_err(|_| format!("section {n} `{part}`: `{}` is not a size", items[0]))?;
            if items.len() < 3 {
                return Err(format!(
                    "section {n} `{part}`: expected `bound:intercept:slope`"
                ));
            }
            let value = |s: &str, what: &str| -> Result<f64, String> {
                crate::platform::units::parse_time(s)
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| {
                        format!("section {n} `{part}`: {what} `{s}` is not a non-negative time")
                    })
            };
            sections.push((
                bound,
                value(items[1], "intercept")?,
                value(items[2], "slope")?,
            ));
        }
        if sections.is_empty() {
            return Err("expected `bound:intercept:slope;...`".into());
        }
        sections.sort_by_key(|s| s.0);
        Ok(Piecewise(sections))
    }

    /// The cost of a message of `bytes`: the last section whose bound is strictly below it,
    /// or the first section.
    pub fn at(&self, bytes: u64) -> f64 {
        let Some(first) = self.0.first() else {
            return 0.0;
        };
        let (_, a, b) = self
            .0
            .iter()
            .take_while(|s| s.0 < bytes)
            .last()
            .unwrap_or(first);
        a + b * bytes as f64
    }

    /// Whether every size costs nothing.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&(_, a, b)| a == 0.0 && b == 0.0)
    }
}

/// The per-call costs of SMPI and the options of the same family (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct CallCosts {
    /// `smpi/test`: seconds slept before each test of a live request (times the counter).
    pub test: f64,
    /// `smpi/iprobe`: seconds computed before each probe (times the counter).
    pub iprobe: f64,
    /// `smpi/grow-injected-times`: the counters grow with each failed test or probe.
    pub grow_injected_times: bool,
    /// `smpi/iprobe-cpu-usage`: the fraction of a core a probe uses (0, 1].
    pub iprobe_cpu_usage: f64,
    /// `smpi/os`: before a blocking send that returns at once, or a synchronous one.
    pub os: Piecewise,
    /// `smpi/or`: after a receive from a sender that returned at once.
    pub or: Piecewise,
    /// `smpi/ois`: before a non-blocking send.
    pub ois: Piecewise,
    /// `smpi/async-small-thresh`: sends strictly below this many bytes start moving when
    /// posted (0: none).
    pub async_small_thresh: u64,
    /// `smpi/init`: seconds each rank sleeps at its start.
    pub init: f64,
    /// `smpi/finalization-barrier`: ranks end with a barrier.
    pub finalization_barrier: bool,
    /// `smpi/simulate-computation`: computations between MPI calls take time.
    pub simulate_computation: bool,
}

impl Default for CallCosts {
    /// Nothing charged (the non-SMPI models' defaults).
    fn default() -> CallCosts {
        CallCosts {
            test: 0.0,
            iprobe: 0.0,
            grow_injected_times: true,
            iprobe_cpu_usage: 1.0,
            os: Piecewise::default(),
            or: Piecewise::default(),
            ois: Piecewise::default(),
            async_small_thresh: 0,
            init: 0.0,
            finalization_barrier: false,
            simulate_computation: true,
        }
    }
}

/// The options [`CallCosts::read`] reads (listed with the platform's other options).
pub use crate::platform::config::COST_OPTIONS as OPTIONS;

/// SimGrid's per-call costs: 1e-4 s per test and per probe.
pub const SMPI_POLL_COST: f64 = 1e-4;

impl CallCosts {
    /// SimGrid 3.32's defaults (`--network smpi`).
    pub fn smpi() -> CallCosts {
        CallCosts {
            test: SMPI_POLL_COST,
            iprobe: SMPI_POLL_COST,
            ..CallCosts::default()
        }
    }

    /// The costs `options` set over `defaults`; errors name the option. The
    /// asynchronous threshold must not exceed `eager_threshold` (as SimGrid checks).
    pub fn read(
        options: &BTreeMap<String, String>,
        defaults: CallCosts,
        eager_threshold: u64,
    ) -> Result<CallCosts, String> {
        let mut c = defaults;
        for (key, value) in options
            .iter()
            .filter(|(k, _)| OPTIONS.contains(&k.as_str()))
        {
            let v = value.trim();
            let bad = |what: &str| format!("{key} `{value}`: expected {what}");
            let seconds = || {
                crate::platform::units::parse_time(v)
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| bad("a non-negative time"))
            };
            let piecewise = || Piecewise::parse(v).map_err(|e| format!("{key} `{value}`: {e}"));
            match key.as_str() {
                "smpi/test" => c.test = seconds()?,
                "smpi/iprobe" => c.iprobe = seconds()?,
                "smpi/init" => c.init = seconds()?,
                "smpi/grow-injected-times" => {
                    c.grow_injected_times = boolean(v).ok_or_else(|| bad("yes or no"))?
                }
                "smpi/finalization-barrier" => {
                    c.finalization_barrier = boolean(v).ok_or_else(|| bad("yes or no"))?
                }
                "smpi/simulate-computation" => {
                    c.simulate_computation = boolean(v).ok_or_else(|| bad("yes or no"))?
                }
                "smpi/iprobe-cpu-usage" => {
                    c.iprobe_cpu_usage = v
                        .parse::<f64>()
                        .ok()
                        .filter(|u| *u > 0.0 && *u <= 1.0)
                        .ok_or_else(|| bad("a fraction in (0, 1]"))?
                }
                "smpi/os" => c.os = piecewise()?,
                "smpi/or" => c.or = piecewise()?,
                "smpi/ois" => c.ois = piecewise()?,
                _ => {
                    c.async_small_thresh = v.parse().map_err(|_| bad("a byte count"))?;
                }
            }
        }
        if c.async_small_thresh > eager_threshold {
            return Err(format!(
                "smpi/async-small-thresh ({}) must not exceed smpi/send-is-detached-thresh ({})",
                c.async_small_thresh, eager_threshold
            ));
        }
        Ok(c)
    }

    /// The seconds a test or probe costs when the counter is `n`.
    pub fn injected(&self, each: f64, n: u64) -> f64 {
        each * n as f64
    }

    /// The counter after a test or probe that found (`true`) or not.
    pub fn next_count(&self, n: u64, found: bool) -> u64 {
        if found {
            1
        } else if self.grow_injected_times {
            n.saturating_add(1)
        } else {
            n
        }
    }
}

/// SimGrid's booleans: `yes`/`no`, `on`/`off`, `true`/`false`, `1`/`0`.
fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "yes" | "on" | "true" | "1" => Some(true),
        "no" | "off" | "false" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn piecewise_takes_the_last_section_strictly_below() {
        let p = Piecewise::parse("1000:1e-6:1e-9;0:2e-6:0;65536:0:1e-10").unwrap();
        // At or below the first bound: the first section.
        assert_eq!(p.at(0), 2e-6);
        assert_eq!(p.at(1000), 2e-6);
        assert_eq!(p.at(1001), 1e-6 + 1001e-9);
        assert_eq!(p.at(65536), 1e-6 + 65536e-9);
        assert!((p.at(65537) - 65537e-10).abs() < 1e-18);
        assert!(Piecewise::parse("0:0:0:0:0").unwrap().is_zero());
        assert_eq!(Piecewise::default().at(5), 0.0);
        assert_eq!(Piecewise::parse("0:1us:0").unwrap().at(3), 1e-6);
        for bad in ["", "x:1:1", "0:1", "0:-1:0", "0:1:nan", "0:a:0"] {
            assert!(Piecewise::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn options_over_defaults_and_errors_name_the_option() {
        let c = CallCosts::read(&options(&[]), CallCosts::smpi(), 65536).unwrap();
        assert_eq!(c, CallCosts::smpi());
        assert_eq!((c.test, c.iprobe), (1e-4, 1e-4));
        let c = CallCosts::read(
            &options(&[
                ("smpi/test", "2e-4"),
                ("smpi/iprobe", "1ms"),
                ("smpi/grow-injected-times", "no"),
                ("smpi/os", "0:1e-6:0"),
                ("smpi/async-small-thresh", "1024"),
                ("smpi/init", "0.5"),
                ("smpi/finalization-barrier", "yes"),
                ("smpi/simulate-computation", "no"),
                ("smpi/iprobe-cpu-usage", "0.5"),
                ("smpi/bw-factor", "whatever"),
            ]),
            CallCosts::default(),
            65536,
        )
        .unwrap();
        assert_eq!((c.test, c.iprobe, c.init), (2e-4, 1e-3, 0.5));
        assert!(!c.grow_injected_times && c.finalization_barrier && !c.simulate_computation);
        assert_eq!(c.os.at(10), 1e-6);
        assert_eq!((c.async_small_thresh, c.iprobe_cpu_usage), (1024, 0.5));
        for (k, v) in [
            ("smpi/test", "-1"),
            ("smpi/iprobe", "soon"),
            ("smpi/grow-injected-times", "maybe"),
            ("smpi/or", "0:1"),
            ("smpi/async-small-thresh", "-3"),
            ("smpi/iprobe-cpu-usage", "0"),
        ] {
            let e = CallCosts::read(&options(&[(k, v)]), CallCosts::default(), 65536).unwrap_err();
            assert!(e.starts_with(k), "{e}");
        }
        let e = CallCosts::read(
            &options(&[("smpi/async-small-thresh", "4096")]),
            CallCosts::default(),
            1024,
        )
        .unwrap_err();
        assert!(e.contains("must not exceed"), "{e}");
    }

    #[test]
    fn counters_grow_on_failure_and_reset_on_success() {
        let c = CallCosts::smpi();
        assert_eq!(c.next_count(3, false), 4);
        assert_eq!(c.next_count(3, true), 1);
        let flat = CallCosts {
            grow_injected_times: false,
            ..c
        };
        assert_eq!(flat.next_count(3, false), 3);
        assert!((flat.injected(1e-4, 3) - 3e-4).abs() < 1e-18);
    }
}
