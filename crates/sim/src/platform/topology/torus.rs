//! n-dimensional tori, as SimGrid's `<cluster topology="TORUS">` (`TorusZone`).
//!
//! Parameters (`topo_parameters="X,Y,Z,…"`): the size of each dimension. Host `i` has
//! coordinates `(i mod X, (i / X) mod Y, …)` (the first dimension varies fastest) and owns,
//! per dimension, one cable to its `+1` neighbour (with wrap-around), named
//! `<id>_link_from_<i>_to_<neighbour>` (`_UP`/`_DOWN` when split-duplex).
//!
//! Routing is SimGrid's dimension-order routing: for the first dimension where the current
//! host differs from the destination, move one step, "right" (`+1`, over the current host's
//! cable, up direction) or "left" (`−1`, over the next host's cable, down direction); repeat.
//! The direction is decided from the **source** coordinate `s` and the target `t` of that
//! dimension of size `k`: right iff (`t > s` and `t ≤ s + k/2`) or (`s > k/2` and
//! `(s + k/2) mod k ≥ t`), with integer `k/2`. A host sending to itself uses its loopback;
//! without loopback SimGrid aborts ("no connecting path"), we return
//! [`PlatformError::NoRoute`]. Limiters (if any) are added before every hop and at the end.

use super::cluster::ClusterSpec;
use crate::platform::{
    check_host_id, no_route, HostId, LinkId, Parts, Platform, PlatformError, Routing, Sharing,
};

/// A torus: a cluster description plus the size of each dimension.
#[derive(Debug, Clone, PartialEq)]
pub struct TorusSpec {
    /// Hosts, cables (bandwidth, latency, policy), loopback and limiter.
    pub cluster: ClusterSpec,
    /// Size of each dimension, first one varying fastest in host numbers.
    pub dims: Vec<u32>,
}

impl TorusSpec {
    /// A torus from SimGrid's notation `"X,Y,Z,…"`.
    pub fn new(cluster: ClusterSpec, topology: &str) -> Result<TorusSpec, PlatformError> {
        Ok(TorusSpec {
            cluster,
            dims: parse_topology(topology).map_err(PlatformError::Invalid)?,
        })
    }

    /// Number of hosts (product of the dimensions).
    pub fn hosts(&self) -> u64 {
        self.dims.iter().map(|&d| d as u64).product()
    }
}

/// Parses `"X,Y,Z,…"`.
pub fn parse_topology(s: &str) -> Result<Vec<u32>, String> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("torus: invalid dimension `{x}` in `{s}`"))
        })
        .collect()
}

/// Routing state of a torus.
#[derive(Debug)]
pub(crate) struct TorusRouting {
    dims: Vec<u32>,
    /// `(up, down)` link of host `i`'s cable in dimension `j`, at `i * dims.len() + j`.
    cables: Vec<(LinkId, LinkId)>,
    loopbacks: Vec<LinkId>,
    limiters: Vec<LinkId>,
    names: Vec<String>,
}

impl TorusRouting {
    /// Number of hosts.
    pub(crate) fn hosts(&self) -> usize {
        self.names.len()
    }

    /// Appends the route between hosts `src` and `dst` (`< hosts`).
    pub(crate) fn local_route(
        &self,
        src: u32,
        dst: u32,
        out: &mut Vec<LinkId>,
    ) -> Result<(), PlatformError> {
        if src == dst && !self.loopbacks.is_empty() {
            out.push(self.loopbacks[src as usize]);
            return Ok(());
        }
        let nd = self.dims.len();
        let has_limiters = !self.limiters.is_empty();
        let (src64, dst64) = (src as u64, dst as u64);
        let start = out.len();
        // Dimension by dimension (the coordinates of the dimensions already done match the
        // destination's; the others are still the source's).
        let mut cur = src64;
        let mut product = 1u64;
        for (j, &k) in self.dims.iter().enumerate() {
            let k = k as u64;
            let s = (src64 / product) % k;
            let t = (dst64 / product) % k;
            if s != t {
                let half = k / 2;
                let right = (t > s && t <= s + half) || (s > half && (s + half) % k >= t);
                let mut c = s;
                while c != t {
                    if has_limiters {
                        out.push(self.limiters[cur as usize]);
                    }
                    if right {
                        out.push(self.cables[cur as usize * nd + j].0);
                        cur = if c == k - 1 {
                            cur - product * (k - 1)
                        } else {
                            cur + product
                        };
                        c = if c == k - 1 { 0 } else { c + 1 };
                    } else {
                        cur = if c == 0 {
                            cur + product * (k - 1)
                        } else {
                            cur - product
                        };
                        out.push(self.cables[cur as usize * nd + j].1);
                        c = if c == 0 { k - 1 } else { c - 1 };
                    }
                }
            }
            product *= k;
        }
        debug_assert_eq!(cur, dst64);
        if has_limiters {
            out.push(self.limiters[dst as usize]);
        }
        if out.len() == start {
            return Err(no_route(&self.names, src, dst));
        }
        Ok(())
    }
}

/// What [`build`] made.
pub(crate) struct BuiltTorus {
    pub(crate) routing: TorusRouting,
    pub(crate) hosts: Vec<HostId>,
}

/// Adds a torus's hosts and links to `parts`.
pub(crate) fn build(spec: &TorusSpec, parts: &mut Parts) -> Result<BuiltTorus, PlatformError> {
    let c = &spec.cluster;
    c.check_common("torus")?;
    if spec.dims.is_empty() || spec.dims.contains(&0) {
        return Err(PlatformError::Invalid(format!(
            "torus `{}`: every dimension must be positive",
            c.id
        )));
    }
    let n = spec
        .dims
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .filter(|&n| n <= 1 << 24)
        .ok_or_else(|| PlatformError::Invalid(format!("torus `{}` is too large", c.id)))?
        as usize;
    if n.saturating_mul(spec.dims.len()) > 1 << 26 {
        return Err(PlatformError::Invalid(format!(
            "torus `{}` is too large",
            c.id
        )));
    }
    let radicals = c.radicals_for(n, "torus")?;
    let nd = spec.dims.len();
    let mut hosts = Vec::with_capacity(n);
    let mut names = Vec::with_capacity(n);
    let mut loopbacks = Vec::new();
    let mut limiters = Vec::new();
    let mut cables = Vec::with_capacity(n * nd);
    for (i, &r) in radicals.iter().enumerate() {
        let name = c.host_name(r);
        names.push(name.clone());
        hosts.push(parts.add_host(name, &c.host));
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
        let mut product = 1u64;
        for &k in &spec.dims {
            let k = k as u64;
            let i = i as u64;
            let neighbour = if (i / product) % k == k - 1 {
                i - (k - 1) * product
            } else {
                i + product
            };
            let name = format!("{}_link_from_{}_to_{}", c.id, i, neighbour);
            cables.push(parts.add_cable(&name, c.bandwidth, c.latency, c.sharing));
            product *= k;
        }
    }
    Ok(BuiltTorus {
        routing: TorusRouting {
            dims: spec.dims.clone(),
            cables,
            loopbacks,
            limiters,
            names,
        },
        hosts,
    })
}

impl Routing for TorusRouting {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        let s = check_host_id(src, self.hosts())?;
        let d = check_host_id(dst, self.hosts())?;
        self.local_route(s as u32, d as u32, out)
    }
}

/// A torus (see the module documentation).
pub fn torus(spec: TorusSpec) -> Result<Platform, PlatformError> {
    let mut parts = Parts::default();
    let built = build(&spec, &mut parts)?;
    parts.finish(Box::new(built.routing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::test_support::{cluster_spec, hops};
    use crate::platform::LoopbackSpec;

    fn spec(topo: &str) -> TorusSpec {
        TorusSpec::new(cluster_spec("t"), topo).unwrap()
    }

    #[test]
    fn platform_torus_hops_4x4() {
        // The note's measurements on a 4×4 torus of 10 µs links.
        let p = torus(spec("4,4")).unwrap();
        assert_eq!(p.hosts.len(), 16);
        assert_eq!(p.links.len(), 16 * 2 * 2);
        for (a, b, h) in [
            (0, 1, 1),
            (0, 2, 2),
            (0, 3, 1),
            (0, 5, 2),
            (0, 15, 2),
            (0, 10, 4),
            (1, 3, 2),
        ] {
            assert_eq!(hops(&p, a, b), h, "{a}->{b}");
            let mut out = Vec::new();
            let lat = p.route(a, b, &mut out).unwrap();
            assert!((lat - h as f64 * 10e-6).abs() < 1e-15);
        }
        // Hop count is the torus distance for every pair in a 4×4 torus.
        for a in 0..16u32 {
            for b in 0..16u32 {
                let ring = |x: u32, y: u32| {
                    let d = x.abs_diff(y);
                    d.min(4 - d)
                };
                let want = ring(a % 4, b % 4) + ring(a / 4, b / 4);
                if a != b {
                    assert_eq!(hops(&p, a, b) as u32, want, "{a}->{b}");
                }
            }
        }
    }

    #[test]
    fn platform_torus_dimension_order() {
        let p = torus(spec("4,4")).unwrap();
        let names = |a, b| -> Vec<String> {
            p.route_names(a, b)
                .unwrap()
                .into_iter()
                .map(String::from)
                .collect()
        };
        // Right in x over own cables, then right in y.
        assert_eq!(
            names(0, 5),
            ["t_link_from_0_to_1_UP", "t_link_from_1_to_5_UP"]
        );
        // Left (wrap) in x over the neighbour's cable, down direction.
        assert_eq!(names(0, 3), ["t_link_from_3_to_0_DOWN"]);
        // x first, then y: 6=(2,1) -> 9=(1,2): left in x, right in y.
        assert_eq!(
            names(6, 9),
            ["t_link_from_5_to_6_DOWN", "t_link_from_5_to_9_UP"]
        );
        // Odd ring of 5: from 3 to 0 goes right (3->4->0), from 3 to 1 goes left.
        let p5 = torus(spec("5")).unwrap();
        let n5 = |a, b| -> Vec<String> {
            p5.route_names(a, b)
                .unwrap()
                .into_iter()
                .map(String::from)
                .collect()
        };
        assert_eq!(n5(3, 0), ["t_link_from_3_to_4_UP", "t_link_from_4_to_0_UP"]);
        assert_eq!(
            n5(3, 1),
            ["t_link_from_2_to_3_DOWN", "t_link_from_1_to_2_DOWN"]
        );
        // 3-D: 2×2×2, opposite corners: 3 hops, one per dimension in order.
        let p3 = torus(spec("2,2,2")).unwrap();
        assert_eq!(hops(&p3, 0, 7), 3);
    }

    #[test]
    fn platform_torus_loopback() {
        let p = torus(spec("4,4")).unwrap();
        let err = p.route(3, 3, &mut Vec::new()).unwrap_err();
        assert!(matches!(err, PlatformError::NoRoute { .. }), "{err}");
        assert!(err.to_string().contains("n3"));
        let mut s = spec("4,4");
        s.cluster.loopback = Some(LoopbackSpec {
            bandwidth: 1e10,
            latency: 1e-7,
            shared: false,
        });
        let p = torus(s).unwrap();
        assert_eq!(p.route_names(3, 3).unwrap(), ["t_link_3_loopback"]);
        assert!(torus(spec("4,4")).is_ok());
        assert!(TorusSpec::new(ClusterSpec::new(0, 1.0, 0.0), "4,0").is_err());
        assert!(TorusSpec::new(ClusterSpec::new(0, 1.0, 0.0), "").is_err());
    }

    #[test]
    fn platform_torus_large() {
        let p = torus(spec("32,32,64")).unwrap();
        assert_eq!(p.hosts.len(), 65536);
        // (0,0,0) -> (16,16,32): 16 + 16 + 32 hops.
        let far = 16 + 16 * 32 + 32 * 32 * 32;
        assert_eq!(hops(&p, 0, far), 64);
    }
}
