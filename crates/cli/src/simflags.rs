//! The simulation flags the simulating commands share, defined once and flattened into
//! each command (`#[command(flatten)]`), so they are spelled, documented and checked alike:
//!
//! * [`PlacementArgs`]: `--hostfile`, `--mapping`, `--bind-to` (replay, hpl);
//! * [`NetworkArgs`]: `--network` and the model's parameters `--lat-factor`, `--bw-factor`,
//!   `--weight-s`, `--loggp` (replay, hpl);
//! * [`MpiArgs`]: the modeled MPI library, `--collectives`, `--algorithm`,
//!   `--eager-threshold` (replay, hpl, plan);
//! * [`SimArgs`]: the three together, SimGrid's `--cfg KEY:VALUE` (replay, hpl), and the
//!   configuration they make for a platform.
//!
//! A configuration starts from the platform file's own options, with those of `--cfg` over
//! them (`mpiscope_sim::SimConfig::for_options`: what `mpiscope calibrate` measured, a
//! SimGrid `<config>`, SMPI's per-call costs); the other flags given override them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use mpiscope_sim::coll::{Collective, Selector};
use mpiscope_sim::network::loggp::LogGp;
use mpiscope_sim::network::{parse_factors, FlowConfig};
use mpiscope_sim::platform::{self, config, Mapping, Platform};
use mpiscope_sim::{NetworkKind, SimConfig};

/// Where the ranks run.
#[derive(Args, Debug, Clone)]
pub struct PlacementArgs {
    /// SimGrid-style hostfile (one host per line, `host:N` for N ranks); rank i goes to
    /// entry i modulo the number of entries.
    #[arg(long, conflicts_with = "mapping")]
    pub hostfile: Option<PathBuf>,
    /// Rank placement when no hostfile is given: `sequential[:K]` (K ranks per host, filling
    /// hosts in order), `round-robin` (rank i on host i mod hosts), `random[:SEED[:K]]`
    /// (hosts in a seeded random order, K ranks each).
    #[arg(long, default_value = "sequential")]
    pub mapping: String,
    /// `core`: each rank bound to one core of its host, the k-th rank of a host to core k
    /// modulo its cores (as `mpirun --bind-to core --map-by core`); `none`: a host's ranks
    /// share all its cores.
    #[arg(long, default_value = "none", value_parser = ["none", "core"])]
    pub bind_to: String,
}

impl PlacementArgs {
    /// The placement the flags describe (the hostfile read).
    pub fn mapping(&self) -> Result<Mapping> {
        Ok(match &self.hostfile {
            Some(h) => Mapping::Hostfile(platform::Hostfile::from_path(h)?),
            None => self
                .mapping
                .parse::<Mapping>()
                .map_err(|e| anyhow!("--mapping: {e}"))?,
        })
    }

    /// The hosts of `n` ranks on `platform`.
    pub fn place(&self, platform: &Platform, n: u32) -> Result<Vec<u32>> {
        platform::map_ranks(platform, n, &self.mapping()?)
            .with_context(|| format!("cannot place {n} ranks"))
    }

    /// What the placement of `n` ranks on `platform` does that the flags do not say (ranks
    /// wrapping around to hosts that already have their share), when it does.
    pub fn wrap_warning(&self, platform: &Platform, n: u32) -> Result<Option<String>> {
        Ok(platform::wrap_warning(
            platform.hosts.len(),
            n,
            &self.mapping()?,
        ))
    }

    /// Ranks bound to cores (`--bind-to core`).
    pub fn bind_to_core(&self) -> bool {
        self.bind_to == "core"
    }
}

/// The network model.
#[derive(Args, Debug, Clone)]
pub struct NetworkArgs {
    /// Network model: `flow` (max-min sharing, SimGrid's CM02, with the platform's
    /// factors), `smpi` (the same with SMPI's piecewise factors by message size and
    /// weight-S, smpirun's default model) or `loggp`.
    #[arg(long, default_value = "flow",
          value_parser = clap::builder::PossibleValuesParser::new(mpiscope_sim::network::NAMES))]
    pub network: String,
    /// Latency factors by message size, in SimGrid's `smpi/lat-factor` syntax
    /// (`65472:11.6;15424:3.5;0:2.0`: a message larger than a threshold takes its factor).
    #[arg(long, value_name = "SPEC")]
    pub lat_factor: Option<String>,
    /// Bandwidth factors by message size (SimGrid's `smpi/bw-factor` syntax).
    #[arg(long, value_name = "SPEC")]
    pub bw_factor: Option<String>,
    /// SimGrid's `network/weight-S` (penalty per link of `weight-S / bandwidth`).
    #[arg(long, value_name = "BYTES", value_parser = crate::inputs::non_negative)]
    pub weight_s: Option<f64>,
    /// LogGP parameters `o,g` in seconds (with `--network loggp`; L and G come from the
    /// platform's routes).
    #[arg(long, value_name = "O,G")]
    pub loggp: Option<String>,
}

impl NetworkArgs {
    /// The configuration `options` (`platform`'s, read from `path`, and `--cfg`'s: `given`)
    /// describe with the model `--network`.
    fn base(
        &self,
        options: &BTreeMap<String, String>,
        path: &Path,
        given: bool,
    ) -> Result<SimConfig> {
        if mpiscope_sim::network::named(&self.network).is_none() {
            let expected = mpiscope_sim::network::alternatives();
            bail!("--network {}: expected {expected}", self.network);
        }
        SimConfig::for_options(options, &self.network).map_err(|e| {
            if given {
                anyhow!("{} or --cfg: {e}", path.display())
            } else {
                anyhow!("{}: {e}", path.display())
            }
        })
    }

    /// Sets the model's parameters given as flags; a flag of another model is an error.
    fn tune(&self, network: &mut NetworkKind) -> Result<()> {
        let other_model = |flags: &[(&str, bool)], model: &str| -> Result<()> {
            match flags.iter().find(|(_, given)| *given) {
                Some((flag, _)) => {
                    bail!("{flag} applies to --network {model}, not {}", self.network)
                }
                None => Ok(()),
            }
        };
        if network.params::<LogGp>().is_none() {
            other_model(&[("--loggp", self.loggp.is_some())], "loggp")?;
        }
        if network.params::<FlowConfig>().is_none() {
            other_model(
                &[
                    ("--lat-factor", self.lat_factor.is_some()),
                    ("--bw-factor", self.bw_factor.is_some()),
                    ("--weight-s", self.weight_s.is_some()),
                ],
                "flow or smpi",
            )?;
        }
        if let Some(flow) = network.params_mut::<FlowConfig>() {
            if let Some(spec) = &self.lat_factor {
                flow.lat_factors =
                    parse_factors(spec).map_err(|e| anyhow!("--lat-factor {spec}: {e}"))?;
            }
            if let Some(spec) = &self.bw_factor {
                flow.bw_factors =
                    parse_factors(spec).map_err(|e| anyhow!("--bw-factor {spec}: {e}"))?;
            }
            if let Some(w) = self.weight_s {
                flow.weight_s = w;
            }
        }
        if let (Some(p), Some(s)) = (network.params_mut::<LogGp>(), &self.loggp) {
            (p.o, p.g) = overhead_and_gap(s)?;
        }
        Ok(())
    }
}

/// `--loggp O,G`: two non-negative numbers of seconds.
fn overhead_and_gap(s: &str) -> Result<(f64, f64)> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .ok()
        .filter(|v: &Vec<f64>| v.len() == 2 && v.iter().all(|x| x.is_finite() && *x >= 0.0))
        .with_context(|| {
            format!("--loggp {s}: expected O,G, two non-negative numbers of seconds")
        })?;
    Ok((v[0], v[1]))
}

/// The modeled MPI library: how it runs collectives, when a send returns at once.
#[derive(Args, Debug, Clone, Default)]
pub struct MpiArgs {
    /// Collective decision rules: Open MPI's (`ompi`, or `openmpi`: as SimGrid 3.32 runs
    /// them), MPICH's, or `openmpi4` (Open MPI 4.1's rules as Open MPI runs them: buffers
    /// sent whole where SimGrid segments them, a linear broadcast from the root).
    #[arg(long, default_value = "ompi", value_parser = collectives())]
    pub collectives: String,
    /// Force an algorithm: `bcast=binomial` (repeatable; names as SimGrid's
    /// `smpi/<collective>` options spell them, or their aliases).
    #[arg(long = "algorithm", value_name = "COLL=NAME")]
    pub algorithms: Vec<String>,
    /// Sends below this many bytes return at once (eager protocol; default: the platform
    /// file's `smpi/send-is-detached-thresh`, else 65536 as in SMPI).
    #[arg(long)]
    pub eager_threshold: Option<u64>,
}

/// `--collectives`' values: the names `mpiscope_sim::coll::Selector` reads.
fn collectives() -> clap::builder::PossibleValuesParser {
    use clap::builder::PossibleValue;
    clap::builder::PossibleValuesParser::new([
        PossibleValue::new("ompi").alias("openmpi"),
        PossibleValue::new("mpich"),
        PossibleValue::new("openmpi4"),
    ])
}

impl MpiArgs {
    /// The decision rules `--collectives` names.
    pub fn selector(&self) -> Result<Selector> {
        self.collectives
            .parse()
            .map_err(|e| anyhow!("--collectives {}: {e}", self.collectives))
    }

    /// The algorithms `--algorithm` forces, by their canonical names (an alias the library
    /// accepts is accepted).
    pub fn forced(&self) -> Result<Vec<(Collective, &'static str)>> {
        self.algorithms
            .iter()
            .map(|f| {
                mpiscope_sim::coll::parse_forced(f).map_err(|e| anyhow!("--algorithm {f}: {e}"))
            })
            .collect()
    }
}

/// Every simulation flag: placement, network model, MPI library.
#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Where the ranks run.
    #[command(flatten)]
    pub placement: PlacementArgs,
    /// The network model.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// The MPI library.
    #[command(flatten)]
    pub mpi: MpiArgs,
    /// A SimGrid option, as `smpirun --cfg` takes it: `smpi/test:1e-3`, `smpi/os:0:1e-6:1e-9`
    /// (repeatable; over the platform file's `<config>` or `[config]`). Options that change
    /// simulated time are honoured (docs/PLATFORMS.md lists them); others are warned about.
    #[arg(long = "cfg", value_name = "KEY:VALUE")]
    pub cfg: Vec<String>,
}

/// `--cfg`'s options as (key, value), each split at its first `:`.
fn cfg_options(given: &[String]) -> Result<Vec<(String, String)>> {
    given
        .iter()
        .map(|c| match c.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
            _ => bail!("--cfg {c}: expected KEY:VALUE (as smpirun's --cfg=smpi/test:1e-3)"),
        })
        .collect()
}

impl SimArgs {
    /// The configuration for `platform` (read from `path`, named in errors): the platform
    /// file's options and `--cfg`'s over them, then the flags. Warns about the `--cfg`
    /// options the simulator does not read.
    pub fn config(&self, platform: &Platform, path: &Path) -> Result<SimConfig> {
        let mut options = platform.config.clone();
        for (key, value) in cfg_options(&self.cfg)? {
            if let Some(why) = config::check_key(&key, config::Format::Toml) {
                eprintln!("mpiscope: warning: --cfg {key}: {why}");
            }
            options.insert(key, value);
        }
        let mut config = self.network.base(&options, path, !self.cfg.is_empty())?;
        if let Some(t) = self.mpi.eager_threshold {
            config.eager_threshold = t;
        }
        config.bind_to_core = self.placement.bind_to_core();
        config.selector = self.mpi.selector()?;
        self.network.tune(&mut config.network)?;
        for (kind, name) in self.mpi.forced()? {
            config.forced.insert(kind, name.to_owned());
        }
        Ok(config)
    }
}

/// Loads the platform file `path` and prints its warnings (options the simulator does not
/// read).
pub fn load_platform(path: &Path) -> Result<Platform> {
    let platform = platform::load(path)
        .map_err(|e| anyhow!("cannot load the platform {}: {e}", path.display()))?;
    crate::inputs::warn_about_platform(&platform);
    Ok(platform)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfg_splits_at_the_first_colon() {
        let given = [
            "smpi/os:0:1e-6:1e-9".to_owned(),
            " smpi/test :2e-4".to_owned(),
        ];
        assert_eq!(
            cfg_options(&given).unwrap(),
            [
                ("smpi/os".to_owned(), "0:1e-6:1e-9".to_owned()),
                ("smpi/test".to_owned(), "2e-4".to_owned())
            ]
        );
        for bad in ["smpi/test", ":1", ""] {
            let e = cfg_options(&[bad.to_owned()]).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--cfg {bad}: expected KEY:VALUE")),
                "{e}"
            );
        }
    }

    #[test]
    fn loggp_takes_two_seconds() {
        assert_eq!(overhead_and_gap("1e-6, 2e-6").unwrap(), (1e-6, 2e-6));
        for bad in ["1", "1,2,3", "-1,2", "x,1", "nan,1"] {
            assert!(overhead_and_gap(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn forced_algorithms_take_the_library_names_and_aliases() {
        let mpi = MpiArgs {
            algorithms: vec!["bcast=binomial".into(), "reducescatter=default".into()],
            ..MpiArgs::default()
        };
        let forced = mpi.forced().unwrap();
        assert_eq!(forced[0], (Collective::Bcast, "binomial_tree"));
        assert_eq!(forced[1].0, Collective::ReduceScatter);
        let bad = MpiArgs {
            algorithms: vec!["bcast=nonesuch".into()],
            ..MpiArgs::default()
        };
        let e = bad.forced().unwrap_err().to_string();
        assert!(
            e.starts_with("--algorithm bcast=nonesuch: no bcast algorithm `nonesuch`"),
            "{e}"
        );
        let mpich = MpiArgs {
            collectives: "mpich".into(),
            ..MpiArgs::default()
        };
        assert_eq!(mpich.selector().unwrap(), Selector::Mpich);
        assert!(MpiArgs {
            collectives: "x".into(),
            ..MpiArgs::default()
        }
        .selector()
        .is_err());
    }
}
