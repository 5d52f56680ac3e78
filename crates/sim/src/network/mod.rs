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
    /// from [`NetworkModel::next_completion`].
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
    fn next_event(&mut self) -> Option<Time>;

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
    /// Piecewise factors by message size (SMPI style): `(min size, latency factor,
    /// bandwidth factor)`, sorted by size; empty for none.
    pub size_factors: Vec<(u64, f64, f64)>,
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            envelope: 16,
            tcp_gamma: 4194304.0,
            crosstraffic: 0.05,
            latency_factor: 1.0,
            bandwidth_factor: 1.0,
            size_factors: Vec::new(),
        }
    }
}

impl FlowConfig {
    /// Latency and bandwidth factors for a message of `bytes` (padded) bytes: the last
    /// section whose threshold is strictly below the size, else 1.
    pub fn factors(&self, bytes: u64) -> (f64, f64) {
        let mut f = (self.latency_factor, self.bandwidth_factor);
        for &(min, lat, bw) in &self.size_factors {
            if bytes > min {
                f = (self.latency_factor * lat, self.bandwidth_factor * bw);
            } else {
                break;
            }
        }
        f
    }
}
