//! What the flow model needs of a route, computed once per (source, destination) pair.
//!
//! A flow's constraints (its route's links, and its reverse route's at the cross-traffic
//! weight), its rate bound and its sharing penalty depend only on its two hosts, and a
//! run's ranks talk to few partners each (HPL: a process row's ring, a process column's
//! exchange partners) millions of times: computing two routes and their links' bandwidths
//! for every message came to 7% of a 4,096-rank HPL run. The values are computed exactly as
//! before, the first time, and kept; past [`MAX_PATHS`] pairs the cache starts again empty
//! (memory stays bounded on all-to-all patterns of large platforms).

use rustc_hash::FxHashMap;

use super::flow::FlowConfig;
use super::maxmin::ConsId;
use crate::platform::{HostId, LinkId, Platform, PlatformError};

/// Pairs kept before the cache is emptied (72 bytes each).
const MAX_PATHS: usize = 1 << 20;

/// Links a cached path holds, both directions together (a two-level fat tree's routes
/// have four each way); longer paths are computed every time.
const INLINE: usize = 8;

/// A flow's route data.
#[derive(Debug, Clone, Copy)]
pub(super) struct Path {
    /// The route's latency (seconds, before the latency factor).
    pub(super) latency: f64,
    /// The rate bound: the route's smallest bandwidth, and the TCP window's.
    pub(super) bound: f64,
    /// The sharing penalty.
    pub(super) penalty: f64,
    /// The route's links (weight 1), then the reverse route's (the cross-traffic weight).
    links: [LinkId; INLINE],
    forward: u8,
    len: u8,
}

/// The paths of the pairs seen so far, for one platform and one configuration.
#[derive(Debug, Default)]
pub(super) struct PathCache {
    paths: FxHashMap<(HostId, HostId), Path>,
    route: Vec<LinkId>,
    back: Vec<LinkId>,
}

impl PathCache {
    /// The path from `src` to `dst` on `platform` (always the same platform and
    /// `config`); its constraints with their weights replace the contents of `uses`.
    pub(super) fn path(
        &mut self,
        platform: &Platform,
        config: &FlowConfig,
        src: HostId,
        dst: HostId,
        uses: &mut Vec<(ConsId, f64)>,
    ) -> Result<Path, PlatformError> {
        uses.clear();
        if let Some(p) = self.paths.get(&(src, dst)) {
            let (fwd, len) = (p.forward as usize, p.len as usize);
            uses.extend(p.links[..fwd].iter().map(|&l| (l as ConsId, 1.0)));
            uses.extend(
                p.links[fwd..len]
                    .iter()
                    .map(|&l| (l as ConsId, config.crosstraffic)),
            );
            return Ok(*p);
        }
        let latency = platform.route(src, dst, &mut self.route)?;
        uses.extend(self.route.iter().map(|&l| (l as ConsId, 1.0)));
        let mut bound = f64::INFINITY;
        for &l in &self.route {
            bound = bound.min(platform.links[l as usize].bandwidth);
        }
        self.back.clear();
        if config.crosstraffic > 0.0 {
            platform.route(dst, src, &mut self.back)?;
            uses.extend(
                self.back
                    .iter()
                    .map(|&l| (l as ConsId, config.crosstraffic)),
            );
        }
        if latency > 0.0 && config.tcp_gamma > 0.0 {
            bound = bound.min(config.tcp_gamma / (2.0 * latency));
        }
        let penalty = if latency > 0.0 {
            latency
                + self
                    .route
                    .iter()
                    .map(|&l| config.weight_s / platform.links[l as usize].bandwidth)
                    .sum::<f64>()
        } else {
            1.0
        };
        let mut path = Path {
            latency,
            bound,
            penalty,
            links: [0; INLINE],
            forward: self.route.len() as u8,
            len: (self.route.len() + self.back.len()) as u8,
        };
        if self.route.len() + self.back.len() <= INLINE {
            let (fwd, len) = (self.route.len(), self.route.len() + self.back.len());
            path.links[..fwd].copy_from_slice(&self.route);
            path.links[fwd..len].copy_from_slice(&self.back);
            if self.paths.len() >= MAX_PATHS {
                self.paths.clear();
            }
            self.paths.insert((src, dst), path);
        }
        Ok(path)
    }
}
