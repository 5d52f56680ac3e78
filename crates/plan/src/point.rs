//! One point of a study: its platform and configuration, built from the base and the axis
//! values, and the simulation of the workload on it.
//!
//! Recorded workloads (run directories, structural forms, TI traces) are read through
//! `mpiscope_sim::workload::open`, as `mpiscope replay` reads them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mpiscope_sim::platform::{self, Mapping, Platform};
use mpiscope_sim::report::Report;
use mpiscope_sim::workload::{self, ti, trace, InputKind, OpenOptions, WorkloadError};
use mpiscope_sim::{SimConfig, Simulation};
use serde::Serialize;

pub use crate::mpi::MpiSettings;
use crate::study::{factor, value_text, PlatformSpec, Point, Study, Target, WorkloadSpec};
use crate::PlanError;

/// What a point simulates, fully resolved: enough to reproduce it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointConfig {
    /// The base platform file, or the inline platform's TOML after the axis values.
    pub platform: String,
    /// Multipliers applied to every host speed, link bandwidth and link latency.
    pub scale_speed: f64,
    /// See `scale_speed`.
    pub scale_bandwidth: f64,
    /// See `scale_speed`.
    pub scale_latency: f64,
    /// Network model.
    pub network: String,
    /// Rank placement.
    pub mapping: String,
    /// The modeled MPI library's settings (absent from the record when not given).
    #[serde(flatten)]
    pub mpi: MpiSettings,
}

/// One simulated configuration of a point (a trace replay has one, an HPL.dat several).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Measure {
    /// Workload labels (HPL: `n`, `nb`, `p`, `q`, `tv`), in column order.
    pub labels: Vec<(String, String)>,
    /// Simulated time, seconds.
    pub time_s: f64,
    /// Floating-point rate, when the workload defines one (HPL).
    pub gflops: Option<f64>,
    /// Energy of the hosts used, joules.
    pub energy_j: f64,
    /// Wall-clock time of the simulation, seconds.
    pub sim_wall_s: f64,
}

/// A point ready to simulate.
pub struct PointSetup {
    /// The platform, with the point's values and scales applied.
    pub platform: Platform,
    /// The simulation's configuration.
    pub config: SimConfig,
    /// Rank placement.
    pub mapping: Mapping,
    /// The factor applied to every host's speed (trace replays keep compute bursts at their
    /// traced durations on the unscaled hosts, so that this factor speeds them up).
    pub scale_speed: f64,
}

/// Runs a workload on a platform; the HPL skeleton and trace replays implement it.
pub trait WorkloadRunner: Sync {
    /// Simulates the workload on `setup`.
    fn run(&self, setup: &PointSetup) -> Result<Vec<Measure>, PlanError>;
}

impl PointConfig {
    /// The configuration of `point` in `study`.
    pub fn of(study: &Study, point: &Point) -> Result<PointConfig, PlanError> {
        let mut table = match &study.platform {
            PlatformSpec::Inline(t) => Some(t.clone()),
            PlatformSpec::File(_) => None,
        };
        let mut c = PointConfig {
            platform: String::new(),
            scale_speed: 1.0,
            scale_bandwidth: 1.0,
            scale_latency: 1.0,
            network: study.network.clone(),
            mapping: study.mapping.clone(),
            mpi: study.mpi.clone(),
        };
        for (axis, raw) in study.axes.iter().zip(&point.values) {
            let value = &axis.applied(raw);
            match &axis.target {
                Target::ScaleSpeed => c.scale_speed *= factor(value).unwrap_or(1.0),
                Target::ScaleBandwidth => c.scale_bandwidth *= factor(value).unwrap_or(1.0),
                Target::ScaleLatency => c.scale_latency *= factor(value).unwrap_or(1.0),
                Target::Mapping => c.mapping = value_text(value),
                Target::Network => c.network = value_text(value),
                Target::PlatformKey(path) => {
                    let t = table.as_mut().ok_or_else(|| PlanError::Study {
                        path: study.path.display().to_string(),
                        message: format!("axis `{}`: the platform is not inline", axis.name),
                    })?;
                    set_key(t, path, value.clone()).map_err(|m| PlanError::Study {
                        path: study.path.display().to_string(),
                        message: format!("axis `{}`: {m}", axis.name),
                    })?;
                }
            }
        }
        c.platform = match (&study.platform, table) {
            (_, Some(t)) => toml::to_string(&t).map_err(|e| PlanError::Study {
                path: study.path.display().to_string(),
                message: format!("platform: {e}"),
            })?,
            (PlatformSpec::File(p), None) => p.display().to_string(),
            (PlatformSpec::Inline(_), None) => unreachable!("an inline platform has a table"),
        };
        Ok(c)
    }

    /// Builds the platform (scaled) and the simulation configuration.
    pub fn build(&self, study: &Study, point: usize) -> Result<PointSetup, PlanError> {
        let name = format!("{} (point {point})", study.path.display());
        let mut platform = match &study.platform {
            PlatformSpec::Inline(_) => platform::toml::from_toml_str(&self.platform, &name),
            PlatformSpec::File(p) => platform::load(p),
        }
        .map_err(|e| PlanError::Platform {
            point,
            message: e.to_string(),
        })?;
        for h in &mut platform.hosts {
            h.speed *= self.scale_speed;
        }
        for l in &mut platform.links {
            l.bandwidth *= self.scale_bandwidth;
            l.latency *= self.scale_latency;
        }
        // Scales are positive, but their product with a value may leave the numbers.
        let scaled = |what: &str, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(PlanError::Platform {
                    point,
                    message: format!("{name}: a {what} scaled by the point's factors is {v}"),
                })
            }
        };
        for h in &platform.hosts {
            scaled("host speed", h.speed)?;
        }
        for l in &platform.links {
            scaled("link bandwidth", l.bandwidth)?;
            scaled("link latency", l.latency)?;
        }
        let mut config = SimConfig::for_platform(&platform, &self.network).map_err(|message| {
            PlanError::Platform {
                point,
                message: format!("{name}: {message}"),
            }
        })?;
        self.mpi
            .apply(&mut config)
            .map_err(|message| PlanError::Platform { point, message })?;
        let mapping = self
            .mapping
            .parse::<Mapping>()
            .map_err(|message| PlanError::Platform { point, message })?;
        Ok(PointSetup {
            platform,
            config,
            mapping,
            scale_speed: self.scale_speed,
        })
    }
}

/// Sets `path` (dotted key below `platform`) in a TOML table, creating tables on the way.
fn set_key(table: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let (last, parents) = path.split_last().ok_or("empty key")?;
    let mut t = table;
    for p in parents {
        t = match t
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
        {
            toml::Value::Table(inner) => inner,
            _ => return Err(format!("platform.{}: `{p}` is not a table", path.join("."))),
        };
    }
    t.insert(last.clone(), value);
    Ok(())
}

/// Replays a recorded workload: an mpiscope run directory, a structural form or a SimGrid
/// TI trace.
pub struct ReplayRunner {
    path: PathBuf,
    traced_speed: Option<f64>,
    lenient: Option<ti::SkippedLines>,
}

impl ReplayRunner {
    /// A runner for a trace or TI workload (not HPL). `traced_speed` (flop/s) turns an
    /// mpiscope trace's compute bursts into flops; `None` keeps their traced durations on
    /// the base platform's hosts (before `scale.speed`). A `trace` must be a run directory
    /// or a structural form and a `ti` a TI trace index, when the path exists.
    pub fn new(
        workload: &WorkloadSpec,
        traced_speed: Option<f64>,
    ) -> Result<ReplayRunner, PlanError> {
        let (path, ti) = match workload {
            WorkloadSpec::Trace(p) => (p, false),
            WorkloadSpec::Ti(p) => (p, true),
            WorkloadSpec::Hpl(p) => {
                return Err(PlanError::Workload(format!(
                    "{}: an HPL workload needs the HPL skeleton's runner",
                    p.display()
                )))
            }
        };
        let kind = InputKind::of(path);
        if path.exists() && (kind == InputKind::Ti) != ti {
            return Err(PlanError::Workload(format!(
                "{}: {} given as {} (`trace` takes a run directory or a structural form, \
                 `ti` a TI trace index)",
                path.display(),
                kind.describe(),
                if ti { "`ti`" } else { "`trace`" }
            )));
        }
        Ok(ReplayRunner {
            path: path.clone(),
            traced_speed,
            lenient: None,
        })
    }

    /// Reads a TI trace leniently: lines that are not valid actions are skipped and
    /// counted in `log` (once, whatever the number of points) instead of failing the points.
    pub fn lenient(mut self, log: ti::SkippedLines) -> ReplayRunner {
        self.lenient = Some(log);
        self
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> PlanError {
    PlanError::Workload(format!("{}: {e}", path.display()))
}

impl WorkloadRunner for ReplayRunner {
    fn run(&self, setup: &PointSetup) -> Result<Vec<Measure>, PlanError> {
        let (platform, mapping) = (&setup.platform, &setup.mapping);
        let started = Instant::now();
        let path = &self.path;
        let err = |e: WorkloadError| match e {
            WorkloadError::Open { message, .. } => io_err(path, message),
            e => io_err(path, e),
        };
        let options = OpenOptions {
            trace: trace::TraceOptions {
                traced_speed: self.traced_speed,
                callsites_by_size: false,
                marks: None,
                wall_bursts: false,
                core_efficiency: setup.config.core_efficiency.clone(),
            },
            ti: ti::TiOptions {
                lenient: self.lenient.clone(),
            },
        };
        let input = workload::open(path, &options).map_err(err)?;
        let hosts =
            platform::map_ranks(platform, input.ranks(), mapping).map_err(|e| io_err(path, e))?;
        // Compute bursts keep their durations on the unscaled hosts: the point's speed
        // factor speeds them up.
        let speeds: Vec<f64> = hosts
            .iter()
            .map(|&h| platform.hosts[h as usize].speed / setup.scale_speed)
            .collect();
        let workloads = input.load(&speeds).map_err(err)?.workloads;
        let sim = Simulation::new(platform, setup.config.clone(), hosts.clone(), workloads)
            .map_err(|e| PlanError::Simulation(e.to_string()))?;
        let result = sim
            .run()
            .map_err(|e| PlanError::Simulation(e.to_string()))?;
        let wall = started.elapsed().as_secs_f64();
        let report = Report::new(platform, &result, &hosts, wall);
        Ok(vec![Measure {
            labels: Vec::new(),
            time_s: report.makespan_s,
            gflops: None,
            energy_j: report.energy_j,
            sim_wall_s: wall,
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_values_land_in_the_platform_and_the_configuration() {
        let text = r#"
workload = { trace = "run" }
[platform.fat_tree]
topology = "2;4,4;1,4;1,1"
bandwidth = "10Gbps"
latency = "24us"
speed = "1Gf"
[[axis]]
set = "platform.fat_tree.topology"
values = [1, 2]
format = "2;4,4;1,{};1,1"
[[axis]]
set = "scale.latency"
values = [10]
[[axis]]
set = "mapping"
values = ["random:3"]
"#;
        let study = Study::parse(text, Path::new("s.toml")).unwrap();
        let points = study.points();
        let c = PointConfig::of(&study, &points[0]).unwrap();
        assert!(c.platform.contains("2;4,4;1,1;1,1"), "{}", c.platform);
        assert_eq!(c.scale_latency, 10.0);
        assert_eq!(c.mapping, "random:3");
        let PointSetup {
            platform: p,
            config,
            mapping,
            ..
        } = c.build(&study, 0).unwrap();
        assert_eq!(p.hosts.len(), 16);
        // Every cable's latency is multiplied.
        assert!(p
            .links
            .iter()
            .all(|l| (l.latency - 240e-6).abs() < 1e-12 || l.latency == 0.0));
        assert_eq!(config.eager_threshold, 65536);
        assert_eq!(
            mapping,
            Mapping::Random {
                seed: 3,
                ranks_per_host: 1
            }
        );
        // The second point has two top switches: more links than the first.
        let c2 = PointConfig::of(&study, &points[1]).unwrap();
        let p2 = c2.build(&study, 1).unwrap().platform;
        assert!(p2.links.len() > p.links.len());
    }

    #[test]
    fn scales_that_leave_the_numbers_are_errors() {
        let text = r#"
workload = { trace = "run" }
[platform.cluster]
hosts = 2
bandwidth = "10Gbps"
latency = "24us"
speed = "1Gf"
[[axis]]
set = "scale.speed"
values = [1, 1e300]
"#;
        let study = Study::parse(text, Path::new("s.toml")).unwrap();
        let points = study.points();
        let c = PointConfig::of(&study, &points[1]).unwrap();
        let e = c
            .build(&study, 1)
            .err()
            .expect("an infinite speed")
            .to_string();
        assert!(
            e.contains("s.toml (point 1): a host speed scaled by the point's factors is inf"),
            "{e}"
        );
        let c = PointConfig::of(&study, &points[0]).unwrap();
        assert!(c.build(&study, 0).is_ok());
    }

    #[test]
    fn a_key_below_a_value_is_an_error() {
        let text = r#"
workload = { trace = "run" }
[platform]
name = "x"
[[axis]]
set = "platform.name.inner"
values = [1]
"#;
        let study = Study::parse(text, Path::new("s.toml")).unwrap();
        let e = PointConfig::of(&study, &study.points()[0]).unwrap_err();
        assert!(e.to_string().contains("not a table"), "{e}");
    }
}
