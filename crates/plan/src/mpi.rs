//! The modeled MPI library's settings shared by every point of a study (a leaf: the study
//! file reads them, each point applies them).

use mpiscope_sim::coll::{parse_forced, Selector};
use mpiscope_sim::SimConfig;
use serde::Serialize;

/// Settings of the modeled MPI library for every point of a study (`mpiscope plan
/// --collectives`, `--algorithm`, `--eager-threshold`); each left unset keeps the platform's
/// or the simulator's default, and is then absent from the points' records (so their keys
/// stay those of a study run without it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MpiSettings {
    /// Collective decision rules: `ompi` or `mpich`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<String>,
    /// Algorithms forced, `COLL=NAME`, by their canonical names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub algorithms: Vec<String>,
    /// Sends below this many bytes return at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_threshold: Option<u64>,
}

impl MpiSettings {
    /// Applies the settings to `config`; an error says which setting is wrong.
    pub fn apply(&self, config: &mut SimConfig) -> Result<(), String> {
        if let Some(c) = &self.collectives {
            config.selector = c
                .parse::<Selector>()
                .map_err(|e| format!("collectives `{c}`: {e}"))?;
        }
        for f in &self.algorithms {
            let (kind, name) = parse_forced(f).map_err(|e| format!("algorithm `{f}`: {e}"))?;
            config.forced.insert(kind, name.to_owned());
        }
        if let Some(t) = self.eager_threshold {
            config.eager_threshold = t;
        }
        Ok(())
    }
}
