//! Platforms: hosts, links and the routes between hosts.
//!
//! A [`Platform`] is what the network and CPU models see: hosts (speed, cores, power),
//! links (bandwidth, latency, sharing policy) and a [`Routing`] that gives, for any two
//! hosts, the links a message crosses. A full-duplex ("SPLITDUPLEX") cable is two links, one
//! per direction. Platforms come from generators (flat cluster, fat tree, torus, dragonfly,
//! arbitrary graph), from our TOML format, or from SimGrid platform XML v4.1.

use std::collections::HashMap;

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
}

impl Platform {
    /// A platform from its parts.
    pub fn new(hosts: Vec<Host>, links: Vec<Link>, routing: Box<dyn Routing>) -> Platform {
        let by_name = hosts.iter().enumerate().map(|(i, h)| (h.name.clone(), i as HostId)).collect();
        Platform { hosts, links, routing, by_name }
    }

    /// The host called `name`.
    pub fn host_id(&self, name: &str) -> Option<HostId> {
        self.by_name.get(name).copied()
    }

    /// The route from `src` to `dst` and its latency (sum of the links' latencies).
    pub fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<f64, PlatformError> {
        out.clear();
        self.routing.route(src, dst, out)?;
        Ok(out.iter().map(|&l| self.links[l as usize].latency).sum())
    }
}
