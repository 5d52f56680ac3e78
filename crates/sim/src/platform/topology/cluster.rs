//! Flat clusters, as SimGrid's `<cluster>` without `topology` (a "star" zone).
//!
//! Every host has a private cable to the cluster's core; the core is either nothing (a
//! non-blocking switch) or a backbone link. Names follow SimGrid 3.32: hosts
//! `<prefix><radical><suffix>`, private cables `<id>_link_<radical>` (two links
//! `<id>_link_<radical>_UP` / `_DOWN` when split-duplex), backbone `<id>_backbone`, limiter
//! `<id>_link_<radical>_limiter`, loopback `<id>_link_<radical>_loopback`.
//!
//! Routes (SimGrid's StarZone): from `a` to `b ≠ a`, `[limiter_a, link_a_UP, backbone,
//! link_b_DOWN, limiter_b]` (the links that exist; a link met twice is kept once). From a
//! host to itself: its loopback if the cluster has loopbacks, else up its private cable and
//! back down (`[limiter, link_UP, backbone, link_DOWN]`, or `[limiter, link, backbone]` for a
//! shared cable) — SimGrid's behaviour, measured: a same-host message costs two private
//! latencies plus the backbone's.

use crate::platform::{
    check_bandwidth, check_host, check_host_id, check_latency, HostId, HostSpec, LinkId,
    LinkPolicy, Parts, Platform, PlatformError, Routing, Sharing,
};

/// The backbone of a flat cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct BackboneSpec {
    /// Bandwidth in bytes/s.
    pub bandwidth: f64,
    /// Latency in seconds.
    pub latency: f64,
    /// `Shared` (SimGrid's default: a hub/bus) or `FatPipe` (a switch backplane).
    pub sharing: Sharing,
}

/// Per-host loopback links (one FATPIPE link per host).
#[derive(Debug, Clone, PartialEq)]
pub struct LoopbackSpec {
    /// Bandwidth in bytes/s.
    pub bandwidth: f64,
    /// Latency in seconds.
    pub latency: f64,
    /// Concurrent flows share the bandwidth (SHARED) instead of each having all of it
    /// (FATPIPE, SimGrid's loopback). Shared memory between the cores of one node behaves
    /// like the former: a calibrated one-host platform uses it.
    pub shared: bool,
}

impl LoopbackSpec {
    /// The link's sharing policy.
    pub fn sharing(&self) -> Sharing {
        if self.shared {
            Sharing::Shared
        } else {
            Sharing::FatPipe
        }
    }
}

/// A cluster: hosts, their private cables and what connects them. The same description
/// serves the topologies ([`super::fat_tree::FatTreeSpec`],
/// [`super::torus::TorusSpec`], [`super::dragonfly::DragonflySpec`]), which ignore `backbone` and `router_id`, as SimGrid does.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    /// Cluster name, used in link names.
    pub id: String,
    /// Host name prefix.
    pub prefix: String,
    /// Host name suffix.
    pub suffix: String,
    /// Host numbers: host `i` is `<prefix><radicals[i]><suffix>`. For the topologies, an
    /// empty list means `0..n` for the `n` hosts of the topology.
    pub radicals: Vec<u64>,
    /// Host characteristics.
    pub host: HostSpec,
    /// Bandwidth of each private cable (and of each topology cable), bytes/s.
    pub bandwidth: f64,
    /// Latency of each private cable, seconds.
    pub latency: f64,
    /// How each cable is modeled (split-duplex by default). Generators honour
    /// [`LinkPolicy::FatPipe`]; note that SimGrid 3.32 builds SHARED cables for a
    /// `<cluster sharing_policy="FATPIPE">`, which is what the XML reader does too.
    pub sharing: LinkPolicy,
    /// Optional backbone (flat clusters only).
    pub backbone: Option<BackboneSpec>,
    /// Optional per-host loopback.
    pub loopback: Option<LoopbackSpec>,
    /// Optional per-host (and per-switch, in topologies) limiter bandwidth, bytes/s.
    pub limiter: Option<f64>,
    /// Name of the cluster's router (flat clusters; default `<prefix><id>_router<suffix>`).
    /// Only platform files use it (as a gateway).
    pub router_id: Option<String>,
}

impl ClusterSpec {
    /// A cluster `cluster` of `nodes` hosts `node-0` … with the given cable bandwidth
    /// (bytes/s) and latency (s), split-duplex cables, no backbone, loopback nor limiter,
    /// hosts of 1 Gflop/s and one core.
    pub fn new(nodes: usize, bandwidth: f64, latency: f64) -> ClusterSpec {
        ClusterSpec {
            id: "cluster".into(),
            prefix: "node-".into(),
            suffix: String::new(),
            radicals: (0..nodes as u64).collect(),
            host: HostSpec::default(),
            bandwidth,
            latency,
            sharing: LinkPolicy::SplitDuplex,
            backbone: None,
            loopback: None,
            limiter: None,
            router_id: None,
        }
    }

    /// Name of host `i` (`i` indexes [`ClusterSpec::radicals`]).
    pub fn host_name(&self, radical: u64) -> String {
        format!("{}{}{}", self.prefix, radical, self.suffix)
    }

    /// The router's name.
    pub fn router_name(&self) -> String {
        self.router_id
            .clone()
            .unwrap_or_else(|| format!("{}{}_router{}", self.prefix, self.id, self.suffix))
    }

    /// The radicals of `n` hosts: the given ones (at least `n`; extra ones are unused, as in
    /// SimGrid) or `0..n` when none is given.
    pub(crate) fn radicals_for(&self, n: usize, what: &str) -> Result<Vec<u64>, PlatformError> {
        if self.radicals.is_empty() {
            return Ok((0..n as u64).collect());
        }
        if self.radicals.len() < n {
            return Err(PlatformError::Invalid(format!(
                "{what} `{}` needs {n} hosts but only {} radicals are given",
                self.id,
                self.radicals.len()
            )));
        }
        Ok(self.radicals[..n].to_vec())
    }

    /// Adds the hosts of radicals `radicals`, each with its loopback and limiter when the
    /// cluster has them: (hosts, loopbacks, limiters). The topologies whose switches are
    /// numbered after the hosts (fat trees, dragonflies) start so.
    pub(crate) fn add_hosts(
        &self,
        radicals: &[u64],
        parts: &mut Parts,
    ) -> (Vec<HostId>, Vec<LinkId>, Vec<LinkId>) {
        let c = self;
        let mut hosts = Vec::with_capacity(radicals.len());
        let mut loopbacks = Vec::new();
        let mut limiters = Vec::new();
        for (i, &r) in radicals.iter().enumerate() {
            hosts.push(parts.add_host(c.host_name(r), &c.host));
            if let Some(lb) = &c.loopback {
                loopbacks.push(parts.add_link(
                    format!("{}_link_{}_loopback", c.id, r),
                    lb.bandwidth,
                    lb.latency,
                    lb.sharing(),
                ));
            }
            if let Some(bw) = c.limiter {
                limiters.push(parts.add_link(
                    format!("{}_link_{}_limiter", c.id, i),
                    bw,
                    0.0,
                    Sharing::Shared,
                ));
            }
        }
        (hosts, loopbacks, limiters)
    }

    /// Checks the link and host characteristics shared by all cluster kinds.
    pub(crate) fn check_common(&self, what: &str) -> Result<(), PlatformError> {
        let w = format!("{what} `{}`", self.id);
        check_host(&w, &self.host)?;
        check_bandwidth(&w, self.bandwidth)?;
        check_latency(&w, self.latency)?;
        if let Some(lb) = &self.loopback {
            check_bandwidth(&format!("{w} loopback"), lb.bandwidth)?;
            check_latency(&format!("{w} loopback"), lb.latency)?;
        }
        if let Some(bw) = self.limiter {
            check_bandwidth(&format!("{w} limiter"), bw)?;
        }
        Ok(())
    }
}

/// Parses SimGrid radicals: comma-separated numbers or inclusive ranges (`"0-15"`,
/// `"1,3,5-7"`).
pub fn parse_radicals(s: &str) -> Result<Vec<u64>, String> {
    const MAX: u64 = 1 << 24;
    let mut out = Vec::new();
    for group in s.split(',') {
        let ends: Vec<&str> = group.split('-').collect();
        let num = |t: &str| {
            t.trim()
                .parse::<u64>()
                .map_err(|_| format!("`{t}` is not a non-negative integer in radical `{s}`"))
        };
        let (a, b) = match ends.as_slice() {
            [a] => (num(a)?, num(a)?),
            [a, b] => (num(a)?, num(b)?),
            _ => return Err(format!("malformed radical `{group}`")),
        };
        if b >= a && (b - a + 1) + out.len() as u64 > MAX {
            return Err(format!("radical `{s}` names more than {MAX} hosts"));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// A span of [`StarRouting::links`].
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    start: u32,
    len: u32,
}

/// Routing of a star zone: each vertex has a list of links towards the core ("up"), from
/// the core ("down") and optionally to itself ("loopback").
#[derive(Debug, Default)]
pub(crate) struct StarRouting {
    links: Vec<LinkId>,
    up: Vec<Span>,
    down: Vec<Span>,
    loopback: Vec<Option<Span>>,
}

impl StarRouting {
    /// Adds a vertex with no links; returns its index.
    pub(crate) fn add_vertex(&mut self) -> u32 {
        self.up.push(Span::default());
        self.down.push(Span::default());
        self.loopback.push(None);
        (self.up.len() - 1) as u32
    }

    fn span(&mut self, links: &[LinkId]) -> Span {
        let start = self.links.len() as u32;
        self.links.extend_from_slice(links);
        Span {
            start,
            len: links.len() as u32,
        }
    }

    /// Sets the links from vertex `v` to the core.
    pub(crate) fn set_up(&mut self, v: u32, links: &[LinkId]) {
        let s = self.span(links);
        self.up[v as usize] = s;
    }

    /// Sets the links from the core to vertex `v`.
    pub(crate) fn set_down(&mut self, v: u32, links: &[LinkId]) {
        let s = self.span(links);
        self.down[v as usize] = s;
    }

    /// Sets the route from vertex `v` to itself.
    pub(crate) fn set_loopback(&mut self, v: u32, links: &[LinkId]) {
        let s = self.span(links);
        self.loopback[v as usize] = Some(s);
    }

    fn get(&self, s: Span) -> &[LinkId] {
        &self.links[s.start as usize..(s.start + s.len) as usize]
    }

    /// Appends the route between vertices `src` and `dst` (both `< len()`).
    #[inline]
    pub(crate) fn local_route(&self, src: u32, dst: u32, out: &mut Vec<LinkId>) {
        let start = out.len();
        let push = |out: &mut Vec<LinkId>, l: LinkId| {
            if !out[start..].contains(&l) {
                out.push(l);
            }
        };
        if src == dst {
            if let Some(lb) = self.loopback[src as usize] {
                for &l in self.get(lb) {
                    push(out, l);
                }
                return;
            }
        }
        for &l in self.get(self.up[src as usize]) {
            push(out, l);
        }
        for &l in self.get(self.down[dst as usize]) {
            push(out, l);
        }
    }
}

/// What [`build`] made.
pub(crate) struct BuiltCluster {
    /// The star routing: vertex `i < n` is host `hosts[i]`, vertex `n` is the router.
    pub(crate) star: StarRouting,
    /// The hosts, in radical order.
    pub(crate) hosts: Vec<HostId>,
    /// The router's name (vertex `hosts.len()`).
    pub(crate) router: String,
}

/// Adds a flat cluster's hosts and links to `parts`.
pub(crate) fn build(spec: &ClusterSpec, parts: &mut Parts) -> Result<BuiltCluster, PlatformError> {
    spec.check_common("cluster")?;
    if spec.radicals.is_empty() {
        return Err(PlatformError::Invalid(format!(
            "cluster `{}` has no hosts",
            spec.id
        )));
    }
    let backbone = match &spec.backbone {
        Some(bb) => {
            let w = format!("cluster `{}` backbone", spec.id);
            check_bandwidth(&w, bb.bandwidth)?;
            check_latency(&w, bb.latency)?;
            Some(parts.add_link(
                format!("{}_backbone", spec.id),
                bb.bandwidth,
                bb.latency,
                bb.sharing,
            ))
        }
        None => None,
    };
    let mut star = StarRouting::default();
    let mut hosts = Vec::with_capacity(spec.radicals.len());
    for &r in &spec.radicals {
        let h = parts.add_host(spec.host_name(r), &spec.host);
        hosts.push(h);
        let v = star.add_vertex();
        let link_id = format!("{}_link_{}", spec.id, r);
        if let Some(lb) = &spec.loopback {
            let l = parts.add_link(
                format!("{link_id}_loopback"),
                lb.bandwidth,
                lb.latency,
                lb.sharing(),
            );
            star.set_loopback(v, &[l]);
        }
        let limiter = spec
            .limiter
            .map(|bw| parts.add_link(format!("{link_id}_limiter"), bw, 0.0, Sharing::Shared));
        let (up, down) = parts.add_cable(&link_id, spec.bandwidth, spec.latency, spec.sharing);
        let mut ups = Vec::with_capacity(3);
        ups.extend(limiter);
        ups.push(up);
        ups.extend(backbone);
        let mut downs = Vec::with_capacity(3);
        downs.extend(backbone);
        downs.push(down);
        downs.extend(limiter);
        star.set_up(v, &ups);
        star.set_down(v, &downs);
    }
    // The router: connected to the core with no link of its own.
    star.add_vertex();
    Ok(BuiltCluster {
        star,
        hosts,
        router: spec.router_name(),
    })
}

/// Routing of a stand-alone flat cluster.
#[derive(Debug)]
struct ClusterRouting {
    star: StarRouting,
    n: usize,
}

impl Routing for ClusterRouting {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        let s = check_host_id(src, self.n)?;
        let d = check_host_id(dst, self.n)?;
        self.star.local_route(s as u32, d as u32, out);
        Ok(())
    }
}

/// A flat cluster (see the module documentation for names and routes).
pub fn cluster(spec: ClusterSpec) -> Result<Platform, PlatformError> {
    let mut parts = Parts::default();
    let built = build(&spec, &mut parts)?;
    let n = built.hosts.len();
    parts.finish(Box::new(ClusterRouting {
        star: built.star,
        n,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &Platform, a: &str, b: &str) -> Vec<String> {
        let (a, b) = (p.host_id(a).unwrap(), p.host_id(b).unwrap());
        p.route_names(a, b)
            .unwrap()
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn platform_cluster_routes() {
        let mut spec = ClusterSpec::new(4, 1e9, 10e-6);
        spec.id = "c".into();
        spec.prefix = "n".into();
        let p = cluster(spec.clone()).unwrap();
        assert_eq!(p.hosts.len(), 4);
        assert_eq!(p.links.len(), 8);
        assert_eq!(names(&p, "n0", "n1"), ["c_link_0_UP", "c_link_1_DOWN"]);
        let mut out = Vec::new();
        let lat = p.route(0, 3, &mut out).unwrap();
        assert!((lat - 20e-6).abs() < 1e-18);
        // Same host without loopback: up and back down.
        assert_eq!(names(&p, "n2", "n2"), ["c_link_2_UP", "c_link_2_DOWN"]);

        // Backbone, limiter, loopback.
        spec.backbone = Some(BackboneSpec {
            bandwidth: 2e9,
            latency: 1e-6,
            sharing: Sharing::Shared,
        });
        spec.limiter = Some(3e9);
        let p = cluster(spec.clone()).unwrap();
        assert_eq!(
            names(&p, "n0", "n1"),
            [
                "c_link_0_limiter",
                "c_link_0_UP",
                "c_backbone",
                "c_link_1_DOWN",
                "c_link_1_limiter"
            ]
        );
        let lat = p.route(0, 1, &mut out).unwrap();
        assert!((lat - 21e-6).abs() < 1e-15);
        assert_eq!(
            names(&p, "n3", "n3"),
            [
                "c_link_3_limiter",
                "c_link_3_UP",
                "c_backbone",
                "c_link_3_DOWN"
            ]
        );
        spec.loopback = Some(LoopbackSpec {
            bandwidth: 5e9,
            latency: 1e-6,
            shared: false,
        });
        let p = cluster(spec.clone()).unwrap();
        assert_eq!(names(&p, "n3", "n3"), ["c_link_3_loopback"]);
        let lb = p.link_id("c_link_3_loopback").unwrap();
        assert_eq!(p.links[lb as usize].sharing, Sharing::FatPipe);

        // Shared cables: one link per host, deduplicated on same-host routes.
        spec.loopback = None;
        spec.limiter = None;
        spec.sharing = LinkPolicy::Shared;
        let p = cluster(spec).unwrap();
        assert_eq!(p.links.len(), 5);
        assert_eq!(
            names(&p, "n0", "n1"),
            ["c_link_0", "c_backbone", "c_link_1"]
        );
        assert_eq!(names(&p, "n1", "n1"), ["c_link_1", "c_backbone"]);
    }

    #[test]
    fn platform_cluster_radicals() {
        assert_eq!(parse_radicals("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse_radicals("1,3,5-7").unwrap(), vec![1, 3, 5, 6, 7]);
        assert_eq!(parse_radicals("4-2").unwrap(), Vec::<u64>::new());
        assert!(parse_radicals("a").is_err());
        assert!(parse_radicals("1-2-3").is_err());
        assert!(parse_radicals("-1").is_err());
        assert!(parse_radicals("0-99999999999").is_err());
        let mut spec = ClusterSpec::new(0, 1e9, 1e-6);
        spec.radicals = parse_radicals("1,1").unwrap();
        assert!(cluster(spec).is_err(), "duplicate host names");
    }

    #[test]
    fn platform_cluster_invalid() {
        assert!(cluster(ClusterSpec::new(0, 1e9, 1e-6)).is_err());
        assert!(cluster(ClusterSpec::new(2, 0.0, 1e-6)).is_err());
        assert!(cluster(ClusterSpec::new(2, 1e9, -1.0)).is_err());
        assert!(cluster(ClusterSpec::new(2, f64::NAN, 1e-6)).is_err());
        let p = cluster(ClusterSpec::new(2, 1e9, 1e-6)).unwrap();
        assert!(p.route(0, 2, &mut Vec::new()).is_err());
    }
}
