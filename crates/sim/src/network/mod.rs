//! Network models: how long messages take.
//!
//! * [`flow`]: flows sharing links by weighted max-min fairness (SimGrid's CM02 model):
//!   latency, then bandwidth shared with every concurrent flow, TCP window bound,
//!   cross-traffic; contention is modeled.
//! * [`loggp`]: the LogGP model (latency, overheads, gap per message and per byte); no
//!   contention, for speed.
//!
//! Both implement [`NetworkModel`]: the engine starts transfers and asks for the next
//! completion date.

pub mod flow;
pub mod loggp;
pub mod maxmin;

use crate::platform::{HostId, Platform, PlatformError};
use crate::time::Time;

/// Identifies a transfer started on a model.
pub type TransferId = u64;

/// What a network model does.
pub trait NetworkModel {
    /// Starts moving `bytes` from `src` to `dst` at `now`; the engine learns of its end
    /// from [`NetworkModel::next_transfer`].
    fn start(
        &mut self,
        platform: &Platform,
        now: Time,
        src: HostId,
        dst: HostId,
        bytes: u64,
    ) -> Result<TransferId, PlatformError>;

    /// The earliest date at which something happens inside the model (a transfer ends, or a
    /// latency phase ends), if any.
    fn next_event(&mut self) -> Option<Time> {
        self.next_transfer().map(|(at, _)| at)
    }

    /// The earliest event of [`NetworkModel::next_event`] and the transfer it belongs to.
    fn next_transfer(&mut self) -> Option<(Time, TransferId)>;

    /// Advances the model to `now` (no later than [`NetworkModel::next_event`]) and appends
    /// the transfers finished by then to `done`.
    fn advance(&mut self, now: Time, done: &mut Vec<TransferId>);

    /// Per-link utilization so far: `(link, bytes carried)`, for reports.
    fn link_bytes(&self) -> Vec<(u32, f64)>;

    /// Work done by a sharing solver, if the model has one.
    fn solver_stats(&self) -> maxmin::SolverStats {
        maxmin::SolverStats::default()
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
    /// ignored. Errors name the option.
    pub fn from_options(
        options: &std::collections::BTreeMap<String, String>,
    ) -> Result<FlowConfig, String> {
        let mut c = match options.get("network/model").map(String::as_str) {
            None | Some("CM02") => FlowConfig::default(),
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
/// thresholds in bytes), sorted by threshold.
pub fn parse_factors(spec: &str) -> Result<Vec<(u64, f64)>, String> {
    let mut out = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_factors_are_named() {
        assert!(parse_factors("").unwrap_err().contains("no THRESHOLD"));
        assert!(parse_factors("12").unwrap_err().contains("`12`"));
        assert!(parse_factors("a:1").unwrap_err().contains("threshold `a`"));
        assert!(parse_factors("1:b").unwrap_err().contains("factor `b`"));
        assert!(parse_factors("1:-2").unwrap_err().contains("positive"));
    }
}
