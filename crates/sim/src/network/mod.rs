//! Network models: how long messages take.
//!
//! * [`flow`]: flows sharing links by weighted max-min fairness (SimGrid's CM02 model):
//!   latency, then bandwidth shared with every concurrent flow, TCP window bound,
//!   cross-traffic; contention is modeled. Registered twice: `flow` (the platform's
//!   factors) and `smpi` (SMPI's).
//! * [`loggp`]: the LogGP model (latency, overheads, gap per message and per byte); no
//!   contention, for speed.
//! * [`maxmin`]: the weighted max-min solver the flow model shares links with.
//!
//! Every model implements [`NetworkModel`]: the engine starts transfers and asks for the
//! next completion date. The engine knows no model by name: a configuration holds a
//! [`NetworkKind`], parameters of some model ([`NetworkParams`]), which builds its model
//! ([`NetworkKind::build`]). Front ends find models by name in [`MODELS`], whose
//! [`Registration`]s read their parameters from a platform's options.
//!
//! Adding a model: a file of its own with the model, its parameters (implementing
//! [`NetworkParams`]) and its [`Registration`], declared below and listed in [`MODELS`].

pub mod flow;
mod keyed_heap;
pub mod loggp;
pub mod maxmin;
mod paths;

use std::any::Any;
use std::collections::BTreeMap;
use std::fmt;

pub use flow::{parse_factors, FlowConfig, SMPI_BW_FACTORS, SMPI_LAT_FACTORS};

use crate::platform::{HostId, Platform, PlatformError};
use crate::time::Time;

/// Every network model, by name, in the order front ends list them.
pub const MODELS: &[Registration] = &[flow::FLOW, flow::SMPI, loggp::LOGGP];

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

/// A network model's parameters: what a simulation's configuration holds and builds the
/// model from.
pub trait NetworkParams: DynParams + fmt::Debug + Send + Sync + 'static {
    /// The model for `platform`.
    fn build<'p>(&self, platform: &'p Platform) -> Box<dyn NetworkModel + 'p>;
}

/// What [`NetworkKind`] does with parameters of any model: clone, compare and downcast
/// them. Implemented for every [`NetworkParams`] that is `Clone` and `PartialEq`.
pub trait DynParams {
    /// A boxed copy.
    fn clone_params(&self) -> Box<dyn NetworkParams>;
    /// Whether `other` holds the same type and value.
    fn eq_params(&self, other: &dyn Any) -> bool;
    /// As [`Any`], to downcast.
    fn as_any(&self) -> &dyn Any;
    /// As [`Any`], to downcast and change.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: NetworkParams + Clone + PartialEq> DynParams for T {
    fn clone_params(&self) -> Box<dyn NetworkParams> {
        Box::new(self.clone())
    }
    fn eq_params(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Which network model a simulation uses, with its parameters.
#[derive(Debug)]
pub struct NetworkKind(Box<dyn NetworkParams>);

impl NetworkKind {
    /// The model `params` describe.
    pub fn new(params: impl NetworkParams) -> NetworkKind {
        NetworkKind(Box::new(params))
    }

    /// The model, for `platform`.
    pub fn build<'p>(&self, platform: &'p Platform) -> Box<dyn NetworkModel + 'p> {
        self.0.build(platform)
    }

    /// The parameters, if they are of type `T` (`FlowConfig`, `LogGp`, ...).
    pub fn params<T: NetworkParams>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }

    /// The parameters to change, if they are of type `T`.
    pub fn params_mut<T: NetworkParams>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }
}

impl Clone for NetworkKind {
    fn clone(&self) -> NetworkKind {
        NetworkKind(self.0.clone_params())
    }
}

impl PartialEq for NetworkKind {
    fn eq(&self, other: &NetworkKind) -> bool {
        self.0.eq_params(other.0.as_any())
    }
}

impl Default for NetworkKind {
    /// The flow model with SimGrid's CM02 defaults.
    fn default() -> NetworkKind {
        NetworkKind::new(FlowConfig::default())
    }
}

/// A network model offered by name.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    /// Its name (`--network NAME`, a study's `network`).
    pub name: &'static str,
    /// What it models, in a line.
    pub about: &'static str,
    /// Its parameters from a platform's options (errors name the option).
    pub configure: fn(&BTreeMap<String, String>) -> Result<NetworkKind, String>,
}

/// The names of [`MODELS`], in order.
pub const NAMES: [&str; MODELS.len()] = {
    let mut names = [""; MODELS.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = MODELS[i].name;
        i += 1;
    }
    names
};

/// The model registered as `name`.
pub fn named(name: &str) -> Option<&'static Registration> {
    MODELS.iter().find(|m| m.name == name)
}

/// The models' names as a message lists them: `flow, smpi or loggp`.
pub fn alternatives() -> String {
    match NAMES.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_are_found_by_their_names() {
        assert_eq!(NAMES.len(), MODELS.len());
        for (m, name) in MODELS.iter().zip(NAMES) {
            assert_eq!(m.name, name);
            assert_eq!(named(name).map(|r| r.about), Some(m.about));
            assert!(!m.about.is_empty());
            // Every model configures itself from a platform without options.
            let kind = (m.configure)(&BTreeMap::new()).unwrap();
            assert_eq!(kind, kind.clone());
        }
        assert!(named("packet").is_none());
        assert_eq!(alternatives(), "flow, smpi or loggp");
    }

    #[test]
    fn parameters_are_compared_and_reached_by_type() {
        let mut flow = NetworkKind::default();
        assert_eq!(flow, NetworkKind::new(FlowConfig::default()));
        assert_ne!(flow, NetworkKind::new(FlowConfig::smpi()));
        assert_ne!(flow, NetworkKind::new(loggp::LogGp::default()));
        assert!(flow.params::<loggp::LogGp>().is_none());
        flow.params_mut::<FlowConfig>().unwrap().weight_s = 1.0;
        assert_eq!(flow.params::<FlowConfig>().unwrap().weight_s, 1.0);
    }
}
