//! The study file: a workload, a base platform, the axes to sweep and the figures to draw.
//!
//! ```toml
//! name = "HPL on pruned fat trees"
//! workload = { hpl = "HPL.dat" }      # or { trace = "run-dir" } (or a structural form:
//!                                     # { trace = "form.json.gz" }) or { ti = "index.txt" };
//!                                     # optional: `mpiscope plan --trace DIR` gives it
//! network = "flow"                    # flow (default) | smpi | loggp
//! mapping = "sequential"              # baseline placement (see `Mapping`'s syntax)
//! traced_speed = "2Gf"                # optional: the traced machine's speed (trace bursts
//!                                     # become flops; default: they keep their durations)
//! mode = "grid"                       # grid (every combination, default) | one-at-a-time
//!
//! [platform]                          # a TOML platform inline, as in a platform file,
//! [platform.fat_tree]                 # or `file = "cluster.xml"` (then no `platform.` axes)
//! topology = "2;16,32;1,16;1,1"
//! bandwidth = "10Gbps"
//! latency = "24us"
//!
//! [[axis]]
//! name = "top switches"               # column name (default: `set`)
//! set = "platform.fat_tree.topology"  # a key of the inline platform, or one of
//!                                     # scale.speed | scale.bandwidth | scale.latency
//!                                     # (multiply every host speed / link bandwidth /
//!                                     # link latency), mapping, network
//! values = [1, 2, 4, 8, 16]
//! format = "2;16,32;1,{};1,1"         # optional: the value replaces {} in what is set
//!                                     # (results keep the value itself: 1, 2, 4, ...)
//! baseline = 16                       # one-at-a-time: the value when another axis varies
//!
//! [[figure]]
//! file = "topology.svg"
//! x = "top switches"                  # a column of the results
//! y = "gflops"                        # time_s | gflops | energy_j | sim_wall_s
//! series = "mapping"                  # optional: one line per value
//! panels = "bandwidth"                # optional: one panel per value
//! ```
//!
//! Relative paths are relative to the study file. Errors name the file and the key.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::mpi::MpiSettings;
use crate::PlanError;

/// What runs at every point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSpec {
    /// An HPL.dat: the HPL skeleton, every configuration the file lists.
    Hpl(PathBuf),
    /// An mpiscope run directory or a structural form (`mpiscope structure --save`),
    /// replayed.
    Trace(PathBuf),
    /// A SimGrid time-independent trace index, replayed.
    Ti(PathBuf),
}

/// The base platform.
#[derive(Debug, Clone, PartialEq)]
pub enum PlatformSpec {
    /// A platform file (SimGrid XML or mpiscope TOML).
    File(PathBuf),
    /// A TOML platform written in the study (its keys can be swept).
    Inline(toml::Table),
}

/// What an axis changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A key of the inline platform (dotted path below `platform`).
    PlatformKey(Vec<String>),
    /// Multiply every host's speed.
    ScaleSpeed,
    /// Multiply every link's bandwidth.
    ScaleBandwidth,
    /// Multiply every link's latency.
    ScaleLatency,
    /// The rank placement.
    Mapping,
    /// The network model.
    Network,
}

/// One swept parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Column name.
    pub name: String,
    /// What it changes.
    pub target: Target,
    /// Its values, as written (and as the results show them).
    pub values: Vec<toml::Value>,
    /// The value used while another axis varies (one-at-a-time mode).
    pub baseline: Option<toml::Value>,
    /// A template the value replaces `{}` in before it is applied.
    pub format: Option<String>,
}

impl Axis {
    /// What value `v` sets: `v` itself, or the format with `{}` replaced by it.
    pub fn applied(&self, v: &toml::Value) -> toml::Value {
        match &self.format {
            None => v.clone(),
            Some(f) => toml::Value::String(f.replace("{}", &value_text(v))),
        }
    }
}

/// How axes combine into points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every combination of axis values.
    Grid,
    /// One axis at a time, the others at their baseline.
    OneAtATime,
}

/// A figure to draw from the results.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FigureSpec {
    /// Output file (SVG), relative to the output directory.
    pub file: String,
    /// Column on the x axis.
    pub x: String,
    /// Column on the y axis.
    pub y: String,
    /// Column whose values make one line each.
    #[serde(default)]
    pub series: Option<String>,
    /// Column whose values make one panel each.
    #[serde(default)]
    pub panels: Option<String>,
    /// Title (default: the study's name).
    #[serde(default)]
    pub title: Option<String>,
}

/// A parsed, checked study.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    /// The study file.
    pub path: PathBuf,
    /// Its name.
    pub name: String,
    /// What runs (the command line may give it instead: a generic study over any trace).
    pub workload: Option<WorkloadSpec>,
    /// On what.
    pub platform: PlatformSpec,
    /// Baseline network model.
    pub network: String,
    /// Baseline mapping.
    pub mapping: String,
    /// Speed of the traced machine (flop/s): an mpiscope trace's compute bursts become
    /// `duration x traced_speed` flops. `None`: bursts keep their traced durations on the
    /// base platform's hosts, and only `scale.speed` changes them.
    pub traced_speed: Option<f64>,
    /// The modeled MPI library's settings for every point (the command line gives them;
    /// the defaults keep the platform's).
    pub mpi: MpiSettings,
    /// How axes combine.
    pub mode: Mode,
    /// Swept parameters.
    pub axes: Vec<Axis>,
    /// Figures.
    pub figures: Vec<FigureSpec>,
}

/// One point of the sweep: a value per axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index in the study's order (stable: it names the point's result file).
    pub index: usize,
    /// Value of each axis, in axis order.
    pub values: Vec<toml::Value>,
    /// One-at-a-time mode: the axis that varies at this point.
    pub varied: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StudyFile {
    name: Option<String>,
    workload: Option<WorkloadFile>,
    platform: toml::Table,
    network: Option<String>,
    mapping: Option<String>,
    traced_speed: Option<toml::Value>,
    mode: Option<String>,
    #[serde(default)]
    axis: Vec<AxisFile>,
    #[serde(default)]
    figure: Vec<FigureSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkloadFile {
    hpl: Option<PathBuf>,
    trace: Option<PathBuf>,
    ti: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AxisFile {
    name: Option<String>,
    set: String,
    values: Vec<toml::Value>,
    format: Option<String>,
    baseline: Option<toml::Value>,
}

/// Result columns the HPL skeleton adds (one row per configuration of the HPL.dat).
pub const HPL_LABELS: &[&str] = &["n", "nb", "p", "q", "tv"];

/// Result columns every workload provides.
pub const METRICS: &[&str] = &["time_s", "gflops", "energy_j", "sim_wall_s"];

impl Study {
    /// Reads and checks a study file.
    pub fn from_path(path: &Path) -> Result<Study, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Study::parse(&text, path)
    }

    /// Parses a study's text; `path` names it in errors and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Study, PlanError> {
        let err = |message: String| PlanError::Study {
            path: path.display().to_string(),
            message,
        };
        let f: StudyFile = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let rel = |p: PathBuf| if p.is_absolute() { p } else { dir.join(p) };
        let workload = workload_spec(f.workload, rel).map_err(err)?;
        let platform = platform_spec(f.platform, rel).map_err(err)?;
        let network = f.network.unwrap_or_else(|| "flow".into());
        check_network(&network).map_err(|m| err(format!("network: {m}")))?;
        let mapping = f.mapping.unwrap_or_else(|| "sequential".into());
        mapping
            .parse::<mpiscope_sim::platform::Mapping>()
            .map_err(|m| err(format!("mapping: {m}")))?;
        let traced_speed = f
            .traced_speed
            .as_ref()
            .map(parse_traced_speed)
            .transpose()
            .map_err(err)?;
        let mode = match f.mode.as_deref() {
            None | Some("grid") => Mode::Grid,
            Some("one-at-a-time") => Mode::OneAtATime,
            Some(other) => {
                return Err(err(format!(
                    "mode `{other}`: expected grid or one-at-a-time"
                )))
            }
        };
        let mut axes = Vec::new();
        for (i, a) in f.axis.into_iter().enumerate() {
            let at = format!("axis {} (`{}`)", i + 1, a.set);
            axes.push(axis(a, &platform, mode).map_err(|m| err(format!("{at}: {m}")))?);
        }
        let study = Study {
            path: path.to_path_buf(),
            name: f.name.unwrap_or_else(|| {
                path.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            }),
            workload,
            platform,
            network,
            mapping,
            traced_speed,
            mpi: MpiSettings::default(),
            mode,
            axes,
            figures: f.figure,
        };
        study.check_figures().map_err(err)?;
        Ok(study)
    }

    /// Checks that every column a figure names will be in the results.
    fn check_figures(&self) -> Result<(), String> {
        for (i, fig) in self.figures.iter().enumerate() {
            for col in [
                Some(&fig.x),
                Some(&fig.y),
                fig.series.as_ref(),
                fig.panels.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                if !self.known_column(col) {
                    return Err(format!(
                        "figure {} ({}): no column `{col}` (axes, `varied`, `value`, the \
                         workload's labels or {})",
                        i + 1,
                        fig.file,
                        METRICS.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether results will have a column `name`.
    fn known_column(&self, name: &str) -> bool {
        self.axes.iter().any(|a| a.name == name)
            || METRICS.contains(&name)
            || matches!(name, "varied" | "value" | "point")
            || match self.workload {
                // Without a workload yet (given on the command line), HPL's labels may come.
                Some(WorkloadSpec::Hpl(_)) | None => HPL_LABELS.contains(&name),
                _ => false,
            }
    }

    /// The points, in a stable order.
    pub fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        match self.mode {
            Mode::Grid => {
                let total: usize = self.axes.iter().map(|a| a.values.len()).product();
                for index in 0..total {
                    let mut rest = index;
                    let mut values = vec![toml::Value::Boolean(false); self.axes.len()];
                    // The last axis varies fastest.
                    for (i, a) in self.axes.iter().enumerate().rev() {
                        values[i] = a.values[rest % a.values.len()].clone();
                        rest /= a.values.len();
                    }
                    out.push(Point {
                        index,
                        values,
                        varied: None,
                    });
                }
            }
            Mode::OneAtATime => {
                for (i, a) in self.axes.iter().enumerate() {
                    for v in &a.values {
                        let values = self
                            .axes
                            .iter()
                            .enumerate()
                            .map(|(j, b)| {
                                if j == i {
                                    v.clone()
                                } else {
                                    b.baseline.clone().unwrap_or_else(|| b.values[0].clone())
                                }
                            })
                            .collect();
                        out.push(Point {
                            index: out.len(),
                            values,
                            varied: Some(i),
                        });
                    }
                }
            }
        }
        out
    }
}

/// The study's `workload` table (paths made absolute by `rel`).
fn workload_spec(
    w: Option<WorkloadFile>,
    rel: impl Fn(PathBuf) -> PathBuf,
) -> Result<Option<WorkloadSpec>, String> {
    Ok(match w.map(|w| (w.hpl, w.trace, w.ti)) {
        None => None,
        Some((Some(p), None, None)) => Some(WorkloadSpec::Hpl(rel(p))),
        Some((None, Some(p), None)) => Some(WorkloadSpec::Trace(rel(p))),
        Some((None, None, Some(p))) => Some(WorkloadSpec::Ti(rel(p))),
        Some(_) => {
            return Err(
                "workload: give exactly one of hpl = \"HPL.dat\", trace = \"DIR\", ti = \"FILE\""
                    .into(),
            )
        }
    })
}

/// The study's `[platform]`: a file alone (its path made absolute by `rel`), or a platform
/// written inline.
fn platform_spec(
    platform: toml::Table,
    rel: impl Fn(PathBuf) -> PathBuf,
) -> Result<PlatformSpec, String> {
    Ok(match platform.get("file") {
        Some(toml::Value::String(p)) if platform.len() == 1 => {
            PlatformSpec::File(rel(PathBuf::from(p)))
        }
        Some(_) => {
            return Err(
                "platform.file: a path string, alone in [platform] (or write the platform inline)"
                    .into(),
            )
        }
        None => PlatformSpec::Inline(platform),
    })
}

/// `traced_speed`: a speed (`"2Gf"`) or a number of flop/s, positive and finite.
fn parse_traced_speed(v: &toml::Value) -> Result<f64, String> {
    match v {
        toml::Value::String(s) => mpiscope_sim::platform::units::parse_speed(s).ok(),
        other => factor(other),
    }
    .filter(|x| x.is_finite() && *x > 0.0)
    .ok_or_else(|| format!("traced_speed {v}: expected a speed such as \"2Gf\""))
}

/// An `[[axis]]`, checked against the platform (only an inline one has keys to sweep) and
/// the mode (one-at-a-time needs baselines).
fn axis(a: AxisFile, platform: &PlatformSpec, mode: Mode) -> Result<Axis, String> {
    let target = match a.set.as_str() {
        "scale.speed" => Target::ScaleSpeed,
        "scale.bandwidth" => Target::ScaleBandwidth,
        "scale.latency" => Target::ScaleLatency,
        "mapping" => Target::Mapping,
        "network" => Target::Network,
        s => match s.strip_prefix("platform.") {
            Some(key) if matches!(platform, PlatformSpec::Inline(_)) => {
                Target::PlatformKey(key.split('.').map(str::to_owned).collect())
            }
            Some(_) => return Err("platform keys can be swept only on an inline platform".into()),
            None => {
                return Err("expected platform.<key>, scale.speed, scale.bandwidth, \
                     scale.latency, mapping or network"
                    .into())
            }
        },
    };
    if a.values.is_empty() {
        return Err("no values".into());
    }
    if let Some(f) = &a.format {
        if !f.contains("{}") {
            return Err(format!("format `{f}` has no {{}}"));
        }
    }
    let axis = Axis {
        name: a.name.unwrap_or_else(|| a.set.clone()),
        target,
        values: a.values,
        baseline: a.baseline,
        format: a.format,
    };
    for v in axis.values.iter().chain(&axis.baseline) {
        check_value(&axis.target, &axis.applied(v)).map_err(|m| format!("value {v}: {m}"))?;
    }
    if mode == Mode::OneAtATime && axis.baseline.is_none() {
        return Err("one-at-a-time mode needs a baseline value".into());
    }
    Ok(axis)
}

/// A value as text, without TOML quotes for strings.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn check_network(name: &str) -> Result<(), String> {
    if mpiscope_sim::network::named(name).is_some() {
        Ok(())
    } else {
        Err(format!(
            "`{name}`: expected {}",
            mpiscope_sim::network::NAMES.join(", ")
        ))
    }
}

/// A positive, finite number (an integer or a float).
pub(crate) fn factor(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
    .filter(|f| f.is_finite() && *f > 0.0)
}

fn check_value(target: &Target, v: &toml::Value) -> Result<(), String> {
    match target {
        Target::ScaleSpeed | Target::ScaleBandwidth | Target::ScaleLatency => factor(v)
            .map(drop)
            .ok_or_else(|| "a scale is a positive number".to_owned()),
        Target::Mapping => match v {
            toml::Value::String(s) => s.parse::<mpiscope_sim::platform::Mapping>().map(drop),
            _ => Err("a mapping is a string".into()),
        },
        Target::Network => match v {
            toml::Value::String(s) => check_network(s),
            _ => Err("a network model is a string".into()),
        },
        Target::PlatformKey(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIG_5_3: &str = r#"
name = "topology"
workload = { trace = "run" }
mapping = "sequential"
[platform.fat_tree]
topology = "2;16,32;1,16;1,1"
bandwidth = "10Gbps"
latency = "24us"
[[axis]]
name = "top switches"
set = "platform.fat_tree.topology"
values = [1, 2, 16]
format = "2;16,32;1,{};1,1"
[[axis]]
set = "mapping"
values = ["sequential", "random:1"]
[[figure]]
file = "t.svg"
x = "top switches"
y = "time_s"
series = "mapping"
"#;

    #[test]
    fn grid_points_in_order_with_raw_values() {
        let s = Study::parse(FIG_5_3, Path::new("/studies/topo.toml")).unwrap();
        assert_eq!(s.workload, Some(WorkloadSpec::Trace("/studies/run".into())));
        assert_eq!(s.axes[0].name, "top switches");
        assert_eq!(s.axes[1].name, "mapping");
        let points = s.points();
        assert_eq!(points.len(), 6);
        let text: Vec<String> = points
            .iter()
            .map(|p| {
                p.values
                    .iter()
                    .map(value_text)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        assert_eq!(
            text,
            [
                "1 sequential",
                "1 random:1",
                "2 sequential",
                "2 random:1",
                "16 sequential",
                "16 random:1"
            ]
        );
        assert_eq!(
            s.axes[0].applied(&points[4].values[0]),
            toml::Value::String("2;16,32;1,16;1,1".into())
        );
        assert!(points.iter().enumerate().all(|(i, p)| p.index == i));
    }

    #[test]
    fn one_at_a_time_holds_the_others_at_their_baseline() {
        let text = r#"
workload = { hpl = "HPL.dat" }
mode = "one-at-a-time"
platform = { file = "p.xml" }
[[axis]]
set = "scale.speed"
values = [0.1, 1, 10]
baseline = 1
[[axis]]
set = "scale.latency"
values = [0.1, 10]
baseline = 1
"#;
        let s = Study::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(s.platform, PlatformSpec::File("p.xml".into()));
        let p = s.points();
        assert_eq!(p.len(), 5);
        assert_eq!(p[0].varied, Some(0));
        assert_eq!(
            p[0].values,
            vec![toml::Value::Float(0.1), toml::Value::Integer(1)]
        );
        assert_eq!(p[4].varied, Some(1));
        assert_eq!(
            p[4].values,
            vec![toml::Value::Integer(1), toml::Value::Integer(10)]
        );
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let bad = [
            ("workload = {}\n[platform]\nfile = \"p\"", "workload"),
            ("[platform]\nfile = \"p\"\n[[axis]]\nset = \"scale.speed\"\nvalues = [1]\n[[figure]]\nfile = \"f.svg\"\nx = \"scale.speed\"\ny = \"joy\"", "joy"),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\n[[axis]]\nset = \"platform.x\"\nvalues = [1]",
                "inline platform",
            ),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\n[[axis]]\nset = \"scale.speed\"\nvalues = [-1]",
                "positive",
            ),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\n[[axis]]\nset = \"mapping\"\nvalues = [\"diagonal\"]",
                "diagonal",
            ),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\nnetwork = \"packet\"",
                "network",
            ),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\n[[figure]]\nfile = \"f.svg\"\nx = \"nope\"\ny = \"time_s\"",
                "nope",
            ),
            (
                "workload = { trace = \"r\" }\nplatform = { file = \"p\" }\nmode = \"one-at-a-time\"\n[[axis]]\nset = \"scale.speed\"\nvalues = [1]",
                "baseline",
            ),
            ("workload = { trace = \"r\" }\nplatform = { file = \"p\" }\ncolour = 1", "colour"),
        ];
        for (text, needle) in bad {
            let e = Study::parse(text, Path::new("bad.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("bad.toml"), "{e}");
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }
}
