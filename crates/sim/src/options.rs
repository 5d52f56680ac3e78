//! A simulation configured by a platform file's own options.
//!
//! A platform carries the parameters that were measured with it (eager threshold, SMPI
//! factors, LogGP values, written by `mpiscope calibrate` or found in a SimGrid `<config>`).
//! [`SimConfig::for_platform`] turns them into a configuration; front ends (`mpiscope replay`,
//! `mpiscope hpl`, `mpiscope plan`) apply their own overrides on top.

use crate::calibration::{Calibration, Key};
use crate::engine::SimConfig;
use crate::network;
use crate::platform::Platform;

impl SimConfig {
    /// The configuration `platform`'s options describe, with the network model registered
    /// as `network` ([`network::MODELS`]: `flow`, SimGrid's CM02 with the platform's
    /// factors; `smpi`, SMPI's default factors; `loggp`, LogGP with the platform's
    /// `mpiscope/loggp` values when present), which reads its own options. Options read
    /// besides: `smpi/send-is-detached-thresh` (default 65536 as in SMPI),
    /// `mpiscope/core-efficiency` (per-core speed factors with 1, 2, ... busy cores) and
    /// `mpiscope/oversubscribed-wake-up` (seconds). Errors name the option.
    pub fn for_platform(platform: &Platform, network: &str) -> Result<SimConfig, String> {
        let options = &platform.config;
        let eager_threshold = match options.get("smpi/send-is-detached-thresh") {
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| format!("smpi/send-is-detached-thresh `{v}` is not a byte count"))?,
            None => 65536,
        };
        let network = match network::named(network) {
            Some(model) => (model.configure)(options)?,
            None => {
                return Err(format!(
                    "network model `{network}`: expected {}",
                    network::NAMES.join(", ")
                ))
            }
        };
        let measured =
            Calibration::read(options, &[Key::CoreEfficiency, Key::OversubscribedWakeUp])?;
        let core_efficiency = measured.core_efficiency.unwrap_or_default();
        let oversubscribed_wake_up = measured.oversubscribed_wake_up.unwrap_or(0.0);
        Ok(SimConfig {
            eager_threshold,
            network,
            core_efficiency,
            oversubscribed_wake_up,
            ..SimConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::loggp::LogGp;
    use crate::network::{FlowConfig, NetworkKind};
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
             \"mpiscope/loggp\" = \"1e-6,2e-7,3e-7,1e-9\"\n\"mpiscope/core-efficiency\" = \"1 0.75\"",
        );
        let c = SimConfig::for_platform(&p, "flow").unwrap();
        assert_eq!(c.eager_threshold, 512);
        assert_eq!(c.core_efficiency, vec![1.0, 0.75]);
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
        let c = SimConfig::for_platform(&p, "smpi").unwrap();
        assert_eq!(c.network, NetworkKind::new(FlowConfig::smpi()));
    }

    #[test]
    fn defaults_without_options_and_errors_name_the_option() {
        let c = SimConfig::for_platform(&platform(""), "flow").unwrap();
        assert_eq!(c.eager_threshold, 65536);
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
