//! Platforms: hosts, links and the routes between hosts.
//!
//! A [`Platform`] is what the network and CPU models see: hosts (speed, cores, power),
//! links (bandwidth, latency, sharing policy) and a [`Routing`] that gives, for any two
//! hosts, the links a message crosses. A full-duplex ("SPLITDUPLEX") cable is two links, one
//! per direction. Platforms come from generators (flat cluster, fat tree, torus, dragonfly,
//! arbitrary graph), from our TOML format, or from SimGrid platform XML v4.1.
//!
//! * [`topology`]: the generators, [`cluster()`], [`fat_tree()`], [`torus()`],
//!   [`dragonfly()`], [`graph()`], each with its own routing. The first four build exactly
//!   what SimGrid 3.32 builds for the corresponding `<cluster>` (same host and link names,
//!   same routes, link by link), so that a platform described both ways simulates the same.
//! * [`routing`]: zones within zones and the routes a file declares, as SimGrid routes them.
//! * [`format`]: files, [`xml::from_simgrid_xml`] (SimGrid platform XML v4.1),
//!   [`toml::from_toml_path`] (our own format), their [`units`] and [`config`] options, and
//!   [`load`], which picks one by the file's extension.
//! * [`mapping`]: rank placement, [`mapping::map_ranks`] with a [`mapping::Mapping`]
//!   (sequential, round-robin, seeded random, SimGrid hostfile).
//!
//! Routes are computed on demand from the topology (no table of all host pairs), so a
//! platform of tens of thousands of hosts takes memory in proportion to its hosts and links.

use std::collections::HashMap;
use std::path::Path;

pub mod format;
pub mod mapping;
pub mod routing;
pub mod topology;

#[cfg(test)]
mod simgrid_tests;

pub use format::{config, toml, units, xml};
pub use mapping::{map_ranks, wrap_warning, Hostfile, Mapping};
pub use topology::{cluster, dragonfly, fat_tree, graph, torus};
pub use topology::{
    BackboneSpec, ClusterSpec, Direction, DragonflySpec, FatTreeSpec, GraphEdge, GraphHost,
    GraphLink, GraphSpec, LinkRef, LoopbackSpec, TorusSpec,
};

/// Index of a host in [`Platform::hosts`].
pub type HostId = u32;
/// Index of a link in [`Platform::links`].
pub type LinkId = u32;

/// How concurrent flows share a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Flows share the bandwidth (max-min).
    Shared,
    /// Every flow gets the whole bandwidth (a non-blocking switch backplane).
    FatPipe,
}

/// How a cable is modeled, as SimGrid's `sharing_policy` attribute says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LinkPolicy {
    /// Full duplex: two [`Sharing::Shared`] links named `<name>_UP` and `<name>_DOWN`, one
    /// per direction (SimGrid's default for clusters).
    #[default]
    SplitDuplex,
    /// One [`Sharing::Shared`] link used in both directions.
    Shared,
    /// One [`Sharing::FatPipe`] link used in both directions.
    FatPipe,
}

impl LinkPolicy {
    /// Parses `SPLITDUPLEX` (or its old name `FULLDUPLEX`), `SHARED`, `FATPIPE`, in any case.
    pub fn parse(s: &str) -> Option<LinkPolicy> {
        match s.to_ascii_uppercase().as_str() {
            "SPLITDUPLEX" | "FULLDUPLEX" | "SPLIT_DUPLEX" => Some(LinkPolicy::SplitDuplex),
            "SHARED" => Some(LinkPolicy::Shared),
            "FATPIPE" => Some(LinkPolicy::FatPipe),
            _ => None,
        }
    }
}

/// A network link (one direction of a full-duplex cable, or a half-duplex bus).
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Name, for reports (`c-link-3_UP`).
    pub name: String,
    /// Bandwidth in bytes per second.
    pub bandwidth: f64,
    /// Latency in seconds.
    pub latency: f64,
    /// Sharing policy.
    pub sharing: Sharing,
}

/// A compute host.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    /// Name (`node-12`), as hostfiles and reports use it.
    pub name: String,
    /// Speed of one core, in flop/s.
    pub speed: f64,
    /// Number of cores.
    pub cores: u32,
    /// Power drawn when idle, in watts.
    pub watts_idle: f64,
    /// Power drawn when all cores compute, in watts.
    pub watts_max: f64,
}

/// Power model of a host, as SimGrid's energy plugin reads it from the host properties
/// `wattage_per_state` (`"idle:max"` or `"idle:epsilon:max"` per pstate) and `wattage_off`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HostPower {
    /// Watts when idle.
    pub idle: f64,
    /// Watts when the cores have a tiny load (equal to `idle` in the `idle:max` form).
    pub epsilon: f64,
    /// Watts when all cores compute.
    pub max: f64,
    /// Watts when the host is off.
    pub off: f64,
}

impl HostPower {
    /// `idle` and `max` watts (epsilon = idle, off = 0).
    pub fn new(idle: f64, max: f64) -> HostPower {
        HostPower {
            idle,
            epsilon: idle,
            max,
            off: 0.0,
        }
    }

    /// Parses one pstate's `"idle:max"` or `"idle:epsilon:max"` (numbers in watts).
    pub fn parse_state(s: &str) -> Result<HostPower, String> {
        let parts: Vec<&str> = s.split(':').map(str::trim).collect();
        let num = |t: &str| -> Result<f64, String> {
            t.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("invalid wattage `{t}` in `{s}`"))
        };
        match parts.as_slice() {
            [idle, max] => Ok(HostPower::new(num(idle)?, num(max)?)),
            [idle, eps, max] => Ok(HostPower {
                idle: num(idle)?,
                epsilon: num(eps)?,
                max: num(max)?,
                off: 0.0,
            }),
            _ => Err(format!(
                "wattage `{s}` is neither `idle:max` nor `idle:epsilon:max`"
            )),
        }
    }
}

/// Characteristics shared by all hosts of a generated platform.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    /// Speed of one core, in flop/s.
    pub speed: f64,
    /// Number of cores.
    pub cores: u32,
    /// Power model.
    pub power: HostPower,
}

impl Default for HostSpec {
    /// 1 Gflop/s, one core, no power model.
    fn default() -> HostSpec {
        HostSpec {
            speed: 1e9,
            cores: 1,
            power: HostPower::default(),
        }
    }
}

/// Why a platform could not be built or used.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// A platform file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The system error.
        source: std::io::Error,
    },
    /// A platform file is malformed.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A generator was given impossible parameters.
    #[error("{0}")]
    Invalid(String),
    /// Two hosts have no route between them.
    #[error("no route from host {src} to host {dst}")]
    NoRoute {
        /// Source host name.
        src: String,
        /// Destination host name.
        dst: String,
    },
}

/// Gives the links between two hosts.
pub trait Routing: Send + Sync + std::fmt::Debug {
    /// Appends to `out` the links a message from `src` to `dst` crosses, in order. A
    /// message from a host to itself crosses the host's loopback (or whatever the platform
    /// says); an empty route means "no network cost".
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError>;
}

/// Hosts, links and routing.
#[derive(Debug)]
pub struct Platform {
    /// Hosts, indexed by [`HostId`].
    pub hosts: Vec<Host>,
    /// Links, indexed by [`LinkId`].
    pub links: Vec<Link>,
    /// Routes between hosts.
    pub routing: Box<dyn Routing>,
    by_name: HashMap<String, HostId>,
    links_by_name: HashMap<String, LinkId>,
    /// Per host `(epsilon watts, off watts)`; empty when no host has them.
    power_extra: Vec<(f64, f64)>,
    /// Simulation options the platform file carries, by SimGrid's names
    /// (`smpi/bw-factor`, `network/weight-S`, ...): XML `<config><prop id value>`, TOML
    /// `[config]`. Applied by the replay unless its own options say otherwise.
    pub config: std::collections::BTreeMap<String, String>,
    /// The options of the platform file that the simulator does not use, one per option
    /// (`p.xml:3: unknown option ...`, see [`config::check_key`]): front ends print them as
    /// warnings.
    pub warnings: Vec<config::OptionWarning>,
}

impl Platform {
    /// A platform from its parts.
    pub fn new(hosts: Vec<Host>, links: Vec<Link>, routing: Box<dyn Routing>) -> Platform {
        let by_name = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| (h.name.clone(), i as HostId))
            .collect();
        let links_by_name = links
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i as LinkId))
            .collect();
        Platform {
            hosts,
            links,
            routing,
            by_name,
            links_by_name,
            power_extra: Vec::new(),
            config: Default::default(),
            warnings: Vec::new(),
        }
    }

    /// The host called `name`.
    pub fn host_id(&self, name: &str) -> Option<HostId> {
        self.by_name.get(name).copied()
    }

    /// The link called `name` (a split-duplex cable `c` is the two links `c_UP`, `c_DOWN`).
    pub fn link_id(&self, name: &str) -> Option<LinkId> {
        self.links_by_name.get(name).copied()
    }

    /// The power model of host `host` (idle and max from [`Host`]; epsilon and off watts
    /// when the platform gave them).
    pub fn host_power(&self, host: HostId) -> HostPower {
        let h = &self.hosts[host as usize];
        let (epsilon, off) = self
            .power_extra
            .get(host as usize)
            .copied()
            .unwrap_or((h.watts_idle, 0.0));
        HostPower {
            idle: h.watts_idle,
            epsilon,
            max: h.watts_max,
            off,
        }
    }

    /// The route from `src` to `dst` and its latency (sum of the links' latencies).
    pub fn route(
        &self,
        src: HostId,
        dst: HostId,
        out: &mut Vec<LinkId>,
    ) -> Result<f64, PlatformError> {
        out.clear();
        self.routing.route(src, dst, out)?;
        Ok(out.iter().map(|&l| self.links[l as usize].latency).sum())
    }

    /// The route from `src` to `dst` as link names (for reports and tests).
    pub fn route_names(&self, src: HostId, dst: HostId) -> Result<Vec<&str>, PlatformError> {
        let mut out = Vec::new();
        self.route(src, dst, &mut out)?;
        Ok(out
            .iter()
            .map(|&l| self.links[l as usize].name.as_str())
            .collect())
    }

    /// The smallest bandwidth along the route from `src` to `dst` (infinite for an empty
    /// route).
    pub fn route_bottleneck(&self, src: HostId, dst: HostId) -> Result<f64, PlatformError> {
        let mut out = Vec::new();
        self.route(src, dst, &mut out)?;
        Ok(out
            .iter()
            .map(|&l| self.links[l as usize].bandwidth)
            .fold(f64::INFINITY, f64::min))
    }
}

/// Loads a platform file: `.xml` is SimGrid platform XML v4.1 ([`xml::from_simgrid_xml`]),
/// `.toml` is our format ([`toml::from_toml_path`]).
pub fn load(path: &Path) -> Result<Platform, PlatformError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("xml") => xml::from_simgrid_xml(path),
        Some("toml") => toml::from_toml_path(path),
        _ => Err(PlatformError::Syntax {
            path: path.display().to_string(),
            line: 0,
            message: "unknown platform file type: expected a `.xml` (SimGrid) or `.toml` file"
                .into(),
        }),
    }
}

/// Accumulates hosts and links while a platform is built.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    pub(crate) hosts: Vec<Host>,
    pub(crate) links: Vec<Link>,
    /// `(epsilon, off)` watts per host.
    pub(crate) power_extra: Vec<(f64, f64)>,
    /// Whether some host has epsilon/off watts different from the defaults.
    pub(crate) has_power_extra: bool,
    /// SimGrid numbers fat-tree links with a counter shared by all fat trees of a run.
    pub(crate) fat_tree_links: u64,
    /// Same for dragonfly links.
    pub(crate) dragonfly_links: u64,
}

impl Parts {
    /// Adds a host.
    pub(crate) fn add_host(&mut self, name: String, spec: &HostSpec) -> HostId {
        let id = self.hosts.len() as HostId;
        self.hosts.push(Host {
            name,
            speed: spec.speed,
            cores: spec.cores,
            watts_idle: spec.power.idle,
            watts_max: spec.power.max,
        });
        self.power_extra.push((spec.power.epsilon, spec.power.off));
        if spec.power.epsilon != spec.power.idle || spec.power.off != 0.0 {
            self.has_power_extra = true;
        }
        id
    }

    /// Adds one link.
    pub(crate) fn add_link(
        &mut self,
        name: String,
        bandwidth: f64,
        latency: f64,
        sharing: Sharing,
    ) -> LinkId {
        let id = self.links.len() as LinkId;
        self.links.push(Link {
            name,
            bandwidth,
            latency,
            sharing,
        });
        id
    }

    /// Adds a cable: two links `<name>_UP`, `<name>_DOWN` for [`LinkPolicy::SplitDuplex`],
    /// else one link (returned twice). Returns `(up, down)`.
    pub(crate) fn add_cable(
        &mut self,
        name: &str,
        bandwidth: f64,
        latency: f64,
        policy: LinkPolicy,
    ) -> (LinkId, LinkId) {
        match policy {
            LinkPolicy::SplitDuplex => {
                let up = self.add_link(format!("{name}_UP"), bandwidth, latency, Sharing::Shared);
                let down =
                    self.add_link(format!("{name}_DOWN"), bandwidth, latency, Sharing::Shared);
                (up, down)
            }
            LinkPolicy::Shared => {
                let l = self.add_link(name.to_string(), bandwidth, latency, Sharing::Shared);
                (l, l)
            }
            LinkPolicy::FatPipe => {
                let l = self.add_link(name.to_string(), bandwidth, latency, Sharing::FatPipe);
                (l, l)
            }
        }
    }

    /// The platform made of these parts; fails if two hosts have the same name.
    pub(crate) fn finish(self, routing: Box<dyn Routing>) -> Result<Platform, PlatformError> {
        let mut p = Platform::new(self.hosts, self.links, routing);
        if p.by_name.len() != p.hosts.len() {
            let mut seen = std::collections::HashSet::new();
            let dup = p
                .hosts
                .iter()
                .find(|h| !seen.insert(h.name.as_str()))
                .map(|h| h.name.clone())
                .unwrap_or_default();
            return Err(PlatformError::Invalid(format!(
                "two hosts are named `{dup}`"
            )));
        }
        if self.has_power_extra {
            p.power_extra = self.power_extra;
        }
        Ok(p)
    }
}

/// Checks that a bandwidth is usable (finite, > 0).
pub(crate) fn check_bandwidth(what: &str, bw: f64) -> Result<(), PlatformError> {
    if bw.is_finite() && bw > 0.0 {
        Ok(())
    } else {
        Err(PlatformError::Invalid(format!(
            "{what}: bandwidth must be a positive number of bytes per second, not {bw}"
        )))
    }
}

/// Checks that a latency is usable (finite, >= 0).
pub(crate) fn check_latency(what: &str, lat: f64) -> Result<(), PlatformError> {
    if lat.is_finite() && lat >= 0.0 {
        Ok(())
    } else {
        Err(PlatformError::Invalid(format!(
            "{what}: latency must be a non-negative number of seconds, not {lat}"
        )))
    }
}

/// Checks host characteristics.
pub(crate) fn check_host(what: &str, h: &HostSpec) -> Result<(), PlatformError> {
    if !(h.speed.is_finite() && h.speed > 0.0) {
        return Err(PlatformError::Invalid(format!(
            "{what}: speed must be a positive number of flop/s, not {}",
            h.speed
        )));
    }
    if h.cores == 0 {
        return Err(PlatformError::Invalid(format!(
            "{what}: a host needs at least one core"
        )));
    }
    Ok(())
}

/// The error for a route that does not exist, with host names.
pub(crate) fn no_route(names: &[String], src: HostId, dst: HostId) -> PlatformError {
    let name = |h: HostId| {
        names
            .get(h as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{h}"))
    };
    PlatformError::NoRoute {
        src: name(src),
        dst: name(dst),
    }
}

/// Checks that `h` is a host of a platform with `n` hosts.
#[inline]
pub(crate) fn check_host_id(h: HostId, n: usize) -> Result<usize, PlatformError> {
    if (h as usize) < n {
        Ok(h as usize)
    } else {
        Err(PlatformError::Invalid(format!(
            "host #{h} does not exist (the platform has {n} hosts)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_load_dispatches_on_extension() {
        let dir = tempfile::tempdir().unwrap();
        let xml = dir.path().join("p.xml");
        std::fs::write(
            &xml,
            "<platform version=\"4.1\"><zone id=\"w\" routing=\"Full\">\
             <cluster id=\"c\" prefix=\"n\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" \
             bw=\"1GBps\" lat=\"10us\"/></zone></platform>",
        )
        .unwrap();
        let p = load(&xml).unwrap();
        assert_eq!(p.hosts.len(), 4);
        let toml = dir.path().join("p.TOML");
        std::fs::write(
            &toml,
            "[torus]\nbandwidth = 1e9\nlatency = 1e-6\ndims = [2, 3]\n",
        )
        .unwrap();
        assert_eq!(load(&toml).unwrap().hosts.len(), 6);
        let other = dir.path().join("p.json");
        std::fs::write(&other, "{}").unwrap();
        assert!(load(&other)
            .unwrap_err()
            .to_string()
            .contains("unknown platform file type"));
        let missing = dir.path().join("missing.xml");
        let e = load(&missing).unwrap_err();
        assert!(matches!(e, PlatformError::Io { .. }), "{e}");
        assert!(e.to_string().contains("missing.xml"));
    }

    #[test]
    fn platform_host_power_and_link_lookup() {
        let mut c = ClusterSpec::new(2, 1e9, 1e-6);
        c.host.power = HostPower {
            idle: 90.0,
            epsilon: 95.0,
            max: 180.0,
            off: 8.0,
        };
        let p = cluster(c).unwrap();
        assert_eq!(p.host_power(1).epsilon, 95.0);
        assert_eq!(p.host_power(1).off, 8.0);
        assert_eq!(p.hosts[1].watts_max, 180.0);
        assert!(p.link_id("cluster_link_1_DOWN").is_some());
        assert!(p.link_id("cluster_link_1").is_none());
        let p = cluster(ClusterSpec::new(2, 1e9, 1e-6)).unwrap();
        assert_eq!(p.host_power(0), HostPower::default());
        assert!(HostPower::parse_state("1:2:3:4").is_err());
        assert!(HostPower::parse_state("1:x").is_err());
        assert_eq!(
            HostPower::parse_state(" 100 : 200 ").unwrap(),
            HostPower::new(100.0, 200.0)
        );
        assert_eq!(
            LinkPolicy::parse("fullduplex"),
            Some(LinkPolicy::SplitDuplex)
        );
        assert_eq!(LinkPolicy::parse("WIFI"), None);
    }
}

/// Helpers shared by the generators' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::{ClusterSpec, HostId, Platform};

    /// Cables of 1 GB/s and 10 us, hosts `n<i>`, links named after `id`.
    pub(crate) fn cluster_spec(id: &str) -> ClusterSpec {
        let mut c = ClusterSpec::new(0, 1e9, 10e-6);
        c.id = id.into();
        c.prefix = "n".into();
        c.radicals.clear();
        c
    }

    /// Links on the route from `a` to `b`.
    pub(crate) fn hops(p: &Platform, a: HostId, b: HostId) -> usize {
        let mut out = Vec::new();
        p.route(a, b, &mut out).unwrap();
        out.len()
    }
}
