//! A simulation's parameters ([`SimConfig`]), and the configuration a platform file's own
//! options describe.
//!
//! A platform carries the parameters that were measured with it (eager threshold, SMPI
//! factors, LogGP values, written by `mpiscope calibrate` or found in a SimGrid `<config>`).
//! [`SimConfig::for_platform`] turns them into a configuration; front ends (`mpiscope replay`,
//! `mpiscope hpl`, `mpiscope plan`) apply their own overrides on top.

use std::collections::{BTreeMap, HashMap};

use crate::calibration::{Calibration, Key};
use crate::coll::{Collective, Selector};
use crate::costs::CallCosts;
use crate::network::{self, NetworkKind};
use crate::platform::Platform;

/// Simulation parameters.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Sends strictly below this many bytes return at once (SMPI's `send-is-detached-thresh`).
    pub eager_threshold: u64,
    /// Decision rules for collectives.
    pub selector: Selector,
    /// Algorithms forced by name, per collective.
    pub forced: HashMap<Collective, String>,
    /// Network model.
    pub network: NetworkKind,
    /// SMPI's per-call costs (tests, probes, send and receive overheads) and the options
    /// of the same family ([`crate::costs`]).
    pub costs: CallCosts,
    /// Record per-rank timelines (for Chrome trace export).
    pub timeline: bool,
    /// Per-core speed factor when `k` cores of a host are busy, at index `k - 1` (the last
    /// entry beyond; empty: every core at full speed). See [`crate::cpu`].
    pub core_efficiency: Vec<f64>,
    /// Oversubscribed cores (more ranks bound to a core than one, with
    /// [`SimConfig::bind_to_core`]): a rank waiting in MPI whose message arrives while its
    /// core computes for another rank resumes this many seconds later, or as soon as a
    /// computation on the core ends (0: at once): see [`crate::engine`]. Unbound ranks
    /// never wait so: the kernel moves them between cores, and a host-wide rule (wait
    /// whenever every core computes) predicted HPL on 4 ranks and 2 cores 5x too slow.
    pub oversubscribed_wake_up: f64,
    /// Bind each rank to one core of its host, the `k`-th rank placed on a host to core
    /// `k mod cores` (`mpirun --bind-to core --map-by core`); otherwise a host's
    /// computations share all its cores.
    pub bind_to_core: bool,
    /// Seconds per byte a reduction operator combines (`mpiscope/reduction`): what a
    /// collective's [`crate::coll::POp::Combine`] costs, computed on the rank's core
    /// (0: reductions cost nothing, as in a SimGrid replay).
    pub reduction_per_byte: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            eager_threshold: 65536,
            selector: Selector::Ompi,
            forced: HashMap::new(),
            network: NetworkKind::default(),
            costs: CallCosts::default(),
            timeline: false,
            core_efficiency: Vec::new(),
            oversubscribed_wake_up: 0.0,
            bind_to_core: false,
            reduction_per_byte: 0.0,
        }
    }
}

impl SimConfig {
    /// The configuration `platform`'s options describe, with the network model registered
    /// as `network` ([`network::MODELS`]: `flow`, SimGrid's CM02 with the platform's
    /// factors; `smpi`, SMPI's default factors; `loggp`, LogGP with the platform's
    /// `mpiscope/loggp` values when present), which reads its own options. Options read
    /// besides: `smpi/send-is-detached-thresh` (default 65536 as in SMPI),
    /// `mpiscope/core-efficiency` (per-core speed factors with 1, 2, ... busy cores),
    /// `mpiscope/oversubscribed-wake-up` (seconds), `mpiscope/reduction` (seconds per byte
    /// of a reduction operator) and SMPI's per-call costs
    /// ([`CallCosts::read`], SimGrid's defaults under `smpi`, none charged under the other
    /// models). Errors name the option.
    pub fn for_platform(platform: &Platform, network: &str) -> Result<SimConfig, String> {
        SimConfig::for_options(&platform.config, network)
    }

    /// The configuration options `options` (a platform's, with front ends' own on top)
    /// describe with the network model `network`: see [`SimConfig::for_platform`].
    pub fn for_options(
        options: &BTreeMap<String, String>,
        network: &str,
    ) -> Result<SimConfig, String> {
        let eager_threshold = match options.get("smpi/send-is-detached-thresh") {
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| format!("smpi/send-is-detached-thresh `{v}` is not a byte count"))?,
            None => 65536,
        };
        let costs = CallCosts::read(
            options,
            if network == network::flow::SMPI.name {
                CallCosts::smpi()
            } else {
                CallCosts::default()
            },
            eager_threshold,
        )?;
        let network = match network::named(network) {
            Some(model) => (model.configure)(options)?,
            None => {
                return Err(format!(
                    "network model `{network}`: expected {}",
                    network::NAMES.join(", ")
                ))
            }
        };
        let measured = Calibration::read(
            options,
            &[
                Key::CoreEfficiency,
                Key::OversubscribedWakeUp,
                Key::Reduction,
            ],
        )?;
        let core_efficiency = measured.core_efficiency.unwrap_or_default();
        let oversubscribed_wake_up = measured.oversubscribed_wake_up.unwrap_or(0.0);
        Ok(SimConfig {
            eager_threshold,
            network,
            costs,
            core_efficiency,
            oversubscribed_wake_up,
            reduction_per_byte: measured.reduction.unwrap_or(0.0),
            ..SimConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::loggp::LogGp;
    use crate::network::FlowConfig;
    use crate::platform::toml::from_toml_str;

    fn platform(config: &str) -> Platform {
        from_toml_str(
            &format!(
                "[cluster]\nhosts = 2\nbandwidth = \"1GBps\"\nlatency = \"1us\"\n[config]\n{config}"
            ),
            "test.toml",
        )
        .unwrap()
    }

    #[test]
    fn platform_options_become_the_configuration() {
        let p = platform(
            "\"smpi/send-is-detached-thresh\" = 512\n\"smpi/bw-factor\" = \"0:0.5\"\n\
             \"mpiscope/loggp\" = \"1e-6,2e-7,3e-7,1e-9\"\n\"mpiscope/core-efficiency\" = \"1 0.75\"\n\
             \"mpiscope/reduction\" = 3.2e-11",
        );
        let c = SimConfig::for_platform(&p, "flow").unwrap();
        assert_eq!(c.eager_threshold, 512);
        assert_eq!(c.core_efficiency, vec![1.0, 0.75]);
        assert_eq!(c.reduction_per_byte, 3.2e-11);
        let flow = c.network.params::<FlowConfig>().unwrap();
        assert_eq!(flow.bw_factors, vec![(0, 0.5)]);
        let c = SimConfig::for_platform(&p, "loggp").unwrap();
        assert_eq!(
            c.network,
            NetworkKind::new(LogGp {
                l: Some(1e-6),
                o: 2e-7,
                g: 3e-7,
                big_g: Some(1e-9)
            })
        );
        // Under smpi the platform's options override SMPI's defaults.
        let c = SimConfig::for_platform(&p, "smpi").unwrap();
        let flow = c.network.params::<FlowConfig>().unwrap();
        assert_eq!(flow.bw_factors, vec![(0, 0.5)]);
        assert_eq!(flow.lat_factors, FlowConfig::smpi().lat_factors);
        assert_eq!(flow.weight_s, 8775.0);
    }

    #[test]
    fn defaults_without_options_and_errors_name_the_option() {
        let c = SimConfig::for_platform(&platform(""), "flow").unwrap();
        assert_eq!(c.eager_threshold, 65536);
        assert_eq!(c.reduction_per_byte, 0.0);
        assert_eq!(c.network, NetworkKind::new(FlowConfig::default()));
        let e = SimConfig::for_platform(&platform("\"mpiscope/loggp\" = \"1,2\""), "loggp")
            .unwrap_err();
        assert!(e.contains("mpiscope/loggp"), "{e}");
        let e = SimConfig::for_platform(
            &platform("\"smpi/send-is-detached-thresh\" = \"lots\""),
            "flow",
        )
        .unwrap_err();
        assert!(e.contains("send-is-detached-thresh"), "{e}");
        for bad in ["", "1 0", "1 x"] {
            let e = SimConfig::for_platform(
                &platform(&format!("\"mpiscope/core-efficiency\" = \"{bad}\"")),
                "flow",
            )
            .unwrap_err();
            assert!(e.contains("core-efficiency"), "{e}");
        }
        let e = SimConfig::for_platform(&platform(""), "packet").unwrap_err();
        assert_eq!(e, "network model `packet`: expected flow, smpi, loggp");
    }
}
