//! Dragonflies, as SimGrid's `<cluster topology="DRAGONFLY">` (`DragonflyZone`).
//!
//! Parameters (`topo_parameters="G,g;C,c;B,b;N"`): `G` groups of `C` chassis of `B` routers
//! ("blades") with `N` hosts each; host `i` has coordinates (group, chassis, blade, node)
//! with the node varying fastest. Cables:
//! * host ↔ its router (`local_link_from_router_<r>_to_node_<n>_<k>`, bandwidth × 1);
//! * "green": all-to-all between the routers of a chassis (bandwidth × `b`);
//! * "black": between the routers of the same blade in the chassis of a group (× `c`);
//! * "blue": between groups: router number `j` (chassis-major index within its group) of
//!   group `i` is linked to group `j` (× `g`).
//!
//! Cable names end with a counter shared by all dragonflies of a platform, as in SimGrid.
//!
//! Routing is SimGrid's minimal routing: host → router; if the destination is in another
//! group, go to the router of this group linked to that group (green hop to its blade, then
//! black hop to its chassis), take the blue cable, arriving at the router of the destination
//! group whose index is the source group; then a green hop to the destination blade, then a
//! black hop to the destination chassis; router → host. Limiters are added as SimGrid does.
//!
//! SimGrid 3.32 quirk, reproduced: after the green hop in the destination group, SimGrid
//! believes it is at chassis 0 of that group, so the black hop (if any) starts from the
//! chassis-0 router, and none is taken when the destination is in chassis 0 — whatever
//! chassis the message really was in. (SimGrid only routes correctly when `G ≤ B`; for
//! `B < G ≤ C·B`, which SimGrid cannot route, we use the gateway router's real position and
//! no quirk. `G > C·B` is refused: there are not enough routers for the blue cables.)
//! A host sending to itself uses its loopback if any, else goes to its router and back.

use super::cluster::ClusterSpec;
use crate::platform::{
    check_host_id, HostId, LinkId, Parts, Platform, PlatformError, Routing, Sharing,
};

/// A dragonfly: a cluster description plus the topology.
#[derive(Debug, Clone, PartialEq)]
pub struct DragonflySpec {
    /// Hosts, cables (bandwidth, latency, policy), loopback and limiter.
    pub cluster: ClusterSpec,
    /// Number of groups.
    pub groups: u32,
    /// Cables per blue (inter-group) connection (bandwidth multiplier).
    pub group_links: u32,
    /// Chassis per group.
    pub chassis: u32,
    /// Cables per black (inter-chassis) connection.
    pub chassis_links: u32,
    /// Routers (blades) per chassis.
    pub routers: u32,
    /// Cables per green (intra-chassis) connection.
    pub router_links: u32,
    /// Hosts per router.
    pub nodes: u32,
}

impl DragonflySpec {
    /// A dragonfly from SimGrid's notation `"G,g;C,c;B,b;N"`.
    pub fn new(cluster: ClusterSpec, topology: &str) -> Result<DragonflySpec, PlatformError> {
        let [groups, group_links, chassis, chassis_links, routers, router_links, nodes] =
            parse_topology(topology).map_err(PlatformError::Invalid)?;
        Ok(DragonflySpec {
            cluster,
            groups,
            group_links,
            chassis,
            chassis_links,
            routers,
            router_links,
            nodes,
        })
    }

    /// Number of hosts.
    pub fn hosts(&self) -> u64 {
        self.groups as u64 * self.chassis as u64 * self.routers as u64 * self.nodes as u64
    }
}

/// Parses `"G,g;C,c;B,b;N"` into `[G, g, C, c, B, b, N]`.
pub fn parse_topology(s: &str) -> Result<[u32; 7], String> {
    let parts: Vec<&str> = s.split(';').collect();
    if parts.len() != 4 {
        return Err(format!(
            "dragonfly parameters `{s}` are not `groups,links;chassis,links;routers,links;nodes`"
        ));
    }
    let num = |t: &str| -> Result<u32, String> {
        t.trim()
            .parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("dragonfly: invalid count `{t}` in `{s}`"))
    };
    let pair = |t: &str| -> Result<(u32, u32), String> {
        match t.split(',').collect::<Vec<_>>().as_slice() {
            [a, b] => Ok((num(a)?, num(b)?)),
            _ => Err(format!("dragonfly: `{t}` is not `count,links` in `{s}`")),
        }
    };
    let (g, gl) = pair(parts[0])?;
    let (c, cl) = pair(parts[1])?;
    let (b, bl) = pair(parts[2])?;
    Ok([g, gl, c, cl, b, bl, num(parts[3])?])
}

const NONE: LinkId = LinkId::MAX;

/// Routing state of a dragonfly.
#[derive(Debug)]
pub(crate) struct DragonflyRouting {
    g: u32,
    c: u32,
    b: u32,
    n: u32,
    /// `(up, down)` of host `node` of router `r`, at `r * n + node`.
    node_links: Vec<(LinkId, LinkId)>,
    /// Green link of router `r` towards blade `k`, at `r * b + k`.
    green: Vec<LinkId>,
    /// Black link of router `r` towards chassis `k`, at `r * c + k`.
    black: Vec<LinkId>,
    /// Blue link of router `r`.
    blue: Vec<LinkId>,
    router_limiters: Vec<LinkId>,
    host_limiters: Vec<LinkId>,
    loopbacks: Vec<LinkId>,
    hosts: usize,
}

impl DragonflyRouting {
    #[inline]
    fn router(&self, g: u32, c: u32, b: u32) -> usize {
        ((g * self.c + c) * self.b + b) as usize
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
        let coords = |h: u32| {
            let node = h % self.n;
            let r = h / self.n;
            (
                r / (self.b * self.c),
                (r / self.b) % self.c,
                r % self.b,
                node,
            )
        };
        let (mg, mc, mb, mn) = coords(src);
        let (tg, tc, tb, tn) = coords(dst);
        let rlim = |out: &mut Vec<LinkId>, r: usize| {
            if !self.router_limiters.is_empty() {
                out.push(self.router_limiters[r]);
            }
        };
        let broken = || PlatformError::Invalid("dragonfly: missing cable on a route".into());
        let get = |v: &Vec<LinkId>, i: usize| -> Result<LinkId, PlatformError> {
            match v.get(i) {
                Some(&l) if l != NONE => Ok(l),
                _ => Err(broken()),
            }
        };
        if !self.host_limiters.is_empty() {
            out.push(self.host_limiters[src as usize]);
        }
        let my_router = self.router(mg, mc, mb);
        out.push(self.node_links[my_router * self.n as usize + mn as usize].0);
        let target = self.router(tg, tc, tb);
        if target != my_router {
            let (mut cg, mut cc, mut cb) = (mg, mc, mb);
            let quirk = self.g <= self.b;
            if tg != cg {
                // The router of our group linked to group tg has index tg in the group.
                let (gw_c, gw_b) = (tg / self.b, tg % self.b);
                if cb != gw_b {
                    let r = self.router(cg, cc, cb);
                    rlim(out, r);
                    out.push(get(&self.green, r * self.b as usize + gw_b as usize)?);
                    cb = gw_b;
                }
                if cc != gw_c {
                    let r = self.router(cg, cc, cb);
                    rlim(out, r);
                    out.push(get(&self.black, r * self.c as usize + gw_c as usize)?);
                    cc = gw_c;
                }
                let r = self.router(cg, cc, cb);
                out.push(get(&self.blue, r)?);
                rlim(out, r);
                // Arrival: router number `mg` of group tg.
                cg = tg;
                cc = mg / self.b;
                cb = mg % self.b;
            }
            if tb != cb {
                let r = self.router(cg, cc, cb);
                rlim(out, r);
                out.push(get(&self.green, r * self.b as usize + tb as usize)?);
                cb = tb;
                if quirk {
                    cc = 0;
                }
            }
            if tc != cc {
                let r = self.router(cg, cc, cb);
                rlim(out, r);
                out.push(get(&self.black, r * self.c as usize + tc as usize)?);
            }
        }
        rlim(out, target);
        out.push(self.node_links[target * self.n as usize + tn as usize].1);
        if !self.host_limiters.is_empty() {
            out.push(self.host_limiters[dst as usize]);
        }
        Ok(())
    }
}

/// What [`build`] made.
pub(crate) struct BuiltDragonfly {
    pub(crate) routing: DragonflyRouting,
    pub(crate) hosts: Vec<HostId>,
}

/// Adds a dragonfly's hosts and links to `parts`.
pub(crate) fn build(
    spec: &DragonflySpec,
    parts: &mut Parts,
) -> Result<BuiltDragonfly, PlatformError> {
    let cs = &spec.cluster;
    cs.check_common("dragonfly")?;
    let (routers, n_hosts) = check_sizes(spec)?;
    let radicals = cs.radicals_for(n_hosts, "dragonfly")?;
    let (hosts, loopbacks, host_limiters) = cs.add_hosts(&radicals, parts);
    let mut router_limiters = Vec::new();
    if let Some(bw) = cs.limiter {
        let mut id = 2 * n_hosts as u64;
        for _ in 0..routers {
            id -= 1;
            router_limiters.push(parts.add_link(
                format!("{}_link_{}_limiter", cs.id, id),
                bw,
                0.0,
                Sharing::Shared,
            ));
        }
    }
    let plan = CablePlan::new(spec, routers, parts);
    let (node_links, green, black, blue) = plan.wire(spec, routers, n_hosts, parts)?;
    Ok(BuiltDragonfly {
        routing: DragonflyRouting {
            g: spec.groups,
            c: spec.chassis,
            b: spec.routers,
            n: spec.nodes,
            node_links,
            green,
            black,
            blue,
            router_limiters,
            host_limiters,
            loopbacks,
            hosts: n_hosts,
        },
        hosts,
    })
}

/// The routers and hosts, once every count is checked: positive, not too many, enough
/// routers per group for the blue cables.
fn check_sizes(spec: &DragonflySpec) -> Result<(usize, usize), PlatformError> {
    let cs = &spec.cluster;
    let (g, c, b, n) = (spec.groups, spec.chassis, spec.routers, spec.nodes);
    if [
        g,
        c,
        b,
        n,
        spec.group_links,
        spec.chassis_links,
        spec.router_links,
    ]
    .contains(&0)
    {
        return Err(PlatformError::Invalid(format!(
            "dragonfly `{}`: all counts must be positive",
            cs.id
        )));
    }
    let routers = g as u64 * c as u64 * b as u64;
    let total = routers * n as u64;
    let cables = routers * (n as u64 + b as u64 + c as u64) + g as u64 * g as u64;
    if total > 1 << 24 || cables > 1 << 26 {
        return Err(PlatformError::Invalid(format!(
            "dragonfly `{}` is too large",
            cs.id
        )));
    }
    if g > 1 && g as u64 > c as u64 * b as u64 {
        return Err(PlatformError::Invalid(format!(
            "dragonfly `{}`: {g} groups need at least {g} routers per group for the blue \
             cables, there are {}",
            cs.id,
            c as u64 * b as u64
        )));
    }
    Ok((routers as usize, total as usize))
}

/// A dragonfly's cables in SimGrid's order (local, green, black, blue), each with its name
/// and bandwidth multiple, and the router ports each green, black and blue one joins.
struct CablePlan {
    /// (name, multiple of the cluster's bandwidth).
    names: Vec<(String, u32)>,
    /// (router, port, router, port) of each green cable.
    green: Vec<(usize, usize, usize, usize)>,
    /// (router, port, router, port) of each black cable.
    black: Vec<(usize, usize, usize, usize)>,
    /// The two routers of each blue cable.
    blue: Vec<(usize, usize)>,
}

impl CablePlan {
    /// The cables of `spec` with `routers` routers (numbered by the run's dragonfly link
    /// counter in `parts`).
    fn new(spec: &DragonflySpec, routers: usize, parts: &mut Parts) -> CablePlan {
        let (g, c, b, n) = (spec.groups, spec.chassis, spec.routers, spec.nodes);
        let mut uid = || {
            let u = parts.dragonfly_links;
            parts.dragonfly_links += 1;
            u
        };
        let mut plan = CablePlan {
            names: Vec::new(),
            green: Vec::new(),
            black: Vec::new(),
            blue: Vec::new(),
        };
        // Local links.
        for r in 0..routers {
            for node in 0..n {
                plan.names.push((
                    format!("local_link_from_router_{r}_to_node_{node}_{}", uid()),
                    1,
                ));
            }
        }
        for i in 0..(g * c) as usize {
            for j in 0..b as usize {
                for k in j + 1..b as usize {
                    plan.names.push((
                        format!(
                            "green_link_in_chassis_{}_between_routers_{j}_and_{k}_{}",
                            i % c as usize,
                            uid()
                        ),
                        spec.router_links,
                    ));
                    plan.green
                        .push((i * b as usize + j, k, i * b as usize + k, j));
                }
            }
        }
        for i in 0..g as usize {
            for j in 0..c as usize {
                for k in j + 1..c as usize {
                    for l in 0..b as usize {
                        plan.names.push((
                            format!(
                                "black_link_in_group_{i}_between_chassis_{j}_and_{k}_blade_{l}_{}",
                                uid()
                            ),
                            spec.chassis_links,
                        ));
                        let (cb, bb) = (c as usize * b as usize, b as usize);
                        plan.black
                            .push((i * cb + j * bb + l, k, i * cb + k * bb + l, j));
                    }
                }
            }
        }
        let per_group = c as usize * b as usize;
        for i in 0..g as usize {
            for j in i + 1..g as usize {
                let (ri, rj) = (i * per_group + j, j * per_group + i);
                plan.names.push((
                    format!(
                        "blue_link_between_group_{i}_and_{j}_routers_{ri}_and_{rj}_{}",
                        uid()
                    ),
                    spec.group_links,
                ));
                plan.blue.push((ri, rj));
            }
        }
        plan
    }

    /// Adds the cables to `parts`: the node links, and the green, black and blue links of
    /// every router port.
    #[allow(clippy::type_complexity)]
    fn wire(
        self,
        spec: &DragonflySpec,
        routers: usize,
        n_hosts: usize,
        parts: &mut Parts,
    ) -> Result<(Vec<(LinkId, LinkId)>, Vec<LinkId>, Vec<LinkId>, Vec<LinkId>), PlatformError> {
        let cs = &spec.cluster;
        let (b, c) = (spec.routers as usize, spec.chassis as usize);
        let (bw, lat, policy) = (cs.bandwidth, cs.latency, cs.sharing);
        let mut cables = self
            .names
            .into_iter()
            .map(|(name, mult)| parts.add_cable(&name, bw * mult as f64, lat, policy));
        let mut next = || {
            cables
                .next()
                .ok_or_else(|| PlatformError::Invalid("dragonfly".into()))
        };
        let mut node_links = Vec::with_capacity(n_hosts);
        for _ in 0..n_hosts {
            node_links.push(next()?);
        }
        let mut green = vec![NONE; routers * b];
        for (r1, k1, r2, k2) in self.green {
            let (up, down) = next()?;
            green[r1 * b + k1] = up;
            green[r2 * b + k2] = down;
        }
        let mut black = vec![NONE; routers * c];
        for (r1, k1, r2, k2) in self.black {
            let (up, down) = next()?;
            black[r1 * c + k1] = up;
            black[r2 * c + k2] = down;
        }
        let mut blue = vec![NONE; routers];
        for (ri, rj) in self.blue {
            let (up, down) = next()?;
            blue[ri] = up;
            blue[rj] = down;
        }
        Ok((node_links, green, black, blue))
    }
}

impl Routing for DragonflyRouting {
    fn route(&self, src: HostId, dst: HostId, out: &mut Vec<LinkId>) -> Result<(), PlatformError> {
        let s = check_host_id(src, self.hosts)?;
        let d = check_host_id(dst, self.hosts)?;
        self.local_route(s as u32, d as u32, out)
    }
}

/// A dragonfly (see the module documentation).
pub fn dragonfly(spec: DragonflySpec) -> Result<Platform, PlatformError> {
    let mut parts = Parts::default();
    let built = build(&spec, &mut parts)?;
    parts.finish(Box::new(built.routing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::test_support::{cluster_spec, hops};

    fn spec(topo: &str) -> DragonflySpec {
        DragonflySpec::new(cluster_spec("df"), topo).unwrap()
    }

    #[test]
    fn platform_dragonfly_hops() {
        // The note's measurements on 2,1;2,1;2,1;2 with 10 µs links (hops = latency/10µs).
        let p = dragonfly(spec("2,1;2,1;2,1;2")).unwrap();
        assert_eq!(p.hosts.len(), 16);
        for (a, b, h) in [
            (0, 1, 2),
            (0, 2, 3),
            (0, 4, 3),
            (0, 6, 4),
            (0, 8, 4),
            (0, 15, 6),
            (2, 8, 3),
            (6, 9, 4),
            (0, 0, 2),
            // SimGrid's quirk: chassis 1 blade 0 -> chassis 0 blade 1 takes no black hop.
            (4, 2, 3),
        ] {
            assert_eq!(hops(&p, a, b), h, "{a}->{b}");
        }
        let names: Vec<&str> = p.route_names(0, 15).unwrap();
        assert_eq!(
            names,
            [
                "local_link_from_router_0_to_node_0_0_UP",
                "green_link_in_chassis_0_between_routers_0_and_1_16_UP",
                "blue_link_between_group_0_and_1_routers_1_and_4_24_UP",
                "green_link_in_chassis_0_between_routers_0_and_1_18_UP",
                "black_link_in_group_1_between_chassis_0_and_1_blade_1_23_UP",
                "local_link_from_router_7_to_node_1_15_DOWN"
            ]
        );
    }

    #[test]
    fn platform_dragonfly_bandwidths_and_counts() {
        let p = dragonfly(spec("3,4;4,3;5,2;2")).unwrap();
        assert_eq!(p.hosts.len(), 120);
        let bw = |name: &str| p.links[p.link_id(name).unwrap() as usize].bandwidth;
        assert_eq!(bw("local_link_from_router_0_to_node_0_0_UP"), 1e9);
        let green = p
            .links
            .iter()
            .find(|l| l.name.starts_with("green"))
            .unwrap();
        assert_eq!(green.bandwidth, 2e9);
        let black = p
            .links
            .iter()
            .find(|l| l.name.starts_with("black"))
            .unwrap();
        assert_eq!(black.bandwidth, 3e9);
        let blue = p.links.iter().find(|l| l.name.starts_with("blue")).unwrap();
        assert_eq!(blue.bandwidth, 4e9);
        // Minimal routes are at most: local, green, black, blue, green, black, local.
        for a in (0..120).step_by(7) {
            for b in 0..120 {
                let h = hops(&p, a, b);
                assert!((2..=7).contains(&h), "{a}->{b}: {h}");
            }
        }
    }

    #[test]
    fn platform_dragonfly_more_groups_than_blades() {
        // 5 groups, 2 chassis × 3 routers: SimGrid cannot route it, we do (through the
        // gateway router's real position).
        let p = dragonfly(spec("5,1;2,1;3,1;1")).unwrap();
        for a in 0..30 {
            for b in 0..30 {
                let h = hops(&p, a, b);
                assert!((2..=7).contains(&h), "{a}->{b}: {h}");
            }
        }
        assert!(
            DragonflySpec::new(ClusterSpec::new(0, 1.0, 0.0), "7,1;2,1;3,1;1")
                .and_then(dragonfly)
                .is_err()
        );
        assert!(parse_topology("2,1;2,1;2,1").is_err());
        assert!(parse_topology("2,1;2;2,1;2").is_err());
        assert!(parse_topology("2,1;2,1;2,0;2").is_err());
    }
}
